// A linear layer with ReLU at the graph level: the README's convert-graph-to-task example.
func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %m = graph.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %a = graph.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %r = graph.relu %a : tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}
