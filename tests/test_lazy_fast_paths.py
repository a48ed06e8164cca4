"""torch.nn's inference fast paths on the device (``frontends/lazy_fast_paths.py``):
``nn.TransformerEncoder`` and ``nn.MultiheadAttention`` in eval mode without gradients
call fused kernels, which ran on the host (each layer cut the step); they are now the
ops of their slow paths, traced, and equal eager with every kind of mask."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

import torch_mncore

PAD = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
CAUSAL = nn.Transformer.generate_square_subsequent_mask(5)
MASKS: dict[str, dict[str, torch.Tensor]] = {
    "none": {}, "padding": {"src_key_padding_mask": PAD}, "causal": {"mask": CAUSAL},
    "both": {"mask": CAUSAL, "src_key_padding_mask": PAD}}


def _on_device(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v.mncore() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}


def _no_host_ops() -> None:
    host = [k for k in torch_mncore.counters() if k.startswith("CpuFallback")]
    assert not host, host


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", sorted(MASKS))
def test_transformer_encoder_inference_is_traced(device: str, norm_first: bool,
                                                 activation: str, masks: str) -> None:
    torch_mncore.init(device)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=norm_first,
                                       activation=activation)
    eager = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    ours = copy.deepcopy(eager).mncore()
    x = torch.randn(3, 5, 16)
    torch_mncore.reset_metrics()
    with torch.no_grad():
        expected = eager(x, **MASKS[masks])
        got = ours(x.mncore(), **_on_device(MASKS[masks]))
        torch_mncore.sync()
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5)
    _no_host_ops()
    torch_mncore.init("cpu")


@pytest.mark.parametrize("kwargs", [
    {}, {"key_padding_mask": torch.tensor([[False] * 7, [False] * 5 + [True] * 2])},
    {"need_weights": False}, {"average_attn_weights": False},
    {"attn_mask": torch.zeros(5, 7, dtype=torch.bool).index_fill(1, torch.tensor([6]), True)},
    {"attn_mask": torch.randn(5, 7)},
], ids=["none", "padding", "no_weights", "per_head", "bool_mask", "float_mask"])
def test_multi_head_attention_inference_is_traced(kwargs: dict[str, Any]) -> None:
    torch_mncore.init("cpu")
    torch.manual_seed(0)
    eager = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    ours = copy.deepcopy(eager).mncore()
    query, key = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    torch_mncore.reset_metrics()
    with torch.no_grad():
        expected = eager(query, key, key, **kwargs)
        got = ours(query.mncore(), key.mncore(), key.mncore(), **_on_device(kwargs))
        torch_mncore.sync()
    torch.testing.assert_close(got[0].cpu(), expected[0], rtol=1e-5, atol=1e-5)
    if expected[1] is None:
        assert got[1] is None
    else:
        torch.testing.assert_close(got[1].cpu(), expected[1], rtol=1e-5, atol=1e-6)
    _no_host_ops()
