// mncore-opt --help lists the registered passes and targets. COLUMNS is set so that
// argparse does not wrap the lists.
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

// Each listed pass really runs on a trivial module.
// RUN: mncore-opt %s -p canonicalize,cse,dce,graph-decompose,graph-fuse-elementwise | filecheck %s --check-prefix=RUNS
// RUNS: func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
// RUNS:   func.return %x : tensor<2xf32>

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
