// A slice's tiles handed the wrong rows (a task graph written by hand or mutated: row 0
// of %s is row 1 of %a's slice): not the view the slice op describes, so it stays a copy.
builtin.module {
  task.kernel @main(%x: memref<2x40xf32>) -> (%0: memref<2x16xf32>) attributes {workers = 132 : i64} {
    task.body @ew0(%1: tensor<f32>) {
      %2 = graph.exp %1 : tensor<f32>
      task.yield %2 : tensor<f32>
    }
    task.body @ew1(%1: tensor<f32>) {
      %2 = graph.neg %1 : tensor<f32>
      task.yield %2 : tensor<f32>
    }
    task.body @slice0(%1: tensor<1x40xf32>) {
      %2 = graph.slice %1 dim 1 [4 : 36 : 2] : tensor<1x40xf32> -> tensor<1x16xf32>
      task.yield %2 : tensor<1x16xf32>
    }
    %a = task.buffer : memref<2x40xf32>
    %s = task.buffer : memref<2x16xf32>
    %1 = task.event triggers 10
    %2 = task.event triggers 10
    %3 = task.event triggers 1
    %4 = task.event triggers 1
    task.task @ew0 ins(%x[0:1, 0:4]) outs(%a[0:1, 0:4]) signal(%1)
    task.task @ew0 ins(%x[0:1, 4:8]) outs(%a[0:1, 4:8]) signal(%1)
    task.task @ew0 ins(%x[0:1, 8:12]) outs(%a[0:1, 8:12]) signal(%1)
    task.task @ew0 ins(%x[0:1, 12:16]) outs(%a[0:1, 12:16]) signal(%1)
    task.task @ew0 ins(%x[0:1, 16:20]) outs(%a[0:1, 16:20]) signal(%1)
    task.task @ew0 ins(%x[0:1, 20:24]) outs(%a[0:1, 20:24]) signal(%1)
    task.task @ew0 ins(%x[0:1, 24:28]) outs(%a[0:1, 24:28]) signal(%1)
    task.task @ew0 ins(%x[0:1, 28:32]) outs(%a[0:1, 28:32]) signal(%1)
    task.task @ew0 ins(%x[0:1, 32:36]) outs(%a[0:1, 32:36]) signal(%1)
    task.task @ew0 ins(%x[0:1, 36:40]) outs(%a[0:1, 36:40]) signal(%1)
    task.task @ew0 ins(%x[1:2, 0:4]) outs(%a[1:2, 0:4]) signal(%2)
    task.task @ew0 ins(%x[1:2, 4:8]) outs(%a[1:2, 4:8]) signal(%2)
    task.task @ew0 ins(%x[1:2, 8:12]) outs(%a[1:2, 8:12]) signal(%2)
    task.task @ew0 ins(%x[1:2, 12:16]) outs(%a[1:2, 12:16]) signal(%2)
    task.task @ew0 ins(%x[1:2, 16:20]) outs(%a[1:2, 16:20]) signal(%2)
    task.task @ew0 ins(%x[1:2, 20:24]) outs(%a[1:2, 20:24]) signal(%2)
    task.task @ew0 ins(%x[1:2, 24:28]) outs(%a[1:2, 24:28]) signal(%2)
    task.task @ew0 ins(%x[1:2, 28:32]) outs(%a[1:2, 28:32]) signal(%2)
    task.task @ew0 ins(%x[1:2, 32:36]) outs(%a[1:2, 32:36]) signal(%2)
    task.task @ew0 ins(%x[1:2, 36:40]) outs(%a[1:2, 36:40]) signal(%2)
    task.task @slice0 ins(%a[1:2, 0:40]) outs(%s[0:1, 0:16]) waits(%2) signal(%3)
    task.task @slice0 ins(%a[0:1, 0:40]) outs(%s[1:2, 0:16]) waits(%1) signal(%4)
    task.task @ew1 ins(%s[0:1, 0:4]) outs(%0[0:1, 0:4]) waits(%3)
    task.task @ew1 ins(%s[0:1, 4:8]) outs(%0[0:1, 4:8]) waits(%3)
    task.task @ew1 ins(%s[0:1, 8:12]) outs(%0[0:1, 8:12]) waits(%3)
    task.task @ew1 ins(%s[0:1, 12:16]) outs(%0[0:1, 12:16]) waits(%3)
    task.task @ew1 ins(%s[1:2, 0:4]) outs(%0[1:2, 0:4]) waits(%4)
    task.task @ew1 ins(%s[1:2, 4:8]) outs(%0[1:2, 4:8]) waits(%4)
    task.task @ew1 ins(%s[1:2, 8:12]) outs(%0[1:2, 8:12]) waits(%4)
    task.task @ew1 ins(%s[1:2, 12:16]) outs(%0[1:2, 12:16]) waits(%4)
    task.return
  }
}

