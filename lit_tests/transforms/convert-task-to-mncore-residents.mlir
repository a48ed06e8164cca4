// convert-task-to-mncore{resident=true} (the default): a lane task that reads the words
// an earlier wave stored, in the same lanes, reads them in LM. A result computed in GRF
// is copied into a resident LM slot as it is stored (the copy dropped if no later wave
// reads it); exp's wave is read by mul and, after tanh, by sub; the transposed read of
// exp (other lanes) loads it from DRAM. The numbers are those of the program read
// through DRAM (resident=false), bit for bit (tests/test_mncore_residents.py compares
// with eager), and mncore-forward-stores then drops the stores no load reads.
// RUN: mncore-opt %S/Inputs/residents.mlir -p 'convert-graph-to-task{target=mncore}' -o %t.task.mlir
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore' -o %t.kept.mlir
// RUN: filecheck %s --input-file %t.kept.mlir
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{resident=false},mncore-forward-stores,mncore-schedule' | mncore-run --random-inputs 2 > %t.dram.out
// RUN: mncore-opt %t.kept.mlir -p 'mncore-forward-stores,mncore-schedule' | mncore-run --random-inputs 2 | diff - %t.dram.out
// Loads of intermediates (buffers at dram[160..255]): the transpose's only; through
// DRAM (resident=false), five. Stores left of them after mncore-forward-stores: exp's.
// RUN: grep -c '"load" dram\[\(160\|192\|224\)\]' %t.kept.mlir | filecheck %s --check-prefix=KEPT-LOADS
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{resident=false}' | grep -c '"load" dram\[\(160\|192\|224\)\]' | filecheck %s --check-prefix=DRAM-LOADS
// RUN: mncore-opt %t.kept.mlir -p 'mncore-forward-stores' | grep -c -e '-> dram\[\(160\|192\|224\)\]' | filecheck %s --check-prefix=KEPT-STORES
// KEPT-LOADS: {{^}}1{{$}}
// DRAM-LOADS: {{^}}5{{$}}
// KEPT-STORES: {{^}}1{{$}}

// CHECK:      mncore.buffer @buffer0 dram[160] words 32
// CHECK:      "fexp" {{.*}} -> [[EXP:grf[01].[0-9]+.]]
// CHECK:      "store" {{.*}} -> dram[160]
// CHECK-NEXT: mncore.wait
// CHECK-NEXT: "fpass" [[EXP]] -> [[E:lm[01].[0-9]+.]]
// CHECK-NOT:  "load" dram[160]
// CHECK:      "fmul" [[E]]
// CHECK-NOT:  "load" dram[160]
// CHECK:      "fsub" {{.*}}, [[E]] -> [[SUB:grf[01].[0-9]+.]]
// CHECK-NOT:  "fpass" [[SUB]]
// CHECK:      "load" dram[160] -> {{.*}} run 1 stride 8 rows 8 pitch 1
