// xDSL's dce on graph IR: unused pure ops (and chains of them) disappear, including an
// unused graph.fused op.
// RUN: mncore-opt %s -p dce | filecheck %s

// CHECK-LABEL: func.func @dce
// CHECK-NEXT:    %0 = graph.matmul %a, %b
// CHECK-NEXT:    func.return %0
func.func @dce(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %0 = graph.exp %a : tensor<4x3xf32>
  %1 = graph.sum %0 dims = array<i64: 0, 1> : tensor<4x3xf32> -> tensor<f32>
  %2 = graph.matmul %a, %b : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %3 = graph.fused %a : (tensor<4x3xf32>) -> tensor<4x3xf32> {
  ^bb0(%x: tensor<4x3xf32>):
    %y = graph.neg %x : tensor<4x3xf32>
    graph.yield %y : tensor<4x3xf32>
  }
  func.return %2 : tensor<4x2xf32>
}
