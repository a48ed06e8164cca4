"""How compile time grows with model size: the GPT-2-style training step (AdamW) at
1, 2, 4 and 8 layers. For each stage (capture, import, print, parse, graph pipeline)
prints the op count, the best-of-N seconds, and the fitted exponent k of
time ~ ops^k (least squares on log-log); k <= 1.15 means near-linear."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import GRAPH_PIPELINE, apply_pipeline, make_context
from mncore_ir.testing.model_zoo import gpt_adamw

STAGES = ("capture", "import", "print", "parse", "pipeline")


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def measure(layers: int, repeats: int) -> tuple[int, dict[str, float]]:
    step = gpt_adamw(layers=layers)
    inputs = step.example_inputs()
    ctx = make_context()
    times: dict[str, float] = {}
    times["capture"], captured = best_of(repeats, lambda: capture(step, *inputs))
    times["import"], module = best_of(repeats, lambda: import_captured(captured))
    ops = sum(1 for _ in module.walk()) - 2  # minus module and func
    times["print"], text = best_of(repeats, lambda: str(module))
    times["parse"], _ = best_of(repeats, lambda: parse_module(ctx, text, "bench"))
    # the pipeline rewrites in place, so each repeat starts from a fresh parse
    pipeline_times = []
    for _ in range(repeats):
        fresh = parse_module(ctx, text, "bench")
        start = time.perf_counter()
        apply_pipeline(fresh, GRAPH_PIPELINE, ctx, verify=False)
        pipeline_times.append(time.perf_counter() - start)
    times["pipeline"] = min(pipeline_times)
    return ops, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    rows = []
    print(f"GPT-2-style training step with AdamW; pipeline: {GRAPH_PIPELINE}")
    print(f"{'layers':>6} {'ops':>6} " + " ".join(f"{s + ' s':>10}" for s in STAGES))
    for layers in args.layers:
        ops, times = measure(layers, args.repeats)
        rows.append((ops, times))
        print(f"{layers:>6} {ops:>6} " + " ".join(f"{times[s]:>10.3f}" for s in STAGES),
              flush=True)
    ops = np.log([r[0] for r in rows])
    print(f"{'exponent k (time ~ ops^k)':>13} " + " ".join(
        f"{np.polyfit(ops, np.log([r[1][s] for r in rows]), 1)[0]:>10.2f}" for s in STAGES))
    print(f"{'us per op at the largest size':>13} " + " ".join(
        f"{1e6 * rows[-1][1][s] / rows[-1][0]:>10.1f}" for s in STAGES))


if __name__ == "__main__":
    main()
