"""PyTorch's OpInfo database through the lazy device, against eager: every op with
float32 samples (and bfloat16 where it has them) on the ``cpu`` and ``interp`` devices,
with OpInfo's own skips and tolerances (``tests/opinfo.py``). The ops known to fail are
listed with their reasons in ``tests/opinfo_expected.py``; an op on that list that
passes fails the test, so the list stays honest.

CI (``make test``) runs fixed slices of the table (:data:`CI_SLICES`: every op in float32
on ``cpu``); ``make slow`` runs the rest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import torch_mncore
from mncore_ir.frontends import lazy_tensor as lt
from tests import opinfo
from tests.opinfo_expected import EXPECTED_FAILURES

OPS = opinfo.float32_ops()
BF16_OPS = [op for op in OPS if torch.bfloat16 in op.supported_dtypes("cpu")]
PASSING = (opinfo.COMPILED, opinfo.HOST, opinfo.SKIPPED)
#: Per dtype and device, CI runs every n-th op (the database's order, from the first):
#: float32 on ``cpu`` whole, the rest in slices that keep CI under 15 minutes.
CI_SLICES = {("float32", "cpu"): 1, ("float32", "interp"): 3, ("bfloat16", "cpu"): 2,
             ("bfloat16", "interp"): 3}


def cases(ops: list[opinfo.OpInfo], dtype: str) -> list[object]:
    """``(device, op)`` for both devices, the ops outside CI's slice marked slow."""
    return [pytest.param(device, op, id=f"{device}-{opinfo.op_name(op)}",
                         marks=pytest.mark.slow if i % CI_SLICES[dtype, device] else ())
            for device in ("cpu", "interp") for i, op in enumerate(ops)]


@pytest.fixture(scope="module", autouse=True)
def back_to_cpu() -> Iterator[None]:
    yield
    torch_mncore.init("cpu")


_SELECTED: dict[str, object] = {}  # the runtime this module last started, by device


def use(device: str) -> None:
    """Select ``device`` unless this module's runtime for it is still the active one
    (a new runtime, and its worker, for each test would be slow)."""
    if _SELECTED.get(device) is None or _SELECTED[device] is not lt.current():
        torch_mncore.init(device, implicit_sync="silent")
        _SELECTED.clear()
        _SELECTED[device] = lt.current()


def check(result: opinfo.OpResult, device: str, dtype: torch.dtype) -> None:
    key = f"{result.name}@{str(dtype).removeprefix('torch.')}"
    expected = EXPECTED_FAILURES.get(key)
    if expected is None:
        assert result.outcome in PASSING, f"{key} on {device}: {result.outcome}: " \
            f"{result.message}"
    else:
        assert result.outcome not in PASSING, (
            f"{key} passes on {device} now: remove it from tests/opinfo_expected.py "
            f"(listed as: {expected})")


@pytest.mark.parametrize(("device", "op"), cases(OPS, "float32"))
def test_float32(device: str, op: opinfo.OpInfo) -> None:
    use(device)
    repeats = 2 if device == "cpu" else 1  # the second run replays what the first captured
    check(opinfo.run_op(op, torch.float32, samples=3, repeats=repeats), device, torch.float32)


@pytest.mark.parametrize(("device", "op"), cases(BF16_OPS, "bfloat16"))
def test_bfloat16(device: str, op: opinfo.OpInfo) -> None:
    """Listed ops are judged against eager alone: whether a differently rounded result
    is as accurate as eager's varies with the CPU's kernels, and the list must hold on
    every machine."""
    use(device)
    listed = f"{opinfo.op_name(op)}@bfloat16" in EXPECTED_FAILURES
    check(opinfo.run_op(op, torch.bfloat16, samples=1, against_exact=not listed), device,
          torch.bfloat16)


def test_a_low_precision_result_is_judged_against_the_exact_one_when_eager_is_off() -> None:
    """A bf16 result that misses eager's passes only where it is as close to the f64
    result as eager's is (eager's kernels round differently by CPU)."""
    op = next(o for o in opinfo.op_db if o.name == "mul")
    sample = next(iter(op.sample_inputs("cpu", torch.bfloat16, requires_grad=False)))
    args = (sample.input, *sample.args)
    exact = op(*(a.double() if isinstance(a, torch.Tensor) else a for a in args))
    eager_off = (exact + 0.5).bfloat16()  # an eager result several bf16 steps off
    closer = exact.bfloat16()
    worse = (exact - 1.0).bfloat16()
    assert opinfo._no_worse_than_eager(op, sample, args, closer, eager_off)
    assert not opinfo._no_worse_than_eager(op, sample, args, worse, eager_off)
