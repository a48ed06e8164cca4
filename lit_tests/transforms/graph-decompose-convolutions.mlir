// graph-decompose{convolutions=true}: convolutions as matrix products of their windows
// (im2col): the channels go first, each window element is a (strided) slice of the
// padded input, the slices are the rows of one matrix, the filters multiply it.
// RUN: mncore-opt %s -p 'graph-decompose{convolutions=true}' | filecheck %s
// Without the option the convolutions stay:
// RUN: mncore-opt %s -p graph-decompose | filecheck %s --check-prefix=KEPT
// KEPT-COUNT-2: graph.conv2d
// The triton device's pipeline decomposes them too:
// RUN: mncore-opt %s --device triton | filecheck %s --check-prefix=TRITON
// TRITON-NOT: graph.conv2d
// TRITON: graph.matmul
// The matrix products compute what the convolutions compute (strides, padding,
// dilation, groups, inputs no window reads), on the interpreter and on the tiny MN-Core:
// RUN: mncore-run %s --function backward --random-inputs 5 --save-outputs %t.before.npz > /dev/null
// RUN: mncore-opt %s -p 'graph-decompose{convolutions=true}' | mncore-run --function backward --random-inputs 5 --save-outputs %t.after.npz > /dev/null
// RUN: mncore-opt %s --device mncore -o %t.mncore.mlir
// RUN: mncore-run %t.mncore.mlir --function backward --random-inputs 5 --save-outputs %t.mncore.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a, b, c = (np.load(f) for f in ('%t.before.npz', '%t.after.npz', '%t.mncore.npz')); print(len(a), all(np.allclose(a[k], b[k], rtol=1e-5, atol=1e-5) and np.allclose(a[k], c[k], rtol=1e-4, atol=1e-4) for k in a))" | filecheck %s --check-prefix=SAME
// SAME: 3 True

// CHECK-LABEL: func.func @forward
// CHECK:         %[[W:.*]] = graph.reshape %w : tensor<4x3x3x3xf32> -> tensor<4x27xf32>
// CHECK:         %[[XC:.*]] = graph.permute %x perm = array<i64: 1, 0, 2, 3> : tensor<2x3x5x5xf32> -> tensor<3x2x5x5xf32>
// CHECK:         %[[ROWS:.*]] = graph.concat %{{.*}}, %[[XC]], %{{.*}} dim 2 : {{.*}} -> tensor<3x2x7x5xf32>
// CHECK:         %[[PADDED:.*]] = graph.concat %{{.*}}, %[[ROWS]], %{{.*}} dim 3 : {{.*}} -> tensor<3x2x7x7xf32>
// CHECK:         graph.slice %[[PADDED]] dim 2 [0 : 5 : 2]
// CHECK:         %[[TAPS:.*]] = graph.concat {{.*}} dim 1 : {{.*}} -> tensor<3x9x2x3x3xf32>
// CHECK-NEXT:    %[[COLS:.*]] = graph.reshape %[[TAPS]] : tensor<3x9x2x3x3xf32> -> tensor<27x18xf32>
// CHECK-NEXT:    %[[PRODUCT:.*]] = graph.matmul %[[W]], %[[COLS]] : tensor<4x27xf32>, tensor<27x18xf32> -> tensor<4x18xf32>
// CHECK-NEXT:    %[[SHAPED:.*]] = graph.reshape %[[PRODUCT]] : tensor<4x18xf32> -> tensor<4x2x3x3xf32>
// CHECK-NEXT:    %[[NCHW:.*]] = graph.permute %[[SHAPED]] perm = array<i64: 1, 0, 2, 3>
// CHECK-NEXT:    %[[BIAS:.*]] = graph.reshape %b : tensor<4xf32> -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %{{.*}} = graph.add %[[NCHW]], %[[BIAS]]
// CHECK-NOT:     graph.conv2d
func.func @forward(%x: tensor<2x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  %y = graph.conv2d %x, %w, %b stride array<i64: 2, 2> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x3x3xf32>
  func.return %y : tensor<2x4x3x3xf32>
}

// The weight gradient is dy @ columns^T, the input gradient W^T @ dy placed back
// (col2im: each window element's part spread by the stride, shifted, summed):
// CHECK-LABEL: func.func @backward
// CHECK:         %[[DY:.*]] = graph.reshape %{{.*}} : tensor<6x1x2x3xf32> -> tensor<6x6xf32>
// CHECK-COUNT-2: graph.matmul
// CHECK:         graph.add
// CHECK:         graph.sum %dy dims = array<i64: 0, 2, 3>
// CHECK-NOT:     graph.conv2d_backward
func.func @backward(%dy: tensor<1x6x2x3xf32>, %x: tensor<1x4x7x6xf32>, %w: tensor<6x2x3x2xf32>) -> (tensor<1x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) {
  %dx, %dw, %db = graph.conv2d_backward %dy, %x, %w stride array<i64: 3, 2> padding array<i64: 1, 0> dilation array<i64: 2, 1> groups 2 : tensor<1x6x2x3xf32>, tensor<1x4x7x6xf32>, tensor<6x2x3x2xf32> -> tensor<6xf32>
  func.return %dx, %dw, %db : tensor<1x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>
}
