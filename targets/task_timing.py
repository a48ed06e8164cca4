"""A timing model of a task kernel on a GPU-like machine, and its Perfetto trace.

Each task costs a dispatch overhead plus the larger of its compute time and its memory
time (a roofline per task), with every worker getting an equal share of the device's
peak FLOP/s and bandwidth. Two schedules are compared:

* **megakernel**: one launch; workers take tasks in kernel order, like the ticket queue
  of a persistent kernel, and a task starts once its worker is free and the events it
  waits on have fired;
* **kernel per operator**: one launch per operator (a maximal run of consecutive tasks
  that compute the same op, with the same properties, into the same output buffers);
  an operator's tasks spread over all workers, and the next operator starts when it
  has finished.

The defaults describe an NVIDIA H200 SXM from its public specifications: 132 SMs,
989 TFLOP/s dense BF16 Tensor Core peak, 4.8 TB/s HBM3e. Overheads follow the MPK
paper's setting: a few microseconds per kernel launch, under one per in-kernel dispatch.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from xdsl.ir import Operation

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.graph_semantics import flops_per_element, op_flops
from mncore_ir.dialects.task_regions import element_type
from mncore_ir.dialects.values import numpy_dtype


@dataclass(frozen=True)
class MachineModel:
    """Parameters of the timing model (seconds, FLOP/s, bytes/s)."""

    workers: int = 132
    """Persistent workers (one per SM)."""
    dispatch_s: float = 0.5e-6
    """Per-task overhead inside the megakernel: ticket, event waits, signal."""
    launch_s: float = 4.0e-6
    """Per-kernel launch and drain overhead of a kernel-per-operator run."""
    peak_flops: float = 989e12
    """Device peak compute."""
    bandwidth: float = 4.8e12
    """Device memory bandwidth."""

    def describe(self) -> str:
        return (f"workers={self.workers} dispatch={self.dispatch_s * 1e6:g}us "
                f"launch={self.launch_s * 1e6:g}us peak={self.peak_flops / 1e12:g}TFLOP/s "
                f"bandwidth={self.bandwidth / 1e12:g}TB/s")

    @staticmethod
    def from_options(text: str) -> MachineModel:
        """``workers=64,launch_s=2e-6``: fields of the model, the rest default."""
        names = {f.name: f.type for f in fields(MachineModel)}
        values: dict[str, Any] = {}
        for item in filter(None, (s.strip() for s in text.split(","))):
            key, _, value = item.partition("=")
            if key not in names:
                raise ValueError(f"unknown machine parameter {key!r}; known: "
                                 f"{', '.join(names)}")
            try:
                values[key] = int(value) if key == "workers" else float(value)
            except ValueError:
                raise ValueError(f"machine parameter {key} needs a number, got {value!r}"
                                 ) from None
            if values[key] <= 0:
                raise ValueError(f"machine parameter {key} must be positive")
        return MachineModel(**values)


class TaskWork:
    """(FLOPs, bytes moved) of tasks, FLOPs from the graph ops' semantics table: a
    pointwise body's ops at every point of its tile, a graph op on its regions. What a
    body computes is looked up once: the tasks of an operator share a few bodies."""

    def __init__(self, bodies: Mapping[str, t.BodyOp]) -> None:
        self.bodies = bodies
        self.flops: dict[str, tuple[float, float] | None] = {}  # (per point, per task)

    def _body_flops(self, task: t.TaskOp) -> tuple[float, float] | None:
        op = t.computation(task, self.bodies)
        if isinstance(op, t.BodyOp):
            return sum(flops_per_element(inner) for inner in op.body.block.ops
                       if not isinstance(inner, t.YieldOp)), 0.0
        return (0.0, op_flops(op)) if op is not None else None

    def __call__(self, task: t.TaskOp) -> tuple[float, float]:
        reads, writes = task.reads(), task.writes()
        moved = sum(math.prod(tile.sizes) * numpy_dtype(element_type(v)).itemsize
                    for v, tile in [*reads, *writes])
        name = task.body_name
        if name not in self.flops:
            self.flops[name] = self._body_flops(task)
        rates = self.flops[name]
        if rates is None:  # nothing runs it: one operation per element read (or written)
            flops = float(sum(math.prod(tile.sizes) for _, tile in reads)
                          or sum(math.prod(tile.sizes) for _, tile in writes))
        else:
            points = math.prod(writes[0][1].sizes) if writes else 0
            flops = rates[0] * points + rates[1]
        return float(flops), float(moved)


def task_work(task: t.TaskOp, bodies: Mapping[str, t.BodyOp]) -> tuple[float, float]:
    """(FLOPs, bytes moved) of one task."""
    return TaskWork(bodies)(task)


def _seconds(work: tuple[float, float], machine: MachineModel) -> float:
    flops, moved = work
    share = machine.workers
    return max(flops / (machine.peak_flops / share), moved / (machine.bandwidth / share))


def task_seconds(task: t.TaskOp, bodies: Mapping[str, t.BodyOp], machine: MachineModel
                 ) -> float:
    """Compute or memory time of one task on one worker, whichever is longer."""
    return _seconds(task_work(task, bodies), machine)


@dataclass
class Timeline:
    """When each task ran and on which worker, in the megakernel schedule."""

    start: list[float]
    end: list[float]
    worker: list[int]


@dataclass(frozen=True)
class TimingReport:
    tasks: int
    events: int
    operators: int
    megakernel_s: float
    per_operator_s: float
    utilisation: float
    machine: MachineModel

    @property
    def speedup(self) -> float:
        return self.per_operator_s / self.megakernel_s

    def format(self) -> str:
        return "\n".join([
            f"machine: {self.machine.describe()}",
            f"tasks: {self.tasks}  events: {self.events}  operators: {self.operators}",
            f"megakernel latency: {self.megakernel_s * 1e6:.2f} us "
            f"(worker utilisation {self.utilisation:.1%})",
            f"kernel-per-operator latency: {self.per_operator_s * 1e6:.2f} us",
            f"megakernel speedup: {self.speedup:.2f}x",
        ])


def operators(tasks: Sequence[t.TaskOp], bodies: Mapping[str, t.BodyOp]) -> list[list[int]]:
    """Maximal runs of consecutive tasks that compute one op (a pointwise body, or a
    graph op's class and properties) into the same output buffers: the launches of a
    kernel-per-operator run."""
    computes: dict[str, Hashable] = {}  # by body: the tasks of an operator share a few
    runs: list[list[int]] = []
    previous: tuple[Hashable, ...] | None = None
    for index, task in enumerate(tasks):
        name = task.body_name
        if name not in computes:
            computes[name] = _what_computes(t.computation(task, bodies), name)
        key = (computes[name], task.operand_groups().outs)
        if key != previous:
            runs.append([])
            previous = key
        runs[-1].append(index)
    return runs


def _what_computes(op: Operation | None, name: str) -> Hashable:
    """What tells operators apart: a pointwise body's symbol, a graph op's class and
    properties (the tiles of one operator differ only in their regions)."""
    if isinstance(op, g.GraphOp):
        return (type(op), tuple(sorted(op.properties.items())))
    return (t.BodyOp, name)


def _spread(durations: Sequence[float], workers: int) -> float:
    """Makespan of independent tasks handed out in order to the first free worker."""
    free = [0.0] * min(workers, len(durations))
    heapq.heapify(free)
    end = 0.0
    for d in durations:
        finish = heapq.heappop(free) + d
        end = max(end, finish)
        heapq.heappush(free, finish)
    return end


def megakernel_schedule(kernel: t.KernelOp, machine: MachineModel,
                        preds: Sequence[Sequence[int]],
                        seconds: Sequence[float] | None = None) -> Timeline:
    """Workers take tasks in kernel order; ``seconds``: each task's time, if known."""
    tasks = kernel.tasks()
    if seconds is None:
        work = TaskWork(kernel.bodies())
        seconds = [_seconds(work(task), machine) for task in tasks]
    free = [(0.0, w) for w in range(machine.workers)]
    heapq.heapify(free)
    start, end, worker = [0.0] * len(tasks), [0.0] * len(tasks), [0] * len(tasks)
    for index in range(len(tasks)):
        at, w = heapq.heappop(free)
        ready = max((end[p] for p in preds[index]), default=0.0)
        start[index] = max(at, ready)
        end[index] = start[index] + machine.dispatch_s + seconds[index]
        worker[index] = w
        heapq.heappush(free, (end[index], w))
    return Timeline(start, end, worker)


def estimate(kernel: t.KernelOp, machine: MachineModel | None = None
             ) -> tuple[TimingReport, Timeline]:
    """The timing report of ``kernel`` and its megakernel timeline."""
    machine = machine or MachineModel()
    tasks, bodies = kernel.tasks(), kernel.bodies()
    work = TaskWork(bodies)
    seconds = [_seconds(work(task), machine) for task in tasks]
    timeline = megakernel_schedule(kernel, machine, t.predecessors(kernel), seconds)
    makespan = max(timeline.end, default=0.0)
    busy = sum(e - s for s, e in zip(timeline.start, timeline.end, strict=True))
    runs = operators(tasks, bodies)
    per_operator = sum(
        machine.launch_s + _spread([seconds[i] for i in run], machine.workers)
        for run in runs)
    events = sum(1 for op in kernel.body.block.ops if isinstance(op, t.EventOp))
    report = TimingReport(
        len(tasks), events, len(runs), machine.launch_s + makespan, per_operator,
        busy / (machine.workers * makespan) if makespan else 0.0, machine)
    return report, timeline


def _trace_name(op: Operation | None, task: t.TaskOp) -> str:
    """A slice's name says what its task computes (a pointwise body is "elementwise"),
    so the tiles of one op share it; its body is in the slice's arguments."""
    return t.computation_label(op) if op is not None else t.task_label(task)


def chrome_trace(kernel: t.KernelOp, timeline: Timeline, report: TimingReport) -> str:
    """A Chrome/Perfetto trace (JSON): one row per worker, one slice per task."""
    bodies = kernel.bodies()
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0,
         "args": {"name": f"megakernel @{kernel.sym_name.data}"}},
    ]
    used = sorted(set(timeline.worker))
    events += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": w,
                "args": {"name": f"worker {w}"}} for w in used]
    names: dict[str, str] = {}  # by body
    for index, task in enumerate(kernel.tasks()):
        if task.body_name not in names:
            names[task.body_name] = _trace_name(t.computation(task, bodies), task)
        events.append({
            "name": names[task.body_name], "ph": "X", "pid": 0, "tid": timeline.worker[index],
            "ts": timeline.start[index] * 1e6,
            "dur": (timeline.end[index] - timeline.start[index]) * 1e6,
            "args": {"task": index, "body": "@" + t.task_label(task),
                     "writes": [f"{v.name_hint or 'arg'}[{tile}]" for v, tile in task.writes()]},
        })
    meta = {key: value for key, value in asdict(report.machine).items()}
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                       "otherData": {"machine": meta,
                                     "megakernel_us": report.megakernel_s * 1e6,
                                     "per_operator_us": report.per_operator_s * 1e6}})
