"""The planner under convert-graph-to-task: the storage of graph values, the planned
tasks and their dependencies (from region overlap), and the emitted ``task.kernel``.
The pass's ``KernelBuilder`` says how each op is cut into tasks."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from xdsl.dialects.builtin import IntegerAttr, LocationAttr, MemRefType, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.element_types import TASK_ELEMENT_TYPES
from mncore_ir.dialects.task import Tile
from mncore_ir.dialects.task_regions import RegionTypes
from mncore_ir.transforms.convert_graph_to_task_bodies import Bodies
from mncore_ir.transforms.convert_graph_to_task_tiles import (
    AccessGroup,
    Shape,
    grid,
    tile_sizes,
    transitive_reduction,
)


class TilingOptions(Protocol):
    """The options of convert-graph-to-task the planner reads."""

    workers: int
    elementwise_tile: int
    permuted_reads: bool
    target: str
    reuse_buffers: bool
    max_tasks: int


class TaskConversionError(DiagnosticException):
    """A graph function that cannot become a task kernel; ``op`` is the op to blame
    (the tools report its source position)."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


#: The most elements a task-level buffer may hold: Triton's block offsets
#: (``tl.arange``) and the megakernel's counters are 32-bit.
MAX_BUFFER_ELEMENTS = 2**31 - 1


def read_permuted(op: Operation, returned: Sequence[SSAValue], transposes_only: bool = False
                  ) -> bool:
    """Whether ``op`` is a permute that only matmuls read, as their right operand: they
    can read its input in place (``graph.matmul_permuted``). ``transposes_only``: only
    a swap of the last two dimensions (the mncore kernels' one permuted read)."""
    if not isinstance(op, g.PermuteOp) or op.result in returned:
        return False
    if transposes_only and not g.is_transpose(op.perm.get_values()):
        return False
    uses = list(op.result.uses)
    return bool(uses) and all(isinstance(u.operation, g.MatmulOp) and u.index == 1
                              for u in uses)


def memref_of(typ: Attribute) -> MemRefType:
    assert isinstance(typ, TensorType)
    return MemRefType(typ.element_type, typ.get_shape())


def region_types(pairs: Sequence[tuple[SSAValue, Tile]]) -> RegionTypes:
    """The element type and sizes of each region of graph values."""
    types = []
    for value, tile in pairs:
        typ = value.type
        assert isinstance(typ, TensorType)
        types.append((typ.element_type, tile.sizes))
    return tuple(types)


@dataclass
class Storage:
    """A memref and the accesses of the value it holds now and of the one before."""

    value: SSAValue
    reusable: bool
    writers: list[AccessGroup] = field(default_factory=list)
    readers: list[AccessGroup] = field(default_factory=list)
    previous: list[AccessGroup] = field(default_factory=list)

    @property
    def memref(self) -> MemRefType:
        typ = self.value.type
        assert isinstance(typ, MemRefType)
        return typ

    @property
    def shape(self) -> Shape:
        return tuple(self.memref.get_shape())

    def new_version(self) -> None:
        self.previous = self.writers + self.readers
        self.writers, self.readers = [], []


@dataclass
class PlannedTask:
    body: str
    ins: list[tuple[Storage, Tile]]
    outs: list[tuple[Storage, Tile]]
    deps: set[int] = field(default_factory=set)
    #: the graph op's (set when its accesses are recorded): later passes' errors point at it
    location: LocationAttr | None = None


class TaskPlanner:
    """Lowers one function: plans tasks op by op (``lower``, which a subclass gives:
    convert-graph-to-task's ``KernelBuilder``), then emits buffers, events, tasks."""

    def __init__(self, options: TilingOptions, func: FuncOp) -> None:
        self.options = options
        self.func = func
        ins = [memref_of(a) for a in func.function_type.inputs.data]
        outs = [memref_of(r) for r in func.function_type.outputs.data]
        self.block = Block(arg_types=[*ins, *outs])
        self.inputs = list(self.block.args[: len(ins)])
        self.outputs = list(self.block.args[len(ins):])
        self.head: list[Operation] = []  # buffers and constants
        self.bodies = Bodies()
        self.tasks: list[PlannedTask] = []
        self.where: dict[SSAValue, Storage] = {}
        self.free: dict[MemRefType, list[Storage]] = {}
        self.current: Operation = func  # the op being lowered, blamed for its tiles
        self.permuted: set[Operation] = set()  # permutes that matmuls read through
        self.absorbed: set[Operation] = set()  # ops an earlier op's tasks compute
        self.direct: dict[SSAValue, int] = {}  # results written straight to outputs
        self.returned: list[SSAValue] = []
        self.position: dict[Operation, int] = {}
        self.recorded = 0  # tasks before this one have their accesses indexed

    # --- storage

    def storage_for_result(self, value: SSAValue, direct: dict[SSAValue, int]) -> Storage:
        if value in direct:
            return Storage(self.outputs[direct.pop(value)], reusable=False)
        return self.scratch(memref_of(value.type), value.name_hint)

    def storage_of(self, value: SSAValue) -> Storage:
        if value not in self.where:
            owner = value.owner
            assert isinstance(owner, g.ConstantOp), f"{value} has no storage"
            const = t.ConstantOp(owner.value)
            const.result.name_hint = value.name_hint
            self.head.append(const)
            self.where[value] = Storage(const.result, reusable=False)
        return self.where[value]

    # --- planning

    def grid(self, shape: Shape, sizes: Shape) -> Iterator[Tile]:
        """The tiles of ``sizes`` covering ``shape``, refused when there would be more
        than ``max_tasks`` tasks (counted, not made)."""
        self.reserve(0 if 0 in shape else
                     math.prod(-(-n // s) for n, s in zip(shape, sizes, strict=True)))
        return grid(shape, sizes)

    def reserve(self, count: int) -> None:
        limit = self.options.max_tasks
        if len(self.tasks) + count > limit:
            raise TaskConversionError(
                f"{self.current.name}: lowering it would make {len(self.tasks) + count:,} "
                f"tasks in @{self.func.sym_name.data}, more than max_tasks={limit:,} (larger "
                "tiles make fewer tasks: elementwise_tile, row_tile, matmul_tile)",
                self.current)

    def check_addressable(self, op: Operation, values: Sequence[SSAValue]) -> None:
        """Refuse tensors the task level cannot address or hold."""
        for value in values:
            element = g.element_type_of(value)
            if element not in TASK_ELEMENT_TYPES:
                raise TaskConversionError(
                    f"{op.name}: element type {element} is not supported at the task level "
                    "(it stays at the graph level: run it on the cpu or interp device)", op)
            count = math.prod(g.shape_of(value))
            if count > MAX_BUFFER_ELEMENTS:
                raise TaskConversionError(
                    f"{op.name}: {value.type} has {count:,} elements, more than the "
                    f"{MAX_BUFFER_ELEMENTS:,} a task-level buffer can address", op)

    def needed(self, ins: Sequence[Tile], outs: Sequence[Tile]) -> bool:
        """Whether a task reading ``ins`` to write ``outs`` is needed (a zero-size result
        needs none); refused when it would make a non-empty result of nothing."""
        if any(0 in tile.sizes for tile in outs):
            return False
        if any(0 in tile.sizes for tile in ins):
            raise TaskConversionError(
                f"{self.current.name}: a task would read a zero-size region to make a "
                "non-empty result, which the task level cannot express", self.current)
        return True

    def plan(self, body: g.GraphOp | str, ins: Sequence[tuple[SSAValue, Tile]],
             outs: Sequence[tuple[SSAValue, Tile]]) -> None:
        """A task running ``body`` (a pointwise body's symbol, or a graph op, whose tile
        body on these regions' types it gets) on regions of the graph values."""
        if not self.needed([tile for _, tile in ins], [tile for _, tile in outs]):
            return
        if not isinstance(body, str):
            body = self.bodies.tile(body, region_types(ins), region_types(outs))
        self.tasks.append(PlannedTask(body, [(self.storage_of(v), tile) for v, tile in ins],
                                      [(self.where[v], tile) for v, tile in outs]))

    def build(self) -> t.KernelOp:
        body = list(self.func.body.block.ops)
        if not body or not isinstance(body[-1], ReturnOp):
            raise TaskConversionError(f"@{self.func.sym_name.data} does not end in func.return")
        returned = self.returned = list(body[-1].operands)
        self.position = {op: index for index, op in enumerate(body)}
        if self.options.permuted_reads:
            transposes = self.options.target == "mncore"
            self.permuted = {op for op in body if read_permuted(op, returned, transposes)}
        last_use: dict[SSAValue, int] = {}
        for index, op in enumerate(body):
            for o in self.reads_of(op):
                last_use[o] = index
        # Each op result returned gets written straight into its first output.
        direct = self.direct
        for i, v in enumerate(returned):
            if isinstance(v.owner, Operation) and not isinstance(v.owner, g.ConstantOp):
                direct.setdefault(v, i)
        copies = [(v, i) for i, v in enumerate(returned) if direct.get(v) != i]
        for arg, value in zip(self.func.body.block.args, self.inputs, strict=True):
            self.where[arg] = Storage(value, reusable=False)
        self.check_addressable(self.func, self.func.body.block.args)

        for index, op in enumerate(body[:-1]):
            if isinstance(op, g.ConstantOp) or op in self.permuted:
                continue  # materialised (or inlined, or read in place) where used
            if not isinstance(op, g.GraphOp):
                raise TaskConversionError(f"convert-graph-to-task cannot lower {op.name}", op)
            if op not in self.absorbed:
                self.current = op
                self.check_addressable(op, [*op.operands, *op.results])
                for r in op.results:
                    self.where[r] = self.storage_for_result(r, direct)
                first = len(self.tasks)
                self.lower(op)
                self.check_results_written(op, first)
                self.record_accesses()
            for value in {*self.reads_of(op), *op.results}:
                storage = self.where.get(value)
                if (storage is not None and storage.reusable
                        and last_use.get(value, index) <= index and value not in returned):
                    self.free.setdefault(memref_of(value.type), []).append(storage)
        self.current = body[-1]  # the copies into outputs are the return's
        for value, i in copies:
            self.where[value] = self.storage_of(value)
            target = Storage(self.outputs[i], reusable=False)
            shape = g.shape_of(value)
            copy = self.bodies.pointwise([], [value], [value])
            for tile in self.grid(shape, tile_sizes(shape, self.options.elementwise_tile)):
                self.tasks.append(PlannedTask(copy, [(self.where[value], tile)],
                                              [(target, tile)]))
            self.record_accesses()
        return self.emit()

    def reads_of(self, op: Operation) -> list[SSAValue]:
        """The values ``op``'s tasks read: a permute read in place reads its input."""
        return [o.owner.input if o.owner in self.permuted else o for o in op.operands]

    def check_results_written(self, op: Operation, first: int) -> None:
        """A non-empty result that no new task writes comes from reading only zero-size
        regions (a reduction over an empty dimension, a gradient summed over no rows):
        its value would be whatever the buffer held."""
        written = {id(storage) for task in self.tasks[first:] for storage, _ in task.outs}
        for result in op.results:
            if all(use.operation in self.absorbed for use in result.uses) and result.uses:
                continue  # never materialised: the op reading it computes it
            if math.prod(g.shape_of(result)) and id(self.where[result]) not in written:
                raise TaskConversionError(
                    f"{op.name}: result {result.index} would be computed from zero-size "
                    "regions only, which the task level cannot express", op)

    def record_accesses(self) -> None:
        """Find the dependencies of the tasks planned since the last call, then index
        their accesses (an op whose tasks read what its earlier tasks wrote, such as
        split-K sums, calls it in between)."""
        first, self.recorded = self.recorded, len(self.tasks)
        groups: dict[tuple[int, bool], AccessGroup] = {}
        for index in range(first, len(self.tasks)):
            task = self.tasks[index]
            task.location = self.current.location
            for storage, tile in task.ins:
                for group in storage.writers:
                    task.deps.update(group.overlapping(tile))
            for storage, tile in task.outs:
                for group in storage.previous:
                    task.deps.update(group.overlapping(tile))
        for index in range(first, len(self.tasks)):
            task = self.tasks[index]
            for writes, accesses in ((False, task.ins), (True, task.outs)):
                for storage, tile in accesses:
                    key = (id(storage), writes)
                    if key not in groups:
                        groups[key] = AccessGroup(storage.shape)
                        (storage.writers if writes else storage.readers).append(groups[key])
                    groups[key].entries.append((tile, index))
        for group in groups.values():
            group.finish()

    def scratch(self, typ: MemRefType, hint: str | None) -> Storage:
        """A buffer of type ``typ``, reused from a dead value's when one is free."""
        pool = self.free.get(typ) if self.options.reuse_buffers else None
        if pool:
            storage = pool.pop()
            storage.new_version()
            return storage
        buffer = t.BufferOp.build(result_types=[typ])
        buffer.result.name_hint = hint
        self.head.append(buffer)
        return Storage(buffer.result, reusable=True)

    def lower(self, op: g.GraphOp) -> None:
        raise NotImplementedError

    # --- emission

    def emit(self) -> t.KernelOp:
        preds = transitive_reduction([task.deps for task in self.tasks])
        successors: list[list[int]] = [[] for _ in self.tasks]
        for index, ps in enumerate(preds):
            for p in ps:
                successors[p].append(index)
        event_of: dict[tuple[int, ...], t.EventOp] = {}
        signal: list[t.EventOp | None] = []
        for succ in successors:
            if not succ:
                signal.append(None)
                continue
            key = tuple(succ)
            if key not in event_of:
                event_of[key] = t.EventOp(0)
            signal.append(event_of[key])
        counts: dict[t.EventOp, int] = {}
        for event in signal:
            if event is not None:
                counts[event] = counts.get(event, 0) + 1
        for event, count in counts.items():
            event.triggers = IntegerAttr(count, i64)
        ops: list[Operation] = [*self.bodies.ops, *self.head, *event_of.values()]
        results = [event.result if event is not None else None for event in signal]
        for index, task in enumerate(self.tasks):
            # A predecessor signals an event: it has a successor, this task.
            waits = list(dict.fromkeys(e for p in sorted(preds[index])
                                       if (e := results[p]) is not None))
            op = t.TaskOp(task.body, [(s.value, tile) for s, tile in task.ins],
                          [(s.value, tile) for s, tile in task.outs], waits, results[index])
            if task.location is not None:
                op.location = task.location
            ops.append(op)
        ops.append(t.ReturnOp())
        self.block.add_ops(ops)
        ftype = self.func.function_type
        kernel = t.KernelOp(self.func.sym_name.data, [memref_of(a) for a in ftype.inputs.data],
                            [memref_of(r) for r in ftype.outputs.data], Region(self.block))
        kernel.location = self.func.location
        kernel.attributes["workers"] = IntegerAttr(self.options.workers, i64)
        for arg, old in zip(self.block.args, self.func.body.block.args, strict=False):
            arg.name_hint = old.name_hint
        return kernel
