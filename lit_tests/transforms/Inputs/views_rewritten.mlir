// %r holds a reshape of %a, then %a is written again before %r is read (a buffer
// reused, as convert-graph-to-task{reuse_buffers=true} makes): %r cannot be a view.
builtin.module {
  task.kernel @main(%x: memref<4x8xf32>) -> (%0: memref<2x16xf32>, %1: memref<4x8xf32>) {
    task.body @ew0(%4: tensor<f32>) {
      %5 = graph.exp %4 : tensor<f32>
      task.yield %5 : tensor<f32>
    }
    task.body @ew1(%4: tensor<f32>) {
      %5 = graph.neg %4 : tensor<f32>
      task.yield %5 : tensor<f32>
    }
    task.body @reshape0(%4: tensor<4x8xf32>) {
      %5 = graph.reshape %4 : tensor<4x8xf32> -> tensor<2x16xf32>
      task.yield %5 : tensor<2x16xf32>
    }
    %a = task.buffer : memref<4x8xf32>
    %r = task.buffer : memref<2x16xf32>
    %4 = task.event triggers 1
    %5 = task.event triggers 1
    %6 = task.event triggers 1
    task.task @ew0 ins(%x[0:4, 0:8]) outs(%a[0:4, 0:8]) signal(%4)
    task.task @reshape0 ins(%a[0:4, 0:8]) outs(%r[0:2, 0:16]) waits(%4) signal(%5)
    task.task @ew1 ins(%x[0:4, 0:8]) outs(%a[0:4, 0:8]) waits(%5) signal(%6)
    task.task @ew1 ins(%r[0:2, 0:16]) outs(%0[0:2, 0:16]) waits(%5)
    task.task @ew0 ins(%a[0:4, 0:8]) outs(%1[0:4, 0:8]) waits(%6)
    task.return
  }
}
