// A linear layer (F.linear: the weight read through a transpose) with a bias and ReLU.
func.func @main(%x: tensor<6x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<6x8xf32> {
  %m = graph.matmul_permuted %x, %w rhs_perm = array<i64: 1, 0> : tensor<6x16xf32>, tensor<8x16xf32> -> tensor<6x8xf32>
  %a = graph.add %m, %b : tensor<6x8xf32>, tensor<8xf32> -> tensor<6x8xf32>
  %r = graph.relu %a : tensor<6x8xf32>
  return %r : tensor<6x8xf32>
}
