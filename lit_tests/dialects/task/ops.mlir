// Every op of the task dialect in its custom syntax: printing, and parsing back both
// the custom and the generic form (which must give the same text). Tasks are shown
// with and without ins, outs, waits, signal and attributes; regions of rank 0 to 3.
// RUN: mncore-opt %s | filecheck %s
// RUN: mncore-opt %s --print-op-generic | mncore-opt | filecheck %s
// RUN: mncore-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The example of the dialect's docstring: a buffer, an event fired by two tasks.
task.kernel @doc(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  %t = task.buffer : memref<8x16xf32>
  %e = task.event triggers 2
  task.task "exp" ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
  task.task "exp" ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
  task.task "neg" ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
  task.return
}

// CHECK-LABEL: task.kernel @doc(
// CHECK-SAME:  [[X:%\w+]]: memref<8x16xf32>) -> ([[Y:%\w+]]: memref<8x16xf32>) {
// CHECK-NEXT:  [[T:%\w+]] = task.buffer : memref<8x16xf32>
// CHECK-NEXT:  [[E:%\w+]] = task.event triggers 2
// CHECK-NEXT:  task.task "exp" ins([[X]][0:4, 0:16]) outs([[T]][0:4, 0:16]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task "exp" ins([[X]][4:8, 0:16]) outs([[T]][4:8, 0:16]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task "neg" ins([[T]][0:8, 0:16]) outs([[Y]][0:8, 0:16]) waits([[E]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// GENERIC-LABEL: "task.kernel"() <{sym_name = "doc", function_type = (memref<8x16xf32>) -> memref<8x16xf32>}> ({
// GENERIC-NEXT:  ^bb0([[X:%\w+]]: memref<8x16xf32>, [[Y:%\w+]]: memref<8x16xf32>):
// GENERIC-NEXT:  [[T:%\w+]] = "task.buffer"() : () -> memref<8x16xf32>
// GENERIC-NEXT:  [[E:%\w+]] = "task.event"() <{triggers = 2 : i64}> : () -> !task.event
// GENERIC-NEXT:  "task.task"([[X]], [[T]], [[E]]) <{kind = "exp", in_tiles = [array<i64: 0, 0, 4, 16>], out_tiles = [array<i64: 0, 0, 4, 16>], attrs = {}, operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<8x16xf32>, memref<8x16xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.task"([[X]], [[T]], [[E]]) <{kind = "exp", in_tiles = [array<i64: 4, 0, 4, 16>], out_tiles = [array<i64: 4, 0, 4, 16>], attrs = {}, operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<8x16xf32>, memref<8x16xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.task"([[T]], [[Y]], [[E]]) <{kind = "neg", in_tiles = [array<i64: 0, 0, 8, 16>], out_tiles = [array<i64: 0, 0, 8, 16>], attrs = {}, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (memref<8x16xf32>, memref<8x16xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()

// Several inputs and outputs, several buffers, events with 1 and 3 triggers, a task
// waiting on two events, tasks with several ins and outs, task and kernel attributes.
task.kernel @many(%a: memref<4x6xf32>, %b: memref<6xf32>, %c: memref<f32>) -> (%o: memref<4x6xf32>, %p: memref<6xf32>) attributes {workers = 4 : i64} {
  %s = task.buffer : memref<4x6xf32>
  %u = task.buffer : memref<6xi32>
  %e1 = task.event triggers 3
  %e2 = task.event triggers 1
  task.task "add" ins(%a[0:2, 0:6], %b[0:6]) outs(%s[0:2, 0:6]) signal(%e1)
  task.task "add" ins(%a[2:3, 0:6], %b[0:6]) outs(%s[2:3, 0:6]) signal(%e1)
  task.task "add" ins(%a[3:4, 0:6], %b[0:6]) outs(%s[3:4, 0:6]) signal(%e1)
  task.task "cast" ins(%b[0:6]) outs(%u[0:6]) signal(%e2) attributes {to = i32}
  task.task "split" ins(%s[0:4, 0:6], %u[0:6], %c[]) outs(%o[0:4, 0:3], %p[0:3]) waits(%e1, %e2) attributes {axis = 1 : i64, name = "left"}
  task.task "split" ins(%s[0:4, 0:6], %u[0:6], %c[]) outs(%o[0:4, 3:6], %p[3:6]) waits(%e2, %e1)
  task.return
}

// CHECK-LABEL: task.kernel @many(
// CHECK-SAME:  [[A:%\w+]]: memref<4x6xf32>, [[B:%\w+]]: memref<6xf32>, [[C:%\w+]]: memref<f32>) -> ([[O:%\w+]]: memref<4x6xf32>, [[P:%\w+]]: memref<6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  [[S:%\w+]] = task.buffer : memref<4x6xf32>
// CHECK-NEXT:  [[U:%\w+]] = task.buffer : memref<6xi32>
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 3
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1
// CHECK-NEXT:  task.task "add" ins([[A]][0:2, 0:6], [[B]][0:6]) outs([[S]][0:2, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task "add" ins([[A]][2:3, 0:6], [[B]][0:6]) outs([[S]][2:3, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task "add" ins([[A]][3:4, 0:6], [[B]][0:6]) outs([[S]][3:4, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task "cast" ins([[B]][0:6]) outs([[U]][0:6]) signal([[E2]]) attributes {to = i32}{{$}}
// CHECK-NEXT:  task.task "split" ins([[S]][0:4, 0:6], [[U]][0:6], [[C]][]) outs([[O]][0:4, 0:3], [[P]][0:3]) waits([[E1]], [[E2]]) attributes {axis = 1 : i64, name = "left"}{{$}}
// CHECK-NEXT:  task.task "split" ins([[S]][0:4, 0:6], [[U]][0:6], [[C]][]) outs([[O]][0:4, 3:6], [[P]][3:6]) waits([[E2]], [[E1]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// GENERIC-LABEL: "task.kernel"() <{sym_name = "many", function_type = (memref<4x6xf32>, memref<6xf32>, memref<f32>) -> (memref<4x6xf32>, memref<6xf32>)}> ({
// GENERIC:       "task.task"({{.*}}) <{kind = "split", in_tiles = [array<i64: 0, 0, 4, 6>, array<i64: 0, 6>, array<i64>], out_tiles = [array<i64: 0, 0, 4, 3>, array<i64: 0, 3>], attrs = {axis = 1 : i64, name = "left"}, operandSegmentSizes = array<i32: 3, 2, 2, 0>}> : (memref<4x6xf32>, memref<6xi32>, memref<f32>, memref<4x6xf32>, memref<6xf32>, !task.event, !task.event) -> ()
// GENERIC:       }) {workers = 4 : i64} : () -> ()

// A kernel with no inputs; tasks with no ins (a fill), with neither ins nor outs,
// with a wait but no signal; an event with zero triggers (never signalled); a 3-d
// output tiled in every dimension; a 0-d output.
task.kernel @no_inputs() -> (%y: memref<2x2x2xf32>, %z: memref<f32>) {
  %never = task.event triggers 0
  %e = task.event triggers 1
  task.task "nop"
  task.task "fill" outs(%y[0:1, 0:2, 0:2]) attributes {value = 1.0 : f32}
  task.task "fill" outs(%y[1:2, 0:1, 0:2]) waits(%never)
  task.task "fill" outs(%y[1:2, 1:2, 0:1]) signal(%e)
  task.task "fill" outs(%y[1:2, 1:2, 1:2], %z[]) waits(%never, %e)
  task.return
}

// CHECK-LABEL: task.kernel @no_inputs() -> (
// CHECK-SAME:  [[Y:%\w+]]: memref<2x2x2xf32>, [[Z:%\w+]]: memref<f32>) {
// CHECK-NEXT:  [[NEVER:%\w+]] = task.event triggers 0
// CHECK-NEXT:  [[E:%\w+]] = task.event triggers 1
// CHECK-NEXT:  task.task "nop"{{$}}
// CHECK-NEXT:  task.task "fill" outs([[Y]][0:1, 0:2, 0:2]) attributes {value = 1.000000e+00 : f32}{{$}}
// CHECK-NEXT:  task.task "fill" outs([[Y]][1:2, 0:1, 0:2]) waits([[NEVER]]){{$}}
// CHECK-NEXT:  task.task "fill" outs([[Y]][1:2, 1:2, 0:1]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task "fill" outs([[Y]][1:2, 1:2, 1:2], [[Z]][]) waits([[NEVER]], [[E]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// GENERIC-LABEL: "task.kernel"() <{sym_name = "no_inputs", function_type = () -> (memref<2x2x2xf32>, memref<f32>)}> ({
// GENERIC-NEXT:  ^bb0([[Y:%\w+]]: memref<2x2x2xf32>, [[Z:%\w+]]: memref<f32>):
// GENERIC-NEXT:  [[NEVER:%\w+]] = "task.event"() <{triggers = 0 : i64}> : () -> !task.event
// GENERIC-NEXT:  [[E:%\w+]] = "task.event"() <{triggers = 1 : i64}> : () -> !task.event
// GENERIC-NEXT:  "task.task"() <{kind = "nop", in_tiles = [], out_tiles = [], attrs = {}, operandSegmentSizes = array<i32: 0, 0, 0, 0>}> : () -> ()

// A kernel with no outputs, one with neither inputs nor outputs; a task may read a
// buffer it does not write and write an input (neither is checked).
task.kernel @no_outputs(%x: memref<3xf32>) -> () {
  %t = task.buffer : memref<3xf32>
  task.task "copy" ins(%t[0:3]) outs(%x[1:3])
  task.return
}

// CHECK-LABEL: task.kernel @no_outputs(
// CHECK-SAME:  [[X:%\w+]]: memref<3xf32>) -> () {
// CHECK-NEXT:  [[T:%\w+]] = task.buffer : memref<3xf32>
// CHECK-NEXT:  task.task "copy" ins([[T]][0:3]) outs([[X]][1:3]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

task.kernel @empty() -> () {
  task.return
}

// CHECK-LABEL: task.kernel @empty() -> () {
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }
