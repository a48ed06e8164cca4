"""OpInfo coverage per device: every OpInfo with float32 samples run through the lazy
device against eager (``tests/opinfo.py``: OpInfo's skips, test_compare_cpu's
tolerances). Prints, per device, how many ops pass (all samples match eager), how many
of those ran fully compiled (no op on the host), the failure categories, and the host
ops that block the most ops from compiling fully.

    python bench/op_coverage.py                      # cpu, interp, task; 3 samples
    python bench/op_coverage.py --devices mncore --samples 1
    python bench/op_coverage.py --dtype bfloat16 --devices cpu,interp --samples 1
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("TRITON_INTERPRET", "1")

import torch

from tests import opinfo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="cpu,interp,task")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--top", type=int, default=12, help="host ops to list per device")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    ops = [op for op in opinfo.float32_ops() if dtype in op.supported_dtypes("cpu")]
    print(f"{len(ops)} OpInfo entries with {args.dtype} samples, {args.samples} samples "
          "each\n")
    print("| device | checked | pass | fully compiled | on host | diagnosed | raw | "
          "mismatch | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    blockers: dict[str, collections.Counter[str]] = {}
    for device in args.devices.split(","):
        start = time.perf_counter()
        results = opinfo.sweep(ops, device, samples=args.samples, dtype=dtype)
        seconds = time.perf_counter() - start
        counts = opinfo.summary(results)
        checked = len(results) - counts[opinfo.SKIPPED]
        passed = counts[opinfo.COMPILED] + counts[opinfo.HOST]

        def share(n: int, total: int = checked) -> str:
            return f"{n} ({100 * n / total:.1f}%)" if total else str(n)

        print(f"| {device} | {checked} | {share(passed)} | {share(counts[opinfo.COMPILED])} | "
              f"{counts[opinfo.HOST]} | {counts[opinfo.DIAGNOSED]} | {counts[opinfo.RAW]} | "
              f"{counts[opinfo.MISMATCH]} | {seconds:.0f} |", flush=True)
        blocked: collections.Counter[str] = collections.Counter()
        for r in results:
            if r.outcome == opinfo.HOST:
                blocked.update({k.removeprefix("CpuFallback::") for k in r.fallbacks})
        blockers[device] = blocked
        for r in results:
            if r.outcome in (opinfo.DIAGNOSED, opinfo.RAW, opinfo.MISMATCH):
                print(f"    {device} {r.outcome}: {r.name}: {r.message[:160]}",
                      file=sys.stderr)
    for device, blocked in blockers.items():
        top = ", ".join(f"{op} ({n})" for op, n in blocked.most_common(args.top))
        print(f"\n{device}: host ops keeping the most ops from compiling fully: {top}")


if __name__ == "__main__":
    main()
