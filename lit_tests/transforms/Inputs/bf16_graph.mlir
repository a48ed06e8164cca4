func.func @main(%a: tensor<4xf32>) -> tensor<4xbf16> {
  %0 = graph.convert %a : tensor<4xf32> to tensor<4xbf16>
  %1 = graph.add %0, %0 : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
  func.return %1 : tensor<4xbf16>
}
