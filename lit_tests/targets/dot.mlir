// -t dot: a graph function becomes boxes and typed edges; a task kernel becomes tasks
// labelled with their body and output tiles, joined through their events.
// RUN: mncore-opt %s -t dot | filecheck %s

// CHECK:      digraph mncore {
// CHECK:        subgraph cluster_0 {
// CHECK-NEXT:     label="@f";
// CHECK-NEXT:     f0_arg0 [shape=ellipse, label="%a\n4x3xf32"];
// CHECK-NEXT:     f0_op0 [shape=box, label="exp"];
// CHECK-NEXT:     f0_arg0 -> f0_op0 [label="4x3xf32"];
// CHECK-NEXT:     f0_op1 [shape=box, label="neg"];
// CHECK-NEXT:     f0_op0 -> f0_op1 [label="4x3xf32"];
func.func @f(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.exp %a : tensor<4x3xf32>
  %1 = graph.neg %0 : tensor<4x3xf32>
  func.return %1 : tensor<4x3xf32>
}

// CHECK:        subgraph cluster_1 {
// CHECK-NEXT:     label="@k";
// CHECK-NEXT:     k1_t0 [shape=box, label="0: @exp\n[0:4, 0:16]"];
// CHECK-NEXT:     k1_e0 [shape=point];
// CHECK-NEXT:     k1_t0 -> k1_e0;
// CHECK-NEXT:     k1_t1 [shape=box, label="1: @exp\n[4:8, 0:16]"];
// CHECK-NEXT:     k1_t1 -> k1_e0;
// CHECK-NEXT:     k1_t2 [shape=box, label="2: @neg\n[0:8, 0:16]"];
// CHECK-NEXT:     k1_e0 -> k1_t2;
// CHECK-NEXT:   }
// CHECK-NEXT: }
task.kernel @k(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @exp(%a: tensor<4x16xf32>) {
    %r = graph.exp %a : tensor<4x16xf32>
    task.yield %r : tensor<4x16xf32>
  }
  task.body @neg(%a: tensor<f32>) {
    %r = graph.neg %a : tensor<f32>
    task.yield %r : tensor<f32>
  }
  %t = task.buffer : memref<8x16xf32>
  %e = task.event triggers 2
  task.task @exp ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
  task.task @exp ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
  task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
  task.return
}
