func.func @main(%x: tensor<6x10xf32>) -> (tensor<10x6xf32>, tensor<3x20xf32>, tensor<6x4xf32>, tensor<2x3x10xf32>) {
  %p = graph.permute %x perm = array<i64: 1, 0> : tensor<6x10xf32> -> tensor<10x6xf32>
  %e = graph.exp %p : tensor<10x6xf32>
  %r = graph.reshape %x : tensor<6x10xf32> -> tensor<3x20xf32>
  %s = graph.slice %x dim 1 [1:9:2] : tensor<6x10xf32> -> tensor<6x4xf32>
  %q = graph.reshape %x : tensor<6x10xf32> -> tensor<2x3x10xf32>
  %t = graph.permute %q perm = array<i64: 1, 0, 2> : tensor<2x3x10xf32> -> tensor<3x2x10xf32>
  %u = graph.permute %t perm = array<i64: 1, 0, 2> : tensor<3x2x10xf32> -> tensor<2x3x10xf32>
  return %e, %r, %s, %u : tensor<10x6xf32>, tensor<3x20xf32>, tensor<6x4xf32>, tensor<2x3x10xf32>
}
