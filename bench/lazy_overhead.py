"""What lazy tracing costs (torch_mncore on the cpu device), all figures from one process.

(a) trace cost per op of a 2,000-op elementwise chain, against eager PyTorch per op,
    a wrapper subclass that does nothing (the floor of Python dispatch) and PyTorch's
    C++ lazy-tensor core (``torch._lazy``);
(b) the seed's table for a model whose execution and tracing take similar time: step
    time and device idle fraction, synchronous, asynchronous without the gate, and
    asynchronous with the gate (tracing waits until the worker has prepared its inputs);
(c) the seed's MLP width sweep (4 layers, batch 64): the lazy loop's and
    ``torch.compile(backend="mncore")``'s step times (also with Dynamo's
    ``trace_autograd_ops``: forward and backward as one graph) divided by calling the
    compiled executable directly on new inputs (no tracing, giving up the buffers the
    worker gives up), every thread with one intra-op thread, so that the ratios
    measure tracing and dispatch rather than thread counts; and that executable
    against eager PyTorch's step. ``aot_eager`` is PyTorch's own Dynamo + AOTAutograd
    backend running the same graphs eagerly: the floor of what any backend's
    ``torch.compile`` step costs on top of its graphs (guards, graph breaks around
    ``backward()`` and the optimizer, AOTAutograd's runtime wrappers);
(d) the host's own small parallel op (a 64x64 matmul, two intra-op threads) while the
    device's worker thread lives, with one intra-op thread (the default) and with two.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch._dynamo
import torch.nn.functional as F
from torch import nn

import torch_mncore
from mncore_ir.frontends import lazy_runtime
from mncore_ir.frontends.lazy_tensor import DeviceData

CHAIN = 2000


def best(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def chain(x: torch.Tensor) -> torch.Tensor:
    for _ in range(CHAIN // 2):
        x = x * 1.0001
        x = x + 0.5
    return x


class Floor(torch.Tensor):
    """A wrapper subclass whose ops do nothing but return another wrapper."""

    @staticmethod
    def __new__(cls, shape: torch.Size) -> Floor:
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=torch.float32)

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return Floor(args[0].shape)


def trace_cost(repeats: int) -> None:
    print(f"(a) trace cost of a {CHAIN}-op elementwise chain (16x16 f32), best of {repeats}")
    x = torch.randn(16, 16)
    eager = best(repeats, lambda: chain(x)) / CHAIN
    floor = best(repeats, lambda: chain(Floor(x.shape))) / CHAIN
    lazy = x.mncore()
    chain(lazy)
    torch_mncore.sync(wait=True)  # compile once
    trace = best(repeats, lambda: chain(lazy)) / CHAIN
    torch_mncore.sync(wait=True)
    theirs = torch_lazy_trace_cost(repeats)
    print(f"    eager {1e6 * eager:6.2f} us/op   no-op subclass {1e6 * floor:6.2f} us/op   "
          f"torch._lazy {1e6 * theirs:6.2f} us/op   lazy trace {1e6 * trace:6.2f} us/op")
    print(f"    trace / eager {trace / eager:.1f}x, trace / floor {trace / floor:.1f}x, "
          f"trace / torch._lazy {trace / theirs:.2f}x")


def torch_lazy_trace_cost(repeats: int) -> float:
    """PyTorch's own C++ lazy-tensor core (``torch._lazy``, TorchScript backend: what
    torch_xla is built on), tracing the same chain: seconds per op."""
    import torch._lazy
    import torch._lazy.ts_backend

    torch._lazy.ts_backend.init()
    x = torch.randn(16, 16).to("lazy")
    chain(x)
    torch._lazy.mark_step()
    cost = best(repeats, lambda: chain(x)) / CHAIN
    torch._lazy.mark_step()
    return cost


def mlp(width: int, layers: int = 4, classes: int = 10) -> nn.Module:
    torch.manual_seed(0)
    mods: list[nn.Module] = []
    for i in range(layers):
        mods += [nn.Linear(width, width if i + 1 < layers else classes)]
        if i + 1 < layers:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


Batch = tuple[torch.Tensor, torch.Tensor]


def training(width: int, count: int, batch: int, lazy: bool
             ) -> tuple[Callable[[torch.Tensor, torch.Tensor], None], list[Batch]]:
    """The MLP's SGD-momentum training step (on the device when ``lazy``: it moves each
    batch there) and ``count`` batches of host data."""
    model = mlp(width).mncore() if lazy else mlp(width)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(batch, width, generator=g), torch.randint(0, 10, (batch,), generator=g))
            for _ in range(count)]

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        optimizer.zero_grad()
        if lazy:
            x, y = x.mncore(), y.mncore()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step, data


def lazy_loop(width: int, steps: int, batch: int = 64) -> tuple[float, float, float]:
    """Mean step time of the lazy training loop, the device's idle fraction over the
    loop, and over its steady state (from the first execution's start to the last's
    end: without the pipeline's fill, the first step's tracing, which no device work
    can overlap)."""
    train, data = training(width, steps + 3, batch, lazy=True)

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        train(x, y)
        torch_mncore.sync()

    for x, y in data[:3]:  # compile and warm up
        step(x, y)
    torch_mncore.wait_device_ops()
    worker = lazy_runtime.runtime().worker
    worker.busy.clear()
    start = time.perf_counter()
    for x, y in data[3:]:
        step(x, y)
    torch_mncore.wait_device_ops()
    elapsed = time.perf_counter() - start
    runs = [(b, e) for b, e in worker.busy if e > start]
    busy = sum(min(e, start + elapsed) - max(b, start) for b, e in runs)
    steady = runs[-1][1] - runs[0][0]
    return (elapsed / steps, max(0.0, 1 - busy / elapsed),
            max(0.0, 1 - sum(e - b for b, e in runs) / steady))


def overlap_table(width: int, steps: int, rounds: int) -> None:
    print(f"(b) step time and device idle fraction, MLP 4x{width}, batch 64, {steps} steps; "
          f"median of {rounds} interleaved rounds")
    rows = [("Sync", dict(asynchronous=False)), ("Async (naive)", dict(gate=False)),
            ("Async (gated)", dict(gate=True))]
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in rows}
    for _ in range(rounds):  # interleaved, so machine noise hits every mode alike
        for name, options in rows:
            torch_mncore.init("cpu", implicit_sync="error", **options)  # type: ignore[arg-type]
            results[name].append(lazy_loop(width, steps))
    for name, _ in rows:
        step = statistics.median(r[0] for r in results[name])
        idle = statistics.median(r[1] for r in results[name])
        steady = statistics.median(r[2] for r in results[name])
        print(f"    {name:14s} step {1e3 * step:8.2f} ms   device idle {100 * idle:5.1f} %"
              f"   (steady state {100 * steady:5.1f} %)")


def direct_step(width: int, steps: int, batch: int = 64) -> float:
    """Mean time of calling the last compiled step graph on new inputs, no tracing,
    giving up the buffers the lazy loop's worker gave up (the parameters' and momentum
    buffers' previous values): each call writes into the last call's, and keeps the
    last call's results alive while it runs, as the runtime's buffers are."""
    graph, compiled = lazy_runtime.runtime().last  # type: ignore[misc]
    args = [torch.tensor(x.value, dtype=x.dtype) if not isinstance(x, DeviceData)
            else x.tensor().clone() for x in graph.inputs]
    batch_slots = [i for i, x in enumerate(graph.inputs) if isinstance(x, DeviceData)
                   and x.shape in ((batch, width), (batch,))]
    donated = frozenset(i for i, x in enumerate(graph.inputs) if isinstance(x, DeviceData)
                        and i not in batch_slots)
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(batch, width, generator=g), torch.randint(0, 10, (batch,), generator=g))
            for _ in range(steps)]
    results = compiled.run.donating(args, donated)  # warm up, as the lazy loop does
    times = []
    for x, y in data:
        for i in batch_slots:
            args[i] = x if args[i].dim() == 2 else y
        start = time.perf_counter()
        results = compiled.run.donating(args, donated)  # noqa: F841 (kept for the next)
        times.append(time.perf_counter() - start)
    return statistics.mean(times)


def eager_step(width: int, steps: int, batch: int = 64) -> float:
    """Mean step time of the same training step in eager PyTorch (its optimizer
    updates parameters and momentum buffers in place)."""
    train, data = training(width, steps + 3, batch, lazy=False)
    for x, y in data[:3]:
        train(x, y)
    start = time.perf_counter()
    for x, y in data[3:]:
        train(x, y)
    return (time.perf_counter() - start) / steps


def compiled_loop(width: int, steps: int, batch: int = 64,
                  trace_autograd_ops: bool = False, backend: str = "mncore") -> float:
    """Mean step time of ``torch.compile(step, backend="mncore")`` on host tensors (the
    same model and optimizer): Dynamo's guards, then the device's graphs (forward,
    backward, the optimizer's step; with Dynamo's ``trace_autograd_ops``, forward and
    backward in one graph)."""
    torch._dynamo.reset()
    step, data = training(width, steps + 3, batch, lazy=False)
    compiled = torch.compile(step, backend=backend)
    with torch._dynamo.config.patch(trace_autograd_ops=trace_autograd_ops):
        for x, y in data[:3]:  # capture, compile (the optimizer's second step recompiles)
            compiled(x, y)
        start = time.perf_counter()
        for x, y in data[3:]:
            compiled(x, y)
        return (time.perf_counter() - start) / steps


def width_sweep(widths: list[int], steps: int, rounds: int) -> None:
    print("(c) lazy loop and torch.compile(backend='mncore') vs the compiled executable "
          f"called directly (4 layers, batch 64, one intra-op thread); medians of {rounds} "
          "alternating rounds")
    torch_mncore.init("cpu", implicit_sync="error")
    host_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    for width in widths:
        n = steps if width < 2048 else max(3, steps // 10)
        lazy_times, direct_times, compiled_times, one_graph_times = [], [], [], []
        eager_times, floor_times = [], []
        for _ in range(rounds):
            lazy_times.append(lazy_loop(width, n)[0])
            direct_times.append(direct_step(width, n))
            compiled_times.append(compiled_loop(width, n))
            one_graph_times.append(compiled_loop(width, n, trace_autograd_ops=True))
            eager_times.append(eager_step(width, n))
            floor_times.append(compiled_loop(width, n, backend="aot_eager"))
        lazy, direct = statistics.median(lazy_times), statistics.median(direct_times)
        compiled = statistics.median(compiled_times)
        one_graph = statistics.median(one_graph_times)
        eager, floor = statistics.median(eager_times), statistics.median(floor_times)
        print(f"    w={width:5d}  lazy {1e3 * lazy:8.2f} ms  torch.compile "
              f"{1e3 * compiled:8.2f} ms  (one fw+bw graph {1e3 * one_graph:8.2f} ms)  "
              f"direct {1e3 * direct:8.2f} ms  eager {1e3 * eager:8.2f} ms  aot_eager "
              f"{1e3 * floor:8.2f} ms  lazy/direct {lazy / direct:5.2f}x  compile/direct "
              f"{compiled / direct:5.2f}x ({one_graph / direct:5.2f}x)  compile/aot_eager "
              f"{compiled / floor:5.2f}x  direct/eager {direct / eager:5.2f}x")
    torch.set_num_threads(host_threads)


def host_matmul_us(repeats: int = 2000) -> float:
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    return 1e6 * min(best(1, lambda: [a @ b for _ in range(repeats)]) / repeats
                     for _ in range(3))


def host_threads(alone: float) -> None:
    print(f"(d) the host's 64x64 matmul ({torch.get_num_threads()} intra-op threads) after "
          "a lazy loop, while its worker lives")
    print(f"    before init()        {alone:7.1f} us")
    for threads in (1, 2):  # re-init ends the previous worker, and its threads with it
        torch_mncore.init("cpu", implicit_sync="error", device_threads=threads)
        lazy_loop(256, 3)
        took = host_matmul_us()
        print(f"    device_threads={threads}     {took:7.1f} us  {took / alone:5.1f}x")
    torch_mncore.init("cpu", implicit_sync="error")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--overlap-width", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--only", choices=("a", "b", "c", "d"), nargs="+",
                        default=["a", "b", "c", "d"], help="the parts to run")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    alone = host_matmul_us()  # before any worker thread
    torch_mncore.init("cpu", implicit_sync="error")
    if "a" in args.only:
        trace_cost(args.repeats)
    if "b" in args.only:
        overlap_table(args.overlap_width, args.steps, args.rounds)
    if "c" in args.only:
        width_sweep(args.widths, args.steps, args.rounds)
    if "d" in args.only:
        host_threads(alone)


if __name__ == "__main__":
    main()
