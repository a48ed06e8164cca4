// Parses, but graph.add's operand shapes do not broadcast.
func.func @f(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %0 = graph.add %x, %y : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  func.return
}
