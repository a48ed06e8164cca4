// Copies into a slab that must stay copies: in @rewritten %a is written again after its
// copy into %d (in place, that would change %d); in @overwritten another task writes
// %d's slab after the copy (in place, that would change %a, read after it).
builtin.module {
  task.kernel @rewritten(%x: memref<4xf32>) -> (%0: memref<4xf32>, %1: memref<6xf32>) {
    task.body @exp(%v: tensor<f32>) {
      %r = graph.exp %v : tensor<f32>
      task.yield %r : tensor<f32>
    }
    task.body @zero() {
      %z = graph.constant dense<0.000000e+00> : tensor<f32>
      task.yield %z : tensor<f32>
    }
    task.body @copy(%v: tensor<f32>) {
      task.yield %v : tensor<f32>
    }
    task.body @neg(%v: tensor<f32>) {
      %r = graph.neg %v : tensor<f32>
      task.yield %r : tensor<f32>
    }
    task.body @add(%v: tensor<f32>, %w: tensor<f32>) {
      %r = graph.add %v, %w : tensor<f32>, tensor<f32> -> tensor<f32>
      task.yield %r : tensor<f32>
    }
    %a = task.buffer : memref<4xf32>
    %d = task.buffer : memref<6xf32>
    %e1 = task.event triggers 1
    %e2 = task.event triggers 3
    %e3 = task.event triggers 1
    task.task @exp ins(%x[0:4]) outs(%a[0:4]) signal(%e1)
    task.task @copy ins(%a[0:4]) outs(%d[1:5]) waits(%e1) signal(%e2)
    task.task @zero outs(%d[0:1]) signal(%e2)
    task.task @zero outs(%d[5:6]) signal(%e2)
    task.task @neg ins(%x[0:4]) outs(%a[0:4]) waits(%e2) signal(%e3)
    task.task @add ins(%a[0:4], %d[1:5]) outs(%0[0:4]) waits(%e3)
    task.task @neg ins(%d[0:6]) outs(%1[0:6]) waits(%e2)
    task.return
  }
  task.kernel @overwritten(%x: memref<4xf32>) -> (%0: memref<4xf32>, %1: memref<6xf32>) {
    task.body @exp(%v: tensor<f32>) {
      %r = graph.exp %v : tensor<f32>
      task.yield %r : tensor<f32>
    }
    task.body @zero() {
      %z = graph.constant dense<0.000000e+00> : tensor<f32>
      task.yield %z : tensor<f32>
    }
    task.body @copy(%v: tensor<f32>) {
      task.yield %v : tensor<f32>
    }
    task.body @neg(%v: tensor<f32>) {
      %r = graph.neg %v : tensor<f32>
      task.yield %r : tensor<f32>
    }
    task.body @add(%v: tensor<f32>, %w: tensor<f32>) {
      %r = graph.add %v, %w : tensor<f32>, tensor<f32> -> tensor<f32>
      task.yield %r : tensor<f32>
    }
    %a = task.buffer : memref<4xf32>
    %d = task.buffer : memref<6xf32>
    %e1 = task.event triggers 1
    %e2 = task.event triggers 1
    %e3 = task.event triggers 3
    task.task @exp ins(%x[0:4]) outs(%a[0:4]) signal(%e1)
    task.task @copy ins(%a[0:4]) outs(%d[1:5]) waits(%e1) signal(%e2)
    task.task @neg ins(%x[0:4]) outs(%d[1:5]) waits(%e2) signal(%e3)
    task.task @zero outs(%d[0:1]) signal(%e3)
    task.task @zero outs(%d[5:6]) signal(%e3)
    task.task @add ins(%a[0:4], %d[1:5]) outs(%0[0:4]) waits(%e3)
    task.task @neg ins(%d[0:6]) outs(%1[0:6]) waits(%e3)
    task.return
  }
}
