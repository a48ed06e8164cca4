// graph-decompose{lookups=true}: an embedding is a product of one-hot rows and the
// table; an accumulating index_put (an embedding's gradient) adds the product of the
// transposed one-hot rows and the values. A writing index_put stays.
// RUN: mncore-opt %s -p 'graph-decompose{lookups=true}' | filecheck %s
// Without the option the lookups stay:
// RUN: mncore-opt %s -p graph-decompose | filecheck %s --check-prefix=KEPT
// KEPT: graph.embedding
// KEPT: graph.index_put
// KEPT: graph.index_put
// The products compute what the lookups compute, on the interpreter and on the tiny
// MN-Core (repeated indices among the 6 random ones below 10):
// RUN: mncore-run %s --random-inputs 3 --int-high 10 --save-outputs %t.before.npz > /dev/null
// RUN: mncore-opt %s -p 'graph-decompose{lookups=true}' | mncore-run --random-inputs 3 --int-high 10 --save-outputs %t.after.npz > /dev/null
// RUN: mncore-opt %s --device mncore -o %t.mncore.mlir
// RUN: mncore-run %t.mncore.mlir --random-inputs 3 --int-high 10 --save-outputs %t.mncore.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a, b, c = (np.load(f) for f in ('%t.before.npz', '%t.after.npz', '%t.mncore.npz')); print(len(a), all(np.allclose(a[k], b[k], rtol=1e-5, atol=1e-5) and np.allclose(a[k], c[k], rtol=1e-4, atol=1e-4) for k in a))" | filecheck %s --check-prefix=SAME
// SAME: 3 True

// CHECK-LABEL: func.func @main
// CHECK:         %[[FLAT:.*]] = graph.reshape %i : tensor<2x3xi64> -> tensor<6x1xi64>
// CHECK-NEXT:    %[[ROWS:.*]] = graph.constant dense<{{\[\[}}0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]> : tensor<1x10xi64>
// CHECK-NEXT:    %[[HITS:.*]] = graph.eq %[[FLAT]], %[[ROWS]] : tensor<6x1xi64>, tensor<1x10xi64> -> tensor<6x10xi1>
// CHECK-NEXT:    %[[ONE_HOT:.*]] = graph.convert %[[HITS]] : tensor<6x10xi1> to tensor<6x10xf32>
// CHECK-NEXT:    %[[PICKED:.*]] = graph.matmul %[[ONE_HOT]], %w : tensor<6x10xf32>, tensor<10x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.reshape %[[PICKED]] : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK:         %[[WRAPPED:.*]] = graph.or
// CHECK-NEXT:    %[[T_HOT:.*]] = graph.convert %[[WRAPPED]] : tensor<10x6xi1> to tensor<10x6xf32>
// CHECK-NEXT:    %[[VALUES:.*]] = graph.reshape %v : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[SUMS:.*]] = graph.matmul %[[T_HOT]], %[[VALUES]] : tensor<10x6xf32>, tensor<6x4xf32> -> tensor<10x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.add %x, %[[SUMS]]
// CHECK:         graph.index_put %x[%i], %v :
func.func @main(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>, %x: tensor<10x4xf32>, %v: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>) {
  %e = graph.embedding %w[%i] : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %sum = graph.index_put %x[%i], %v accumulate = true : tensor<10x4xf32>, tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<10x4xf32>
  %last = graph.index_put %x[%i], %v : tensor<10x4xf32>, tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<10x4xf32>
  func.return %e, %sum, %last : tensor<2x3x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>
}
