"""``detach()`` and ``alias()`` give a tensor that shares its base's storage and view
chain, with no view step of its own: whatever writes through one must show through the
other, as in eager, whether the base is a plain tensor, a view or a pending result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import torch_mncore

Program = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def _alias_then_write(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    d = x.detach()
    d.add_(1)
    x.mul_(2)
    return x, d


def _alias_of_a_slice(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    d = x[1:].detach()
    d.mul_(3)
    return x, d


def _alias_of_a_transpose(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    d = x.t().detach()
    d.add_(1)
    x[0, 1] = -5.0
    return x, d


def _alias_of_an_alias(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    d = x.detach().detach()
    d[0].zero_()
    return x, d


def _inplace_view_on_an_alias(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    d = x.detach()
    d.t_()  # changes d's own shape only
    d.add_(torch.arange(3.0).unsqueeze(1).to(d.device))
    return x, d


def _aten_alias(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    d = torch.ops.aten.alias(x)
    d.sub_(1)
    return x, d


def _alias_of_a_pending_result(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    y = x * 2
    d = y.detach()
    y.add_(1)
    return y, d


def _update_through_an_alias_in_no_grad(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    p = x.clone().requires_grad_()
    (p * p).sum().backward()
    with torch.no_grad():
        p.detach().add_(p.grad, alpha=-0.1)
    return p.detach(), p.grad


PROGRAMS: dict[str, Program] = {f.__name__.lstrip("_"): f for f in (
    _alias_then_write, _alias_of_a_slice, _alias_of_a_transpose, _alias_of_an_alias,
    _inplace_view_on_an_alias, _aten_alias, _alias_of_a_pending_result,
    _update_through_an_alias_in_no_grad)}


@pytest.mark.parametrize("asynchronous", [True, False], ids=["async", "sync"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_writes_through_an_alias_match_eager(name: str, asynchronous: bool) -> None:
    torch_mncore.init("cpu", asynchronous=asynchronous)
    x = torch.arange(12.0).reshape(2, 6)[:, :3].contiguous() + 0.5
    expected = PROGRAMS[name](x.clone())
    got = PROGRAMS[name](x.clone().mncore())
    torch_mncore.sync()
    for ours, theirs in zip(got, expected, strict=True):
        assert (ours.shape, ours.stride()) == (theirs.shape, theirs.stride())
        assert torch.equal(ours.cpu(), theirs)


RESIZES: dict[str, Callable[[torch.Tensor], object]] = {
    "out= of another shape": lambda x: torch.add(torch.ones(2, device=x.device), 1, out=x),
    "resize_": lambda x: x.resize_(2).fill_(1),
}


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("name", RESIZES)
@pytest.mark.parametrize("share", ["detach", "view"])
def test_a_tensor_sharing_memory_with_a_resized_one_is_not_read_silently(
        name: str, share: str) -> None:
    """Eager resizes the memory a base shares with its views and aliases, which then
    show the new contents; the device gives the resized tensor new memory, so reading a
    view or alias kept from before is an error naming the resize (it returned the old
    values without one); the resized tensor itself is eager's."""
    torch_mncore.init("cpu", implicit_sync="silent")
    expected, x = torch.zeros(3, 4), torch.zeros(3, 4).mncore()
    kept = x.detach() if share == "detach" else x[0]
    RESIZES[name](expected)
    RESIZES[name](x)
    assert torch.equal(x.cpu(), expected)
    with pytest.raises(torch_mncore.LazyError, match=r"shares its memory with one that "
                                                     r"was resized .* at .*test_lazy_aliases"):
        kept.cpu()


def test_a_host_tensor_that_requires_grad_in_a_device_op_is_refused_at_its_line() -> None:
    """Used on the device, a host tensor is copied there; one that requires grad would
    need its gradient carried back across the devices, which autograd's engine failed
    on at backward with an internal assertion (found by a probe): refused where it is
    used, naming the line, as eager refuses mixing devices. ``.mncore()`` of such a
    tensor, and the same op under no_grad, still work."""
    torch_mncore.init("cpu")
    host = torch.ones(3, requires_grad=True)
    on_device = torch.ones(3).mncore()
    with pytest.raises(torch_mncore.LazyError, match=r"a host tensor that requires grad "
                       r"\(shape \[3\]\) is used in an op on the mncore device: move it "
                       r"there first .* at .*test_lazy_aliases.py:\d+: on_device \* host"):
        on_device * host
    with torch.no_grad():
        assert (on_device * host).sum().item() == 3.0
    moved = host.mncore()
    (moved * 2).sum().backward()
    torch_mncore.sync()
    assert host.grad is not None and host.grad.tolist() == [2.0, 2.0, 2.0]


def test_storage_offsets_and_addresses_are_eagers() -> None:
    """``storage_offset()`` and ``data_ptr()`` of views as eager's (offsets in the
    storage, addresses apart per storage): they were 0 for every tensor, so code that
    groups tensors by address saw one storage (a probe's find)."""
    torch_mncore.init("cpu")
    for device in ("cpu", "mncore"):
        x = torch.arange(12.0, device=device).view(3, 4)
        views = [x[1], x.t()[2], x[1:, 2:], x.diagonal(1), x.view(-1)[5:], x[2][1:]]
        got = [(v.storage_offset(), v.data_ptr() - x.data_ptr()) for v in views]
        assert got == [(4, 16), (2, 8), (6, 24), (1, 4), (5, 20), (9, 36)], device
        linear = torch.nn.Linear(3, 2).to(device)
        assert len({t.data_ptr() for t in linear.state_dict().values()}) == 2
        assert x.clone().data_ptr() != x.data_ptr()


AS_STRIDED: dict[str, Any] = {
    "write through a select": lambda d: torch.zeros(2, 3, 4, device=d).select(2, 0),
    "of an as_strided view": lambda d: torch.zeros(6, device=d).as_strided((2, 2), (1, 2)),
    "of a row": lambda d: torch.arange(12.0, device=d).reshape(3, 4)[1],
    "of a column": lambda d: torch.arange(12.0, device=d).reshape(3, 4)[:, 1],
}


@pytest.mark.parametrize("name", AS_STRIDED)
@pytest.mark.parametrize("offset", [None, 1])
def test_as_strided_of_a_view_addresses_the_storage(name: str, offset: int | None) -> None:
    """``view.as_strided(size, stride, offset)`` reads and writes the storage's elements
    (the offset defaulting to the view's own), as eager: it addressed the view's
    elements instead, without an error (a probe's find)."""
    torch_mncore.init("cpu")
    results = []
    for device in ("cpu", "mncore"):
        view = AS_STRIDED[name](device)
        base = view._base if view._base is not None else view
        strided = view.as_strided((2, 2), (1, 2), offset)
        read = strided.clone()
        strided.mul_(-1).add_(100)
        results.append(torch.cat([read.flatten().cpu(), base.flatten().cpu()]))
    assert torch.equal(results[1], results[0])
