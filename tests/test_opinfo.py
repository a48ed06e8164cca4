"""PyTorch's OpInfo database through the lazy device, against eager: every op with
float32 samples (and bfloat16 where it has them) on the ``cpu`` and ``interp`` devices,
with OpInfo's own skips and tolerances (``tests/opinfo.py``). The ops known to fail are
listed with their reasons in ``tests/opinfo_expected.py``; an op on that list that
passes fails the test, so the list stays honest."""

from __future__ import annotations

import pytest
import torch

from tests import opinfo
from tests.opinfo_expected import EXPECTED_FAILURES

OPS = opinfo.float32_ops()
BF16_OPS = [op for op in OPS if torch.bfloat16 in op.supported_dtypes("cpu")]
PASSING = (opinfo.COMPILED, opinfo.HOST, opinfo.SKIPPED)


@pytest.fixture(scope="module", params=["cpu", "interp"])
def device(request: pytest.FixtureRequest) -> str:
    import torch_mncore

    torch_mncore.init(request.param, implicit_sync="silent")
    yield request.param
    torch_mncore.init("cpu")


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


@pytest.mark.parametrize("op", OPS, ids=opinfo.op_name)
def test_float32(device: str, op: opinfo.OpInfo) -> None:
    repeats = 2 if device == "cpu" else 1  # the second run replays what the first captured
    check(opinfo.run_op(op, torch.float32, samples=3, repeats=repeats), device, torch.float32)


@pytest.mark.parametrize("op", BF16_OPS, ids=opinfo.op_name)
def test_bfloat16(device: str, op: opinfo.OpInfo) -> None:
    """Listed ops are judged against eager alone: whether a differently rounded result
    is as accurate as eager's varies with the CPU's kernels, and the list must hold on
    every machine."""
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
