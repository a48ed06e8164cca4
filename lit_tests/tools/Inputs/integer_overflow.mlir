// A product of two integers that a word (f32) cannot hold exactly on MN-Core.
func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {
  %a = graph.mul %x, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return %a : tensor<4xi32>
}
