// A valid function, which convert-graph-to-task{matmul_tile=0,0} refuses to lower
// (mncore_opt_verify_diagnostics.mlir).
// expected-error@unknown {{matmul_tile needs two sizes >= 1}}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.neg %x : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
