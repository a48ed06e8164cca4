// Verifier failures of the mncore dialect, one chunk per failure (chunks are split on
// the dashed separator lines): the parse errors of the custom syntax (machine, memory
// space, tensor role), every check of the instructions' verify_ (kind, operand count,
// the spaces a slot can reach), and ProgramOp's assembler rules (dialects/mncore.py):
// bounds of every memory, issue order, one instruction per slot per step, the LM and
// GRF port rules, fwd, the mma matrix, tags; tensors in dram; the parent-op traits;
// repeated groups (their bodies, strides, and the rules on every iteration).
// Each error is expected, with its message, at the line of the op to blame (an
// instruction, a tensor, a buffer, or the program for its own checks) or of the bad
// token: mncore-opt --verify-diagnostics fails on an error that is not expected there
// and on an expected one that does not occur.
// RUN: mncore-opt %s --split-input-file --verify-diagnostics

// ==== machine, spaces, kinds

// A machine that dialects/mncore_machines.py does not know.
// expected-error@+1 {{unknown machine 'big'; machines: mncore2, tiny}}
mncore.program @p machine "big" {
  mncore.wait 0 tag 1
}

// -----

// The same in the generic form: the program's verifier.
// expected-error@+1 {{unknown machine 'big'}}
"mncore.program"() <{sym_name = "p", machine = "big"}> ({
  "mncore.wait"() <{step = 0 : i64, kind = "", srcs = [], tag = 1 : i64}> : () -> ()
}) : () -> ()

// -----

// An unknown memory space in a source (after the first: see the report for the first).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{unknown memory space 'lm2'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd}}
  mncore.alu 0 "fadd" lm0[0], lm2[0] -> lm1[0]
}

// -----

// An unknown memory space as a destination.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{unknown memory space 'hbm'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd}}
  mncore.alu 0 "fneg" lm0[0] -> hbm[0]
}

// -----

// An unknown memory space for a tensor.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{unknown memory space 'hbm'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd}}
  mncore.tensor @x input hbm[0] : tensor<4xf32>
}

// -----

// A tensor is an input, an output or a constant.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{a tensor is an input, an output or a constant}}
  mncore.tensor @x inout dram[0] : tensor<4xf32>
}

// -----

// An ALU kind that does not exist.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu has no kind 'fdiv'; kinds: fadd, fsub, fmul, fmax, fmin, fmadd, fpass, fneg, fexp, flog, frsqrt, frecip, fzero}}
  mncore.alu 0 "fdiv" lm0[0], grf0[0] -> lm1[0]
}

// -----

// An L1 kind that does not exist.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 has no kind 'copy'; kinds: bcast, scatter, gather, reduce}}
  mncore.l1 0 "copy" l1bm[0] -> lm1[0]
}

// -----

// A MAU kind that does not exist.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.mau has no kind 'mmt'; kinds: mma, vmm}}
  mncore.mau 0 "mmt" lm0[0], grf0[0], grf1[0] -> lm1[0]
}

// -----

// A DMA kind that does not exist.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma has no kind 'copy'; kinds: load, store}}
  mncore.dma 0 "copy" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
}

// -----

// ==== operand counts

// fmadd takes 3 sources.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu 'fmadd' takes 3 sources and a destination}}
  mncore.alu 0 "fmadd" lm0[0], grf0[0] -> lm1[0]
}

// -----

// fzero takes none.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu 'fzero' takes 0 sources and a destination}}
  mncore.alu 0 "fzero" grf0[0] -> lm1[0]
}

// -----

// An ALU instruction without a destination.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu 'fadd' takes 2 sources and a destination}}
  mncore.alu 0 "fadd" lm0[0], grf0[0]
}

// -----

// mma without its addend.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.mau 'mma' takes a matrix, a vector and an addend and a destination}}
  mncore.mau 0 "mma" lm0[0], grf0[0] -> lm1[0]
}

// -----

// An L1 transfer with two sources.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 takes one source and a destination}}
  mncore.l1 0 "bcast" l1bm[0], l1bm[4] -> lm1[0]
}

// -----

// An L2 transfer without words.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l2 takes one source, a destination and words}}
  mncore.l2 0 "bcast" l2bm[0] -> l1bm[0]
}

// -----

// Lanes say which words of a scatter's source carry data: only a scatter reads so.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l2: only a scatter takes lanes}}
  mncore.l2 0 "bcast" l2bm[0] -> l1bm[0] words 4 lanes 2
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l2: a scatter's lanes are at least 1}}
  mncore.l2 0 "scatter" l2bm[0] -> l1bm[0] words 4 lanes 0
}

// -----

// Lanes past the words the scatter reads from every L2B (2 L1Bs x 16 on tiny).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{lanes 33 are more than the 32 words the scatter reads from the 1 L2Bs}}
  mncore.l2 0 "scatter" l2bm[0] -> l1bm[0] words 16 lanes 33
}

// -----

// Only the L2 transfers take lanes.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 takes no lanes}}
  mncore.l1 0 "scatter" l1bm[0] -> lm0[0] lanes 4
}

// -----

// ==== spaces a slot reaches

// The ALU writes PE memories only.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu 'fadd': the destination must be in lm0/lm1/grf0/grf1, not l1bm}}
  mncore.alu 0 "fadd" lm0[0], grf0[0] -> l1bm[0]
}

// -----

// The ALU reads PE memories and fwd only.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu 'fadd': sources must be in lm0/lm1/grf0/grf1/fwd, not dram}}
  mncore.alu 0 "fadd" dram[0], grf0[0] -> lm0[0]
}

// -----

// The MAU writes PE memories only.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.mau 'mma': the destination must be in lm0/lm1/grf0/grf1, not l2bm}}
  mncore.mau 0 "mma" lm0[0], grf0[0], grf1[0] -> l2bm[0]
}

// -----

// An L1 bcast goes from L1BM to the PEs, not from an LM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 'bcast': the source must be in l1bm, not lm0}}
  mncore.l1 0 "bcast" lm0[0] -> grf0[0]
}

// -----

// An L1 gather goes from the PEs to L1BM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 'gather': the destination must be in l1bm, not lm0}}
  mncore.l1 0 "gather" grf0[0] -> lm0[0]
}

// -----

// An L2 reduce goes from L1BM to L2BM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l2 'reduce': the source must be in l1bm, not l2bm}}
  mncore.l2 0 "reduce" l2bm[0] -> l2bm[64] words 4
}

// -----

// A DMA load writes L2BM, not L1BM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma 'load': the destination must be in l2bm, not l1bm}}
  mncore.dma 0 "load" dram[0] -> l1bm[0] words 4 tag 1
  mncore.wait 1 tag 1
}

// -----

// A DMA store reads L2BM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma 'store': the source must be in l2bm, not dram}}
  mncore.dma 0 "store" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
}

// -----

// ==== bounds
// tiny has LM 256, GRF 64, L1BM 1024, L2BM 4096 and DRAM 2^20 words; an L1 block is
// 16 PEs x 4 words, an L2 gather block 2 L1BMs x words. ops.mlir has operands ending
// at the last word.

// 4 words from lm0[254].
mncore.program @p machine "tiny" {
  // expected-error@+1 {{lm0[254] + 4 words is beyond lm0 (256 words on tiny)}}
  mncore.alu 0 "fneg" lm0[254] -> lm1[0]
}

// -----

// A destination beyond a GRF.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{grf1[61] + 4 words is beyond grf1 (64 words on tiny)}}
  mncore.alu 0 "fneg" lm0[0] -> grf1[61]
}

// -----

// The mma matrix is 16 words.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{lm0[241] + 16 words is beyond lm0 (256 words on tiny)}}
  mncore.mau 0 "mma" lm0[241], grf0[0], grf1[0] -> lm1[0]
}

// -----

// An L1 scatter reads a 64-word block.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{l1bm[961] + 64 words is beyond l1bm (1024 words on tiny)}}
  mncore.l1 0 "scatter" l1bm[961] -> lm0[0]
}

// -----

// An L1 gather writes a 64-word block.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{l1bm[961] + 64 words is beyond l1bm (1024 words on tiny)}}
  mncore.l1 0 "gather" lm0[0] -> l1bm[961]
}

// -----

// An L2 gather of 48 words per L1BM writes 96 words (4000 + 96 would fit).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{l2bm[4001] + 96 words is beyond l2bm (4096 words on tiny)}}
  mncore.l2 0 "gather" l1bm[0] -> l2bm[4001] words 48
}

// -----

// A DMA beyond DRAM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{dram[1048572] + 8 words is beyond dram (1048576 words on tiny)}}
  mncore.dma 0 "load" dram[1048572] -> l2bm[0] words 8 tag 1
  mncore.wait 1 tag 1
}

// -----

// Only the ALU takes a write mask.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 takes no mask (only mncore.alu does)}}
  mncore.l1 0 "bcast" l1bm[0] -> lm0[0] mask grf0[0]
}

// -----

// A mask lives in a PE's memory.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu 'fpass': the mask must be in lm0/lm1/grf0/grf1, not l1bm}}
  mncore.alu 0 "fpass" lm0[0] -> grf0[0] mask l1bm[0]
}

// -----

// The mask takes a read port: with a GRF0 source, a GRF0 mask is a second read.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{step 0 has two reads of grf0: a GRF has one read and one write port}}
  mncore.alu 0 "fpass" grf0[4] -> grf1[0] mask grf0[0]
}

// -----

// A strided DMA whose last run is beyond DRAM: 4 runs, 350000 apart.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{dram[100000] + 1050002 words is beyond dram (1048576 words on tiny)}}
  mncore.dma 0 "load" dram[100000] -> l2bm[0] words 8 run 2 stride 350000 tag 1
  mncore.wait 1 tag 1
}

// -----

// run without stride.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma takes run and stride together}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 2 tag 1
  mncore.wait 1 tag 1
}

// -----

// A run that does not divide the words.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma: run 3 does not divide 8 words}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 3 stride 4 tag 1
  mncore.wait 1 tag 1
}

// -----

// A negative stride (only the generic form can write one): the scheduler and the
// simulator rely on a transfer's words running upward.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma: stride -4 is negative}}
  "mncore.dma"() <{step = 0 : i64, kind = "load", srcs = [#mncore.ref<dram[64]>], dst = #mncore.ref<l2bm[0]>, words = 8 : i64, run = 4 : i64, stride = -4 : i64, tag = 1 : i64}> : () -> ()
  mncore.wait 1 tag 1
}

// -----

// rows without pitch.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma takes rows and pitch together}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 rows 2 tag 1
  mncore.wait 1 tag 1
}

// -----

// Rows that do not divide the words.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma: rows 3 do not divide 8 words}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 rows 3 pitch 8 tag 1
  mncore.wait 1 tag 1
}

// -----

// A run that does not divide a row.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma: run 4 does not divide 2 words (a row's)}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 4 stride 4 rows 4 pitch 8 tag 1
  mncore.wait 1 tag 1
}

// -----

// A store whose rows overlap: each row spans 7 words (runs of 1, 2 apart), 4 apart.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma: pitch 4 is shorter than a row's 7 words: a store would write a word twice}}
  mncore.dma 0 "store" l2bm[0] -> dram[0] words 8 run 1 stride 2 rows 2 pitch 4 tag 1
  mncore.wait 1 tag 1
}

// -----

// Rows whose last word is beyond DRAM: 2 rows, 1048570 apart.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{dram[0] + 1048578 words is beyond dram (1048576 words on tiny)}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 16 rows 2 pitch 1048570 tag 1
  mncore.wait 1 tag 1
}

// -----

// A store whose runs overlap.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma: stride 2 is shorter than run 4: a store would write a word twice}}
  mncore.dma 0 "store" l2bm[0] -> dram[0] words 8 run 4 stride 2 tag 1
  mncore.wait 1 tag 1
}

// -----

// A tensor beyond DRAM: 24x24 = 576 words (at 1048000 it would fit).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{dram[1048001] + 576 words is beyond dram (1048576 words on tiny)}}
  mncore.tensor @x input dram[1048001] : tensor<24x24xf32>
}

// -----

// A buffer beyond a GRF.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{grf0[60] + 8 words is beyond grf0 (64 words on tiny)}}
  mncore.buffer @b grf0[60] words 8
}

// -----

// The same bounds on mncore2 (LM 2048 words).
mncore.program @p machine "mncore2" {
  // expected-error@+1 {{lm0[2045] + 4 words is beyond lm0 (2048 words on mncore2)}}
  mncore.alu 0 "fneg" lm0[2045] -> lm1[0]
}

// -----

// ==== issue order and slots

// Steps go down.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fzero" -> lm0[0]
  // expected-error@+1 {{step 3 comes after step 5: instructions must be in issue order}}
  mncore.l1 3 "bcast" l1bm[0] -> lm1[0]
}

// -----

// Two ALU instructions in one step (other slots in between).
mncore.program @p machine "tiny" {
  mncore.alu 4 "fzero" -> lm0[0]
  mncore.l1 4 "bcast" l1bm[0] -> lm1[0]
  // expected-error@+1 {{step 4 already has an instruction in the alu slot}}
  mncore.alu 4 "fzero" -> grf0[0]
}

// -----

// Two DMAs in one step.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  // expected-error@+1 {{step 0 already has an instruction in the dma slot}}
  mncore.dma 0 "load" dram[0] -> l2bm[4] words 4 tag 2
  mncore.wait 1 tag 1
  mncore.wait 2 tag 2
}

// -----

// Two waits in one step (the control slot).
mncore.program @p machine "tiny" {
  mncore.wait 0 tag 1
  // expected-error@+1 {{step 0 already has an instruction in the ctrl slot}}
  mncore.wait 0 tag 2
}

// -----

// ==== LM and GRF ports

// An LM read by the ALU and written by an L1 transfer in one step.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" lm0[0] -> grf0[0]
  // expected-error@+1 {{step 5 uses lm0 twice: an LM is read or written once per step}}
  mncore.l1 5 "bcast" l1bm[0] -> lm0[4]
}

// -----

// An LM read by two instructions in one step.
mncore.program @p machine "tiny" {
  mncore.l1 5 "gather" lm1[0] -> l1bm[0]
  // expected-error@+1 {{step 5 uses lm1 twice: an LM is read or written once per step}}
  mncore.alu 5 "fneg" lm1[4] -> grf0[0]
}

// -----

// An LM read twice by one instruction.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{step 5 uses lm0 twice: an LM is read or written once per step}}
  mncore.alu 5 "fadd" lm0[0], lm0[4] -> grf0[0]
}

// -----

// An LM read and written by one instruction.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{step 5 uses lm0 twice: an LM is read or written once per step}}
  mncore.alu 5 "fneg" lm0[0] -> lm0[4]
}

// -----

// Two reads of a GRF by one instruction (one read and one write is fine: ops.mlir).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{step 5 has two reads of grf0: a GRF has one read and one write port}}
  mncore.alu 5 "fadd" grf0[0], grf0[4] -> lm0[0]
}

// -----

// Two reads of a GRF by the ALU and the MAU in one step.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" grf1[0] -> lm0[0]
  // expected-error@+1 {{step 5 has two reads of grf1: a GRF has one read and one write port}}
  mncore.mau 5 "mma" lm1[0], grf0[0], grf1[4] -> grf0[8]
}

// -----

// Two writes of a GRF in one step.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fneg" lm0[0] -> grf1[0]
  // expected-error@+1 {{step 5 has two writes of grf1: a GRF has one read and one write port}}
  mncore.l1 5 "bcast" l1bm[0] -> grf1[4]
}

// -----

// An LM read 2 steps after a write to it (another address: the whole LM is blocked;
// 3 steps after is fine: ops.mlir).
mncore.program @p machine "tiny" {
  mncore.alu 5 "fzero" -> lm1[8]
  // expected-error@+1 {{step 7 reads lm1, written at step 5: an LM cannot be read for 2 steps after a write}}
  mncore.alu 7 "fneg" lm1[0] -> grf0[0]
}

// -----

// An LM read by the MAU 1 step after an L1 transfer wrote it.
mncore.program @p machine "tiny" {
  mncore.l1 5 "bcast" l1bm[0] -> lm0[0]
  // expected-error@+1 {{step 6 reads lm0, written at step 5: an LM cannot be read for 2 steps after a write}}
  mncore.mau 6 "mma" lm0[0], grf0[0], grf1[0] -> lm1[0]
}

// -----

// An LM read by an L1 reduce 2 steps after the ALU wrote it.
mncore.program @p machine "tiny" {
  mncore.alu 5 "fzero" -> lm1[8]
  // expected-error@+1 {{step 7 reads lm1, written at step 5: an LM cannot be read for 2 steps after a write}}
  mncore.l1 7 "reduce" lm1[0] -> l1bm[0]
}

// -----

// ==== fwd and mma

// fwd at the first step.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{step 0 reads fwd but step -1 has no ALU or MAU result}}
  mncore.alu 0 "fneg" fwd[0] -> lm0[0]
}

// -----

// fwd two steps after the ALU's result.
mncore.program @p machine "tiny" {
  mncore.alu 4 "fzero" -> lm0[0]
  // expected-error@+1 {{step 6 reads fwd but step 5 has no ALU or MAU result}}
  mncore.alu 6 "fneg" fwd[0] -> lm0[0]
}

// -----

// fwd after an L1 transfer (not a result of the ALU or the MAU).
mncore.program @p machine "tiny" {
  mncore.l1 4 "bcast" l1bm[0] -> grf0[0]
  // expected-error@+1 {{step 5 reads fwd but step 4 has no ALU or MAU result}}
  mncore.mau 5 "mma" lm0[0], fwd[0], grf1[0] -> lm1[0]
}

// -----

// The mma matrix (16 words) cannot come from fwd (4 words).
mncore.program @p machine "tiny" {
  mncore.alu 4 "fzero" -> grf0[0]
  // expected-error@+1 {{mncore.mau: the matrix cannot be forwarded}}
  mncore.mau 5 "mma" fwd[0], grf0[4], grf1[4] -> lm1[0]
}

// -----

// ==== tags

// A wait without a tag.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  // expected-error@+1 {{mncore.wait takes only a tag}}
  mncore.wait 1
}

// -----

// A wait with an operand.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.wait takes only a tag}}
  mncore.wait 1 l2bm[0] tag 1
}

// -----

// A DMA without a tag.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma takes one source, a destination, words and a tag}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4
}

// -----

// A DMA without words.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma takes one source, a destination, words and a tag}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] tag 1
  mncore.wait 1 tag 1
}

// -----

// ==== tensors, nesting

// A tensor lives in DRAM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.tensor lives in dram}}
  mncore.tensor @x input l2bm[0] : tensor<4xf32>
}

// -----

// Two tensors of one name (the program is a symbol table).
// expected-error@+1 {{Redefinition of symbol "x"}}
mncore.program @p machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @x output dram[4] : tensor<4xf32>
}

// -----

// An instruction outside a program.
// expected-error@+1 {{'mncore.alu' expects parent op to be one of 'mncore.program', 'mncore.repeat'}}
mncore.alu 0 "fzero" -> lm0[0]

// -----

// An instruction in a function.
func.func @f() {
  // expected-error@+1 {{'mncore.wait' expects parent op to be one of 'mncore.program', 'mncore.repeat'}}
  mncore.wait 0 tag 1
  func.return
}

// -----

// A tensor outside a program.
// expected-error@+1 {{'mncore.tensor' expects parent op 'mncore.program'}}
mncore.tensor @x input dram[0] : tensor<4xf32>

// -----

// A buffer outside a program.
// expected-error@+1 {{'mncore.buffer' expects parent op 'mncore.program'}}
mncore.buffer @b lm0[0] words 4

// -----

// ==== fixes after review

// An unknown memory space in the first source.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{unknown memory space 'lm2'; spaces: lm0, lm1, grf0, grf1, l1bm, l2bm, dram, fwd}}
  mncore.alu 0 "fadd" lm2[0], lm0[0] -> lm1[0]
}

// -----

// Only tensors, buffers and instructions belong in a program.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{graph.constant cannot be in an mncore.program: it holds tensors, buffers, instructions and repeated groups}}
  %c = graph.constant dense<1.0> : tensor<f32>
}

// -----

// A wait has no kind.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.wait takes only a tag}}
  mncore.wait 2 "bogus" tag 1
}

// -----

// words and tag only where the instruction uses them.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu takes no words}}
  mncore.alu 0 "fzero" -> lm0[0] words 9
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.l1 takes no tag}}
  mncore.l1 0 "bcast" l1bm[0] -> lm0[0] tag 3
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.dma moves at least 1 word}}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 0 tag 1
  mncore.wait 5 tag 1
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.buffer cannot live in fwd}}
  mncore.buffer @b fwd[7] words 4
}

// -----

// A strided layout's words are its shape's elements.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.buffer holds 8 words but its shape [4, 3] has 12}}
  mncore.buffer @b dram[0] words 8 shape [4, 3] strides [1, 4]
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.buffer has 2 dimensions but 1 strides}}
  mncore.buffer @b dram[0] words 8 shape [4, 2] strides [1]
}

// -----

// Its extent is its last element's word: a transposed buffer whose rows end past DRAM.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{dram[1048000] + 1204 words is beyond dram (1048576 words on tiny)}}
  mncore.buffer @b dram[1048000] words 16 shape [4, 4] strides [400, 1]
}

// -----

// A shape names its strides (the parser stops at the next token).
mncore.program @p machine "tiny" {
  mncore.buffer @b dram[0] words 8 shape [4, 2]
// expected-error@+1 {{Expected 'strides'}}
}

// -----

// A wait acts before its bundle issues: it cannot cover a DMA of the same step.
mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  // expected-error@+1 {{step 0 waits on tag 1 issued in the same step: a wait takes effect before its bundle issues}}
  mncore.wait 0 tag 1
}

// -----

// IRDL's own checks of an instruction (a cheaper test skips them only for well-formed
// ones): a step of the wrong integer type, an unknown property, a source that is not a
// reference, an instruction outside a program, an instruction with a result.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{Expected attribute i64 but got i32}}
  "mncore.wait"() <{step = 0 : i32, kind = "", srcs = [], tag = 1 : i64}> : () -> ()
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{property 'bogus' is not defined by the operation 'mncore.wait'}}
  "mncore.wait"() <{step = 0 : i64, kind = "", srcs = [], tag = 1 : i64, bogus = 1 : i64}> : () -> ()
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{1 : i64 should be of base attribute mncore.ref}}
  "mncore.alu"() <{step = 0 : i64, kind = "fneg", srcs = [1 : i64], dst = #mncore.ref<lm0[0]>}> : () -> ()
}

// -----

// expected-error@+1 {{'mncore.wait' expects parent op to be one of 'mncore.program', 'mncore.repeat'}}
"mncore.wait"() <{step = 0 : i64, kind = "", srcs = [], tag = 1 : i64}> : () -> ()

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{Expected 0 results, but got 1}}
  %x = "mncore.wait"() <{step = 0 : i64, kind = "", srcs = [], tag = 1 : i64}> : () -> i64
}

// -----

// ==== repeated groups (mncore.repeat): the body's own checks, then the rules on every
// issue of the expansion, blamed on the group with the iteration that breaks them.

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.repeat: count and period are at least 1}}
  mncore.repeat 0 count 0 period 4 {
    mncore.alu 0 "fzero" -> grf0[0]
  }
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.repeat holds at least one instruction}}
  mncore.repeat 0 count 2 period 4 {
  }
}

// -----

// Transfers to L2BM or DRAM and waits have no place in a group: the engine's queue and
// the tags are per instruction.
mncore.program @p machine "tiny" {
  mncore.repeat 0 count 2 period 4 {
    // expected-error@+1 {{mncore.dma cannot be in an mncore.repeat: it holds ALU, MAU and L1 instructions}}
    mncore.dma 0 "load" dram[0 + 4 * i] -> l2bm[0] words 4 tag 1
  }
  mncore.wait 9 tag 1
}

// -----

mncore.program @p machine "tiny" {
  mncore.alu 0 "fzero" -> grf0[0]
  mncore.repeat 1 count 2 period 4 {
    // expected-error@+1 {{an instruction in an mncore.repeat cannot read fwd}}
    mncore.alu 0 "fpass" fwd[0] -> grf0[4]
  }
}

// -----

mncore.program @p machine "tiny" {
  mncore.repeat 0 count 2 period 4 {
    mncore.alu 2 "fzero" -> grf0[0]
    // expected-error@+1 {{step 1 comes after step 2: instructions must be in issue order}}
    mncore.alu 1 "fzero" -> grf0[4]
  }
}

// -----

// A stride needs the iteration: `N * i`.
mncore.program @p machine "tiny" {
  mncore.repeat 0 count 2 period 4 {
    // expected-error@+1 {{Expected 'i': the iteration (a stride is N * i)}}
    mncore.alu 0 "fzero" -> grf0[0 + 4 * j]
  }
}

// -----

// Strides outside a group (the generic form can say it).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.alu has strides only in an mncore.repeat}}
  "mncore.alu"() <{step = 0 : i64, kind = "fzero", srcs = [], dst = #mncore.ref<grf0[0]>, strides = array<i64: 4>}> : () -> ()
}

// -----

mncore.program @p machine "tiny" {
  "mncore.repeat"() <{step = 0 : i64, count = 2 : i64, period = 4 : i64}> ({
    // expected-error@+1 {{mncore.alu: strides are one non-negative integer per reference (sources, destination, mask)}}
    "mncore.alu"() <{step = 0 : i64, kind = "fneg", srcs = [#mncore.ref<grf0[0]>], dst = #mncore.ref<grf0[4]>, strides = array<i64: 4>}> : () -> ()
  }) : () -> ()
}

// -----

// Iteration 1's broadcast lands on the step of iteration 0's second one.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{iteration 1: mncore.l1 'bcast': step 3 already has an instruction in the l1 slot}}
  mncore.repeat 1 count 3 period 2 {
    mncore.l1 0 "bcast" l1bm[0 + 4 * i] -> grf0[4]
    mncore.l1 2 "bcast" l1bm[0 + 4 * i] -> grf0[8]
  }
}

// -----

// An instruction after the group, issued in its span, on a slot an iteration takes.
mncore.program @p machine "tiny" {
  mncore.repeat 0 count 4 period 4 {
    mncore.alu 0 "fzero" -> grf0[0]
  }
  // expected-error@+1 {{step 8 already has an instruction in the alu slot}}
  mncore.alu 8 "fzero" -> grf0[4]
}

// -----

// The 257th iteration reads past L1BM: every iteration's words are checked.
mncore.program @p machine "tiny" {
  // expected-error@+1 {{iteration 256: mncore.l1 'bcast': l1bm[1024] + 4 words is beyond l1bm (1024 words on tiny)}}
  mncore.repeat 1 count 300 period 4 {
    mncore.l1 0 "bcast" l1bm[0 + 4 * i] -> grf0[4]
  }
}

// -----

// An LM read 2 steps after a write of it, across iterations (period 2).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{iteration 1: mncore.alu 'fpass': step 2 reads lm0, written at step 1: an LM cannot be read for 2 steps after a write}}
  mncore.repeat 0 count 2 period 2 {
    mncore.alu 0 "fpass" lm0[0] -> grf0[0]
    mncore.alu 1 "fpass" grf1[0] -> lm0[4]
  }
}

// -----

// A group issuing more instructions than the verifier checks one by one (found by the
// mutation fuzzer: count 3 became 2147483648, and verification ran for hours).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{mncore.repeat: count 2,147,483,648 issues 2,147,483,648 instructions, more than the 4,194,304 a group may issue (each issue is checked)}}
  mncore.repeat 0 count 2147483648 period 12 {
    mncore.alu 0 "fzero" -> grf0[0]
  }
}

// -----

// Integers that no i64 property holds, where they stand (found by the mutation fuzzer:
// a view's stride became -2**63 - 1, and building the buffer failed as an internal
// error).
mncore.program @p machine "tiny" {
  // expected-error@+1 {{-9223372036854775809 does not fit in 64 bits}}
  mncore.buffer @b dram[0] words 8 shape [4, 2] strides [-9223372036854775809, 1]
}

// -----

mncore.program @p machine "tiny" {
  // expected-error@+1 {{18446744073709551616 does not fit in 64 bits}}
  mncore.dma 0 "load" dram[18446744073709551616] -> l2bm[0] words 4 tag 1
}
