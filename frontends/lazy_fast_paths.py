"""torch.nn's inference fast paths as the ops of their slow paths, so that the lazy
tracer records them on the device: ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer`` in eval mode without gradients call fused kernels
(``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``) for any device
they allow, this one included, which had no kernel here and ran on the host (each
layer cut the step). Checked against eager in ``tests/test_lazy_fast_paths.py``."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def _additive(mask: Tensor | None, mask_type: int | None, batch: int, sources: int
              ) -> Tensor | None:
    """The merged mask as one added to the scores, ``(batch, heads, targets, sources)``
    broadcastable: type 1 a key padding mask ``(batch, sources)``, type 0 a mask of
    positions ``(targets, sources)``, type 2 already 4-D; ``True`` masks out."""
    if mask is None:
        return None
    if mask_type == 1:
        mask = mask.reshape(batch, 1, 1, sources)
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, device=mask.device).masked_fill(mask, -math.inf)
    return mask


def multi_head_attention(query: Tensor, key: Tensor, value: Tensor, embed_dim: int,
                         num_head: int, qkv_weight: Tensor, qkv_bias: Tensor,
                         proj_weight: Tensor, proj_bias: Tensor, mask: Tensor | None = None,
                         need_weights: bool = True, average_attn_weights: bool = True,
                         mask_type: int | None = None) -> tuple[Tensor, Tensor | None]:
    """``_native_multi_head_attention``: batch-first inputs, the packed input
    projection, scaled dot products with the additive mask, softmax, the output
    projection; the weights averaged over heads or per head when asked for."""
    batch, targets, _ = query.shape
    sources = key.shape[1]
    head = embed_dim // num_head
    w_q, w_k, w_v = qkv_weight.chunk(3)
    b_q, b_k, b_v = qkv_bias.chunk(3)

    def heads(x: Tensor, w: Tensor, b: Tensor, length: int) -> Tensor:
        return F.linear(x, w, b).reshape(batch, length, num_head, head).transpose(1, 2)

    q = heads(query, w_q, b_q, targets)
    k, v = heads(key, w_k, b_k, sources), heads(value, w_v, b_v, sources)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head)
    added = _additive(mask, mask_type, batch, sources)
    if added is not None:
        scores = scores + added
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(batch, targets, embed_dim)
    out = F.linear(out, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    return out, weights.mean(dim=1) if average_attn_weights else weights


def transformer_encoder_layer(src: Tensor, embed_dim: int, num_heads: int,
                              qkv_weight: Tensor, qkv_bias: Tensor, proj_weight: Tensor,
                              proj_bias: Tensor, use_gelu: bool, norm_first: bool,
                              eps: float, norm_weight_1: Tensor, norm_bias_1: Tensor,
                              norm_weight_2: Tensor, norm_bias_2: Tensor,
                              ffn_weight_1: Tensor, ffn_bias_1: Tensor,
                              ffn_weight_2: Tensor, ffn_bias_2: Tensor,
                              mask: Tensor | None = None, mask_type: int | None = None
                              ) -> Tensor:
    """``_transformer_encoder_layer_fwd``: self-attention and the feed-forward block,
    each added to its input, with layer norms before (``norm_first``) or after."""
    def attention(x: Tensor) -> Tensor:
        return multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias,
                                    proj_weight, proj_bias, mask, False, True, mask_type)[0]

    def feed_forward(x: Tensor) -> Tensor:
        hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
        return F.linear(F.gelu(hidden) if use_gelu else F.relu(hidden), ffn_weight_2,
                        ffn_bias_2)

    def norm(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
        return F.layer_norm(x, (embed_dim,), weight, bias, eps)

    if norm_first:
        x = src + attention(norm(src, norm_weight_1, norm_bias_1))
        return x + feed_forward(norm(x, norm_weight_2, norm_bias_2))
    x = norm(src + attention(src), norm_weight_1, norm_bias_1)
    return norm(x + feed_forward(x), norm_weight_2, norm_bias_2)


FAST_PATHS = {
    torch.ops.aten._native_multi_head_attention.default: multi_head_attention,
    torch.ops.aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer,
}
