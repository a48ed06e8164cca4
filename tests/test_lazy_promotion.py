"""Mixed dtypes on the lazy devices as eager computes them: ``add``/``sub`` with an
``alpha`` and ``addcmul``/``addcdiv`` with a ``value`` promote their operands to the
common dtype before the product (an f32 accumulator of bf16 updates, as optimizers and
weight EMAs keep, must not see the product rounded to bf16), and the calls eager's
kernels refuse are refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from tests.conftest import run_on_device

Case = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

#: (name, the op of a and b, a's dtype, b's dtype)
MIXED: list[tuple[str, Case, torch.dtype, torch.dtype]] = [
    ("add_f32_bf16", lambda a, b: torch.add(a, b, alpha=3.3), torch.float32, torch.bfloat16),
    ("sub_f32_bf16", lambda a, b: a.sub(b, alpha=0.7), torch.float32, torch.bfloat16),
    ("add__f32_f16", lambda a, b: a.clone().add_(b, alpha=-0.0123), torch.float32,
     torch.float16),
    ("ema_f32_bf16", lambda a, b: a.clone().mul_(0.999).add_(b, alpha=0.001),
     torch.float32, torch.bfloat16),
    ("add_f64_f32", lambda a, b: torch.add(a, b, alpha=0.1), torch.float64, torch.float32),
    ("add_f16_i32", lambda a, b: a.add(b, alpha=0.37), torch.float16, torch.int32),
    ("add_bf16_0d_f32", lambda a, b: a.add(b.sum(), alpha=1.5), torch.bfloat16,
     torch.float32),
    ("addcmul_f32_bf16", lambda a, b: a.addcmul(b, b, value=0.7), torch.float32,
     torch.bfloat16),
    ("addcdiv_f32_bf16", lambda a, b: a.addcdiv(b, b.abs() + 1, value=-0.3),
     torch.float32, torch.bfloat16),
    ("addcmul__f32_bf16", lambda a, b: a.clone().addcmul_(b, b, value=0.05), torch.float32,
     torch.bfloat16),
]


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("name, case, a_dtype, b_dtype", MIXED, ids=[m[0] for m in MIXED])
def test_mixed_dtypes_are_promoted_before_the_product(device: str, name: str, case: Case,
                                                      a_dtype: torch.dtype,
                                                      b_dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(256, generator=g) * 3).to(a_dtype)
    b = (torch.randn(256, generator=g) * 3).to(b_dtype) if b_dtype.is_floating_point else \
        torch.randint(-50, 50, (256,), generator=g, dtype=b_dtype)
    expected = case(a, b)
    (got,), host = run_on_device(device, case, a, b)
    assert not host
    assert got.dtype == expected.dtype
    # one rounding of the result's type: eager fuses the multiply-add where the
    # interpreter rounds the product first (rounded to bf16, it was off by up to 3x)
    torch.testing.assert_close(got, expected, rtol=2 * torch.finfo(expected.dtype).eps,
                               atol=1e-6)


def test_booleans_keep_their_type() -> None:
    a, b = torch.tensor([True, False, False]), torch.tensor([False, False, True])
    case: Case = lambda a, b: torch.add(a, b, alpha=2)  # noqa: E731
    (got,), _ = run_on_device("cpu", case, a, b)
    torch.testing.assert_close(got, case(a, b))


#: calls eager's kernels refuse, with eager's message
REFUSED: list[tuple[Case, torch.dtype, str]] = [
    (lambda a, b: torch.add(a, b, alpha=True), torch.float32, "Boolean alpha"),
    (lambda a, b: torch.sub(a, b, alpha=0.5), torch.int64, "alpha must not be a floating"),
    (lambda a, b: torch.addcdiv(a, b, b), torch.int32, "Integer division with addcdiv"),
    (lambda a, b: a ** -3, torch.int64, "negative integer powers"),
    (lambda a, b: a.add_(b.float(), alpha=2), torch.int64, "can't be cast"),
    (lambda a, b: a.pow(-1), torch.int32, "negative integer powers"),
]


@pytest.mark.parametrize("case, dtype, message", REFUSED)
def test_what_eager_refuses_is_refused(case: Case, dtype: torch.dtype, message: str) -> None:
    a = torch.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match=message):
        case(a, a)
    with pytest.raises(RuntimeError, match=message):
        run_on_device("cpu", case, a, a)


#: a narrow float with a Python number that eager's kernels read at its own value (in
#: f32): rounded to bf16 first, ``bf16 // 0.3`` divided by 0.30078125 and AdamW's
#: ``exp_avg.lerp_(grad, 0.1)`` weighed by 0.10009765625
NARROW: dict[str, Case] = {
    "floor_divide": lambda x, y: x // 0.3,
    "floor_divide_small": lambda x, y: x // 0.001,
    "floor_divide_": lambda x, y: x.clone().floor_divide_(0.3),
    "div_trunc": lambda x, y: torch.div(x, 0.3, rounding_mode="trunc"),
    "div_floor_0d": lambda x, y: torch.div(x, y.sum() * 0 + 0.3, rounding_mode="floor"),
    "lerp": lambda x, y: torch.lerp(x, y, 0.9),
    "lerp_": lambda x, y: x.clone().lerp_(y, 0.1),
}


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(NARROW))
def test_narrow_floats_use_numbers_at_their_own_value(device: str, dtype: torch.dtype,
                                                      name: str) -> None:
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(2048, generator=g) * 4).to(dtype)
    y = torch.randn(2048, generator=g).to(dtype)
    if name == "div_floor_0d":
        y = y.float()  # a 0-d f32 tensor, read at its own value as a number is
    case = NARROW[name]
    (got,), host = run_on_device(device, case, x, y)
    assert not host
    # bit for bit through torch; the interpreter's f32 (numpy, no fused multiply-add)
    # may round a lerp to the neighbouring value
    rtol = 0.0 if device == "cpu" else torch.finfo(dtype).eps
    torch.testing.assert_close(got, case(x, y), rtol=rtol, atol=0)


@pytest.mark.parametrize("device", ["cpu", "interp", "task", "mncore"])
def test_exponents_eager_computes_as_other_ops(device: str) -> None:
    """``x ** 0.5`` is eager's sqrt and ``x ** -0.5`` its rsqrt (``(-inf) ** 0.5`` is
    nan, ``(-0.0) ** -0.5`` is -inf): such exponents stay in the graph, where a hoisted
    one was ``pow``'s general case (inf and +inf)."""
    x = torch.tensor([-float("inf"), -0.0, 0.0, -4.0, 2.25, float("inf"), float("nan")])

    def powers(x: torch.Tensor, _: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x ** 0.5, torch.pow(x, -0.5), x ** 2, x ** 3.0, x ** -2, x ** 0.75

    got, host = run_on_device(device, powers, x, x)
    assert not host
    for ours, theirs in zip(got, powers(x, x), strict=True):
        torch.testing.assert_close(ours, theirs, equal_nan=True, rtol=4e-6, atol=0)
        number = ~theirs.isnan()  # (a NaN's sign is no one's)
        assert torch.equal(torch.signbit(ours[number]), torch.signbit(theirs[number]))


@pytest.mark.parametrize("device", ["cpu", "interp", "task", "triton"])
def test_int64_quotients_are_exact_past_2_to_the_53(device: str) -> None:
    """``//`` and ``div(rounding_mode=...)`` of int64 as eager's integer kernels: the f64
    quotient of the exact multiple was rounded once the values passed 2**53
    (``(10**18 + 7) // 1`` was 10**18)."""
    a = torch.tensor([2**62 + 1, 10**18 + 7, -(2**62) - 3, 2**63 - 1, -(2**63), -7,
                      2**53 + 1, 5, -(2**62) + 9])
    b = torch.tensor([3, 1, 7, 2, 3, 2, 2, -(2**62), 2**31 - 1])

    def quotients(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (a // b, torch.div(a, b, rounding_mode="trunc"), a // 1000000007,
                torch.div(a, -3, rounding_mode="trunc"))

    got, _ = run_on_device(device, quotients, a, b)
    for ours, theirs in zip(got, quotients(a, b), strict=True):
        assert torch.equal(ours, theirs), (ours - theirs).tolist()


@pytest.mark.parametrize("device", ["cpu", "interp", "task"])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "trunc"])
def test_integer_division_by_zero_is_refused(device: str, name: str) -> None:
    """As eager refuses it (ZeroDivisionError); the interpreter and the task level gave
    INT64_MIN for ``-7 // 0`` and 0 for ``-7 % 0`` (a probe's find)."""
    ops: dict[str, Case] = {
        "floor_divide": lambda a, b: a // b, "remainder": lambda a, b: a % b,
        "fmod": torch.fmod, "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc")}
    a, b = torch.tensor([5, -7, 9]), torch.tensor([2, 0, 3])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ops[name](a, b)
    with pytest.raises(Exception, match="ZeroDivisionError"):
        run_on_device(device, ops[name], a, b)
