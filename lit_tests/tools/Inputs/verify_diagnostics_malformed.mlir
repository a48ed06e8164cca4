// A directive that does not parse is an error at its position, not ignored.
func.func @f(%a: tensor<2xi64>) {
  // expected-error@+x {{graph.exp expects a floating-point tensor}}
  %0 = graph.exp %a : tensor<2xi64>
  func.return
}
