func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c = graph.softmax %a dim -1 : tensor<4x4xf32>
  func.return %c : tensor<4x4xf32>
}
