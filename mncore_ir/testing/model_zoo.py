"""The reference models and training steps the tests, benchmarks and demo share.

Each training step is a plain function ``step(params, state, batch) -> loss`` that
mutates ``params`` and ``state`` in place, the way eager PyTorch code does. The
optimizer updates are written out (not ``torch.optim``) so that every scalar that
changes between steps, such as Adam's step count, is a tensor input of the graph;
``tests/test_models.py`` checks them against ``torch.optim`` in eager mode.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

Tensors = dict[str, torch.Tensor]


class MLP(nn.Module):
    """Linear → ReLU stacks ending in logits."""

    def __init__(self, sizes: tuple[int, ...] = (16, 32, 32, 10)) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Linear(a, b) for a, b in itertools.pairwise(sizes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


class Block(nn.Module):
    """A GPT-2 block: pre-norm causal self-attention and a GELU MLP, with residuals."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token and position embeddings, blocks, final norm and a tied LM head."""

    def __init__(
        self, vocab: int = 64, ctx: int = 16, dim: int = 32, heads: int = 4, layers: int = 2
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        for emb in (self.tok, self.pos):
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for block in self.blocks:
            x = block(x)
        return self.ln(x) @ self.tok.weight.t()


class CNN(nn.Module):
    """conv → batch norm → ReLU → max-pool, twice, then adaptive average pool and linear."""

    def __init__(self, channels: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def sgd_update(
    params: Tensors, grads: Tensors, state: Tensors, lr: float, momentum: float
) -> None:
    """``torch.optim.SGD(momentum=m)`` after its first step: buf = m·buf + g."""
    for name, p in params.items():
        buf = state[f"momentum.{name}"]
        buf.mul_(momentum).add_(grads[name])
        p.sub_(lr * buf)


def adam_update(
    params: Tensors,
    grads: Tensors,
    state: Tensors,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 0.0,
) -> None:
    """``torch.optim.Adam`` (``weight_decay=0``) or ``AdamW`` (decoupled decay)."""
    b1, b2 = betas
    step = state["step"]
    step.add_(1)
    bias1 = 1 - torch.pow(b1, step)
    bias2 = 1 - torch.pow(b2, step)
    for name, p in params.items():
        m, v, g = state[f"exp_avg.{name}"], state[f"exp_avg_sq.{name}"], grads[name]
        if weight_decay:
            p.mul_(1 - lr * weight_decay)
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / bias2.sqrt()).add_(eps)
        p.sub_(lr * (m / bias1) / denom)


@dataclass
class TrainingStep:
    """A model, its loss, its optimizer update and an example batch, ready to capture."""

    name: str
    model: nn.Module
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    update: Callable[[Tensors, Tensors, Tensors], None]
    batch: tuple[torch.Tensor, torch.Tensor]
    state: Tensors

    def params(self) -> Tensors:
        return {k: v.detach().clone() for k, v in self.model.named_parameters()}

    def buffers(self) -> Tensors:
        return {k: v.detach().clone() for k, v in self.model.named_buffers()}

    def __call__(self, params: Tensors, buffers: Tensors, state: Tensors,
                 inputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One step: forward, backward, update; mutates ``params``, ``buffers``, ``state``."""
        with torch.enable_grad():
            leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
            out = functional_call(self.model, {**leaves, **buffers}, (inputs,))
            loss = self.loss(out, target)
            grads = torch.autograd.grad(loss, list(leaves.values()))
        with torch.no_grad():
            self.update(params, dict(zip(params, grads, strict=True)), state)
        return loss.detach()

    def example_inputs(self) -> tuple[Tensors, Tensors, Tensors, torch.Tensor, torch.Tensor]:
        """Fresh copies of everything the step reads, in ``__call__``'s order."""
        state = {k: v.clone() for k, v in self.state.items()}
        return (self.params(), self.buffers(), state, *self.batch)


def _zeros_like(params: Tensors, prefixes: tuple[str, ...]) -> Tensors:
    return {f"{p}.{k}": torch.zeros_like(v) for p in prefixes for k, v in params.items()}


def _adam_state(model: nn.Module, generator: torch.Generator) -> Tensors:
    """Adam state as if from the middle of training: step 10, non-zero moments.

    (At step 1 Adam divides each gradient by its own magnitude, which turns the
    rounding noise of mathematically-zero gradients, such as the attention key bias's,
    into full-size updates that no two implementations agree on.)
    """
    params = dict(model.named_parameters())
    state = {"step": torch.tensor(10.0)}
    for name, p in params.items():
        state[f"exp_avg.{name}"] = torch.randn(p.shape, generator=generator) * 1e-3
        state[f"exp_avg_sq.{name}"] = torch.rand(p.shape, generator=generator) * 1e-5
    return state


def mlp_sgd(batch: int = 8, seed: int = 0) -> TrainingStep:
    """(a) MLP with ReLU and cross-entropy, SGD with momentum 0.9."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = MLP()
    state = {k: torch.randn(v.shape, generator=g) * 0.01
             for k, v in _zeros_like(dict(model.named_parameters()), ("momentum",)).items()}
    x = torch.randn(batch, 16, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    return TrainingStep("mlp_sgd", model, F.cross_entropy,
                        lambda p, gr, s: sgd_update(p, gr, s, lr=0.1, momentum=0.9),
                        (x, y), state)


def mlp_adam(batch: int = 8, seed: int = 0) -> TrainingStep:
    """(a) MLP with ReLU and cross-entropy, Adam."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = MLP()
    x = torch.randn(batch, 16, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    return TrainingStep("mlp_adam", model, F.cross_entropy,
                        lambda p, gr, s: adam_update(p, gr, s, lr=1e-3),
                        (x, y), _adam_state(model, g))


def gpt_adamw(batch: int = 2, layers: int = 2, seed: int = 0) -> TrainingStep:
    """(b) GPT-2-style transformer with AdamW."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = GPT(layers=layers)
    idx = torch.randint(0, 64, (batch, 16), generator=g)
    target = torch.randint(0, 64, (batch, 16), generator=g)

    def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    return TrainingStep("gpt_adamw", model, loss,
                        lambda p, gr, s: adam_update(p, gr, s, lr=1e-3, weight_decay=0.01),
                        (idx, target), _adam_state(model, g))


def cnn_sgd(batch: int = 4, seed: int = 0, size: int = 16) -> TrainingStep:
    """(c) small CNN with batch norm in training mode, SGD with momentum, on
    ``size`` x ``size`` images."""
    return _classifier_sgd("cnn_sgd", CNN, batch, seed, size, lr=0.05)


def resnet18_sgd(batch: int = 2, seed: int = 0, size: int = 32) -> TrainingStep:
    """torchvision's ``resnet18`` (10 classes, batch norm in training mode), SGD with
    momentum, on ``size`` x ``size`` images."""
    from mncore_ir.testing.torchvision_models import models

    return _classifier_sgd("resnet18_sgd", lambda: models.resnet18(num_classes=10), batch,
                           seed, size, lr=0.002)


def _classifier_sgd(name: str, make: Callable[[], nn.Module], batch: int, seed: int,
                    size: int, lr: float) -> TrainingStep:
    """An image classifier of 10 classes in training mode (made after seeding torch),
    SGD with momentum 0.9 on a batch of RGB ``size`` x ``size`` images."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = make().train()
    state = _zeros_like(dict(model.named_parameters()), ("momentum",))
    x = torch.randn(batch, 3, size, size, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    return TrainingStep(name, model, F.cross_entropy,
                        lambda p, gr, s: sgd_update(p, gr, s, lr=lr, momentum=0.9),
                        (x, y), state)


TRAINING_STEPS: dict[str, Callable[[], TrainingStep]] = {
    "mlp_sgd": mlp_sgd,
    "mlp_adam": mlp_adam,
    "gpt_adamw": gpt_adamw,
    "cnn_sgd": cnn_sgd,
}
