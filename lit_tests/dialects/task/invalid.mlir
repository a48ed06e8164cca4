// Verifier failures of the task dialect, one chunk per failure (chunks are split on
// the dashed separator lines): every check of TaskOp.verify_, KernelOp.verify_,
// ConstantOp.verify_ and BodyOp.verify_ (dialects/task.py), the parent-op traits, the
// symbol table, the operand types and the parse errors of the custom syntax.
// Each error is expected, with its message, at the line of the op to blame (a task, a
// body, a constant, an event, or the kernel for its own checks) or of the bad token:
// mncore-opt --verify-diagnostics fails on an error that is not expected there and on
// an expected one that does not occur.
// RUN: mncore-opt %s --split-input-file --verify-diagnostics

// An input region with a negative offset (the syntax takes negative integers).
task.kernel @in_negative(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task input 0: region [-1:4, 0:16] is out of bounds in dimension 0 (size 8)}}
  task.task @t ins(%x[-1:4, 0:16]) outs(%y[0:8, 0:16])
  task.return
}

// -----

// An input region of size 0 (`[3:3]`).
task.kernel @in_empty(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task input 0: region [3:3, 0:16] is out of bounds in dimension 0 (size 8)}}
  task.task @t ins(%x[3:3, 0:16]) outs(%y[0:8, 0:16])
  task.return
}

// -----

// An input region whose end is before its start.
task.kernel @in_reversed(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task input 0: region [0:8, 5:2] is out of bounds in dimension 1 (size 16)}}
  task.task @t ins(%x[0:8, 5:2]) outs(%y[0:8, 0:16])
  task.return
}

// -----

// An input region ending beyond the size, in the second dimension of the second input.
task.kernel @in_too_far(%x: memref<8x16xf32>, %z: memref<4x4xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>, %a1: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task input 1: region [0:4, 2:5] is out of bounds in dimension 1 (size 4)}}
  task.task @t ins(%x[0:8, 0:16], %z[0:4, 2:5]) outs(%y[0:8, 0:16])
  task.return
}

// -----

// An input region of a lower rank than the input.
task.kernel @in_rank_low(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task input 0: region [0:8] does not have rank 2}}
  task.task @t ins(%x[0:8]) outs(%y[0:8, 0:16])
  task.return
}

// -----

// An input region of a higher rank than the input.
task.kernel @in_rank_high(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task input 0: region [0:8, 0:1] does not have rank 1}}
  task.task @t ins(%x[0:8, 0:1]) outs(%y[0:8])
  task.return
}

// -----

// An output region ending beyond the size in the first dimension.
task.kernel @out_too_far(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task output 0: region [0:9, 0:16] is out of bounds in dimension 0 (size 8)}}
  task.task @t ins(%x[0:8, 0:16]) outs(%y[0:9, 0:16])
  task.return
}

// -----

// An output region ending beyond the size in the second dimension (the elements in
// bounds are each written once).
task.kernel @out_too_far_1(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.task @t ins(%x[0:8, 0:16]) outs(%y[0:8, 0:8])
  // expected-error@+1 {{task.task output 0: region [0:8, 8:17] is out of bounds in dimension 1 (size 16)}}
  task.task @t ins(%x[0:8, 0:16]) outs(%y[0:8, 8:17])
  task.return
}

// -----

// An output region of size 0 (the other task writes every element).
task.kernel @out_empty(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.task @t ins(%x[0:8, 0:16]) outs(%y[0:8, 0:16])
  // expected-error@+1 {{task.task output 0: region [0:8, 3:3] is out of bounds in dimension 1 (size 16)}}
  task.task @t ins(%x[0:8, 0:16]) outs(%y[0:8, 3:3])
  task.return
}

// -----

// An output region with a negative offset (the other task writes every element).
task.kernel @out_negative(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.task @t ins(%x[0:8]) outs(%y[0:8])
  // expected-error@+1 {{task.task output 0: region [-1:7] is out of bounds in dimension 0 (size 8)}}
  task.task @t ins(%x[0:8]) outs(%y[-1:7])
  task.return
}

// -----

// An output region of a lower rank than the output (it covers whole rows).
task.kernel @out_rank_low(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{task.task output 0: region [0:8] does not have rank 2}}
  task.task @t ins(%x[0:8, 0:16]) outs(%y[0:8])
  task.return
}

// -----

// A buffer region out of bounds.
task.kernel @buffer_too_far(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  %t = task.buffer : memref<4xf32>
  // expected-error@+1 {{task.task output 0: region [0:8] is out of bounds in dimension 0 (size 4)}}
  task.task @t ins(%x[0:8]) outs(%t[0:8])
  task.task @t ins(%x[0:8]) outs(%y[0:8])
  task.return
}

// -----

// An event with a trigger count higher than the number of tasks signalling it.
task.kernel @triggers_high(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{event has trigger count 3 but 2 tasks signal it}}
  %e = task.event triggers 3
  task.task @t ins(%x[0:4]) outs(%y[0:4]) signal(%e)
  task.task @t ins(%x[4:8]) outs(%y[4:8]) signal(%e)
  task.return
}

// -----

// An event with a trigger count lower than the number of tasks signalling it.
task.kernel @triggers_low(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{event has trigger count 1 but 2 tasks signal it}}
  %e = task.event triggers 1
  task.task @t ins(%x[0:4]) outs(%y[0:4]) signal(%e)
  task.task @t ins(%x[4:8]) outs(%y[4:8]) signal(%e)
  task.return
}

// -----

// An event that nobody signals but that needs one trigger (a task waits on it forever).
task.kernel @never_signalled(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{event has trigger count 1 but 0 tasks signal it}}
  %e = task.event triggers 1
  task.task @t ins(%x[0:8]) outs(%y[0:8]) waits(%e)
  task.return
}

// -----

// A negative trigger count.
task.kernel @triggers_negative(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{event has trigger count -1 but 0 tasks signal it}}
  %e = task.event triggers -1
  task.task @t ins(%x[0:8]) outs(%y[0:8])
  task.return
}

// -----

// A task waiting on an event that a later task signals.
task.kernel @wait_later(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @first(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.body @second(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  %e = task.event triggers 1
  // expected-error@+1 {{task 0 (@first) waits on an event that task 1 signals: tasks must be in a topological order}}
  task.task @first ins(%x[0:4]) outs(%y[0:4]) waits(%e)
  task.task @second ins(%x[4:8]) outs(%y[4:8]) signal(%e)
  task.return
}

// -----

// A task waiting on an event with one signaller before it and one after it.
task.kernel @wait_between(%x: memref<9xf32>) -> (%y: memref<9xf32>) {
  task.body @a(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.body @b(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.body @c(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  %e = task.event triggers 2
  task.task @a ins(%x[0:3]) outs(%y[0:3]) signal(%e)
  // expected-error@+1 {{task 1 (@b) waits on an event that task 2 signals: tasks must be in a topological order}}
  task.task @b ins(%x[3:6]) outs(%y[3:6]) waits(%e)
  task.task @c ins(%x[6:9]) outs(%y[6:9]) signal(%e)
  task.return
}

// -----

// A task that waits on the event it signals itself.
task.kernel @wait_self(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  %e = task.event triggers 1
  // expected-error@+1 {{task 0 (@t) waits on an event that it signals itself: tasks must be in a topological order}}
  task.task @t ins(%x[0:8]) outs(%y[0:8]) waits(%e) signal(%e)
  task.return
}

// -----

// An output element written twice (overlapping tiles): the first such element is named.
// expected-error@+1 {{output 0 of task.kernel @overlap: element [2, 0] is written by 2 tasks, not exactly one}}
task.kernel @overlap(%x: memref<4x4xf32>) -> (%y: memref<4x4xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.task @t ins(%x[0:3, 0:4]) outs(%y[0:3, 0:4])
  task.task @t ins(%x[2:4, 0:4]) outs(%y[2:4, 0:4])
  task.return
}

// -----

// An output element never written, in the second output.
// expected-error@+1 {{output 1 of task.kernel @unwritten: element [0, 2] is written by 0 tasks, not exactly one}}
task.kernel @unwritten(%x: memref<4x4xf32>) -> (%y: memref<4x2xf32>, %z: memref<4x4xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0, %a0 : tensor<f32>, tensor<f32>
  }
  task.body @u(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.task @t ins(%x[0:4, 0:2]) outs(%y[0:4, 0:2], %z[0:4, 0:2])
  task.task @u ins(%x[0:4, 3:4]) outs(%z[0:4, 3:4])
  task.return
}

// -----

// An output that no task writes (its only task writes a buffer).
// expected-error@+1 {{output 0 of task.kernel @no_writer: element [0] is written by 0 tasks, not exactly one}}
task.kernel @no_writer(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  %t = task.buffer : memref<4xf32>
  task.task @t ins(%x[0:4]) outs(%t[0:4])
  task.return
}

// -----

// A kernel without task.return.
// expected-error@+1 {{task.kernel must end with task.return}}
task.kernel @no_return(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.task @t ins(%x[0:8]) outs(%y[0:8])
}

// -----

// A kernel with an empty body.
// expected-error@+1 {{task.kernel must end with task.return}}
task.kernel @empty_body() -> () {
}

// -----

// A kernel whose task.return is not its last op.
// expected-error@+1 {{task.kernel must end with task.return}}
task.kernel @return_not_last(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  task.return
  task.task @t ins(%x[0:8]) outs(%y[0:8])
}

// -----

// task.buffer outside a kernel.
func.func @buffer_outside() {
  // expected-error@+1 {{'task.buffer' expects parent op 'task.kernel'}}
  %t = task.buffer : memref<8xf32>
  func.return
}

// -----

// task.return outside a kernel.
func.func @return_outside() {
  // expected-error@+1 {{'task.return' expects parent op 'task.kernel'}}
  task.return
}

// -----

// A task signalling two events: a parse error, reported at the token after the list.
task.kernel @two_signals(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  %e = task.event triggers 1
  %f = task.event triggers 1
  task.task @t ins(%x[0:8]) outs(%y[0:8]) signal(%e, %f)
  // expected-error@+1 {{a task signals at most one event}}
  task.return
}

// -----

// A task signalling a memref.
task.kernel @signal_memref(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @t(%a0: tensor<f32>) {
    task.yield %a0 : tensor<f32>
  }
  // expected-error@+1 {{operand is used with type !task.event, but has been previously used or defined with type memref<8xf32>}}
  task.task @t ins(%x[0:8]) outs(%y[0:8]) signal(%x)
  task.return
}

// -----

// Generic form: a kernel block argument whose type is not the function type's.
// expected-error@+1 {{task.kernel block arguments must be its inputs then its outputs}}
"task.kernel"() <{sym_name = "arg_type", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
^bb0(%x: memref<8xf32>, %y: memref<4xf32>):
  "task.return"() : () -> ()
}) : () -> ()

// -----

// Generic form: a kernel block with fewer arguments than the function type.
// expected-error@+1 {{task.kernel block arguments must be its inputs then its outputs}}
"task.kernel"() <{sym_name = "arg_count", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
^bb0(%x: memref<8xf32>):
  "task.return"() : () -> ()
}) : () -> ()

// -----

// Generic form: a task with more inputs than input regions.
"task.kernel"() <{sym_name = "tile_count", function_type = (memref<8xf32>) -> memref<8xf32>}> ({
^bb0(%x: memref<8xf32>, %y: memref<8xf32>):
  // expected-error@+1 {{task.task has 1 inputs but 0 input regions}}
  "task.task"(%x, %y) <{body = @t, in_tiles = [], out_tiles = [array<i64: 0, 8>], operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (memref<8xf32>, memref<8xf32>) -> ()
  "task.return"() : () -> ()
}) : () -> ()

// -----

// Generic form (the custom form takes the memref from the literal): a task.constant
// whose literal has another shape than its memref.
"task.kernel"() <{sym_name = "constant_shape", function_type = () -> ()}> ({
  // expected-error@+1 {{task.constant of type tensor<2xf32> cannot fill memref<3xf32>}}
  %c = "task.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> memref<3xf32>
  "task.return"() : () -> ()
}) : () -> ()

// -----

// Generic form: a task.constant whose literal has another element type than its memref.
"task.kernel"() <{sym_name = "constant_element", function_type = () -> ()}> ({
  // expected-error@+1 {{task.constant of type tensor<2xf32> cannot fill memref<2xf64>}}
  %c = "task.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> memref<2xf64>
  "task.return"() : () -> ()
}) : () -> ()

// -----

// A task.constant of a literal that is not dense: a parse error at the literal.
task.kernel @constant_not_dense() -> () {
  // expected-error@+1 {{task.constant expects a dense literal}}
  %c = task.constant 1.0 : f32
  task.return
}

// -----

// Generic form: a task.constant whose value is not dense (the property's constraint).
"task.kernel"() <{sym_name = "constant_not_dense_generic", function_type = () -> ()}> ({
  // expected-error@+1 {{1.000000e+00 : f32 should be of base attribute dense}}
  %c = "task.constant"() <{value = 1.0 : f32}> : () -> memref<f32>
  "task.return"() : () -> ()
}) : () -> ()

// -----

// A body whose argument has another element type than the task's input.
task.kernel @body_arg_type(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  task.body @f(%a: tensor<f64>) {
    task.yield %a : tensor<f64>
  }
  // expected-error@+1 {{task.body @f takes (tensor<f64>) but the task needs (tensor<f32>)}}
  task.task @f ins(%x[0:4]) outs(%y[0:4])
  task.return
}

// -----

// A body with fewer arguments than the task has inputs.
task.kernel @body_arg_count(%x: memref<4xf32>, %w: memref<4xi32>) -> (%y: memref<4xf32>) {
  task.body @f(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
  }
  // expected-error@+1 {{task.body @f takes (tensor<f32>) but the task needs (tensor<f32>, tensor<i32>)}}
  task.task @f ins(%x[0:4], %w[0:4]) outs(%y[0:4])
  task.return
}

// -----

// A body of two ops whose argument is not 0-d (no task needs to use the body): it is
// not pointwise, and a tile body holds one op.
task.kernel @body_arg_shape() -> () {
  // expected-error@+1 {{task.body @f is neither pointwise (0-d tensors through elementwise ops) nor a tile body (one graph op on its arguments in order, yielding its results)}}
  task.body @f(%a: tensor<4xf32>) {
    %n = graph.neg %a : tensor<4xf32>
    %m = graph.neg %n : tensor<4xf32>
    task.yield %m : tensor<4xf32>
  }
  task.return
}

// -----

// A body argument that is a memref.
task.kernel @body_arg_memref() -> () {
  // expected-error@+1 {{task.body @f is neither pointwise (0-d tensors through elementwise ops) nor a tile body (one graph op on its arguments in order, yielding its results)}}
  task.body @f(%a: memref<f32>) {
    %one = graph.constant dense<1.0> : tensor<f32>
    task.yield %one : tensor<f32>
  }
  task.return
}

// -----

// A body that yields a value that is not 0-d after two ops.
task.kernel @yield_shape() -> () {
  // expected-error@+1 {{task.body @f is neither pointwise (0-d tensors through elementwise ops) nor a tile body (one graph op on its arguments in order, yielding its results)}}
  task.body @f(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
    %e = graph.expand %n : tensor<f32> -> tensor<4xf32>
    task.yield %e : tensor<4xf32>
  }
  task.return
}

// -----

// A body that does not end with task.yield (no terminator at all).
task.kernel @no_yield() -> () {
  // expected-error@+1 {{task.body @f must end with task.yield}}
  task.body @f(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
  }
  task.return
}

// -----

// An empty body.
task.kernel @empty_body_region() -> () {
  // expected-error@+1 {{task.body @f must end with task.yield}}
  task.body @f() {
  }
  task.return
}

// -----

// A body whose task.yield is not its last op.
task.kernel @yield_not_last() -> () {
  // expected-error@+1 {{task.body @f must end with task.yield}}
  task.body @f(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
    %n = graph.neg %a : tensor<f32>
  }
  task.return
}

// -----

// A body of two blocks.
task.kernel @body_two_blocks() -> () {
  // expected-error@+1 {{Region 'body' at position 0 expected a single block, but got 2 blocks}}
  task.body @f(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
  ^bb1:
    task.yield %a : tensor<f32>
  }
  task.return
}

// -----

// A body yielding values of other element types than the task's outputs.
task.kernel @yield_types(%x: memref<4xf32>) -> (%y: memref<4xf32>, %z: memref<4xi1>) {
  task.body @f(%a: tensor<f32>) {
    task.yield %a, %a : tensor<f32>, tensor<f32>
  }
  // expected-error@+1 {{task.body @f yields (tensor<f32>, tensor<f32>) but the task needs (tensor<f32>, tensor<i1>)}}
  task.task @f ins(%x[0:4]) outs(%y[0:4], %z[0:4])
  task.return
}

// -----

// A body yielding fewer values than the task has outputs.
task.kernel @yield_count(%x: memref<4xf32>) -> (%y: memref<4xf32>, %z: memref<4xi1>) {
  task.body @f(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
  }
  // expected-error@+1 {{task.body @f yields (tensor<f32>) but the task needs (tensor<f32>, tensor<i1>)}}
  task.task @f ins(%x[0:4]) outs(%y[0:4], %z[0:4])
  task.return
}

// -----

// A task naming a body that does not exist.
task.kernel @unknown_body(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  // expected-error@+1 {{task.task refers to @nowhere, which is no task.body of this kernel}}
  task.task @nowhere ins(%x[0:4]) outs(%y[0:4])
  task.return
}

// -----

// A task naming a symbol that is not a body (its own kernel).
task.kernel @kernel_as_body(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  // expected-error@+1 {{task.task refers to @kernel_as_body, which is no task.body of this kernel}}
  task.task @kernel_as_body ins(%x[0:4]) outs(%y[0:4])
  task.return
}

// -----

// Two bodies of the same name: the kernel is a symbol table.
// expected-error@+1 {{Redefinition of symbol "f"}}
task.kernel @same_name(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  task.body @f(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
  }
  task.body @f(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
    task.yield %n : tensor<f32>
  }
  task.task @f ins(%x[0:4]) outs(%y[0:4])
  task.return
}

// -----

// task.body outside a kernel.
func.func @body_outside() {
  // expected-error@+1 {{'task.body' expects parent op 'task.kernel'}}
  task.body @f(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
  }
  func.return
}

// -----

// task.yield outside a body.
func.func @yield_outside(%a: tensor<f32>) {
  // expected-error@+1 {{'task.yield' expects parent op 'task.body'}}
  task.yield %a : tensor<f32>
}

// -----

// task.buffer inside a body (its parent must be the kernel).
task.kernel @buffer_in_body() -> () {
  task.body @f(%a: tensor<f32>) {
    // expected-error@+1 {{'task.buffer' expects parent op 'task.kernel'}}
    %t = task.buffer : memref<4xf32>
    task.yield %a : tensor<f32>
  }
  task.return
}

// -----

// A tile body whose op does not accept its arguments: the op is to blame (a kind that
// is no graph op cannot be written at all, since a task names a body, not a kind).
task.kernel @tile_op_invalid(%a: memref<4x3xf32>, %b: memref<5x2xf32>) -> (%c: memref<4x2xf32>) {
  task.body @mm(%l: tensor<4x3xf32>, %r: tensor<5x2xf32>) {
    // expected-error@+1 {{graph.matmul cannot multiply shapes (4, 3) and (5, 2)}}
    %m = graph.matmul %l, %r : tensor<4x3xf32>, tensor<5x2xf32> -> tensor<4x2xf32>
    task.yield %m : tensor<4x2xf32>
  }
  task.task @mm ins(%a[0:4, 0:3], %b[0:5, 0:2]) outs(%c[0:4, 0:2])
  task.return
}

// -----

// A tile body on other shapes than the task's regions.
task.kernel @tile_types(%x: memref<4x6xf32>) -> (%y: memref<4x6xf32>) {
  task.body @exp(%a: tensor<2x6xf32>) {
    %e = graph.exp %a : tensor<2x6xf32>
    task.yield %e : tensor<2x6xf32>
  }
  // expected-error@+1 {{task.body @exp takes (tensor<2x6xf32>) but the task needs (tensor<4x6xf32>)}}
  task.task @exp ins(%x[0:4, 0:6]) outs(%y[0:4, 0:6])
  task.return
}

// -----

// A tile body whose op reads its arguments in another order.
task.kernel @tile_order() -> () {
  // expected-error@+1 {{task.body @sub is neither pointwise (0-d tensors through elementwise ops) nor a tile body (one graph op on its arguments in order, yielding its results)}}
  task.body @sub(%a: tensor<4xf32>, %b: tensor<4xf32>) {
    %d = graph.sub %b, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    task.yield %d : tensor<4xf32>
  }
  task.return
}

// -----

// A tile body's regions laid out otherwise than the targets read them: softmax rows
// cut in half.
task.kernel @tile_layout(%x: memref<4x6xf32>) -> (%y: memref<4x6xf32>) {
  task.body @softmax(%a: tensor<4x3xf32>) {
    %s = graph.softmax %a dim 1 : tensor<4x3xf32>
    task.yield %s : tensor<4x3xf32>
  }
  // expected-error@+1 {{task.task graph.softmax operand 0: region [0:4, 0:3] does not cover dimension 1 of its buffer (6): a task holds whole rows}}
  task.task @softmax ins(%x[0:4, 0:3]) outs(%y[0:4, 0:3])
  task.task @softmax ins(%x[0:4, 3:6]) outs(%y[0:4, 3:6])
  task.return
}

// -----

// A pointwise task whose input does not broadcast onto its output tile.
task.kernel @pointwise_broadcast(%x: memref<4x6xf32>) -> (%y: memref<4x6xf32>) {
  task.body @neg(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
    task.yield %n : tensor<f32>
  }
  // expected-error@+1 {{task.task @neg: pointwise task: input 0 region [0:2, 0:6] does not broadcast to the output tile (4x6)}}
  task.task @neg ins(%x[0:2, 0:6]) outs(%y[0:4, 0:6])
  task.return
}

// -----

// A task reading what an earlier task writes, with no event between them: which value
// it reads would depend on the order the workers run the tasks in.
task.kernel @race_read(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @neg(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
    task.yield %n : tensor<f32>
  }
  %t = task.buffer : memref<8xf32>
  %e = task.event triggers 1
  task.task @neg ins(%x[0:4]) outs(%t[0:4]) signal(%e)
  task.task @neg ins(%x[4:8]) outs(%t[4:8])
  // expected-error@+1 {{task 2 (@neg) reads buffer %t where task 1 (@neg) writes, but waits on no event after it: the result would depend on the order the tasks run in}}
  task.task @neg ins(%t[0:8]) outs(%y[0:8]) waits(%e)
  task.return
}

// -----

// A task overwriting a region an earlier task reads, with no event between them.
task.kernel @race_overwrite(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  task.body @neg(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
    task.yield %n : tensor<f32>
  }
  task.task @neg ins(%x[0:8]) outs(%y[0:8])
  // expected-error@+1 {{task 1 (@neg) writes input 0 where task 0 (@neg) reads, but waits on no event after it}}
  task.task @neg ins(%x[6:8]) outs(%x[2:4])
  task.return
}
