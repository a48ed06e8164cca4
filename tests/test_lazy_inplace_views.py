"""In-place view ops (``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``) change the
lazy tensor's own shape and strides, as eager's do. They used to write the view's value
into the storage and keep the old shape: ``torch.stft`` of a 1-d signal (its composite
kernel ends in ``squeeze_(0)``) came back with an extra dimension, without an error."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torch_mncore


@pytest.fixture(autouse=True)
def cpu_device() -> None:
    torch_mncore.init("cpu", implicit_sync="silent")

CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "squeeze_": lambda t: t.squeeze_(0),
    "unsqueeze_": lambda t: t.unsqueeze_(1),
    "transpose_": lambda t: t.transpose_(0, 2),
    "t_ after squeeze_": lambda t: t.squeeze_(0).t_().mul_(2),
}


@pytest.mark.parametrize("name", CASES)
def test_inplace_view_ops_change_the_tensor_itself(name: str) -> None:
    x = torch.randn(1, 3, 4)
    expected, device = x.clone(), x.clone().mncore()
    assert CASES[name](device) is device
    CASES[name](expected)
    torch_mncore.sync()
    assert (device.shape, device.stride()) == (expected.shape, expected.stride())
    assert torch.equal(device.cpu(), expected)


def test_stft_of_a_1d_signal_has_eagers_shape() -> None:
    signal = torch.randn(100)
    expected = torch.stft(signal, 10, return_complex=False)
    got = torch.stft(signal.mncore(), 10, return_complex=False)
    torch_mncore.sync()
    assert got.shape == expected.shape == (6, 51, 2)
    assert torch.allclose(got.cpu(), expected, atol=1e-4)


#: Writes through the parts of a view op of several results, and to the base after
#: them (a KV cache's halves, a flat buffer's pieces): each part is a view of the base,
#: as in eager. They used to be copies, so both writes were lost without an error.
SEVERAL: dict[str, Callable[[torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "chunk": lambda t: t.chunk(2, dim=1),
    "split": lambda t: t.split(3, dim=1),
    "split_with_sizes": lambda t: t.split([1, 4, 1], dim=1),
    "unbind": lambda t: t.unbind(-1),
    "tensor_split": lambda t: t.tensor_split([2, 5], dim=1),
}


@pytest.mark.parametrize("device", ["cpu", "interp", "mncore"])
@pytest.mark.parametrize("name", SEVERAL)
def test_writes_through_the_parts_of_split_and_unbind_reach_the_base(device: str,
                                                                      name: str) -> None:
    torch_mncore.init(device, implicit_sync="silent")

    def run(base: torch.Tensor) -> list[torch.Tensor]:
        base = base.clone()
        parts = SEVERAL[name](base)
        parts[0].add_(1.0)
        parts[-1][0] = 7.0
        base.mul_(2.0)  # seen by every part
        return [base, *parts]

    x = torch.arange(24.0).reshape(4, 6)
    expected = run(x)
    with torch.no_grad():
        got = run(x.mncore())
    torch_mncore.sync()
    for ours, theirs in zip(got, expected, strict=True):
        assert torch.equal(ours.cpu(), theirs)


def test_a_diagonal_written_in_place_reaches_the_base() -> None:
    """``cov.diagonal().add_(eps)``: a write through ``diagonal`` (diagonal_scatter)."""
    x = torch.randn(4, 4)
    expected = x.clone()
    expected.diagonal().add_(0.5)
    expected.diagonal(1).fill_(0.0)
    got = x.clone().mncore()
    got.diagonal().add_(0.5)
    got.diagonal(1).fill_(0.0)
    torch_mncore.sync()
    assert torch.equal(got.cpu(), expected)


#: Writes through a view of another dtype of the same element size reinterpret the
#: bits, as eager's do; they used to be written back as converted values (clearing a
#: float's sign bit through an int32 view gave 1069547520.0 for 1.5).
DTYPE_VIEWS: dict[str, tuple[torch.dtype, Callable[[torch.Tensor], object]]] = {
    "bitwise_and_": (torch.float32, lambda t: t.view(torch.int32).bitwise_and_(0x7FFFFFFF)),
    "add_": (torch.float32, lambda t: t.view(torch.int32).add_(1)),
    "fill_": (torch.float32, lambda t: t.view(torch.int32).fill_(1 << 30)),
    "setitem": (torch.float32, lambda t: t.view(torch.int32).__setitem__(0, 7)),
    "float view of int32": (torch.int32, lambda t: t.view(torch.float32).mul_(2.0)),
}


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("name", DTYPE_VIEWS)
def test_writes_through_a_view_of_another_dtype_keep_the_bits(device: str, name: str) -> None:
    torch_mncore.init(device, implicit_sync="silent")
    dtype, write = DTYPE_VIEWS[name]
    x = torch.tensor([-1.5, 2.0, -3.25]).view(dtype).clone()
    expected, got = x.clone(), x.clone().mncore()
    write(expected)
    write(got)
    torch_mncore.sync()
    assert torch.equal(got.cpu().view(torch.int32), expected.view(torch.int32))


def test_a_write_through_a_view_of_another_element_size_is_refused() -> None:
    """A float32 tensor seen as bytes: refused at the write, the tensor as it was."""
    x = torch.tensor([-1.5, 2.0]).mncore()
    with pytest.raises(torch_mncore.LazyError, match=r"view as torch\.uint8 of a "
                       r"torch\.float32 tensor \(another element size\) is not supported"):
        x.view(torch.uint8)[0] = 0
    torch_mncore.sync()
    assert torch.equal(x.cpu(), torch.tensor([-1.5, 2.0]))


GROWING: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add_": lambda x, y: x.add_(y),
    "mul_": lambda x, y: x.mul_(y),
    "lerp_": lambda x, y: x.lerp_(y, 0.5),
    "masked_fill_": lambda x, y: x.masked_fill_(y > 0, 1.0),
    "clamp_": lambda x, y: x.clamp_(min=y),
    "through a view": lambda x, y: x[:].add_(y),
}


@pytest.mark.parametrize("name", GROWING)
def test_an_inplace_op_that_would_broadcast_its_tensor_is_refused(name: str) -> None:
    """``zeros(4).add_(ones(2, 4))`` is refused with eager's message: the tensor held
    the 2x4 result under its shape of 4 (a probe's find), or a view's write failed at
    execution with an internal message."""
    for device in ("cpu", "mncore"):
        x, y = torch.zeros(4, device=device), torch.ones(2, 4, device=device)
        with pytest.raises(RuntimeError, match=r"output with shape \[4\] doesn't match the "
                                               r"broadcast shape \[2, 4\]"):
            GROWING[name](x, y)
    x = torch.zeros(2, 4).mncore()  # the other way round broadcasts as eager
    assert torch.equal(GROWING[name](x, torch.ones(4).mncore()).cpu(),
                       GROWING[name](torch.zeros(2, 4), torch.ones(4)))


THROUGH_A_TRANSPOSE: dict[str, Callable[[torch.Tensor], object]] = {
    "index_copy_": lambda t: t.index_copy_(0, torch.tensor([3, 0], device=t.device),
                                           torch.full((2, 3), -2.0, device=t.device)),
    "masked_fill_": lambda t: t.masked_fill_(torch.eye(4, 3, dtype=torch.bool,
                                                       device=t.device), 7.0),
    "scatter_add_": lambda t: t.scatter_add_(0, torch.tensor([[1, 0, 2]], device=t.device),
                                             torch.ones(1, 3, device=t.device)),
    "tril_": lambda t: t.tril_(),
    "cumsum_": lambda t: t.cumsum_(0),
}


@pytest.mark.parametrize("name", THROUGH_A_TRANSPOSE)
def test_inplace_ops_through_a_transpose_of_a_view(name: str) -> None:
    """An in-place op on ``x.t()`` where ``x`` is itself a view: its result is laid out
    as the transpose, which a ``view`` back to the base's shape refused ("view size is
    not compatible", at the call: a probe's find)."""
    expected = torch.arange(12.0).view(3, 4)
    THROUGH_A_TRANSPOSE[name](expected.t())
    x = torch.arange(12.0).mncore().view(3, 4)
    THROUGH_A_TRANSPOSE[name](x.t())
    assert torch.equal(x.cpu(), expected)


def test_an_expand_to_the_tensors_own_shape_is_written_through() -> None:
    """``x.expand_as(x).add_(1)`` writes ``x``, as eager (it was refused as a write
    through an expand: a probe's find); a real expansion stays refused, as eager
    refuses writing one element through several."""
    expected, x = torch.arange(4.0), torch.arange(4.0).mncore()
    for t in (expected, x):
        t.expand_as(t).add_(1)
        torch.broadcast_to(t, t.shape).mul_(2)
    assert torch.equal(x.cpu(), expected)
    with pytest.raises(Exception, match="expand"):
        torch.zeros(2, 1).mncore().expand(2, 3).add_(1)
