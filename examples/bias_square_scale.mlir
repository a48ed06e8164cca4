// An elementwise graph the mncore level lowers today: ((x + b) * (x + b)) / s.
func.func @main(%x: tensor<6x40xf32>, %b: tensor<40xf32>, %s: tensor<f32>) -> tensor<6x40xf32> {
  %a = graph.add %x, %b : tensor<6x40xf32>, tensor<40xf32> -> tensor<6x40xf32>
  %m = graph.mul %a, %a : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %d = graph.div %m, %s : tensor<6x40xf32>, tensor<f32> -> tensor<6x40xf32>
  return %d : tensor<6x40xf32>
}
