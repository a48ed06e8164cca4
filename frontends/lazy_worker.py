"""Running compiled steps: the worker thread that runs them in order while the next
step is traced, the metrics they are counted in, and naming the traced op behind an
execution error."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from mncore_ir.frontends import lazy_profile
from mncore_ir.frontends.lazy_compile import CompiledGraph
from mncore_ir.frontends.lazy_graph import TraceGraph, replay, unshared_inputs
from mncore_ir.frontends.lazy_tensor import DeviceData, LazyError, Node, Scalar, meta_key
from mncore_ir.frontends.lazy_where import describe_location

# ---------------------------------------------------------------------- metrics

#: The counters ``short_metrics_report()`` shows, as torch_xla's short report does its
#: own: how much was traced, compiled, run and synced behind the user's back.
SHORT_COUNTERS = ("TracedOps", "CachedCompile", "UncachedCompile", "Executions",
                  "ImplicitSyncs")
#: Timers ``short_metrics_report()`` shows (those that have samples).
SHORT_TIMERS = ("CompileTime", "ExecuteTime")


@dataclass
class Metrics:
    """What ``torch_mncore.counters()``, ``metrics_report()`` and the torch_xla-style
    ``metric_data()`` show. Timers are sampled in seconds, each sample with the wall
    time it was taken at; the worker and the data loader's thread add samples too, so
    they go in under a lock."""

    counters: Counter[str] = field(default_factory=Counter)
    times: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    traced_ops: int = 0  # a plain int: it is counted per op
    stamps: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            counters = dict(self.counters)
        return {"TracedOps": self.traced_ops, **counters} if self.traced_ops else counters

    def clear(self) -> None:
        with self.lock:
            self.counters.clear()
            self.times.clear()
            self.stamps.clear()
        self.traced_ops = 0

    def count(self, counts: Counter[str] | dict[str, int]) -> None:
        """Add ``counts`` from another thread than the tracing one."""
        with self.lock:
            self.counters.update(counts)

    def time(self, name: str, seconds: float) -> None:
        with self.lock:
            self.times[name].append(seconds)
            self.stamps[name].append(time.time())
        profile = lazy_profile.ACTIVE
        if profile is not None:
            profile.timer(name, seconds)

    def timers(self) -> dict[str, list[float]]:
        """A copy of every timer's samples, by name."""
        with self.lock:
            return {k: list(v) for k, v in self.times.items() if v}

    def data(self, name: str) -> tuple[int, float, list[tuple[float, float]]]:
        """torch_xla's ``metric_data``: (sample count, their sum in seconds, the samples
        as (wall time, seconds)). An unknown name is a ``LazyError`` listing the known."""
        with self.lock:
            values, stamps = list(self.times.get(name, ())), list(self.stamps.get(name, ()))
        if not values:
            known = ", ".join(sorted(self.timers())) or "none yet"
            raise LazyError(f"no metric named {name!r}; the metrics recorded so far are: "
                            f"{known} (counters are read with counter_value)")
        return len(values), sum(values), list(zip(stamps, values, strict=True))

    def report(self) -> str:
        lines = ["Counters:"]
        lines += [f"  {k}: {v}" for k, v in sorted(self.snapshot().items())]
        lines.append("Timers:")
        lines += [f"  {k}: {_timer_line(v)}" for k, v in sorted(self.timers().items())]
        lines.append(f"Live device buffers: {len(DeviceData.live)}")
        return "\n".join(lines)

    def short_report(self, counter_names: Sequence[str] | None = None,
                     metric_names: Sequence[str] | None = None) -> str:
        """The lines that say whether a loop runs well: ``counter_names`` (by default
        :data:`SHORT_COUNTERS`, at 0 when never counted, and every ``CpuFallback::``
        op) and ``metric_names`` (by default :data:`SHORT_TIMERS`, those with samples)."""
        counters = self.snapshot()
        if counter_names is None:
            names = [*SHORT_COUNTERS, *sorted(k for k in counters if k.startswith("CpuFallback"))]
        else:
            names = list(counter_names)
        lines = [f"{name}: {counters.get(name, 0)}" for name in names]
        timers = self.timers()
        for name in SHORT_TIMERS if metric_names is None else metric_names:
            if name in timers:
                lines.append(f"{name}: {_timer_line(timers[name])}")
            elif metric_names is not None:
                lines.append(f"{name}: no samples")
        return "\n".join(lines)


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``, interpolating linearly between
    the two nearest ranks (numpy's default method)."""
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _timer_line(samples: Sequence[float]) -> str:
    total = sum(samples)
    quantiles = ", ".join(f"p{q} {1e3 * percentile(samples, q):.3f} ms" for q in (50, 90, 99))
    return (f"count {len(samples)}, total {total:.4f} s, mean "
            f"{1e3 * total / len(samples):.3f} ms, {quantiles}")


# ---------------------------------------------------------------------- threads


def start_thread(target: Callable[..., None], args: tuple[Any, ...], name: str,
                 threads: int = 1) -> threading.Thread:
    """Start a daemon thread whose torch ops use ``threads`` intra-op threads; every other
    thread keeps its own count, and threads started later the caller's.

    Why one by default: each thread that runs parallel torch ops keeps its own OpenMP
    team. On the 2-core machine a live worker with a second team made the host's 64x64
    matmul 10-20x slower (7 us to 80-190 us) for as long as the worker lived, the user's
    eager code included (most likely libgomp's idle threads sleeping once the teams
    outnumber the cores, so each small parallel op pays a wake-up); a one-thread worker
    creates no team. (torch's own DataLoader workers run one thread each too.)"""
    if threads < 1:
        raise LazyError(f"device_threads={threads}: a thread needs at least 1 intra-op thread")
    ready = threading.Event()
    caller = torch.get_num_threads()  # initialises the caller's count, so it keeps it

    def run(*a: Any) -> None:
        # a thread's first use of the count sets it from the shared default (which the
        # caller restores below); after that, set_num_threads sets this thread's own
        torch.get_num_threads()
        torch.set_num_threads(threads)
        ready.set()
        target(*a)

    thread = threading.Thread(target=run, args=args, name=name, daemon=True)
    thread.start()
    ready.wait()
    # ``set_num_threads`` also sets the count that threads started from now on take
    torch.set_num_threads(caller)
    return thread


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
        return f"{failed.cause} (at {describe_location(failed.node.where)})"
    return str(error)


class Worker:
    """Runs jobs in order on one thread, whose torch ops use ``threads`` intra-op threads
    (:func:`start_thread`). ``submit`` returns once the job before it has been prepared
    (its Python side done), so tracing the next step does not fight that for the GIL."""

    def __init__(self, metrics: Metrics, threads: int = 1) -> None:
        self.metrics = metrics
        self._jobs: list[Job] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = start_thread(self._loop, (), "mncore-worker", threads)
        self._last: Future[None] | None = None
        self._previous: threading.Event | None = None  # the last job queued's `prepared`
        # device-busy intervals, for the benchmarks' idle fractions
        self.busy: deque[tuple[float, float]] = deque(maxlen=10_000)

    def submit(self, job: Job, gate: bool) -> None:
        """Queue ``job``; with ``gate``, return once the job queued before it has been
        prepared: the worker is then running that one, and ``job`` waits ready behind it,
        so the worker goes on without waiting for the next trace, while tracing stays at
        most one job ahead (its GIL-bound preparation done; one step's buffers more)."""
        with self._cond:
            if self._stopping:
                raise LazyError("this runtime has been shut down (torch_mncore.init() "
                                "replaced it, or the program is exiting)")
            self._jobs.append(job)
            self._last = job.future
            previous, self._previous = self._previous, job.prepared
            self._cond.notify()
        if gate and previous is not None:
            profile = lazy_profile.ACTIVE
            start = time.perf_counter() if profile is not None else 0.0
            previous.wait()
            if profile is not None:
                profile.complete("gate", "wait", start, time.perf_counter(),
                                 graph=job.graph.key)

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
        profile = lazy_profile.ACTIVE
        start = time.perf_counter()
        begin = end = 0.0  # set when the run begins and ends
        try:
            args = [scalar_tensor(x) if isinstance(x, Scalar) else x.tensor()
                    for x in job.graph.inputs]
            job.prepared.set()
            run = job.compiled.run
            # buffers no one else holds: the executable may write into them. Checked
            # after the gate opens (tracing need not wait for it): a buffer only its
            # graph holds at any moment stays so, nothing else can reach it.
            donated = unshared_tensors(args, unshared_inputs(job.graph)) if hasattr(
                run, "donating") else None
            begin = time.perf_counter()
            try:
                results = run.donating(args, donated) if donated else run(args)
                if donated:
                    self.metrics.counters["DonatedBuffers"] += len(donated)
                end = time.perf_counter()
                self.busy.append((begin, end))
                take_counts = getattr(job.compiled.run, "take_counts", None)
                if take_counts is not None:  # a simulator's steps and cycles
                    self.metrics.count(take_counts())
            except Exception as error:
                raise LazyError(f"graph execution failed: {diagnose(job.graph, args, error)}"
                                ) from error
            for buffer, result in zip(job.outputs, results, strict=True):
                buffer.fill(result)
            self.metrics.time("ExecuteTime", time.perf_counter() - start)
            if profile is not None:
                _profile_execution(profile, job, start, begin, end)
            job.future.set_result(None)
        except BaseException as error:
            job.prepared.set()
            if profile is not None:
                _profile_execution(profile, job, start, begin, end, error)
            job.future.set_exception(error)


def unshared_tensors(args: list[torch.Tensor], candidates: frozenset[int]) -> frozenset[int]:
    """The indices among ``candidates`` whose tensor only its buffer holds, on memory
    nothing else sees: no other tensor or view, no array (``.numpy()`` shares it), no
    storage object the user kept (``untyped_storage()`` hands back the one that
    exists); contiguous (a host op's result may be a broadcast view, whose elements
    share memory); not made under ``torch.inference_mode`` (which torch lets no thread
    outside it write: the worker's in-place step failed). Such a tensor's contents may
    be overwritten."""
    use_count = torch._C._storage_Use_Count
    found = []
    for i in candidates:
        # the tensor's holders: the args list, the buffer and getrefcount's argument
        if sys.getrefcount(args[i]) != 3 or args[i]._base is not None or (
                not args[i].is_contiguous()) or args[i].is_inference():
            continue
        storage = args[i].untyped_storage()
        # a storage object made for this call (3: this name, the argument and the
        # storage's own link to it), and the memory's users: the tensor and it
        if sys.getrefcount(storage) == 3 and use_count(storage._cdata) == 2:
            found.append(i)
        del storage
    return frozenset(found)


def _profile_execution(profile: lazy_profile.Profile, job: Job, start: float, begin: float,
                       end: float, error: BaseException | None = None) -> None:
    """The execution as an event on this thread, with its input gathering and its run
    inside it (``begin``/``end`` 0: it failed before the run began or ended)."""
    now = time.perf_counter()
    graph = job.graph
    args: dict[str, Any] = {"graph": graph.key, "ops": len(graph.nodes)}
    if error is not None:
        args["error"] = str(error).splitlines()[0] if str(error) else type(error).__name__
    profile.complete("inputs", "device", start, begin or now)
    if begin:
        profile.complete("run", "device", begin, end or now)
    profile.complete("execute", "device", start, now, **args)


#: A hoisted scalar's tensor by its exact value and dtype: the same learning rates and
#: momenta come back every step. An executable never writes into a Scalar input (it
#: writes into donated buffers only, and the cache's reference keeps a tensor returned
#: as an output from being donated later).
_SCALARS: dict[tuple[Any, torch.dtype], torch.Tensor] = {}


def scalar_tensor(s: Scalar) -> torch.Tensor:
    key = (meta_key(s.value), s.dtype)
    tensor = _SCALARS.get(key)
    if tensor is None:
        if len(_SCALARS) >= 4096:
            _SCALARS.clear()
        tensor = _SCALARS[key] = torch.tensor(s.value, dtype=s.dtype)  # 1e300 in f32: inf
    return tensor
