// mncore-run on an mncore.program: the cycle simulator (targets/mncore_simulator.py)
// runs the program on its machine (here `tiny`: 32 PEs in 2 L1Bs of 16, one L2B),
// prints the output tensors, with --timing its report (steps, cycles with DMA stalls,
// slot utilisation, FLOPs), with --trace a Chrome trace of the slots; a program that
// would compute garbage on the machine (a value read before it is ready, DMA data
// used before its wait, a DMA never waited for) and bad inputs are one
// `mncore-run: error:` message. --function picks the program.

// @sum: y = sum over the 32 PEs of 2x = 64x. x is loaded to L2BM, broadcast to both
// L1BMs and to every PE's lm0; each PE doubles it (fpass to make an ALU result, then
// fwd + lm0), the 16 PEs of an L1B are summed into L1BM (l1 reduce), the 2 L1BMs into
// L2BM (l2 reduce), and the sum is stored. Each read comes exactly when its value is
// ready (latencies: ALU 3, L1 3, L2 4 steps; lm0 written at 6 is read at 9, lm1
// written at 10 is read at 13: an LM is not read for 2 steps after a write).
mncore.program @sum machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[64] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
  mncore.l2 2 "bcast" l2bm[0] -> l1bm[0] words 4
  mncore.l1 6 "bcast" l1bm[0] -> lm0[0]
  mncore.alu 9 "fpass" lm0[0] -> grf0[0]
  mncore.alu 10 "fadd" fwd[0], lm0[0] -> lm1[0]
  mncore.l1 13 "reduce" lm1[0] -> l1bm[16]
  mncore.l2 16 "reduce" l1bm[16] -> l2bm[16] words 4
  mncore.dma 20 "store" l2bm[16] -> dram[64] words 4 tag 2
  mncore.wait 21 tag 2
}

// RUN: mncore-run %s --function sum --args 'dense<[1.0, 2.0, 3.0, -0.5]> : tensor<4xf32>' --timing | filecheck %s --check-prefix=SUM
// SUM:      {{\A}}result0 = tensor<4xf32>: [ 64., 128., 192., -32.]
// The report. A step is 4 cycles; a DMA of N words takes 8 (tiny's setup) + ceil(N/16)
// cycles from its issue, and a wait stalls until its tag's DMAs finish. The load
// issues at cycle 0 and ends at 9; the wait at step 1 (cycle 4) stalls 5 cycles. The
// store issues at step 20 = cycle 80 + 5 = 85 and ends at 94; the wait at step 21
// (cycle 89) stalls 5 more. 22 steps = 88 cycles + 10 of stalls = 98. Each slot but
// the MAU issues 2 instructions in 22 steps (9.1%). FLOPs: fadd is 4 words x 32 PEs =
// 128, fpass none; 128/98 = 1.3 FLOP/cycle of tiny's peak 2 x 16 FMA x 8 MABs = 256.
// SUM-NEXT: machine: tiny: 1 group x 1 L2B x 2 L1B x 4 MAB x 4 PE = 32 PEs; LM 256, GRF 64, L1BM 1024, L2BM 4096 words
// SUM-NEXT: steps: 22  cycles: 98 (DMA stalls 10)
// SUM-NEXT: slot utilisation: alu 9.1%  mau 0.0%  l1 9.1%  l2 9.1%  dma 9.1%  ctrl 9.1%
// SUM-NEXT: FLOPs: 128  achieved 1.3 FLOP/cycle of peak 256 (0.5%)
// SUM-NOT:  {{.}}

// The trace: one complete event (4 cycles) per instruction on the row of its slot (tid:
// alu 0, mau 1, l1 2, l2 3, dma 4, ctrl 5), at its cycle (4 x step + the stalls so far,
// including its own step's wait), with its step and its text; a wait's stall is a
// "stall" event on the ctrl row; one row name per slot.
// RUN: mncore-run %s --function sum --args 'dense<[1.0, 2.0, 3.0, -0.5]> : tensor<4xf32>' --trace %t.json > /dev/null
// RUN: %{python} -c "import json, sys; t = json.load(open(sys.argv[1]))['traceEvents']; print([e['args']['name'] for e in t if e['ph'] == 'M']); [print(e['name'], e['tid'], e['ts'], e['dur'], e['args']['step'], e['args'].get('asm', '-')) for e in t if e['ph'] == 'X']" %t.json | filecheck %s --check-prefix=TRACE
// TRACE:      ['mncore.program @sum (ts = cycles)', 'alu', 'mau', 'l1', 'l2', 'dma', 'ctrl']
// TRACE-NEXT: load 4 0 4 0 mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
// TRACE-NEXT: stall 5 4 5 1 -
// TRACE-NEXT: wait 5 9 4 1 mncore.wait 1 tag 1
// TRACE-NEXT: bcast 3 13 4 2 mncore.l2 2 "bcast" l2bm[0] -> l1bm[0] words 4
// TRACE-NEXT: bcast 2 29 4 6 mncore.l1 6 "bcast" l1bm[0] -> lm0[0]
// TRACE-NEXT: fpass 0 41 4 9 mncore.alu 9 "fpass" lm0[0] -> grf0[0]
// TRACE-NEXT: fadd 0 45 4 10 mncore.alu 10 "fadd" fwd[0], lm0[0] -> lm1[0]
// TRACE-NEXT: reduce 2 57 4 13 mncore.l1 13 "reduce" lm1[0] -> l1bm[16]
// TRACE-NEXT: reduce 3 69 4 16 mncore.l2 16 "reduce" l1bm[16] -> l2bm[16] words 4
// TRACE-NEXT: store 4 85 4 20 mncore.dma 20 "store" l2bm[16] -> dram[64] words 4 tag 2
// TRACE-NEXT: stall 5 89 5 21 -
// TRACE-NEXT: wait 5 94 4 21 mncore.wait 21 tag 2
// TRACE-NOT:  {{.}}

// @mma: every PE computes A.b + c on the MAU. A (4x4, the same for all PEs) is
// broadcast row by row into grf0[0..16]; b is one vector per L1B (l2 scatter, then l1
// bcast into lm0); c is one vector per PE (the 64 words of @c broadcast to both L1BMs,
// then l1 scatter: PE p of an L1B gets c[4p..4p+4]) in lm1. The results are gathered
// (@y: L1B, PE, word) and summed over the PEs (@s).
mncore.program @mma machine "tiny" {
  mncore.tensor @a input dram[0] : tensor<4x4xf32>
  mncore.tensor @b input dram[16] : tensor<2x4xf32>
  mncore.tensor @c input dram[24] : tensor<64xf32>
  mncore.tensor @y output dram[128] : tensor<2x16x4xf32>
  mncore.tensor @s output dram[256] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 88 tag 1
  mncore.wait 1 tag 1
  mncore.l2 2 "bcast" l2bm[0] -> l1bm[0] words 16
  mncore.l2 3 "scatter" l2bm[16] -> l1bm[16] words 4
  mncore.l2 4 "bcast" l2bm[24] -> l1bm[64] words 64
  mncore.l1 6 "bcast" l1bm[0] -> grf0[0]
  mncore.l1 7 "bcast" l1bm[4] -> grf0[4]
  mncore.l1 8 "bcast" l1bm[8] -> grf0[8]
  mncore.l1 9 "bcast" l1bm[12] -> grf0[12]
  mncore.l1 10 "bcast" l1bm[16] -> lm0[0]
  mncore.l1 11 "scatter" l1bm[64] -> lm1[0]
  mncore.mau 14 "mma" grf0[0], lm0[0], lm1[0] -> grf1[0]
  mncore.l1 17 "gather" grf1[0] -> l1bm[128]
  mncore.l1 18 "reduce" grf1[0] -> l1bm[192]
  mncore.l2 20 "gather" l1bm[128] -> l2bm[128] words 64
  mncore.l2 21 "reduce" l1bm[192] -> l2bm[256] words 4
  mncore.dma 24 "store" l2bm[128] -> dram[128] words 128 tag 2
  mncore.dma 25 "store" l2bm[256] -> dram[256] words 4 tag 2
  mncore.wait 26 tag 2
}

// A = [[1,0,0,0], [0,2,0,0], [0,0,0,1], [1,1,1,1]], so A.b = [b0, 2 b1, b3, b0+b1+b2+b3]:
// [1, 4, 4, 10] for b = [1, 2, 3, 4] (L1B 0) and [-1, 0, 2, 1.5] for [-1, 0, 0.5, 2]
// (L1B 1); c = 0..63, so PE p adds [4p, 4p+1, 4p+2, 4p+3]: PE p of L1B 0 gets
// [4p+1, 4p+5, 4p+6, 4p+13], of L1B 1 [4p-1, 4p+1, 4p+4, 4p+4.5]. The sum over the 32
// PEs: 16 (A.b0 + A.b1) = [0, 64, 96, 184] plus twice sum(c_p) = 2 [480, 496, 512,
// 528], i.e. [960, 1056, 1120, 1240].
// RUN: mncore-run %s --function mma --args 'dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>' 'dense<[[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 0.5, 2.0]]> : tensor<2x4xf32>' 'dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]> : tensor<64xf32>' --timing --save-outputs %t.mma.npz | filecheck %s --check-prefix=MMA
// MMA:      {{\A}}result0 = tensor<2x16x4xf32>: {{\[\[\[}} 1. ,  5. ,  6. , 13. ],
// MMA-NEXT: {{^}}  [ 5. ,  9. , 10. , 17. ],
// MMA-NEXT: {{^}}  [ 9. , 13. , 14. , 21. ],
// MMA-NEXT: {{^}}  ...,
// MMA-NEXT: {{^}}  [53. , 57. , 58. , 65. ],
// MMA-NEXT: {{^}}  [57. , 61. , 62. , 69. ],
// MMA-NEXT: {{^}}  [61. , 65. , 66. , 73. ]],
// MMA-EMPTY:
// MMA-NEXT: {{^}} {{\[\[}}-1. ,  1. ,  4. ,  4.5],
// MMA-NEXT: {{^}}  [ 3. ,  5. ,  8. ,  8.5],
// MMA-NEXT: {{^}}  [ 7. ,  9. , 12. , 12.5],
// MMA-NEXT: {{^}}  ...,
// MMA-NEXT: {{^}}  [51. , 53. , 56. , 56.5],
// MMA-NEXT: {{^}}  [55. , 57. , 60. , 60.5],
// MMA-NEXT: {{^}}  [59. , 61. , 64. , 64.5]]]
// MMA-NEXT: {{^}}result1 = tensor<4xf32>: [ 960., 1056., 1120., 1240.]
// The load of 88 words ends at 8 + 6 = 14 (the wait at cycle 4 stalls 10); the stores
// issue at step 24 (cycle 96 + 10 = 106, 128 words: ends at 106 + 8 + 8 = 122) and
// step 25 (110, set up by 118 but queued behind the first: ends at 122 + 1 = 123); the
// wait at step 26 (cycle 114) stalls 9 more. 27 steps = 108 cycles + 19. Issued: mau 1, l1 8, l2 5, dma 3, ctrl 2 of 27. One mma is
// 4x4 FMAs = 32 FLOPs per PE, 1024 in all; 1024/127 = 8.1 FLOP/cycle, 3.1% of 256.
// MMA-NEXT: machine: tiny: 1 group x 1 L2B x 2 L1B x 4 MAB x 4 PE = 32 PEs; LM 256, GRF 64, L1BM 1024, L2BM 4096 words
// MMA-NEXT: steps: 27  cycles: 127 (DMA stalls 19)
// MMA-NEXT: slot utilisation: alu 0.0%  mau 3.7%  l1 29.6%  l2 18.5%  dma 11.1%  ctrl 7.4%
// MMA-NEXT: FLOPs: 1024  achieved 8.1 FLOP/cycle of peak 256 (3.1%)
// MMA-NOT:  {{.}}

// Every element of @y, exactly: [L1B, PE] = A.b[L1B] + c[4 PE : 4 PE + 4].
// RUN: %{python} -c "import numpy as np; d = np.load('%t.mma.npz'); a = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 1], [1, 1, 1, 1]], np.float32); b = np.array([[1, 2, 3, 4], [-1, 0, 0.5, 2]], np.float32); c = np.arange(64, dtype=np.float32).reshape(16, 4); want = (b @ a.T)[:, None, :] + c[None]; print(d['result0'].dtype, d['result0'].shape, np.array_equal(d['result0'], want), np.array_equal(d['result1'], want.sum(axis=(0, 1))))" | filecheck %s --check-prefix=MMA-ALL
// MMA-ALL: float32 (2, 16, 4) True True

// ==== hazards: each program passes the verifier, the simulator reports the step.

// An ALU result read one step too early (ready 3 steps after the ALU writes it).
mncore.program @early_alu machine "tiny" {
  mncore.alu 0 "fzero" -> grf0[0]
  mncore.alu 2 "fneg" grf0[0] -> grf1[0]
}
// RUN: not mncore-run %s --function early_alu 2>&1 | filecheck %s --check-prefix=EARLY-ALU
// EARLY-ALU:     {{\A}}mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 3]]:3: error: step 2: mncore.alu 'fneg': reads grf0[0] written at step 0, ready only at step 3
// EARLY-ALU-NEXT: mncore.alu 2 "fneg" grf0[0] -> grf1[0]
// EARLY-ALU-NEXT: ^^^^^^^^^^
// EARLY-ALU-NOT: {{.}}

// An L1 transfer's result read one step too early (ready after 3 steps).
mncore.program @early_l1 machine "tiny" {
  mncore.l1 0 "bcast" l1bm[0] -> grf0[0]
  mncore.alu 2 "fneg" grf0[0] -> grf1[0]
}
// RUN: not mncore-run %s --function early_l1 2>&1 | filecheck %s --check-prefix=EARLY-L1
// EARLY-L1:     {{\A}}mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 3]]:3: error: step 2: mncore.alu 'fneg': reads grf0[0] written at step 0, ready only at step 3
// EARLY-L1-NEXT: mncore.alu 2 "fneg" grf0[0] -> grf1[0]
// EARLY-L1-NEXT: ^^^^^^^^^^
// EARLY-L1-NOT: {{.}}

// An L2 transfer's result read one step too early (ready after 4 steps).
mncore.program @early_l2 machine "tiny" {
  mncore.l2 0 "bcast" l2bm[0] -> l1bm[0] words 4
  mncore.l1 3 "bcast" l1bm[0] -> grf0[0]
}
// RUN: not mncore-run %s --function early_l2 2>&1 | filecheck %s --check-prefix=EARLY-L2
// EARLY-L2:     {{\A}}mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 3]]:3: error: step 3: mncore.l1 'bcast': reads l1bm[0] written at step 0, ready only at step 4
// EARLY-L2-NEXT: mncore.l1 3 "bcast" l1bm[0] -> grf0[0]
// EARLY-L2-NEXT: ^^^^^^^^^
// EARLY-L2-NOT: {{.}}

// The MAU reads a 16-word matrix of which only the last row is not ready: the message
// names that word.
mncore.program @early_mau machine "tiny" {
  mncore.alu 5 "fzero" -> grf0[12]
  mncore.mau 7 "mma" grf0[0], lm0[0], lm1[0] -> grf1[0]
}
// RUN: not mncore-run %s --function early_mau 2>&1 | filecheck %s --check-prefix=EARLY-MAU
// EARLY-MAU:     {{\A}}mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 3]]:3: error: step 7: mncore.mau 'mma': reads grf0[12] written at step 5, ready only at step 8
// EARLY-MAU-NEXT: mncore.mau 7 "mma" grf0[0], lm0[0], lm1[0] -> grf1[0]
// EARLY-MAU-NEXT: ^^^^^^^^^^
// EARLY-MAU-NOT: {{.}}

// DMA data read before the wait on its tag.
mncore.program @early_dma machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
  mncore.l2 1 "bcast" l2bm[4] -> l1bm[0] words 4
  mncore.wait 2 tag 1
}
// RUN: not mncore-run %s --function early_dma 2>&1 | filecheck %s --check-prefix=EARLY-DMA
// EARLY-DMA:     {{\A}}mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 4]]:3: error: step 1: mncore.l2 'bcast': reads l2bm[4] before the wait on DMA tag 1
// EARLY-DMA-NEXT: mncore.l2 1 "bcast" l2bm[4] -> l1bm[0] words 4
// EARLY-DMA-NEXT: ^^^^^^^^^
// EARLY-DMA-NOT: {{.}}

// The DMA engine moves DMAs' words in their issue order: a wait on a tag makes the data
// of the DMAs issued before it usable too, not that of DMAs issued after it.
mncore.program @wrong_tag machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[64] words 8 tag 1
  mncore.dma 1 "load" dram[0] -> l2bm[0] words 8 tag 2
  mncore.wait 2 tag 1
  mncore.l2 3 "bcast" l2bm[0] -> l1bm[0] words 4
  mncore.wait 4 tag 2
}
// RUN: not mncore-run %s --function wrong_tag 2>&1 | filecheck %s --check-prefix=WRONG-TAG
// WRONG-TAG:     {{\A}}mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 4]]:3: error: step 3: mncore.l2 'bcast': reads l2bm[0] before the wait on DMA tag 2
// WRONG-TAG-NEXT: mncore.l2 3 "bcast" l2bm[0] -> l1bm[0] words 4
// WRONG-TAG-NEXT: ^^^^^^^^^
// WRONG-TAG-NOT: {{.}}
mncore.program @queue_order machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<8xf32>
  mncore.tensor @y output dram[8] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
  mncore.dma 1 "load" dram[0] -> l2bm[64] words 8 tag 2
  mncore.wait 2 tag 2
  mncore.l2 3 "bcast" l2bm[4] -> l1bm[0] words 4
  mncore.l1 8 "bcast" l1bm[0] -> lm0[0]
  mncore.l1 12 "gather" lm0[0] -> l1bm[64]
  mncore.l2 16 "gather" l1bm[64] -> l2bm[128] words 4
  mncore.dma 21 "store" l2bm[128] -> dram[8] words 4 tag 3
  mncore.wait 22 tag 3
  mncore.wait 23 tag 1
}
// RUN: mncore-run %s --function queue_order --args 'dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>' | filecheck %s --check-prefix=QUEUE-ORDER
// QUEUE-ORDER: result0 = tensor<4xf32>: [5., 6., 7., 8.]

// A program ending with a DMA not waited for.
mncore.program @unwaited machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
  mncore.dma 1 "store" l2bm[64] -> dram[64] words 4 tag 3
  mncore.wait 2 tag 1
}
// RUN: not mncore-run %s --function unwaited 2>&1 | filecheck %s --check-prefix=UNWAITED
// UNWAITED:     {{\A}}mncore-run: error: the program ends with DMA tags [3] not waited for
// UNWAITED-NOT: {{.}}

// Every tag is waited for, even where a later tag's wait found its DMA done.
mncore.program @unwaited_before machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
  mncore.dma 1 "store" l2bm[64] -> dram[64] words 4 tag 3
  mncore.wait 2 tag 3
}
// RUN: not mncore-run %s --function unwaited_before 2>&1 | filecheck %s --check-prefix=UNWAITED-BEFORE
// UNWAITED-BEFORE:     {{\A}}mncore-run: error: the program ends with DMA tags [1] not waited for
// UNWAITED-BEFORE-NOT: {{.}}

// ==== bad inputs and options

// RUN: not mncore-run %s --function sum --args 'dense<[1.0, 2.0, 3.0]> : tensor<3xf32>' 2>&1 | filecheck %s --check-prefix=SHAPE
// SHAPE:     {{\A}}mncore-run: error: --args[0] has type tensor<3xf32>, the function expects tensor<4xf32>
// SHAPE-NOT: {{.}}
// RUN: not mncore-run %s --function sum --args 'dense<1.0> : tensor<4xf32>' 'dense<1.0> : tensor<4xf32>' 2>&1 | filecheck %s --check-prefix=COUNT
// COUNT: mncore-run: error: @sum takes 1 input, got 2
// RUN: not mncore-run %s --function sum 2>&1 | filecheck %s --check-prefix=NOINPUTS
// NOINPUTS: mncore-run: error: @sum takes 1 input: give --args or --random-inputs
// RUN: not mncore-run %s 2>&1 | filecheck %s --check-prefix=NOENTRY
// NOENTRY: mncore-run: error: the module has no single entry function: name one
// RUN: not mncore-run %s --function sum --random-inputs 0 --random-order 1 2>&1 | filecheck %s --check-prefix=ORDER
// ORDER: mncore-run: error: --random-order needs a task.kernel
// RUN: not mncore-run %s --function sum --random-inputs 0 --machine workers=2 2>&1 | filecheck %s --check-prefix=MACHINE
// MACHINE: mncore-run: error: --machine applies to task kernels; an mncore.program names its machine

// A write into words an in-flight DMA is writing (a load's destination) or reading (a
// store's source) is a race.
mncore.program @race_load machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.l2 1 "reduce" l1bm[0] -> l2bm[0] words 4
  mncore.wait 2 tag 1
}
// RUN: not mncore-run %s --function race_load 2>&1 | filecheck %s --check-prefix=RACE-LOAD
// RACE-LOAD: mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 4]]:3: error: step 1: mncore.l2 'reduce': writes l2bm[0] while DMA tag 1 is still writing it
// RACE-LOAD-NEXT: mncore.l2 1 "reduce" l1bm[0] -> l2bm[0] words 4
// RACE-LOAD-NEXT: ^^^^^^^^^

mncore.program @race_store machine "tiny" {
  mncore.dma 0 "store" l2bm[8] -> dram[64] words 4 tag 1
  mncore.l2 1 "reduce" l1bm[0] -> l2bm[8] words 4
  mncore.wait 2 tag 1
}
// RUN: not mncore-run %s --function race_store 2>&1 | filecheck %s --check-prefix=RACE-STORE
// RACE-STORE: mncore-run: {{.*}}mncore_run_mncore.mlir:[[# @LINE - 4]]:3: error: step 1: mncore.l2 'reduce': writes l2bm[8] while DMA tag 1 is still reading it
// RACE-STORE-NEXT: mncore.l2 1 "reduce" l1bm[0] -> l2bm[8] words 4
// RACE-STORE-NEXT: ^^^^^^^^^
