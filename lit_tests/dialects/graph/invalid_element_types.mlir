// Element types the graph level does not run and literals that do not fit their
// element type, one chunk per case (chunks are split on the dashed separator lines).
// A graph op checks its tensors against the types the interpreter and the cpu
// executor handle (dialects/element_types.py); a literal is checked while it is
// parsed (mncore_ir/parsing.py), with the caret under the element that does not fit.
// RUN: mncore-opt %s --parsing-diagnostics --split-input-file | filecheck %s

func.func @i16(%a: tensor<2xi16>) -> tensor<2xi16> {
  %0 = graph.add %a, %a : tensor<2xi16>, tensor<2xi16> -> tensor<2xi16>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.add %a, %a : tensor<2xi16>, tensor<2xi16> -> tensor<2xi16>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.add: element type i16 is not supported at the graph level (supported: f32, f64, i64, i32, i1, ui8, bf16, f16)
  func.return %0 : tensor<2xi16>
}

// -----

func.func @index(%a: tensor<2xindex>) -> tensor<2xf32> {
  %0 = graph.convert %a : tensor<2xindex> to tensor<2xf32>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.convert %a : tensor<2xindex> to tensor<2xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.convert: element type index is not supported at the graph level
  func.return %0 : tensor<2xf32>
}

// -----

func.func @f16_overflow() -> tensor<2xf16> {
  %0 = graph.constant dense<[1.0, 1.0e+10]> : tensor<2xf16>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:35
  // CHECK-NEXT: %0 = graph.constant dense<[1.0, 1.0e+10]> : tensor<2xf16>
  // CHECK-NEXT: ^^^^^^^
  // CHECK-NEXT: floating point value 1.0e+10 is too large for f16
  func.return %0 : tensor<2xf16>
}

// -----

func.func @f32_overflow() -> tensor<2xf32> {
  %0 = graph.constant dense<[1.0, 1.0e+308]> : tensor<2xf32>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:35
  // CHECK-NEXT: %0 = graph.constant dense<[1.0, 1.0e+308]> : tensor<2xf32>
  // CHECK-NEXT: ^^^^^^^^
  // CHECK-NEXT: floating point value 1.0e+308 is too large for f32
  func.return %0 : tensor<2xf32>
}

// -----

func.func @i32_overflow() -> tensor<2xi32> {
  %0 = graph.constant dense<2147483648> : tensor<2xi32>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:29
  // CHECK-NEXT: %0 = graph.constant dense<2147483648> : tensor<2xi32>
  // CHECK-NEXT: ^^^^^^^^^^
  // CHECK-NEXT: integer value 2147483648 is out of range for i32 ([-2147483648, 2147483648))
  func.return %0 : tensor<2xi32>
}

// -----

func.func @ui8_negative() -> tensor<2xui8> {
  %0 = graph.constant dense<[0, -1]> : tensor<2xui8>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:33
  // CHECK-NEXT: %0 = graph.constant dense<[0, -1]> : tensor<2xui8>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: integer value -1 is out of range for ui8 ([0, 256))
  func.return %0 : tensor<2xui8>
}

// -----

func.func @hex_too_wide() -> tensor<f32> {
  %0 = graph.constant dense<0x100000000> : tensor<f32>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:29
  // CHECK-NEXT: %0 = graph.constant dense<0x100000000> : tensor<f32>
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: hexadecimal float literal 0x100000000 has more bits than f32
  func.return %0 : tensor<f32>
}

// -----

func.func @hex_negative() -> tensor<f32> {
  %0 = graph.constant dense<-0x3F800000> : tensor<f32>
  // CHECK:      invalid_element_types.mlir:[[# @LINE - 1]]:29
  // CHECK-NEXT: %0 = graph.constant dense<-0x3F800000> : tensor<f32>
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: a hexadecimal float literal is a bit pattern and takes no minus sign
  func.return %0 : tensor<f32>
}
