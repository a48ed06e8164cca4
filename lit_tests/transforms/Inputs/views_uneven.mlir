// A reshape cut into tasks of unequal tiles (two rows of %a, then the last one), each
// its own body: together still one reshape of the whole buffer, so a view.
func.func @main(%x: tensor<5x2x4xf32>) -> tensor<10x4xf32> {
  %a = graph.exp %x : tensor<5x2x4xf32>
  %r = graph.reshape %a : tensor<5x2x4xf32> -> tensor<10x4xf32>
  %n = graph.neg %r : tensor<10x4xf32>
  return %n : tensor<10x4xf32>
}
