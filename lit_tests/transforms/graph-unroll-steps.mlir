// graph-unroll-steps: the step runs 3 times in one function; output 1 (the new state)
// feeds input 0 at the next step, input 1 (a weight) is read as it is; each step's
// output 0 is returned, then the last state.
// RUN: mncore-opt %s -p 'graph-unroll-steps{steps=3 carry=1,-1}' | filecheck %s
// RUN: mncore-opt %s -p 'graph-unroll-steps{steps=3 carry=1,-1 collect=1,0}' | filecheck %s --check-prefix=COLLECT

// The unrolled function runs as the step applied three times would.
// RUN: mncore-opt %s -p 'graph-unroll-steps{steps=3 carry=1,-1}' -o %t.unrolled.mlir
// RUN: %{python} -c "from mncore_ir.parsing import parse_module; from mncore_ir.pipeline import make_context; from mncore_ir.targets.graph_interpreter import run_function; import numpy as np; s, w = np.array([1.5, -2.0], np.float32), np.array([0.5, 3.0], np.float32); out = run_function(parse_module(make_context(), open('%t.unrolled.mlir').read()), [s, w]); print([float(o) for o in out[:3]], [float(v) for v in out[3]])" | filecheck %s --check-prefix=EXEC
// EXEC: [-5.25, -17.625, -53.8125] [0.1875, -54.0]

// Bad options: one message each, no traceback.
// RUN: not mncore-opt %s -p 'graph-unroll-steps{steps=2 carry=1}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not mncore-opt %s -p 'graph-unroll-steps{steps=2 carry=0,-1}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not mncore-opt %s -p 'graph-unroll-steps{steps=0 carry=1,-1}' 2>&1 | filecheck %s --check-prefix=STEPS
// RUN: not mncore-opt %s -p 'graph-unroll-steps{steps=2 carry=1,-1 function=step}' 2>&1 | filecheck %s --check-prefix=NAME

func.func @main(%state: tensor<2xf32>, %w: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>) {
  %next = graph.mul %state, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %total = graph.sum %next dims = array<i64: 0> : tensor<2xf32> -> tensor<f32>
  func.return %total, %next : tensor<f32>, tensor<2xf32>
}

// CHECK:      func.func @main(%state: tensor<2xf32>, %w: tensor<2xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<2xf32>) {
// CHECK-NEXT:   [[N1:%\w+]] = graph.mul %state, %w
// CHECK-NEXT:   [[T1:%\w+]] = graph.sum [[N1]]
// CHECK-NEXT:   [[N2:%\w+]] = graph.mul [[N1]], %w
// CHECK-NEXT:   [[T2:%\w+]] = graph.sum [[N2]]
// CHECK-NEXT:   [[N3:%\w+]] = graph.mul [[N2]], %w
// CHECK-NEXT:   [[T3:%\w+]] = graph.sum [[N3]]
// CHECK-NEXT:   func.return [[T1]], [[T2]], [[T3]], [[N3]] : tensor<f32>, tensor<f32>, tensor<f32>, tensor<2xf32>

// COLLECT:    func.return [[N1:%\w+]], [[T1:%\w+]], [[N2:%\w+]], [[T2:%\w+]], [[N3:%\w+]], [[T3:%\w+]], [[N3]] : tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<f32>, tensor<2xf32>

// COUNT: graph-unroll-steps: carry has 1 entries; @main has 2 inputs
// TYPE: graph-unroll-steps: input 0 (tensor<2xf32>) cannot be carried from output 0: output 0 is tensor<f32>
// STEPS: graph-unroll-steps: steps must be >= 1
// NAME: graph-unroll-steps: no func.func @step
