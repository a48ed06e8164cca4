// Every op of the mncore dialect in its custom syntax: printing, and parsing back both
// the custom and the generic form (which must give the same text). One program per
// machine, each with every instruction kind: the 13 ALU kinds (fmadd with 3 sources,
// fzero with none, fwd operands), MAU mma, L1 bcast/scatter/gather/reduce, L2 with
// words (a scatter with lanes), DMA load/store with words and tags, wait; input and output tensors, buffers (one with a strided layout),
// steps with several slots, and discardable attributes on instructions. Both programs
// keep the assembler's rules (dialects/mncore.py, ProgramOp._check_issue), also at
// their edges (and a third program, a repeated group with strided references, too): one read and one write of a GRF in a step, an LM read 3 steps after a
// write, operands ending exactly at the end of a memory.
// RUN: mncore-opt %s | filecheck %s
// RUN: mncore-opt %s --print-op-generic | mncore-opt | filecheck %s
// RUN: mncore-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// tiny: 32 PEs, 16 per L1B (an L1 scatter/gather block is 64 words), 2 L1Bs per L2B
// (an L2 scatter/gather block is 2 x words), one L2B; LM 256, GRF 64, L1BM 1024,
// L2BM 4096 words.
mncore.program @tiny_all machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<2x16xf32>
  mncore.tensor @w input dram[32] : tensor<64xf32>
  mncore.tensor @y output dram[128] : tensor<4xf32>
  mncore.tensor @z output dram[256] : tensor<2x64xf32>
  mncore.buffer @a lm0[0] words 16
  mncore.buffer @acc grf1[0] words 4
  mncore.buffer @stage l2bm[0] words 96
  mncore.buffer @top grf1[60] words 4
  mncore.buffer @xt dram[0] words 32 shape [16, 2] strides [1, 16]
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 32 tag 1
  mncore.dma 1 "load" dram[32] -> l2bm[32] words 64 tag 2 {note = "weights"}
  mncore.wait 2 tag 1
  mncore.l2 3 "scatter" l2bm[0] -> l1bm[0] words 16 lanes 20
  mncore.wait 3 tag 2
  mncore.l2 4 "bcast" l2bm[32] -> l1bm[64] words 64
  mncore.l1 8 "bcast" l1bm[0] -> grf0[0]
  mncore.l1 9 "scatter" l1bm[64] -> lm0[0]
  // lm0 was written at step 9: reading it at 12 is fine. grf0 is read by the ALU and
  // written by the L1 transfer: one read and one write of a GRF per step.
  mncore.alu 12 "fadd" lm0[0], grf0[0] -> grf1[0]
  mncore.l1 12 "bcast" l1bm[4] -> grf0[4]
  mncore.alu 13 "fmul" fwd[0], grf0[4] -> lm1[0]
  mncore.mau 13 "mma" lm0[0], fwd[0], grf1[0] -> grf1[4] {flops = 1024 : i64}
  mncore.alu 14 "fsub" fwd[0], grf1[4] -> grf0[8]
  mncore.alu 15 "fmax" grf0[8], grf1[0] -> grf0[12]
  mncore.alu 16 "fmin" fwd[0], lm1[0] -> grf1[8]
  mncore.alu 17 "fmadd" fwd[0], grf0[12], grf1[8] -> lm0[4]
  mncore.alu 18 "fpass" fwd[0] -> grf0[16]
  mncore.alu 19 "fneg" grf0[16] -> grf0[20]
  mncore.alu 20 "fexp" fwd[0] -> grf1[12]
  mncore.alu 21 "flog" grf1[12] -> grf1[16]
  mncore.alu 22 "frsqrt" fwd[0] -> grf0[24]
  mncore.alu 23 "frecip" fwd[0] -> grf1[60] {note = "last"}
  mncore.alu 24 "fzero" -> lm1[252]
  mncore.l1 24 "gather" grf0[24] -> l1bm[960]
  mncore.l1 25 "reduce" lm0[4] -> l1bm[192]
  mncore.alu 27 "fzero" -> grf1[20]
  mncore.l2 27 "gather" l1bm[960] -> l2bm[3968] words 64
  // All six slots in one step.
  mncore.alu 28 "fadd" fwd[0], grf0[0] -> lm1[8]
  mncore.mau 28 "mma" lm0[240], fwd[0], grf1[0] -> grf1[24]
  mncore.l1 28 "bcast" l1bm[0] -> grf0[32]
  mncore.l2 28 "reduce" l1bm[192] -> l2bm[256] words 4
  mncore.dma 28 "store" l2bm[3968] -> dram[256] words 128 tag 3
  mncore.wait 28 tag 2
  mncore.dma 32 "store" l2bm[256] -> dram[128] words 4 tag 3
  mncore.wait 33 tag 3 {note = "end"}
  // Strided DMAs: 4 runs of 2 words, 10 apart; a load may repeat a word (stride 0).
  mncore.dma 34 "load" dram[0] -> l2bm[0] words 8 run 2 stride 10 tag 4
  mncore.dma 35 "load" dram[7] -> l2bm[8] words 4 run 1 stride 0 tag 4
  // Rows: 3 rows of 2 runs of 1 word 2 apart, rows 16 apart (a window's rows); 2
  // contiguous rows of 4, 8 apart.
  mncore.dma 36 "store" l2bm[16] -> dram[512] words 6 run 1 stride 2 rows 3 pitch 16 tag 4
  mncore.dma 37 "load" dram[600] -> l2bm[32] words 8 rows 2 pitch 8 tag 4
  mncore.wait 38 tag 4
  // A masked write: only the words whose grf0[40] word is not zero.
  mncore.alu 38 "fpass" lm0[0] -> grf1[40] mask grf0[40]
  // Rows that interleave (2 rows of runs of 1 word 2 apart, 1 apart): a store whose
  // rows' spans overlap but whose words do not (columns of C, JC apart).
  mncore.dma 39 "store" l2bm[48] -> dram[700] words 8 run 1 stride 2 rows 2 pitch 1 tag 5
  mncore.wait 40 tag 5
}

// CHECK-LABEL: mncore.program @tiny_all machine "tiny" {
// CHECK-NEXT:  mncore.tensor @x input dram[0] : tensor<2x16xf32>
// CHECK-NEXT:  mncore.tensor @w input dram[32] : tensor<64xf32>
// CHECK-NEXT:  mncore.tensor @y output dram[128] : tensor<4xf32>
// CHECK-NEXT:  mncore.tensor @z output dram[256] : tensor<2x64xf32>
// CHECK-NEXT:  mncore.buffer @a lm0[0] words 16
// CHECK-NEXT:  mncore.buffer @acc grf1[0] words 4
// CHECK-NEXT:  mncore.buffer @stage l2bm[0] words 96
// CHECK-NEXT:  mncore.buffer @top grf1[60] words 4
// CHECK-NEXT:  mncore.buffer @xt dram[0] words 32 shape [16, 2] strides [1, 16]{{$}}
// CHECK-NEXT:  mncore.dma 0 "load" dram[0] -> l2bm[0] words 32 tag 1{{$}}
// CHECK-NEXT:  mncore.dma 1 "load" dram[32] -> l2bm[32] words 64 tag 2 {note = "weights"}{{$}}
// CHECK-NEXT:  mncore.wait 2 tag 1{{$}}
// CHECK-NEXT:  mncore.l2 3 "scatter" l2bm[0] -> l1bm[0] words 16 lanes 20{{$}}
// CHECK-NEXT:  mncore.wait 3 tag 2{{$}}
// CHECK-NEXT:  mncore.l2 4 "bcast" l2bm[32] -> l1bm[64] words 64{{$}}
// CHECK-NEXT:  mncore.l1 8 "bcast" l1bm[0] -> grf0[0]{{$}}
// CHECK-NEXT:  mncore.l1 9 "scatter" l1bm[64] -> lm0[0]{{$}}
// CHECK-NEXT:  mncore.alu 12 "fadd" lm0[0], grf0[0] -> grf1[0]{{$}}
// CHECK-NEXT:  mncore.l1 12 "bcast" l1bm[4] -> grf0[4]{{$}}
// CHECK-NEXT:  mncore.alu 13 "fmul" fwd[0], grf0[4] -> lm1[0]{{$}}
// CHECK-NEXT:  mncore.mau 13 "mma" lm0[0], fwd[0], grf1[0] -> grf1[4] {flops = 1024 : i64}{{$}}
// CHECK-NEXT:  mncore.alu 14 "fsub" fwd[0], grf1[4] -> grf0[8]{{$}}
// CHECK-NEXT:  mncore.alu 15 "fmax" grf0[8], grf1[0] -> grf0[12]{{$}}
// CHECK-NEXT:  mncore.alu 16 "fmin" fwd[0], lm1[0] -> grf1[8]{{$}}
// CHECK-NEXT:  mncore.alu 17 "fmadd" fwd[0], grf0[12], grf1[8] -> lm0[4]{{$}}
// CHECK-NEXT:  mncore.alu 18 "fpass" fwd[0] -> grf0[16]{{$}}
// CHECK-NEXT:  mncore.alu 19 "fneg" grf0[16] -> grf0[20]{{$}}
// CHECK-NEXT:  mncore.alu 20 "fexp" fwd[0] -> grf1[12]{{$}}
// CHECK-NEXT:  mncore.alu 21 "flog" grf1[12] -> grf1[16]{{$}}
// CHECK-NEXT:  mncore.alu 22 "frsqrt" fwd[0] -> grf0[24]{{$}}
// CHECK-NEXT:  mncore.alu 23 "frecip" fwd[0] -> grf1[60] {note = "last"}{{$}}
// CHECK-NEXT:  mncore.alu 24 "fzero" -> lm1[252]{{$}}
// CHECK-NEXT:  mncore.l1 24 "gather" grf0[24] -> l1bm[960]{{$}}
// CHECK-NEXT:  mncore.l1 25 "reduce" lm0[4] -> l1bm[192]{{$}}
// CHECK-NEXT:  mncore.alu 27 "fzero" -> grf1[20]{{$}}
// CHECK-NEXT:  mncore.l2 27 "gather" l1bm[960] -> l2bm[3968] words 64{{$}}
// CHECK-NEXT:  mncore.alu 28 "fadd" fwd[0], grf0[0] -> lm1[8]{{$}}
// CHECK-NEXT:  mncore.mau 28 "mma" lm0[240], fwd[0], grf1[0] -> grf1[24]{{$}}
// CHECK-NEXT:  mncore.l1 28 "bcast" l1bm[0] -> grf0[32]{{$}}
// CHECK-NEXT:  mncore.l2 28 "reduce" l1bm[192] -> l2bm[256] words 4{{$}}
// CHECK-NEXT:  mncore.dma 28 "store" l2bm[3968] -> dram[256] words 128 tag 3{{$}}
// CHECK-NEXT:  mncore.wait 28 tag 2{{$}}
// CHECK-NEXT:  mncore.dma 32 "store" l2bm[256] -> dram[128] words 4 tag 3{{$}}
// CHECK-NEXT:  mncore.wait 33 tag 3 {note = "end"}{{$}}
// CHECK-NEXT:  mncore.dma 34 "load" dram[0] -> l2bm[0] words 8 run 2 stride 10 tag 4{{$}}
// CHECK-NEXT:  mncore.dma 35 "load" dram[7] -> l2bm[8] words 4 run 1 stride 0 tag 4{{$}}
// CHECK-NEXT:  mncore.dma 36 "store" l2bm[16] -> dram[512] words 6 run 1 stride 2 rows 3 pitch 16 tag 4{{$}}
// CHECK-NEXT:  mncore.dma 37 "load" dram[600] -> l2bm[32] words 8 rows 2 pitch 8 tag 4{{$}}
// CHECK-NEXT:  mncore.wait 38 tag 4{{$}}
// CHECK-NEXT:  mncore.alu 38 "fpass" lm0[0] -> grf1[40] mask grf0[40]{{$}}
// CHECK-NEXT:  mncore.dma 39 "store" l2bm[48] -> dram[700] words 8 run 1 stride 2 rows 2 pitch 1 tag 5{{$}}
// CHECK-NEXT:  mncore.wait 40 tag 5{{$}}
// CHECK-NEXT:  }

// The generic form: instructions are ops with no operands or results and the
// properties step, kind, srcs (a list of #mncore.ref, empty for fzero and wait), dst,
// words and tag; a wait has the empty kind and no dst.
// GENERIC-LABEL: "mncore.program"() <{sym_name = "tiny_all", machine = "tiny"}> ({
// GENERIC-NEXT:  "mncore.tensor"() <{sym_name = "x", role = "input", at = #mncore.ref<dram[0]>, type = tensor<2x16xf32>}> : () -> ()
// GENERIC-NEXT:  "mncore.tensor"() <{sym_name = "w", role = "input", at = #mncore.ref<dram[32]>, type = tensor<64xf32>}> : () -> ()
// GENERIC-NEXT:  "mncore.tensor"() <{sym_name = "y", role = "output", at = #mncore.ref<dram[128]>, type = tensor<4xf32>}> : () -> ()
// GENERIC-NEXT:  "mncore.tensor"() <{sym_name = "z", role = "output", at = #mncore.ref<dram[256]>, type = tensor<2x64xf32>}> : () -> ()
// GENERIC-NEXT:  "mncore.buffer"() <{sym_name = "a", at = #mncore.ref<lm0[0]>, words = 16 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.buffer"() <{sym_name = "acc", at = #mncore.ref<grf1[0]>, words = 4 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.buffer"() <{sym_name = "stage", at = #mncore.ref<l2bm[0]>, words = 96 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.buffer"() <{sym_name = "top", at = #mncore.ref<grf1[60]>, words = 4 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.buffer"() <{sym_name = "xt", at = #mncore.ref<dram[0]>, words = 32 : i64, shape = array<i64: 16, 2>, strides = array<i64: 1, 16>}> : () -> ()
// GENERIC-NEXT:  "mncore.dma"() <{step = 0 : i64, kind = "load", srcs = [#mncore.ref<dram[0]>], dst = #mncore.ref<l2bm[0]>, words = 32 : i64, tag = 1 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.dma"() <{step = 1 : i64, kind = "load", srcs = [#mncore.ref<dram[32]>], dst = #mncore.ref<l2bm[32]>, words = 64 : i64, tag = 2 : i64}> {note = "weights"} : () -> ()
// GENERIC-NEXT:  "mncore.wait"() <{step = 2 : i64, kind = "", srcs = [], tag = 1 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.l2"() <{step = 3 : i64, kind = "scatter", srcs = [#mncore.ref<l2bm[0]>], dst = #mncore.ref<l1bm[0]>, words = 16 : i64, lanes = 20 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.wait"() <{step = 3 : i64, kind = "", srcs = [], tag = 2 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.l2"() <{step = 4 : i64, kind = "bcast", srcs = [#mncore.ref<l2bm[32]>], dst = #mncore.ref<l1bm[64]>, words = 64 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.l1"() <{step = 8 : i64, kind = "bcast", srcs = [#mncore.ref<l1bm[0]>], dst = #mncore.ref<grf0[0]>}> : () -> ()
// GENERIC-NEXT:  "mncore.l1"() <{step = 9 : i64, kind = "scatter", srcs = [#mncore.ref<l1bm[64]>], dst = #mncore.ref<lm0[0]>}> : () -> ()
// GENERIC-NEXT:  "mncore.alu"() <{step = 12 : i64, kind = "fadd", srcs = [#mncore.ref<lm0[0]>, #mncore.ref<grf0[0]>], dst = #mncore.ref<grf1[0]>}> : () -> ()
// GENERIC-NEXT:  "mncore.l1"() <{step = 12 : i64, kind = "bcast", srcs = [#mncore.ref<l1bm[4]>], dst = #mncore.ref<grf0[4]>}> : () -> ()
// GENERIC-NEXT:  "mncore.alu"() <{step = 13 : i64, kind = "fmul", srcs = [#mncore.ref<fwd[0]>, #mncore.ref<grf0[4]>], dst = #mncore.ref<lm1[0]>}> : () -> ()
// GENERIC-NEXT:  "mncore.mau"() <{step = 13 : i64, kind = "mma", srcs = [#mncore.ref<lm0[0]>, #mncore.ref<fwd[0]>, #mncore.ref<grf1[0]>], dst = #mncore.ref<grf1[4]>}> {flops = 1024 : i64} : () -> ()
// GENERIC:       "mncore.alu"() <{step = 17 : i64, kind = "fmadd", srcs = [#mncore.ref<fwd[0]>, #mncore.ref<grf0[12]>, #mncore.ref<grf1[8]>], dst = #mncore.ref<lm0[4]>}> : () -> ()
// GENERIC:       "mncore.alu"() <{step = 24 : i64, kind = "fzero", srcs = [], dst = #mncore.ref<lm1[252]>}> : () -> ()
// GENERIC-NEXT:  "mncore.l1"() <{step = 24 : i64, kind = "gather", srcs = [#mncore.ref<grf0[24]>], dst = #mncore.ref<l1bm[960]>}> : () -> ()
// GENERIC-NEXT:  "mncore.l1"() <{step = 25 : i64, kind = "reduce", srcs = [#mncore.ref<lm0[4]>], dst = #mncore.ref<l1bm[192]>}> : () -> ()
// GENERIC:       "mncore.dma"() <{step = 32 : i64, kind = "store", srcs = [#mncore.ref<l2bm[256]>], dst = #mncore.ref<dram[128]>, words = 4 : i64, tag = 3 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.wait"() <{step = 33 : i64, kind = "", srcs = [], tag = 3 : i64}> {note = "end"} : () -> ()
// GENERIC-NEXT:  "mncore.dma"() <{step = 34 : i64, kind = "load", srcs = [#mncore.ref<dram[0]>], dst = #mncore.ref<l2bm[0]>, words = 8 : i64, run = 2 : i64, stride = 10 : i64, tag = 4 : i64}> : () -> ()
// GENERIC:       "mncore.dma"() <{step = 36 : i64, kind = "store", srcs = [#mncore.ref<l2bm[16]>], dst = #mncore.ref<dram[512]>, words = 6 : i64, run = 1 : i64, stride = 2 : i64, rows = 3 : i64, pitch = 16 : i64, tag = 4 : i64}> : () -> ()
// GENERIC:       "mncore.wait"() <{step = 38 : i64, kind = "", srcs = [], tag = 4 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.alu"() <{step = 38 : i64, kind = "fpass", srcs = [#mncore.ref<lm0[0]>], dst = #mncore.ref<grf1[40]>, mask = #mncore.ref<grf0[40]>}> : () -> ()
// GENERIC-NEXT:  "mncore.dma"() <{step = 39 : i64, kind = "store", srcs = [#mncore.ref<l2bm[48]>], dst = #mncore.ref<dram[700]>, words = 8 : i64, run = 1 : i64, stride = 2 : i64, rows = 2 : i64, pitch = 1 : i64, tag = 5 : i64}> : () -> ()
// GENERIC-NEXT:  "mncore.wait"() <{step = 40 : i64, kind = "", srcs = [], tag = 5 : i64}> : () -> ()
// GENERIC-NEXT:  }) : () -> ()

// mncore2: 4096 PEs, 64 per L1B (an L1 block is 256 words), 8 L1Bs per L2B; LM 2048,
// GRF 256 words. A matrix read by mma (16 words) may end at the last LM word; fwd may
// be read twice; in a step where the ALU and the MAU both produce, the next step's
// fwd is the ALU's (the verifier only asks that one of them produced).
mncore.program @mncore2_all machine "mncore2" {
  mncore.tensor @x input dram[0] : tensor<16x16xf32>
  mncore.tensor @y output dram[1000000] : tensor<8x64xf32>
  mncore.buffer @m lm0[2032] words 16
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 256 tag 7
  mncore.wait 1 tag 7
  mncore.l2 2 "scatter" l2bm[0] -> l1bm[0] words 32
  mncore.l2 3 "bcast" l2bm[0] -> l1bm[256] words 16
  mncore.l1 7 "scatter" l1bm[0] -> lm0[2032]
  mncore.l1 8 "bcast" l1bm[256] -> grf0[252]
  mncore.alu 11 "fzero" -> lm1[0]
  mncore.l1 11 "bcast" l1bm[260] -> grf1[0]
  mncore.alu 12 "fadd" lm0[2032], grf0[252] -> grf1[4]
  mncore.alu 13 "fsub" fwd[0], grf1[0] -> grf0[0]
  mncore.alu 14 "fmul" fwd[0], fwd[0] -> grf0[4]
  mncore.alu 15 "fmax" fwd[0], grf0[0] -> grf0[8]
  mncore.mau 15 "mma" lm0[2032], fwd[0], grf1[4] -> lm1[4]
  mncore.alu 16 "fmin" fwd[0], grf1[4] -> grf1[8]
  mncore.alu 17 "fpass" fwd[0] -> grf0[12]
  mncore.alu 18 "fmadd" fwd[0], grf0[8], lm1[4] -> grf1[12]
  mncore.alu 19 "fneg" fwd[0] -> grf0[16]
  mncore.alu 20 "fexp" fwd[0] -> grf0[20]
  mncore.alu 21 "flog" fwd[0] -> grf0[24]
  mncore.alu 22 "frsqrt" fwd[0] -> grf0[28]
  mncore.alu 23 "frecip" fwd[0] -> lm0[0]
  mncore.l1 24 "gather" grf0[28] -> l1bm[512]
  mncore.l1 26 "reduce" lm0[0] -> l1bm[768]
  mncore.l2 27 "gather" l1bm[512] -> l2bm[1024] words 64
  mncore.l2 29 "reduce" l1bm[768] -> l2bm[2048] words 4
  mncore.dma 33 "store" l2bm[1024] -> dram[1000000] words 512 tag 8
  mncore.wait 34 tag 8
}

// CHECK-LABEL: mncore.program @mncore2_all machine "mncore2" {
// CHECK-NEXT:  mncore.tensor @x input dram[0] : tensor<16x16xf32>
// CHECK-NEXT:  mncore.tensor @y output dram[1000000] : tensor<8x64xf32>
// CHECK-NEXT:  mncore.buffer @m lm0[2032] words 16
// CHECK-NEXT:  mncore.dma 0 "load" dram[0] -> l2bm[0] words 256 tag 7{{$}}
// CHECK-NEXT:  mncore.wait 1 tag 7{{$}}
// CHECK-NEXT:  mncore.l2 2 "scatter" l2bm[0] -> l1bm[0] words 32{{$}}
// CHECK-NEXT:  mncore.l2 3 "bcast" l2bm[0] -> l1bm[256] words 16{{$}}
// CHECK-NEXT:  mncore.l1 7 "scatter" l1bm[0] -> lm0[2032]{{$}}
// CHECK-NEXT:  mncore.l1 8 "bcast" l1bm[256] -> grf0[252]{{$}}
// CHECK-NEXT:  mncore.alu 11 "fzero" -> lm1[0]{{$}}
// CHECK-NEXT:  mncore.l1 11 "bcast" l1bm[260] -> grf1[0]{{$}}
// CHECK-NEXT:  mncore.alu 12 "fadd" lm0[2032], grf0[252] -> grf1[4]{{$}}
// CHECK-NEXT:  mncore.alu 13 "fsub" fwd[0], grf1[0] -> grf0[0]{{$}}
// CHECK-NEXT:  mncore.alu 14 "fmul" fwd[0], fwd[0] -> grf0[4]{{$}}
// CHECK-NEXT:  mncore.alu 15 "fmax" fwd[0], grf0[0] -> grf0[8]{{$}}
// CHECK-NEXT:  mncore.mau 15 "mma" lm0[2032], fwd[0], grf1[4] -> lm1[4]{{$}}
// CHECK-NEXT:  mncore.alu 16 "fmin" fwd[0], grf1[4] -> grf1[8]{{$}}
// CHECK-NEXT:  mncore.alu 17 "fpass" fwd[0] -> grf0[12]{{$}}
// CHECK-NEXT:  mncore.alu 18 "fmadd" fwd[0], grf0[8], lm1[4] -> grf1[12]{{$}}
// CHECK-NEXT:  mncore.alu 19 "fneg" fwd[0] -> grf0[16]{{$}}
// CHECK-NEXT:  mncore.alu 20 "fexp" fwd[0] -> grf0[20]{{$}}
// CHECK-NEXT:  mncore.alu 21 "flog" fwd[0] -> grf0[24]{{$}}
// CHECK-NEXT:  mncore.alu 22 "frsqrt" fwd[0] -> grf0[28]{{$}}
// CHECK-NEXT:  mncore.alu 23 "frecip" fwd[0] -> lm0[0]{{$}}
// CHECK-NEXT:  mncore.l1 24 "gather" grf0[28] -> l1bm[512]{{$}}
// CHECK-NEXT:  mncore.l1 26 "reduce" lm0[0] -> l1bm[768]{{$}}
// CHECK-NEXT:  mncore.l2 27 "gather" l1bm[512] -> l2bm[1024] words 64{{$}}
// CHECK-NEXT:  mncore.l2 29 "reduce" l1bm[768] -> l2bm[2048] words 4{{$}}
// CHECK-NEXT:  mncore.dma 33 "store" l2bm[1024] -> dram[1000000] words 512 tag 8{{$}}
// CHECK-NEXT:  mncore.wait 34 tag 8{{$}}
// CHECK-NEXT:  }

// GENERIC-LABEL: "mncore.program"() <{sym_name = "mncore2_all", machine = "mncore2"}> ({
// GENERIC:       "mncore.alu"() <{step = 14 : i64, kind = "fmul", srcs = [#mncore.ref<fwd[0]>, #mncore.ref<fwd[0]>], dst = #mncore.ref<grf0[4]>}> : () -> ()
// GENERIC:       "mncore.mau"() <{step = 15 : i64, kind = "mma", srcs = [#mncore.ref<lm0[2032]>, #mncore.ref<fwd[0]>, #mncore.ref<grf1[4]>], dst = #mncore.ref<lm1[4]>}> : () -> ()
// GENERIC:       "mncore.wait"() <{step = 34 : i64, kind = "", srcs = [], tag = 8 : i64}> : () -> ()
// GENERIC-NEXT:  }) : () -> ()

// A program with one instruction, and the #mncore.ref attribute in its own syntax
// (as a discardable attribute).
mncore.program @one machine "tiny" {
  mncore.alu 0 "fzero" -> grf0[0] {at = #mncore.ref<l2bm[7]>}
}

// CHECK-LABEL: mncore.program @one machine "tiny" {
// CHECK-NEXT:  mncore.alu 0 "fzero" -> grf0[0] {at = #mncore.ref<l2bm[7]>}{{$}}
// CHECK-NEXT:  }

// GENERIC-LABEL: "mncore.program"() <{sym_name = "one", machine = "tiny"}> ({
// GENERIC-NEXT:  "mncore.alu"() <{step = 0 : i64, kind = "fzero", srcs = [], dst = #mncore.ref<grf0[0]>}> {at = #mncore.ref<l2bm[7]>} : () -> ()
// GENERIC-NEXT:  }) : () -> ()

// An empty program, and discardable attributes on programs, tensors and buffers.
mncore.program @empty machine "tiny" {
}
mncore.program @noted machine "tiny" attributes {note = "kept"} {
  mncore.tensor @x input dram[0] : tensor<4xf32> {origin = "arg0"}
  mncore.buffer @h lm0[0] words 4 {live = 3 : i64}
}

// CHECK-LABEL: mncore.program @empty machine "tiny" {
// CHECK-NEXT:  }
// CHECK-LABEL: mncore.program @noted machine "tiny" attributes {note = "kept"} {
// CHECK-NEXT:    mncore.tensor @x input dram[0] : tensor<4xf32> {origin = "arg0"}
// CHECK-NEXT:    mncore.buffer @h lm0[0] words 4 {live = 3 : i64}
// CHECK-NEXT:  }

// A repeated group (mncore.repeat STEP count N period P): iteration i issues each body
// instruction at STEP + i P + its own step, with every reference `space[a + s * i]` at
// word a + s i (a stride of 0 prints as a plain reference). Iterations overlap: each of
// these 8 iterations of 2 L1 broadcasts and 2 multiply-adds spans 5 steps, 4 apart; an
// iteration's broadcast rewrites a vector in the step the previous one's MAU reads it
// (a bundle reads before it writes). The accumulators are read and written by every
// iteration, the matrices advance 16 words a pass in each LM, the vectors come from
// L1BM 8 words a pass. The program runs without a hazard (mncore-run checks it).
mncore.program @tiny_repeat machine "tiny" {
  mncore.alu 0 "fzero" -> grf1[0]
  mncore.alu 1 "fzero" -> grf1[4]
  mncore.repeat 3 count 8 period 4 {
    mncore.l1 0 "bcast" l1bm[0 + 8 * i] -> grf0[0]
    mncore.l1 1 "bcast" l1bm[4 + 8 * i] -> grf0[4]
    mncore.mau 3 "mma" lm0[128 + 16 * i], grf0[0], grf1[0] -> grf1[0]
    mncore.mau 4 "vmm" lm1[128 + 16 * i], grf0[4], grf1[4] -> grf1[4] {note = "odd"}
  }
  mncore.l1 37 "gather" grf1[0] -> l1bm[512]
  mncore.l1 38 "gather" grf1[4] -> l1bm[576]
}

// CHECK-LABEL: mncore.program @tiny_repeat machine "tiny" {
// CHECK-NEXT:  mncore.alu 0 "fzero" -> grf1[0]{{$}}
// CHECK-NEXT:  mncore.alu 1 "fzero" -> grf1[4]{{$}}
// CHECK-NEXT:  mncore.repeat 3 count 8 period 4 {
// CHECK-NEXT:    mncore.l1 0 "bcast" l1bm[0 + 8 * i] -> grf0[0]{{$}}
// CHECK-NEXT:    mncore.l1 1 "bcast" l1bm[4 + 8 * i] -> grf0[4]{{$}}
// CHECK-NEXT:    mncore.mau 3 "mma" lm0[128 + 16 * i], grf0[0], grf1[0] -> grf1[0]{{$}}
// CHECK-NEXT:    mncore.mau 4 "vmm" lm1[128 + 16 * i], grf0[4], grf1[4] -> grf1[4] {note = "odd"}{{$}}
// CHECK-NEXT:  }
// CHECK-NEXT:  mncore.l1 37 "gather" grf1[0] -> l1bm[512]{{$}}
// CHECK-NEXT:  mncore.l1 38 "gather" grf1[4] -> l1bm[576]{{$}}
// CHECK-NEXT:  }

// GENERIC-LABEL: "mncore.program"() <{sym_name = "tiny_repeat", machine = "tiny"}> ({
// GENERIC:       "mncore.repeat"() <{step = 3 : i64, count = 8 : i64, period = 4 : i64}> ({
// GENERIC-NEXT:    "mncore.l1"() <{step = 0 : i64, kind = "bcast", srcs = [#mncore.ref<l1bm[0]>], dst = #mncore.ref<grf0[0]>, strides = array<i64: 8, 0>}> : () -> ()
// GENERIC:         "mncore.mau"() <{step = 3 : i64, kind = "mma", srcs = [#mncore.ref<lm0[128]>, #mncore.ref<grf0[0]>, #mncore.ref<grf1[0]>], dst = #mncore.ref<grf1[0]>, strides = array<i64: 16, 0, 0, 0>}> : () -> ()
// GENERIC:       }) : () -> ()
