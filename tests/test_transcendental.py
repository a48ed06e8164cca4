"""The transcendental graph ops (sin ... digamma, atan2, fmod) and the ATen ops written
with them (remainders, rounding divisions, the ELU family, hypot, copysign, signbit), on
every level against eager PyTorch: the interpreter and the cpu executor run numpy's and
torch's functions, the task simulator the interpreter's, and Triton and MN-Core the
table's decompositions."""

from __future__ import annotations

import math
import tempfile
import warnings
import zlib
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.graph_torch import compile_module
from mncore_ir.targets.mncore_simulator import find_program
from mncore_ir.targets.mncore_simulator import simulate as simulate_program
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.task_simulator import simulate as simulate_kernel
from mncore_ir.targets.triton_megakernel import generate, load

TO_TASK = "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task{elementwise_tile=16}"
TO_TINY = f"{TO_TASK},convert-task-to-mncore{{machine=tiny}},mncore-schedule"

#: name -> (function of two tensors, the interval of x, the interval of y)
FUNCTIONS: dict[str, tuple[Callable[..., torch.Tensor], tuple[float, float],
                           tuple[float, float]]] = {
    "sin": (lambda x, y: torch.sin(x), (-300, 300), (0, 1)),
    "cos": (lambda x, y: torch.cos(x), (-300, 300), (0, 1)),
    "tan": (lambda x, y: torch.tan(x), (-3, 3), (0, 1)),
    "asin": (lambda x, y: torch.asin(x), (-1, 1), (0, 1)),
    "acos": (lambda x, y: torch.acos(x), (-1, 1), (0, 1)),
    "atan": (lambda x, y: torch.atan(x), (-50, 50), (0, 1)),
    "atan2": (lambda x, y: torch.atan2(x, y), (-5, 5), (-5, 5)),
    "sinh": (lambda x, y: torch.sinh(x), (-30, 30), (0, 1)),
    "cosh": (lambda x, y: torch.cosh(x), (-30, 30), (0, 1)),
    "asinh": (lambda x, y: torch.asinh(x), (-1e5, 1e5), (0, 1)),
    "acosh": (lambda x, y: torch.acosh(x), (1, 1e5), (0, 1)),
    "atanh": (lambda x, y: torch.atanh(x), (-1, 1), (0, 1)),
    "expm1": (lambda x, y: torch.expm1(x), (-5, 5), (0, 1)),
    "erfc": (lambda x, y: torch.erfc(x), (-3, 8), (0, 1)),
    "erfcx": (lambda x, y: torch.special.erfcx(x), (-3, 1e4), (0, 1)),
    "erfinv": (lambda x, y: torch.erfinv(x), (-1, 1), (0, 1)),
    "lgamma": (lambda x, y: torch.lgamma(x), (-10, 30), (0, 1)),
    "digamma": (lambda x, y: torch.digamma(x), (-10, 30), (0, 1)),
    "fmod": (lambda x, y: torch.fmod(x, y), (-1e4, 1e4), (-7, 7)),
    "remainder": (lambda x, y: torch.remainder(x, y), (-1e4, 1e4), (-7, 7)),
    "floor_divide": (lambda x, y: x // y, (-100, 100), (-7, 7)),
    "div_trunc": (lambda x, y: torch.div(x, y, rounding_mode="trunc"), (-100, 100), (-7, 7)),
    "elu": (lambda x, y: F.elu(x, 0.7), (-5, 5), (0, 1)),
    "selu": (lambda x, y: F.selu(x), (-5, 5), (0, 1)),
    "celu": (lambda x, y: F.celu(x, 0.5), (-5, 5), (0, 1)),
    "hypot": (lambda x, y: torch.hypot(x, y), (-1e20, 1e20), (-5, 5)),
    "copysign": (lambda x, y: torch.copysign(x, y), (-5, 5), (-5, 5)),
    "signbit": (lambda x, y: torch.signbit(x) | torch.signbit(y), (-5, 5), (-5, 5)),
}
#: Per level, what each op is allowed beyond eager: cpu and interp run eager's own
#: functions; the decompositions are within a few f32 ulps (lgamma and digamma lose
#: digits next to their zeros, so they also get an absolute tolerance).
RTOL = {"interp": 1e-6, "cpu": 1e-6, "task": 1e-6, "triton": 4e-6, "mncore": 4e-6}
ATOL = {"lgamma": 2e-6, "digamma": 2e-6, "tan": 1e-6}


def inputs(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The same points whichever tests ran before (pytest-xdist spreads them)."""
    _, (lo, hi), (ylo, yhi) = FUNCTIONS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = rng.uniform(lo, hi, 48).astype(np.float32)
    y = rng.uniform(ylo, yhi, 48).astype(np.float32)
    x[:3] = [0.0, -0.0, lo]  # signed zeros and an end
    y[np.abs(y) < 1e-3] = 1.0  # no division by zero
    return x, y


def assert_eager(name: str, out: np.ndarray, x: np.ndarray, y: np.ndarray, level: str
                 ) -> None:
    fn = FUNCTIONS[name][0]
    expected = fn(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    np.testing.assert_allclose(out, expected, rtol=RTOL[level], atol=ATOL.get(name, 0),
                               equal_nan=True, err_msg=f"{name} at the {level} level")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_level_equals_eager(name: str, tmp_path: object) -> None:
    x, y = inputs(name)
    captured = capture(FUNCTIONS[name][0], torch.from_numpy(x), torch.from_numpy(y))
    task = import_captured(captured)
    apply_pipeline(task, TO_TASK)
    outs = {
        "interp": run_function(import_captured(captured), [x, y])[0],
        "cpu": compile_module(import_captured(captured))(
            torch.from_numpy(x), torch.from_numpy(y))[0].numpy(),
        "task": simulate_kernel(find_kernel(task), [x, y])[0],
        "triton": load(generate(find_kernel(task)), str(tmp_path)).run(
            torch.from_numpy(x), torch.from_numpy(y))[0].numpy(),
    }
    tiny = import_captured(captured)
    apply_pipeline(tiny, TO_TINY)
    outs["mncore"] = simulate_program(find_program(tiny), [x, y])[0][0]
    for level, out in outs.items():
        assert_eager(name, out, x, y, level)


#: Where pow and relu are special: NaN, infinities, signed zeros, ±1, odd and even
#: integers, fractions.
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0,
                    -3.0, 2.5, 88.8], np.float32)


def test_special_values_on_every_level() -> None:
    """``pow`` at every pair of special values as C's pow (Triton's had 1 ** -inf and
    NaN ** 0 NaN, 0 ** NaN inf, (-inf) ** 88.8 NaN and odd powers of -0 unsigned) and
    ``relu`` of NaN NaN (Triton's was 0; a probe's finds), with the sign of every zero
    and infinity, on every level."""
    x, y = (np.repeat(SPECIAL, len(SPECIAL)), np.tile(SPECIAL, len(SPECIAL)))

    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.pow(a, b), torch.relu(a)

    captured = capture(fn, torch.from_numpy(x), torch.from_numpy(y))
    task = import_captured(captured)
    apply_pipeline(task, TO_TASK)
    tiny = import_captured(captured)
    apply_pipeline(tiny, TO_TINY)
    with tempfile.TemporaryDirectory() as tmp:
        outs = {"interp": run_function(import_captured(captured), [x, y]),
                "task": simulate_kernel(find_kernel(task), [x, y]),
                "triton": [t.numpy() for t in load(generate(find_kernel(task)), tmp).run(
                    torch.from_numpy(x), torch.from_numpy(y))],
                "mncore": simulate_program(find_program(tiny), [x, y])[0]}
    expected = [t.numpy() for t in fn(torch.from_numpy(x), torch.from_numpy(y))]
    for level, out in outs.items():
        for name, got, want in zip(("pow", "relu"), out, expected, strict=True):
            where = f"{name} at the {level} level"
            np.testing.assert_allclose(got, want, rtol=4e-6, equal_nan=True, err_msg=where)
            finite = ~np.isnan(want) & ((want == 0) | np.isinf(want))
            if name == "pow":  # relu(-0): torch's own answer depends on the tensor's size
                np.testing.assert_array_equal(np.signbit(got[finite]),
                                              np.signbit(want[finite]), err_msg=where)


def test_fmod_is_exact() -> None:
    """Bit for bit, for quotients up to 2**42 (the decomposition never rounds a - qb),
    though MN-Core's division is a product with a reciprocal."""
    rng = np.random.default_rng(0)
    a = (np.exp(rng.uniform(-5, 30, 1000)) * rng.choice([-1, 1], 1000)).astype(np.float32)
    b = (np.exp(rng.uniform(-5, 3, 1000)) * rng.choice([-1, 1], 1000)).astype(np.float32)
    keep = np.abs(a / b) < 2.0**42
    a, b = a[keep], b[keep]
    captured = capture(lambda a, b: torch.fmod(a, b), torch.from_numpy(a), torch.from_numpy(b))
    tiny = import_captured(captured)
    apply_pipeline(tiny, TO_TINY)
    out = simulate_program(find_program(tiny), [a, b])[0][0]
    np.testing.assert_array_equal(out, np.fmod(a, b))


def _on_tiny(fn: object, *inputs: np.ndarray) -> np.ndarray:
    tiny = import_captured(capture(fn, *map(torch.from_numpy, inputs)))
    apply_pipeline(tiny, TO_TINY)
    return simulate_program(find_program(tiny), list(inputs))[0][0]


def test_tanh_keeps_its_precision_near_zero() -> None:
    """``1 - 2 / (exp(2x) + 1)`` cancels near 0 (5% off at 2e-6, tanh(1e-8) was 0; a
    small-weight RNN 7e-4 off): below 1/4 the odd series. Within 3 ulp everywhere."""
    x = np.concatenate([np.logspace(-30, 2, 300), -np.logspace(-30, 2, 300),
                        np.linspace(-1, 1, 201), [0.0, -0.0, np.inf, -np.inf]]).astype(np.float32)
    out = _on_tiny(lambda x: torch.tanh(x), x)
    np.testing.assert_allclose(out, np.tanh(x), rtol=4 * 2.0**-23, atol=0)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(np.tanh(x)))


def test_erf_keeps_its_precision_near_zero() -> None:
    """``1 - poly exp(-x^2)`` cancels near 0 (erf(1e-8) was 0, erf(1e-6) 6% off; every
    GELU's input near 0): below 1 Cephes' odd series. Within 4 ulp everywhere, odd."""
    x = np.concatenate([np.logspace(-30, 0.8, 300), -np.logspace(-30, 0.8, 300),
                        np.linspace(-1.5, 1.5, 301), [0.0, -0.0, np.inf, -np.inf]]
                       ).astype(np.float32)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    out = _on_tiny(lambda x: torch.erf(x), x)
    np.testing.assert_allclose(out, exact, rtol=4 * 2.0**-23, atol=0)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(exact))


def test_abs_of_zero_is_positive() -> None:
    """``max(x, -x)`` keeps the -0 of ``max(+0, -0)``: ``1 / abs(0)`` was -inf."""
    x = np.array([0.0, -0.0, -2.5, 3.0], np.float32)
    out = _on_tiny(lambda x: 1 / torch.abs(x), x)
    np.testing.assert_array_equal(out, 1 / np.abs(x))


def test_trigonometry_past_two_to_the_24_is_nan() -> None:
    """Where f32 products cannot reduce the argument, the result says so."""
    x = np.array([1e8, -3e9, 1e30, 1e6], np.float32)
    captured = capture(lambda x: torch.sin(x), torch.from_numpy(x))
    tiny = import_captured(captured)
    apply_pipeline(tiny, TO_TINY)
    out = simulate_program(find_program(tiny), [x])[0][0]
    assert np.isnan(out[:3]).all()
    np.testing.assert_allclose(out[3], np.sin(np.float64(1e6)), atol=2e-7)


@pytest.mark.parametrize("device", ["cpu", "interp", "task", "mncore"])
def test_integer_remainders_through_torch_mncore(device: str) -> None:
    """Python's % and // on integers (index arithmetic) and their float forms, with
    both signs, through the lazy device."""
    a = torch.arange(-20, 20)
    torch_mncore.init(device, implicit_sync="error")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = a.mncore()
            got = [d % 7, d // -3, torch.div(d, 4, rounding_mode="trunc"), d.float() % -2.5,
                   torch.fmod(d, 3)]
            torch_mncore.sync()
            got = [t.cpu() for t in got]
    finally:
        torch_mncore.init("cpu")
    expected = [a % 7, a // -3, torch.div(a, 4, rounding_mode="trunc"), a.float() % -2.5,
                torch.fmod(a, 3)]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e, rtol=0, atol=0)
