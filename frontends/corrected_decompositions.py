"""Decompositions of torch's that compute something other than the op, corrected: the
lazy path and capture use these in their place. Each is checked against eager in
``tests/test_corrected_decompositions.py``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor
from torch._C import DispatchKey

aten = torch.ops.aten


def multilabel_margin_loss_forward(input: Tensor, target: Tensor, reduction: int
                                   ) -> tuple[Tensor, Tensor]:
    """torch's decomposition, with the target slots after a row's first ``-1`` left
    out of the loss: torch's counted each as a target of class 0 (its docs' own example
    gave 0.85 as 1.7)."""
    shape = input.shape
    input, target = torch.atleast_2d(input), torch.atleast_2d(target)
    dim = input.shape[1]
    torch._check(len(shape) <= 2 and dim != 0, lambda: (
        f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
        f"{shape}"))
    torch._check(target.shape == input.shape, lambda: (
        f"inconsistent target size: {target.shape} for input of size: {shape}"))
    idx = torch.arange(dim, device=target.device)
    end = torch.amin(torch.where(target == -1, idx, dim), dim=-1, keepdim=True)
    valid = idx < end  # (N, slots): the slots before the first -1
    u = torch.gather(input, -1, torch.where(valid, target, 0))
    is_target = torch.any(idx == torch.where(valid, target, -1).unsqueeze(-1), dim=1)
    z = 1.0 - u.T.unsqueeze(-1) + input  # (slots, N, classes)
    z = torch.where(z > 0, z, 0) / dim  # no gradient at 0, as eager's kernel (clamp passes it)
    z = torch.where(valid.T.unsqueeze(-1) & ~is_target, z, 0)
    per_sample = z.sum(dim=(0, -1))
    loss = per_sample.mean() if reduction == 1 else per_sample.sum() if reduction == 2 \
        else per_sample
    if len(shape) < 2 and reduction == 0:
        loss = loss.reshape(())
    return loss, is_target.to(input.dtype).reshape(target.shape if len(shape) == 2 else shape)


CORRECTED: dict[Any, Any] = {
    aten.multilabel_margin_loss_forward.default: multilabel_margin_loss_forward,
}


@contextlib.contextmanager
def corrected_kernels() -> Iterator[None]:
    """While ``torch.compile`` traces for the device: torch applies its own wrong
    decompositions above the dispatcher (a Python kernel at the Autograd key), before
    any decomposition table; these put the corrected ones there, and take them back."""
    saved = {op: op.py_kernels[DispatchKey.Autograd] for op in CORRECTED
             if DispatchKey.Autograd in op.py_kernels}
    try:
        for op in saved:
            op.py_kernels[DispatchKey.Autograd] = CORRECTED[op]
            op._dispatch_cache.clear()
        yield
    finally:
        for op, kernel in saved.items():
            op.py_kernels[DispatchKey.Autograd] = kernel
            op._dispatch_cache.clear()
