// convert-task-to-mncore{views=true} (the default): a reshape of an intermediate, or a
// step-1 slice with only unit dimensions before its dimension, is a view: its buffer
// lies on its source's DRAM words (here %r on %a, %s eight words in) and its copy task
// emits nothing. A slice of columns (not one run of words) and a reshape into an
// output stay copies. Either way the program equals the task level.
// RUN: mncore-opt %S/Inputs/views.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false}' -o %t.task.mlir
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.views.mlir
// RUN: filecheck %s --input-file %t.views.mlir
// RUN: mncore-run %t.task.mlir --random-inputs 2 > %t.task.out
// RUN: mncore-run %t.views.mlir --random-inputs 2 | diff - %t.task.out
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{views=false},mncore-schedule' -o %t.copies.mlir
// RUN: mncore-run %t.copies.mlir --random-inputs 2 | diff - %t.task.out
// Six DMA loads with views (x for exp and for the output's reshape; a for the three
// negations; the column slice's copy), eight with every copy kept.
// RUN: grep -c '"load"' %t.views.mlir | filecheck %s --check-prefix=VIEW-LOADS
// RUN: grep -c '"load"' %t.copies.mlir | filecheck %s --check-prefix=COPY-LOADS
// VIEW-LOADS: {{^}}6{{$}}
// COPY-LOADS: {{^}}8{{$}}
// A source written again while its reshape is still to be read keeps the copy (the
// view would read the new values).
// RUN: mncore-run %S/Inputs/views_rewritten.mlir --random-inputs 1 > %t.rewritten.out
// RUN: mncore-opt %S/Inputs/views_rewritten.mlir -p 'convert-task-to-mncore,mncore-schedule' | mncore-run --random-inputs 1 | diff - %t.rewritten.out
// RUN: mncore-opt %S/Inputs/views_rewritten.mlir -p 'convert-task-to-mncore,mncore-schedule' | filecheck %s --check-prefix=REWRITTEN

// Slices cut into tasks of two elements (Inputs/views_tiled.mlir): a column slice whose
// tasks read one row each stays a copy (the buffer's shape decides, not the tile's);
// a slice after a unit dimension, tiled along the next one, is a view, 12 words in.
// RUN: mncore-opt %S/Inputs/views_tiled.mlir -p 'convert-graph-to-task{target=mncore reuse_buffers=false elementwise_tile=2}' -o %t.tiled.task.mlir
// RUN: mncore-run %t.tiled.task.mlir --random-inputs 1 > %t.tiled.out
// RUN: mncore-opt %t.tiled.task.mlir -p 'convert-task-to-mncore,mncore-schedule' -o %t.tiled.mlir
// RUN: mncore-run %t.tiled.mlir --random-inputs 1 | diff - %t.tiled.out
// RUN: filecheck %s --input-file %t.tiled.mlir --check-prefix=TILED

// CHECK:      mncore.buffer @buffer0 dram[128] words 32
// CHECK-NEXT: mncore.buffer @buffer1 dram[128] words 32
// CHECK-NEXT: mncore.buffer @buffer2 dram[136] words 16
// CHECK-NEXT: mncore.buffer @buffer3 dram[{{[0-9]+}}] words 8

// REWRITTEN:     mncore.buffer @buffer0 dram[[[A:[0-9]+]]] words 32
// REWRITTEN-NOT: mncore.buffer @buffer1 dram[[[A]]]
// REWRITTEN:     mncore.buffer @buffer1 dram[{{[0-9]+}}] words 32

// TILED:      mncore.buffer @buffer0 dram[{{[0-9]+}}] words 32
// TILED-NEXT: mncore.buffer @buffer1 dram[{{[0-9]+}}] words 8
// TILED-NEXT: mncore.buffer @buffer2 dram[144] words 60
// TILED-NEXT: mncore.buffer @buffer3 dram[156] words 18
