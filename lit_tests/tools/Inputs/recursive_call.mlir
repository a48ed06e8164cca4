// Two graph functions that call each other: with no control flow, the calls never end.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %z = func.call @main(%y) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
