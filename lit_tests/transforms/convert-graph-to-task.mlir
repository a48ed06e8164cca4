// convert-graph-to-task: each graph function becomes a task.kernel. Every op is cut
// into tiles of its output (elementwise ops, graph.fused and graph.expand by
// elementwise_tile elements, matmul by matmul_tile, row-wise ops and reductions by
// row_tile rows, permute by output tiles, the rest as one task over whole tensors);
// elementwise tasks name a pointwise task.body, the scalar computation with 0-d
// constants inlined; other tasks a tile body, the op on their regions' types, shared by
// the tiles whose regions have the same shapes (a ragged edge tile gets its own). A task waits on the events of the earlier tasks whose regions overlap its
// own (read after write; with a reused buffer also write after read and write after
// write), after transitive reduction; producers with the same consumers share one
// event, whose trigger count is the number of its signallers. Small tiles keep every
// kernel short enough to check whole.
// RUN: mncore-opt %s -p 'convert-graph-to-task{workers=4 matmul_tile=2,3 elementwise_tile=6 row_tile=2 fill_workers=false}' | filecheck %s
// The output parses and verifies again, in the custom and the generic form.
// RUN: mncore-opt %s -p 'convert-graph-to-task{workers=4 matmul_tile=2,3 elementwise_tile=6 row_tile=2 fill_workers=false}' | mncore-opt | filecheck %s
// RUN: mncore-opt %s -p 'convert-graph-to-task{workers=4 matmul_tile=2,3 elementwise_tile=6 row_tile=2 fill_workers=false}' --print-op-generic | mncore-opt | filecheck %s
// Without buffer reuse every intermediate gets its own buffer.
// RUN: mncore-opt %s -p 'convert-graph-to-task{workers=4 matmul_tile=2,3 elementwise_tile=6 row_tile=2 fill_workers=false reuse_buffers=false}' | filecheck %s --check-prefix=NOREUSE
// The kernel with a reused buffer computes what the function computes, in program
// order and in random topological orders of its events (the megakernel simulator).
// RUN: mncore-opt %s -p 'convert-graph-to-task{workers=4 matmul_tile=2,3 elementwise_tile=6 row_tile=2 fill_workers=false}' -o %t.task.mlir
// RUN: mncore-run %s --function reuse --random-inputs 1 > %t.reuse
// RUN: mncore-run %t.task.mlir --function reuse --random-inputs 1 | diff - %t.reuse
// RUN: mncore-run %t.task.mlir --function reuse --random-inputs 1 --random-order 1 | diff - %t.reuse
// RUN: mncore-run %t.task.mlir --function reuse --random-inputs 1 --random-order 2 | diff - %t.reuse
// RUN: mncore-run %t.task.mlir --function reuse --random-inputs 1 --random-order 3 | diff - %t.reuse
// Collectives become collective tasks: an all-reduce in the matmul's tiles, each waiting
// only for the matmul tile it reads; an all-gather and a reduce-scatter in column bands
// of all rows. A target without collective tasks refuses them at the op.
// RUN: mncore-opt %S/Inputs/collectives.mlir -p 'convert-graph-to-task{matmul_tile=2,3 elementwise_tile=12}' | filecheck %s --check-prefix=COLL
// COLL:      task.body @all_reduce0(%{{\w+}}: tensor<2x3xf32>) {
// COLL-NEXT:   %{{\w+}} = graph.all_reduce %{{\w+}} "sum" group "tp" size 2 : tensor<2x3xf32> -> tensor<2x3xf32>
// COLL:      task.body @all_gather0(%{{\w+}}: tensor<4x1xf32>) {
// COLL-NEXT:   %{{\w+}} = graph.all_gather %{{\w+}} group "tp" size 2 : tensor<4x1xf32> -> tensor<8x1xf32>
// COLL:      task.task @matmul0 ins(%a[0:2, 0:2], %b[0:2, 0:3]) outs(%mm[0:2, 0:3]) signal([[E0:%\w+]])
// COLL:      task.task @all_reduce0 ins(%mm[0:2, 0:3]) outs([[SUM:%\w+]][0:2, 0:3]) waits([[E0]])
// COLL:      task.task @all_gather0 ins([[SUM]][0:4, 0:1]) outs(%{{\w+}}[0:8, 0:1])
// COLL:      task.task @reduce_scatter0 ins([[SUM]][0:4, 0:3]) outs(%{{\w+}}[0:2, 0:3])
// On two simulated ranks (mncore-run --ranks), the kernel computes what the function
// does, in the kernel's order and in a random one; one rank alone is refused.
// RUN: mncore-run %S/Inputs/collectives.mlir --ranks 2 --random-inputs 1 > %t.coll
// RUN: mncore-opt %S/Inputs/collectives.mlir -p 'convert-graph-to-task{matmul_tile=2,3}' -o %t.coll.task.mlir
// RUN: mncore-run %t.coll.task.mlir --ranks 2 --random-inputs 1 | diff - %t.coll
// RUN: mncore-run %t.coll.task.mlir --ranks 2 --random-inputs 1 --random-order 1 | diff - %t.coll
// RUN: filecheck %s --check-prefix=RANKS < %t.coll
// RANKS: rank0 result0 = tensor<4x6xf32>:
// RANKS: rank1 result2 = tensor<2x6xf32>:
// RUN: not mncore-run %t.coll.task.mlir --random-inputs 1 2>&1 | filecheck %s --check-prefix=ONE-RANK
// ONE-RANK: mncore-run: {{.*}}.coll.task.mlir:29:5: error: task 4 (all_reduce): graph.all_reduce is for a group of 2 ranks, run on 1
// RUN: not mncore-opt %S/Inputs/collectives.mlir -p 'convert-graph-to-task{collectives=false}' 2>&1 | filecheck %s --check-prefix=NOCOLL
// NOCOLL: collectives.mlir:4:3: error: graph.all_reduce: this target has no collective tasks (convert-graph-to-task{collectives=false})
// Bad options.
// RUN: not mncore-opt %s -p 'convert-graph-to-task{matmul_tile=2}' 2>&1 | filecheck %s --check-prefix=MATMUL-TILE
// MATMUL-TILE: mncore-opt: error: convert-graph-to-task: matmul_tile needs two sizes >= 1
// RUN: not mncore-opt %s -p 'convert-graph-to-task{row_tile=0}' 2>&1 | filecheck %s --check-prefix=ROW-TILE
// ROW-TILE: mncore-opt: error: convert-graph-to-task: workers, tile sizes and max_tasks must be >= 1
// RUN: not mncore-opt %s -p 'convert-graph-to-task{max_tasks=0}' 2>&1 | filecheck %s --check-prefix=MAX-TASKS
// MAX-TASKS: mncore-opt: error: convert-graph-to-task: workers, tile sizes and max_tasks must be >= 1
// RUN: not mncore-opt %s -p 'convert-graph-to-task{split_k=-1}' 2>&1 | filecheck %s --check-prefix=SPLIT-K
// SPLIT-K: mncore-opt: error: convert-graph-to-task: split_k must be >= 0 (0: never split)
// bf16 and f16 stay at the graph level: refused at the first op that holds one.
// RUN: not mncore-opt %S/Inputs/bf16_graph.mlir -p convert-graph-to-task 2>&1 | filecheck %s --check-prefix=NARROW
// NARROW: bf16_graph.mlir:2:3: error: graph.convert: element type bf16 is not supported at the task level

// Elementwise ops on 2x9: tiles of 1x6 and 1x3 (at most 6 elements, filled from the
// innermost dimension). Each input is read over the tile's broadcast image: %p whole
// tiles, %r (lower rank) their columns, %c (2x1) their row and column 0, %b (1x9) row
// 0 and their columns. The 0-d constant is inlined into graph.mul's body, not a
// buffer. Each tile waits on the one tile that wrote its region, so every event has
// one signaller. %a is returned: it is written straight into the output.
func.func @elementwise(%p: tensor<2x9xi1>, %r: tensor<9xf32>, %c: tensor<2x1xf32>, %b: tensor<1x9xf32>) -> tensor<2x9xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %w = graph.where %p, %r, %c : tensor<2x9xi1>, tensor<9xf32>, tensor<2x1xf32> -> tensor<2x9xf32>
  %m = graph.mul %w, %two : tensor<2x9xf32>, tensor<f32> -> tensor<2x9xf32>
  %a = graph.add %b, %m : tensor<1x9xf32>, tensor<2x9xf32> -> tensor<2x9xf32>
  func.return %a : tensor<2x9xf32>
}

// CHECK-LABEL: task.kernel @elementwise(
// CHECK-SAME:  [[P:%\w+]]: memref<2x9xi1>, [[R:%\w+]]: memref<9xf32>, [[C:%\w+]]: memref<2x1xf32>, [[B:%\w+]]: memref<1x9xf32>) -> ([[OUT:%\w+]]: memref<2x9xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<i1>, [[ARG1:%\w+]]: tensor<f32>, [[ARG2:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.where [[ARG0]], [[ARG1]], [[ARG2]] : tensor<i1>, tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[V2:%\w+]] = graph.mul [[ARG0]], [[V1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V2]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew2([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[W:%\w+]] = task.buffer : memref<2x9xf32>{{$}}
// CHECK-NEXT:  [[M:%\w+]] = task.buffer : memref<2x9xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E3:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E4:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E5:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E6:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E7:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E8:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[P]][0:1, 0:6], [[R]][0:6], [[C]][0:1, 0:1]) outs([[W]][0:1, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[P]][0:1, 6:9], [[R]][6:9], [[C]][0:1, 0:1]) outs([[W]][0:1, 6:9]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[P]][1:2, 0:6], [[R]][0:6], [[C]][1:2, 0:1]) outs([[W]][1:2, 0:6]) signal([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[P]][1:2, 6:9], [[R]][6:9], [[C]][1:2, 0:1]) outs([[W]][1:2, 6:9]) signal([[E4]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[W]][0:1, 0:6]) outs([[M]][0:1, 0:6]) waits([[E1]]) signal([[E5]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[W]][0:1, 6:9]) outs([[M]][0:1, 6:9]) waits([[E2]]) signal([[E6]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[W]][1:2, 0:6]) outs([[M]][1:2, 0:6]) waits([[E3]]) signal([[E7]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[W]][1:2, 6:9]) outs([[M]][1:2, 6:9]) waits([[E4]]) signal([[E8]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[B]][0:1, 0:6], [[M]][0:1, 0:6]) outs([[OUT]][0:1, 0:6]) waits([[E5]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[B]][0:1, 6:9], [[M]][0:1, 6:9]) outs([[OUT]][0:1, 6:9]) waits([[E6]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[B]][0:1, 0:6], [[M]][1:2, 0:6]) outs([[OUT]][1:2, 0:6]) waits([[E7]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[B]][0:1, 6:9], [[M]][1:2, 6:9]) outs([[OUT]][1:2, 6:9]) waits([[E8]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// graph.expand is a copy body over the broadcast image of each tile.
func.func @expand(%v: tensor<3x1xf32>) -> tensor<2x3x2xf32> {
  %e = graph.expand %v : tensor<3x1xf32> -> tensor<2x3x2xf32>
  func.return %e : tensor<2x3x2xf32>
}

// CHECK-LABEL: task.kernel @expand(
// CHECK-SAME:  [[V:%\w+]]: memref<3x1xf32>) -> ([[OUT:%\w+]]: memref<2x3x2xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[ARG0]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.task @ew0 ins([[V]][0:3, 0:1]) outs([[OUT]][0:1, 0:3, 0:2]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[V]][0:3, 0:1]) outs([[OUT]][1:2, 0:3, 0:2]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// graph.fused: one body with the fused ops (its 0-d constant inlined) yielding both
// results, one task per row writing both outputs; an i1 result.
func.func @fused(%x: tensor<2x6xf32>, %r: tensor<6xf32>) -> (tensor<2x6xf32>, tensor<2x6xi1>) {
  %out, %mask = graph.fused %x, %r : (tensor<2x6xf32>, tensor<6xf32>) -> (tensor<2x6xf32>, tensor<2x6xi1>) {
  ^bb0(%a: tensor<2x6xf32>, %b: tensor<6xf32>):
    %zero = graph.constant dense<0.0> : tensor<f32>
    %sum = graph.add %a, %b : tensor<2x6xf32>, tensor<6xf32> -> tensor<2x6xf32>
    %relu = graph.relu %sum : tensor<2x6xf32>
    %pos = graph.gt %relu, %zero : tensor<2x6xf32>, tensor<f32> -> tensor<2x6xi1>
    graph.yield %relu, %pos : tensor<2x6xf32>, tensor<2x6xi1>
  }
  func.return %out, %mask : tensor<2x6xf32>, tensor<2x6xi1>
}

// CHECK-LABEL: task.kernel @fused(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>, [[R:%\w+]]: memref<6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>, [[OUT1:%\w+]]: memref<2x6xi1>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[V2:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  [[V3:%\w+]] = graph.relu [[V2]] : tensor<f32>
// CHECK-NEXT:  [[V4:%\w+]] = graph.gt [[V3]], [[V1]] : tensor<f32>, tensor<f32> -> tensor<i1>
// CHECK-NEXT:  task.yield [[V3]], [[V4]] : tensor<f32>, tensor<i1>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6], [[R]][0:6]) outs([[OUT]][0:1, 0:6], [[OUT1]][0:1, 0:6]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6], [[R]][0:6]) outs([[OUT]][1:2, 0:6], [[OUT1]][1:2, 0:6]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Matmul output tiles of 2x3 read a row band of the left and a column band of the
// right operand. The bias add reads whole rows: the two tiles of a row band have the
// same consumers (rows 0 and 1, or rows 2 and 3), so they share one event of 2
// triggers, and each consumer waits on one event.
func.func @matmul(%a: tensor<4x5xf32>, %w: tensor<5x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32> {
  %mm = graph.matmul %a, %w : tensor<4x5xf32>, tensor<5x6xf32> -> tensor<4x6xf32>
  %y = graph.add %mm, %bias : tensor<4x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// CHECK-LABEL: task.kernel @matmul(
// CHECK-SAME:  [[A:%\w+]]: memref<4x5xf32>, [[W:%\w+]]: memref<5x6xf32>, [[BIAS:%\w+]]: memref<6xf32>) -> ([[OUT:%\w+]]: memref<4x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @matmul0([[ARG0:%\w+]]: tensor<2x5xf32>, [[ARG1:%\w+]]: tensor<5x3xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.matmul [[ARG0]], [[ARG1]] : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<2x3xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[MM:%\w+]] = task.buffer : memref<4x6xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 2{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 2{{$}}
// CHECK-NEXT:  task.task @matmul0 ins([[A]][0:2, 0:5], [[W]][0:5, 0:3]) outs([[MM]][0:2, 0:3]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @matmul0 ins([[A]][0:2, 0:5], [[W]][0:5, 3:6]) outs([[MM]][0:2, 3:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @matmul0 ins([[A]][2:4, 0:5], [[W]][0:5, 0:3]) outs([[MM]][2:4, 0:3]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @matmul0 ins([[A]][2:4, 0:5], [[W]][0:5, 3:6]) outs([[MM]][2:4, 3:6]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[MM]][0:1, 0:6], [[BIAS]][0:6]) outs([[OUT]][0:1, 0:6]) waits([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[MM]][1:2, 0:6], [[BIAS]][0:6]) outs([[OUT]][1:2, 0:6]) waits([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[MM]][2:3, 0:6], [[BIAS]][0:6]) outs([[OUT]][2:3, 0:6]) waits([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[MM]][3:4, 0:6], [[BIAS]][0:6]) outs([[OUT]][3:4, 0:6]) waits([[E2]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Row-wise ops: 2 rows per task with the normalised dimension whole; layer_norm's
// mean and rstd get the tile's rows and size 1 in the normalised dimension; over dim 0
// a "row" is a column band. Properties become task attributes.
func.func @rows(%x: tensor<4x6xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x6xf32>) {
  %sm = graph.softmax %x dim -1 : tensor<4x6xf32>
  %y, %mean, %rstd = graph.layer_norm %sm, %w, %b dims 1 eps 1.0e-05 : tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  %cols = graph.log_softmax %x dim 0 : tensor<4x6xf32>
  func.return %y, %mean, %rstd, %cols : tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x6xf32>
}

// CHECK-LABEL: task.kernel @rows(
// CHECK-SAME:  [[X:%\w+]]: memref<4x6xf32>, [[W:%\w+]]: memref<6xf32>, [[B:%\w+]]: memref<6xf32>) -> ([[OUT:%\w+]]: memref<4x6xf32>, [[OUT1:%\w+]]: memref<4x1xf32>, [[OUT2:%\w+]]: memref<4x1xf32>, [[OUT3:%\w+]]: memref<4x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @softmax0([[ARG0:%\w+]]: tensor<2x6xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.softmax [[ARG0]] dim -1 : tensor<2x6xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<2x6xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @layer_norm0([[ARG0:%\w+]]: tensor<2x6xf32>, [[ARG1:%\w+]]: tensor<6xf32>, [[ARG2:%\w+]]: tensor<6xf32>) {
// CHECK-NEXT:  [[V1:%\w+]], [[V2:%\w+]], [[V3:%\w+]] = graph.layer_norm [[ARG0]], [[ARG1]], [[ARG2]] dims 1 eps 1.000000e-05 : tensor<2x6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<2x6xf32>, tensor<2x1xf32>, tensor<2x1xf32>
// CHECK-NEXT:  task.yield [[V1]], [[V2]], [[V3]] : tensor<2x6xf32>, tensor<2x1xf32>, tensor<2x1xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @log_softmax0([[ARG0:%\w+]]: tensor<4x2xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.log_softmax [[ARG0]] dim 0 : tensor<4x2xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<4x2xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[SM:%\w+]] = task.buffer : memref<4x6xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @softmax0 ins([[X]][0:2, 0:6]) outs([[SM]][0:2, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @softmax0 ins([[X]][2:4, 0:6]) outs([[SM]][2:4, 0:6]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @layer_norm0 ins([[SM]][0:2, 0:6], [[W]][0:6], [[B]][0:6]) outs([[OUT]][0:2, 0:6], [[OUT1]][0:2, 0:1], [[OUT2]][0:2, 0:1]) waits([[E1]]){{$}}
// CHECK-NEXT:  task.task @layer_norm0 ins([[SM]][2:4, 0:6], [[W]][0:6], [[B]][0:6]) outs([[OUT]][2:4, 0:6], [[OUT1]][2:4, 0:1], [[OUT2]][2:4, 0:1]) waits([[E2]]){{$}}
// CHECK-NEXT:  task.task @log_softmax0 ins([[X]][0:4, 0:2]) outs([[OUT3]][0:4, 0:2]){{$}}
// CHECK-NEXT:  task.task @log_softmax0 ins([[X]][0:4, 2:4]) outs([[OUT3]][0:4, 2:4]){{$}}
// CHECK-NEXT:  task.task @log_softmax0 ins([[X]][0:4, 4:6]) outs([[OUT3]][0:4, 4:6]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Reductions: the reduced dimensions whole; keepdim with several dims (size 1 in the
// output), a negative dim without keepdim, a full reduction to 0-d (region []).
func.func @reduce(%x: tensor<2x4x3xf32>) -> (tensor<1x4x1xf32>, tensor<2x4xf32>, tensor<f32>) {
  %s = graph.sum %x dims = array<i64: 0, 2> keepdim = true : tensor<2x4x3xf32> -> tensor<1x4x1xf32>
  %m = graph.amax %x dims = array<i64: -1> : tensor<2x4x3xf32> -> tensor<2x4xf32>
  %t = graph.mean %x dims = array<i64: 0, 1, 2> : tensor<2x4x3xf32> -> tensor<f32>
  func.return %s, %m, %t : tensor<1x4x1xf32>, tensor<2x4xf32>, tensor<f32>
}

// CHECK-LABEL: task.kernel @reduce(
// CHECK-SAME:  [[X:%\w+]]: memref<2x4x3xf32>) -> ([[OUT:%\w+]]: memref<1x4x1xf32>, [[OUT1:%\w+]]: memref<2x4xf32>, [[OUT2:%\w+]]: memref<f32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @sum0([[ARG0:%\w+]]: tensor<2x2x3xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.sum [[ARG0]] dims = array<i64: 0, 2> keepdim = true : tensor<2x2x3xf32> -> tensor<1x2x1xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<1x2x1xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @amax0([[ARG0:%\w+]]: tensor<1x2x3xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.amax [[ARG0]] dims = array<i64: -1> : tensor<1x2x3xf32> -> tensor<1x2xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<1x2xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @mean0([[ARG0:%\w+]]: tensor<2x4x3xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.mean [[ARG0]] dims = array<i64: 0, 1, 2> : tensor<2x4x3xf32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.task @sum0 ins([[X]][0:2, 0:2, 0:3]) outs([[OUT]][0:1, 0:2, 0:1]){{$}}
// CHECK-NEXT:  task.task @sum0 ins([[X]][0:2, 2:4, 0:3]) outs([[OUT]][0:1, 2:4, 0:1]){{$}}
// CHECK-NEXT:  task.task @amax0 ins([[X]][0:1, 0:2, 0:3]) outs([[OUT1]][0:1, 0:2]){{$}}
// CHECK-NEXT:  task.task @amax0 ins([[X]][0:1, 2:4, 0:3]) outs([[OUT1]][0:1, 2:4]){{$}}
// CHECK-NEXT:  task.task @amax0 ins([[X]][1:2, 0:2, 0:3]) outs([[OUT1]][1:2, 0:2]){{$}}
// CHECK-NEXT:  task.task @amax0 ins([[X]][1:2, 2:4, 0:3]) outs([[OUT1]][1:2, 2:4]){{$}}
// CHECK-NEXT:  task.task @mean0 ins([[X]][0:2, 0:4, 0:3]) outs([[OUT2]][]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// permute: tiles of the output; each reads the input region its perm maps back to.
func.func @permute(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %p = graph.permute %x perm = array<i64: 2, 0, 1> : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  func.return %p : tensor<4x2x3xf32>
}

// CHECK-LABEL: task.kernel @permute(
// CHECK-SAME:  [[X:%\w+]]: memref<2x3x4xf32>) -> ([[OUT:%\w+]]: memref<4x2x3xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @permute0([[ARG0:%\w+]]: tensor<2x3x1xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.permute [[ARG0]] perm = array<i64: 2, 0, 1> : tensor<2x3x1xf32> -> tensor<1x2x3xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<1x2x3xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.task @permute0 ins([[X]][0:2, 0:3, 0:1]) outs([[OUT]][0:1, 0:2, 0:3]){{$}}
// CHECK-NEXT:  task.task @permute0 ins([[X]][0:2, 0:3, 1:2]) outs([[OUT]][1:2, 0:2, 0:3]){{$}}
// CHECK-NEXT:  task.task @permute0 ins([[X]][0:2, 0:3, 2:3]) outs([[OUT]][2:3, 0:2, 0:3]){{$}}
// CHECK-NEXT:  task.task @permute0 ins([[X]][0:2, 0:3, 3:4]) outs([[OUT]][3:4, 0:2, 0:3]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// A concat becomes copies of each input's tiles into its slab of the output (sharing
// one identity body). A reshape is cut into bands of output rows that are whole input
// rows (here 2 output rows of 4 = 1 input row of 8); each band waits on the copies of
// its row and on the copy of %y.
func.func @fallback(%x: tensor<2x6xf32>, %y: tensor<2x2xf32>) -> tensor<4x4xf32> {
  %n = graph.neg %x : tensor<2x6xf32>
  %c = graph.concat %n, %y dim 1 : tensor<2x6xf32>, tensor<2x2xf32> -> tensor<2x8xf32>
  %r = graph.reshape %c : tensor<2x8xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// CHECK-LABEL: task.kernel @fallback(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>, [[Y:%\w+]]: memref<2x2xf32>) -> ([[OUT:%\w+]]: memref<4x4xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[ARG0]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @reshape0([[ARG0:%\w+]]: tensor<1x8xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.reshape [[ARG0]] : tensor<1x8xf32> -> tensor<2x4xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<2x4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[N:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// CHECK-NEXT:  [[C:%\w+]] = task.buffer : memref<2x8xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E3:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E4:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E5:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[N]][0:1, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[N]][1:2, 0:6]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[N]][0:1, 0:6]) outs([[C]][0:1, 0:6]) waits([[E1]]) signal([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[N]][1:2, 0:6]) outs([[C]][1:2, 0:6]) waits([[E2]]) signal([[E4]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[Y]][0:2, 0:2]) outs([[C]][0:2, 6:8]) signal([[E5]]){{$}}
// CHECK-NEXT:  task.task @reshape0 ins([[C]][0:1, 0:8]) outs([[OUT]][0:2, 0:4]) waits([[E3]], [[E5]]){{$}}
// CHECK-NEXT:  task.task @reshape0 ins([[C]][1:2, 0:8]) outs([[OUT]][2:4, 0:4]) waits([[E4]], [[E5]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// A returned argument is copied into its output by copy tasks (at the end).
func.func @return_arg(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>) {
  %n = graph.neg %x : tensor<2x6xf32>
  func.return %x, %n : tensor<2x6xf32>, tensor<2x6xf32>
}

// CHECK-LABEL: task.kernel @return_arg(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>, [[OUT1:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[ARG0]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[OUT1]][0:1, 0:6]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[OUT1]][1:2, 0:6]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[X]][0:1, 0:6]) outs([[OUT]][0:1, 0:6]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[X]][1:2, 0:6]) outs([[OUT]][1:2, 0:6]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// A value returned twice is written into the first output and copied into the second,
// tile by tile after the tile that wrote it.
func.func @return_twice(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>) {
  %e = graph.exp %x : tensor<2x6xf32>
  func.return %e, %e : tensor<2x6xf32>, tensor<2x6xf32>
}

// CHECK-LABEL: task.kernel @return_twice(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>, [[OUT1:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[ARG0]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[OUT]][0:1, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[OUT]][1:2, 0:6]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[OUT]][0:1, 0:6]) outs([[OUT1]][0:1, 0:6]) waits([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[OUT]][1:2, 0:6]) outs([[OUT1]][1:2, 0:6]) waits([[E2]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// A non-0-d constant becomes a task.constant buffer; returned, it is copied.
func.func @constants(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a = graph.add %x, %w : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %w : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: task.kernel @constants(
// CHECK-SAME:  [[X:%\w+]]: memref<2x3xf32>) -> ([[OUT:%\w+]]: memref<2x3xf32>, [[OUT1:%\w+]]: memref<2x3xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[ARG0]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[W:%\w+]] = task.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:2, 0:3], [[W]][0:2, 0:3]) outs([[OUT]][0:2, 0:3]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[W]][0:2, 0:3]) outs([[OUT1]][0:2, 0:3]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// A 0-d constant is inlined into the bodies that use it; returned, it also becomes a
// 0-d task.constant, copied into the output.
func.func @scalar_constant(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %m = graph.mul %x, %two : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  func.return %m, %two : tensor<3xf32>, tensor<f32>
}

// CHECK-LABEL: task.kernel @scalar_constant(
// CHECK-SAME:  [[X:%\w+]]: memref<3xf32>) -> ([[OUT:%\w+]]: memref<3xf32>, [[OUT1:%\w+]]: memref<f32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[V2:%\w+]] = graph.mul [[ARG0]], [[V1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V2]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[ARG0]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[TWO:%\w+]] = task.constant dense<2.000000e+00> : tensor<f32>{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:3]) outs([[OUT]][0:3]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[TWO]][]) outs([[OUT1]][]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Buffer reuse: %a is dead after the sum, so %b (the same type) is written into %a's
// buffer. Each tile of %b must wait for the sum, which reads %a (write after read),
// although %b itself reads only %x; its writes after the exp tiles (write after write)
// follow from that. The sum waits on both exp tiles through one event; the add waits
// only on its %b tile, as the sum is already before it.
func.func @reuse(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %a = graph.exp %x : tensor<2x6xf32>
  %s = graph.sum %a dims = array<i64: 1> keepdim = true : tensor<2x6xf32> -> tensor<2x1xf32>
  %b = graph.neg %x : tensor<2x6xf32>
  %y = graph.add %b, %s : tensor<2x6xf32>, tensor<2x1xf32> -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// CHECK-LABEL: task.kernel @reuse(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew2([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @sum0([[ARG0:%\w+]]: tensor<2x6xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.sum [[ARG0]] dims = array<i64: 1> keepdim = true : tensor<2x6xf32> -> tensor<2x1xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<2x1xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[A:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// CHECK-NEXT:  [[S:%\w+]] = task.buffer : memref<2x1xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 2{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E3:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E4:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[A]][0:1, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[A]][1:2, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @sum0 ins([[A]][0:2, 0:6]) outs([[S]][0:2, 0:1]) waits([[E1]]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[X]][0:1, 0:6]) outs([[A]][0:1, 0:6]) waits([[E2]]) signal([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[X]][1:2, 0:6]) outs([[A]][1:2, 0:6]) waits([[E2]]) signal([[E4]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[A]][0:1, 0:6], [[S]][0:1, 0:1]) outs([[OUT]][0:1, 0:6]) waits([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[A]][1:2, 0:6], [[S]][1:2, 0:1]) outs([[OUT]][1:2, 0:6]) waits([[E4]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Without reuse %b has its own buffer: its tiles wait on nothing, and each add tile
// waits on its %b tile and the sum.
// NOREUSE-LABEL: task.kernel @reuse(
// NOREUSE-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// NOREUSE-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<f32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<f32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  task.body @ew2([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<f32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  task.body @sum0([[ARG0:%\w+]]: tensor<2x6xf32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.sum [[ARG0]] dims = array<i64: 1> keepdim = true : tensor<2x6xf32> -> tensor<2x1xf32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<2x1xf32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  [[A:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// NOREUSE-NEXT:  [[S:%\w+]] = task.buffer : memref<2x1xf32>{{$}}
// NOREUSE-NEXT:  [[B:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// NOREUSE-NEXT:  [[E1:%\w+]] = task.event triggers 2{{$}}
// NOREUSE-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// NOREUSE-NEXT:  [[E3:%\w+]] = task.event triggers 1{{$}}
// NOREUSE-NEXT:  [[E4:%\w+]] = task.event triggers 1{{$}}
// NOREUSE-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[A]][0:1, 0:6]) signal([[E1]]){{$}}
// NOREUSE-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[A]][1:2, 0:6]) signal([[E1]]){{$}}
// NOREUSE-NEXT:  task.task @sum0 ins([[A]][0:2, 0:6]) outs([[S]][0:2, 0:1]) waits([[E1]]) signal([[E2]]){{$}}
// NOREUSE-NEXT:  task.task @ew1 ins([[X]][0:1, 0:6]) outs([[B]][0:1, 0:6]) signal([[E3]]){{$}}
// NOREUSE-NEXT:  task.task @ew1 ins([[X]][1:2, 0:6]) outs([[B]][1:2, 0:6]) signal([[E4]]){{$}}
// NOREUSE-NEXT:  task.task @ew2 ins([[B]][0:1, 0:6], [[S]][0:1, 0:1]) outs([[OUT]][0:1, 0:6]) waits([[E2]], [[E3]]){{$}}
// NOREUSE-NEXT:  task.task @ew2 ins([[B]][1:2, 0:6], [[S]][1:2, 0:1]) outs([[OUT]][1:2, 0:6]) waits([[E2]], [[E4]]){{$}}
// NOREUSE-NEXT:  task.return
// NOREUSE-NEXT:  }

// An unused value's buffer is free right after its op: %e reuses it and each of its
// tiles waits on the tile of %d it overwrites (write after write).
func.func @dead(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %d = graph.exp %x : tensor<2x6xf32>
  %e = graph.neg %x : tensor<2x6xf32>
  %f = graph.relu %e : tensor<2x6xf32>
  func.return %f : tensor<2x6xf32>
}

// CHECK-LABEL: task.kernel @dead(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew2([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.relu [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[D:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E3:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E4:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[D]][0:1, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[D]][1:2, 0:6]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[X]][0:1, 0:6]) outs([[D]][0:1, 0:6]) waits([[E1]]) signal([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[X]][1:2, 0:6]) outs([[D]][1:2, 0:6]) waits([[E2]]) signal([[E4]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[D]][0:1, 0:6]) outs([[OUT]][0:1, 0:6]) waits([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[D]][1:2, 0:6]) outs([[OUT]][1:2, 0:6]) waits([[E4]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Without reuse %e gets its own buffer and waits on nothing.
// NOREUSE-LABEL: task.kernel @dead(
// NOREUSE-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// NOREUSE-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<f32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<f32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  task.body @ew2([[ARG0:%\w+]]: tensor<f32>) {
// NOREUSE-NEXT:  [[V1:%\w+]] = graph.relu [[ARG0]] : tensor<f32>
// NOREUSE-NEXT:  task.yield [[V1]] : tensor<f32>
// NOREUSE-NEXT:  }
// NOREUSE-NEXT:  [[D:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// NOREUSE-NEXT:  [[E:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// NOREUSE-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// NOREUSE-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// NOREUSE-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[D]][0:1, 0:6]){{$}}
// NOREUSE-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[D]][1:2, 0:6]){{$}}
// NOREUSE-NEXT:  task.task @ew1 ins([[X]][0:1, 0:6]) outs([[E]][0:1, 0:6]) signal([[E1]]){{$}}
// NOREUSE-NEXT:  task.task @ew1 ins([[X]][1:2, 0:6]) outs([[E]][1:2, 0:6]) signal([[E2]]){{$}}
// NOREUSE-NEXT:  task.task @ew2 ins([[E]][0:1, 0:6]) outs([[OUT]][0:1, 0:6]) waits([[E1]]){{$}}
// NOREUSE-NEXT:  task.task @ew2 ins([[E]][1:2, 0:6]) outs([[OUT]][1:2, 0:6]) waits([[E2]]){{$}}
// NOREUSE-NEXT:  task.return
// NOREUSE-NEXT:  }

// Transitive reduction: each add tile reads %a and %b, but the neg tile it waits on
// already waits on the exp tile, so it waits only on the neg tile's event.
func.func @transitive(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %a = graph.exp %x : tensor<2x6xf32>
  %b = graph.neg %a : tensor<2x6xf32>
  %c = graph.add %a, %b : tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// CHECK-LABEL: task.kernel @transitive(
// CHECK-SAME:  [[X:%\w+]]: memref<2x6xf32>) -> ([[OUT:%\w+]]: memref<2x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew1([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.neg [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @ew2([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[A:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// CHECK-NEXT:  [[B:%\w+]] = task.buffer : memref<2x6xf32>{{$}}
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E3:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  [[E4:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:1, 0:6]) outs([[A]][0:1, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][1:2, 0:6]) outs([[A]][1:2, 0:6]) signal([[E2]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[A]][0:1, 0:6]) outs([[B]][0:1, 0:6]) waits([[E1]]) signal([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew1 ins([[A]][1:2, 0:6]) outs([[B]][1:2, 0:6]) waits([[E2]]) signal([[E4]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[A]][0:1, 0:6], [[B]][0:1, 0:6]) outs([[OUT]][0:1, 0:6]) waits([[E3]]){{$}}
// CHECK-NEXT:  task.task @ew2 ins([[A]][1:2, 0:6], [[B]][1:2, 0:6]) outs([[OUT]][1:2, 0:6]) waits([[E4]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// Operators with the same scalar computation share one task.body.
func.func @shared_body(%x: tensor<6xf32>) -> tensor<6xf32> {
  %a = graph.exp %x : tensor<6xf32>
  %b = graph.exp %a : tensor<6xf32>
  func.return %b : tensor<6xf32>
}

// CHECK-LABEL: task.kernel @shared_body(
// CHECK-SAME:  [[X:%\w+]]: memref<6xf32>) -> ([[OUT:%\w+]]: memref<6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.exp [[ARG0]] : tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[A:%\w+]] = task.buffer : memref<6xf32>{{$}}
// CHECK-NEXT:  [[E:%\w+]] = task.event triggers 1{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:6]) outs([[A]][0:6]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task @ew0 ins([[A]][0:6]) outs([[OUT]][0:6]) waits([[E]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// A constant with a shape inside a fused body is read from a task.constant buffer
// (broadcast over the rows) instead of being copied into the scalar body.
func.func @fused_table(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %out = graph.fused %x : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %w = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %sum = graph.add %a, %w : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    graph.yield %sum : tensor<2x3xf32>
  }
  func.return %out : tensor<2x3xf32>
}

// CHECK-LABEL: task.kernel @fused_table(
// CHECK-SAME:  [[X:%\w+]]: memref<2x3xf32>) -> ([[OUT:%\w+]]: memref<2x3xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @ew0([[ARG0:%\w+]]: tensor<f32>, [[ARG1:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.add [[ARG0]], [[ARG1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[W:%\w+]] = task.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>{{$}}
// CHECK-NEXT:  task.task @ew0 ins([[X]][0:2, 0:3], [[W]][0:3]) outs([[OUT]][0:2, 0:3]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }
// RUN: mncore-run %s --function fused_table --random-inputs 2 > %t.table
// RUN: mncore-run %t.task.mlir --function fused_table --random-inputs 2 | diff - %t.table

// A slice is cut along its other dimensions; each task reads the whole sliced extent.
// The rows do not divide evenly: the last tile has a tile body of its own.
func.func @slice_rows(%x: tensor<4x6xf32>) -> tensor<4x2xf32> {
  %s = graph.slice %x dim 1 [1:5:2] : tensor<4x6xf32> -> tensor<4x2xf32>
  func.return %s : tensor<4x2xf32>
}

// CHECK-LABEL: task.kernel @slice_rows(
// CHECK-SAME:  [[X:%\w+]]: memref<4x6xf32>) -> ([[OUT:%\w+]]: memref<4x2xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @slice0([[ARG0:%\w+]]: tensor<3x6xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.slice [[ARG0]] dim 1 [1 : 5 : 2] : tensor<3x6xf32> -> tensor<3x2xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<3x2xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @slice1([[ARG0:%\w+]]: tensor<1x6xf32>) {
// CHECK-NEXT:  [[V1:%\w+]] = graph.slice [[ARG0]] dim 1 [1 : 5 : 2] : tensor<1x6xf32> -> tensor<1x2xf32>
// CHECK-NEXT:  task.yield [[V1]] : tensor<1x2xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.task @slice0 ins([[X]][0:3, 0:6]) outs([[OUT]][0:3, 0:2]){{$}}
// CHECK-NEXT:  task.task @slice1 ins([[X]][3:4, 0:6]) outs([[OUT]][3:4, 0:2]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }
// RUN: mncore-run %s --function slice_rows --random-inputs 2 > %t.slice
// RUN: mncore-run %t.task.mlir --function slice_rows --random-inputs 2 | diff - %t.slice
// RUN: mncore-run %s --function fallback --random-inputs 2 > %t.fallback
// RUN: mncore-run %t.task.mlir --function fallback --random-inputs 2 --random-order 4 | diff - %t.fallback
