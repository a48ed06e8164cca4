"""Running compiled steps: the worker thread that runs them in order while the next
step is traced, the metrics they are counted in, and naming the traced op behind an
execution error."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter, defaultdict, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_compile import CompiledGraph, TraceGraph, replay
from mncore_ir.frontends.lazy_tensor import DeviceData, LazyError, Node, Scalar

# ---------------------------------------------------------------------- metrics


@dataclass
class Metrics:
    """What ``torch_mncore.counters()`` and ``metrics_report()`` show."""

    counters: Counter[str] = field(default_factory=Counter)
    times: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    traced_ops: int = 0  # a plain int: it is counted per op

    def snapshot(self) -> dict[str, int]:
        return {"TracedOps": self.traced_ops, **self.counters} if self.traced_ops else dict(
            self.counters)

    def clear(self) -> None:
        self.counters.clear()
        self.times.clear()
        self.traced_ops = 0

    def time(self, name: str, seconds: float) -> None:
        self.times[name].append(seconds)

    def report(self) -> str:
        lines = ["Counters:"]
        lines += [f"  {k}: {v}" for k, v in sorted(self.snapshot().items())]
        lines.append("Timers (count, total s, mean ms):")
        for k, v in sorted(self.times.items()):
            lines.append(f"  {k}: {len(v)}, {sum(v):.4f}, {1e3 * sum(v) / len(v):.3f}")
        lines.append(f"Live device buffers: {len(DeviceData.live)}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- execution jobs


@dataclass(eq=False)
class Job:
    """One graph execution: inputs gathered on the worker, outputs filled into buffers."""

    compiled: CompiledGraph
    graph: TraceGraph
    outputs: list[DeviceData]
    future: Future[None]
    prepared: threading.Event = field(default_factory=threading.Event)


class _Failed(Exception):
    def __init__(self, node: Node, cause: Exception) -> None:
        self.node, self.cause = node, cause


def diagnose(graph: TraceGraph, args: list[torch.Tensor], error: BaseException) -> str:
    """Which traced op fails: replay the trace eagerly on the host, op by op, and name
    the user's source line of the first that raises."""

    def call(node: Node, a: tuple[Any, ...], k: dict[str, Any]) -> Any:
        try:
            return node.op(*a, **k)
        except Exception as cause:
            raise _Failed(node, cause) from cause

    try:
        replay(graph, args, call, lambda value, i: value[i])
    except _Failed as failed:
        return f"{failed.cause} (at {lt.describe_location(failed.node.where)})"
    return str(error)


class Worker:
    """Runs jobs in order on one thread. ``submit`` returns once the job's Python-side
    preparation is done, so tracing the next step does not fight it for the GIL."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._jobs: list[Job] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="mncore-worker", daemon=True)
        self._thread.start()
        self._last: Future[None] | None = None
        # device-busy intervals, for the benchmarks' idle fractions
        self.busy: deque[tuple[float, float]] = deque(maxlen=10_000)

    def submit(self, job: Job, gate: bool) -> None:
        with self._cond:
            if self._stopping:
                raise LazyError("this runtime has been shut down (torch_mncore.init() "
                                "replaced it, or the program is exiting)")
            self._jobs.append(job)
            self._last = job.future
            self._cond.notify()
        if gate:
            job.prepared.wait()

    def wait_all(self) -> None:
        last = self._last
        if last is not None:
            with contextlib.suppress(Exception):
                last.result()

    def stop(self) -> None:
        """Run the queued jobs, then end the thread and wait for it to go. The thread
        frees each job's tensors after signalling its future, and a daemon thread that
        is inside torch (freeing a tensor drops the GIL) when the interpreter shuts down
        aborts the process: at exit it must be gone, not just idle."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._cond.wait()
                if not self._jobs:
                    return
                job = self._jobs.pop(0)
            self._run(job)

    def _run(self, job: Job) -> None:
        try:
            start = time.perf_counter()
            args = [scalar_tensor(x) if isinstance(x, Scalar) else x.tensor()
                    for x in job.graph.inputs]
            job.prepared.set()
            begin = time.perf_counter()
            try:
                results = job.compiled.run(args)
                self.busy.append((begin, time.perf_counter()))
                take_counts = getattr(job.compiled.run, "take_counts", None)
                if take_counts is not None:  # a simulator's steps and cycles
                    self.metrics.counters.update(take_counts())
            except Exception as error:
                raise LazyError(f"graph execution failed: {diagnose(job.graph, args, error)}"
                                ) from error
            for buffer, result in zip(job.outputs, results, strict=True):
                buffer.fill(result)
            self.metrics.time("ExecuteTime", time.perf_counter() - start)
            job.future.set_result(None)
        except BaseException as error:
            job.prepared.set()
            job.future.set_exception(error)


def scalar_tensor(s: Scalar) -> torch.Tensor:
    return torch.tensor(s.value, dtype=s.dtype)
