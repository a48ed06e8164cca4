"""Reads and writes at computed positions (frontends/aten_views.py) and a strided
slice_scatter through torch_mncore against eager on each device: unfold, as_strided
reads and writes, diagonal_scatter (offsets of both signs, dims swapped, dims apart),
masked_scatter (a full and a broadcast mask), nonzero_static (padded and cut short),
addbmm with alpha/beta, bilinear (torch's _trilinear), cdist (p = 1, 2, 3, inf), pdist
(p = 2, 0)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from conftest import run_on_device

import torch_mncore

torch.manual_seed(0)
X = torch.randn(4, 6)
MASK = torch.rand(4, 6) > 0.5
CUBE = torch.randn(3, 4, 5)
SOURCE = torch.arange(30.0).reshape(5, 6)


def _on(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return t.to(like.device)


def _d3(like: torch.Tensor) -> torch.Tensor:
    """A bilinear weight (2 outputs, 3 x 4 inputs)."""
    return torch.linspace(-1, 1, 24).reshape(2, 3, 4).to(like.device)


CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "unfold": lambda a: a.unfold(1, 3, 2),
    "unfold_dim0": lambda a: a.unfold(0, 2, 1),
    "as_strided": lambda a: torch.as_strided(a, (3, 2), (2, 3), 1),
    "as_strided_scatter": lambda a: torch.as_strided_scatter(
        a, _on(torch.ones(3, 2), a), (3, 2), (2, 3), 1),
    "diagonal_scatter": lambda a: torch.diagonal_scatter(a, _on(torch.arange(4.0), a), 1),
    "diagonal_scatter_below": lambda a: torch.diagonal_scatter(
        a, _on(torch.arange(3.0), a), -1),
    "diagonal_scatter_swapped": lambda a: torch.diagonal_scatter(
        a, _on(torch.arange(4.0), a), 0, 1, 0),
    "diagonal_scatter_apart": lambda a: torch.diagonal_scatter(
        _on(CUBE, a), _on(torch.arange(12.0).reshape(4, 3), a), 0, 0, 2),
    "slice_scatter_step": lambda a: torch.slice_scatter(a, a[:, :3] * 10, 1, 1, 6, 2),
    "masked_scatter": lambda a: a.masked_scatter(_on(MASK, a), _on(SOURCE, a)),
    "masked_scatter_row": lambda a: a.masked_scatter(_on(MASK[0], a), _on(SOURCE, a)),
    "nonzero_static": lambda a: torch.nonzero_static(a > 0, size=10),
    "nonzero_static_padded": lambda a: torch.nonzero_static(a > 0, size=30, fill_value=-7),
    "addbmm": lambda a: torch.addbmm(a[:4, :4], _on(CUBE[:2, :4, :3], a),
                                     _on(torch.ones(2, 3, 4), a), beta=0.5, alpha=2),
    "cdist": lambda a: torch.cdist(a, a[:3] + 1),
    "cdist_p1": lambda a: torch.cdist(a, a[:3] + 1, p=1),
    "cdist_p3": lambda a: torch.cdist(a, a[:3] + 1, p=3.0),
    "cdist_pinf": lambda a: torch.cdist(a, a[:3] + 1, p=float("inf")),
    "bilinear": lambda a: F.bilinear(a[:, :3], a[:, 2:], _d3(a), a[0, :2]),
    "pdist": lambda a: F.pdist(a),
    "pdist_p0": lambda a: F.pdist(a.round(), p=0),
}


@pytest.mark.parametrize("device", ["cpu", "interp", "task", "mncore"])
@pytest.mark.parametrize("case", CASES)
def test_matches_eager(case: str, device: str) -> None:
    fn = CASES[case]
    (got,), host = run_on_device(device, fn, X)
    want = fn(X)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    if device != "mncore":  # the tiny machine takes integer scans on the host
        assert not host, host


def test_as_strided_of_a_view() -> None:
    """A view's storage is not its lazy value: the runtime's view tracking takes
    as_strided of a view, and the importer refuses a non-contiguous input."""
    torch_mncore.init("cpu", implicit_sync="silent")
    try:
        got = torch.as_strided(X.mncore().t(), (2, 2), (1, 2)).cpu()
    finally:
        torch_mncore.init("cpu")
    torch.testing.assert_close(got, torch.as_strided(X.t(), (2, 2), (1, 2)))
