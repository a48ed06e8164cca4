"""torch's decompositions that compute something other than their op, corrected
(``frontends/corrected_decompositions.py``): the lazy devices against eager, forward
and backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from tests.conftest import run_on_device

#: rows padded with -1 after their labels (torch's docs' example, and a row whose
#: padding is followed by labels that must not count), and a row without padding
TARGET = torch.tensor([[3, 0, -1, 1], [2, -1, 0, 0], [1, 2, 3, 0]])


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss_ignores_labels_after_the_padding(device: str,
                                                                 reduction: str) -> None:
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)

    def loss_and_grad(x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = x.detach().requires_grad_()
        loss = F.multilabel_margin_loss(x, target, reduction=reduction)
        (grad,) = torch.autograd.grad(loss.sum(), x)
        return loss.detach(), grad

    expected = loss_and_grad(x, TARGET)
    got, _ = run_on_device(device, loss_and_grad, x.detach(), TARGET)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)


def test_multilabel_margin_loss_of_one_sample() -> None:
    x, target = torch.tensor([0.1, 0.2, 0.4, 0.8]), torch.tensor([3, 0, -1, 1])
    (got,), host = run_on_device("cpu", lambda x, t: F.multilabel_margin_loss(x, t), x, target)
    assert not host
    torch.testing.assert_close(got, F.multilabel_margin_loss(x, target))


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_multilabel_margin_loss_under_torch_compile(reduction: str) -> None:
    """torch applies its own decomposition above the dispatcher while Dynamo traces:
    the backend puts the corrected one there for its tracing. A margin of exactly 0
    (row 2, class 3) passes no gradient, as in eager's kernel."""
    import torch._dynamo

    torch_mncore.init("cpu")
    torch._dynamo.reset()
    x = torch.tensor([[0.1, 0.2, 0.4, 0.8], [0.3, -0.5, 1.0, 0.0]], requires_grad=True)
    target = torch.tensor([[3, 0, -1, 1], [2, -1, 0, 0]])

    def loss(x: torch.Tensor) -> torch.Tensor:
        return F.multilabel_margin_loss(x, target, reduction=reduction).sum()

    got = torch.compile(loss, backend="mncore")(x)
    (got_grad,) = torch.autograd.grad(got, x)
    expected = loss(x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(got_grad, expected_grad)
    assert torch.ops.aten.multilabel_margin_loss_forward.default.py_kernels[
        torch._C.DispatchKey.Autograd].__module__ == "torch._decomp.decompositions"
