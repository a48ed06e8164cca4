// -t mncore-asm: each mncore.program as assembly text (targets/mncore_asm.py). A
// header comment names the program and its machine, one comment line per tensor and
// buffer; then one line per step: the step's instructions joined by ' ; ' (a VLIW
// bundle, in program order), a run of N empty steps as `nop/N` (also before the first
// instruction). Registers: $lm/$ln are LM0/LM1, $lr/$ls GRF0/GRF1, $lb L1BM, $lc
// L2BM, $d DRAM, $aluf the forwarded result; a PE operand carries `v` (the 4-word
// vector), `?REG` an ALU write mask, `/N` is a word count, `/R:S` a strided DMA's run
// and stride, `@N` a DMA's one L2B and `#T` a DMA tag. ALU kinds become `fv` + the kind
// without its `f`, mma `fvmma`; transfers are the slot + the kind. Programs are
// separated by an empty line; other ops (a function) are not printed.
// RUN: mncore-opt %s -t mncore-asm | filecheck %s --match-full-lines

mncore.program @p machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<2x16xf32>
  mncore.tensor @y output dram[64] : tensor<4xf32>
  mncore.buffer @h lm0[0] words 4
  mncore.dma 2 "load" dram[0] -> l2bm[0] words 32 tag 1
  mncore.wait 3 tag 1
  mncore.l2 4 "scatter" l2bm[0] -> l1bm[0] words 16
  mncore.l1 8 "bcast" l1bm[0] -> lm0[0]
  mncore.l1 9 "scatter" l1bm[0] -> grf0[0]
  mncore.alu 12 "fadd" lm0[0], grf0[0] -> lm1[0]
  mncore.l1 12 "bcast" l1bm[4] -> grf1[0]
  mncore.alu 13 "fmadd" fwd[0], grf1[0], grf0[0] -> grf1[4]
  mncore.mau 13 "mma" lm0[0], fwd[0], fwd[0] -> grf0[8]
  mncore.alu 14 "fzero" -> lm0[8]
  mncore.l1 16 "reduce" lm1[0] -> l1bm[64]
  mncore.l2 20 "reduce" l1bm[64] -> l2bm[64] words 4
  mncore.dma 24 "store" l2bm[64] -> dram[64] words 4 tag 2
  mncore.wait 25 tag 2
}

// CHECK:      # mncore.program @p on tiny: 1 group x 1 L2B x 2 L1B x 4 MAB x 4 PE = 32 PEs; LM 256, GRF 64, L1BM 1024, L2BM 4096 words
// CHECK-NEXT: # input @x: tensor<2x16xf32> at $d0
// CHECK-NEXT: # output @y: tensor<4xf32> at $d64
// CHECK-NEXT: # buffer @h: 4 words at $lm0
// CHECK-NEXT: nop/2
// CHECK-NEXT: dmaload $d0 $lc0 /32 #1
// CHECK-NEXT: wait #1
// CHECK-NEXT: l2scatter $lc0 $lb0 /16
// CHECK-NEXT: nop/3
// CHECK-NEXT: l1bcast $lb0 $lm0v
// CHECK-NEXT: l1scatter $lb0 $lr0v
// CHECK-NEXT: nop/2
// CHECK-NEXT: fvadd $lm0v $lr0v $ln0v ; l1bcast $lb4 $ls0v
// CHECK-NEXT: fvmadd $aluf $ls0v $lr0v $ls4v ; fvmma $lm0v $aluf $aluf $lr8v
// CHECK-NEXT: fvzero $lm8v
// CHECK-NEXT: nop/1
// CHECK-NEXT: l1reduce $ln0v $lb64
// CHECK-NEXT: nop/3
// CHECK-NEXT: l2reduce $lb64 $lc64 /4
// CHECK-NEXT: nop/3
// CHECK-NEXT: dmastore $lc64 $d64 /4 #2
// CHECK-NEXT: wait #2
// CHECK-NEXT: {{^$}}

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// A program starting at step 0 (no leading nop), with the other ALU kinds, a bundle
// whose L1 transfer comes first in the IR, L1 gather and L2 bcast/gather.
mncore.program @q machine "mncore2" {
  mncore.alu 0 "fsub" grf0[0], grf1[0] -> grf1[4]
  mncore.alu 1 "fmul" fwd[0], lm0[0] -> lm1[2044]
  mncore.alu 2 "fmax" fwd[0], lm0[4] -> grf0[4]
  mncore.alu 3 "fmin" fwd[0], grf0[4] -> grf0[8]
  mncore.alu 4 "fpass" fwd[0] -> grf0[12]
  mncore.alu 5 "fneg" fwd[0] -> grf0[16]
  mncore.l1 6 "gather" grf0[16] -> l1bm[256]
  mncore.alu 6 "fexp" fwd[0] -> grf1[16]
  mncore.alu 7 "flog" fwd[0] -> grf1[20]
  mncore.alu 8 "frsqrt" fwd[0] -> grf1[24]
  mncore.alu 9 "frecip" fwd[0] -> grf1[28]
  mncore.l2 10 "bcast" l2bm[32000] -> l1bm[0] words 64
  mncore.l2 11 "gather" l1bm[256] -> l2bm[0] words 256
  mncore.alu 12 "fcmplt" grf0[0], lm0[0] -> grf1[32]
  mncore.alu 15 "fsel" grf1[32], lm1[0], grf0[0] -> grf1[36]
  mncore.alu 16 "fpass" lm0[0] -> grf1[40] mask grf0[40]
  mncore.dma 16 "load" dram[0] -> l2bm[64] words 64 run 4 stride 100 l2b 3 tag 5
  mncore.dma 17 "store" l2bm[0] -> dram[7] words 8 run 1 stride 9 tag 6
  mncore.dma 18 "load" dram[1000] -> l2bm[128] words 12 run 2 stride 3 rows 3 pitch 64 tag 7
  mncore.wait 18 tag 5
  mncore.wait 19 tag 6
  mncore.wait 20 tag 7
}

// CHECK-NEXT: # mncore.program @q on mncore2: 4 groups x 2 L2B x 8 L1B x 16 MAB x 4 PE = 4096 PEs; LM 2048, GRF 256, L1BM 8192, L2BM 32768 words
// CHECK-NEXT: fvsub $lr0v $ls0v $ls4v
// CHECK-NEXT: fvmul $aluf $lm0v $ln2044v
// CHECK-NEXT: fvmax $aluf $lm4v $lr4v
// CHECK-NEXT: fvmin $aluf $lr4v $lr8v
// CHECK-NEXT: fvpass $aluf $lr12v
// CHECK-NEXT: fvneg $aluf $lr16v
// CHECK-NEXT: l1gather $lr16v $lb256 ; fvexp $aluf $ls16v
// CHECK-NEXT: fvlog $aluf $ls20v
// CHECK-NEXT: fvrsqrt $aluf $ls24v
// CHECK-NEXT: fvrecip $aluf $ls28v
// CHECK-NEXT: l2bcast $lc32000 $lb0 /64
// CHECK-NEXT: l2gather $lb256 $lc0 /256
// CHECK-NEXT: fvcmplt $lr0v $lm0v $ls32v
// CHECK-NEXT: nop/2
// CHECK-NEXT: fvsel $ls32v $ln0v $lr0v $ls36v
// CHECK-NEXT: fvpass $lm0v $ls40v ?$lr40v ; dmaload $d0 $lc64 /64 /4:100 @3 #5
// CHECK-NEXT: dmastore $lc0 $d7 /8 /1:9 #6
// CHECK-NEXT: dmaload $d1000 $lc128 /12 /2:3 *3:64 #7 ; wait #5
// CHECK-NEXT: wait #6
// CHECK-NEXT: wait #7

// A repeated group is written out as the instructions it issues: iteration i at step
// 1 + 3i, its references advanced by their strides, interleaved with what else issues.
mncore.program @r machine "tiny" {
  mncore.alu 0 "fzero" -> grf1[0]
  mncore.repeat 1 count 3 period 3 {
    mncore.l1 0 "bcast" l1bm[0 + 4 * i] -> grf0[4 + 8 * i]
    mncore.alu 2 "fpass" lm0[16 + 4 * i] -> grf1[8]
  }
  mncore.l1 5 "gather" grf1[0] -> l1bm[256]
}

// CHECK-EMPTY:
// CHECK-NEXT: # mncore.program @r on tiny: 1 group x 1 L2B x 2 L1B x 4 MAB x 4 PE = 32 PEs; LM 256, GRF 64, L1BM 1024, L2BM 4096 words
// CHECK-NEXT: fvzero $ls0v
// CHECK-NEXT: l1bcast $lb0 $lr4v
// CHECK-NEXT: nop/1
// CHECK-NEXT: fvpass $lm16v $ls8v
// CHECK-NEXT: l1bcast $lb4 $lr12v
// CHECK-NEXT: l1gather $ls0v $lb256
// CHECK-NEXT: fvpass $lm20v $ls8v
// CHECK-NEXT: l1bcast $lb8 $lr20v
// CHECK-NEXT: nop/1
// CHECK-NEXT: fvpass $lm24v $ls8v
// CHECK-NOT:  {{.}}
