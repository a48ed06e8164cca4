"""The Triton megakernel against per-level launches and torch eager.

With a GPU: latency of one megakernel launch, of one launch per dependency level, and
of eager PyTorch, for MLP inference and a transformer block forward at batch 1 and 16
(CUDA events, median of repeats). Without one it says so, runs the same kernels in
Triton's interpreter (smaller sizes) and reports correctness against eager and the
interpreter's time, which says nothing about GPU speed. Then the ``triton`` device's
pipeline against its parts undone: the small CNN's SGD step with direct convolutions,
and pointwise work with uncoalesced descriptors.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

GPU = torch.cuda.is_available()
if not GPU:  # decided before Triton is imported (see mncore_ir.pipeline)
    os.environ.setdefault("TRITON_INTERPRET", "1")

from task_graph import inference  # noqa: E402

from mncore_ir import pipeline  # noqa: E402
from mncore_ir.frontends.fx import capture, import_captured  # noqa: E402
from mncore_ir.pipeline import apply_pipeline  # noqa: E402
from mncore_ir.targets import triton_megakernel  # noqa: E402
from mncore_ir.targets.task_simulator import find_kernel  # noqa: E402
from mncore_ir.targets.triton_megakernel import generate, load  # noqa: E402
from mncore_ir.testing.model_zoo import MLP, Block, cnn_sgd  # noqa: E402

PIPELINE = "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task{options}"


def timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median seconds of ``fn`` (CUDA events on a GPU, wall clock otherwise)."""
    fn()  # warm-up (and compilation)
    samples = []
    for _ in range(repeats):
        if GPU:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def case(name: str, model: torch.nn.Module, x: torch.Tensor, options: str, repeats: int,
         directory: str) -> None:
    model.eval()
    captured = inference(model, x)
    module = import_captured(captured)
    apply_pipeline(module, PIPELINE.format(options=options))
    kernel = find_kernel(module)
    megakernel = load(generate(kernel), directory)
    device = "cuda" if GPU else "cpu"
    args = [a.to(device) for a in captured.example_inputs]
    eager_model = model.to(device)
    with torch.no_grad():
        expected = eager_model(x.to(device))
    errors = {}
    for mode in ("megakernel", "levels"):
        (out,) = megakernel.run(*args, mode=mode)
        errors[mode] = (out.to(device) - expected).abs().max().item()
    with torch.no_grad():
        eager = timed(lambda: eager_model(x.to(device)), repeats)
    mega = timed(lambda: megakernel.run(*args, mode="megakernel"), repeats)
    levels = timed(lambda: megakernel.run(*args, mode="levels"), repeats)
    unit, scale = ("us", 1e6) if GPU else ("ms", 1e3)
    print(f"{name:<16}{megakernel.NUM_TASKS:>6}{len(megakernel.LEVELS):>7}"
          f"{mega * scale:>12.1f}{levels * scale:>12.1f}{eager * scale:>12.1f} {unit}"
          f"{levels / mega:>9.3g}x{eager / mega:>9.3g}x"
          f"   max |err| {max(errors.values()):.1e}")


def variants(title: str, captured: Any, rows: list[tuple[str, str, bool]], repeats: int,
             directory: str) -> None:
    """One captured graph through several (name, pipeline, coalesced) variants: tasks,
    time of a megakernel run, and the largest difference from the first variant."""
    print(f"\n{title}:")
    device = "cuda" if GPU else "cpu"
    args = [a.to(device) for a in captured.example_inputs]
    first, base = None, None
    for name, passes, coalesce in rows:
        module = import_captured(captured)
        apply_pipeline(module, passes)
        keep = triton_megakernel.pointwise
        if not coalesce:
            triton_megakernel.pointwise = lambda op: False
        try:
            megakernel = load(generate(find_kernel(module)), directory)
        finally:
            triton_megakernel.pointwise = keep
        outs = megakernel.run(*args)
        first = first or outs
        err = max((a.double() - b.double()).abs().max().item()
                  for a, b in zip(outs, first, strict=True))
        seconds = timed(lambda m=megakernel: m.run(*args), repeats)
        base = base or seconds
        print(f"  {name:<22}{megakernel.NUM_TASKS:>6} tasks {seconds * 1e3:>10.1f} ms"
              f" {seconds / base:>6.2f}x   max |diff| {err:.1e}")


def triton_device(repeats: int, directory: str) -> None:
    """The triton device's pipeline against its parts undone: the CNN's SGD step with
    direct convolutions instead of matrix products, and pointwise work (a momentum
    update and a transpose) with uncoalesced descriptors."""
    device = pipeline.device_pipeline("triton")
    direct = device.replace("graph-decompose{composites=false convolutions=true},", "")
    step = cnn_sgd()
    variants("CNN SGD step (batch 4, 16x16), triton device's pipeline",
             capture(step, *step.example_inputs()),
             [("triton device", device, True), ("direct convolutions", direct, True),
              ("uncoalesced", device, False)], repeats, directory)

    def update(p: torch.Tensor, b: torch.Tensor, g: torch.Tensor) -> Any:
        momentum = b * 0.9 + g
        return p - 0.01 * momentum, momentum, (p.t() * 2.0).contiguous()

    n = 1024 if GPU else 512
    variants(f"momentum update and transpose of {n}x{n}",
             capture(update, *(torch.randn(n, n) for _ in range(3))),
             [("coalesced", device, True), ("uncoalesced", device, False)],
             repeats, directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20 if GPU else 2)
    args = parser.parse_args()
    torch.manual_seed(0)
    if GPU:
        print(f"GPU: {torch.cuda.get_device_name()}")
        width, dim, seq = 1024, 256, 64
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        options = f"{{matmul_tile=16,64 elementwise_tile=2048 row_tile=4 workers={sms}}}"
    else:
        print("no GPU here: the kernels run in Triton's interpreter (TRITON_INTERPRET=1),")
        print("so the times below are the interpreter's and say nothing about GPU speed.")
        width, dim, seq = 256, 64, 16
        options = "{matmul_tile=16,64 elementwise_tile=2048 row_tile=4}"
    print(f"convert-graph-to-task{options}; MLP {width}x4, block dim {dim} seq {seq}")
    print(f"{'case':<16}{'tasks':>6}{'levels':>7}{'megakernel':>12}{'per-level':>12}"
          f"{'eager':>12}    levels/mk  eager/mk")
    with tempfile.TemporaryDirectory() as directory:
        for batch in (1, 16):
            case(f"mlp batch {batch}", MLP((width, width, width, width, 10)),
                 torch.randn(batch, width), options, args.repeats, directory)
        for batch in (1, 16):
            case(f"block batch {batch}", Block(dim, heads=4), torch.randn(batch, seq, dim),
                 options, args.repeats, directory)
        triton_device(args.repeats, directory)


if __name__ == "__main__":
    main()
