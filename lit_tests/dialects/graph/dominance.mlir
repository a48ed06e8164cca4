// Uses that their definitions do not dominate, one chunk per case (chunks are split
// on the dashed separator lines). xDSL's parser accepts a value used above its
// definition; mncore-opt checks dominance (mncore_ir/dominance.py) after the verifiers
// and reports the using op: `file:line:col`, the source line, a caret and the message.
// RUN: mncore-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Two lines of a valid function swapped.
func.func @swapped(%a: tensor<2xf32>) -> tensor<2xf32> {
  %1 = graph.mul %0, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK:      dominance.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %1 = graph.mul %0, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: operand 0 of graph.mul is a value (result 0 of graph.add), which is defined later in the same block (use before definition)
  %0 = graph.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %1 : tensor<2xf32>
}

// -----

// A named value used by the op before it; the message names it.
func.func @named(%a: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.neg %x : tensor<2xf32>
  // CHECK:      dominance.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %y = graph.neg %x : tensor<2xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: operand 0 of graph.neg (defining %y) is %x (result 0 of graph.exp), which is defined later in the same block (use before definition)
  %x = graph.exp %a : tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// The same inside the body of a graph.fused.
func.func @fused(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.fused %a : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %2 = graph.neg %1 : tensor<2xf32>
    // CHECK:      dominance.mlir:[[# @LINE - 1]]:5
    // CHECK-NEXT: %2 = graph.neg %1 : tensor<2xf32>
    // CHECK-NEXT: ^^
    // CHECK-NEXT: operand 0 of graph.neg is a value (result 0 of graph.add), which is defined later in the same block (use before definition)
    %1 = graph.add %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    graph.yield %2 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}

// -----

// Valid IR between the invalid chunks still parses and prints.
func.func @ok(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK-LABEL: func.func @ok
// CHECK:       graph.add
