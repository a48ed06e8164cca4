// mncore-run: runs the module's @main (or the function --function names) on --args
// literals or on seeded random inputs, prints each result as `resultN = TYPE: VALUES`,
// saves them with --save-outputs, and reports bad inputs as one `mncore-run:` message.

func.func @main(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>, tensor<f32>) {
  %0 = graph.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  %2 = graph.sum %1 dims = array<i64: 1> : tensor<2x3xf32> -> tensor<2xf32>
  %3 = graph.amax %0 dims = array<i64: 0, 1> : tensor<2x3xf32> -> tensor<f32>
  func.return %1, %2, %3 : tensor<2x3xf32>, tensor<2xf32>, tensor<f32>
}

func.func @narrow(%a: tensor<3xbf16>) -> tensor<3xbf16> {
  %c = graph.constant dense<[1.5, 3.14159, -2.0]> : tensor<3xbf16>
  %0 = graph.mul %a, %c : tensor<3xbf16>, tensor<3xbf16> -> tensor<3xbf16>
  %1 = graph.exp %0 : tensor<3xbf16>
  func.return %1 : tensor<3xbf16>
}

func.func @scale(%x: tensor<3xi64>) -> tensor<3xi64> {
  %c = graph.constant dense<[2, 3, 4]> : tensor<3xi64>
  %0 = graph.mul %x, %c : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}

// x + b = [[1.5, -1, 5.5], [-3.5, 6, -3.5]]; relu; row sums 7 and 6; the max is 6.
// RUN: mncore-run %s --args 'dense<[[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]> : tensor<2x3xf32>' 'dense<[0.5, 1.0, 2.5]> : tensor<3xf32>' | filecheck %s --check-prefix=ARGS
// ARGS:      {{\A}}result0 = tensor<2x3xf32>: {{\[\[}}1.5, 0. , 5.5],
// ARGS-NEXT: {{^}} [0. , 6. , 0. ]]
// ARGS-NEXT: {{^}}result1 = tensor<2xf32>: [7., 6.]
// ARGS-NEXT: {{^}}result2 = tensor<f32>: 6.
// ARGS-NOT:  {{.}}

// A splat literal is a whole tensor: 1 + b = [1.5, 2, 3.5] in both rows.
// RUN: mncore-run %s --args 'dense<1.0> : tensor<2x3xf32>' 'dense<[0.5, 1.0, 2.5]> : tensor<3xf32>' | filecheck %s --check-prefix=SPLAT
// SPLAT:      result0 = tensor<2x3xf32>: {{\[\[}}1.5, 2. , 3.5],
// SPLAT-NEXT: {{^}} [1.5, 2. , 3.5]]
// SPLAT-NEXT: result1 = tensor<2xf32>: [7., 7.]
// SPLAT-NEXT: result2 = tensor<f32>: 3.5

// --function picks another function; integers stay integers: [1, -2, 5] * [2, 3, 4].
// RUN: mncore-run %s --function scale --args 'dense<[1, -2, 5]> : tensor<3xi64>' | filecheck %s --check-prefix=FUNC
// FUNC:     {{\A}}result0 = tensor<3xi64>: [ 2, -6, 20]
// FUNC-NOT: {{.}}

// Random inputs: every result is printed, and a seed always gives the same values.
// RUN: mncore-run %s --random-inputs 0 > %t.seed0
// RUN: filecheck %s --check-prefix=RANDOM --input-file %t.seed0
// RANDOM:      {{\A}}result0 = tensor<2x3xf32>: {{\[\[}}{{[0-9]}}
// RANDOM:      {{^}}result1 = tensor<2xf32>: [{{[0-9]}}
// RANDOM-NEXT: {{^}}result2 = tensor<f32>: {{-?[0-9]}}
// RUN: mncore-run %s --random-inputs 0 > %t.seed0.again
// RUN: diff %t.seed0 %t.seed0.again
// RUN: mncore-run %s --random-inputs 1 > %t.seed1
// RUN: not diff %t.seed0 %t.seed1

// Random integers are drawn from [0, --int-high): with 1, all zeros.
// RUN: mncore-run %s --function scale --random-inputs 5 --int-high 1 | filecheck %s --check-prefix=INT-HIGH
// INT-HIGH: result0 = tensor<3xi64>: [0, 0, 0]

// --save-outputs writes result0, result1, ... to an .npz file, with the printed values.
// RUN: rm -f %t.npz
// RUN: mncore-run %s --args 'dense<1.0> : tensor<2x3xf32>' 'dense<[0.5, 1.0, 2.5]> : tensor<3xf32>' --save-outputs %t.npz
// RUN: %{python} -c "import numpy as np; d = np.load('%t.npz'); print(sorted(d.files)); print(d['result0'].dtype, d['result0'].shape, d['result0'].tolist()); print(d['result1'].tolist(), float(d['result2']))" | filecheck %s --check-prefix=SAVED
// SAVED:      ['result0', 'result1', 'result2']
// SAVED-NEXT: float32 (2, 3) {{\[\[}}1.5, 2.0, 3.5], [1.5, 2.0, 3.5]]
// SAVED-NEXT: [7.0, 7.0] 3.5

// Errors: one line each, exit status 1, no traceback.

// An argument of the wrong shape.
// RUN: not mncore-run %s --args 'dense<[1.0, 2.0]> : tensor<2xf32>' 'dense<[0.5, 1.0, 2.5]> : tensor<3xf32>' 2>&1 | filecheck %s --check-prefix=SHAPE
// SHAPE-NOT: Traceback
// SHAPE:     {{\A}}mncore-run: error: --args[0] has type tensor<2xf32>, the function expects tensor<2x3xf32>
// SHAPE-NOT: {{.}}

// A literal that does not parse: the position is within that --args entry.
// RUN: not mncore-run %s --args 'dense<[1.0, 2.0> : tensor<2xf32>' 'dense<[0.5, 1.0, 2.5]> : tensor<3xf32>' 2>&1 | filecheck %s --check-prefix=MALFORMED
// MALFORMED-NOT:  Traceback
// MALFORMED:      {{\A}}mncore-run: --args[0]:1:16: error: ']' expected
// MALFORMED-NEXT: {{^}}dense<[1.0, 2.0> : tensor<2xf32>
// MALFORMED-NEXT: {{^}}               ^
// MALFORMED-NOT:  {{.}}

// An attribute that is not a dense tensor literal.
// RUN: not mncore-run %s --args '1.0' 'dense<[0.5, 1.0, 2.5]> : tensor<3xf32>' 2>&1 | filecheck %s --check-prefix=NOT-DENSE
// NOT-DENSE-NOT: Traceback
// NOT-DENSE:     {{\A}}mncore-run: error: --args[0] is not a dense tensor literal: 1.0
// NOT-DENSE-NOT: {{.}}

// No inputs at all for a function that takes arguments.
// RUN: not mncore-run %s 2>&1 | filecheck %s --check-prefix=NO-ARGS
// NO-ARGS-NOT: Traceback
// NO-ARGS:     {{\A}}mncore-run: error: @main takes 2 arguments: give --args or --random-inputs
// NO-ARGS-NOT: {{.}}

// Too few --args.
// RUN: not mncore-run %s --args 'dense<1.0> : tensor<2x3xf32>' 2>&1 | filecheck %s --check-prefix=FEW-ARGS
// FEW-ARGS-NOT: Traceback
// FEW-ARGS:     {{\A}}mncore-run: error: @main takes 2 arguments, got 1
// FEW-ARGS-NOT: {{.}}

// A function that does not exist.
// RUN: not mncore-run %s --function nosuch --random-inputs 0 2>&1 | filecheck %s --check-prefix=NO-FUNC
// NO-FUNC-NOT: Traceback
// NO-FUNC:     {{\A}}mncore-run: error: no function named @nosuch
// NO-FUNC-NOT: {{.}}

// An input file that does not exist, and one that does not verify.
// RUN: not mncore-run %S/Inputs/does_not_exist.mlir --random-inputs 0 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING-NOT: Traceback
// MISSING:     {{\A}}mncore-run: error: cannot open {{.*}}does_not_exist.mlir: no such file
// MISSING-NOT: {{.}}
// RUN: not mncore-run %S/Inputs/invalid_op.mlir --random-inputs 0 2>&1 | filecheck %s --check-prefix=INVALID
// INVALID-NOT:  Traceback
// INVALID:      {{\A}}mncore-run: {{.*}}invalid_op.mlir:3:3: error: graph.add: shapes (2, 3), (4,) do not broadcast
// INVALID-NEXT: {{^}}  %0 = graph.add
// INVALID-NEXT: {{^}}  ^^
// INVALID-NOT:  {{.}}

// bf16 rounds after each op as torch's CPU kernels do: the literal 3.14159 holds
// 3.140625, 0.5 * 3.140625 = 1.5703125 is exact, and its exp, 4.8077, rounds to
// 4.8125 (torch.exp(a * c) in bfloat16 gives the same three values).
// RUN: mncore-run %s --function narrow --args 'dense<[1.0, 0.5, 2.0]> : tensor<3xbf16>' | filecheck %s --check-prefix=BF16
// BF16: {{\A}}result0 = tensor<3xbf16>: [4.46875 , 4.8125  , 0.018311]

// A recursive chain of calls is refused at the call that closes it (it ran into
// Python's recursion limit: "maximum recursion depth exceeded").
// RUN: not mncore-run %S/Inputs/recursive_call.mlir --random-inputs 0 2>&1 | filecheck %s --check-prefix=RECURSIVE
// RECURSIVE:      {{\A}}mncore-run: {{.*}}recursive_call.mlir:8:3: error: func.call @main: a recursive call (@main -> @twice -> @main): graph functions have no control flow, so it would never end
// RECURSIVE-NEXT: %z = func.call @main(%y) : (tensor<4xf32>) -> tensor<4xf32>

// A negative seed is refused by its flag (numpy said "expected non-negative integer"),
// and an output file in a folder that does not exist before anything runs (it failed
// after printing the results).
// RUN: not mncore-run %s --function scale --random-inputs -1 2>&1 | filecheck %s --check-prefix=SEED
// SEED: mncore-run: error: argument --random-inputs: -1 is not a seed (a non-negative integer)
// RUN: not mncore-run %s --function scale --random-inputs 0 --save-outputs %t.missing/out.npz 2>&1 | filecheck %s --check-prefix=NO-FOLDER
// NO-FOLDER-NOT: result0
// NO-FOLDER: mncore-run: error: cannot write {{.*}}missing/out.npz: no folder {{.*}}missing
