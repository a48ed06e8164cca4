"""One MLP training loop (4 layers, SGD with momentum) three ways on the mncore device:
traced lazily every step, with the model's forward as an ``assume_pure`` function
(traced once, one node per step), and under ``torch.compile(backend="mncore")`` (host
tensors; Dynamo's guards, then the device's graphs). Prints each way's step time and
its loss after the last step, against eager's.

    python examples/three_ways.py [--device cpu] [--width 64] [--steps 30]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore


def mlp(width: int) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
                         nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


@torch_mncore.assume_pure
def forward(x: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
    """The model as a function of its input and parameters (what assume_pure needs)."""
    for i in range(0, len(params) - 2, 2):
        x = F.relu(F.linear(x, params[i], params[i + 1]))
    return F.linear(x, params[-2], params[-1])


def run(name: str, step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        data: list[tuple[torch.Tensor, torch.Tensor]], lazy: bool) -> tuple[float, float]:
    """Median step time after 3 warm-up steps, and the last loss."""
    times = []
    loss = torch.zeros(())
    for i, (x, y) in enumerate(data):
        start = time.perf_counter()
        loss = step(x.mncore(), y.mncore()) if lazy else step(x, y)
        if lazy:
            torch_mncore.sync()
        if i >= 3:
            times.append(time.perf_counter() - start)
    if lazy:
        torch_mncore.wait_device_ops()
    return statistics.median(times), float(loss.detach().cpu())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=sorted(torch_mncore.DEVICES))
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=30)
    options = parser.parse_args()
    torch_mncore.init(options.device)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(64, options.width, generator=g),
             torch.randint(0, 10, (64,), generator=g)) for _ in range(options.steps)]
    base = mlp(options.width)

    def training(model: nn.Module, forward_of: Callable[[torch.Tensor], torch.Tensor]
                 ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            optimizer.zero_grad()
            loss = F.cross_entropy(forward_of(x), y)
            loss.backward()
            optimizer.step()
            return loss

        return step

    eager = copy.deepcopy(base)
    lazy = copy.deepcopy(base).mncore()
    pure = copy.deepcopy(base).mncore()
    compiled = copy.deepcopy(base)
    params = list(pure.parameters())
    results = {
        "eager (host)": run("eager", training(eager, eager), data, lazy=False),
        "lazy": run("lazy", training(lazy, lazy), data, lazy=True),
        "assume_pure": run("assume_pure", training(pure, lambda x: forward(x, params)), data,
                           lazy=True),
        "torch.compile": run("torch.compile",
                             torch.compile(training(compiled, compiled), backend="mncore"),
                             data, lazy=False),
    }
    print(f"MLP 4x{options.width}, batch 64, SGD momentum, {options.steps} steps, device "
          f"{options.device}")
    for name, (seconds, loss) in results.items():
        print(f"  {name:14s} step {1e3 * seconds:7.2f} ms   last loss {loss:.6f}")


if __name__ == "__main__":
    main()
