// Not valid IR: the colon before the type of graph.neg is missing.
func.func @f(%x: tensor<2xf32>) {
  %0 = graph.neg %x tensor<2xf32>
  func.return
}
