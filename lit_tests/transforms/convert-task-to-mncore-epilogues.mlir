// convert-task-to-mncore{epilogues=true} (the default): a matmul's cheap pointwise
// consumer (here F.linear's bias and a ReLU) runs on the stationary kernel's
// accumulators. The bias loads in their layout (a word per L1B for each accumulator
// column), fadd and fmax read the accumulators, and the results store by the path that
// would have stored C, whose buffer no instruction writes. The numbers are the
// unfused program's bit for bit, on both machines (tests/test_mncore_epilogues.py
// also compares with eager).
// RUN: mncore-opt %S/Inputs/epilogue.mlir -p 'graph-fuse-elementwise,convert-graph-to-task{target=mncore}' -o %t.task.mlir
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{matmul_kernel=stationary}' | filecheck %s
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{matmul_kernel=stationary epilogues=false},mncore-schedule' | mncore-run --random-inputs 2 > %t.unfused.out
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{matmul_kernel=stationary},mncore-schedule' | mncore-run --random-inputs 2 | diff - %t.unfused.out
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{machine=mncore2 matmul_kernel=swapped epilogues=false},mncore-schedule' | mncore-run --random-inputs 2 > %t.unfused2.out
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{machine=mncore2 matmul_kernel=swapped},mncore-schedule' | mncore-run --random-inputs 2 | diff - %t.unfused2.out
// Unfused, C is stored (8 columns of 6 words) and loaded back by the consumer.
// RUN: mncore-opt %t.task.mlir -p 'convert-task-to-mncore{matmul_kernel=stationary epilogues=false}' | grep -c -e '-> dram\[28[89]\]' -e '-> dram\[29[0-9]\]' | filecheck %s --check-prefix=UNFUSED
// UNFUSED: {{^}}8{{$}}

// CHECK:      mncore.tensor @output0 output dram[240] : tensor<6x8xf32>
// CHECK:      mncore.buffer @buffer0 dram[288] words 48
// CHECK-NOT:  -> dram[{{2(8[89]|9[0-9])|3[0-2][0-9]|33[0-5]}}]
// CHECK:      "mma" {{.*}} -> [[ACC:grf1.4.]]
// CHECK-NOT:  -> dram[{{2(8[89]|9[0-9])|3[0-2][0-9]|33[0-5]}}]
// CHECK:      "load" dram[224] -> {{.*}} words 8 run 1 stride 0 rows 2 pitch 4
// CHECK:      "bcast" {{.*}} -> [[BIAS:grf0.4.]]
// CHECK:      "fadd" [[ACC]], [[BIAS]] -> [[SUM:grf[01].[0-9]+.]]
// CHECK:      "fmax" [[SUM]], {{.*}} -> [[RELU:grf[01].[0-9]+.]]
// CHECK:      "gather" [[RELU]]
// CHECK-NOT:  -> dram[{{2(8[89]|9[0-9])|3[0-2][0-9]|33[0-5]}}]
// CHECK:      "store" {{.*}} -> dram[240] words 6 run 1 stride 8
