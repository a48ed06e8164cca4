// mncore-schedule on repeated groups: a group is placed as a unit, its body first given
// a modulo schedule (each instruction at its earliest step after its own iteration's
// earlier accesses, the shortest period at which no slot or port is used twice and every
// dependence on an earlier iteration holds), then the group's start is the first step
// at which its inputs are ready for the iterations that read them and every one of its
// issues finds its slot free. The input (spaced out: its meaning), the scheduled
// program and its expansion (mncore-expand-repeats) compute the same output.
// RUN: mncore-opt %s -p mncore-schedule | filecheck %s
// RUN: mncore-run %s --args 'dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32>' | filecheck %s --check-prefix=RESULT
// RUN: mncore-opt %s -p mncore-schedule | mncore-run --args 'dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32>' | filecheck %s --check-prefix=RESULT
// RUN: mncore-opt %s -p mncore-schedule,mncore-expand-repeats | mncore-run --args 'dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32>' | filecheck %s --check-prefix=RESULT
// RUN: mncore-opt %s -p mncore-schedule,mncore-expand-repeats | filecheck %s --check-prefix=EXPANDED
// RUN: not mncore-opt %S/Inputs/schedule_interleaved.mlir -p mncore-schedule 2>&1 | filecheck %s --check-prefix=INTERLEAVED
// RUN: mncore-opt %S/Inputs/schedule_dram_order.mlir -p mncore-schedule | filecheck %s --check-prefix=DRAM-ORDER
// RUN: mncore-opt %S/Inputs/schedule_dram_order.mlir -p mncore-schedule | mncore-run --args 'dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>' | filecheck %s --check-prefix=DRAM-RESULT

// Per PE, a = the sum of x[8i..8i+3] over the 4 iterations and b = x[8i+4..8i+7] * a
// as of the last one, each summed over the 32 PEs: a = 32 [48, 52, 56, 60], b = 32
// [28 x 48, 29 x 52, 30 x 56, 31 x 60]. The group's second broadcast writes
// grf0[8], which the fmul of the previous iteration reads 5 steps after its own
// broadcast (the fadd it waits for is 3 steps behind the first broadcast): the period is
// 5, not the 2 that its two ALU and two L1 instructions would allow. The group starts
// once the L2 broadcast's words are in L1BM (step 3 + 4), and the fpass after it waits
// for the last fmul (the group's last issue, 7 + 3 x 5 + 6 = 28, and 3 steps).
mncore.program @p machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<32xf32>
  mncore.tensor @y output dram[64] : tensor<4xf32>
  mncore.tensor @z output dram[68] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 32 tag 1
  mncore.wait 1 tag 1
  mncore.l2 2 "bcast" l2bm[0] -> l1bm[0] words 32
  mncore.alu 7 "fzero" -> grf1[0]
  mncore.alu 10 "fzero" -> grf1[4]
  mncore.repeat 13 count 4 period 48 {
    mncore.l1 0 "bcast" l1bm[0 + 8 * i] -> grf0[4]
    mncore.alu 12 "fadd" grf0[4], grf1[0] -> grf1[0]
    mncore.l1 24 "bcast" l1bm[4 + 8 * i] -> grf0[8]
    mncore.alu 36 "fmul" grf0[8], grf1[0] -> grf1[4]
  }
  mncore.alu 210 "fpass" grf1[4] -> lm0[4]
  mncore.l1 214 "reduce" grf1[0] -> l1bm[128]
  mncore.l1 218 "reduce" lm0[4] -> l1bm[132]
  mncore.l2 222 "reduce" l1bm[128] -> l2bm[256] words 8
  mncore.dma 227 "store" l2bm[256] -> dram[64] words 8 tag 2
  mncore.wait 228 tag 2
}

// CHECK:      mncore.l2 3 "bcast" l2bm[0] -> l1bm[0] words 32
// CHECK:      mncore.repeat 7 count 4 period 5 {
// CHECK-NEXT:   mncore.l1 0 "bcast" l1bm[0 + 8 * i] -> grf0[4]
// CHECK-NEXT:   mncore.l1 1 "bcast" l1bm[4 + 8 * i] -> grf0[8]
// CHECK-NEXT:   mncore.alu 3 "fadd" grf0[4], grf1[0] -> grf1[0]
// CHECK-NEXT:   mncore.alu 6 "fmul" grf0[8], grf1[0] -> grf1[4]
// CHECK-NEXT: }
// CHECK-NEXT: mncore.alu 31 "fpass" grf1[4] -> lm0[4]

// RESULT:      result0 = tensor<4xf32>: [1536., 1664., 1792., 1920.]
// RESULT-NEXT: result1 = tensor<4xf32>: [43008., 48256., 53760., 59520.]

// The input's order is its meaning, and a group is one unit of it: an instruction
// issued inside an earlier group's span has no place in that order.
// INTERLEAVED: mncore-opt: error: mncore-schedule: step 20: mncore.alu issues inside an earlier mncore.repeat (to step 24): groups in the input must not interleave with other instructions (its order is its meaning)

// The expansion: iteration i's instructions at 7 + 5i + their steps, T's words 8 on.
// EXPANDED:      mncore.l1 7 "bcast" l1bm[0] -> grf0[4]
// EXPANDED-NEXT: mncore.l1 8 "bcast" l1bm[4] -> grf0[8]
// EXPANDED-NEXT: mncore.alu 10 "fadd" grf0[4], grf1[0] -> grf1[0]
// EXPANDED-NEXT: mncore.l1 12 "bcast" l1bm[8] -> grf0[4]
// EXPANDED-NEXT: mncore.alu 13 "fmul" grf0[8], grf1[0] -> grf1[4]
// EXPANDED-NEXT: mncore.l1 13 "bcast" l1bm[12] -> grf0[8]
// EXPANDED-NOT:  mncore.repeat

// The DMA engine moves DMAs' words in their issue order: each DMA issues the step after
// the one whose words it touches (the store of the L2BM words the load writes, the load
// of the DRAM words the store writes), before its wait (each DMA's wait stays).
// DRAM-ORDER:      mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
// DRAM-ORDER-NEXT: mncore.dma 1 "store" l2bm[0] -> dram[8] words 8 tag 2
// DRAM-ORDER-NEXT: mncore.dma 2 "load" dram[8] -> l2bm[16] words 8 tag 3
// DRAM-ORDER-NEXT: mncore.wait 3 tag 1
// DRAM-ORDER-NEXT: mncore.dma 3 "store" l2bm[16] -> dram[16] words 8 tag 4
// DRAM-RESULT: result0 = tensor<8xf32>: [1., 2., 3., 4., 5., 6., 7., 8.]
