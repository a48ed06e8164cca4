"""Decompositions torch lacks: the resampling ops' backward kernels
(``upsample_nearest2d_backward`` and its kin, what autograd calls for ``nn.Upsample`` and
``F.interpolate``). Resampling is linear in its input, so its backward is the vector-
Jacobian product of torch's own decomposition of the forward (indexing and products),
which ``torch.func.vjp`` derives while the graph is traced: one definition, the
forward's, for both directions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import decomposition_table

aten = torch.ops.aten

#: The resampling ops: each has a forward decomposition in torch, none has a backward one.
RESAMPLING = tuple(getattr(aten, name).default for name in (
    "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
    "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
    "upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d",
    "upsample_trilinear3d"))


def _backward_of(forward: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``op_backward(grad_output, output_size, input_size, *rest)`` as the vjp of
    ``forward(input, output_size, *rest)``."""

    def backward(grad_output: torch.Tensor, output_size: Any, input_size: Any,
                 *rest: Any) -> torch.Tensor:
        zeros = grad_output.new_zeros(input_size)
        _, vjp = torch.func.vjp(lambda x: forward(x, output_size, *rest), zeros)
        return vjp(grad_output)[0]

    return backward


RESAMPLING_DECOMPOSITIONS = {
    getattr(aten, op.__name__.split(".")[0] + "_backward").default:
        _backward_of(decomposition_table[op]) for op in RESAMPLING}
