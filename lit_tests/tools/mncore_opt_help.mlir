// mncore-opt --help lists the registered passes with their options and defaults, the
// targets, and how errors, --split-input-file and --verify-diagnostics work. COLUMNS is
// set so that argparse does not wrap the lists.
// RUN: env COLUMNS=1000 mncore-opt --help | filecheck %s
// CHECK:      usage: mncore-opt
// CHECK:      Available targets are:
// CHECK-SAME:   mlir,dot
// CHECK:      Available passes are:
// CHECK-SAME:   canonicalize
// CHECK-SAME:   cse
// CHECK-SAME:   dce
// CHECK-SAME:   graph-decompose
// CHECK-SAME:   graph-fuse-elementwise
// CHECK-SAME:   graph-unroll-steps
// CHECK:      --verify-diagnostics  check the diagnostics {{.*}} against the input's expected-* directives
// CHECK:      --split-input-file    process each part of the input between '// -----' lines on its own

// Each pass, with its summary and each option as `name: type = default`.
// CHECK:      {{^}}passes (-p 'name,name{option=value option=value}'):
// CHECK-NEXT: {{^}}  canonicalize             Applies all canonicalization patterns
// CHECK-NEXT: {{^}}  convert-graph-to-task    Lower every graph func.func to a task.kernel
// CHECK-NEXT: {{^}}      workers: int = 132
// CHECK-NEXT: {{^}}      matmul_tile: tuple[int, ...] = 64,64
// CHECK-NEXT: {{^}}      elementwise_tile: int = 4096
// CHECK-NEXT: {{^}}      row_tile: int = 16
// CHECK-NEXT: {{^}}      collectives: bool = true
// CHECK-NEXT: {{^}}      tile_collectives: bool = true
// CHECK-NEXT: {{^}}      permuted_reads: bool = true
// CHECK-NEXT: {{^}}      split_k: int = 64
// CHECK-NEXT: {{^}}      fill_workers: bool = true
// CHECK-NEXT: {{^}}      in_place_index_put: bool = true
// CHECK-NEXT: {{^}}      target: str = gpu
// CHECK-NEXT: {{^}}      reuse_buffers: bool = true
// CHECK-NEXT: {{^}}      max_tasks: int = 50000
// CHECK-NEXT: {{^}}  convert-task-to-mncore   Lower every task.kernel to an mncore.program
// CHECK-NEXT: {{^}}      machine: str = tiny
// CHECK-NEXT: {{^}}      matmul_kernel: str = auto
// CHECK-NEXT: {{^}}      max_instructions: int = 2000000
// CHECK-NEXT: {{^}}      views: bool = true
// CHECK-NEXT: {{^}}      resident: bool = true
// CHECK-NEXT: {{^}}      packed: bool = true
// CHECK-NEXT: {{^}}      epilogues: bool = true
// CHECK-NEXT: {{^}}  cse{{$}}
// CHECK-NEXT: {{^}}  dce{{$}}
// CHECK-NEXT: {{^}}  graph-decompose          Expand composite graph ops
// CHECK-NEXT: {{^}}      primitives: bool = false
// CHECK-NEXT: {{^}}      convolutions: bool = false
// CHECK-NEXT: {{^}}      composites: bool = true
// CHECK-NEXT: {{^}}      lookups: bool = false
// CHECK-NEXT: {{^}}  graph-fuse-elementwise   Fuse chains of elementwise graph ops
// CHECK-NEXT: {{^}}      min_ops: int = 2
// CHECK-NEXT: {{^}}  graph-unroll-steps       Run a step function several times in one function, outputs feeding inputs
// CHECK-NEXT: {{^}}      steps: int = 2
// CHECK-NEXT: {{^}}      carry: tuple[int, ...] ={{ ?$}}
// CHECK-NEXT: {{^}}      collect: tuple[int, ...] | None = none
// CHECK-NEXT: {{^}}      function: str = main
// CHECK-NEXT: {{^}}  mncore-expand-repeats    Replace every mncore.repeat by the instructions it issues
// CHECK-NEXT: {{^}}  mncore-forward-stores    Hand data between tasks in L2BM instead of through DRAM
// CHECK-NEXT: {{^}}  mncore-schedule          Give every mncore.program's instructions

// Each target.
// CHECK:      {{^}}targets (-t name):
// CHECK-NEXT: {{^}}  mlir{{$}}
// CHECK-NEXT: {{^}}  dot                      Graphviz digraph
// CHECK-NEXT: {{^}}  triton                   A Python module with the persistent Triton megakernel
// CHECK:      {{^}}  mncore-asm               Assembly text of every mncore.program

// How errors and the two flags work.
// CHECK:      {{^}}errors:
// CHECK:      internal error in pass NAME
// CHECK:      MNCORE_TRACEBACK=1
// CHECK:      {{^}}--split-input-file:
// CHECK-NEXT: {{^}}  The input is cut at each '// -----' line
// CHECK:      {{^}}--verify-diagnostics (as in mlir-opt):
// CHECK:      expected-error@+1 {{[{][{]}}text{{[}][}]}}
// CHECK:      expected-error@unknown
// CHECK:      expected-warning, expected-note, expected-remark
// CHECK:      expected-error-re

// Each listed pass really runs on a trivial module.
// RUN: mncore-opt %s -p 'canonicalize,cse,dce,graph-decompose,graph-fuse-elementwise,graph-unroll-steps{steps=1 carry=-1 function=f}' | filecheck %s --check-prefix=RUNS
// RUNS: func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
// RUNS:   func.return %x : tensor<2xf32>

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
