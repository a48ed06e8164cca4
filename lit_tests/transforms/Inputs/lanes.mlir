// Lane kernels: reductions (over the last, the first and all dimensions; keepdim),
// gather, scatter, an embedding and index_put (accumulating); and through the tree, sums and means of few
// outputs over many elements (%big: 3 sums of 100, a mean of 300).
func.func @main(%x: tensor<5x4xf32>, %idx: tensor<5x2xi64>, %w: tensor<6x3xf32>, %ids: tensor<2x3xi64>, %v: tensor<f32>, %big: tensor<3x100xf32>, %rows: tensor<3xi64>, %vals: tensor<3x4xf32>)
    -> (tensor<5xf32>, tensor<1x4xf32>, tensor<f32>, tensor<5x2xf32>, tensor<5x4xf32>, tensor<2x3x3xf32>, tensor<3xf32>, tensor<f32>, tensor<5x4xf32>) {
  %sum = graph.sum %x dims = array<i64: -1> : tensor<5x4xf32> -> tensor<5xf32>
  %mean = graph.mean %x dims = array<i64: 0> keepdim = true : tensor<5x4xf32> -> tensor<1x4xf32>
  %amax = graph.amax %x dims = array<i64: 0, 1> : tensor<5x4xf32> -> tensor<f32>
  %gather = graph.gather %x[%idx] dim 1 : tensor<5x4xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
  %scatter = graph.scatter %x[%idx] dim 1, %v : tensor<5x4xf32>, tensor<5x2xi64>, tensor<f32> -> tensor<5x4xf32>
  %emb = graph.embedding %w[%ids] : tensor<6x3xf32>, tensor<2x3xi64> -> tensor<2x3x3xf32>
  %sums = graph.sum %big dims = array<i64: 1> : tensor<3x100xf32> -> tensor<3xf32>
  %all = graph.mean %big dims = array<i64: 0, 1> : tensor<3x100xf32> -> tensor<f32>
  %put = graph.index_put %x[%rows], %vals accumulate = true : tensor<5x4xf32>, tensor<3xi64>, tensor<3x4xf32> -> tensor<5x4xf32>
  func.return %sum, %mean, %amax, %gather, %scatter, %emb, %sums, %all, %put : tensor<5xf32>, tensor<1x4xf32>, tensor<f32>, tensor<5x2xf32>, tensor<5x4xf32>, tensor<2x3x3xf32>, tensor<3xf32>, tensor<f32>, tensor<5x4xf32>
}
