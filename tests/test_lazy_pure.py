"""``torch_mncore.assume_pure`` (``frontends/lazy_pure.py``): a pure function is traced
once per signature and recorded as one node; forward and gradients match eager; what a
template cannot stand for runs op by op, still right."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from mncore_ir.frontends import lazy_runtime


@pytest.fixture(autouse=True)
def device() -> None:
    torch_mncore.init("cpu", implicit_sync="error")
    torch_mncore.reset_metrics()


def block(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    h = F.gelu(F.linear(x, w, b))
    return F.layer_norm(h, (h.shape[-1],)) * 2


pure_block = torch_mncore.assume_pure(block)


def _train(fn: Any, steps: int = 3) -> tuple[list[torch.Tensor], list[dict[str, int]]]:
    """Forward and backward through ``fn`` on the device and on the host, compared."""
    torch.manual_seed(0)
    w, b = torch.randn(16, 8, requires_grad=True), torch.randn(16, requires_grad=True)
    lw, lb = (t.detach().mncore().requires_grad_() for t in (w, b))
    counters, grads = [], []
    for _ in range(steps):
        torch_mncore.reset_metrics()
        x = torch.randn(4, 8)
        out = fn(x.mncore(), lw, lb)
        (out * out).sum().backward()
        torch_mncore.sync()
        expected = block(x, w, b)
        (expected * expected).sum().backward()
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(lw.grad.cpu(), w.grad, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(lb.grad.cpu(), b.grad, rtol=1e-4, atol=1e-5)
        counters.append(torch_mncore.counters())
        grads.append(lw.grad.cpu())
    return grads, counters


def test_forward_and_gradients_match_eager_and_trace_once() -> None:
    _, pure = _train(pure_block)
    graph, _ = lazy_runtime.runtime().last  # the call's forward and backward: a node each
    assert sum(isinstance(getattr(n.op, "op", None), str) for n in graph.nodes) == 2
    _, plain = _train(block)
    assert pure[0]["PureCaptures"] == 2  # the forward and the backward template
    assert all("PureCaptures" not in c for c in pure[1:]), pure
    assert all(p["TracedOps"] < q["TracedOps"] for p, q in zip(pure[1:], plain[1:],
                                                               strict=True))


def test_structures_and_constants() -> None:
    @torch_mncore.assume_pure
    def scaled(x: torch.Tensor, scale: float, *, shift: torch.Tensor) -> dict[str, Any]:
        return {"out": x * scale + shift, "pair": (x.sum(), shift.exp())}

    x, shift = torch.randn(3, 4), torch.randn(4)
    results = [scaled(x.mncore(), scale, shift=shift.mncore()) for scale in (0.5, 2.0, 0.5)]
    torch_mncore.sync()
    for scale, got in zip((0.5, 2.0, 0.5), results, strict=True):
        torch.testing.assert_close(got["out"].cpu(), x * scale + shift)
        torch.testing.assert_close(got["pair"][0].cpu(), x.sum())
        torch.testing.assert_close(got["pair"][1].cpu(), shift.exp())
    assert torch_mncore.counters()["PureCaptures"] == 2  # one per scale


def test_on_host_tensors_the_function_just_runs() -> None:
    x, w, b = torch.randn(2, 8), torch.randn(16, 8), torch.randn(16)
    torch.testing.assert_close(pure_block(x, w, b), block(x, w, b))
    assert "PureCaptures" not in torch_mncore.counters()


def test_what_a_template_cannot_stand_for_runs_op_by_op() -> None:
    """Reading a value, and reading a tensor that is not an argument (it changes
    between calls: a template would freeze its value), are traced op by op."""
    weight = torch.ones(4).mncore()

    @torch_mncore.assume_pure
    def reads_outside(x: torch.Tensor) -> torch.Tensor:
        return x * weight

    torch_mncore.set_implicit_sync("silent")

    @torch_mncore.assume_pure
    def reads_a_value(x: torch.Tensor) -> torch.Tensor:
        return x * float(x.sum())

    x = torch.arange(4.0)
    first = reads_outside(x.mncore())
    weight.mul_(3)
    second = reads_outside(x.mncore())
    read = reads_a_value(x.mncore())
    torch_mncore.sync()
    torch.testing.assert_close(first.cpu(), x)
    torch.testing.assert_close(second.cpu(), x * 3)
    torch.testing.assert_close(read.cpu(), x * 6)
    counters = torch_mncore.counters()
    assert any(k.startswith("NotPure::") and "reads_outside" in k for k in counters), counters
    assert any(k.startswith("NotPure::") and "reads_a_value" in k for k in counters), counters


def test_the_three_ways_example_agrees_with_eager() -> None:
    """examples/three_ways.py: lazy, assume_pure and torch.compile end on eager's loss."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, os.path.join(root, "examples", "three_ways.py"),
                          "--steps", "5", "--width", "16"], capture_output=True, text=True,
                         check=True).stdout
    losses = [line.split("last loss")[1].strip() for line in out.splitlines()
              if "last loss" in line]
    assert len(losses) == 4 and len(set(losses)) == 1, out


def _critic(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ w).sum(-1)


def test_gradients_with_create_graph_are_differentiable() -> None:
    """A gradient penalty (WGAN-GP): gradients taken with ``create_graph=True`` through
    a pure function are differentiated again, as eager's (the backward template's were
    constants: the penalty added nothing to the weights' gradients)."""
    pure_critic = torch_mncore.assume_pure(_critic)
    torch.manual_seed(0)
    x, w = torch.randn(4, 3), torch.randn(3, 2)

    def weight_grad(fn: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        x, w = x.clone().requires_grad_(), w.clone().requires_grad_()
        out = fn(x, w)
        (gx,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        (out.mean() + 10 * ((gx.norm(dim=1) - 1) ** 2).mean()).backward()
        return w.grad

    expected = weight_grad(_critic, x, w)
    got = weight_grad(pure_critic, x.mncore(), w.mncore())
    torch_mncore.sync()
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-6)


def test_host_tensors_and_objects_are_not_frozen_into_a_template() -> None:
    """A host tensor read from outside (changed in place or rebound between calls) and
    an object argument (its attributes changed) are seen at every call: such calls
    run op by op (a template froze the first call's values: a probe's find); an
    unhashable argument (a slice, on Python 3.11) is no internal error."""
    table = torch.tensor([10.0, 20.0, 30.0])

    @torch_mncore.assume_pure
    def reads_host(x: torch.Tensor) -> torch.Tensor:
        return x * table

    class Config:
        scale = 2.0

    @torch_mncore.assume_pure
    def scaled(x: torch.Tensor, config: Config) -> torch.Tensor:
        return x * config.scale

    @torch_mncore.assume_pure
    def sliced(x: torch.Tensor, where: slice) -> torch.Tensor:
        return x[where] * 2

    x, config = torch.tensor([1.0, 2.0, 3.0]), Config()
    first, scale_2 = reads_host(x.mncore()), scaled(x.mncore(), config)
    table.add_(1)
    config.scale = 5.0
    second, scale_5 = reads_host(x.mncore()), scaled(x.mncore(), config)
    table = torch.tensor([100.0, 100.0, 100.0])
    third, part = reads_host(x.mncore()), sliced(x.mncore(), slice(0, 2))
    torch_mncore.sync()
    torch.testing.assert_close(first.cpu(), x * torch.tensor([10.0, 20.0, 30.0]))
    torch.testing.assert_close(second.cpu(), x * torch.tensor([11.0, 21.0, 31.0]))
    torch.testing.assert_close(third.cpu(), x * 100)
    torch.testing.assert_close(scale_2.cpu(), x * 2)
    torch.testing.assert_close(scale_5.cpu(), x * 5)
    torch.testing.assert_close(part.cpu(), x[:2] * 2)
    counters = torch_mncore.counters()
    for name in ("reads_host", "scaled", "sliced"):
        assert any(k.startswith("NotPure::") and name in k for k in counters), counters
