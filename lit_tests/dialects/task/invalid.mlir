// Verifier failures of the task dialect, one chunk per failure (chunks are split on
// the dashed separator lines): every check of TaskOp.verify_ and KernelOp.verify_
// (dialects/task.py), the parent-op traits, the operand types and the one parse error
// of the custom syntax. mncore-opt reports each as a parse error at the first token of
// the op to blame (a task, an event, or the kernel for its own checks): `file:line:col`,
// the source line, a caret and the message.
// RUN: mncore-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// An input region with a negative offset (the syntax takes negative integers).
task.kernel @in_negative(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[-1:4, 0:16]) outs(%y[0:8, 0:16])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[-1:4, 0:16]) outs(%y[0:8, 0:16])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task input 0: region [-1:4, 0:16] is out of bounds in dimension 0 (size 8)
  task.return
}

// -----

// An input region of size 0 (`[3:3]`).
task.kernel @in_empty(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[3:3, 0:16]) outs(%y[0:8, 0:16])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[3:3, 0:16]) outs(%y[0:8, 0:16])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task input 0: region [3:3, 0:16] is out of bounds in dimension 0 (size 8)
  task.return
}

// -----

// An input region whose end is before its start.
task.kernel @in_reversed(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8, 5:2]) outs(%y[0:8, 0:16])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 5:2]) outs(%y[0:8, 0:16])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task input 0: region [0:8, 5:2] is out of bounds in dimension 1 (size 16)
  task.return
}

// -----

// An input region ending beyond the size, in the second dimension of the second input.
task.kernel @in_too_far(%x: memref<8x16xf32>, %z: memref<4x4xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8, 0:16], %z[0:4, 2:5]) outs(%y[0:8, 0:16])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 0:16], %z[0:4, 2:5]) outs(%y[0:8, 0:16])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task input 1: region [0:4, 2:5] is out of bounds in dimension 1 (size 4)
  task.return
}

// -----

// An input region of a lower rank than the input.
task.kernel @in_rank_low(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8]) outs(%y[0:8, 0:16])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8]) outs(%y[0:8, 0:16])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task input 0: region [0:8] does not have rank 2
  task.return
}

// -----

// An input region of a higher rank than the input.
task.kernel @in_rank_high(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.task "t" ins(%x[0:8, 0:1]) outs(%y[0:8])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 0:1]) outs(%y[0:8])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task input 0: region [0:8, 0:1] does not have rank 1
  task.return
}

// -----

// An output region ending beyond the size in the first dimension.
task.kernel @out_too_far(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:9, 0:16])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:9, 0:16])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task output 0: region [0:9, 0:16] is out of bounds in dimension 0 (size 8)
  task.return
}

// -----

// An output region ending beyond the size in the second dimension (the elements in
// bounds are each written once).
task.kernel @out_too_far_1(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8, 0:8])
  task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8, 8:17])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8, 8:17])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task output 0: region [0:8, 8:17] is out of bounds in dimension 1 (size 16)
  task.return
}

// -----

// An output region of size 0 (the other task writes every element).
task.kernel @out_empty(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8, 0:16])
  task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8, 3:3])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8, 3:3])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task output 0: region [0:8, 3:3] is out of bounds in dimension 1 (size 16)
  task.return
}

// -----

// An output region with a negative offset (the other task writes every element).
task.kernel @out_negative(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.task "t" ins(%x[0:8]) outs(%y[0:8])
  task.task "t" ins(%x[0:8]) outs(%y[-1:7])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8]) outs(%y[-1:7])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task output 0: region [-1:7] is out of bounds in dimension 0 (size 8)
  task.return
}

// -----

// An output region of a lower rank than the output (it covers whole rows).
task.kernel @out_rank_low(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8, 0:16]) outs(%y[0:8])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task output 0: region [0:8] does not have rank 2
  task.return
}

// -----

// A buffer region out of bounds.
task.kernel @buffer_too_far(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %t = task.buffer : memref<4xf32>
  task.task "t" ins(%x[0:8]) outs(%t[0:8])
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8]) outs(%t[0:8])
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task.task output 0: region [0:8] is out of bounds in dimension 0 (size 4)
  task.task "t" ins(%x[0:8]) outs(%y[0:8])
  task.return
}

// -----

// An event with a trigger count higher than the number of tasks signalling it.
task.kernel @triggers_high(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 3
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %e = task.event triggers 3
  // CHECK-NEXT: ^^
  // CHECK-NEXT: event has trigger count 3 but 2 tasks signal it
  task.task "t" ins(%x[0:4]) outs(%y[0:4]) signal(%e)
  task.task "t" ins(%x[4:8]) outs(%y[4:8]) signal(%e)
  task.return
}

// -----

// An event with a trigger count lower than the number of tasks signalling it.
task.kernel @triggers_low(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %e = task.event triggers 1
  // CHECK-NEXT: ^^
  // CHECK-NEXT: event has trigger count 1 but 2 tasks signal it
  task.task "t" ins(%x[0:4]) outs(%y[0:4]) signal(%e)
  task.task "t" ins(%x[4:8]) outs(%y[4:8]) signal(%e)
  task.return
}

// -----

// An event that nobody signals but that needs one trigger (a task waits on it forever).
task.kernel @never_signalled(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %e = task.event triggers 1
  // CHECK-NEXT: ^^
  // CHECK-NEXT: event has trigger count 1 but 0 tasks signal it
  task.task "t" ins(%x[0:8]) outs(%y[0:8]) waits(%e)
  task.return
}

// -----

// A negative trigger count.
task.kernel @triggers_negative(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers -1
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %e = task.event triggers -1
  // CHECK-NEXT: ^^
  // CHECK-NEXT: event has trigger count -1 but 0 tasks signal it
  task.task "t" ins(%x[0:8]) outs(%y[0:8])
  task.return
}

// -----

// A task waiting on an event that a later task signals.
task.kernel @wait_later(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  task.task "first" ins(%x[0:4]) outs(%y[0:4]) waits(%e)
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "first" ins(%x[0:4]) outs(%y[0:4]) waits(%e)
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task 0 (first) waits on an event that task 1 signals: tasks must be in a topological order
  task.task "second" ins(%x[4:8]) outs(%y[4:8]) signal(%e)
  task.return
}

// -----

// A task waiting on an event with one signaller before it and one after it.
task.kernel @wait_between(%x: memref<9xf32>) -> (%y: memref<9xf32>) {
  %e = task.event triggers 2
  task.task "a" ins(%x[0:3]) outs(%y[0:3]) signal(%e)
  task.task "b" ins(%x[3:6]) outs(%y[3:6]) waits(%e)
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "b" ins(%x[3:6]) outs(%y[3:6]) waits(%e)
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task 1 (b) waits on an event that task 2 signals: tasks must be in a topological order
  task.task "c" ins(%x[6:9]) outs(%y[6:9]) signal(%e)
  task.return
}

// -----

// A task that waits on the event it signals itself.
task.kernel @wait_self(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  task.task "t" ins(%x[0:8]) outs(%y[0:8]) waits(%e) signal(%e)
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.task "t" ins(%x[0:8]) outs(%y[0:8]) waits(%e) signal(%e)
  // CHECK-NEXT: ^^^^^^^^^
  // CHECK-NEXT: task 0 (t) waits on an event that it signals itself: tasks must be in a topological order
  task.return
}

// -----

// An output element written twice (overlapping tiles): the first such element is named.
task.kernel @overlap(%x: memref<4x4xf32>) -> (%y: memref<4x4xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: task.kernel @overlap(%x: memref<4x4xf32>) -> (%y: memref<4x4xf32>) {
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: output 0 of task.kernel @overlap: element [2, 0] is written by 2 tasks, not exactly one
  task.task "t" ins(%x[0:4, 0:4]) outs(%y[0:3, 0:4])
  task.task "t" ins(%x[0:4, 0:4]) outs(%y[2:4, 0:4])
  task.return
}

// -----

// An output element never written, in the second output.
task.kernel @unwritten(%x: memref<4x4xf32>) -> (%y: memref<4xf32>, %z: memref<4x4xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: task.kernel @unwritten(%x: memref<4x4xf32>) -> (%y: memref<4xf32>, %z: memref<4x4xf32>) {
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: output 1 of task.kernel @unwritten: element [0, 2] is written by 0 tasks, not exactly one
  task.task "t" ins(%x[0:4, 0:4]) outs(%y[0:4], %z[0:4, 0:2])
  task.task "t" ins(%x[0:4, 0:4]) outs(%z[0:4, 3:4])
  task.return
}

// -----

// An output that no task writes.
task.kernel @no_writer(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: task.kernel @no_writer(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: output 0 of task.kernel @no_writer: element [0] is written by 0 tasks, not exactly one
  task.task "t" ins(%x[0:4])
  task.return
}

// -----

// A kernel without task.return.
task.kernel @no_return(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: task.kernel @no_return(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: task.kernel must end with task.return
  task.task "t" ins(%x[0:8]) outs(%y[0:8])
}

// -----

// A kernel with an empty body.
task.kernel @empty_body() -> () {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: task.kernel @empty_body() -> () {
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: task.kernel must end with task.return
}

// -----

// A kernel whose task.return is not its last op.
task.kernel @return_not_last(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: task.kernel @return_not_last(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: task.kernel must end with task.return
  task.return
  task.task "t" ins(%x[0:8]) outs(%y[0:8])
}

// -----

// task.buffer outside a kernel.
func.func @buffer_outside() {
  %t = task.buffer : memref<8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %t = task.buffer : memref<8xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: 'task.buffer' expects parent op 'task.kernel'
  func.return
}

// -----

// task.return outside a kernel.
func.func @return_outside() {
  task.return
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.return
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: 'task.return' expects parent op 'task.kernel'
}

// -----

// A task signalling two events: a parse error, reported at the token after the list.
task.kernel @two_signals(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  %f = task.event triggers 1
  task.task "t" ins(%x[0:8]) outs(%y[0:8]) signal(%e, %f)
  task.return
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: task.return
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: a task signals at most one event
}

// -----

// A task signalling a memref.
task.kernel @signal_memref(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.task "t" ins(%x[0:8]) outs(%y[0:8]) signal(%x)
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:51
  // CHECK-NEXT: task.task "t" ins(%x[0:8]) outs(%y[0:8]) signal(%x)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: operand is used with type !task.event, but has been previously used or defined with type memref<8xf32>
  task.return
}

// -----

// Generic form: a kernel block argument whose type is not the function type's.
"task.kernel"() <{sym_name = "arg_type", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: "task.kernel"() <{sym_name = "arg_type", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
  // CHECK-NEXT: ^^^^^^^^^^^^^
  // CHECK-NEXT: task.kernel block arguments must be its inputs then its outputs
^bb0(%x: memref<8xf32>, %y: memref<4xf32>):
  "task.return"() : () -> ()
}) : () -> ()

// -----

// Generic form: a kernel block with fewer arguments than the function type.
"task.kernel"() <{sym_name = "arg_count", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:1
  // CHECK-NEXT: "task.kernel"() <{sym_name = "arg_count", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
  // CHECK-NEXT: ^^^^^^^^^^^^^
  // CHECK-NEXT: task.kernel block arguments must be its inputs then its outputs
^bb0(%x: memref<8xf32>):
  "task.return"() : () -> ()
}) : () -> ()

// -----

// Generic form: a task with more inputs than input regions.
"task.kernel"() <{sym_name = "tile_count", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
^bb0(%x: memref<8xf32>, %y: memref<8xf32>):
  "task.task"(%x, %y) <{kind = "t", in_tiles = [], out_tiles = [array<i64: 0, 8>], operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (memref<8xf32>, memref<8xf32>) -> ()
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: "task.task"(%x, %y) <{kind = "t", in_tiles = [], out_tiles = [array<i64: 0, 8>], operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (memref<8xf32>, memref<8xf32>) -> ()
  // CHECK-NEXT: ^^^^^^^^^^^
  // CHECK-NEXT: task.task has 1 inputs but 0 input regions
  "task.return"() : () -> ()
}) : () -> ()
