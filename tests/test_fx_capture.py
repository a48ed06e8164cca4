"""``capture`` (FX) of torch.nn layers whose ATen ops are core ATen without an importer
handler: ``nn.GroupNorm`` (``native_group_norm`` and its backward) and
``nn.InstanceNorm2d`` and ``Tensor.repeat`` (``repeat``) were refused by the importer;
torch's decompositions now run while capturing. Forward and gradients against eager,
through the graph interpreter and the mncore level (tiny)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mncore_ir.frontends.fx import capture
from tests.test_mncore_lowering import interpreted_and_simulated


def group_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.group_norm(x, 2, w, b, eps=1e-5)


def instance_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.instance_norm(x, weight=w, bias=b)


def repeated(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return x.repeat(2, 1, 1, 3) * w.repeat(2)[None, :4, None, None] + b[:, None, None]


LAYERS: dict[str, Callable[..., torch.Tensor]] = {
    "group_norm": group_norm, "instance_norm": instance_norm, "repeat": repeated}


def with_gradients(layer: Callable[..., torch.Tensor]) -> Callable[..., tuple[torch.Tensor, ...]]:
    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor,
           weights: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, w, b = (t.detach().requires_grad_() for t in (x, w, b))
        out = layer(x, w, b)
        grads = torch.autograd.grad((out * weights).sum(), (x, w, b))
        return (out.detach(), *grads)
    return fn


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_captured_layer_and_its_gradients_match_eager(name: str) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 3, 5, generator=g)
    w, b = torch.randn(4, generator=g), torch.randn(4, generator=g)
    out_shape = LAYERS[name](x, w, b).shape
    weights = torch.randn(out_shape, generator=g)  # each element weighed differently
    fn = with_gradients(LAYERS[name])
    expected = [t.numpy() for t in fn(x, w, b, weights)]
    interpreted, simulated, _ = interpreted_and_simulated(capture(fn, x, w, b, weights))
    for ours in (interpreted, simulated):
        assert len(ours) == len(expected)
        for got, want in zip(ours, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
