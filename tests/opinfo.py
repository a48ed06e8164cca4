"""PyTorch's OpInfo database as mncore-ir's conformance suite: each op's samples run on
the ``mncore`` device (traced, compiled, run) against eager on the CPU, the way
PyTorch's ``TestCommon.test_compare_cpu`` compares a device with the CPU: the same
samples, its tolerances (1e-3, loosened by the op's own ``toleranceOverride``), its
skips, and ``output_process_fn_grad`` on both results. ``tests/test_opinfo.py`` and
``bench/op_coverage.py`` share it."""

from __future__ import annotations

import collections
import contextlib
import unittest
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import OpInfo
from torch.utils import _pytree as pytree

import torch_mncore
from mncore_ir.frontends.fx_importer import UnsupportedOpError
from mncore_ir.frontends.lazy_tensor import LazyError

#: test_compare_cpu's own tolerance; an op's toleranceOverride may only loosen it.
ATOL = RTOL = 1e-3
#: Reduced-precision samples start from torch.testing's defaults for their dtype: the
#: device (and torch's decompositions, run as ops are recorded) round to the dtype
#: after each op, where eager's fused CPU kernels compute in f32 and round once.
LOW_PRECISION = {torch.bfloat16: (1e-5, 1.6e-2), torch.float16: (1e-5, 1e-3)}
TEST = ("TestCommon", "test_compare_cpu")

#: Outcomes of one op, best first: every sample matched with no op on the host
#: ("compiled"), matched with some ("host"); a sample failed with the compiler's
#: diagnosis ("diagnosed"), with any other exception ("raw"), or gave different
#: numbers without an error ("mismatch", the worst).
COMPILED, HOST, DIAGNOSED, RAW, MISMATCH = "compiled", "host", "diagnosed", "raw", "mismatch"
ORDER = (COMPILED, HOST, DIAGNOSED, RAW, MISMATCH)
#: Ops none of whose samples could be checked: eager refuses them, or OpInfo skips them.
SKIPPED = "skipped"


def op_name(op: OpInfo) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def float32_ops() -> list[OpInfo]:
    """Every OpInfo with float32 samples on the CPU, in the database's order."""
    return [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]


@dataclass
class OpResult:
    """What running one op's samples gave: its outcome, the first failure's message,
    the host-fallback counters its samples raised, and how many samples ran."""

    name: str
    outcome: str = SKIPPED
    message: str = ""
    fallbacks: collections.Counter[str] = field(default_factory=collections.Counter)
    samples: int = 0


def _skipped_by_opinfo(op: OpInfo, dtype: torch.dtype) -> bool:
    """Whether the op's own decorators skip (or expect to fail) test_compare_cpu."""
    for decorator in op.get_decorators(*TEST, "mncore", dtype, {}):
        if isinstance(decorator, type) or hasattr(decorator, "d"):
            continue  # toleranceOverride / precisionOverride objects
        try:
            probe = decorator(lambda *a, **k: None)
        except Exception:
            continue
        if getattr(probe, "__unittest_expecting_failure__", False):
            return True
        try:
            probe(None)
        except unittest.SkipTest:
            return True
        except Exception:
            continue
    return False


def tolerance(op: OpInfo, dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol): test_compare_cpu's, loosened by the dtype's torch.testing default
    and by the op's toleranceOverride."""
    atol, rtol = ATOL, RTOL
    if dtype in LOW_PRECISION:
        atol, rtol = max(atol, LOW_PRECISION[dtype][0]), max(rtol, LOW_PRECISION[dtype][1])
    for decorator in op.get_decorators(*TEST, "mncore", dtype, {}):
        override = getattr(decorator, "d", None)
        if isinstance(override, dict) and dtype in override:
            found = override[dtype]  # precisionOverride: an atol; toleranceOverride: both
            atol = max(atol, getattr(found, "atol", found))
            rtol = max(rtol, getattr(found, "rtol", 0.0))
    return atol, rtol


def _to_device(x: Any) -> Any:
    return x.mncore() if isinstance(x, torch.Tensor) else x


def _to_host(x: Any) -> Any:
    return x.cpu() if isinstance(x, torch.Tensor) else x


def _fallbacks() -> collections.Counter[str]:
    counters = torch_mncore.counters()
    return collections.Counter({k: v for k, v in counters.items()
                                if k.startswith("CpuFallback::")})


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def run_op(op: OpInfo, dtype: torch.dtype = torch.float32, samples: int = 3,
           repeats: int = 1, against_exact: bool = True) -> OpResult:
    """Run ``samples`` of ``op``'s samples on the current device, each ``repeats``
    times (a second run replays what the first captured), against eager; with
    ``against_exact``, a low-precision result that misses eager's may pass by
    :func:`_no_worse_than_eager`."""
    result = OpResult(op_name(op))
    if _skipped_by_opinfo(op, dtype):
        return result
    atol, rtol = tolerance(op, dtype)
    try:
        with _quiet():
            inputs = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples]
    except Exception:
        return result
    outcome = COMPILED
    for sample in inputs:
        args = (sample.input, *sample.args)
        try:
            with _quiet():
                torch.manual_seed(0)
                expected = sample.output_process_fn_grad(op(*args, **sample.kwargs))
        except Exception:
            continue  # eager refuses it: nothing to compare
        for _ in range(repeats):
            before = _fallbacks()
            status, message = _run_sample(op, sample, args, expected, atol, rtol,
                                          against_exact)
            ran_on_host = _fallbacks() - before
            result.fallbacks.update(ran_on_host)
            if status == COMPILED and ran_on_host:
                status = HOST
            result.samples += 1
            if ORDER.index(status) > ORDER.index(outcome):
                outcome, result.message = status, message
    if result.samples:
        result.outcome = outcome
    return result


def _run_sample(op: OpInfo, sample: Any, args: tuple[Any, ...], expected: Any,
                atol: float, rtol: float, against_exact: bool) -> tuple[str, str]:
    try:
        with _quiet():
            torch.manual_seed(0)
            device_args, device_kwargs = pytree.tree_map(_to_device, (args, sample.kwargs))
            got = op(*device_args, **device_kwargs)
            torch_mncore.sync()
            torch_mncore.wait_device_ops()
            got = sample.output_process_fn_grad(pytree.tree_map(_to_host, got))
    except (LazyError, UnsupportedOpError) as error:
        return DIAGNOSED, f"{type(error).__name__}: {error}"
    except Exception as error:
        return RAW, f"{type(error).__name__}: {error}"
    try:
        torch.testing.assert_close(got, expected, atol=atol, rtol=rtol, equal_nan=True,
                                   check_dtype=True, check_device=False)
    except AssertionError as error:
        if against_exact and _no_worse_than_eager(op, sample, args, got, expected):
            return COMPILED, ""
        return MISMATCH, " ".join(str(error).split())[:300]
    except Exception as error:  # results of different structure
        return MISMATCH, f"{type(error).__name__}: {error}"
    return COMPILED, ""


def _no_worse_than_eager(op: OpInfo, sample: Any, args: tuple[Any, ...], got: Any,
                         expected: Any) -> bool:
    """A low-precision result that eager's does not match may still be right: eager's
    own kernels round differently by CPU (a bf16 ``conv_transpose`` on some x86 CPUs is
    off from the exact result by several bf16 steps). Accepted when its largest error
    from the exact (f64) result is no larger than eager's: no less accurate than eager
    (a decomposition that rounds between its ops, less accurate, still fails)."""
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor) or (
            got.dtype not in LOW_PRECISION or got.shape != expected.shape):
        return False

    def wide(x: Any) -> Any:
        return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    try:
        with _quiet():
            torch.manual_seed(0)
            exact = sample.output_process_fn_grad(
                op(*pytree.tree_map(wide, args), **pytree.tree_map(wide, sample.kwargs)))
    except Exception:
        return False
    if not isinstance(exact, torch.Tensor) or exact.shape != got.shape:
        return False
    if not torch.equal(got.isnan(), expected.isnan()):
        return False
    ours, theirs = ((x.double() - exact).nan_to_num(nan=0.0).abs().max()
                    for x in (got, expected))
    return bool(ours <= theirs)


def sweep(ops: Iterable[OpInfo], device: str, samples: int = 3, repeats: int = 1,
          dtype: torch.dtype = torch.float32) -> list[OpResult]:
    """Every op of ``ops`` on ``device`` (a fresh runtime, silent implicit syncs)."""
    torch_mncore.init(device, implicit_sync="silent")
    return [run_op(op, dtype, samples=samples, repeats=repeats) for op in ops
            if dtype in op.supported_dtypes("cpu")]


def summary(results: list[OpResult]) -> dict[str, int]:
    counts = collections.Counter(r.outcome for r in results)
    return {k: counts.get(k, 0) for k in (*ORDER, SKIPPED)}
