// mncore-opt --verify-diagnostics, as in mlir-opt: each chunk's diagnostics (parse
// errors, verifier errors, errors raised by passes) must match the expected-* directives
// written in it, and then the exit status is 0. Every form of directive is used below;
// the failures (an unmet directive, an unexpected error, ...) are checked in
// mncore_opt_verify_diagnostics_fail.mlir.
// RUN: mncore-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The chunks without an error are printed (they hold no graph op), the others are not.
// CHECK-NOT:  graph.
// CHECK:      func.func @valid
// CHECK-NOT:  graph.
// CHECK:      func.func @also_valid
// CHECK-NOT:  graph.

func.func @valid(%a: tensor<2xf32>) -> tensor<2xf32> {
  func.return %a : tensor<2xf32>
}

// -----

// On the next line.
func.func @plus(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{graph.add: shapes (2,), (3,) do not broadcast}}
  %0 = graph.add %a, %b : tensor<2xf32>, tensor<3xf32> -> tensor<2xf32>
  func.return
}

// -----

// Two lines below, and a substring of the message.
func.func @plus_two(%a: tensor<2xi64>) {
  // expected-error@+2 {{expects a floating-point}}

  %0 = graph.exp %a : tensor<2xi64>
  func.return
}

// -----

// On the same line.
func.func @same_line(%a: tensor<2xi64>) {
  %0 = graph.exp %a : tensor<2xi64> // expected-error {{graph.exp expects a floating-point tensor}}
  func.return
}

// -----

// On a line above.
func.func @minus(%a: tensor<2xi32>) {
  %0 = graph.div %a, %a : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  // Another comment in between.
  // expected-error@-2 {{graph.div expects floating-point operands}}
  func.return
}

// -----

// The nearest line above without a directive.
func.func @above(%a: tensor<2xf32>) {
  %0 = graph.not %a : tensor<2xf32>
  // expected-error@above {{graph.not expects a tensor of i1}}
  func.return
}

// -----

// The nearest line below without a directive.
func.func @below(%a: tensor<2x3xf32>) {
  // expected-error@below {{graph.reshape cannot reshape (2, 3) to (4, 2)}}
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<4x2xf32>
  func.return
}

// -----

// A regular expression inside the text.
func.func @regex(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error-re@+1 {{graph.matmul cannot multiply shapes ({{[0-9, ]+}}) and (4, 5)}}
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  func.return
}

// -----

// A parse error, at the token it is about.
func.func @syntax(%a: tensor<2xf32>) {
  // expected-error@+1 {{Expected ':'}}
  %0 = graph.neg %a tensor<2xf32>
  func.return
}

// -----

// A use before the definition (SSA dominance).
func.func @dominance(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{which is defined later in the same block (use before definition)}}
  %0 = graph.neg %1 : tensor<2xf32>
  %1 = graph.neg %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @also_valid(%a: tensor<2xf32>) -> tensor<2xf32> {
  func.return %a : tensor<2xf32>
}

// An error raised by a pass has no source position unless the pass names the op to
// blame: the directive is @unknown.
// RUN: mncore-opt %S/Inputs/pass_error.mlir -p 'convert-graph-to-task{matmul_tile=0,0}' --verify-diagnostics
// Without the pass the error does not occur, so the directive is not met.
// RUN: not mncore-opt %S/Inputs/pass_error.mlir --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=UNMET
// UNMET-NOT: Traceback
// UNMET:     {{\A}}mncore-opt: {{.*}}pass_error.mlir:3:4: error: expected error "matmul_tile needs two sizes >= 1" at an unknown location was not produced
