// A chain of lane tasks (exp, mul, add, tanh), and %e read again by the last one, after
// its buffer's neighbours were written; %p reads %e transposed (other lanes: a load).
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) {
  %e = graph.exp %x : tensor<4x8xf32>
  %m = graph.mul %e, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a = graph.add %m, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = graph.tanh %a : tensor<4x8xf32>
  %s = graph.sub %t, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %p = graph.permute %e perm = array<i64: 1, 0> : tensor<4x8xf32> -> tensor<8x4xf32>
  return %t, %s, %p : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>
}
