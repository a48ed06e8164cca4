// Literals that do not fit their type, zero-size literals, and verifier errors that
// xDSL raises without naming an op: each is reported at the source (the error's line
// must match its expected-error directive), and the valid chunks are printed.
// RUN: mncore-opt %s --split-input-file --verify-diagnostics | filecheck %s

// An index is 64 bits: xDSL's packing raised "argument out of range" here.
func.func @index_overflow(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error@+1 {{integer value 9223372036854775808 is out of range for index ([-9223372036854775808, 9223372036854775808))}}
  %c = graph.constant dense<9223372036854775808> : tensor<index>
  func.return %a : tensor<2xi32>
}

// -----

func.func @i32_overflow() -> tensor<2xi32> {
  // expected-error@+1 {{integer value 9223372036854775808 is out of range for i32 ([-2147483648, 2147483648))}}
  %c = graph.constant dense<[1, 9223372036854775808]> : tensor<2xi32>
  func.return %c : tensor<2xi32>
}

// -----

func.func @ui8_negative() -> tensor<2xui8> {
  // expected-error@+1 {{integer value -1 is out of range for ui8 ([0, 256))}}
  %c = graph.constant dense<[0, -1]> : tensor<2xui8>
  func.return %c : tensor<2xui8>
}

// -----

func.func @i64_hex() -> tensor<2xi64> {
  // expected-error@+1 {{integer value 0xFFFFFFFFFFFFFFFF is out of range for i64 ([-9223372036854775808, 9223372036854775808))}}
  %c = graph.constant dense<0xFFFFFFFFFFFFFFFF> : tensor<2xi64>
  func.return %c : tensor<2xi64>
}

// -----

func.func @short_hex_string() -> tensor<2xi32> {
  // expected-error@+1 {{a hexadecimal dense literal of 5 bytes does not fit tensor<2xi32>, which takes 8 bytes (or 4 bytes for a splat)}}
  %c = graph.constant dense<"0x0100000002"> : tensor<2xi32>
  func.return %c : tensor<2xi32>
}

// -----

// Zero-size literals: a hex splat was a ZeroDivisionError.
// CHECK-LABEL: func.func @zero_size
// CHECK-NEXT:    %s = graph.constant dense<> : tensor<0xf32>
// CHECK-NEXT:    %e = graph.constant dense<> : tensor<2x0xf32>
// CHECK-NEXT:    %l = graph.constant dense<> : tensor<0xi64>
// CHECK-NEXT:    %h = graph.constant dense<> : tensor<0xi32>
func.func @zero_size() -> (tensor<0xf32>, tensor<2x0xf32>, tensor<0xi64>, tensor<0xi32>) {
  %s = graph.constant dense<0x4B800000> : tensor<0xf32>
  %e = graph.constant dense<> : tensor<2x0xf32>
  %l = graph.constant dense<[]> : tensor<0xi64>
  %h = graph.constant dense<"0x"> : tensor<0xi32>
  func.return %s, %e, %l, %h : tensor<0xf32>, tensor<2x0xf32>, tensor<0xi64>, tensor<0xi32>
}

// -----

func.func @zero_size_hex_string() -> tensor<0xf32> {
  // expected-error@+1 {{a hexadecimal dense literal of 1 byte does not fit tensor<0xf32>, which takes 0 bytes (or 4 bytes for a splat)}}
  %c = graph.constant dense<"0x00"> : tensor<0xf32>
  func.return %c : tensor<0xf32>
}

// -----

// xDSL checks an empty block in Block.verify and names no op: it was reported
// without a position.
// expected-error@+1 {{Operation func.func contains empty block in single-block region that expects at least a terminator}}
func.func @empty_body(%x: tensor<2xf32>) -> tensor<2xf32> {
}

// -----

// expected-error@+1 {{func.func @declaration has no body: a graph-level function is a definition, not a declaration}}
func.func @declaration() -> tensor<2xf32> {
}
