"""Models written with torch.nn's own layers, unmodified, train on every device as in
eager (3 steps of SGD with momentum: losses, parameters and buffers): a causal
``nn.TransformerEncoder`` (its mask check runs ``any`` after decomposition),
``F.scaled_dot_product_attention(is_causal=True)``, an ``nn.LSTM`` and a two-layer
``nn.GRU`` language model (their fused cells, which only CUDA implements, are decomposed),
and tied input/output embeddings. Small sizes: the mncore device simulates each cycle."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore
from tests.test_lazy import Batches, compare

VOCAB, WIDTH = 11, 16


class CausalEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 2, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1],
                                                              device=tokens.device)
        return self.head(self.encoder(self.embed(tokens), mask=mask, is_causal=True))


class SdpaLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 2, WIDTH // 2).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.head(att.transpose(1, 2).reshape(b, t, WIDTH))


class RecurrentLM(nn.Module):
    def __init__(self, cell: type[nn.RNNBase], layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 8)
        self.rnn = cell(8, WIDTH, num_layers=layers, batch_first=True)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(tokens))[0])


class TiedEmbeddings(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.hidden = nn.Linear(WIDTH, WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.hidden(self.embed(tokens))))


MODELS: dict[str, Callable[[], nn.Module]] = {
    "causal-transformer-encoder": CausalEncoder,
    "sdpa": SdpaLM,
    "lstm": lambda: RecurrentLM(nn.LSTM, 1),
    "gru": lambda: RecurrentLM(nn.GRU, 2),
    "tied-embeddings": TiedEmbeddings,
}


DEVICES = ["cpu", "interp", "task", "triton", "mncore"]
#: Compiling these for the Triton interpreter and the MN-Core simulator takes 15-45 s
#: each: ``make slow`` runs them, ``make test`` the rest.
SLOW = {("triton", "causal-transformer-encoder"), ("triton", "lstm"), ("triton", "gru"),
        ("mncore", "causal-transformer-encoder"), ("mncore", "lstm"), ("mncore", "gru")}
CASES = [pytest.param(d, n, marks=pytest.mark.slow) if (d, n) in SLOW else (d, n)
         for d in DEVICES for n in MODELS]


def next_token_batches(steps: int = 3) -> Batches:
    g = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(steps):
        tokens = torch.randint(0, VOCAB, (2, 6), generator=g)
        batches.append((tokens[:, :-1], tokens[:, 1:]))
    return batches


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


@pytest.mark.parametrize("device, name", CASES)
def test_torch_nn_model_trains_as_in_eager(device: str, name: str) -> None:
    torch_mncore.init(device, implicit_sync="error")
    try:
        torch.manual_seed(0)
        compare(MODELS[name](), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                next_token_batches(), next_token_loss)
        host = {k: v for k, v in torch_mncore.counters().items()
                if k.startswith("CpuFallback")}
    finally:
        torch_mncore.init("cpu")
    assert host == {}, host  # every op of these models compiles, on every device


@pytest.mark.parametrize("device", ["cpu", "mncore"])
def test_nearest_upsampling_trains_on_the_device(device: str) -> None:
    """``nn.Upsample(mode="nearest")`` between convolutions: its indices are floats
    truncated to integers, then clamped (exact on the MN-Core machine, whose words are
    floats: the whole step compiled there, none of it on the host, as eager)."""
    torch_mncore.init(device, implicit_sync="error")
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(2, 2, 3, padding=1), nn.Upsample(scale_factor=2),
                              nn.Conv2d(2, 3, 3))
        g = torch.Generator().manual_seed(1)
        batches = [(torch.randn(1, 2, 4, 4, generator=g), torch.randn(1, 3, 6, 6, generator=g))
                   for _ in range(3)]
        compare(model, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), batches,
                F.mse_loss)
        host = {k: v for k, v in torch_mncore.counters().items()
                if k.startswith("CpuFallback")}
    finally:
        torch_mncore.init("cpu")
    assert host == {}, host
