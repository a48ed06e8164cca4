"""The seed's MLP training loop, as the seed writes it: a GPU training loop ported to
the mncore device by three lines (marked "added"). Only the synthetic data loader is new.

    python examples/mlp_seed.py [--device cpu|interp|task|triton|mncore] [--steps 100]

(``mncore`` simulates every cycle of a 512-wide MLP: use a few steps, or
``examples/mlp_mncore.py``, a smaller MLP on the same device.)
"""

import argparse

import torch

import torch_mncore  # added


def synthetic_loader(steps, batch=64, features=512, classes=10, seed=0):
    """A learnable synthetic task: the label is the argmax of a fixed projection."""
    g = torch.Generator().manual_seed(seed)
    projection = torch.randn(features, classes, generator=g)
    for _ in range(steps):
        x = torch.randn(batch, features, generator=g)
        yield {"x": x, "y": (x @ projection).argmax(dim=1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu",
                        help="cpu (default), interp, task, triton or mncore")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    train_loader = synthetic_loader(args.steps)
    torch.manual_seed(0)

    torch_mncore.init(device=args.device)  # added (the seed's init_mncore() for mncore)

    model = torch.nn.Sequential(
        torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    losses = []
    for batch in train_loader:
        x, y = batch["x"].mncore(), batch["y"].mncore()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        torch_mncore.sync()  # added
        losses.append(loss.detach())  # read later: no sync inside the loop

    curve = [loss.item() for loss in losses]
    print(f"trained {len(curve)} steps on device {args.device!r}")
    for step in range(0, len(curve), max(1, len(curve) // 10)):
        bar = "#" * int(40 * curve[step] / max(curve))
        print(f"step {step:4d}  loss {curve[step]:.4f}  {bar}")
    print(f"step {len(curve) - 1:4d}  loss {curve[-1]:.4f}")
    print()
    print(torch_mncore.metrics_report())


if __name__ == "__main__":
    main()
