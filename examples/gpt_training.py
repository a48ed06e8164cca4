"""A GPT-2-style training loop (AdamW) on the mncore device: the GPU loop with `.cuda()`
changed to `.mncore()`, an init line and a sync per step. Data is synthetic.

    python examples/gpt_training.py [--device cpu|interp|task|triton] [--steps 50] [--layers 2]
"""

import argparse

import torch
import torch.nn.functional as F

import torch_mncore
from mncore_ir.testing.model_zoo import GPT


def synthetic_tokens(steps, batch=8, context=16, vocab=64, seed=0):
    """Sequences that count up modulo the vocabulary from a random start: learnable."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        start = torch.randint(0, vocab, (batch, 1), generator=g)
        seq = (start + torch.arange(context + 1)) % vocab
        yield seq[:, :-1], seq[:, 1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)

    torch_mncore.init(device=args.device)
    model = GPT(layers=args.layers).mncore()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    losses = []
    for idx, target in synthetic_tokens(args.steps):
        idx, target = idx.mncore(), target.mncore()
        logits = model(idx)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch_mncore.sync()
        losses.append(loss.detach())

    curve = [loss.item() for loss in losses]
    for step in range(0, len(curve), max(1, len(curve) // 10)):
        print(f"step {step:4d}  loss {curve[step]:.4f}")
    print(f"step {len(curve) - 1:4d}  loss {curve[-1]:.4f}")
    print(torch_mncore.metrics_report())


if __name__ == "__main__":
    main()
