// convert-task-to-mncore{views=true} (the default): a reshape, a slice or a permutation
// of an intermediate is a view: its buffer lies on its source's DRAM words with strides
// of its own (here %r on %a, %s eight words in, the column slice %c two words in with
// rows 8 apart) and its copy task emits nothing. A reshape into an output stays a copy.
// Either way the program equals the task level.
// RUN: mncore-opt %S/Inputs/views.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false}' -o %t.task.mlir
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.views.mlir
// RUN: filecheck %s --input-file %t.views.mlir
// RUN: mncore-run %t.task.mlir --random-inputs 2 > %t.task.out
// RUN: mncore-run %t.views.mlir --random-inputs 2 | diff - %t.task.out
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{views=false},mncore-schedule' -o %t.copies.mlir
// RUN: mncore-run %t.copies.mlir --random-inputs 2 | diff - %t.task.out
// Read through DRAM (resident=false) and each task on its own (packed=false), five DMA
// loads with views (x for exp and for the output's reshape; a for the three
// negations), eight with every copy kept.
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{resident=false packed=false},mncore-schedule' | grep -c '"load"' | filecheck %s --check-prefix=VIEW-LOADS
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{views=false resident=false packed=false},mncore-schedule' | grep -c '"load"' | filecheck %s --check-prefix=COPY-LOADS
// VIEW-LOADS: {{^}}5{{$}}
// COPY-LOADS: {{^}}8{{$}}
// Packed (the default), the three negations, small tasks of one body, share one wave:
// one fneg where each task on its own issues three.
// RUN: grep -c '"fneg"' %t.views.mlir | filecheck %s --check-prefix=PACKED
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{packed=false},mncore-schedule' | grep -c '"fneg"' | filecheck %s --check-prefix=UNPACKED
// PACKED: {{^}}1{{$}}
// UNPACKED: {{^}}3{{$}}
// A source written again while its reshape is still to be read keeps the copy (the
// view would read the new values).
// RUN: mncore-run %S/Inputs/views_rewritten.mlir --random-inputs 1 > %t.rewritten.out
// RUN: mncore-opt %S/Inputs/views_rewritten.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 1 | diff - %t.rewritten.out
// RUN: mncore-opt %S/Inputs/views_rewritten.mlir -p 'convert-task-to-mncore,mncore-schedule' | filecheck %s --check-prefix=REWRITTEN

// Slices cut into tasks of two elements (Inputs/views_tiled.mlir): views whatever the
// tiles (the buffer's shape decides): a column slice whose tasks read one row each, two
// words in with rows 8 apart; a slice after a unit dimension, 12 words in. The places
// are checked with each task lowered on its own (packed=false; packed, the tasks of
// one exp share waves, which moves the buffers' places).
// RUN: mncore-opt %S/Inputs/views_tiled.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false elementwise_tile=2}' -o %t.tiled.task.mlir
// RUN: mncore-run %t.tiled.task.mlir --random-inputs 1 > %t.tiled.out
// RUN: mncore-opt %t.tiled.task.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 1 | diff - %t.tiled.out
// RUN: mncore-opt %t.tiled.task.mlir -p 'convert-task-to-mncore{packed=false},mncore-schedule' -o %t.tiled.mlir
// RUN: mncore-run %t.tiled.mlir --random-inputs 1 | diff - %t.tiled.out
// RUN: filecheck %s --input-file %t.tiled.mlir --check-prefix=TILED

// A reshape whose tiles are unequal (Inputs/views_uneven.mlir: its tasks have two
// bodies, @reshape0 and @reshape1) is a view too: %r lies on %a's words and only %x is
// loaded and the result stored.
// RUN: mncore-opt %S/Inputs/views_uneven.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false elementwise_tile=16}' -o %t.uneven.task.mlir
// RUN: filecheck %s --input-file %t.uneven.task.mlir --check-prefix=UNEVEN-TASKS
// RUN: mncore-run %t.uneven.task.mlir --random-inputs 1 > %t.uneven.out
// RUN: mncore-opt %t.uneven.task.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.uneven.mlir
// RUN: mncore-run %t.uneven.mlir --random-inputs 1 | diff - %t.uneven.out
// RUN: filecheck %s --input-file %t.uneven.mlir --check-prefix=UNEVEN
// UNEVEN-TASKS: task.task @reshape0
// UNEVEN-TASKS: task.task @reshape1
// UNEVEN:      mncore.buffer @buffer0 dram[[[A:[0-9]+]]] words 40
// UNEVEN-NEXT: mncore.buffer @buffer1 dram[[[A]]] words 40{{$}}

// A buffer copied whole into a slab of another (Inputs/views_in_place.mlir: zero
// padding by graph.concat) lies in that slab: %e at row 1, column 1 of %c (320 + 6 + 1,
// %c's strides), %r at column 1; the copies emit nothing and exp stores straight into
// %c. The zero row, copied to two slabs, keeps a buffer of its own (dram[544]).
// RUN: mncore-opt %S/Inputs/views_in_place.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false}' -o %t.in_place.task.mlir
// RUN: mncore-run %t.in_place.task.mlir --random-inputs 1 > %t.in_place.out
// RUN: mncore-opt %t.in_place.task.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.in_place.mlir
// RUN: mncore-run %t.in_place.mlir --random-inputs 1 | diff - %t.in_place.out
// RUN: mncore-opt %t.in_place.task.mlir -p 'convert-task-to-mncore{views=false},mncore-schedule' | mncore-run --random-inputs 1 | diff - %t.in_place.out
// RUN: filecheck %s --input-file %t.in_place.mlir --check-prefix=IN-PLACE
// IN-PLACE:      mncore.buffer @buffer0 dram[327] words 96 shape [2, 3, 4, 4] strides [108, 36, 6, 1]
// IN-PLACE-NEXT: mncore.buffer @buffer1 dram[544] words 24{{$}}
// IN-PLACE-NEXT: mncore.buffer @buffer2 dram[321] words 144 shape [2, 3, 6, 4] strides [108, 36, 6, 1]
// IN-PLACE-NEXT: mncore.buffer @buffer3 dram[544] words 36{{$}}
// IN-PLACE-NEXT: mncore.buffer @buffer4 dram[320] words 216{{$}}
// IN-PLACE:      "store" l2bm[{{[0-9]+}}] -> dram[327] words 96 run 4 stride 6 rows 6 pitch 36
// Copies that must stay (Inputs/views_in_place_kept.mlir): the source written again
// after its copy, and the slab written again after it; each equals the task level.
// RUN: mncore-opt %S/Inputs/views_in_place_kept.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.kept.mlir
// RUN: filecheck %s --input-file %t.kept.mlir --check-prefix=KEPT
// RUN: mncore-run %S/Inputs/views_in_place_kept.mlir --function rewritten --random-inputs 1 > %t.rewritten.task.out
// RUN: mncore-run %t.kept.mlir --function rewritten --random-inputs 1 | diff - %t.rewritten.task.out
// RUN: mncore-run %S/Inputs/views_in_place_kept.mlir --function overwritten --random-inputs 1 > %t.overwritten.task.out
// RUN: mncore-run %t.kept.mlir --function overwritten --random-inputs 1 | diff - %t.overwritten.task.out
// KEPT-COUNT-2: mncore.buffer @buffer0 dram[48] words 4{{$}}

// Copy tasks whose regions are not the op's mapping (Inputs/views_mismatched_tiles.mlir:
// each slice tile reads the other row) stay copies: every tile is checked on the
// source's word indices against the view (it read the wrong rows before).
// RUN: mncore-run %S/Inputs/views_mismatched_tiles.mlir --random-inputs 1 > %t.mismatched.out
// RUN: mncore-opt %S/Inputs/views_mismatched_tiles.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.mismatched.mlir
// RUN: mncore-run %t.mismatched.mlir --random-inputs 1 | diff - %t.mismatched.out
// RUN: filecheck %s --input-file %t.mismatched.mlir --check-prefix=MISMATCHED
// MISMATCHED:     mncore.buffer @buffer0 dram[[[A:[0-9]+]]] words 80
// MISMATCHED-NOT: mncore.buffer @buffer1 dram[[[A]]]

// CHECK:      mncore.buffer @buffer0 dram[128] words 32
// CHECK-NEXT: mncore.buffer @buffer1 dram[128] words 32
// CHECK-NEXT: mncore.buffer @buffer2 dram[136] words 16
// CHECK-NEXT: mncore.buffer @buffer3 dram[130] words 8 shape [4, 2] strides [8, 1]

// REWRITTEN:     mncore.buffer @buffer0 dram[[[A:[0-9]+]]] words 32
// REWRITTEN-NOT: mncore.buffer @buffer1 dram[[[A]]]
// REWRITTEN:     mncore.buffer @buffer1 dram[{{[0-9]+}}] words 32

// TILED:      mncore.buffer @buffer0 dram[144] words 32
// TILED-NEXT: mncore.buffer @buffer1 dram[146] words 8 shape [4, 2] strides [8, 1]
// TILED-NEXT: mncore.buffer @buffer2 dram[144] words 60
// TILED-NEXT: mncore.buffer @buffer3 dram[156] words 18{{$}}

// Strided views (Inputs/views_strided.mlir): transposes read by an elementwise op and
// as either operand of a matmul (each kernel), a step-2 slice of columns, a reshape
// splitting a transposed dimension (a view) and one merging the transposed dimensions
// (a copy, which reads its source through the view's strides). The programs with views
// compute exactly what the programs with every copy kept do (the matmuls' last bits
// differ from the task level's numpy products, with or without views).
// RUN: mncore-opt %S/Inputs/views_strided.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false}' -o %t.strided.task.mlir
// RUN: mncore-opt %t.strided.task.mlir -p 'convert-task-to-mncore{machine=mncore2},mncore-schedule' -o %t.strided.mlir
// RUN: filecheck %s --input-file %t.strided.mlir --check-prefix=STRIDED
// RUN: mncore-run %t.strided.mlir --random-inputs 3 > %t.strided.out
// RUN: mncore-opt %t.strided.task.mlir -p 'convert-task-to-mncore{machine=mncore2 views=false},mncore-schedule' | mncore-run --random-inputs 3 | diff - %t.strided.out
// RUN: mncore-opt %t.strided.task.mlir -p 'convert-task-to-mncore{machine=mncore2 matmul_kernel=swapped},mncore-schedule' | mncore-run --random-inputs 3 > %t.swapped.out
// RUN: mncore-opt %t.strided.task.mlir -p 'convert-task-to-mncore{machine=mncore2 matmul_kernel=swapped views=false},mncore-schedule' | mncore-run --random-inputs 3 | diff - %t.swapped.out
// RUN: mncore-opt %t.strided.task.mlir -p 'convert-task-to-mncore{machine=mncore2 matmul_kernel=streaming},mncore-schedule' | mncore-run --random-inputs 3 > %t.streaming.out
// RUN: mncore-opt %t.strided.task.mlir -p 'convert-task-to-mncore{machine=mncore2 matmul_kernel=streaming views=false},mncore-schedule' | mncore-run --random-inputs 3 | diff - %t.streaming.out

// STRIDED:      mncore.buffer @buffer0 dram[[[A:[0-9]+]]] words 48{{$}}
// STRIDED-NEXT: mncore.buffer @buffer1 dram[[[A]]] words 48 shape [8, 6] strides [1, 8]
// STRIDED-NEXT: mncore.buffer @buffer2 dram[[[B:[0-9]+]]] words 30{{$}}
// STRIDED-NEXT: mncore.buffer @buffer3 dram[[[B]]] words 30 shape [5, 6] strides [1, 5]
// STRIDED-NEXT: mncore.buffer @buffer4 dram[{{[0-9]+}}] words 24 shape [6, 4] strides [8, 2]
// STRIDED-NEXT: mncore.buffer @buffer5 dram[[[A]]] words 48 shape [2, 4, 6] strides [4, 1, 8]
// STRIDED-NEXT: mncore.buffer @buffer6 dram[{{[0-9]+}}] words 48{{$}}
