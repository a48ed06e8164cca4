// Every op of the task dialect in its custom syntax: printing, and parsing back both
// the custom and the generic form (which must give the same text). Tasks are shown
// with and without ins, waits, signal and discardable attributes; regions of rank 0
// to 3; constants of several element types; pointwise and tile bodies.
// RUN: mncore-opt %s | filecheck %s
// RUN: mncore-opt %s --print-op-generic | mncore-opt | filecheck %s
// RUN: mncore-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The example of the dialect's docstring: a tile body (graph.exp on a 4x16 tile) and
// a pointwise body, a buffer, an event fired by two tasks.
task.kernel @doc(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
  task.body @exp(%a: tensor<4x16xf32>) {
    %r = graph.exp %a : tensor<4x16xf32>
    task.yield %r : tensor<4x16xf32>
  }
  task.body @neg(%a: tensor<f32>) {
    %r = graph.neg %a : tensor<f32>
    task.yield %r : tensor<f32>
  }
  %t = task.buffer : memref<8x16xf32>
  %e = task.event triggers 2
  task.task @exp ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
  task.task @exp ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
  task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
  task.return
}

// CHECK-LABEL: task.kernel @doc(
// CHECK-SAME:  [[X:%\w+]]: memref<8x16xf32>) -> ([[Y:%\w+]]: memref<8x16xf32>) {
// CHECK-NEXT:  task.body @exp([[A:%\w+]]: tensor<4x16xf32>) {
// CHECK-NEXT:  [[R:%\w+]] = graph.exp [[A]] : tensor<4x16xf32>
// CHECK-NEXT:  task.yield [[R]] : tensor<4x16xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @neg([[A:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[R:%\w+]] = graph.neg [[A]] : tensor<f32>
// CHECK-NEXT:  task.yield [[R]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[T:%\w+]] = task.buffer : memref<8x16xf32>
// CHECK-NEXT:  [[E:%\w+]] = task.event triggers 2
// CHECK-NEXT:  task.task @exp ins([[X]][0:4, 0:16]) outs([[T]][0:4, 0:16]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task @exp ins([[X]][4:8, 0:16]) outs([[T]][4:8, 0:16]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task @neg ins([[T]][0:8, 0:16]) outs([[Y]][0:8, 0:16]) waits([[E]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// GENERIC-LABEL: "task.kernel"() <{sym_name = "doc", function_type = (memref<8x16xf32>) -> memref<8x16xf32>}> ({
// GENERIC-NEXT:  ^bb0([[X:%\w+]]: memref<8x16xf32>, [[Y:%\w+]]: memref<8x16xf32>):
// GENERIC-NEXT:  "task.body"() <{sym_name = "exp"}> ({
// GENERIC-NEXT:  ^bb0([[A:%\w+]]: tensor<4x16xf32>):
// GENERIC-NEXT:  [[R:%\w+]] = "graph.exp"([[A]]) : (tensor<4x16xf32>) -> tensor<4x16xf32>
// GENERIC-NEXT:  "task.yield"([[R]]) : (tensor<4x16xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
// GENERIC-NEXT:  "task.body"() <{sym_name = "neg"}> ({
// GENERIC-NEXT:  ^bb0([[A:%\w+]]: tensor<f32>):
// GENERIC-NEXT:  [[R:%\w+]] = "graph.neg"([[A]]) : (tensor<f32>) -> tensor<f32>
// GENERIC-NEXT:  "task.yield"([[R]]) : (tensor<f32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
// GENERIC-NEXT:  [[T:%\w+]] = "task.buffer"() : () -> memref<8x16xf32>
// GENERIC-NEXT:  [[E:%\w+]] = "task.event"() <{triggers = 2 : i64}> : () -> !task.event
// GENERIC-NEXT:  "task.task"([[X]], [[T]], [[E]]) <{body = @exp, in_tiles = [array<i64: 0, 0, 4, 16>], out_tiles = [array<i64: 0, 0, 4, 16>], operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<8x16xf32>, memref<8x16xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.task"([[X]], [[T]], [[E]]) <{body = @exp, in_tiles = [array<i64: 4, 0, 4, 16>], out_tiles = [array<i64: 4, 0, 4, 16>], operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<8x16xf32>, memref<8x16xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.task"([[T]], [[Y]], [[E]]) <{body = @neg, in_tiles = [array<i64: 0, 0, 8, 16>], out_tiles = [array<i64: 0, 0, 8, 16>], operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (memref<8x16xf32>, memref<8x16xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()

// Several inputs and outputs, several buffers, events with 1 and 3 triggers, a task
// waiting on two events, tasks with several ins (broadcast, of other element types, a
// 0-d one) and outs, kernel attributes and discardable task attributes.
task.kernel @many(%a: memref<4x6xf32>, %b: memref<6xf32>, %c: memref<f32>) -> (%o: memref<4x6xf32>, %p: memref<4x6xf32>) attributes {workers = 4 : i64} {
  task.body @add(%x: tensor<f32>, %y: tensor<f32>) {
    %s = graph.add %x, %y : tensor<f32>, tensor<f32> -> tensor<f32>
    task.yield %s : tensor<f32>
  }
  task.body @cast(%x: tensor<f32>) {
    %i = graph.convert %x : tensor<f32> to tensor<i32>
    task.yield %i : tensor<i32>
  }
  task.body @split(%x: tensor<f32>, %i: tensor<i32>, %k: tensor<f32>) {
    %f = graph.convert %i : tensor<i32> to tensor<f32>
    %m = graph.mul %x, %k : tensor<f32>, tensor<f32> -> tensor<f32>
    %n = graph.add %m, %f : tensor<f32>, tensor<f32> -> tensor<f32>
    task.yield %m, %n : tensor<f32>, tensor<f32>
  }
  %s = task.buffer : memref<4x6xf32>
  %u = task.buffer : memref<6xi32>
  %e1 = task.event triggers 3
  %e2 = task.event triggers 1
  task.task @add ins(%a[0:2, 0:6], %b[0:6]) outs(%s[0:2, 0:6]) signal(%e1)
  task.task @add ins(%a[2:3, 0:6], %b[0:6]) outs(%s[2:3, 0:6]) signal(%e1)
  task.task @add ins(%a[3:4, 0:6], %b[0:6]) outs(%s[3:4, 0:6]) signal(%e1)
  task.task @cast ins(%b[0:6]) outs(%u[0:6]) signal(%e2) {to = i32}
  task.task @split ins(%s[0:4, 0:3], %u[0:3], %c[]) outs(%o[0:4, 0:3], %p[0:4, 0:3]) waits(%e1, %e2) {axis = 1 : i64, name = "left"}
  task.task @split ins(%s[0:4, 3:6], %u[3:6], %c[]) outs(%o[0:4, 3:6], %p[0:4, 3:6]) waits(%e2, %e1)
  task.return
}

// CHECK-LABEL: task.kernel @many(
// CHECK-SAME:  [[A:%\w+]]: memref<4x6xf32>, [[B:%\w+]]: memref<6xf32>, [[C:%\w+]]: memref<f32>) -> ([[O:%\w+]]: memref<4x6xf32>, [[P:%\w+]]: memref<4x6xf32>) attributes {workers = 4 : i64} {
// CHECK-NEXT:  task.body @add([[X:%\w+]]: tensor<f32>, [[Y:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[S:%\w+]] = graph.add [[X]], [[Y]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[S]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @cast([[X:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[I:%\w+]] = graph.convert [[X]] : tensor<f32> to tensor<i32>
// CHECK-NEXT:  task.yield [[I]] : tensor<i32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @split([[X:%\w+]]: tensor<f32>, [[I:%\w+]]: tensor<i32>, [[K:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[F:%\w+]] = graph.convert [[I]] : tensor<i32> to tensor<f32>
// CHECK-NEXT:  [[M:%\w+]] = graph.mul [[X]], [[K]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  [[N:%\w+]] = graph.add [[M]], [[F]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  task.yield [[M]], [[N]] : tensor<f32>, tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[S:%\w+]] = task.buffer : memref<4x6xf32>
// CHECK-NEXT:  [[U:%\w+]] = task.buffer : memref<6xi32>
// CHECK-NEXT:  [[E1:%\w+]] = task.event triggers 3
// CHECK-NEXT:  [[E2:%\w+]] = task.event triggers 1
// CHECK-NEXT:  task.task @add ins([[A]][0:2, 0:6], [[B]][0:6]) outs([[S]][0:2, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @add ins([[A]][2:3, 0:6], [[B]][0:6]) outs([[S]][2:3, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @add ins([[A]][3:4, 0:6], [[B]][0:6]) outs([[S]][3:4, 0:6]) signal([[E1]]){{$}}
// CHECK-NEXT:  task.task @cast ins([[B]][0:6]) outs([[U]][0:6]) signal([[E2]]) {to = i32}{{$}}
// CHECK-NEXT:  task.task @split ins([[S]][0:4, 0:3], [[U]][0:3], [[C]][]) outs([[O]][0:4, 0:3], [[P]][0:4, 0:3]) waits([[E1]], [[E2]]) {axis = 1 : i64, name = "left"}{{$}}
// CHECK-NEXT:  task.task @split ins([[S]][0:4, 3:6], [[U]][3:6], [[C]][]) outs([[O]][0:4, 3:6], [[P]][0:4, 3:6]) waits([[E2]], [[E1]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// GENERIC-LABEL: "task.kernel"() <{sym_name = "many", function_type = (memref<4x6xf32>, memref<6xf32>, memref<f32>) -> (memref<4x6xf32>, memref<4x6xf32>)}> ({
// GENERIC:       "task.task"({{.*}}) <{body = @split, in_tiles = [array<i64: 0, 0, 4, 3>, array<i64: 0, 3>, array<i64>], out_tiles = [array<i64: 0, 0, 4, 3>, array<i64: 0, 0, 4, 3>], operandSegmentSizes = array<i32: 3, 2, 2, 0>}> {axis = 1 : i64, name = "left"} : (memref<4x6xf32>, memref<6xi32>, memref<f32>, memref<4x6xf32>, memref<4x6xf32>, !task.event, !task.event) -> ()
// GENERIC:       }) {workers = 4 : i64} : () -> ()

// A kernel with no inputs; tasks with no ins (a fill, by a body of no arguments), with
// a wait but no signal; an event with zero triggers (never signalled); a 3-d output
// tiled in every dimension; a 0-d output. (A task with neither ins nor outs cannot be
// written: its body yields at least one value.)
task.kernel @no_inputs() -> (%y: memref<2x2x2xf32>, %z: memref<f32>) {
  task.body @one() {
    %one = graph.constant dense<1.0> : tensor<f32>
    task.yield %one : tensor<f32>
  }
  %never = task.event triggers 0
  %e = task.event triggers 1
  task.task @one outs(%y[0:1, 0:2, 0:2]) {value = 1.0 : f32}
  task.task @one outs(%y[1:2, 0:1, 0:2]) waits(%never)
  task.task @one outs(%y[1:2, 1:2, 0:1]) signal(%e)
  task.task @one outs(%y[1:2, 1:2, 1:2]) waits(%never, %e)
  task.task @one outs(%z[]) waits(%never, %e)
  task.return
}

// CHECK-LABEL: task.kernel @no_inputs() -> (
// CHECK-SAME:  [[Y:%\w+]]: memref<2x2x2xf32>, [[Z:%\w+]]: memref<f32>) {
// CHECK-NEXT:  task.body @one() {
// CHECK-NEXT:  [[ONE:%\w+]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  task.yield [[ONE]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[NEVER:%\w+]] = task.event triggers 0
// CHECK-NEXT:  [[E:%\w+]] = task.event triggers 1
// CHECK-NEXT:  task.task @one outs([[Y]][0:1, 0:2, 0:2]) {value = 1.000000e+00 : f32}{{$}}
// CHECK-NEXT:  task.task @one outs([[Y]][1:2, 0:1, 0:2]) waits([[NEVER]]){{$}}
// CHECK-NEXT:  task.task @one outs([[Y]][1:2, 1:2, 0:1]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task @one outs([[Y]][1:2, 1:2, 1:2]) waits([[NEVER]], [[E]]){{$}}
// CHECK-NEXT:  task.task @one outs([[Z]][]) waits([[NEVER]], [[E]]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// GENERIC-LABEL: "task.kernel"() <{sym_name = "no_inputs", function_type = () -> (memref<2x2x2xf32>, memref<f32>)}> ({
// GENERIC-NEXT:  ^bb0([[Y:%\w+]]: memref<2x2x2xf32>, [[Z:%\w+]]: memref<f32>):
// GENERIC:       [[NEVER:%\w+]] = "task.event"() <{triggers = 0 : i64}> : () -> !task.event
// GENERIC-NEXT:  [[E:%\w+]] = "task.event"() <{triggers = 1 : i64}> : () -> !task.event
// GENERIC-NEXT:  "task.task"([[Y]]) <{body = @one, in_tiles = [], out_tiles = [array<i64: 0, 0, 0, 1, 2, 2>], operandSegmentSizes = array<i32: 0, 1, 0, 0>}> {value = 1.000000e+00 : f32} : (memref<2x2x2xf32>) -> ()

// A kernel with no outputs, one with neither inputs nor outputs; a task may read a
// buffer it does not write and write an input (neither is checked).
task.kernel @no_outputs(%x: memref<3xf32>) -> () {
  task.body @copy(%a: tensor<f32>) {
    task.yield %a : tensor<f32>
  }
  %t = task.buffer : memref<3xf32>
  task.task @copy ins(%t[0:2]) outs(%x[1:3])
  task.return
}

// CHECK-LABEL: task.kernel @no_outputs(
// CHECK-SAME:  [[X:%\w+]]: memref<3xf32>) -> () {
// CHECK-NEXT:  task.body @copy([[A:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  task.yield [[A]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[T:%\w+]] = task.buffer : memref<3xf32>
// CHECK-NEXT:  task.task @copy ins([[T]][0:2]) outs([[X]][1:3]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

task.kernel @empty() -> () {
  task.return
}

// CHECK-LABEL: task.kernel @empty() -> () {
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// task.constant: splat and non-splat literals, floats (f32, f64), integers (i64, i32,
// i1), 0-d; a list of equal values prints as a splat; a discardable attribute. The
// buffer has the literal's shape and element type, and tasks read it like any other.
task.kernel @constants(%x: memref<2x3xf32>) -> (%y: memref<2x3xf32>) {
  task.body @combine(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f64>) {
    %s = graph.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
    %t = graph.mul %s, %c : tensor<f32>, tensor<f32> -> tensor<f32>
    %u = graph.convert %d : tensor<f64> to tensor<f32>
    %v = graph.sub %t, %u : tensor<f32>, tensor<f32> -> tensor<f32>
    task.yield %v : tensor<f32>
  }
  %splat = task.constant dense<1.5> : tensor<2x3xf32>
  %full = task.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %ints = task.constant dense<[0, 2, -1]> : tensor<3xi64>
  %same = task.constant dense<[4, 4]> : tensor<2xi32>
  %bools = task.constant dense<[true, false]> : tensor<2xi1>
  %scalar = task.constant dense<7> : tensor<i32>
  %f64 = task.constant dense<-0.25> : tensor<f64> {note = "scale"}
  task.task @combine ins(%x[0:2, 0:3], %full[0:2, 0:3], %splat[0:1, 0:3], %f64[]) outs(%y[0:2, 0:3])
  task.return
}

// CHECK-LABEL: task.kernel @constants(
// CHECK-SAME:  [[X:%\w+]]: memref<2x3xf32>) -> ([[Y:%\w+]]: memref<2x3xf32>) {
// CHECK-NEXT:  task.body @combine(
// CHECK:       task.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  [[SPLAT:%\w+]] = task.constant dense<1.500000e+00> : tensor<2x3xf32>{{$}}
// CHECK-NEXT:  [[FULL:%\w+]] = task.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>{{$}}
// CHECK-NEXT:  [[INTS:%\w+]] = task.constant dense<[0, 2, -1]> : tensor<3xi64>{{$}}
// CHECK-NEXT:  [[SAME:%\w+]] = task.constant dense<4> : tensor<2xi32>{{$}}
// CHECK-NEXT:  [[BOOLS:%\w+]] = task.constant dense<[true, false]> : tensor<2xi1>{{$}}
// CHECK-NEXT:  [[SCALAR:%\w+]] = task.constant dense<7> : tensor<i32>{{$}}
// CHECK-NEXT:  [[F64:%\w+]] = task.constant dense<-2.500000e-01> : tensor<f64> {note = "scale"}{{$}}
// CHECK-NEXT:  task.task @combine ins([[X]][0:2, 0:3], [[FULL]][0:2, 0:3], [[SPLAT]][0:1, 0:3], [[F64]][]) outs([[Y]][0:2, 0:3]){{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// The generic form: the literal is the `value` property, the result the memref.
// GENERIC-LABEL: "task.kernel"() <{sym_name = "constants", function_type = (memref<2x3xf32>) -> memref<2x3xf32>}> ({
// GENERIC-NEXT:  ^bb0([[X:%\w+]]: memref<2x3xf32>, [[Y:%\w+]]: memref<2x3xf32>):
// GENERIC:       [[SPLAT:%\w+]] = "task.constant"() <{value = dense<1.500000e+00> : tensor<2x3xf32>}> : () -> memref<2x3xf32>
// GENERIC-NEXT:  [[FULL:%\w+]] = "task.constant"() <{value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>}> : () -> memref<2x3xf32>
// GENERIC-NEXT:  [[INTS:%\w+]] = "task.constant"() <{value = dense<[0, 2, -1]> : tensor<3xi64>}> : () -> memref<3xi64>
// GENERIC-NEXT:  [[SAME:%\w+]] = "task.constant"() <{value = dense<4> : tensor<2xi32>}> : () -> memref<2xi32>
// GENERIC-NEXT:  [[BOOLS:%\w+]] = "task.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> memref<2xi1>
// GENERIC-NEXT:  [[SCALAR:%\w+]] = "task.constant"() <{value = dense<7> : tensor<i32>}> : () -> memref<i32>
// GENERIC-NEXT:  [[F64:%\w+]] = "task.constant"() <{value = dense<-2.500000e-01> : tensor<f64>}> {note = "scale"} : () -> memref<f64>
// GENERIC-NEXT:  "task.task"([[X]], [[FULL]], [[SPLAT]], [[F64]], [[Y]]) <{body = @combine, in_tiles = [array<i64: 0, 0, 2, 3>, array<i64: 0, 0, 2, 3>, array<i64: 0, 0, 1, 3>, array<i64>], out_tiles = [array<i64: 0, 0, 2, 3>], operandSegmentSizes = array<i32: 4, 1, 0, 0>}> : (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<f64>, memref<2x3xf32>) -> ()
// GENERIC-NEXT:  "task.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()

// task.body: pointwise bodies, the scalar computation of elementwise tasks, a symbol
// of the kernel that all the tiles of an operator name. One with two
// arguments, a graph.constant, several elementwise ops on 0-d tensors and two yielded
// values (f32 and i1) for tasks with two outputs; one with no arguments (a fill); one
// yielding its argument (a copy) with a discardable attribute, used by a task with a
// discardable attribute. The tasks of @step read a row band and a broadcast row.
task.kernel @bodies(%x: memref<4x3xf32>, %r: memref<1x3xf32>) -> (%y: memref<4x3xf32>, %m: memref<4x3xi1>, %z: memref<2xf32>, %c: memref<4x3xf32>) {
  task.body @step(%a: tensor<f32>, %b: tensor<f32>) {
    %two = graph.constant dense<2.0> : tensor<f32>
    %mul = graph.mul %a, %two : tensor<f32>, tensor<f32> -> tensor<f32>
    %sum = graph.add %mul, %b : tensor<f32>, tensor<f32> -> tensor<f32>
    %relu = graph.relu %sum : tensor<f32>
    %pos = graph.gt %relu, %two : tensor<f32>, tensor<f32> -> tensor<i1>
    task.yield %relu, %pos : tensor<f32>, tensor<i1>
  }
  task.body @fill() {
    %one = graph.constant dense<1.0> : tensor<f32>
    task.yield %one : tensor<f32>
  }
  task.body @copy(%a: tensor<f32>) attributes {note = "copy"} {
    task.yield %a : tensor<f32>
  }
  %e = task.event triggers 2
  task.task @step ins(%x[0:2, 0:3], %r[0:1, 0:3]) outs(%y[0:2, 0:3], %m[0:2, 0:3]) signal(%e)
  task.task @step ins(%x[2:4, 0:3], %r[0:1, 0:3]) outs(%y[2:4, 0:3], %m[2:4, 0:3]) signal(%e)
  task.task @fill outs(%z[0:2])
  task.task @copy ins(%y[0:4, 0:3]) outs(%c[0:4, 0:3]) waits(%e) {note = "y"}
  task.return
}

// CHECK-LABEL: task.kernel @bodies(
// CHECK-SAME:  [[X:%\w+]]: memref<4x3xf32>, [[R:%\w+]]: memref<1x3xf32>) -> ([[Y:%\w+]]: memref<4x3xf32>, [[M:%\w+]]: memref<4x3xi1>, [[Z:%\w+]]: memref<2xf32>, [[C:%\w+]]: memref<4x3xf32>) {
// CHECK-NEXT:  task.body @step([[A:%\w+]]: tensor<f32>, [[B:%\w+]]: tensor<f32>) {
// CHECK-NEXT:  [[TWO:%\w+]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[MUL:%\w+]] = graph.mul [[A]], [[TWO]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  [[SUM:%\w+]] = graph.add [[MUL]], [[B]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:  [[RELU:%\w+]] = graph.relu [[SUM]] : tensor<f32>
// CHECK-NEXT:  [[POS:%\w+]] = graph.gt [[RELU]], [[TWO]] : tensor<f32>, tensor<f32> -> tensor<i1>
// CHECK-NEXT:  task.yield [[RELU]], [[POS]] : tensor<f32>, tensor<i1>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @fill() {
// CHECK-NEXT:  [[ONE:%\w+]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  task.yield [[ONE]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  task.body @copy([[A:%\w+]]: tensor<f32>) attributes {note = "copy"} {
// CHECK-NEXT:  task.yield [[A]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[E:%\w+]] = task.event triggers 2
// CHECK-NEXT:  task.task @step ins([[X]][0:2, 0:3], [[R]][0:1, 0:3]) outs([[Y]][0:2, 0:3], [[M]][0:2, 0:3]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task @step ins([[X]][2:4, 0:3], [[R]][0:1, 0:3]) outs([[Y]][2:4, 0:3], [[M]][2:4, 0:3]) signal([[E]]){{$}}
// CHECK-NEXT:  task.task @fill outs([[Z]][0:2]){{$}}
// CHECK-NEXT:  task.task @copy ins([[Y]][0:4, 0:3]) outs([[C]][0:4, 0:3]) waits([[E]]) {note = "y"}{{$}}
// CHECK-NEXT:  task.return
// CHECK-NEXT:  }

// The generic form: a body is a "task.body" op with a region of one block and no
// results; a task names it in its `body` property.
// GENERIC-LABEL: "task.kernel"() <{sym_name = "bodies", function_type = (memref<4x3xf32>, memref<1x3xf32>) -> (memref<4x3xf32>, memref<4x3xi1>, memref<2xf32>, memref<4x3xf32>)}> ({
// GENERIC-NEXT:  ^bb0([[X:%\w+]]: memref<4x3xf32>, [[R:%\w+]]: memref<1x3xf32>, [[Y:%\w+]]: memref<4x3xf32>, [[M:%\w+]]: memref<4x3xi1>, [[Z:%\w+]]: memref<2xf32>, [[C:%\w+]]: memref<4x3xf32>):
// GENERIC-NEXT:  "task.body"() <{sym_name = "step"}> ({
// GENERIC-NEXT:  ^bb0([[A:%\w+]]: tensor<f32>, [[B:%\w+]]: tensor<f32>):
// GENERIC-NEXT:  [[TWO:%\w+]] = "graph.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
// GENERIC-NEXT:  [[MUL:%\w+]] = "graph.mul"([[A]], [[TWO]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// GENERIC-NEXT:  [[SUM:%\w+]] = "graph.add"([[MUL]], [[B]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// GENERIC-NEXT:  [[RELU:%\w+]] = "graph.relu"([[SUM]]) : (tensor<f32>) -> tensor<f32>
// GENERIC-NEXT:  [[POS:%\w+]] = "graph.gt"([[RELU]], [[TWO]]) : (tensor<f32>, tensor<f32>) -> tensor<i1>
// GENERIC-NEXT:  "task.yield"([[RELU]], [[POS]]) : (tensor<f32>, tensor<i1>) -> ()
// GENERIC-NEXT:  }) : () -> ()
// GENERIC-NEXT:  "task.body"() <{sym_name = "fill"}> ({
// GENERIC-NEXT:  [[ONE:%\w+]] = "graph.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
// GENERIC-NEXT:  "task.yield"([[ONE]]) : (tensor<f32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
// GENERIC-NEXT:  "task.body"() <{sym_name = "copy"}> ({
// GENERIC-NEXT:  ^bb0([[A:%\w+]]: tensor<f32>):
// GENERIC-NEXT:  "task.yield"([[A]]) : (tensor<f32>) -> ()
// GENERIC-NEXT:  }) {note = "copy"} : () -> ()
// GENERIC-NEXT:  [[E:%\w+]] = "task.event"() <{triggers = 2 : i64}> : () -> !task.event
// GENERIC-NEXT:  "task.task"([[X]], [[R]], [[Y]], [[M]], [[E]]) <{body = @step, in_tiles = [array<i64: 0, 0, 2, 3>, array<i64: 0, 0, 1, 3>], out_tiles = [array<i64: 0, 0, 2, 3>, array<i64: 0, 0, 2, 3>], operandSegmentSizes = array<i32: 2, 2, 0, 1>}> : (memref<4x3xf32>, memref<1x3xf32>, memref<4x3xf32>, memref<4x3xi1>, !task.event) -> ()
// GENERIC-NEXT:  "task.task"([[X]], [[R]], [[Y]], [[M]], [[E]]) <{body = @step, in_tiles = [array<i64: 2, 0, 2, 3>, array<i64: 0, 0, 1, 3>], out_tiles = [array<i64: 2, 0, 2, 3>, array<i64: 2, 0, 2, 3>], operandSegmentSizes = array<i32: 2, 2, 0, 1>}> : (memref<4x3xf32>, memref<1x3xf32>, memref<4x3xf32>, memref<4x3xi1>, !task.event) -> ()
// GENERIC-NEXT:  "task.task"([[Z]]) <{body = @fill, in_tiles = [], out_tiles = [array<i64: 0, 2>], operandSegmentSizes = array<i32: 0, 1, 0, 0>}> : (memref<2xf32>) -> ()
// GENERIC-NEXT:  "task.task"([[Y]], [[C]], [[E]]) <{body = @copy, in_tiles = [array<i64: 0, 0, 4, 3>], out_tiles = [array<i64: 0, 0, 4, 3>], operandSegmentSizes = array<i32: 1, 1, 1, 0>}> {note = "y"} : (memref<4x3xf32>, memref<4x3xf32>, !task.event) -> ()
// GENERIC-NEXT:  "task.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
