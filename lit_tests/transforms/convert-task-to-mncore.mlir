// convert-task-to-mncore: buffers in DRAM, inputs packed by (strided) DMAs into L2BM,
// scattered to L1BM and to the PEs' LM (a scalar is broadcast), the body on the ALU (a
// copy keeps two reads of one memory apart), results gathered back and stored by DMA;
// then mncore-schedule places everything. The program computes what the task kernel
// computes; kinds it does not lower are one clear error.
// RUN: mncore-opt %s -p 'graph-fuse-elementwise,convert-graph-to-task{target=mncore elementwise_tile=96}' -o %t.task.mlir
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{machine=tiny},mncore-schedule' -o %t.mncore.mlir
// RUN: filecheck %s --input-file %t.mncore.mlir
// The ALU divides by a reciprocal and a product corrected by the exact remainder: IEEE's
// quotient, so the program equals the task level bit for bit.
// RUN: mncore-run %t.task.mlir --random-inputs 5 --save-outputs %t.task.npz > /dev/null
// RUN: mncore-run %t.mncore.mlir --random-inputs 5 --save-outputs %t.mncore.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a, b = np.load('%t.task.npz')['result0'], np.load('%t.mncore.npz')['result0']; print(a.shape == b.shape, np.array_equal(a, b))" | filecheck %s --check-prefix=SAME
// SAME: True True
// Copies (permute, reshape, slice with a step) move words by DMA runs; they equal the
// task level exactly, for two tilings.
// RUN: mncore-opt %S/Inputs/copies.mlir -p 'convert-graph-to-task{target=mncore elementwise_tile=7}' -o %t.copies.task.mlir
// RUN: mncore-opt %t.copies.task.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 3 > %t.copies.mncore
// RUN: mncore-run %t.copies.task.mlir --random-inputs 3 | diff - %t.copies.mncore
// RUN: mncore-opt %S/Inputs/copies.mlir -p 'convert-graph-to-task{target=mncore},convert-task-to-mncore{machine=mncore2},mncore-schedule' | mncore-run --random-inputs 3 | diff - %t.copies.mncore
// A matmul with a bias and ReLU (examples/linear_relu.mlir) equals the task level.
// RUN: mncore-opt %S/../../examples/linear_relu.mlir -p 'graph-fuse-elementwise,convert-graph-to-task{target=mncore matmul_tile=4,32}' -o %t.linear.task.mlir
// RUN: mncore-run %t.linear.task.mlir --random-inputs 2 --save-outputs %t.linear.task.npz > /dev/null
// RUN: mncore-opt %t.linear.task.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 2 --save-outputs %t.linear.mncore.npz | filecheck %s --check-prefix=LINEAR
// LINEAR: result0 = tensor<8x64xf32>
// RUN: %{python} -c "import numpy as np; a, b = np.load('%t.linear.task.npz')['result0'], np.load('%t.linear.mncore.npz')['result0']; print(np.allclose(a, b, rtol=1e-5, atol=1e-5))" | filecheck %s --check-prefix=CLOSE
// CLOSE: True
// Reductions, gather, scatter, embedding and index_put are lane kernels (Inputs/lanes.mlir): equal
// to the task level, on both machines.
// RUN: mncore-opt %S/Inputs/lanes.mlir -p 'convert-graph-to-task{target=mncore row_tile=3 elementwise_tile=12}' -o %t.lanes.task.mlir
// RUN: mncore-run %t.lanes.task.mlir --random-inputs 4 --save-outputs %t.lanes.task.npz > /dev/null
// RUN: mncore-opt %t.lanes.task.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 4 --save-outputs %t.lanes.tiny.npz > /dev/null
// RUN: mncore-opt %t.lanes.task.mlir -p 'convert-task-to-mncore{machine=mncore2},mncore-schedule' | mncore-run --random-inputs 4 --save-outputs %t.lanes.mncore2.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a = np.load('%t.lanes.task.npz'); print([all(np.allclose(a[k], np.load(f)[k], rtol=1e-5, atol=1e-6) for k in a) for f in ('%t.lanes.tiny.npz', '%t.lanes.mncore2.npz')], len(a))" | filecheck %s --check-prefix=LANES
// LANES: [True, True] 9
// RUN: mncore-opt %S/Inputs/lanes.mlir -p 'convert-graph-to-task{target=mncore},convert-task-to-mncore,mncore-schedule' | filecheck %s --check-prefix=LANE-IR
// On mncore2 a wave of more lanes than one L2B holds gives each L2B its own (DMAs to
// one L2B), and equals the task level.
// RUN: mncore-opt %S/Inputs/wide.mlir -p 'graph-fuse-elementwise,convert-graph-to-task{target=mncore elementwise_tile=6400 row_tile=64}' -o %t.wide.task.mlir
// RUN: mncore-run %t.wide.task.mlir --random-inputs 2 --save-outputs %t.wide.task.npz > /dev/null
// RUN: mncore-opt %t.wide.task.mlir -p 'convert-task-to-mncore{machine=mncore2},mncore-schedule' -o %t.wide.mncore.mlir
// RUN: mncore-run %t.wide.mncore.mlir --random-inputs 2 --save-outputs %t.wide.mncore.npz > /dev/null
// RUN: %{python} -c "import numpy as np; a, b = np.load('%t.wide.task.npz'), np.load('%t.wide.mncore.npz'); print([np.allclose(a[k], b[k], rtol=1e-5, atol=1e-5) for k in a])" | filecheck %s --check-prefix=WIDE
// WIDE: [True, True]
// RUN: filecheck %s --input-file %t.wide.mncore.mlir --check-prefix=WIDE-IR
// WIDE-IR-DAG: "load" {{.*}} l2b 0 tag
// WIDE-IR-DAG: "load" {{.*}} l2b 3 tag
// WIDE-IR-DAG: "store" {{.*}} l2b 3 tag
// Intermediate buffers share DRAM by liveness (first fit), shown as mncore.buffer ops;
// the program still equals the task level.
// RUN: mncore-opt %S/Inputs/chain.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false}' -o %t.chain.task.mlir
// RUN: mncore-opt %t.chain.task.mlir -p 'convert-task-to-mncore,mncore-schedule' | filecheck %s --check-prefix=LIVENESS
// RUN: mncore-opt %t.chain.task.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 1 > %t.chain.mncore
// RUN: mncore-run %t.chain.task.mlir --random-inputs 1 | %{python} -c "import sys; print(sys.stdin.read() == open('%t.chain.mncore').read())" | filecheck %s --check-prefix=CHAIN
// CHAIN: True
// RUN: not mncore-opt %S/Inputs/softmax.mlir -p 'convert-graph-to-task{target=mncore},convert-task-to-mncore,mncore-schedule' 2>&1 | filecheck %s --check-prefix=KIND
// RUN: not mncore-opt %t.task.mlir -p 'convert-task-to-mncore{machine=big},mncore-schedule' 2>&1 | filecheck %s --check-prefix=MACHINE
// RUN: not mncore-opt %S/Inputs/too_big.mlir -p 'convert-graph-to-task{target=mncore},convert-task-to-mncore,mncore-schedule' 2>&1 | filecheck %s --check-prefix=CAPACITY

func.func @main(%x: tensor<6x40xf32>, %b: tensor<40xf32>, %s: tensor<f32>) -> tensor<6x40xf32> {
  %a = graph.add %x, %b : tensor<6x40xf32>, tensor<40xf32> -> tensor<6x40xf32>
  %m = graph.mul %a, %a : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %d = graph.div %m, %s : tensor<6x40xf32>, tensor<f32> -> tensor<6x40xf32>
  return %d : tensor<6x40xf32>
}

// CHECK:      mncore.program @main machine "tiny" {
// CHECK-NEXT:   mncore.tensor @x input dram[0] : tensor<6x40xf32>
// CHECK-NEXT:   mncore.tensor @b input dram[240] : tensor<40xf32>
// CHECK-NEXT:   mncore.tensor @s input dram[288] : tensor<f32>
// CHECK-NEXT:   mncore.tensor @output0 output dram[304] : tensor<6x40xf32>
// CHECK-NEXT:   mncore.tensor @constant_pool constant dram[544] = dense<4.097000e+03> : tensor<1xf32>
// Tiles are 2 rows of 40 (80 elements, a wave of the 128 that 32 PEs x 4 take, spread
// as 40 words over each of the 2 L1Bs, so each staging area is 80 words of L2BM).
// The first tile: %x's rows are one run of 80 words; %b's row is the same on both
// L1Bs, so it crosses DMA once (40 words) and the L2 broadcasts it to them; the scalar
// divisor is one word read 4 times, then broadcast (staging areas are aligned to 16
// words).
// CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l2bm[0] words 80 tag 1
// CHECK-NEXT: mncore.dma 1 "load" dram[240] -> l2bm[80] words 40 tag 2
// CHECK-NEXT: mncore.dma 2 "load" dram[288] -> l2bm[128] words 4 run 1 stride 0 tag 3
// CHECK-DAG:  mncore.l2 {{[0-9]+}} "scatter" l2bm[0] -> l1bm[0] words 40
// CHECK-DAG:  mncore.l1 {{[0-9]+}} "scatter" l1bm[0] -> lm1[128]
// CHECK-DAG:  mncore.l2 {{[0-9]+}} "bcast" l2bm[80] -> l1bm[64] words 40
// CHECK-DAG:  mncore.l1 {{[0-9]+}} "scatter" l1bm[64] -> lm0[128]
// CHECK-DAG:  mncore.l2 {{[0-9]+}} "bcast" l2bm[128] -> l1bm[128] words 4
// CHECK-DAG:  mncore.l1 {{[0-9]+}} "bcast" l1bm[128] -> lm1[132]
// a + b, then a * a reading grf0 twice: the second read goes through a copy to grf1[0];
// the division is a reciprocal and a product (into grf0[8]), corrected by its exact
// remainder (Dekker's product; the splitter 4097 is a constant in lm0[4]), the
// corrected quotient selected where it is not NaN into the slot of a + b (dead after
// the square).
// CHECK-DAG:  mncore.alu {{[0-9]+}} "fadd" lm1[128], lm0[128] -> grf0[4]
// CHECK-DAG:  mncore.alu {{[0-9]+}} "fpass" grf0[4] -> grf1[0]
// CHECK-DAG:  mncore.alu {{[0-9]+}} "fmul" grf0[4], grf1[0] -> grf1[4]
// CHECK-DAG:  mncore.alu {{[0-9]+}} "frecip" lm1[132] -> grf0[16]
// CHECK-DAG:  mncore.alu {{[0-9]+}} "fmul" grf1[4], grf0[16] -> grf0[8]
// CHECK-DAG:  mncore.alu {{[0-9]+}} "fmul" grf0[8], lm0[4] -> grf0[12]
// CHECK-DAG:  mncore.alu {{[0-9]+}} "fsel" grf0[12], grf1[20], lm0[0] -> grf0[4]
// CHECK-DAG:  mncore.l1 {{[0-9]+}} "gather" grf0[4] -> l1bm[256]
// CHECK-DAG:  mncore.l2 {{[0-9]+}} "gather" l1bm[256] -> l2bm[160] words 40
// CHECK-DAG:  mncore.dma {{[0-9]+}} "store" l2bm[160] -> dram[304] words 80 tag

// LIVENESS:      mncore.tensor @x input dram[0] : tensor<4x8xf32>
// LIVENESS-NEXT: mncore.tensor @output0 output dram[32] : tensor<4x8xf32>
// LIVENESS-NEXT: mncore.buffer @buffer0 dram[64] words 32
// LIVENESS-NEXT: mncore.buffer @buffer1 dram[96] words 32
// LIVENESS-NEXT: mncore.buffer @buffer2 dram[64] words 32
// LIVENESS-NEXT: mncore.buffer @buffer3 dram[96] words 32

// LANE-IR: mncore.program @main machine "tiny" {
// LANE-IR: mncore.tensor @constant_pool constant
// The tree: %sums on an L1B each (two at a time on tiny), %all on the whole L2B. The L1
// reduce sums over the PEs, a broadcast brings the 4 words back, mma with a matrix of ones
// adds them, and each L1B's first word is gathered to L2BM and stored with its neighbours'.
// LANE-IR: mncore.l1 {{[0-9]+}} "reduce" grf{{[01]}}[{{[0-9]+}}] -> [[SUMS:l1bm.[0-9]+.]]
// LANE-IR: mncore.l1 {{[0-9]+}} "bcast" [[SUMS]] -> [[VEC:grf[01].[0-9]+.]]
// LANE-IR: mncore.mau {{[0-9]+}} "mma" lm0{{.*}}, [[VEC]], [[TOTAL:grf[01].[0-9]+.]] -> [[TOTAL]]
// LANE-IR: mncore.l1 {{[0-9]+}} "gather" [[TOTAL]] -> [[ONE:l1bm.[0-9]+.]]
// LANE-IR: mncore.l2 {{[0-9]+}} "gather" [[ONE]] -> [[WORDS:l2bm.[0-9]+.]] words 1
// LANE-IR: mncore.dma {{[0-9]+}} "store" [[WORDS]] -> dram{{.*}} words 2 tag
// A sum over the whole L2B: the L2 reduce sums over the L1Bs.
// LANE-IR: mncore.l2 {{[0-9]+}} "reduce" l1bm{{.*}} words 4

// KIND: mncore-opt: {{.*}}softmax.mlir:2:3: error: convert-task-to-mncore: task kind 'softmax' is not lowered (run graph-decompose before convert-graph-to-task: it expands row ops into elementwise ops and reductions); lowered kinds: elementwise, matmul, matmul_permuted, permute, reshape, slice, sum, mean, amax, gather, scatter, embedding, index_put, conv2d, conv2d_backward, max_pool2d, max_pool2d_backward
// KIND-NEXT: %c = graph.softmax %a dim -1 : tensor<4x4xf32>
// CAPACITY: mncore-opt: {{.*}}too_big.mlir:2:3: error: convert-task-to-mncore: buffer %x (1100000 words) does not fit in dram (1048576 words on tiny)
// MACHINE: mncore-opt: error: convert-task-to-mncore: unknown machine 'big'; machines: mncore2, tiny
