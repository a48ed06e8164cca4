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

Collective tasks (a tile of an all-reduce, all-gather or reduce-scatter over a group
of N devices) run the **ring algorithm**: an all-reduce of S bytes is 2(N-1) steps that
each send S/N bytes to the next device, an all-gather or reduce-scatter N-1 such steps
(of its larger side). The devices run the same kernel (SPMD), so one device's schedule
stands for all of them. Each device's link to the next serves one transfer at a time
at ``link_bandwidth`` (transfers of different tiles queue on it); each step adds
``link_latency_s``, which transfers in flight overlap. A collective task holds its
worker until its last step (MPK's communication tasks are run by workers too). In the
kernel-per-operator schedule a collective is one launch over the whole tensor, after
its producer, at the full link bandwidth.

The defaults describe an NVIDIA H200 SXM from its public specifications: 132 SMs,
989 TFLOP/s dense BF16 Tensor Core peak, 4.8 TB/s HBM3e, NVLink 4 at 900 GB/s (450 GB/s
each way). Overheads follow the MPK paper's setting: a few microseconds per kernel
launch, under one per in-kernel dispatch, a microsecond or two per NVLink step.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
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
    link_bandwidth: float = 450e9
    """Bytes per second a device sends to the next one of its ring."""
    link_latency_s: float = 1.5e-6
    """Latency of one ring step (a put and its flag, across the link)."""

    def describe(self) -> str:
        return (f"workers={self.workers} dispatch={self.dispatch_s * 1e6:g}us "
                f"launch={self.launch_s * 1e6:g}us peak={self.peak_flops / 1e12:g}TFLOP/s "
                f"bandwidth={self.bandwidth / 1e12:g}TB/s "
                f"link={self.link_bandwidth / 1e9:g}GB/s+{self.link_latency_s * 1e6:g}us/step")

    def ring_seconds(self, wire_bytes: float, steps: int) -> float:
        """A collective alone on the link: its steps' latency and its bytes."""
        return steps * self.link_latency_s + wire_bytes / self.link_bandwidth

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

    #: What a collective body's rates are: no FLOPs, and its bytes move over the link
    #: (``ring_traffic``), not through the worker's share of memory bandwidth.
    LINK: tuple[float, float] = (0.0, 0.0)

    def __init__(self, bodies: Mapping[str, t.BodyOp]) -> None:
        self.bodies = bodies
        self.flops: dict[str, tuple[float, float] | None] = {}  # (per point, per task)
        self.indexed: dict[str, type[g.GraphOp] | None] = {}  # bodies that read by index

    def _body_flops(self, op: Operation | None) -> tuple[float, float] | None:
        if isinstance(op, g.CollectiveOp):
            return self.LINK
        if isinstance(op, t.BodyOp):
            return sum(flops_per_element(inner) for inner in op.body.block.ops
                       if not isinstance(inner, t.YieldOp)), 0.0
        return (0.0, op_flops(op)) if op is not None else None

    def __call__(self, task: t.TaskOp) -> tuple[float, float]:
        name = task.body_name
        if name not in self.flops:
            op = t.computation(task, self.bodies)
            self.flops[name] = self._body_flops(op)
            self.indexed[name] = type(op) if isinstance(op, INDEXED_READS) else None
        rates = self.flops[name]
        if rates is self.LINK:
            return 0.0, 0.0
        reads, writes = task.reads(), task.writes()
        moved = sum(_bytes(v, tile) for v, tile in [*reads, *writes])
        kind = self.indexed[name]
        if kind is not None:
            moved -= _untouched_bytes(kind, reads, writes)
        if rates is None:  # nothing runs it: one operation per element read (or written)
            flops = float(sum(math.prod(tile.sizes) for _, tile in reads)
                          or sum(math.prod(tile.sizes) for _, tile in writes))
        else:
            points = math.prod(writes[0][1].sizes) if writes else 0
            flops = rates[0] * points + rates[1]
        return float(flops), float(moved)


#: Ops whose task regions overstate what they move: an embedding or a gather reads
#: one element of its table per output element (the region is the whole table); an
#: index_put whose input is its output (convert-graph-to-task's in-place task) reads
#: and writes only the rows it puts.
INDEXED_READS = (g.EmbeddingOp, g.GatherOp, g.IndexPutOp)


def _bytes(value: Any, tile: t.Tile) -> float:
    return math.prod(tile.sizes) * numpy_dtype(element_type(value)).itemsize


def _untouched_bytes(kind: type[g.GraphOp], reads: Sequence[Any], writes: Sequence[Any]
                     ) -> float:
    """What the regions of a task of ``kind`` count that it does not move."""
    (table, region), (out, tile) = reads[0], writes[0]
    if kind is not g.IndexPutOp:  # the table's region, less an element per output
        return _bytes(table, region) - math.prod(tile.sizes) * (
            numpy_dtype(element_type(table)).itemsize)
    if table is not out or region != tile:
        return 0.0  # out-of-place: the whole input is copied
    values = reads[2]
    return 2 * _bytes(out, tile) - _bytes(*values)  # the rows put, not the buffer twice


def ring_traffic(op: g.CollectiveOp, in_bytes: float, out_bytes: float) -> tuple[float, int]:
    """(bytes each device sends, steps) of ``op`` by the ring algorithm."""
    n = op.group_size.value.data
    if isinstance(op, g.AllReduceOp):
        return 2 * (n - 1) / n * in_bytes, 2 * (n - 1)
    return (n - 1) / n * max(in_bytes, out_bytes), n - 1


def collective_bodies(bodies: Mapping[str, t.BodyOp]) -> dict[str, g.CollectiveOp]:
    """The kernel's collective tile bodies' ops, by body name (found once, not per task)."""
    ops = {name: body.tile_op() for name, body in bodies.items()}
    return {name: op for name, op in ops.items() if isinstance(op, g.CollectiveOp)}


def collective_traffic(task: t.TaskOp, op: g.CollectiveOp) -> tuple[float, int]:
    """A collective task's ring traffic (bytes sent, steps)."""
    sizes = [sum(math.prod(tile.sizes) * numpy_dtype(element_type(v)).itemsize
                 for v, tile in pairs) for pairs in (task.reads(), task.writes())]
    return ring_traffic(op, *sizes)


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
    transfers: dict[int, tuple[float, float]] = field(default_factory=dict)
    """When each collective task's bytes were on the link (start, end)."""


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
    """Workers take tasks in kernel order; ``seconds``: each task's time, if known. A
    collective task's transfer waits for the link (one transfer at a time)."""
    tasks, bodies = kernel.tasks(), kernel.bodies()
    if seconds is None:
        work = TaskWork(bodies)
        seconds = [_seconds(work(task), machine) for task in tasks]
    free = [(0.0, w) for w in range(machine.workers)]
    heapq.heapify(free)
    start, end, worker = [0.0] * len(tasks), [0.0] * len(tasks), [0] * len(tasks)
    collectives = collective_bodies(bodies)
    link_free = 0.0
    transfers: dict[int, tuple[float, float]] = {}
    for index, task in enumerate(tasks):
        at, w = heapq.heappop(free)
        ready = max((end[p] for p in preds[index]), default=0.0)
        start[index] = max(at, ready)
        end[index] = start[index] + machine.dispatch_s + seconds[index]
        op = collectives.get(task.body_name)
        if op is not None:
            wire, steps = collective_traffic(task, op)
            sending = max(end[index], link_free)
            link_free = sending + wire / machine.link_bandwidth
            transfers[index] = (sending, link_free)
            end[index] = link_free + steps * machine.link_latency_s
        worker[index] = w
        heapq.heappush(free, (end[index], w))
    return Timeline(start, end, worker, transfers)


def _operator_seconds(run: Sequence[int], tasks: Sequence[t.TaskOp],
                      collectives: Mapping[str, g.CollectiveOp], seconds: Sequence[float],
                      machine: MachineModel) -> float:
    """One launch's time: its tasks spread over the workers, or, for a collective,
    the ring over the whole tensor at the link's full bandwidth."""
    traffic = [collective_traffic(tasks[i], collectives[tasks[i].body_name]) for i in run
               if tasks[i].body_name in collectives]
    if not traffic:
        return _spread([seconds[i] for i in run], machine.workers)
    return machine.ring_seconds(sum(wire for wire, _ in traffic), traffic[0][1])


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
    collectives = collective_bodies(bodies)
    per_operator = sum(machine.launch_s
                       + _operator_seconds(run, tasks, collectives, seconds, machine)
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


def kernel_devices(kernel: t.KernelOp) -> int:
    """How many devices run the kernel: the largest group of its collectives (1 when
    it has none)."""
    return max((op.group_size.value.data for op in collective_bodies(kernel.bodies()).values()),
               default=1)


def chrome_trace(kernel: t.KernelOp, timeline: Timeline, report: TimingReport) -> str:
    """A Chrome/Perfetto trace (JSON): one process per device (they run the same
    schedule), one row per worker, one slice per task, and a row of the link's
    transfers."""
    bodies = kernel.bodies()
    used = sorted(set(timeline.worker))
    link = max(used, default=0) + 1
    names: dict[str, str] = {}  # by body
    slices: list[dict[str, Any]] = []
    for index, task in enumerate(kernel.tasks()):
        if task.body_name not in names:
            names[task.body_name] = _trace_name(t.computation(task, bodies), task)
        slices.append({
            "name": names[task.body_name], "ph": "X", "tid": timeline.worker[index],
            "ts": timeline.start[index] * 1e6,
            "dur": (timeline.end[index] - timeline.start[index]) * 1e6,
            "args": {"task": index, "body": "@" + t.task_label(task),
                     "writes": [f"{v.name_hint or 'arg'}[{tile}]" for v, tile in task.writes()]},
        })
        if index in timeline.transfers:
            begin, finish = timeline.transfers[index]
            slices.append({"name": f"send ({names[task.body_name]})", "ph": "X", "tid": link,
                           "ts": begin * 1e6, "dur": (finish - begin) * 1e6,
                           "args": {"task": index}})
    devices = kernel_devices(kernel)
    events: list[dict[str, Any]] = []
    for device in range(devices):
        events.append({"name": "process_name", "ph": "M", "pid": device,
                       "args": {"name": f"device {device}: megakernel @{kernel.sym_name.data}"}})
        events += [{"name": "thread_name", "ph": "M", "pid": device, "tid": w,
                    "args": {"name": f"worker {w}"}} for w in used]
        if timeline.transfers:
            events.append({"name": "thread_name", "ph": "M", "pid": device, "tid": link,
                           "args": {"name": f"link to device {(device + 1) % devices}"}})
        events += [{**event, "pid": device} for event in slices]
    meta = {key: value for key, value in asdict(report.machine).items()}
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                       "otherData": {"machine": meta, "devices": devices,
                                     "megakernel_us": report.megakernel_s * 1e6,
                                     "per_operator_us": report.per_operator_s * 1e6}})
