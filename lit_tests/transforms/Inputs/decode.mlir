// A decode step's shapes in small: a linear layer at batch 1 (a transposed weight,
// few output tiles, a long contraction, a bias), a KV cache written at one position and
// read through a permute, and an argmax-like max over a long row.
func.func @main(%x: tensor<1x64xf32>, %w: tensor<8x64xf32>, %cache: tensor<6x1x2x4xf32>, %pos: tensor<1xi64>, %row: tensor<1x1x2x4xf32>, %q: tensor<1x2x1x4xf32>, %logits: tensor<1x40xf32>, %bias: tensor<8xf32>) -> (tensor<1x8xf32>, tensor<6x1x2x4xf32>, tensor<1x2x1x6xf32>, tensor<1x1xf32>) {
  %wt = graph.permute %w perm = array<i64: 1, 0> : tensor<8x64xf32> -> tensor<64x8xf32>
  %mm = graph.matmul %x, %wt : tensor<1x64xf32>, tensor<64x8xf32> -> tensor<1x8xf32>
  %y = graph.add %mm, %bias : tensor<1x8xf32>, tensor<8xf32> -> tensor<1x8xf32>
  %new = graph.index_put %cache[%pos], %row : tensor<6x1x2x4xf32>, tensor<1xi64>, tensor<1x1x2x4xf32> -> tensor<6x1x2x4xf32>
  %kt = graph.permute %new perm = array<i64: 1, 2, 3, 0> : tensor<6x1x2x4xf32> -> tensor<1x2x4x6xf32>
  %s = graph.matmul %q, %kt : tensor<1x2x1x4xf32>, tensor<1x2x4x6xf32> -> tensor<1x2x1x6xf32>
  %m = graph.amax %logits dims = array<i64: 1> keepdim = true : tensor<1x40xf32> -> tensor<1x1xf32>
  func.return %y, %new, %s, %m : tensor<1x8xf32>, tensor<6x1x2x4xf32>, tensor<1x2x1x6xf32>, tensor<1x1xf32>
}
