// 6400 lanes: more than one L2B's wave (2048 on mncore2), so each L2B gets its own.
func.func @main(%x: tensor<64x100xf32>, %b: tensor<100xf32>) -> (tensor<64x100xf32>, tensor<64xf32>) {
  %a = graph.add %x, %b : tensor<64x100xf32>, tensor<100xf32> -> tensor<64x100xf32>
  %e = graph.exp %a : tensor<64x100xf32>
  %s = graph.sum %e dims = array<i64: 1> : tensor<64x100xf32> -> tensor<64xf32>
  return %e, %s : tensor<64x100xf32>, tensor<64xf32>
}
