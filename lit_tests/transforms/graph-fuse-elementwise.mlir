// graph-fuse-elementwise: chains of elementwise ops with one result shape become one
// graph.fused op; 0-d constants are copied into the body; values used outside the
// chain become results; non-elementwise ops end a chain.
// RUN: mncore-opt %s -p graph-fuse-elementwise --split-input-file | filecheck %s
// RUN: mncore-opt %s -p 'graph-fuse-elementwise{min_ops=4}' --split-input-file | filecheck %s --check-prefix=MIN4
// RUN: not mncore-opt %s -p 'graph-fuse-elementwise{min_ops=0}' --split-input-file 2>&1 | filecheck %s --check-prefix=MIN0
// MIN0: mncore-opt: error: graph-fuse-elementwise: min_ops must be >= 1
// RUN: mncore-opt %s -p graph-fuse-elementwise,convert-graph-to-task --split-input-file | filecheck %s --check-prefix=TASK
// RUN: mncore-run %s --random-inputs 5 > %t.before
// RUN: mncore-opt %s -p graph-fuse-elementwise | mncore-run --random-inputs 5 > %t.after
// RUN: diff %t.before %t.after
// Task bodies are left alone (a body is 0-d elementwise ops or one graph op, never a
// graph.fused: the fused body failed the task verifier):
// RUN: mncore-opt %S/Inputs/task_kernel_bodies.mlir -p graph-fuse-elementwise | filecheck %s --check-prefix=TASK-LEVEL
// TASK-LEVEL:      task.body @ew0(
// TASK-LEVEL-NEXT:   graph.exp
// TASK-LEVEL-NEXT:   graph.add
// TASK-LEVEL-NEXT:   graph.mul
// TASK-LEVEL-NEXT:   task.yield

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[F0:.*]], %[[F1:.*]] = graph.fused %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3xf32>):
// CHECK-NEXT:      %[[C:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:      %[[M:.*]] = graph.mul %[[A]], %[[C]]
// CHECK-NEXT:      %[[S:.*]] = graph.add %[[M]], %[[B]]
// CHECK-NEXT:      %[[E:.*]] = graph.exp %[[S]]
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[E]]
// CHECK-NEXT:      graph.yield %[[E]], %[[R]] : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[SUM:.*]] = graph.sum %[[F0]] dims = array<i64: 1> keepdim = true
// CHECK-NEXT:    %[[G:.*]] = graph.fused %[[F1]], %[[SUM]]
// CHECK:           graph.div
// CHECK-NEXT:      graph.neg
// CHECK-NEXT:      graph.yield
// CHECK:         %[[ROW:.*]] = graph.neg %[[SUM]] : tensor<4x1xf32>
// CHECK-NEXT:    func.return %[[G]], %[[ROW]]

// MIN4-LABEL: func.func @main
// MIN4:         graph.fused %a, %b
// MIN4-NOT:     graph.fused
// MIN4:         func.return
func.func @main(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x1xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.mul %a, %two : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %1 = graph.add %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %2 = graph.exp %1 : tensor<4x3xf32>
  %3 = graph.relu %2 : tensor<4x3xf32>
  %4 = graph.sum %2 dims = array<i64: 1> keepdim = true : tensor<4x3xf32> -> tensor<4x1xf32>
  %5 = graph.div %3, %4 : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  %6 = graph.neg %5 : tensor<4x3xf32>
  %7 = graph.neg %4 : tensor<4x1xf32>
  func.return %6, %7 : tensor<4x3xf32>, tensor<4x1xf32>
}

// -----

// A dead chain stays as it is (dce's to remove), not a graph.fused without results;
// a dead op at the end of a live chain is fused with it.
// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    %[[N:.*]] = graph.neg %x : tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[N]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[F:.*]] = graph.fused %x : (tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<2x3xf32>):
// CHECK-NEXT:      %[[E:.*]] = graph.exp %[[A]]
// CHECK-NEXT:      %[[L:.*]] = graph.log %[[E]]
// CHECK-NEXT:      graph.yield %[[E]] : tensor<2x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[F]]
// TASK-LABEL: task.kernel @dead
// TASK-COUNT-3: task.task @ew
// TASK-NEXT:    task.return
func.func @dead(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %neg = graph.neg %x : tensor<2x3xf32>
  %relu = graph.relu %neg : tensor<2x3xf32>
  %exp = graph.exp %x : tensor<2x3xf32>
  %log = graph.log %exp : tensor<2x3xf32>
  func.return %exp : tensor<2x3xf32>
}
