"""The seed's MLP training loop on the ``mncore`` device: every step (forward, backward,
SGD update) is one static program for an MN-Core-like machine, run by the cycle
simulator, and its losses follow eager PyTorch's.

    python examples/mlp_mncore.py [--steps 10] [--machine tiny|mncore2]
"""

import argparse
import copy
import os

import torch

import torch_mncore


def synthetic_loader(steps, batch=16, features=32, classes=10, seed=0):
    """A learnable synthetic task: the label is the argmax of a fixed projection."""
    g = torch.Generator().manual_seed(seed)
    projection = torch.randn(features, classes, generator=g)
    for _ in range(steps):
        x = torch.randn(batch, features, generator=g)
        yield {"x": x, "y": (x @ projection).argmax(dim=1)}


def train(model, steps, lazy):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for batch in synthetic_loader(steps):
        x, y = batch["x"], batch["y"]
        if lazy:
            x, y = x.mncore(), y.mncore()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if lazy:
            torch_mncore.sync()
        losses.append(loss.detach())
    return [loss.item() for loss in losses]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--machine", default="tiny", help="tiny (default) or mncore2")
    args = parser.parse_args()
    os.environ["MNCORE_MACHINE"] = args.machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    eager = train(copy.deepcopy(model), args.steps, lazy=False)

    torch_mncore.init_mncore()
    lazy = train(copy.deepcopy(model).mncore(), args.steps, lazy=True)

    print(f"{args.steps} SGD steps of a 32-64-10 MLP on the {args.machine!r} machine")
    print("step   mncore loss   eager loss   |difference|")
    for step, (ours, theirs) in enumerate(zip(lazy, eager, strict=True)):
        print(f"{step:4d}   {ours:11.6f}  {theirs:11.6f}   {abs(ours - theirs):.1e}")
    counts = torch_mncore.counters()
    runs = counts["MNCoreRuns"]
    print(f"simulated per step: {counts['MNCoreSteps'] // runs} steps, "
          f"{counts['MNCoreCycles'] // runs} cycles; "
          f"compiled {counts.get('UncachedCompile', 0)} program(s)")


if __name__ == "__main__":
    main()
