"""Task graphs from convert-graph-to-task: sizes, lowering time, simulated speedup.

(a) MLP inference at batch 1, 8, 64 and (b) one GPT-2 transformer block forward at batch
1 and 16: task, event and operator counts, lowering time (the conversion pass and the
kernel's verification), and the timing model's megakernel latency against one kernel
launch per operator, with the model's parameters printed. (c) Lowering time of GPT-2
training steps up to more than 20,000 tasks and its exponent k (time ~ tasks^k). (d)
Large tensors at the default tiles (the fuzzer's 100,000-row cases): tasks, and CPU
time per task of the conversion and of the kernel's verification.
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.func import functional_call

from mncore_ir.dialects.task import KernelOp
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.task_timing import MachineModel, estimate
from mncore_ir.testing.model_zoo import MLP, Block, gpt_adamw

PREPARE = "canonicalize,cse,dce,graph-fuse-elementwise"


def inference(model: torch.nn.Module, x: torch.Tensor) -> Any:
    """The model's forward pass with its parameters and buffers as graph inputs."""
    params = {k: v.detach().clone() for k, v in [*model.named_parameters(),
                                                 *model.named_buffers()]}

    def forward(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return functional_call(model, params, (x,))

    return capture(forward, params, x)


def lower(captured: Any, options: str) -> tuple[KernelOp, float]:
    """Import, prepare, then time the conversion (with verification)."""
    ctx = make_context()
    module = import_captured(captured)
    apply_pipeline(module, PREPARE, ctx)
    start = time.perf_counter()
    apply_pipeline(module, f"convert-graph-to-task{options}", ctx)
    seconds = time.perf_counter() - start
    (kernel,) = [op for op in module.ops if isinstance(op, KernelOp)]
    return kernel, seconds


def report_rows(cases: list[tuple[str, Callable[[], Any]]], options: str,
                machine: MachineModel) -> None:
    print(f"{'case':<22}{'tasks':>7}{'events':>8}{'ops':>6}{'lower s':>9}"
          f"{'mega us':>10}{'per-op us':>11}{'speedup':>9}{'util':>7}")
    for name, make in cases:
        kernel, seconds = lower(make(), options)
        report, _ = estimate(kernel, machine)
        print(f"{name:<22}{report.tasks:>7}{report.events:>8}{report.operators:>6}"
              f"{seconds:>9.2f}{report.megakernel_s * 1e6:>10.1f}"
              f"{report.per_operator_s * 1e6:>11.1f}{report.speedup:>8.2f}x"
              f"{report.utilisation:>7.1%}")


def scaling(layers: list[int], options: str) -> None:
    print(f"\n(c) lowering time of GPT-2 training steps (AdamW), options {options}")
    print(f"{'layers':>6}{'graph ops':>11}{'tasks':>8}{'lower s':>9}{'us/task':>9}")
    sizes, times = [], []
    for n in layers:
        step = gpt_adamw(layers=n)
        captured = capture(step, *step.example_inputs())
        best = float("inf")
        for _ in range(2):
            kernel, seconds = lower(captured, options)
            best = min(best, seconds)
        tasks = len(kernel.tasks())
        ops = len(list(import_captured(captured).walk()))
        sizes.append(tasks)
        times.append(best)
        print(f"{n:>6}{ops:>11}{tasks:>8}{best:>9.2f}{best / tasks * 1e6:>9.0f}")
    k = np.polyfit(np.log(sizes), np.log(times), 1)[0]
    print(f"exponent k (time ~ tasks^k): {k:.2f} (aim <= 1.15); largest: {max(sizes)} tasks")


LARGE = """func.func @main(%x: tensor<{n}x100xf32>, %b: tensor<100xf32>)
    -> (tensor<{n}x100xf32>, tensor<{n}xf32>) {{
  %a = graph.add %x, %b : tensor<{n}x100xf32>, tensor<100xf32> -> tensor<{n}x100xf32>
  %e = graph.exp %a : tensor<{n}x100xf32>
  %s = graph.sum %e dims = array<i64: 1> : tensor<{n}x100xf32> -> tensor<{n}xf32>
  %m = graph.softmax %a dim 1 : tensor<{n}x100xf32>
  return %m, %s : tensor<{n}x100xf32>, tensor<{n}xf32>
}}
"""


def lower_large(rows: int) -> tuple[int, float, float]:
    """Tasks, and CPU seconds (other work on the machine does not count) of lowering
    and of verifying an add, exp, sum and softmax over ``rows`` rows of 100."""
    ctx = make_context()
    module = parse_module(ctx, LARGE.format(n=rows), "large.mlir")
    start = time.process_time()
    apply_pipeline(module, "convert-graph-to-task{max_tasks=1000000}", ctx, verify=False)
    lowered = time.process_time()
    module.verify()
    verified = time.process_time()
    (kernel,) = [op for op in module.ops if isinstance(op, KernelOp)]
    return len(kernel.tasks()), lowered - start, verified - lowered


def large(rows: list[int]) -> None:
    print("\n(d) large tensors at the default tiles: add, exp, sum and softmax over Nx100")
    print(f"{'rows':>8}{'tasks':>8}{'lower s':>9}{'us/task':>9}{'verify s':>10}{'us/task':>9}")
    # What the cases above left alive is set aside: Python's cyclic collector would
    # traverse it at each full collection, a cost of this process's heap, not of the
    # pass (measured: +0.7 s verifying 10,000 tasks beside 3 million live objects).
    gc.collect()
    gc.freeze()
    try:
        lower_large(min(rows))  # warms the caches up
        sizes, times = [], []
        for n in rows:
            tasks, lower_s, verify_s = lower_large(n)
            sizes.append(tasks)
            times.append(lower_s + verify_s)
            print(f"{n:>8}{tasks:>8}{lower_s:>9.2f}{lower_s / tasks * 1e6:>9.0f}"
                  f"{verify_s:>10.2f}{verify_s / tasks * 1e6:>9.0f}")
    finally:
        gc.unfreeze()
    if len(sizes) > 1:
        k = math.log(times[-1] / times[0]) / math.log(sizes[-1] / sizes[0])
        print(f"exponent k (time ~ tasks^k): {k:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1024, help="MLP width")
    parser.add_argument("--dim", type=int, default=256, help="transformer width")
    parser.add_argument("--seq", type=int, default=64, help="transformer sequence length")
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 4, 8, 12])
    parser.add_argument("--scaling-options",
                        default="{matmul_tile=8,16 elementwise_tile=64 row_tile=2}")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--large-rows", type=int, nargs="+", default=[25_000, 100_000])
    args = parser.parse_args()
    torch.manual_seed(0)
    machine = MachineModel()
    options = "{matmul_tile=16,64 elementwise_tile=2048 row_tile=4}"
    print(f"timing model: {machine.describe()}")
    print(f"convert-graph-to-task{options}\n")

    w = args.width
    mlp = MLP((w, w, w, w, 10)).eval()
    print(f"(a) MLP inference, sizes {w}-{w}-{w}-{w}-10")
    report_rows([(f"mlp batch {b}", lambda b=b: inference(mlp, torch.randn(b, w)))
                 for b in (1, 8, 64)], options, machine)

    block = Block(args.dim, heads=4).eval()
    print(f"\n(b) transformer block forward, dim {args.dim}, 4 heads, sequence {args.seq}")
    report_rows([(f"block batch {b}",
                  lambda b=b: inference(block, torch.randn(b, args.seq, args.dim)))
                 for b in (1, 16)], options, machine)

    if not args.skip_scaling:
        scaling(args.layers, args.scaling_options)
    large(args.large_rows)


if __name__ == "__main__":
    main()
