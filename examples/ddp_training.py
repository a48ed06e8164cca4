"""An MLP (the seed's, with tanh) trained data-parallel: each torchrun rank on its own
mncore device, with its half of every global batch, gradients averaged by
torch.distributed (gloo here, NCCL where GPUs are). Losses and weights are checked
against single-process eager training on the full batch.

    torchrun --nproc-per-node 2 examples/ddp_training.py [--device cpu|interp|task|mncore]
        [--mode ddp|all_reduce|functional] [--steps 20]

Modes: ``ddp`` wraps the model in ``DistributedDataParallel``; ``all_reduce`` averages
each gradient with ``dist.all_reduce`` after ``backward`` (hand-written data
parallelism); ``functional`` writes the average with torch.distributed's functional
collectives, which the lazy runtime records into the step's graph.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import torch_mncore


def synthetic_batches(steps: int, batch: int, features: int, classes: int, seed: int = 0):
    """The seed's learnable task: the label is the argmax of a fixed projection."""
    g = torch.Generator().manual_seed(seed)
    projection = torch.randn(features, classes, generator=g)
    for _ in range(steps):
        x = torch.randn(batch, features, generator=g)
        yield x, (x @ projection).argmax(dim=1)


def make_model(features: int, hidden: int, classes: int) -> torch.nn.Module:
    """tanh, not ReLU: at a ReLU kink a rounding-level difference (a sum in another order)
    flips a unit's gradient on or off, and weights then differ by a whole update."""
    torch.manual_seed(0)  # every rank (and the reference) starts from the same weights
    return torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.Tanh(),
                               torch.nn.Linear(hidden, classes))


def train(args: argparse.Namespace, rank: int, world: int
          ) -> tuple[list[torch.Tensor], torch.nn.Module, float]:
    """This rank's part of data-parallel training on the device; the seconds per step
    after the first two (which compile)."""
    model = make_model(args.features, args.hidden, args.classes).mncore()
    trained = model
    if args.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses, ends = [], []
    share = args.batch // world
    for x, y in synthetic_batches(args.steps, args.batch, args.features, args.classes):
        x = x[rank * share:(rank + 1) * share].mncore()
        y = y[rank * share:(rank + 1) * share].mncore()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if args.mode == "all_reduce":
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
        elif args.mode == "functional":
            for p in model.parameters():
                p.grad = funcol.all_reduce(p.grad, "avg", dist.group.WORLD).wait()
        optimizer.step()
        # the mean of the ranks' losses is the full batch's loss
        losses.append(funcol.all_reduce(loss.detach(), "avg", dist.group.WORLD).wait())
        torch_mncore.sync()
        ends.append(time.perf_counter())
    torch_mncore.sync(wait=True)
    warm = ends[1] if len(ends) > 2 else ends[0] - 1e-9
    return losses, trained, (time.perf_counter() - warm) / max(len(ends) - 2, 1)


def reference(args: argparse.Namespace) -> tuple[list[float], torch.nn.Module]:
    """Single-process eager training on the full batches."""
    model = make_model(args.features, args.hidden, args.classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in synthetic_batches(args.steps, args.batch, args.features, args.classes):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--mode", default="ddp", choices=["ddp", "all_reduce", "functional"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="the global batch")
    parser.add_argument("--features", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--classes", type=int, default=10)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        parser.error(f"--batch {args.batch} does not split over {world} ranks")
    torch_mncore.init(device=args.device)
    losses, model, seconds = train(args, rank, world)
    curve = [loss.item() for loss in losses]
    expected, eager = reference(args)
    loss_error = max(abs(a - b) for a, b in zip(curve, expected, strict=True))
    weight_error = max((p.cpu() - q).abs().max().item()
                       for p, q in zip(model.parameters(), eager.parameters(), strict=True))
    ok = loss_error < 1e-4 and weight_error < 1e-4
    if rank == 0:
        print(f"{world} ranks on device {args.device!r}, mode {args.mode}: {args.steps} steps "
              f"of a global batch of {args.batch}, {seconds * 1e3:.1f} ms per step "
              "after the first two")
        for step in range(0, len(curve), max(1, len(curve) // 5)):
            print(f"step {step:3d}  loss {curve[step]:.5f}  (single process {expected[step]:.5f})")
        print(f"largest difference from single-process training: loss {loss_error:.2e}, "
              f"weights {weight_error:.2e}: {'equal' if ok else 'DIFFERENT'}")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
