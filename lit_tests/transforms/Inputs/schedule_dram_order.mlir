// A copy through L2BM, then one task storing its result and the next loading it back:
// no DMA needs a wait on the one before it, only a later place in the engine's queue.
mncore.program @p machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<8xf32>
  mncore.tensor @y output dram[16] : tensor<8xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 8 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[16] words 8 tag 3
  mncore.wait 5 tag 3
  mncore.dma 6 "store" l2bm[16] -> dram[16] words 8 tag 4
  mncore.wait 7 tag 4
}
