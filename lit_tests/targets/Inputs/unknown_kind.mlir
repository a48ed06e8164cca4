task.kernel @main(%x: memref<4xf32>) -> (%y: memref<2x4xf32>) {
  task.body @frobnicate(%a: tensor<4xf32>) {
    %e = graph.expand %a : tensor<4xf32> -> tensor<2x4xf32>
    task.yield %e : tensor<2x4xf32>
  }
  task.task @frobnicate ins(%x[0:4]) outs(%y[0:2, 0:4])
  task.return
}
