// Zero padding as graph.concat does it (a convolution's windows): %e is copied whole
// into the middle rows of %r, and %r into the middle columns of %c; the zero row %zr
// goes to two slabs, so it stays a buffer of its own.
func.func @main(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x6x6xf32> {
  %e = graph.exp %x : tensor<2x3x4x4xf32>
  %z = graph.constant dense<0.0> : tensor<f32>
  %zr = graph.expand %z : tensor<f32> -> tensor<2x3x1x4xf32>
  %r = graph.concat %zr, %e, %zr dim 2 : tensor<2x3x1x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x1x4xf32> -> tensor<2x3x6x4xf32>
  %zc = graph.expand %z : tensor<f32> -> tensor<2x3x6x1xf32>
  %c = graph.concat %zc, %r, %zc dim 3 : tensor<2x3x6x1xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x1xf32> -> tensor<2x3x6x6xf32>
  %n = graph.neg %c : tensor<2x3x6x6xf32>
  return %n : tensor<2x3x6x6xf32>
}
