// A task kernel whose pointwise body is a chain of 0-d elementwise ops (the input of
// graph-fuse-elementwise's task-level RUN line: the body is left as it is).
builtin.module {
  task.kernel @main(%x: memref<4x8xf32>) -> (%0: memref<4x8xf32>) attributes {workers = 132 : i64} {
    task.body @ew0(%1: tensor<f32>, %2: tensor<f32>) {
      %3 = graph.exp %1 : tensor<f32>
      %4 = graph.add %3, %2 : tensor<f32>, tensor<f32> -> tensor<f32>
      %5 = graph.mul %4, %4 : tensor<f32>, tensor<f32> -> tensor<f32>
      task.yield %5 : tensor<f32>
    }
    %z = task.constant dense<0.000000e+00> : tensor<4x8xf32>
    task.task @ew0 ins(%x[0:4, 0:8], %z[0:4, 0:8]) outs(%0[0:4, 0:8])
    task.return
  }
}

