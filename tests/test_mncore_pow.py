"""``x ** y`` at every level equals eager PyTorch, negative bases included.

The mncore ALU has no ``pow`` and no branches: convert-task-to-mncore builds it from
exp, log, compares and selects (``general_power``), and the sign of odd powers, the
exact cases (``0 ** 0``, ``1 ** nan``) and the NaN of a non-integral power of a negative
base all come from selects. The lazy-tensor runtime hoists a Python exponent into a
graph input, so ``x ** 2`` on the ``mncore`` device takes that general path; a traced
constant exponent takes the product path. Both are compared with eager, and so are the
graph interpreter, the cpu executor and the task-level simulator, over bases with
negatives, zeros (both signs), ±1 and infinities.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

import torch_mncore
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.graph_torch import compile_module
from mncore_ir.targets.mncore_simulator import find_program
from mncore_ir.targets.mncore_simulator import simulate as simulate_program
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.task_simulator import simulate as simulate_kernel

TO_TASK = "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task{target=mncore}"
TO_TINY = f"{TO_TASK},convert-task-to-mncore{{machine=tiny}},mncore-schedule"

#: Bases every test sees: the cases C's pow singles out, then ordinary values.
SPECIAL_BASES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0,
                 np.inf, -np.inf, 1e-3, -1e-3]
#: Exponents, one per column of a random-exponent test: integers (odd, even,
#: negative, huge), halves, fractions, infinities and NaN.
SPECIAL_EXPONENTS = [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, 2.5, -0.5, 1e-3,
                     8388609.0, 16777216.0, 1e10, np.inf, -np.inf, np.nan]


def bases(seed: int, n: int) -> np.ndarray:
    """``n`` random bases (some integral, some zero) after the special ones."""
    rng = np.random.default_rng(seed)
    random = rng.uniform(-4, 4, n)
    integral = rng.random(n) < 0.3
    random[integral] = np.round(random[integral])
    random[rng.random(n) < 0.15] = 0.0
    return np.concatenate([SPECIAL_BASES, random]).astype(np.float32)


def levels(module_of: Callable[[], ModuleOp], arrays: Sequence[np.ndarray]
           ) -> dict[str, np.ndarray]:
    """The one output of the function at every level (each from a fresh module)."""
    graph = module_of()
    task = module_of()
    apply_pipeline(task, TO_TASK)
    tiny = module_of()
    apply_pipeline(tiny, TO_TINY)
    tensors = [torch.from_numpy(a) for a in arrays]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {
            "interp": run_function(graph, list(arrays))[0],
            "cpu": compile_module(graph)(*tensors)[0].numpy(),
            "task": simulate_kernel(find_kernel(task), list(arrays))[0],
            "mncore": simulate_program(find_program(tiny), list(arrays))[0][0],
        }


def assert_matches_eager(results: dict[str, np.ndarray], eager: torch.Tensor, what: str,
                         numpy_differs: np.ndarray | None = None) -> None:
    """Values within f32 tolerance, NaN where eager has NaN, infinities of eager's sign;
    the levels that compute with numpy are not compared where ``numpy_differs``."""
    for level, out in results.items():
        keep = slice(None)
        if numpy_differs is not None and level in ("interp", "task"):
            keep = ~numpy_differs
        np.testing.assert_allclose(out[keep], eager.numpy()[keep], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{what} at the {level} level")


@pytest.mark.parametrize("exponent", [2, 3, -1, 0, 0.5, 2.5, -2, 4, 5, -0.5])
def test_constant_exponents_match_eager_at_every_level(exponent: float) -> None:
    x = bases(0, 40)
    captured = capture(lambda x: x ** exponent, torch.from_numpy(x))
    results = levels(lambda: import_captured(captured), [x])
    # PyTorch computes x ** -0.5 as rsqrt(x), numpy as C's pow: they disagree at -inf
    # (NaN, 0) and -0.0 (-inf, inf). The mncore level follows PyTorch everywhere.
    numpy_differs = (exponent == -0.5) & ((x == -np.inf) | ((x == 0) & np.signbit(x)))
    assert_matches_eager(results, torch.from_numpy(x) ** exponent, f"x ** {exponent}",
                         numpy_differs)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_exponent_tensors_match_eager_at_every_level(seed: int) -> None:
    """Every special base against every special exponent, then random pairs of an
    integral-or-not exponent and a base of either sign."""
    rng = np.random.default_rng(seed)
    grid_x, grid_y = np.meshgrid(bases(seed, 10), SPECIAL_EXPONENTS, indexing="ij")
    n = 64
    y = rng.uniform(-5, 5, n)
    y[: n // 2] = np.round(y[: n // 2])  # half integral, of both parities
    x = np.concatenate([grid_x.reshape(-1), rng.uniform(-3, 3, n)]).astype(np.float32)
    y = np.concatenate([grid_y.reshape(-1), y]).astype(np.float32)
    captured = capture(lambda x, y: x ** y, torch.from_numpy(x), torch.from_numpy(y))
    results = levels(lambda: import_captured(captured), [x, y])
    assert_matches_eager(results, torch.from_numpy(x) ** torch.from_numpy(y), "x ** y")


def test_powers_on_the_mncore_device_match_eager() -> None:
    """The runtime hoists the Python exponent into an input: the general path, which
    is C's pow, as eager is except at an infinite base for ``0.5`` (eager's sqrt)."""
    finite = bases(1, 20)
    x = torch.from_numpy(finite[np.isfinite(finite)])
    ops: list[Callable[[torch.Tensor], torch.Tensor]] = [
        lambda x: x ** 2, lambda x: x.pow(2), torch.square, lambda x: x ** 3,
        lambda x: x ** -1, lambda x: x ** 0, lambda x: x ** 0.5, lambda x: x ** 2.5]
    torch_mncore.init("mncore", implicit_sync="error")
    try:
        device_x = x.mncore()
        outs = [op(device_x) for op in ops]
        torch_mncore.sync()
        got = [out.cpu() for out in outs]
    finally:
        torch_mncore.init("cpu")
    for i, (op, out) in enumerate(zip(ops, got, strict=True)):
        np.testing.assert_allclose(out.numpy(), op(x).numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"power {i}")
