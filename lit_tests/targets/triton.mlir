// -t triton: a task kernel becomes a Python module with one persistent Triton
// megakernel (tables, device functions per task type, the ticket scheduler) and a
// launcher; run here in Triton's interpreter against numpy. A kernel with a task kind
// that has no device function is one error naming the kinds.
// RUN: mncore-opt %s -p 'graph-fuse-elementwise,convert-graph-to-task{workers=4 matmul_tile=4,32 elementwise_tile=256}' -t triton -o %t.py
// RUN: filecheck %s --input-file %t.py
// RUN: env TRITON_INTERPRET=1 %{python} -c "import importlib.util, numpy as np, torch; s = importlib.util.spec_from_file_location('mk', '%t.py'); mk = importlib.util.module_from_spec(s); s.loader.exec_module(mk); g = torch.Generator().manual_seed(0); x, w, b = torch.randn(8, 32, generator=g), torch.randn(32, 64, generator=g), torch.randn(64, generator=g); ref = torch.relu(x @ w + b); print(*[torch.allclose(mk.run(x, w, b, mode=m)[0], ref, rtol=1e-5, atol=1e-5) for m in ('megakernel', 'levels')])" | filecheck %s --check-prefix=RESULT
// RUN: not mncore-opt %S/Inputs/unknown_kind.mlir -t triton 2>&1 | filecheck %s --check-prefix=UNKNOWN

func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %m = graph.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %a = graph.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %r = graph.relu %a : tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// CHECK:      """The task kernel @main as a persistent Triton megakernel
// CHECK:      def _task0_matmul(arena, desc, d):
// CHECK:      acc += tl.dot(a, b, input_precision="ieee")
// CHECK:      def _task1_elementwise(arena, desc, d):
// CHECK:      v0 = (a0 + a1).to(tl.float32)
// CHECK-NEXT: v1 = (tl.maximum(v0, 0.0, propagate_nan=tl.PropagateNan.ALL)).to(tl.float32)
// CHECK:      NUM_TASKS = 6
// CHECK:      INPUTS = [(0, (8, 32), torch.float32), (1024, (32, 64), torch.float32), (9216, (64,), torch.float32)]
// CHECK-NEXT: OUTPUTS = [(9472, (8, 64), torch.float32)]
// CHECK:      TARGETS = [
// CHECK-NEXT:     2, 2,
// CHECK:      LEVELS = [(0, 4), (4, 2)]
// CHECK:      def megakernel(arena, tasks, descs, waits, counters, targets, ticket, errors, order,
// CHECK:      seen = tl.atomic_add(counters + event, 0, sem="acquire")
// CHECK:      if kind == 0:
// CHECK-NEXT:     _task0_matmul(arena, descs, d)
// CHECK-NEXT: elif kind == 1:
// CHECK-NEXT:     _task1_elementwise(arena, descs, d)
// CHECK-NEXT: tl.debug_barrier()
// CHECK-NEXT: if signal >= 0:
// CHECK-NEXT:     tl.atomic_add(counters + signal, 1, sem="release")

// RESULT: True True

// UNKNOWN: mncore-opt: error: the triton target has no device function for task kinds: frobnicate (graph.expand)
