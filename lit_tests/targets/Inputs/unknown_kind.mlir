task.kernel @main(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  task.task "frobnicate" ins(%x[0:4]) outs(%y[0:4])
  task.return
}
