// graph-decompose expands composite ops into elementwise ops and reductions.
// RUN: mncore-opt %s -p graph-decompose | filecheck %s
// With composites=false (the triton device's pipeline, which has kernels for them) they
// stay:
// RUN: mncore-opt %s -p 'graph-decompose{composites=false convolutions=true}' | filecheck %s --check-prefix=KEPT
// KEPT: graph.softmax
// KEPT: graph.layer_norm
// KEPT: graph.layer_norm_backward
// KEPT: graph.gelu
// KEPT: graph.gelu_backward
// The expansion computes the same numbers as the composite op:
// RUN: mncore-run %s --function softmax --args 'dense<[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>' | filecheck %s --check-prefix=NUM
// RUN: mncore-opt %s -p graph-decompose | mncore-run --function softmax --args 'dense<[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>' | filecheck %s --check-prefix=NUM
// NUM:      result0 = tensor<2x3xf32>: [[0.090031, 0.244728, 0.665241],
// NUM-NEXT:  [0.333333, 0.333333, 0.333333]]
// NUM-NEXT: result1 = tensor<2x3xf32>: [[-2.407606, -1.407606, -0.407606],
// NUM-NEXT:  [-1.098612, -1.098612, -1.098612]]
// The decomposed norms equal the originals to rounding (gelu's formulas differ by an ulp):
// RUN: mncore-run %s --function norms --random-inputs 3 --save-outputs %t.before.npz > /dev/null
// RUN: mncore-opt %s -p graph-decompose | mncore-run --function norms --random-inputs 3 --save-outputs %t.after.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a, b = np.load('%t.before.npz'), np.load('%t.after.npz'); print(len(a), sorted(a) == sorted(b), all(np.allclose(a[k], b[k], rtol=1e-6, atol=1e-6) for k in a))" | filecheck %s --check-prefix=SAME
// SAME: 12 True True

// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %[[MAX:.*]] = graph.amax %x dims = array<i64: 1> keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
// CHECK-NEXT:    %[[SHIFT:.*]] = graph.sub %x, %[[MAX]]
// CHECK-NEXT:    %[[EXP:.*]] = graph.exp %[[SHIFT]]
// CHECK-NEXT:    %[[SUM:.*]] = graph.sum %[[EXP]] dims = array<i64: 1> keepdim = true
// CHECK-NEXT:    %[[SM:.*]] = graph.div %[[EXP]], %[[SUM]]
// CHECK:         %[[LOG:.*]] = graph.log
// CHECK-NEXT:    %[[LSM:.*]] = graph.sub %{{.*}}, %[[LOG]]
// CHECK-NEXT:    func.return %[[SM]], %[[LSM]]
func.func @softmax(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.softmax %x dim 1 : tensor<2x3xf32>
  %1 = graph.log_softmax %x dim 1 : tensor<2x3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK-NOT:     graph.layer_norm
// CHECK-NOT:     graph.gelu
// CHECK-NOT:     graph.softmax_backward
// CHECK-NOT:     graph.log_softmax_backward
// CHECK:         graph.rsqrt
// CHECK:         graph.erf
// CHECK:         graph.tanh
// CHECK:         func.return
func.func @norms(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %y, %mean, %rstd = graph.layer_norm %x, %w, %b dims 1 eps 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>
  %dx, %dw, %db = graph.layer_norm_backward %dy, %x, %mean, %rstd, %w dims 1 : tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %g = graph.gelu %x : tensor<2x4x8xf32>
  %gt = graph.gelu %x approximate "tanh" : tensor<2x4x8xf32>
  %dg = graph.gelu_backward %dy, %x : tensor<2x4x8xf32>
  %dgt = graph.gelu_backward %dy, %x approximate "tanh" : tensor<2x4x8xf32>
  %s = graph.softmax %x dim 2 : tensor<2x4x8xf32>
  %ds = graph.softmax_backward %dy, %s dim 2 : tensor<2x4x8xf32>
  %ls = graph.log_softmax %x dim 2 : tensor<2x4x8xf32>
  %dls = graph.log_softmax_backward %dy, %ls dim 2 : tensor<2x4x8xf32>
  func.return %y, %mean, %rstd, %dx, %dw, %db, %g, %gt, %dg, %dgt, %ds, %dls : tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
