// Strided views: a transpose of an intermediate read by an elementwise op, and as
// either operand of a matmul; a step-2 slice of columns; a reshape that splits a
// transposed dimension (a view) and one that merges transposed dimensions (a copy).
func.func @main(%x: tensor<6x8xf32>, %w: tensor<6x5xf32>) -> (tensor<8x6xf32>, tensor<8x5xf32>, tensor<5x8xf32>, tensor<6x4xf32>, tensor<2x4x6xf32>, tensor<48xf32>) {
  %a = graph.exp %x : tensor<6x8xf32>
  %t = graph.permute %a perm = array<i64: 1, 0> : tensor<6x8xf32> -> tensor<8x6xf32>
  %n = graph.neg %t : tensor<8x6xf32>
  %p = graph.matmul %t, %w : tensor<8x6xf32>, tensor<6x5xf32> -> tensor<8x5xf32>
  %b = graph.exp %w : tensor<6x5xf32>
  %bt = graph.permute %b perm = array<i64: 1, 0> : tensor<6x5xf32> -> tensor<5x6xf32>
  %q = graph.matmul %bt, %a : tensor<5x6xf32>, tensor<6x8xf32> -> tensor<5x8xf32>
  %s = graph.slice %a dim 1 [1:8:2] : tensor<6x8xf32> -> tensor<6x4xf32>
  %sn = graph.neg %s : tensor<6x4xf32>
  %split = graph.reshape %t : tensor<8x6xf32> -> tensor<2x4x6xf32>
  %sp = graph.neg %split : tensor<2x4x6xf32>
  %merged = graph.reshape %t : tensor<8x6xf32> -> tensor<48xf32>
  %mn = graph.neg %merged : tensor<48xf32>
  return %n, %p, %q, %sn, %sp, %mn : tensor<8x6xf32>, tensor<8x5xf32>, tensor<5x8xf32>, tensor<6x4xf32>, tensor<2x4x6xf32>, tensor<48xf32>
}
