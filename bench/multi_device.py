"""Multi-device figures: collectives inside the megakernel against one whole-tensor
collective per operator, in the timing model; and real torchrun data parallelism.

(a) A Megatron-LM tensor-parallel transformer block (attention: QKV by heads, output
projection by rows; MLP: first linear by columns, second by rows; one all-reduce after
each half) at 2, 4 and 8 devices, batch 1 and 16 sequences of 32 tokens, GPT-2
medium's width (1024, 16 heads). (b) Data-parallel gradient reduction: an MLP's
training step whose gradients are averaged over the devices (an all-reduce each) before
SGD. Each row: the megakernel with tiled collectives (each tile's transfer starts when
the tiles it reads are done) against kernel-per-operator (a launch per operator, each
collective over its whole tensor after its producer); the ring model's parameters are
printed. (c) ``examples/ddp_training.py`` under torchrun: 2 processes against 1, each
on the cpu device (this machine's two cores, gloo).

    python bench/multi_device.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F
from torch.testing._internal.distributed.fake_pg import FakeStore

from mncore_ir.dialects.task import find_kernel
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.task_timing import MachineModel, TimingReport, estimate

ROOT = Path(__file__).resolve().parent.parent
TO_TASK = "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task"


def tensor_parallel_block(heads: int, batch: int) -> Callable[..., torch.Tensor]:
    """One rank's part of a pre-norm GPT block with ``heads`` of the heads, on
    ``batch`` sequences."""

    def block(x: torch.Tensor, qkv: torch.Tensor, proj: torch.Tensor, fc1: torch.Tensor,
              fc2: torch.Tensor) -> torch.Tensor:
        world = dist.group.WORLD
        tokens, width = x.shape
        seq = tokens // batch
        h = F.layer_norm(x, (width,))
        q, k, v = (h @ qkv.t()).split(qkv.shape[0] // 3, dim=1)
        q, k, v = (t.reshape(batch, seq, heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        attention = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        attention = attention.transpose(1, 2).reshape(tokens, -1)
        x = x + funcol.all_reduce(attention @ proj.t(), "sum", world)
        h = F.gelu(F.layer_norm(x, (width,)) @ fc1.t())
        return x + funcol.all_reduce(h @ fc2.t(), "sum", world)

    return block


def data_parallel_step(x: torch.Tensor, y: torch.Tensor, w1: torch.Tensor,
                       w2: torch.Tensor, w3: torch.Tensor) -> list[torch.Tensor]:
    """Forward, backward, gradients averaged over the devices, SGD."""
    params = [w1, w2, w3]
    for p in params:
        p.requires_grad_(True)
    loss = F.cross_entropy(F.relu(F.relu(x @ w1.t()) @ w2.t()) @ w3.t(), y)
    grads = torch.autograd.grad(loss, params)
    return [(p - 0.1 * funcol.all_reduce(g, "avg", dist.group.WORLD)).detach()
            for p, g in zip(params, grads, strict=True)]


def timed(fn: Callable[..., Any], args: Sequence[Any], devices: int
          ) -> tuple[TimingReport, float, int, float]:
    """Capture ``fn`` for a group of ``devices`` and estimate its kernel: the report,
    the megakernel's latency with whole-tensor collectives, the kernel's tasks and the
    capture-and-lowering seconds."""
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=devices)
    try:
        start = time.perf_counter()
        captured = capture(fn, *args)
        module = import_captured(captured)
        apply_pipeline(module, TO_TASK)
        seconds = time.perf_counter() - start
        whole = import_captured(captured)
        apply_pipeline(whole, TO_TASK + "{tile_collectives=false}")
    finally:
        dist.destroy_process_group()
    kernel = find_kernel(module)
    report, _ = estimate(kernel, MachineModel())
    return report, estimate(find_kernel(whole))[0].megakernel_s, len(kernel.tasks()), seconds


def row(label: str, report: TimingReport, whole: float, tasks: int, seconds: float) -> str:
    return (f"| {label} | {tasks} | {report.operators} | {report.megakernel_s * 1e6:.1f} | "
            f"{whole * 1e6:.1f} | {report.per_operator_s * 1e6:.1f} | "
            f"{report.speedup:.2f}x | {seconds:.1f} |")


HEADER = ("| case | tasks | operators | megakernel (us) | megakernel, whole collectives (us) "
          "| kernel per operator (us) | speedup | lowering (s) |\n"
          "|---|---|---|---|---|---|---|---|")


def tensor_parallel(width: int, heads: int, seq: int, batches: Sequence[int],
                    devices: Sequence[int]) -> None:
    print(f"(a) tensor-parallel block, width {width}, {heads} heads, {seq} tokens per "
          "sequence")
    print(HEADER)
    g = torch.Generator().manual_seed(0)
    for n in devices:
        for batch in batches:
            shard = width // n
            args = (torch.randn(batch * seq, width, generator=g),
                    torch.randn(3 * shard, width, generator=g) * 0.02,
                    torch.randn(width, shard, generator=g) * 0.02,
                    torch.randn(4 * shard, width, generator=g) * 0.02,
                    torch.randn(width, 4 * shard, generator=g) * 0.02)
            timing = timed(tensor_parallel_block(heads // n, batch), args, n)
            print(row(f"{n} devices, batch {batch}", *timing), flush=True)


def data_parallel(width: int, batches: Sequence[int], devices: Sequence[int]) -> None:
    print(f"\n(b) data-parallel MLP step ({width}-{width}-{width}-10, SGD), gradients "
          "averaged by all-reduce")
    print(HEADER)
    g = torch.Generator().manual_seed(0)
    for n in devices:
        for batch in batches:
            args = (torch.randn(batch, width, generator=g),
                    torch.randint(0, 10, (batch,), generator=g),
                    torch.randn(width, width, generator=g) * 0.02,
                    torch.randn(width, width, generator=g) * 0.02,
                    torch.randn(10, width, generator=g) * 0.02)
            timing = timed(data_parallel_step, args, n)
            print(row(f"{n} devices, batch {batch} per device", *timing), flush=True)


def torchrun(steps: int, processes: int, batch: int, mode: str) -> float:
    """ms per step (median after the first two) of examples/ddp_training.py."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         "--nproc-per-node", str(processes), "examples/ddp_training.py", "--mode", mode,
         "--steps", str(steps), "--batch", str(batch)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    found = re.search(r"([\d.]+) ms per step", out)
    assert found and ": equal" in out, out
    return float(found.group(1))


def real_runs(steps: int, batch: int) -> None:
    print(f"\n(c) torchrun, examples/ddp_training.py (512-512-10 MLP, global batch {batch},"
          " cpu device, gloo), ms per step after the first two")
    print("| mode | 1 process | 2 processes | 2 / 1 |\n|---|---|---|---|")
    for mode in ("ddp", "all_reduce", "functional"):
        one, two = torchrun(steps, 1, batch, mode), torchrun(steps, 2, batch, mode)
        print(f"| {mode} | {one:.1f} | {two:.1f} | {two / one:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    args = parser.parse_args()
    print(f"machine: {MachineModel().describe()}; ring all-reduce\n")
    if args.quick:
        tensor_parallel(256, 4, 8, [1], [2, 4])
        data_parallel(128, [8], [2])
        real_runs(4, 32)
        return
    tensor_parallel(1024, 16, 32, [1, 16], [2, 4, 8])
    data_parallel(1024, [16, 128], [2, 4, 8])
    real_runs(12, 64)


if __name__ == "__main__":
    main()
