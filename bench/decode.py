"""LLM decoding as a megakernel: per-token latency from the timing model, compile time,
tasks per token, recompiles.

(a) For a 12-layer, 768-wide GPT-2-style model and a Llama-style config of the same
size (RMSNorm, rotary, grouped-query attention with 4 K/V heads, SwiGLU), at batch 1
and 8, the decode step at a 1024-position KV cache: capture and lowering times, tasks,
and the timing model's per-token latency (H200 defaults) of the megakernel, of one
kernel launch per operator, and the bandwidth bound: the bytes a step must read (every
weight matrix, both caches whole; of an embedding table one row) over HBM bandwidth.
(b) The persistent decode loop: ``graph-unroll-steps`` makes one kernel of N steps
(the chosen token, caches and position carried on the device), against N kernels with
a host round trip between them (synchronise, read the token, launch: ``--host-us``).
(c) Recompiles over a 64-token generation through the lazy runtime (cpu device).
"""

from __future__ import annotations

import argparse
import gc
import time

import torch

from mncore_ir.dialects.task import KernelOp
from mncore_ir.frontends.fx import CapturedGraph, capture, import_captured
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.task_timing import MachineModel, TimingReport, estimate
from mncore_ir.testing.decoders import (
    Decoder,
    decode_carry,
    decode_step,
    decoder,
    greedy_steps,
    prompt_tokens,
    step_inputs,
)

PREPARE = "canonicalize,cse,dce,graph-fuse-elementwise"


def bound_bytes(model: Decoder) -> int:
    """What one decode step must read: every parameter, except the embedding tables
    it reads a row of (the tied GPT-2 table is read whole by the LM head), and both
    caches whole."""
    rowwise = {"pos.weight"} | ({"tok.weight"} if model.cfg.style == "llama" else set())
    weights = sum(p.numel() * p.element_size() for name, p in model.named_parameters()
                  if name not in rowwise)
    caches = sum(b.numel() * b.element_size() for name, b in model.named_buffers()
                 if ".cache_" in name)
    return weights + caches


def captured_step(model: Decoder) -> tuple[CapturedGraph, float]:
    start = time.perf_counter()
    captured = capture(decode_step(model), *step_inputs(model))
    return captured, time.perf_counter() - start


def lowered(captured: CapturedGraph, before: str = "", options: str = "") -> tuple[KernelOp,
                                                                                  float]:
    """The task kernel of the captured step (``before``: graph passes first) and the
    seconds its import and lowering took (verification included)."""
    start = time.perf_counter()
    ctx = make_context()
    module = import_captured(captured)
    apply_pipeline(module, f"{before}{PREPARE},convert-graph-to-task{options}", ctx)
    (kernel,) = [op for op in module.ops if isinstance(op, KernelOp)]
    return kernel, time.perf_counter() - start


def per_token(name: str, batch: int, context: int, machine: MachineModel) -> None:
    model = decoder(name, batch=batch, context=context)
    captured, capture_s = captured_step(model)
    kernel, lower_s = lowered(captured, options="{max_tasks=200000}")
    report, _ = estimate(kernel, machine)
    bound = bound_bytes(model) / machine.bandwidth
    print(f"{name:<12}{batch:>6}{capture_s:>10.1f}{lower_s:>9.1f}{report.tasks:>8}"
          f"{report.megakernel_s * 1e6:>9.1f}{report.per_operator_s * 1e6:>10.1f}"
          f"{bound * 1e6:>9.1f}{report.megakernel_s / bound:>9.2f}x{report.speedup:>9.2f}x")


def persistent_loop(name: str, steps: int, context: int, machine: MachineModel,
                    host_s: float) -> None:
    model = decoder(name, context=context)
    captured, _ = captured_step(model)
    single, _ = lowered(captured, options="{max_tasks=200000}")
    one: TimingReport = estimate(single, machine)[0]
    carry = decode_carry(captured.input_names, captured.output_names)
    unroll = (f"graph-unroll-steps{{steps={steps} collect=0 carry="
              f"{','.join(map(str, carry))}}},")
    kernel, lower_s = lowered(captured, unroll, f"{{max_tasks={60_000 * steps}}}")
    looped = estimate(kernel, machine)[0]
    separate = one.megakernel_s + host_s  # a launch, the step, the host's round trip
    fused = looped.megakernel_s / steps
    print(f"{name:<12}{steps:>6}{separate * 1e6:>14.1f}{fused * 1e6:>13.1f}"
          f"{separate / fused:>9.2f}x{lower_s:>10.1f}")


def recompiles(name: str, tokens: int) -> None:
    import torch_mncore

    model = decoder(name, context=tokens + 8)
    prompt = prompt_tokens(model.cfg)
    torch_mncore.init(device="cpu")
    torch_mncore.reset_metrics()
    model.mncore()
    start = time.perf_counter()
    steps = 0
    for _token in greedy_steps(model, prompt, tokens, device="mncore"):
        torch_mncore.sync(wait=True)
        steps += 1
    seconds = time.perf_counter() - start
    compiles = torch_mncore.counter_value("UncachedCompile")
    _, compile_s, _ = torch_mncore.metric_data("CompileTime")
    print(f"{name}: {steps} steps ({tokens} new tokens) on the cpu device: {compiles} compile "
          f"({compile_s:.2f} s), {steps - compiles} cached, {seconds / steps * 1e3:.1f} ms/step")
    torch_mncore.init(device="cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gpt2-small", "llama-small"])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--context", type=int, default=1024, help="KV cache positions")
    parser.add_argument("--steps", type=int, default=4, help="steps of the unrolled loop")
    parser.add_argument("--host-us", type=float, default=10.0,
                        help="host round trip between two decode kernels, microseconds")
    parser.add_argument("--machine", default="", help="timing model, e.g. workers=114")
    parser.add_argument("--skip-loop", action="store_true")
    args = parser.parse_args()
    machine = MachineModel.from_options(args.machine)
    torch.manual_seed(0)
    print(f"machine: {machine.describe()}")
    print(f"\n(a) per-token latency, context {args.context} (timing model)")
    print(f"{'model':<12}{'batch':>6}{'capture s':>10}{'lower s':>9}{'tasks':>8}"
          f"{'mega us':>9}{'per-op us':>10}{'bound us':>9}{'mega/bd':>10}{'speedup':>10}")
    for name in args.models:
        for batch in args.batches:
            per_token(name, batch, args.context, machine)
            gc.collect()
    if not args.skip_loop:
        print(f"\n(b) persistent loop: {args.steps} tokens in one kernel vs one kernel per "
              f"token with a {args.host_us:g} us host round trip, batch 1")
        print(f"{'model':<12}{'steps':>6}{'per-kernel us':>14}{'unrolled us':>13}"
              f"{'gain':>10}{'lower s':>10}")
        for name in args.models:
            persistent_loop(name, args.steps, args.context, machine, args.host_us * 1e-6)
            gc.collect()
    print("\n(c) recompiles")
    recompiles(args.models[0], 64)


if __name__ == "__main__":
    main()
