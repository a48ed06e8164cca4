// A reshape and a contiguous slice of an intermediate (views of its words), a slice
// with unit steps but rows not contiguous (a copy), and a reshape of the output.
func.func @main(%x: tensor<4x8xf32>) -> (tensor<2x16xf32>, tensor<2x8xf32>, tensor<4x2xf32>, tensor<32xf32>) {
  %a = graph.exp %x : tensor<4x8xf32>
  %r = graph.reshape %a : tensor<4x8xf32> -> tensor<2x16xf32>
  %n = graph.neg %r : tensor<2x16xf32>
  %s = graph.slice %a dim 0 [1:3] : tensor<4x8xf32> -> tensor<2x8xf32>
  %t = graph.neg %s : tensor<2x8xf32>
  %c = graph.slice %a dim 1 [2:4] : tensor<4x8xf32> -> tensor<4x2xf32>
  %d = graph.neg %c : tensor<4x2xf32>
  %o = graph.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  return %n, %t, %d, %o : tensor<2x16xf32>, tensor<2x8xf32>, tensor<4x2xf32>, tensor<32xf32>
}
