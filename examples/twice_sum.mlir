// An mncore program written one instruction every 10 steps (its meaning, hazard-free):
// y = the sum over the 32 PEs of `tiny` of x + x, that is 64 x.
//   mncore-run examples/twice_sum.mlir --args 'dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>' --timing
//   mncore-opt examples/twice_sum.mlir -p mncore-schedule
mncore.program @twice_sum machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[64] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 10 tag 1
  mncore.l2 20 "bcast" l2bm[0] -> l1bm[0] words 4
  mncore.l1 30 "bcast" l1bm[0] -> lm0[0]
  mncore.alu 40 "fpass" lm0[0] -> grf0[0]
  mncore.alu 50 "fadd" grf0[0], lm0[0] -> lm1[0]
  mncore.l1 60 "reduce" lm1[0] -> l1bm[16]
  mncore.l2 70 "reduce" l1bm[16] -> l2bm[16] words 4
  mncore.dma 80 "store" l2bm[16] -> dram[64] words 4 tag 2
  mncore.wait 90 tag 2
}
