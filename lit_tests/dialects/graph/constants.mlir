// Constants print so that parsing the text back gives the same bits. xDSL writes an
// integral f32 of more than 7 digits, and an infinity or a NaN, as its bit pattern
// (`0x4B800000` is 16777216.0); the parser reads a hex literal where a float is
// expected as that bit pattern, as MLIR does, in the custom and the generic form.
// RUN: mncore-opt %s | filecheck %s --check-prefixes=CHECK,CUSTOM
// RUN: mncore-opt %s | mncore-opt | filecheck %s --check-prefixes=CHECK,CUSTOM
// RUN: mncore-opt %s --print-op-generic | mncore-opt | filecheck %s

func.func @floats() -> (tensor<4xf32>, tensor<3xf32>, tensor<2xf64>, tensor<2xf32>) {
  %big = graph.constant dense<[16777216.0, 2147483648.0, 0x7F800000, 0xFF800000]> : tensor<4xf32>
  %small = graph.constant dense<[1.0e-45, -0.0, 0x7FC00001]> : tensor<3xf32>
  %wide = graph.constant dense<[9007199254740992.0, 1.0e+16]> : tensor<2xf64>
  %splat = graph.constant dense<0x4B800000> : tensor<2xf32>
  func.return %big, %small, %wide, %splat : tensor<4xf32>, tensor<3xf32>, tensor<2xf64>, tensor<2xf32>
}

// CHECK-LABEL: func.func @floats()
// CHECK-NEXT:  graph.constant dense<[0x4B800000, 2.14748365e+09, 0x7f800000, 0xff800000]> : tensor<4xf32>
// CHECK-NEXT:  graph.constant dense<[1.401300e-45, -0.000000e+00, 0x7fc00001]> : tensor<3xf32>
// CHECK-NEXT:  graph.constant dense<[0x4340000000000000, 1.000000e+16]> : tensor<2xf64>
// CHECK-NEXT:  graph.constant dense<0x4B800000> : tensor<2xf32>

// What xDSL's text would get wrong, the custom form prints as raw bytes: a signalling
// NaN (xDSL quietens it) and elements that compare equal but differ in bits (xDSL
// prints 0.0 and -0.0 as a splat of 0.0). The generic form still loses these: it
// prints the property with xDSL's own printer.
func.func @bits() -> (tensor<f32>, tensor<2xf32>) {
  %snan = graph.constant dense<0x7F800001> : tensor<f32>
  %zeros = graph.constant dense<"0x0000000000000080"> : tensor<2xf32>
  func.return %snan, %zeros : tensor<f32>, tensor<2xf32>
}

// CUSTOM-LABEL: func.func @bits()
// CUSTOM-NEXT:  graph.constant dense<"0x0100807F"> : tensor<f32>
// CUSTOM-NEXT:  graph.constant dense<"0x0000000000000080"> : tensor<2xf32>
