// Valid syntax, but graph.bogus is not an op of any registered dialect.
func.func @f(%x: tensor<2xf32>) {
  %0 = graph.bogus %x : tensor<2xf32>
  func.return
}
