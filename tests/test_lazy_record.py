"""The lazy runtime imports its trace as recorded: torch's decompositions run at record
time and no step is re-traced with ``make_fx`` (which these tests make raise)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore
from mncore_ir.frontends import lazy_compile, lazy_runtime
from mncore_ir.frontends.fx import HANDLERS
from mncore_ir.frontends.lazy_templates import Template
from mncore_ir.testing.model_zoo import CNN, GPT, MLP
from tests.test_lazy import train

aten = torch.ops.aten


def _no_retrace(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the lazy runtime re-traced a step with make_fx")


@pytest.fixture
def no_make_fx(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(lazy_compile, "make_fx", _no_retrace)
    monkeypatch.setattr("torch.fx.experimental.proxy_tensor.make_fx", _no_retrace)
    torch_mncore.init("cpu", implicit_sync="error")
    yield
    torch_mncore.wait_device_ops()


def _recorded_ops() -> set[Any]:
    """The ATen ops of the last step, with each template's expanded."""
    graph, _ = lazy_runtime.runtime().last
    ops: set[Any] = set()

    def add(op: Any) -> None:
        if isinstance(op, Template):
            for step in op.steps:
                add(step[0])
        else:
            ops.add(op)

    for node in graph.nodes:
        add(node.op)
    return ops


def _matches_eager(base: nn.Module, make_optimizer: Callable[[Any], torch.optim.Optimizer],
                   batches: list[tuple[torch.Tensor, torch.Tensor]],
                   loss_fn: Callable[..., torch.Tensor]) -> None:
    names = [n for n, _ in base.named_parameters()] + [n for n, _ in base.named_buffers()]
    eager = train(copy.deepcopy(base), make_optimizer, batches, loss_fn, lazy=False)
    torch_mncore.reset_metrics()
    lazy = train(copy.deepcopy(base), make_optimizer, batches, loss_fn, lazy=True)
    torch.testing.assert_close(lazy[0], eager[0], rtol=1e-5, atol=1e-6)
    for name, ours, theirs in zip(names, lazy[1], eager[1], strict=True):
        if name.endswith("qkv.bias"):  # the key bias: zero gradient, AdamW's noise
            d = ours.shape[0] // 3   # (as tests/test_lazy.py compares it)
            ours, theirs = (torch.cat([t[:d], t[2 * d:]]) for t in (ours, theirs))
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5, msg=name)
    counters = torch_mncore.counters()
    assert counters.get("UncachedCompile", 0) >= 1
    assert "ReTrace" not in counters, torch_mncore.metrics_report()
    assert not [k for k in counters if k.startswith("CpuFallback")], counters
    assert _recorded_ops() <= set(HANDLERS)  # nothing left for make_fx to decompose


def _classes(shape: tuple[int, ...], seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=g), torch.randint(0, 10, shape[:1], generator=g))
            for _ in range(3)]


def test_mlp_step_without_make_fx(no_make_fx: None) -> None:
    torch.manual_seed(0)
    _matches_eager(MLP((32, 64, 10)), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                   _classes((16, 32), 1), F.cross_entropy)


def test_gpt_step_without_make_fx(no_make_fx: None) -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randint(0, 64, (2, 16), generator=g),
                torch.randint(0, 64, (2, 16), generator=g)) for _ in range(3)]

    def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    _matches_eager(GPT(layers=2), lambda p: torch.optim.AdamW(p, lr=1e-3), batches, loss)


def test_cnn_step_without_make_fx(no_make_fx: None) -> None:
    torch.manual_seed(0)
    _matches_eager(CNN(), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                   _classes((4, 3, 16, 16), 1), F.cross_entropy)


def test_op_without_a_handler_is_recorded_through_its_decomposition(no_make_fx: None) -> None:
    assert aten.silu.default not in HANDLERS
    x = torch.randn(4, 8)
    lazy = x.mncore()
    out = F.silu(lazy) * 3
    torch_mncore.sync()
    ops = _recorded_ops()
    assert aten.silu.default not in ops and ops <= set(HANDLERS), ops
    torch.testing.assert_close(out.cpu(), F.silu(x) * 3)
    inplace = x.mncore()
    F.silu(inplace, inplace=True)  # the in-place op: its functional form, decomposed
    torch_mncore.sync()
    assert aten.silu.default not in _recorded_ops()
    torch.testing.assert_close(inplace.cpu(), F.silu(x))
    assert "ReTrace" not in torch_mncore.counters()


def test_write_through_select_imports_directly(no_make_fx: None) -> None:
    x = torch.randn(3, 4)
    lazy = x.mncore()
    lazy[-1].mul_(2.5)  # written back through the select: no select_scatter to decompose
    torch_mncore.sync()
    expected = x.clone()
    expected[-1].mul_(2.5)
    torch.testing.assert_close(lazy.cpu(), expected)
    assert aten.select_scatter.default not in _recorded_ops()


def test_a_materialized_view_without_a_handler_is_re_traced() -> None:
    """The fallback: a view op recorded outside dispatch, which only torch's
    decompositions make importable, goes through the make_fx re-trace."""
    torch_mncore.init("cpu", implicit_sync="error")
    torch_mncore.reset_metrics()
    x = torch.randn(2, 3)
    view = aten._reshape_alias.default(x.mncore(), [6], [1])
    out = view + 1
    torch_mncore.sync()
    torch.testing.assert_close(out.cpu(), x.reshape(6) + 1)
    assert torch_mncore.counters()["ReTrace"] == 1


def test_the_re_trace_gives_the_same_losses(monkeypatch: pytest.MonkeyPatch) -> None:
    torch_mncore.init("cpu", implicit_sync="error")
    results = []
    for retrace in (False, True):
        monkeypatch.setattr(lazy_compile.GraphCompiler, "retrace", retrace)
        torch_mncore.init("cpu", implicit_sync="error")  # a fresh compile cache
        torch.manual_seed(0)
        results.append(train(MLP((32, 64, 10)), lambda p: torch.optim.Adam(p, lr=1e-3),
                              _classes((16, 32), 2), F.cross_entropy, lazy=True)[0])
    torch.testing.assert_close(results[0], results[1], rtol=1e-6, atol=1e-6)
