// Directives that diagnostics do not meet, for mncore_opt_verify_diagnostics_fail.mlir:
// each failure is reported at its line of this file (not of its chunk).
func.func @matched(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{do not broadcast}}
  %0 = graph.add %a, %b : tensor<2xf32>, tensor<3xf32> -> tensor<2xf32>
  func.return
}

// -----

// An expected error that does not occur.
func.func @missing(%a: tensor<2xf32>) {
  // expected-error@+1 {{never said}}
  %0 = graph.neg %a : tensor<2xf32>
  func.return
}

// -----

// An error that is not expected.
func.func @unexpected(%a: tensor<2xi64>) {
  %0 = graph.exp %a : tensor<2xi64>
  func.return
}

// -----

// The right message, expected on the wrong line.
func.func @wrong_line(%a: tensor<2xi32>) {
  // expected-error@+2 {{graph.div expects floating-point operands}}
  %0 = graph.div %a, %a : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  func.return
}

// -----

// A warning expected where an error occurs.
func.func @wrong_severity(%a: tensor<2xf32>) {
  // expected-warning@+1 {{graph.not expects a tensor of i1}}
  %0 = graph.not %a : tensor<2xf32>
  func.return
}

// -----

// A directive cannot reach into the next chunk: the error below is unexpected, and
// this directive (on the last line of its chunk) is not met.
func.func @valid(%a: tensor<2xf32>) -> tensor<2xf32> {
  func.return %a : tensor<2xf32>
}
// expected-error@+3 {{graph.convert must keep the shape}}
// -----
func.func @other_chunk(%a: tensor<2x3xf32>) {
  %0 = graph.convert %a : tensor<2x3xf32> to tensor<6xi64>
  func.return
}
