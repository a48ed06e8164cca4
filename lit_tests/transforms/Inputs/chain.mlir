// A chain of four intermediates, each dead two tasks after it is written.
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = graph.exp %x : tensor<4x8xf32>
  %b = graph.neg %a : tensor<4x8xf32>
  %c = graph.exp %b : tensor<4x8xf32>
  %d = graph.neg %c : tensor<4x8xf32>
  %e = graph.exp %d : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}
