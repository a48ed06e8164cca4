"""Decompositions torch lacks: the fused RNN cells. ``nn.LSTM``/``nn.GRU`` on a device
other than the CPU call ``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell`` (and autograd
their backward ops), which only CUDA implements; here they are the cells' pointwise math,
so they trace and compile like any other ops. Each forward returns a workspace of the
activated gates that its backward (autograd saves it) reads back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

aten = torch.ops.aten


def _with_bias(gates: Tensor, bias: Tensor | None) -> Tensor:
    return gates if bias is None else gates + bias


def fused_lstm_cell(input_gates: Tensor, hidden_gates: Tensor, cx: Tensor,
                    input_bias: Tensor | None = None, hidden_bias: Tensor | None = None
                    ) -> tuple[Tensor, Tensor, Tensor]:
    """(hy, cy, workspace): gates i, f, g, o; workspace holds them activated."""
    gates = _with_bias(_with_bias(input_gates + hidden_gates, input_bias), hidden_bias)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def fused_lstm_cell_backward(grad_hy: Tensor | None, grad_cy: Tensor | None, cx: Tensor,
                             cy: Tensor, workspace: Tensor, has_bias: bool
                             ) -> tuple[Tensor, Tensor, Tensor | None]:
    """(grad_gates, grad_cx, grad_bias) of :func:`fused_lstm_cell`."""
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    grad_c = torch.zeros_like(cy) if grad_cy is None else grad_cy
    grad_o = torch.zeros_like(cy)
    if grad_hy is not None:
        grad_c = grad_c + grad_hy * o * (1 - tanh_cy * tanh_cy)
        grad_o = grad_hy * tanh_cy * o * (1 - o)
    grad_gates = torch.cat([grad_c * g * i * (1 - i), grad_c * cx * f * (1 - f),
                            grad_c * i * (1 - g * g), grad_o], 1)
    return grad_gates, grad_c * f, grad_gates.sum(0) if has_bias else None


def fused_gru_cell(input_gates: Tensor, hidden_gates: Tensor, hx: Tensor,
                   input_bias: Tensor | None = None, hidden_bias: Tensor | None = None
                   ) -> tuple[Tensor, Tensor]:
    """(hy, workspace): gates r, z, n; workspace holds r, z, n, hx and the hidden n."""
    ir, iz, i_n = _with_bias(input_gates, input_bias).chunk(3, 1)
    hr, hz, h_n = _with_bias(hidden_gates, hidden_bias).chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, h_n], 1)


def fused_gru_cell_backward(grad_hy: Tensor, workspace: Tensor, has_bias: bool
                            ) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None]:
    """(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias,
    grad_hidden_bias) of :func:`fused_gru_cell`."""
    r, z, n, hx, h_n = workspace.chunk(5, 1)
    grad_z = grad_hy * (hx - n) * z * (1 - z)
    grad_n = grad_hy * (1 - z) * (1 - n * n)
    grad_r = grad_n * h_n * r * (1 - r)
    grad_input = torch.cat([grad_r, grad_z, grad_n], 1)
    grad_hidden = torch.cat([grad_r, grad_z, grad_n * r], 1)
    if not has_bias:
        return grad_input, grad_hidden, grad_hy * z, None, None
    return grad_input, grad_hidden, grad_hy * z, grad_input.sum(0), grad_hidden.sum(0)


RNN_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten._thnn_fused_lstm_cell.default: fused_lstm_cell,
    aten._thnn_fused_lstm_cell_backward_impl.default: fused_lstm_cell_backward,
    aten._thnn_fused_gru_cell.default: fused_gru_cell,
    aten._thnn_fused_gru_cell_backward.default: fused_gru_cell_backward,
}
