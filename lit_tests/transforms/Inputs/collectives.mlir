// A rank's part of a tensor-parallel matmul and a sequence-parallel exchange.
func.func @main(%a: tensor<4x2xf32>, %b: tensor<2x6xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>, tensor<2x6xf32>) {
  %mm = graph.matmul %a, %b : tensor<4x2xf32>, tensor<2x6xf32> -> tensor<4x6xf32>
  %sum = graph.all_reduce %mm "sum" group "tp" size 2 : tensor<4x6xf32> -> tensor<4x6xf32>
  %all = graph.all_gather %sum group "tp" size 2 : tensor<4x6xf32> -> tensor<8x6xf32>
  %part = graph.reduce_scatter %sum "avg" group "tp" size 2 : tensor<4x6xf32> -> tensor<2x6xf32>
  func.return %sum, %all, %part : tensor<4x6xf32>, tensor<8x6xf32>, tensor<2x6xf32>
}
