func.func @main(%a: tensor<4x4xf32>) -> tensor<4xf32> {
  %c = graph.sum %a dims = array<i64: 1> : tensor<4x4xf32> -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
