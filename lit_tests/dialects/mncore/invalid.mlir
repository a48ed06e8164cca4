// Verifier failures of the mncore dialect, one chunk per failure (chunks are split on
// the dashed separator lines): the parse errors of the custom syntax (machine, memory
// space, tensor role), every check of the instructions' verify_ (kind, operand count,
// the spaces a slot can reach), and ProgramOp's assembler rules (dialects/mncore.py):
// bounds of every memory, issue order, one instruction per slot per step, the LM and
// GRF port rules, fwd, the mma matrix, tags; tensors in dram; the parent-op traits.
// mncore-opt reports each as a parse error at the first token of the op to blame (an
// instruction, a tensor, a buffer, or the program for its own checks):
// `file:line:col`, the source line, a caret and the message.
// RUN: mncore-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// ==== machine, spaces, kinds

// A machine that dialects/mncore_machines.py does not know.
mncore.program @p machine "big" {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:27
  // CHECK-NEXT: mncore.program @p machine "big" {
  // CHECK-NEXT: ^^^^^^
  // CHECK-NEXT: unknown machine 'big'; machines: mncore2, tiny
  mncore.wait 0 tag 1
}

// -----

// The same in the generic form: the program's verifier.
"mncore.program"() <{sym_name = "p", machine = "big"}> ({
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: "mncore.program"() <{sym_name = "p", machine = "big"}> ({
  // CHECK-NEXT: ^^^^^^^^^^^^^^^^
  // CHECK-NEXT: unknown machine 'big'
  "mncore.wait"() <{step = 0 : i64, kind = "", srcs = [], tag = 1 : i64}> : () -> ()
}) : () -> ()

// -----

// An unknown memory space in a source (after the first: see the report for the first).
mncore.program @p machine "tiny" {
  mncore.alu 0 "fadd" lm0[0], lm2[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:31
  // CHECK-NEXT: mncore.alu 0 "fadd" lm0[0], lm2[0] -> lm1[0]
  // CHECK-NEXT: ^^^{{$}}
  // CHECK-NEXT: unknown memory space 'lm2'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd
}

// -----

// An unknown memory space as a destination.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fneg" lm0[0] -> hbm[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:33
  // CHECK-NEXT: mncore.alu 0 "fneg" lm0[0] -> hbm[0]
  // CHECK-NEXT: ^^^{{$}}
  // CHECK-NEXT: unknown memory space 'hbm'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd
}

// -----

// An unknown memory space for a tensor.
mncore.program @p machine "tiny" {
  mncore.tensor @x input hbm[0] : tensor<4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:26
  // CHECK-NEXT: mncore.tensor @x input hbm[0] : tensor<4xf32>
  // CHECK-NEXT: ^^^{{$}}
  // CHECK-NEXT: unknown memory space 'hbm'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd
}

// -----

// A tensor is an input, an output or a constant.
mncore.program @p machine "tiny" {
  mncore.tensor @x inout dram[0] : tensor<4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:20
  // CHECK-NEXT: mncore.tensor @x inout dram[0] : tensor<4xf32>
  // CHECK-NEXT: ^^^^^{{$}}
  // CHECK-NEXT: a tensor is an input, an output or a constant
}

// -----

// An ALU kind that does not exist.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fdiv" lm0[0], grf0[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fdiv" lm0[0], grf0[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu has no kind 'fdiv'; kinds: fadd, fsub, fmul, fmax, fmin, fmadd, fpass, fneg, fexp, flog, frsqrt, frecip, fzero
}

// -----

// An L1 kind that does not exist.
mncore.program @p machine "tiny" {
  mncore.l1 0 "copy" l1bm[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "copy" l1bm[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l1 has no kind 'copy'; kinds: bcast, scatter, gather, reduce
}

// -----

// A MAU kind that does not exist.
mncore.program @p machine "tiny" {
  mncore.mau 0 "mmt" lm0[0], grf0[0], grf1[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 0 "mmt" lm0[0], grf0[0], grf1[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.mau has no kind 'mmt'; kinds: mma, vmm
}

// -----

// A DMA kind that does not exist.
mncore.program @p machine "tiny" {
  mncore.dma 0 "copy" dram[0] -> l2bm[0] words 4 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "copy" dram[0] -> l2bm[0] words 4 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma has no kind 'copy'; kinds: load, store
  mncore.wait 1 tag 1
}

// -----

// ==== operand counts

// fmadd takes 3 sources.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fmadd" lm0[0], grf0[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fmadd" lm0[0], grf0[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu 'fmadd' takes 3 sources and a destination
}

// -----

// fzero takes none.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fzero" grf0[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fzero" grf0[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu 'fzero' takes 0 sources and a destination
}

// -----

// An ALU instruction without a destination.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fadd" lm0[0], grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fadd" lm0[0], grf0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu 'fadd' takes 2 sources and a destination
}

// -----

// mma without its addend.
mncore.program @p machine "tiny" {
  mncore.mau 0 "mma" lm0[0], grf0[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 0 "mma" lm0[0], grf0[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.mau 'mma' takes a matrix, a vector and an addend and a destination
}

// -----

// An L1 transfer with two sources.
mncore.program @p machine "tiny" {
  mncore.l1 0 "bcast" l1bm[0], l1bm[4] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "bcast" l1bm[0], l1bm[4] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l1 takes one source and a destination
}

// -----

// An L2 transfer without words.
mncore.program @p machine "tiny" {
  mncore.l2 0 "bcast" l2bm[0] -> l1bm[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l2 0 "bcast" l2bm[0] -> l1bm[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l2 takes one source, a destination and words
}

// -----

// ==== spaces a slot reaches

// The ALU writes PE memories only.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fadd" lm0[0], grf0[0] -> l1bm[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fadd" lm0[0], grf0[0] -> l1bm[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu 'fadd': the destination must be in lm0/lm1/grf0/grf1, not l1bm
}

// -----

// The ALU reads PE memories and fwd only.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fadd" dram[0], grf0[0] -> lm0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fadd" dram[0], grf0[0] -> lm0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu 'fadd': sources must be in lm0/lm1/grf0/grf1/fwd, not dram
}

// -----

// The MAU writes PE memories only.
mncore.program @p machine "tiny" {
  mncore.mau 0 "mma" lm0[0], grf0[0], grf1[0] -> l2bm[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 0 "mma" lm0[0], grf0[0], grf1[0] -> l2bm[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.mau 'mma': the destination must be in lm0/lm1/grf0/grf1, not l2bm
}

// -----

// An L1 bcast goes from L1BM to the PEs, not from an LM.
mncore.program @p machine "tiny" {
  mncore.l1 0 "bcast" lm0[0] -> grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "bcast" lm0[0] -> grf0[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l1 'bcast': the source must be in l1bm, not lm0
}

// -----

// An L1 gather goes from the PEs to L1BM.
mncore.program @p machine "tiny" {
  mncore.l1 0 "gather" grf0[0] -> lm0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "gather" grf0[0] -> lm0[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l1 'gather': the destination must be in l1bm, not lm0
}

// -----

// An L2 reduce goes from L1BM to L2BM.
mncore.program @p machine "tiny" {
  mncore.l2 0 "reduce" l2bm[0] -> l2bm[64] words 4
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l2 0 "reduce" l2bm[0] -> l2bm[64] words 4
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l2 'reduce': the source must be in l1bm, not l2bm
}

// -----

// A DMA load writes L2BM, not L1BM.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l1bm[0] words 4 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l1bm[0] words 4 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma 'load': the destination must be in l2bm, not l1bm
  mncore.wait 1 tag 1
}

// -----

// A DMA store reads L2BM.
mncore.program @p machine "tiny" {
  mncore.dma 0 "store" dram[0] -> l2bm[0] words 4 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "store" dram[0] -> l2bm[0] words 4 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma 'store': the source must be in l2bm, not dram
  mncore.wait 1 tag 1
}

// -----

// ==== bounds
// tiny has LM 256, GRF 64, L1BM 1024, L2BM 4096 and DRAM 2^20 words; an L1 block is
// 16 PEs x 4 words, an L2 gather block 2 L1BMs x words. ops.mlir has operands ending
// at the last word.

// 4 words from lm0[254].
mncore.program @p machine "tiny" {
  mncore.alu 0 "fneg" lm0[254] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fneg" lm0[254] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: lm0[254] + 4 words is beyond lm0 (256 words on tiny)
}

// -----

// A destination beyond a GRF.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fneg" lm0[0] -> grf1[61]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fneg" lm0[0] -> grf1[61]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: grf1[61] + 4 words is beyond grf1 (64 words on tiny)
}

// -----

// The mma matrix is 16 words.
mncore.program @p machine "tiny" {
  mncore.mau 0 "mma" lm0[241], grf0[0], grf1[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 0 "mma" lm0[241], grf0[0], grf1[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: lm0[241] + 16 words is beyond lm0 (256 words on tiny)
}

// -----

// An L1 scatter reads a 64-word block.
mncore.program @p machine "tiny" {
  mncore.l1 0 "scatter" l1bm[961] -> lm0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "scatter" l1bm[961] -> lm0[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: l1bm[961] + 64 words is beyond l1bm (1024 words on tiny)
}

// -----

// An L1 gather writes a 64-word block.
mncore.program @p machine "tiny" {
  mncore.l1 0 "gather" lm0[0] -> l1bm[961]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "gather" lm0[0] -> l1bm[961]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: l1bm[961] + 64 words is beyond l1bm (1024 words on tiny)
}

// -----

// An L2 gather of 48 words per L1BM writes 96 words (4000 + 96 would fit).
mncore.program @p machine "tiny" {
  mncore.l2 0 "gather" l1bm[0] -> l2bm[4001] words 48
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l2 0 "gather" l1bm[0] -> l2bm[4001] words 48
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: l2bm[4001] + 96 words is beyond l2bm (4096 words on tiny)
}

// -----

// A DMA beyond DRAM.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[1048572] -> l2bm[0] words 8 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[1048572] -> l2bm[0] words 8 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: dram[1048572] + 8 words is beyond dram (1048576 words on tiny)
  mncore.wait 1 tag 1
}

// -----

// Only the ALU takes a write mask.
mncore.program @p machine "tiny" {
  mncore.l1 0 "bcast" l1bm[0] -> lm0[0] mask grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 0 "bcast" l1bm[0] -> lm0[0] mask grf0[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.l1 takes no mask (only mncore.alu does)
}

// -----

// A mask lives in a PE's memory.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fpass" lm0[0] -> grf0[0] mask l1bm[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fpass" lm0[0] -> grf0[0] mask l1bm[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.alu 'fpass': the mask must be in lm0/lm1/grf0/grf1, not l1bm
}

// -----

// The mask takes a read port: with a GRF0 source, a GRF0 mask is a second read.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fpass" grf0[4] -> grf1[0] mask grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fpass" grf0[4] -> grf1[0] mask grf0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 0 has two reads of grf0: a GRF has one read and one write port
}

// -----

// A strided DMA whose last run is beyond DRAM: 4 runs, 350000 apart.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[100000] -> l2bm[0] words 8 run 2 stride 350000 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[100000] -> l2bm[0] words 8 run 2 stride 350000 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: dram[100000] + 1050002 words is beyond dram (1048576 words on tiny)
  mncore.wait 1 tag 1
}

// -----

// run without stride.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 2 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 2 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma takes run and stride together
  mncore.wait 1 tag 1
}

// -----

// A run that does not divide the words.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 3 stride 4 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 3 stride 4 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma: run 3 does not divide 8 words
  mncore.wait 1 tag 1
}

// -----

// A store whose runs overlap.
mncore.program @p machine "tiny" {
  mncore.dma 0 "store" l2bm[0] -> dram[0] words 8 run 4 stride 2 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "store" l2bm[0] -> dram[0] words 8 run 4 stride 2 tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma: stride 2 is shorter than run 4: a store would write a word twice
  mncore.wait 1 tag 1
}

// -----

// A tensor beyond DRAM: 24x24 = 576 words (at 1048000 it would fit).
mncore.program @p machine "tiny" {
  mncore.tensor @x input dram[1048001] : tensor<24x24xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.tensor @x input dram[1048001] : tensor<24x24xf32>
  // CHECK-NEXT: ^^^^^^^^^^^^^{{$}}
  // CHECK-NEXT: dram[1048001] + 576 words is beyond dram (1048576 words on tiny)
}

// -----

// A buffer beyond a GRF.
mncore.program @p machine "tiny" {
  mncore.buffer @b grf0[60] words 8
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.buffer @b grf0[60] words 8
  // CHECK-NEXT: ^^^^^^^^^^^^^{{$}}
  // CHECK-NEXT: grf0[60] + 8 words is beyond grf0 (64 words on tiny)
}

// -----

// The same bounds on mncore2 (LM 2048 words).
mncore.program @p machine "mncore2" {
  mncore.alu 0 "fneg" lm0[2045] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fneg" lm0[2045] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: lm0[2045] + 4 words is beyond lm0 (2048 words on mncore2)
}

// -----

// ==== issue order and slots

// Steps go down.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fzero" -> lm0[0]
  mncore.l1 3 "bcast" l1bm[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 3 "bcast" l1bm[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: step 3 comes after step 5: instructions must be in issue order
}

// -----

// Two ALU instructions in one step (other slots in between).
mncore.program @p machine "tiny" {
  mncore.alu 4 "fzero" -> lm0[0]
  mncore.l1 4 "bcast" l1bm[0] -> lm1[0]
  mncore.alu 4 "fzero" -> grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 4 "fzero" -> grf0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 4 already has an instruction in the alu slot
}

// -----

// Two DMAs in one step.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.dma 0 "load" dram[0] -> l2bm[4] words 4 tag 2
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l2bm[4] words 4 tag 2
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 0 already has an instruction in the dma slot
  mncore.wait 1 tag 1
  mncore.wait 2 tag 2
}

// -----

// Two waits in one step (the control slot).
mncore.program @p machine "tiny" {
  mncore.wait 0 tag 1
  mncore.wait 0 tag 2
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.wait 0 tag 2
  // CHECK-NEXT: ^^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 0 already has an instruction in the ctrl slot
}

// -----

// ==== LM and GRF ports

// An LM read by the ALU and written by an L1 transfer in one step.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" lm0[0] -> grf0[0]
  mncore.l1 5 "bcast" l1bm[0] -> lm0[4]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 5 "bcast" l1bm[0] -> lm0[4]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 uses lm0 twice: an LM is read or written once per step
}

// -----

// An LM read by two instructions in one step.
mncore.program @p machine "tiny" {
  mncore.l1 5 "gather" lm1[0] -> l1bm[0]
  mncore.alu 5 "fneg" lm1[4] -> grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 5 "fneg" lm1[4] -> grf0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 uses lm1 twice: an LM is read or written once per step
}

// -----

// An LM read twice by one instruction.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fadd" lm0[0], lm0[4] -> grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 5 "fadd" lm0[0], lm0[4] -> grf0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 uses lm0 twice: an LM is read or written once per step
}

// -----

// An LM read and written by one instruction.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" lm0[0] -> lm0[4]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 5 "fneg" lm0[0] -> lm0[4]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 uses lm0 twice: an LM is read or written once per step
}

// -----

// Two reads of a GRF by one instruction (one read and one write is fine: ops.mlir).
mncore.program @p machine "tiny" {
  mncore.alu 5 "fadd" grf0[0], grf0[4] -> lm0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 5 "fadd" grf0[0], grf0[4] -> lm0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 has two reads of grf0: a GRF has one read and one write port
}

// -----

// Two reads of a GRF by the ALU and the MAU in one step.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" grf1[0] -> lm0[0]
  mncore.mau 5 "mma" lm1[0], grf0[0], grf1[4] -> grf0[8]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 5 "mma" lm1[0], grf0[0], grf1[4] -> grf0[8]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 has two reads of grf1: a GRF has one read and one write port
}

// -----

// Two writes of a GRF in one step.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" lm0[0] -> grf1[0]
  mncore.l1 5 "bcast" l1bm[0] -> grf1[4]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 5 "bcast" l1bm[0] -> grf1[4]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 has two writes of grf1: a GRF has one read and one write port
}

// -----

// An LM read 2 steps after a write to it (another address: the whole LM is blocked;
// 3 steps after is fine: ops.mlir).
mncore.program @p machine "tiny" {
  mncore.alu 5 "fzero" -> lm1[8]
  mncore.alu 7 "fneg" lm1[0] -> grf0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 7 "fneg" lm1[0] -> grf0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 7 reads lm1, written at step 5: an LM cannot be read for 2 steps after a write
}

// -----

// An LM read by the MAU 1 step after an L1 transfer wrote it.
mncore.program @p machine "tiny" {
  mncore.l1 5 "bcast" l1bm[0] -> lm0[0]
  mncore.mau 6 "mma" lm0[0], grf0[0], grf1[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 6 "mma" lm0[0], grf0[0], grf1[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 6 reads lm0, written at step 5: an LM cannot be read for 2 steps after a write
}

// -----

// An LM read by an L1 reduce 2 steps after the ALU wrote it.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fzero" -> lm1[8]
  mncore.l1 7 "reduce" lm1[0] -> l1bm[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.l1 7 "reduce" lm1[0] -> l1bm[0]
  // CHECK-NEXT: ^^^^^^^^^{{$}}
  // CHECK-NEXT: step 7 reads lm1, written at step 5: an LM cannot be read for 2 steps after a write
}

// -----

// ==== fwd and mma

// fwd at the first step.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fneg" fwd[0] -> lm0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 0 "fneg" fwd[0] -> lm0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 0 reads fwd but step -1 has no ALU or MAU result
}

// -----

// fwd two steps after the ALU's result.
mncore.program @p machine "tiny" {
  mncore.alu 4 "fzero" -> lm0[0]
  mncore.alu 6 "fneg" fwd[0] -> lm0[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.alu 6 "fneg" fwd[0] -> lm0[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 6 reads fwd but step 5 has no ALU or MAU result
}

// -----

// fwd after an L1 transfer (not a result of the ALU or the MAU).
mncore.program @p machine "tiny" {
  mncore.l1 4 "bcast" l1bm[0] -> grf0[0]
  mncore.mau 5 "mma" lm0[0], fwd[0], grf1[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 5 "mma" lm0[0], fwd[0], grf1[0] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: step 5 reads fwd but step 4 has no ALU or MAU result
}

// -----

// The mma matrix (16 words) cannot come from fwd (4 words).
mncore.program @p machine "tiny" {
  mncore.alu 4 "fzero" -> grf0[0]
  mncore.mau 5 "mma" fwd[0], grf0[4], grf1[4] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.mau 5 "mma" fwd[0], grf0[4], grf1[4] -> lm1[0]
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.mau: the matrix cannot be forwarded
}

// -----

// ==== tags

// A wait without a tag.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.wait 1
  // CHECK-NEXT: ^^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.wait takes only a tag
}

// -----

// A wait with an operand.
mncore.program @p machine "tiny" {
  mncore.wait 1 l2bm[0] tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.wait 1 l2bm[0] tag 1
  // CHECK-NEXT: ^^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.wait takes only a tag
}

// -----

// A DMA without a tag.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l2bm[0] words 4
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma takes one source, a destination, words and a tag
}

// -----

// A DMA without words.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.dma 0 "load" dram[0] -> l2bm[0] tag 1
  // CHECK-NEXT: ^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.dma takes one source, a destination, words and a tag
  mncore.wait 1 tag 1
}

// -----

// ==== tensors, nesting

// A tensor lives in DRAM.
mncore.program @p machine "tiny" {
  mncore.tensor @x input l2bm[0] : tensor<4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.tensor @x input l2bm[0] : tensor<4xf32>
  // CHECK-NEXT: ^^^^^^^^^^^^^{{$}}
  // CHECK-NEXT: mncore.tensor lives in dram
}

// -----

// Two tensors of one name (the program is a symbol table).
mncore.program @p machine "tiny" {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: mncore.program @p machine "tiny" {
  // CHECK-NEXT: ^^^^^^^^^^^^^^{{$}}
  // CHECK-NEXT: Redefinition of symbol "x"
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @x output dram[4] : tensor<4xf32>
}

// -----

// An instruction outside a program.
mncore.alu 0 "fzero" -> lm0[0]
// CHECK:      invalid.mlir:[[# @LINE - 1]]:1
// CHECK-NEXT: mncore.alu 0 "fzero" -> lm0[0]
// CHECK-NEXT: ^^^^^^^^^^{{$}}
// CHECK-NEXT: 'mncore.alu' expects parent op 'mncore.program'

// -----

// An instruction in a function.
func.func @f() {
  mncore.wait 0 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: mncore.wait 0 tag 1
  // CHECK-NEXT: ^^^^^^^^^^^{{$}}
  // CHECK-NEXT: 'mncore.wait' expects parent op 'mncore.program'
  func.return
}

// -----

// A tensor outside a program.
mncore.tensor @x input dram[0] : tensor<4xf32>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:1
// CHECK-NEXT: mncore.tensor @x input dram[0] : tensor<4xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^{{$}}
// CHECK-NEXT: 'mncore.tensor' expects parent op 'mncore.program'

// -----

// A buffer outside a program.
mncore.buffer @b lm0[0] words 4
// CHECK:      invalid.mlir:[[# @LINE - 1]]:1
// CHECK-NEXT: mncore.buffer @b lm0[0] words 4
// CHECK-NEXT: ^^^^^^^^^^^^^{{$}}
// CHECK-NEXT: 'mncore.buffer' expects parent op 'mncore.program'

// -----

// ==== fixes after review

// An unknown memory space in the first source.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fadd" lm2[0], lm0[0] -> lm1[0]
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:23
  // CHECK-NEXT: mncore.alu 0 "fadd" lm2[0], lm0[0] -> lm1[0]
  // CHECK-NEXT: ^^^{{$}}
  // CHECK-NEXT: unknown memory space 'lm2'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd
}

// -----

// Only tensors, buffers and instructions belong in a program.
mncore.program @p machine "tiny" {
  %c = graph.constant dense<1.0> : tensor<f32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      graph.constant cannot be in an mncore.program: it holds tensors, buffers and instructions
}

// -----

// A wait has no kind.
mncore.program @p machine "tiny" {
  mncore.wait 2 "bogus" tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      mncore.wait takes only a tag
}

// -----

// words and tag only where the instruction uses them.
mncore.program @p machine "tiny" {
  mncore.alu 0 "fzero" -> lm0[0] words 9
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      mncore.alu takes no words
}

// -----

mncore.program @p machine "tiny" {
  mncore.l1 0 "bcast" l1bm[0] -> lm0[0] tag 3
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      mncore.l1 takes no tag
}

// -----

mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 0 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      mncore.dma moves at least 1 word
  mncore.wait 5 tag 1
}

// -----

mncore.program @p machine "tiny" {
  mncore.buffer @b fwd[7] words 4
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      mncore.buffer cannot live in fwd
}

// -----

// A wait acts before its bundle issues: it cannot cover a DMA of the same step.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 0 tag 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      step 0 waits on tag 1 issued in the same step: a wait takes effect before its bundle issues
}
