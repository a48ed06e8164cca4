// mncore-run on a task kernel: the megakernel simulator gives the graph interpreter's
// results, in program order and in random topological orders; --timing prints the
// timing model's report, --machine changes its parameters, --trace writes a Perfetto
// trace with one row per worker; bad options are one `mncore-run:` message.

func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>) {
  %m = graph.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %a = graph.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %r = graph.relu %a : tensor<8x64xf32>
  %s = graph.softmax %r dim -1 : tensor<8x64xf32>
  %t = graph.amax %s dims = array<i64: 1> keepdim = true : tensor<8x64xf32> -> tensor<8x1xf32>
  func.return %r, %t : tensor<8x64xf32>, tensor<8x1xf32>
}

// RUN: mncore-run %s --random-inputs 3 > %t.graph
// RUN: mncore-opt %s -p 'graph-fuse-elementwise,convert-graph-to-task{workers=4 matmul_tile=4,32 elementwise_tile=128 row_tile=2}' -o %t.task.mlir
// RUN: mncore-run %t.task.mlir --random-inputs 3 | diff - %t.graph
// RUN: mncore-run %t.task.mlir --random-inputs 3 --random-order 1 | diff - %t.graph
// RUN: mncore-run %t.task.mlir --random-inputs 3 --random-order 2 | diff - %t.graph

// The report: the kernel's 4 workers by default, 2 with --machine.
// RUN: mncore-run %t.task.mlir --random-inputs 3 --timing | filecheck %s --check-prefix=TIMING
// TIMING:      machine: workers=4 dispatch=0.5us launch=4us peak=989TFLOP/s bandwidth=4.8TB/s
// TIMING-NEXT: tasks: 16  events: {{[0-9]+}}  operators: 4
// TIMING-NEXT: megakernel latency: {{[0-9.]+}} us (worker utilisation {{[0-9.]+}}%)
// TIMING-NEXT: kernel-per-operator latency: {{[0-9.]+}} us
// TIMING-NEXT: megakernel speedup: {{[0-9.]+}}x
// RUN: mncore-run %t.task.mlir --random-inputs 3 --timing --machine workers=2,launch_s=1e-5 | filecheck %s --check-prefix=MACHINE
// MACHINE: machine: workers=2 dispatch=0.5us launch=10us

// RUN: mncore-run %t.task.mlir --random-inputs 3 --trace %t.json > /dev/null
// RUN: %{python} -c "import json, sys; t = json.load(open(sys.argv[1]))['traceEvents']; slices = [e for e in t if e['ph'] == 'X']; rows = {e['args']['name'] for e in t if e['name'] == 'thread_name'}; print(len(slices), sorted(rows), sorted({e['name'] for e in slices}))" %t.json | filecheck %s --check-prefix=TRACE
// TRACE: 16 ['worker 0', 'worker 1', 'worker 2', 'worker 3'] ['amax', 'elementwise', 'matmul', 'softmax']

// RUN: not mncore-run %t.task.mlir --random-inputs 3 --machine workers=0 2>&1 | filecheck %s --check-prefix=BADMACHINE
// BADMACHINE: mncore-run: error: --machine: machine parameter workers must be positive
// RUN: not mncore-run %t.task.mlir --random-inputs 3 --machine speed=1 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: mncore-run: error: --machine: unknown machine parameter 'speed'; known: workers, dispatch_s, launch_s, peak_flops, bandwidth
// RUN: not mncore-run %s --random-inputs 3 --random-order 1 2>&1 | filecheck %s --check-prefix=NOTKERNEL
// NOTKERNEL: mncore-run: error: --random-order needs a task.kernel
