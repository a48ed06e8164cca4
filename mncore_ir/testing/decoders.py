"""Decoder-only language models with a static-shape KV cache, for token-by-token decoding.

A decode step reads one token per sequence and the position it stands at (a 0-d integer
tensor), writes that position's keys and values into caches preallocated at the full
context length (``index_copy_``), and attends over the whole cache with the positions
past ``pos`` masked out. Every shape is fixed, so every token runs the same graph: the
position and the caches are the step's inputs, never constants baked into it.

Two styles: ``gpt2`` (learned positions, LayerNorm, GELU MLP, tied LM head) and
``llama`` (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU, untied head).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

#: Initial scales of the token and (GPT-2) position embeddings: large enough that
#: greedy decoding of random weights wanders over the vocabulary instead of repeating
#: one token, with a clear margin between the two best logits at each step (so that
#: every device must choose the same token).
TOKEN_STD = 0.2
POSITION_STD = 1.0


@dataclass(frozen=True)
class DecoderConfig:
    """A decoder's sizes. ``context`` is the cache length: the longest sequence it can
    decode. ``kv_heads`` < ``heads`` is grouped-query attention."""

    style: str = "gpt2"
    vocab: int = 64
    context: int = 48
    dim: int = 32
    heads: int = 4
    kv_heads: int = 4
    layers: int = 2
    hidden: int = 128
    batch: int = 1

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def __post_init__(self) -> None:
        if self.style not in ("gpt2", "llama"):
            raise ValueError(f"unknown decoder style {self.style!r}: gpt2 or llama")
        if self.dim % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"{self}: heads must divide dim and kv_heads divide heads")


#: Named configurations: tiny ones for tests on every device, full-size ones for the
#: timing model (GPT-2 small's shapes; a Llama-style config of similar size).
CONFIGS: dict[str, DecoderConfig] = {
    "gpt2-tiny": DecoderConfig("gpt2", vocab=64, context=48, dim=32, heads=4, kv_heads=4,
                               layers=2, hidden=128),
    "llama-tiny": DecoderConfig("llama", vocab=64, context=48, dim=32, heads=4,
                                kv_heads=2, layers=2, hidden=96),
    "gpt2-mncore": DecoderConfig("gpt2", vocab=16, context=8, dim=16, heads=2,
                                 kv_heads=2, layers=1, hidden=32),
    "llama-mncore": DecoderConfig("llama", vocab=16, context=8, dim=16, heads=2,
                                  kv_heads=1, layers=1, hidden=32),
    "gpt2-small": DecoderConfig("gpt2", vocab=50257, context=1024, dim=768, heads=12,
                                kv_heads=12, layers=12, hidden=3072),
    "llama-small": DecoderConfig("llama", vocab=32000, context=1024, dim=768, heads=12,
                                 kv_heads=4, layers=12, hidden=2048),
}


def config(name: str, **changes: int) -> DecoderConfig:
    """The named configuration, with ``changes`` (e.g. ``batch=8``) applied."""
    if name not in CONFIGS:
        raise ValueError(f"unknown decoder config {name!r}; configs: {', '.join(CONFIGS)}")
    return replace(CONFIGS[name], **changes)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, halves convention (as Llama's Hugging Face port)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class CachedAttention(nn.Module):
    """Causal self-attention for one new position per sequence over a static KV cache.

    The caches are laid out position-first, ``(context, batch, kv_heads, head_dim)``,
    so a step writes one contiguous row; the matmuls read them through permutes. The
    query heads that share a K/V head are the rows of one matmul (grouped-query
    attention without repeating the cache)."""

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        bias = cfg.style == "gpt2"
        hd = cfg.head_dim
        self.q = nn.Linear(cfg.dim, cfg.heads * hd, bias=bias)
        self.k = nn.Linear(cfg.dim, cfg.kv_heads * hd, bias=bias)
        self.v = nn.Linear(cfg.dim, cfg.kv_heads * hd, bias=bias)
        self.o = nn.Linear(cfg.heads * hd, cfg.dim, bias=bias)
        shape = (cfg.context, cfg.batch, cfg.kv_heads, hd)
        self.register_buffer("cache_k", torch.zeros(shape), persistent=False)
        self.register_buffer("cache_v", torch.zeros(shape), persistent=False)

    def forward(self, x: torch.Tensor, pos: torch.Tensor,
                rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        cfg, hd = self.cfg, self.cfg.head_dim
        b, group = x.shape[0], cfg.heads // cfg.kv_heads
        q = self.q(x).view(b, cfg.kv_heads, group, hd)  # head h = kv head h // group
        k = self.k(x).view(1, b, cfg.kv_heads, hd)
        v = self.v(x).view(1, b, cfg.kv_heads, hd)
        if rope is not None:
            q, k = rotate(q, *rope), rotate(k, *rope)
        at = pos.view(1)
        self.cache_k.index_copy_(0, at, k)
        self.cache_v.index_copy_(0, at, v)
        keys = self.cache_k.permute(1, 2, 3, 0)  # (b, kv_heads, hd, context)
        values = self.cache_v.permute(1, 2, 0, 3)  # (b, kv_heads, context, hd)
        scores = (q @ keys) * (1.0 / math.sqrt(hd))
        valid = torch.arange(cfg.context, device=x.device) <= pos
        weights = scores.masked_fill(~valid, float("-inf")).softmax(dim=-1)
        return self.o((weights @ values).reshape(b, 1, cfg.heads * hd))


class DecoderBlock(nn.Module):
    """Pre-norm attention and MLP with residuals: GPT-2's (LayerNorm, GELU) or Llama's
    (RMSNorm, SwiGLU)."""

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        llama = cfg.style == "llama"
        norm: Callable[[int], nn.Module] = nn.RMSNorm if llama else nn.LayerNorm
        self.llama = llama
        self.norm1, self.norm2 = norm(cfg.dim), norm(cfg.dim)
        self.attn = CachedAttention(cfg)
        self.up = nn.Linear(cfg.dim, cfg.hidden, bias=not llama)
        self.down = nn.Linear(cfg.hidden, cfg.dim, bias=not llama)
        if llama:
            self.gate = nn.Linear(cfg.dim, cfg.hidden, bias=False)

    def forward(self, x: torch.Tensor, pos: torch.Tensor,
                rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), pos, rope)
        h = self.norm2(x)
        if self.llama:
            return x + self.down(F.silu(self.gate(h)) * self.up(h))
        return x + self.down(F.gelu(self.up(h), approximate="tanh"))


class Decoder(nn.Module):
    """``model(tokens, pos) -> logits``: tokens ``(batch, 1)``, pos a 0-d integer tensor
    (the same for every sequence), logits ``(batch, vocab)``. Writes the caches."""

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.dim)
        nn.init.normal_(self.tok.weight, std=TOKEN_STD)
        if cfg.style == "gpt2":
            self.pos = nn.Embedding(cfg.context, cfg.dim)
            nn.init.normal_(self.pos.weight, std=POSITION_STD)
            self.norm: nn.Module = nn.LayerNorm(cfg.dim)
        else:
            self.norm = nn.RMSNorm(cfg.dim)
            self.head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
            half = cfg.head_dim // 2
            freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
            angle = torch.arange(cfg.context, dtype=torch.float64)[:, None] * freq
            self.register_buffer("rope_cos", angle.cos().float(), persistent=False)
            self.register_buffer("rope_sin", angle.sin().float(), persistent=False)
        self.blocks = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.layers))

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        at = pos.view(1)
        x = self.tok(tokens)
        rope = None
        if self.cfg.style == "gpt2":
            x = x + self.pos(at)
        else:
            rope = (self.rope_cos.index_select(0, at), self.rope_sin.index_select(0, at))
        for block in self.blocks:
            x = block(x, pos, rope)
        h = self.norm(x)[:, 0]
        return h @ self.tok.weight.t() if self.cfg.style == "gpt2" else self.head(h)

    def reset_cache(self) -> None:
        """Zero every KV cache, in place (a new generation)."""
        for block in self.blocks:
            block.attn.cache_k.zero_()
            block.attn.cache_v.zero_()


def decoder(name: str, seed: int = 0, **changes: int) -> Decoder:
    """The named decoder, with weights drawn from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return Decoder(config(name, **changes)).eval()


def prompt_tokens(cfg: DecoderConfig, length: int = 4, seed: int = 0) -> torch.Tensor:
    """A ``(batch, length)`` prompt of random token ids."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, cfg.vocab, (cfg.batch, length), generator=g)


def greedy_steps(model: Decoder, prompt: torch.Tensor, new_tokens: int,
                 device: torch.device | str = "cpu") -> Iterator[torch.Tensor]:
    """Greedy decoding, one step per position: feeds the prompt (kept on the host) a
    token at a time, then each step's argmax; yields after every step the token chosen
    there, on ``device``. Every step traces the same ops (the argmax too, during the
    prompt), and the position is a device tensor advanced in place, never a constant:
    so every step runs one compiled graph."""
    cfg = model.cfg
    length = prompt.shape[1]
    if length + new_tokens > cfg.context:
        raise ValueError(f"{length} prompt + {new_tokens} new tokens exceed the cache "
                         f"length {cfg.context}")
    pos = torch.zeros((), dtype=torch.long).to(device)
    token = prompt[:, :1].to(device)
    for step in range(length + new_tokens - 1):
        with torch.no_grad():
            chosen = model(token, pos).argmax(dim=-1, keepdim=True)
            pos.add_(1)
        yield chosen
        token = prompt[:, step + 1:step + 2].to(device) if step + 1 < length else chosen


def greedy_decode(model: Decoder, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Eager greedy decoding on the host: the ``(batch, new_tokens)`` tokens chosen."""
    model.reset_cache()
    chosen = list(greedy_steps(model, prompt, new_tokens))
    return torch.cat(chosen[prompt.shape[1] - 1:], dim=1)


def decode_step(model: Decoder) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """The model's decode step as a function of its tensors, for capture (FX):
    ``step(weights, caches, token, pos) -> (chosen, logits)``, writing ``caches`` and
    advancing ``pos`` in place, as the lazy runtime's step does."""

    def step(weights: dict[str, torch.Tensor], caches: dict[str, torch.Tensor],
             token: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            logits = functional_call(model, {**weights, **caches}, (token, pos))
            pos.add_(1)
        return logits.argmax(dim=-1, keepdim=True), logits

    return step


def step_inputs(model: Decoder) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor],
                                          torch.Tensor, torch.Tensor]:
    """Fresh example inputs of :func:`decode_step`: weights, zeroed caches, the first
    token of a prompt and position 0."""
    tensors = {k: v.detach().clone() for k, v in [*model.named_parameters(),
                                                  *model.named_buffers()]}
    caches = {k: torch.zeros_like(v) for k, v in tensors.items() if ".cache_" in k}
    weights = {k: v for k, v in tensors.items() if k not in caches}
    token = prompt_tokens(model.cfg, 1)
    return weights, caches, token, torch.zeros((), dtype=torch.long)


def decode_carry(input_names: list[str], output_names: list[str]) -> tuple[int, ...]:
    """For ``graph-unroll-steps``: per input of a captured :func:`decode_step`, the
    output feeding it at the next step (the chosen token, the new caches and position),
    or -1 (the weights)."""
    return tuple(0 if name == "token" else output_names.index(f"new.{name}")
                 if f"new.{name}" in output_names else -1 for name in input_names)
