// RUN: mncore-opt %s --split-input-file -p mncore-forward-stores | filecheck %s
// RUN: mncore-opt %s --split-input-file -p mncore-forward-stores,mncore-schedule -o /dev/null

// mncore-forward-stores: a load that brings back what a store took from L2BM goes; its
// readers read the store's source; a store nobody loads (and no output) goes, and so
// does a wait left with nothing to wait for. (tests/test_mncore.py runs whole training
// steps with and without the pass.)

// CHECK-LABEL: mncore.program @forwarded
// CHECK-NEXT:    mncore.tensor @x input dram[0] : tensor<4xf32>
// CHECK-NEXT:    mncore.tensor @y output dram[16] : tensor<4xf32>
// CHECK-NEXT:    mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
// CHECK-NEXT:    mncore.wait 1 tag 1
// CHECK-NEXT:    mncore.dma 6 "store" l2bm[0] -> dram[16] words 4 tag 4
// CHECK-NEXT:    mncore.wait 7 tag 4
// CHECK-NEXT:  }
mncore.program @forwarded machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[16] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 4 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
  mncore.wait 5 tag 3
  mncore.dma 6 "store" l2bm[64] -> dram[16] words 4 tag 4
  mncore.wait 7 tag 4
}

// -----

// The source is written again before the reader reads: the load stays.
// CHECK-LABEL: mncore.program @overwritten
// CHECK:         mncore.dma 4 "load" dram[0] -> l2bm[0] words 4 tag 3
// CHECK:         mncore.dma 6 "load" dram[8] -> l2bm[64] words 4 tag 4
// CHECK:         mncore.dma 8 "store" l2bm[64] -> dram[16] words 4 tag 5
mncore.program @overwritten machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[16] : tensor<4xf32>
  mncore.dma 0 "load" dram[4] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 4 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[0] -> l2bm[0] words 4 tag 3
  mncore.wait 5 tag 3
  mncore.dma 6 "load" dram[8] -> l2bm[64] words 4 tag 4
  mncore.wait 7 tag 4
  mncore.dma 8 "store" l2bm[64] -> dram[16] words 4 tag 5
  mncore.wait 9 tag 5
}

// -----

// ... also when that happens after the load, before its reader.
// CHECK-LABEL: mncore.program @overwritten_after_the_load
// CHECK:         mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
// CHECK:         mncore.dma 8 "store" l2bm[64] -> dram[16] words 4 tag 5
mncore.program @overwritten_after_the_load machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[16] : tensor<4xf32>
  mncore.dma 0 "load" dram[4] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 4 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
  mncore.wait 5 tag 3
  mncore.dma 6 "load" dram[0] -> l2bm[0] words 4 tag 4
  mncore.wait 7 tag 4
  mncore.dma 8 "store" l2bm[64] -> dram[16] words 4 tag 5
  mncore.wait 9 tag 5
}

// -----

// The load overwrites part of its own sources (it moves words 8 down): it stays.
// CHECK-LABEL: mncore.program @overlapping
// CHECK:         mncore.dma 4 "load" dram[8] -> l2bm[0] words 8 tag 3
mncore.program @overlapping machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<16xf32>
  mncore.tensor @y output dram[32] : tensor<8xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 16 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[4] -> dram[8] words 8 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[0] words 8 tag 3
  mncore.wait 5 tag 3
  mncore.dma 6 "store" l2bm[0] -> dram[32] words 8 tag 4
  mncore.wait 7 tag 4
}

// -----

// On MN-Core 2 the source was loaded into one L2B's copy only: the others differ, and
// the load to every L2B stays.
// CHECK-LABEL: mncore.program @one_copy
// CHECK:         mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
mncore.program @one_copy machine "mncore2" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[16] : tensor<4xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 l2b 1 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 4 l2b 1 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
  mncore.wait 5 tag 3
  mncore.dma 6 "store" l2bm[64] -> dram[16] words 4 tag 4
  mncore.wait 7 tag 4
}

// -----

// A reader that also reads words the load did not write: the load stays, the reader
// reads where it did. A load to one L2B of words stored from its copy goes (its reader,
// a store from the same copy, reads the source).
// CHECK-LABEL: mncore.program @wider_reader
// CHECK:         mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
// CHECK:         mncore.dma 6 "store" l2bm[64] -> dram[16] words 8 tag 4
// CHECK-NOT:     "load" dram[8] -> l2bm[128]
// CHECK:         mncore.dma 10 "store" l2bm[0] -> dram[24] words 4 tag 6
mncore.program @wider_reader machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<8xf32>
  mncore.tensor @y output dram[16] : tensor<12xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 4 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 tag 3
  mncore.dma 5 "load" dram[4] -> l2bm[68] words 4 tag 3
  mncore.wait 6 tag 3
  mncore.dma 6 "store" l2bm[64] -> dram[16] words 8 tag 4
  mncore.wait 7 tag 4
  mncore.dma 8 "load" dram[8] -> l2bm[128] words 4 l2b 0 tag 5
  mncore.wait 9 tag 5
  mncore.dma 10 "store" l2bm[128] -> dram[24] words 4 tag 6
  mncore.wait 11 tag 6
}

// -----

// On MN-Core 2 each L2B's lanes go out from its own copy and come back to it: the
// round trip through DRAM goes where the load's L2B is the store's; a load to another
// L2B (whose copy of the source holds other data) stays.
// CHECK-LABEL: mncore.program @per_l2b
// CHECK-NOT:     "load" dram[8] -> l2bm[64] words 4 l2b 1
// CHECK:         mncore.dma {{[0-9]+}} "load" dram[8] -> l2bm[96] words 4 l2b 2 tag 5
// CHECK:         mncore.dma {{[0-9]+}} "store" l2bm[0] -> dram[16] words 4 l2b 1 tag 4
// CHECK:         mncore.dma {{[0-9]+}} "store" l2bm[96] -> dram[20] words 4 l2b 2 tag 6
mncore.program @per_l2b machine "mncore2" {
  mncore.tensor @x input dram[0] : tensor<4xf32>
  mncore.tensor @y output dram[16] : tensor<8xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 l2b 1 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[8] words 4 l2b 1 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[8] -> l2bm[64] words 4 l2b 1 tag 3
  mncore.dma 5 "load" dram[8] -> l2bm[96] words 4 l2b 2 tag 5
  mncore.wait 6 tag 3
  mncore.wait 7 tag 5
  mncore.dma 8 "store" l2bm[64] -> dram[16] words 4 l2b 1 tag 4
  mncore.wait 9 tag 4
  mncore.dma 10 "store" l2bm[96] -> dram[20] words 4 l2b 2 tag 6
  mncore.wait 11 tag 6
}

// -----

// A scatter reads 8 words (4 per L1B on tiny's 2 L1Bs), of which the load brings 6: with
// ``lanes 6`` the other 2 carry no data, so the scatter reads the stored words in place
// and the load (and then the store, which nobody loads) goes.
// CHECK-LABEL: mncore.program @padding_lanes
// CHECK-NOT:     "load" dram[16]
// CHECK-NOT:     "store" l2bm[0] -> dram[16]
// CHECK:         mncore.l2 6 "scatter" l2bm[0] -> l1bm[0] words 4 lanes 6
mncore.program @padding_lanes machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<6xf32>
  mncore.tensor @y output dram[32] : tensor<8xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 6 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[16] words 6 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[16] -> l2bm[64] words 6 tag 3
  mncore.wait 5 tag 3
  mncore.l2 6 "scatter" l2bm[64] -> l1bm[0] words 4 lanes 6
  mncore.l2 10 "gather" l1bm[0] -> l2bm[128] words 4
  mncore.dma 14 "store" l2bm[128] -> dram[32] words 8 tag 4
  mncore.wait 15 tag 4
}

// -----

// Without lanes, the 2 words past the load's are the scatter's data too: the load stays.
// CHECK-LABEL: mncore.program @all_lanes
// CHECK:         mncore.dma 4 "load" dram[16] -> l2bm[64] words 6 tag 3
// CHECK:         mncore.l2 6 "scatter" l2bm[64] -> l1bm[0] words 4
mncore.program @all_lanes machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<6xf32>
  mncore.tensor @y output dram[32] : tensor<8xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 6 tag 1
  mncore.wait 1 tag 1
  mncore.dma 2 "store" l2bm[0] -> dram[16] words 6 tag 2
  mncore.wait 3 tag 2
  mncore.dma 4 "load" dram[16] -> l2bm[64] words 6 tag 3
  mncore.wait 5 tag 3
  mncore.l2 6 "scatter" l2bm[64] -> l1bm[0] words 4
  mncore.l2 10 "gather" l1bm[0] -> l2bm[128] words 4
  mncore.dma 14 "store" l2bm[128] -> dram[32] words 8 tag 4
  mncore.wait 15 tag 4
}
