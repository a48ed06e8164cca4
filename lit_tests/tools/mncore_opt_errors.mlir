// mncore-opt's user errors: each one gives exactly one `mncore-opt: ...` message (with
// file:line:col, the source line and a caret where there is a position), a non-zero
// exit status and no Python traceback. The inputs that fail to parse or to verify are
// in Inputs/; this file itself is valid and is the input of the pass-pipeline errors.

// This file is fine as it is, and cse is a known pass:
// RUN: mncore-opt %s -p cse | filecheck %s --check-prefix=OK
// OK:      func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
// OK-NEXT:   %0 = graph.neg %x : tensor<2xf32>
// OK-NEXT:   func.return %0 : tensor<2xf32>

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.neg %x : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// A syntax error.
// RUN: not mncore-opt %S/Inputs/unparsable.mlir 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX-NOT:  Traceback
// SYNTAX:      {{\A}}mncore-opt: {{.*}}Inputs{{[/\\]}}unparsable.mlir:3:21: error: Expected ':'
// SYNTAX-NEXT: {{^}}  %0 = graph.neg %x tensor<2xf32>
// SYNTAX-NEXT: {{^}}                    ^^^^^^
// SYNTAX-NOT:  {{.}}

// An op no dialect defines.
// RUN: not mncore-opt %S/Inputs/unknown_op.mlir 2>&1 | filecheck %s --check-prefix=UNKNOWN-OP
// UNKNOWN-OP-NOT:  Traceback
// UNKNOWN-OP:      {{\A}}mncore-opt: {{.*}}unknown_op.mlir:3:20: error: Operation graph.bogus is not registered
// UNKNOWN-OP-NEXT: {{^}}  %0 = graph.bogus %x : tensor<2xf32>
// UNKNOWN-OP-NEXT: {{^}}                   ^^
// UNKNOWN-OP-NOT:  {{.}}

// An op that fails its verifier is reported like a parse error, at the op.
// RUN: not mncore-opt %S/Inputs/invalid_op.mlir 2>&1 | filecheck %s --check-prefix=VERIFY
// VERIFY-NOT:  Traceback
// VERIFY:      {{\A}}mncore-opt: {{.*}}invalid_op.mlir:3:3: error: graph.add: shapes (2, 3), (4,) do not broadcast
// VERIFY-NEXT: {{^}}  %0 = graph.add %x, %y : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
// VERIFY-NEXT: {{^}}  ^^
// VERIFY-NOT:  {{.}}

// The same through a pass pipeline: verification happens before any pass runs.
// RUN: not mncore-opt %S/Inputs/invalid_op.mlir -p cse,dce 2>&1 | filecheck %s --check-prefix=VERIFY

// An input file that does not exist.
// RUN: not mncore-opt %S/Inputs/does_not_exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING-NOT: Traceback
// MISSING:     {{\A}}mncore-opt: error: cannot open {{.*}}does_not_exist.mlir: no such file
// MISSING-NOT: {{.}}

// A pass that is not registered.
// RUN: not mncore-opt %s -p nosuchpass 2>&1 | filecheck %s --check-prefix=NO-PASS
// NO-PASS-NOT: Traceback
// NO-PASS:     {{\A}}mncore-opt: error: Unrecognized passes: ['nosuchpass']
// NO-PASS-NOT: {{.}}

// An unknown pass in the middle of a pipeline of known ones.
// RUN: not mncore-opt %s -p cse,nosuchpass,dce 2>&1 | filecheck %s --check-prefix=NO-PASS

// An option the pass does not have.
// RUN: not mncore-opt %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION-NOT: Traceback
// NO-OPTION:     {{\A}}mncore-opt: error: Provided arguments ["bogus"] not found in expected arguments []
// NO-OPTION-NOT: {{.}}

// An unknown target is refused by the argument parser (usage, then one error line).
// RUN: not mncore-opt %s -t nosuchtarget 2>&1 | filecheck %s --check-prefix=NO-TARGET
// NO-TARGET-NOT: Traceback
// NO-TARGET:     {{\A}}usage: mncore-opt
// NO-TARGET:     mncore-opt: error: argument -t/--target: invalid choice: 'nosuchtarget' (choose from mlir, dot, triton, mncore-asm)
// NO-TARGET-NOT: {{.}}

// A failed run leaves the -o file as it was; a successful one replaces it.
// RUN: echo "user data" > %t.out
// RUN: not mncore-opt %S/Inputs/invalid_op.mlir -o %t.out
// RUN: filecheck %s --check-prefix=KEPT --input-file %t.out
// KEPT: {{\A}}user data
// RUN: mncore-opt %s -o %t.out
// RUN: filecheck %s --check-prefix=OK --input-file %t.out

// An error a later pass raises at an op that an earlier pass made of a parsed one (the
// task body's copy of the product): reported at the parsed op's source location, which
// the parser gives every op and passes copy onto what they make of it.
// RUN: not mncore-opt %S/Inputs/integer_overflow.mlir -p 'convert-graph-to-task{target=mncore},convert-task-to-mncore' 2>&1 | filecheck %s --check-prefix=LATER-PASS
// LATER-PASS-NOT:  Traceback
// LATER-PASS:      {{\A}}mncore-opt: {{.*}}integer_overflow.mlir:3:3: error: convert-task-to-mncore: graph.mul in task.body @ew0 may take values in [-281474943156225, 281474943156225], beyond the ±2**24 that a word (f32) holds exactly
// LATER-PASS-NEXT: {{^}}  %a = graph.mul %x, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
// LATER-PASS-NEXT: {{^}}  ^^
// LATER-PASS-NOT:  {{.}}
// The location is printed with --print-debuginfo, on the task and on its body's op:
// RUN: mncore-opt %S/Inputs/integer_overflow.mlir -p 'convert-graph-to-task{target=mncore}' --print-debuginfo | filecheck %s --check-prefix=DEBUGINFO
// DEBUGINFO: graph.mul {{.*}} loc("{{.*}}integer_overflow.mlir":3:3)
// DEBUGINFO: task.task @ew0 {{.*}} loc("{{.*}}integer_overflow.mlir":3:3)
