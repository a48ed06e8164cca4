"""Idioms of user code that lazy tensors used to ignore without an error (found by a
probe of buffer donation; they failed with donation off too): in-place ops on lists of
tensors (``torch._foreach_add_``, what ``foreach=True`` optimizers call), which run on
the host, now write every tensor of the list back (``SGD(momentum, foreach=True)`` and
``Adam(foreach=True)`` never changed a parameter); ``p.data = value`` now makes ``p``
see ``value`` (it kept its old value, and ``module.double()`` left f32 parameters);
``copy.deepcopy`` of a tensor with a pending value copies that value (it copied the
lazy state: reading the copy failed with an assertion, or a lock could not be
pickled). Found by a later probe: a tensor made by ``torch.tensor(..., device=)``
could not be written in place, and an integer tensor written with a float result was
cast where eager refuses."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import torch_mncore


@pytest.fixture(autouse=True)
def cpu_device() -> None:
    torch_mncore.init("cpu", implicit_sync="silent")


def test_a_foreach_in_place_op_writes_every_tensor_of_its_list() -> None:
    p, q = torch.ones(3).mncore(), torch.full((2, 2), 4.0).mncore()
    torch._foreach_add_([p, q], [torch.ones(3).mncore(), torch.ones(2, 2).mncore()],
                        alpha=-0.5)
    torch._foreach_mul_([p, q], 2.0)
    torch_mncore.sync(wait=True)
    torch.testing.assert_close(p.cpu(), torch.ones(3))
    torch.testing.assert_close(q.cpu(), torch.full((2, 2), 7.0))


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
    lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=True),
], ids=["sgd-momentum", "adam"])
def test_foreach_optimizers_match_eager(make) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    eager, model = nn.Linear(4, 3), nn.Linear(4, 3)
    model.load_state_dict(eager.state_dict())
    model.mncore()
    optimizers = [make(list(m.parameters())) for m in (eager, model)]
    for _ in range(3):
        x = torch.randn(5, 4)
        for m, opt, inputs in ((eager, optimizers[0], x), (model, optimizers[1], x.mncore())):
            opt.zero_grad()
            m(inputs).square().sum().backward()
            opt.step()
        torch_mncore.sync()
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.cpu(), theirs, rtol=1e-5, atol=1e-6)


def test_assigning_data_makes_the_tensor_see_the_value() -> None:
    p = nn.Parameter(torch.ones(3).mncore())
    p.data = p.data * 0.5
    torch.testing.assert_close(p.detach().cpu(), torch.full((3,), 0.5))
    assert p.requires_grad
    p.data = torch.arange(4.0).reshape(2, 2).mncore()  # another shape
    assert p.shape == (2, 2)
    torch.testing.assert_close(p.detach().cpu(), torch.arange(4.0).reshape(2, 2))
    with pytest.raises(Exception, match="move it first"):
        p.data = torch.ones(2)


def test_a_module_cast_on_the_device_casts_its_parameters() -> None:
    torch.manual_seed(0)
    eager = nn.Linear(3, 2).double()
    model = nn.Linear(3, 2)
    model.load_state_dict(eager.state_dict())
    model.mncore().double()  # nn.Module._apply assigns .data
    assert model.weight.dtype == torch.float64
    x = torch.randn(4, 3, dtype=torch.float64)
    torch.testing.assert_close(model(x.mncore()).detach().cpu(), eager(x))


def test_a_deep_copy_taken_mid_step_keeps_the_values_of_then() -> None:
    """A model copied after backward, before the step and its sync: the copy holds the
    weights and gradients of that moment, as eager's copy does, and later steps leave
    it alone."""
    torch.manual_seed(0)
    eager, model = nn.Linear(4, 3), nn.Linear(4, 3)
    model.load_state_dict(eager.state_dict())
    model.mncore()
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.5) for m in (eager, model)]
    copies: list[list[nn.Module]] = [[], []]
    for _ in range(2):
        x = torch.randn(5, 4)
        for i, (m, opt, inputs) in enumerate(((eager, optimizers[0], x),
                                              (model, optimizers[1], x.mncore()))):
            opt.zero_grad()
            m(inputs).square().sum().backward()
            copies[i].append(copy.deepcopy(m))
            opt.step()
        torch_mncore.sync()
    for theirs, ours in zip(*copies, strict=True):
        for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
            assert a.requires_grad and a.grad is None and b.grad is None  # parameters'
            torch.testing.assert_close(a.detach().cpu(), b.detach())
    x = torch.ones(3).mncore().requires_grad_()  # a leaf: its gradient is copied
    (x * 2).sum().backward()
    torch.testing.assert_close(copy.deepcopy(x).grad.cpu(), torch.full((3,), 2.0))


def test_a_tensor_made_on_the_device_can_be_written_in_place() -> None:
    """``torch.tensor(data, device=)`` returns ``lift_fresh`` of the copy, an alias: an
    in-place op on it failed ("an in-place update through a view made by
    aten.lift_fresh.default is not supported")."""
    x = torch.tensor([1.0, 2.0], dtype=torch.float16, device="mncore")
    x.add_(torch.tensor([0.1, 0.2], device="mncore"))
    expected = torch.tensor([1.0, 2.0], dtype=torch.float16).add_(torch.tensor([0.1, 0.2]))
    assert torch.equal(x.cpu(), expected)


WRITES_EAGER_REFUSES = {
    "int mul_ float": lambda d: torch.tensor([1, 2, 3], device=d).mul_(0.5),
    "int add_ float": lambda d: torch.tensor([1, 2, 3], device=d).add_(0.5),
    "bool mul_ int": lambda d: torch.tensor([True, False], device=d).mul_(2),
    "int div_": lambda d: torch.tensor([1, 2], device=d).div_(2),
    "int sub_ float tensor": lambda d: torch.tensor([1, 2], device=d).sub_(
        torch.tensor(0.5, device=d)),
    "int add float alpha": lambda d: torch.add(torch.tensor([1, 2], device=d),
                                               torch.tensor([1, 2], device=d), alpha=0.5),
}


@pytest.mark.parametrize("name", WRITES_EAGER_REFUSES)
def test_an_in_place_result_the_tensor_cannot_hold_is_refused_as_eager_does(name: str
                                                                            ) -> None:
    """An integer or bool tensor written with a float result (or a float ``alpha``):
    eager raises; the device cast the result and went on (``[1, 2, 3].add_(0.5)`` gave
    ``[1, 2, 3]``)."""
    with pytest.raises(RuntimeError) as eager:
        WRITES_EAGER_REFUSES[name]("cpu")
    with pytest.raises(RuntimeError, match=str(eager.value).splitlines()[0]):
        WRITES_EAGER_REFUSES[name]("mncore")


WRAPPED_NUMBERS = {
    "int32 + 2**40": lambda d: torch.tensor([1, 2], dtype=torch.int32, device=d) + 2**40,
    "uint8 + 300": lambda d: torch.tensor([1, 2], dtype=torch.uint8, device=d) + 300,
    "int8 * 1000": lambda d: torch.tensor([1, 2], dtype=torch.int8, device=d) * 1000,
    "int8 < 1000": lambda d: torch.tensor([1, 2], dtype=torch.int8, device=d) < 1000,
    "int8 == 257": lambda d: torch.tensor([1, 2], dtype=torch.int8, device=d) == 257,
    "int16 add_ 70000": lambda d: torch.tensor([1, 2], dtype=torch.int16,
                                               device=d).add_(70000),
    "int8 remainder 1000": lambda d: torch.tensor([1, 2], dtype=torch.int8,
                                                  device=d) % 1000,
    "int8 // 1000": lambda d: torch.tensor([1, 2, 100], dtype=torch.int8, device=d) // 1000,
    "int8 div floor 1000": lambda d: torch.div(torch.tensor([1, 2, 100], dtype=torch.int8,
                                                            device=d), 1000,
                                               rounding_mode="floor"),
    "int8 div trunc 1000": lambda d: torch.div(torch.tensor([1, 2, 100], dtype=torch.int8,
                                                            device=d), 1000,
                                               rounding_mode="trunc"),
    # true division computes in float: the int keeps its value
    "int8 / 1000": lambda d: torch.tensor([1, 2, 100], dtype=torch.int8, device=d) / 1000,
    "uint8 / 300": lambda d: torch.tensor([1, 2, 100], dtype=torch.uint8, device=d) / 300,
    "int32 / 2**40": lambda d: torch.tensor([1, 2], dtype=torch.int32, device=d) / 2**40,
    "int8 div None 1000": lambda d: torch.div(torch.tensor([1, 2, 100], dtype=torch.int8,
                                                           device=d), 1000, rounding_mode=None),
    "int16 true_divide 70000": lambda d: torch.true_divide(
        torch.tensor([1, 2], dtype=torch.int16, device=d), 70000),
}


@pytest.mark.parametrize("name", WRAPPED_NUMBERS)
def test_a_python_int_beyond_a_narrow_int_tensor_acts_as_in_eager(name: str) -> None:
    """Eager makes the int a wrapped number of the tensor's type, cast without a check;
    the hoisted scalar's conversion refused it at execution, and the whole step failed
    with an error naming no op. True division keeps the int's value (its quotient is a
    float); it was refused the same way."""
    expected = WRAPPED_NUMBERS[name]("cpu")
    got = WRAPPED_NUMBERS[name]("mncore")
    torch_mncore.sync()
    assert got.dtype == expected.dtype and torch.equal(got.cpu(), expected)


def _narrow(dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.tensor([0.5, 3.0, -2.0, 1e-3, 700.0], dtype=dtype, device=device)


def _many(dtype: torch.dtype, device: str, seed: int = 0) -> torch.Tensor:
    """64 values: eager's vectorised kernels (a short tensor's scalar loop rounds
    ``add`` with ``alpha`` differently)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(64, generator=g) * 10).to(dtype).to(device)


NARROW_ARITHMETIC = {
    "f16 * 70000.0": lambda d: _narrow(torch.float16, d) * 70000.0,
    "f16 * 70000": lambda d: _narrow(torch.float16, d) * 70000,
    "f16 * 0.1": lambda d: _narrow(torch.float16, d) * 0.1,
    "f16 + 0.1": lambda d: _narrow(torch.float16, d) + 0.1,
    "1.1 - f16": lambda d: 1.1 - _narrow(torch.float16, d),
    "f16 / 3.3": lambda d: _narrow(torch.float16, d) / 3.3,
    "f16.mul_(0.1)": lambda d: _narrow(torch.float16, d).mul_(0.1),
    "bf16 / 3e38": lambda d: _narrow(torch.bfloat16, d) / 3e38,
    "bf16 * 0.1": lambda d: _narrow(torch.bfloat16, d) * 0.1,
    "f16 * f32 0-d": lambda d: _narrow(torch.float16, d) * torch.tensor(70000.0, device=d),
    "0-d f16 * 70000.0": lambda d: torch.tensor(0.5, dtype=torch.float16, device=d) * 70000.0,
    "0-d bf16 / 3.3": lambda d: torch.tensor(0.5, dtype=torch.bfloat16, device=d) / 3.3,
    "f16 add alpha": lambda d: torch.add(_many(torch.float16, d), _many(torch.float16, d, 1),
                                         alpha=0.1),
    "bf16 sub alpha": lambda d: torch.sub(_many(torch.bfloat16, d),
                                          _many(torch.bfloat16, d, 1), alpha=3),
    "f16 add_ alpha": lambda d: _many(torch.float16, d).add_(_many(torch.float16, d, 1),
                                                             alpha=-0.01),
    "f16 linear": lambda d: torch.nn.functional.linear(
        _many(torch.float16, d).reshape(8, 8), _many(torch.float16, d, 1).reshape(8, 8) / 10,
        _many(torch.float16, d, 2)[:8]),
}


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("name", NARROW_ARITHMETIC)
def test_narrow_float_arithmetic_with_a_number_rounds_once_as_in_eager(name: str,
                                                                      device: str) -> None:
    """Eager's CPU kernels compute an f16/bf16 product or quotient with a Python number
    (or a 0-d f32 tensor) in f32, with the number's own value, and round once: the
    number was hoisted as a tensor of the tensor's type, rounded first, so
    ``x16 * 70000.0`` overflowed (eager: 35008 for 0.5) and ``3 * 0.1`` was one unit in
    the last place off. Sums and differences round the number first, as before. A sum
    with ``alpha`` and ``linear``'s product and bias are computed in f32 and rounded
    once (they were rounded twice)."""
    torch_mncore.init(device, implicit_sync="silent")
    expected = NARROW_ARITHMETIC[name]("cpu")
    got = NARROW_ARITHMETIC[name]("mncore")
    torch_mncore.sync()
    assert got.dtype == expected.dtype and torch.equal(got.cpu(), expected), (got, expected)


def test_narrow_float_arithmetic_under_torch_compile_rounds_once_as_in_eager() -> None:
    """The same for a number written in a compiled function (a literal of its graph),
    a sum with ``alpha`` and an f16 ``linear``."""

    def scale(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x * 70000.0 + 0.1) / 3.3

    def scaled_sum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.add(x, y, alpha=0.1)

    def linear(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x.reshape(8, 8), y.reshape(8, 8) / 10, x[:8])

    x, y = _many(torch.float16, "cpu"), _many(torch.float16, "cpu", 1)
    for fn in (scale, scaled_sum, linear):
        torch._dynamo.reset()
        assert torch.equal(torch.compile(fn, backend="mncore", dynamic=False)(x, y),
                           fn(x, y)), fn.__name__


@pytest.mark.parametrize("subtract", [
    lambda t: t - (t > 0), lambda t: (t > 0) - (t > 1), lambda t: t.sub_(t > 0),
    lambda t: (t > 0) - 1, lambda t: torch.rsub(t > 0, t)])
def test_subtracting_a_boolean_is_refused_as_in_eager(subtract) -> None:  # type: ignore[no-untyped-def]
    """Eager refuses ``-`` with a boolean (a mask is inverted with ``~``); the meta
    kernels the device infers shapes with do not, so it computed a result."""
    t = torch.tensor([1, -2, 3])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator") as eager:
        subtract(t.clone())
    with pytest.raises(RuntimeError) as device:
        subtract(t.clone().mncore())
        torch_mncore.sync()
    assert str(device.value) == str(eager.value)


@pytest.mark.parametrize("update", [lambda x: x.pow_(2), lambda x: x.square_(),
                                    lambda x: x.pow_(0.5), lambda x: x.__ipow__(3)],
                         ids=["pow_(2)", "square_()", "pow_(0.5)", "**= 3"])
def test_in_place_powers_of_a_number(update: object) -> None:
    """``pow_(number)``'s functional form is ``pow.Tensor_Scalar``, not the overload of
    its name (``pow.Scalar`` raises a number to tensor powers): it failed inside."""
    x = torch.tensor([1.5, 2.0, 4.0])
    expected = update(x.clone())  # type: ignore[operator]
    got = update(x.mncore())  # type: ignore[operator]
    torch_mncore.sync()
    torch.testing.assert_close(got.cpu(), expected)


def test_printing_and_formatting_as_eager_does() -> None:
    """``f"{loss:.4f}"`` formats a 0-d tensor's number (it raised a TypeError); a tensor
    prints as eager prints a device tensor."""
    loss = torch.tensor(3.14159).mncore()
    assert f"{loss:.3f}" == "3.142"
    assert repr(torch.tensor([1, 2], dtype=torch.int32).mncore()) == \
        "tensor([1, 2], device='mncore:0', dtype=torch.int32)"
    assert repr(torch.zeros(0, 3).mncore()) == "tensor([], device='mncore:0', size=(0, 3))"
    w = torch.ones(2).mncore().requires_grad_()
    assert repr(w) == "tensor([1., 1.], device='mncore:0', requires_grad=True)"
    assert repr(w * 2) == "tensor([2., 2.], device='mncore:0', grad_fn=<MulBackward0>)"
    with pytest.raises(TypeError):
        f"{torch.ones(2).mncore():.2f}"  # as eager: a format spec needs one number


class _Symmetric(nn.Module):
    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return w.triu() + w.triu(1).transpose(-1, -2)

    def right_inverse(self, w: torch.Tensor) -> torch.Tensor:
        return w.triu()


def test_a_parametrization_registered_on_the_device_trains_as_in_eager() -> None:
    """``register_parametrization`` with a ``right_inverse`` sets the original with
    ``set_``, which the device refused: a module already on it could not be
    parametrized (spectral_norm, orthogonal, ...)."""
    import torch.nn.utils.parametrize as parametrize

    torch.manual_seed(0)
    eager = nn.Linear(4, 4)
    ours = copy.deepcopy(eager).mncore()
    parametrize.register_parametrization(eager, "weight", _Symmetric())
    parametrize.register_parametrization(ours, "weight", _Symmetric())
    x = torch.randn(3, 4)
    for model, data in ((eager, x), (ours, x.mncore())):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            model(data).square().sum().backward()
            optimizer.step()
    torch_mncore.sync()
    torch.testing.assert_close(ours.weight.cpu(), eager.weight)
    torch.testing.assert_close(ours.parametrizations.weight.original.cpu(),
                               eager.parametrizations.weight.original)


def test_set_makes_an_alias_of_its_source() -> None:
    p = torch.zeros(3).mncore()
    source = torch.arange(6.0).mncore()[::2]
    with torch.no_grad():
        p.set_(source)
    source.add_(1)  # one storage: the write shows through p
    torch.testing.assert_close(p.cpu(), torch.tensor([1.0, 3.0, 5.0]))
    with pytest.raises(RuntimeError, match="Could not set tensor"):
        p.set_(torch.zeros(3, dtype=torch.int64).mncore())
