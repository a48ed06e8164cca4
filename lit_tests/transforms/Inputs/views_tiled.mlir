// Slices cut into tasks of a few elements: a slice of columns whose tasks each read one
// row (a tile that alone looks like one run of words, but the buffer's rows are not
// one run: a copy), and a slice along a dimension with only a unit one before it,
// tiled along the dimension after it (one run of the buffer: a view).
func.func @main(%x: tensor<4x8xf32>, %y: tensor<1x10x6xf32>) -> (tensor<4x2xf32>, tensor<1x3x6xf32>) {
  %a = graph.exp %x : tensor<4x8xf32>
  %s = graph.slice %a dim 1 [2:4] : tensor<4x8xf32> -> tensor<4x2xf32>
  %n = graph.neg %s : tensor<4x2xf32>
  %b = graph.exp %y : tensor<1x10x6xf32>
  %t = graph.slice %b dim 1 [2:5] : tensor<1x10x6xf32> -> tensor<1x3x6xf32>
  %m = graph.neg %t : tensor<1x3x6xf32>
  return %n, %m : tensor<4x2xf32>, tensor<1x3x6xf32>
}
