// convert-graph-to-task's tilings for decoding at batch 1 (Inputs/decode.mlir):
// - a matmul whose right operand is a permute reads the permute's input in place
//   (graph.matmul_permuted tiles; no permute task copies the weight or the cache);
// - split-K: with one output tile and 8 workers, the 64-long contraction is cut into
//   4 slabs of 16 (split_k), partial products stacked along the rows of one buffer,
//   then a pointwise task sums them and adds the bias (the add, the product's only
//   reader, is computed in the sum's tasks: no task of its own);
// - an index_put is a tiled copy and one in-place task reading the buffer it writes;
// - a max along a 40-long row is cut into 5 chunks of 8 (elementwise_tile), then the
//   partial maxima are reduced (fill_workers).
// RUN: mncore-opt %S/Inputs/decode.mlir -p 'convert-graph-to-task{workers=8 matmul_tile=1,8 split_k=16 elementwise_tile=8}' -o %t.task.mlir
// RUN: filecheck %s --input-file %t.task.mlir
// RUN: mncore-opt %S/Inputs/decode.mlir -p 'convert-graph-to-task{workers=8 matmul_tile=1,8 split_k=16 elementwise_tile=8 permuted_reads=false split_k=0 fill_workers=false in_place_index_put=false}' | filecheck %s --check-prefix=OFF

// The same numbers as the graph level, in kernel order and in random event orders
// (integer inputs below 6: valid cache positions).
// RUN: mncore-run %S/Inputs/decode.mlir --random-inputs 3 --int-high 6 --save-outputs %t.graph.npz > /dev/null
// RUN: mncore-run %t.task.mlir --random-inputs 3 --int-high 6 --save-outputs %t.k.npz > /dev/null
// RUN: mncore-run %t.task.mlir --random-inputs 3 --int-high 6 --random-order 1 --save-outputs %t.r1.npz > /dev/null
// RUN: mncore-run %t.task.mlir --random-inputs 3 --int-high 6 --random-order 2 --save-outputs %t.r2.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a = np.load('%t.graph.npz'); print([all(np.allclose(a[k], np.load(f)[k], rtol=1e-5, atol=1e-5) for k in a) for f in ('%t.k.npz', '%t.r1.npz', '%t.r2.npz')])" | filecheck %s --check-prefix=SAME
// SAME: [True, True, True]

// The mncore level reads through transposes only (the weight's matmul_permuted tiles
// lower) and has no split reductions: refused, at the task, naming the option; with
// target=mncore the same step lowers and matches.
// RUN: not mncore-opt %t.task.mlir -p convert-task-to-mncore 2>&1 | filecheck %s --check-prefix=MNCORE
// MNCORE: task.mlir:{{[0-9]+}}:5: error: convert-task-to-mncore: graph.amax task reads a chunk [0:1, 0:8] of its reduced dimensions
// RUN: not mncore-opt %S/Inputs/decode.mlir -p 'convert-graph-to-task{workers=8 matmul_tile=1,8 split_k=0 fill_workers=false elementwise_tile=8 in_place_index_put=false},convert-task-to-mncore' 2>&1 | filecheck %s --check-prefix=MNCORE-PERM
// MNCORE-PERM: error: convert-task-to-mncore: graph.matmul_permuted reads its right operand through a transpose of the last two dimensions only, not [1, 2, 3, 0]
// RUN: not mncore-opt %S/Inputs/decode.mlir -p 'convert-graph-to-task{workers=8 matmul_tile=1,8 split_k=16 elementwise_tile=8 permuted_reads=false},convert-task-to-mncore' 2>&1 | filecheck %s --check-prefix=MNCORE-SPLIT
// RUN: mncore-opt %S/Inputs/decode.mlir -p 'convert-graph-to-task{workers=8 matmul_tile=1,8 split_k=16 elementwise_tile=8 target=mncore},convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 3 --int-high 6 --save-outputs %t.mn.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a, b = np.load('%t.graph.npz'), np.load('%t.mn.npz'); print(all(np.allclose(a[k], b[k], rtol=1e-5, atol=1e-5) for k in a))" | filecheck %s --check-prefix=MN-SAME
// MN-SAME: True
// MNCORE-SPLIT: graph.amax task reads a chunk [0:1, 0:8] of its reduced dimensions (a split reduction: convert-graph-to-task{target=mncore} makes whole ones)

// CHECK:      task.body @ew0([[P0:%\w+]]: tensor<f32>, [[P1:%\w+]]: tensor<f32>, [[P2:%\w+]]: tensor<f32>, [[P3:%\w+]]: tensor<f32>, [[B:%\w+]]: tensor<f32>) {
// CHECK-NEXT:   [[S1:%\w+]] = graph.add [[P0]], [[P1]]
// CHECK-NEXT:   [[S2:%\w+]] = graph.add [[S1]], [[P2]]
// CHECK-NEXT:   [[S3:%\w+]] = graph.add [[S2]], [[P3]]
// CHECK-NEXT:   [[Y:%\w+]] = graph.add [[S3]], [[B]]
// CHECK-NEXT:   task.yield [[Y]]
// CHECK:      task.body @matmul_permuted0({{%\w+}}: tensor<1x16xf32>, {{%\w+}}: tensor<8x16xf32>) {
// CHECK-NEXT:   graph.matmul_permuted {{.*}} rhs_perm = array<i64: 1, 0> : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
// CHECK:      task.body @matmul_permuted1({{%\w+}}: tensor<1x1x1x4xf32>, {{%\w+}}: tensor<6x1x1x4xf32>) {
// CHECK-NEXT:   graph.matmul_permuted {{.*}} rhs_perm = array<i64: 1, 2, 3, 0>
// CHECK:      [[YP:%mm_partial]] = task.buffer : memref<4x8xf32>
// CHECK:      [[MP:%m_partial]] = task.buffer : memref<1x5xf32>
// CHECK-NOT:  graph.permute
// CHECK:      task.task @matmul_permuted0 ins(%x[0:1, 0:16], %w[0:8, 0:16]) outs([[YP]][0:1, 0:8])
// CHECK-NEXT: task.task @matmul_permuted0 ins(%x[0:1, 16:32], %w[0:8, 16:32]) outs([[YP]][1:2, 0:8])
// CHECK-NEXT: task.task @matmul_permuted0 ins(%x[0:1, 32:48], %w[0:8, 32:48]) outs([[YP]][2:3, 0:8])
// CHECK-NEXT: task.task @matmul_permuted0 ins(%x[0:1, 48:64], %w[0:8, 48:64]) outs([[YP]][3:4, 0:8])
// CHECK-NEXT: task.task @ew0 ins([[YP]][0:1, 0:8], [[YP]][1:2, 0:8], [[YP]][2:3, 0:8], [[YP]][3:4, 0:8], %bias[0:8]) outs(%0[0:1, 0:8]) waits(
// CHECK-COUNT-6: task.task @ew1 ins(%cache
// CHECK-NEXT: task.task @index_put0 ins(%1[0:6, 0:1, 0:2, 0:4], %pos[0:1], %row[0:1, 0:1, 0:2, 0:4]) outs(%1[0:6, 0:1, 0:2, 0:4]) waits(
// CHECK-NEXT: task.task @matmul_permuted1 ins(%q[0:1, 0:1, 0:1, 0:4], %1[0:6, 0:1, 0:1, 0:4]) outs(%2[0:1, 0:1, 0:1, 0:6]) waits(
// CHECK-NEXT: task.task @matmul_permuted1 ins(%q[0:1, 1:2, 0:1, 0:4], %1[0:6, 0:1, 1:2, 0:4]) outs(%2[0:1, 1:2, 0:1, 0:6]) waits(
// CHECK-NEXT: task.task @amax0 ins(%logits[0:1, 0:8]) outs([[MP]][0:1, 0:1])
// CHECK-COUNT-3: task.task @amax0
// CHECK-NEXT: task.task @amax0 ins(%logits[0:1, 32:40]) outs([[MP]][0:1, 4:5])
// CHECK-NEXT: task.task @amax1 ins([[MP]][0:1, 0:5]) outs(%3[0:1, 0:1]) waits(

// Each tiling off: the permutes are copies, one matmul task, one index_put task over
// whole tensors, one max task.
// OFF-COUNT-2: graph.permute
// OFF:         task.task @matmul0 ins(%x[0:1, 0:64]
// OFF:         task.task @index_put0 ins(%cache[0:6, 0:1, 0:2, 0:4], %pos[0:1], %row[0:1, 0:1, 0:2, 0:4]) outs(%1[0:6, 0:1, 0:2, 0:4])
// OFF:         task.task @amax0 ins(%logits[0:1, 0:40]) outs(%3[0:1, 0:1])
