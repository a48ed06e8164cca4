// xDSL's cse on graph IR: identical pure ops with identical operands and properties
// merge; different properties keep them apart.
// RUN: mncore-opt %s -p cse | filecheck %s

// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %0 = graph.exp %a : tensor<4x3xf32>
// CHECK-NEXT:    %1 = graph.sum %0 dims = array<i64: 1> : tensor<4x3xf32> -> tensor<4xf32>
// CHECK-NEXT:    %2 = graph.sum %0 dims = array<i64: 1> keepdim = true : tensor<4x3xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %3 = graph.add %1, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %3, %2
func.func @cse(%a: tensor<4x3xf32>) -> (tensor<4xf32>, tensor<4x1xf32>) {
  %0 = graph.exp %a : tensor<4x3xf32>
  %1 = graph.exp %a : tensor<4x3xf32>
  %2 = graph.sum %0 dims = array<i64: 1> : tensor<4x3xf32> -> tensor<4xf32>
  %3 = graph.sum %1 dims = array<i64: 1> : tensor<4x3xf32> -> tensor<4xf32>
  %4 = graph.sum %1 dims = array<i64: 1> keepdim = true : tensor<4x3xf32> -> tensor<4x1xf32>
  %5 = graph.add %2, %3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %5, %4 : tensor<4xf32>, tensor<4x1xf32>
}
