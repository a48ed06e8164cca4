"""``convert-graph-to-task``: each graph function becomes a megakernel task graph.

Every op is cut into tiles of its output, one task per tile:

* elementwise ops, ``graph.fused`` chains and ``graph.expand``: tiles of about
  ``elementwise_tile`` elements; the tasks share the op's pointwise ``task.body`` (on
  0-d tensors), and each input is read over the tile's broadcast image;
* ``graph.matmul``: ``matmul_tile`` (rows, columns) output tiles reading a row band of
  the left and a column band of the right operand;
* row-wise ops (softmax, log-softmax and their backward, layer norm), reductions (sum,
  mean, amax) and embeddings: ``row_tile`` rows per task, or more when rows are short
  (as many as make about ``elementwise_tile`` elements), the reduced dimensions whole;
* ``graph.permute``, ``graph.slice`` and ``graph.embedding``: output tiles, the input
  region mapped back; ``graph.reshape``: bands of output rows that are whole input rows
  (along the first dimension larger than 1); ``graph.concat``: elementwise copies of
  each input's tiles into its slab of the output;
* everything else is one task over whole tensors: index_put, gather, scatter, conv2d
  and max-pool (and their backward), layer-norm backward.

A task of any other op runs a tile body: the op, with its properties, on tensors typed
as the task's input regions, yielding exactly its output regions; the tiles whose
regions have the same shapes share one (``convert_graph_to_task_bodies``).

Dependencies come from region overlap between a task and the earlier tasks that wrote
what it reads (read-after-write), or read or wrote what it overwrites when a buffer is
reused (write-after-read, write-after-write), found as ``convert_graph_to_task_tiles``
describes; producers with the same set of consumers then share one event.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.element_types import TASK_ELEMENT_TYPES
from mncore_ir.dialects.task import Tile
from mncore_ir.dialects.task_regions import RegionTypes
from mncore_ir.dialects.values import paused_gc
from mncore_ir.transforms.convert_graph_to_task_bodies import Bodies, is_scalar_constant
from mncore_ir.transforms.convert_graph_to_task_tiles import (
    AccessGroup,
    Shape,
    broadcast_region,
    grid,
    tile_sizes,
    transitive_reduction,
    whole,
)


class TaskConversionError(DiagnosticException):
    """A graph function that cannot become a task kernel; ``op`` is the op to blame
    (the tools report its source position)."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


#: The most elements a task-level buffer may hold: Triton's block offsets
#: (``tl.arange``) and the megakernel's counters are 32-bit.
MAX_BUFFER_ELEMENTS = 2**31 - 1


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
    def shape(self) -> Shape:
        typ = self.value.type
        assert isinstance(typ, MemRefType)
        return tuple(typ.get_shape())

    def new_version(self) -> None:
        self.previous = self.writers + self.readers
        self.writers, self.readers = [], []


@dataclass
class PlannedTask:
    body: str
    ins: list[tuple[Storage, Tile]]
    outs: list[tuple[Storage, Tile]]
    deps: set[int] = field(default_factory=set)


# --------------------------------------------------------------------------- the pass


@dataclass(frozen=True)
class ConvertGraphToTaskPass(ModulePass):
    """Lower every graph ``func.func`` to a ``task.kernel`` of tiles and events."""

    name = "convert-graph-to-task"

    workers: int = 132
    """Persistent workers the kernel is launched with (an H200 has 132 SMs)."""

    matmul_tile: tuple[int, ...] = (64, 64)
    """Rows and columns of a matmul output tile."""

    elementwise_tile: int = 4096
    """Elements per elementwise, permute or copy task."""

    row_tile: int = 16
    """Rows per task of row-wise ops, reductions and embeddings; more when rows are
    short, so that a task holds about ``elementwise_tile`` elements (a 100000x8 softmax
    is 196 tasks of 512 rows, not 6250 of 16)."""

    collectives: bool = True
    """Lower collectives to collective tasks (the megakernel simulator runs them);
    false refuses them at the op, for targets without them (the lazy runtime then
    runs them on the host, through torch.distributed)."""

    tile_collectives: bool = True
    """Cut collectives into tiles that overlap the computation; false: one task per
    collective over its whole tensor, after all of its producer (to measure what the
    overlap gains)."""

    reuse_buffers: bool = True
    """Give dead intermediates' buffers to new values of the same type."""

    max_tasks: int = 50_000
    """The most tasks a kernel may have: tiles are counted before any is made, so a
    kernel of more is refused at once, at the op that would exceed it, instead of after
    the seconds that lowering, verifying and simulating so many tasks take (tens of
    microseconds each in Python)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if len(self.matmul_tile) != 2 or min(self.matmul_tile) < 1:
            raise TaskConversionError("convert-graph-to-task: matmul_tile needs two sizes >= 1")
        if min(self.workers, self.elementwise_tile, self.row_tile, self.max_tasks) < 1:
            raise TaskConversionError("convert-graph-to-task: workers, tile sizes and "
                                      "max_tasks must be >= 1")
        for func in [o for o in op.body.block.ops if isinstance(o, FuncOp)]:
            with paused_gc():
                kernel = KernelBuilder(self, func).build()
            Rewriter.replace_op(func, kernel)


class KernelBuilder:
    """Lowers one function: plans tasks op by op, then emits buffers, events, tasks."""

    def __init__(self, options: ConvertGraphToTaskPass, func: FuncOp) -> None:
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

    # --- storage

    def storage_for_result(self, value: SSAValue, direct: dict[SSAValue, int]) -> Storage:
        if value in direct:
            return Storage(self.outputs[direct.pop(value)], reusable=False)
        typ = memref_of(value.type)
        pool = self.free.get(typ) if self.options.reuse_buffers else None
        if pool:
            storage = pool.pop()
            storage.new_version()
            return storage
        buffer = t.BufferOp.build(result_types=[typ])
        buffer.result.name_hint = value.name_hint
        self.head.append(buffer)
        return Storage(buffer.result, reusable=True)

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

    def plan(self, body: g.GraphOp | str, ins: Sequence[tuple[SSAValue, Tile]],
             outs: Sequence[tuple[SSAValue, Tile]]) -> None:
        """A task running ``body`` (a pointwise body's symbol, or a graph op, whose tile
        body on these regions' types it gets) on regions of the graph values."""
        if any(0 in tile.sizes for _, tile in outs):
            return  # a zero-size result needs no task
        if any(0 in tile.sizes for _, tile in ins):
            raise TaskConversionError(
                f"{self.current.name}: a task would read a zero-size region to make a "
                "non-empty result, which the task level cannot express", self.current)
        if not isinstance(body, str):
            body = self.bodies.tile(body, region_types(ins), region_types(outs))
        self.tasks.append(PlannedTask(body, [(self.storage_of(v), tile) for v, tile in ins],
                                      [(self.where[v], tile) for v, tile in outs]))

    def build(self) -> t.KernelOp:
        body = list(self.func.body.block.ops)
        if not body or not isinstance(body[-1], ReturnOp):
            raise TaskConversionError(f"@{self.func.sym_name.data} does not end in func.return")
        returned = list(body[-1].operands)
        last_use: dict[SSAValue, int] = {}
        for index, op in enumerate(body):
            for o in op.operands:
                last_use[o] = index
        # Each op result returned gets written straight into its first output.
        direct: dict[SSAValue, int] = {}
        for i, v in enumerate(returned):
            if isinstance(v.owner, Operation) and not isinstance(v.owner, g.ConstantOp):
                direct.setdefault(v, i)
        copies = [(v, i) for i, v in enumerate(returned) if direct.get(v) != i]
        for arg, value in zip(self.func.body.block.args, self.inputs, strict=True):
            self.where[arg] = Storage(value, reusable=False)
        self.check_addressable(self.func, self.func.body.block.args)

        for index, op in enumerate(body[:-1]):
            if isinstance(op, g.ConstantOp):
                continue  # materialised (or inlined) where used
            if not isinstance(op, g.GraphOp):
                raise TaskConversionError(f"convert-graph-to-task cannot lower {op.name}", op)
            self.current = op
            self.check_addressable(op, [*op.operands, *op.results])
            for r in op.results:
                self.where[r] = self.storage_for_result(r, direct)
            first = len(self.tasks)
            self.lower(op)
            self.check_results_written(op, first)
            self.record_accesses(first)
            for value in {*op.operands, *op.results}:
                storage = self.where.get(value)
                if (storage is not None and storage.reusable
                        and last_use.get(value, index) <= index and value not in returned):
                    self.free.setdefault(memref_of(value.type), []).append(storage)
        for value, i in copies:
            self.current = body[-1]
            first = len(self.tasks)
            self.where[value] = self.storage_of(value)
            target = Storage(self.outputs[i], reusable=False)
            shape = g.shape_of(value)
            body = self.bodies.pointwise([], [value], [value])
            for tile in self.grid(shape, tile_sizes(shape, self.options.elementwise_tile)):
                self.tasks.append(PlannedTask(body, [(self.where[value], tile)],
                                              [(target, tile)]))
            self.record_accesses(first)
        return self.emit()

    def check_results_written(self, op: Operation, first: int) -> None:
        """A non-empty result that no new task writes comes from reading only zero-size
        regions (a reduction over an empty dimension, a gradient summed over no rows):
        its value would be whatever the buffer held."""
        written = {id(storage) for task in self.tasks[first:] for storage, _ in task.outs}
        for result in op.results:
            if math.prod(g.shape_of(result)) and id(self.where[result]) not in written:
                raise TaskConversionError(
                    f"{op.name}: result {result.index} would be computed from zero-size "
                    "regions only, which the task level cannot express", op)

    def record_accesses(self, first: int) -> None:
        """Find the new tasks' dependencies, then index their accesses."""
        groups: dict[tuple[int, bool], AccessGroup] = {}
        for index in range(first, len(self.tasks)):
            task = self.tasks[index]
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

    # --- per-op tiling

    def lower(self, op: g.GraphOp) -> None:
        o = self.options
        if isinstance(op, g.FusedOp) or op.has_trait(g.Elementwise) or isinstance(op, g.ExpandOp):
            self.lower_elementwise(op)
        elif isinstance(op, g.MatmulOp):
            shape = g.shape_of(op.result)
            rank = len(shape)
            sizes = tile_sizes(shape, 1, {rank - 2: o.matmul_tile[0], rank - 1: o.matmul_tile[1]})
            k = g.shape_of(op.lhs)[-1]
            for tile in self.grid(shape, sizes):
                lead, (mo, no), (ms, ns) = tile.offsets[:-2], tile.offsets[-2:], tile.sizes[-2:]
                ones = (1,) * (rank - 2)
                self.plan(op, [(op.lhs, Tile((*lead, mo, 0), (*ones, ms, k))),
                                     (op.rhs, Tile((*lead, 0, no), (*ones, k, ns)))],
                          [(op.result, tile)])
        elif isinstance(op, g.RowOp | g.RowBackwardOp):
            shape = g.shape_of(op.operands[0])
            (dim,) = g.normalize_dims([op.dim.value.data], len(shape))
            rows = self.rows_per_task(shape[dim])
            for tile in self.grid(shape, tile_sizes(shape, rows, {dim: shape[dim]})):
                self.plan(op, [(v, tile) for v in op.operands], [(op.result, tile)])
        elif isinstance(op, g.LayerNormOp):
            shape = g.shape_of(op.input)
            k = op.normalized_dims.value.data
            lead = len(shape) - k
            full = {d: shape[d] for d in range(lead, len(shape))}
            rows = self.rows_per_task(math.prod(shape[lead:]))
            for tile in self.grid(shape, tile_sizes(shape, rows, full)):
                stats = Tile((*tile.offsets[:lead], *[0] * k), (*tile.sizes[:lead], *[1] * k))
                self.plan(op, [(op.input, tile), (op.weight, whole(shape[lead:])),
                               (op.bias, whole(shape[lead:]))],
                          [(op.output, tile), (op.mean, stats), (op.rstd, stats)])
        elif isinstance(op, g.ReduceOp):
            self.lower_reduce(op)
        elif isinstance(op, g.PermuteOp):
            shape = g.shape_of(op.result)
            perm = op.perm.get_values()
            for tile in self.grid(shape, tile_sizes(shape, o.elementwise_tile)):
                offsets, sizes = [0] * len(perm), [0] * len(perm)
                for i, p in enumerate(perm):
                    offsets[p], sizes[p] = tile.offsets[i], tile.sizes[i]
                self.plan(op, [(op.input, Tile(tuple(offsets), tuple(sizes)))],
                          [(op.result, tile)])
        elif isinstance(op, g.ConcatOp):  # copies of each input into its slab
            shape = g.shape_of(op.result)
            (dim,) = g.normalize_dims([op.dim.value.data], len(shape))
            start = 0
            for value in op.inputs:
                part = g.shape_of(value)
                body = self.bodies.pointwise([], [value], [value])
                for tile in self.grid(part, tile_sizes(part, o.elementwise_tile)):
                    offsets = list(tile.offsets)
                    offsets[dim] += start
                    self.plan(body, [(value, tile)],
                              [(op.result, Tile(tuple(offsets), tile.sizes))])
                start += part[dim]
        elif isinstance(op, g.ReshapeOp):
            self.lower_reshape(op)
        elif isinstance(op, g.SliceOp):
            shape = g.shape_of(op.result)
            (dim,) = g.normalize_dims([op.dim.value.data], len(shape))
            full = g.shape_of(op.input)[dim]
            budget = o.elementwise_tile // max(shape[dim], 1)  # elements, not rows
            for tile in self.grid(shape, tile_sizes(shape, budget, {dim: shape[dim]})):
                region = Tile((*tile.offsets[:dim], 0, *tile.offsets[dim + 1:]),
                              (*tile.sizes[:dim], full, *tile.sizes[dim + 1:]))
                self.plan(op, [(op.input, region)], [(op.result, tile)])
        elif isinstance(op, g.EmbeddingOp):
            shape = g.shape_of(op.result)
            rank = len(shape)
            rows = self.rows_per_task(shape[-1])
            for tile in self.grid(shape, tile_sizes(shape, rows, {rank - 1: shape[-1]})):
                self.plan(op, [(op.weight, whole(g.shape_of(op.weight))),
                               (op.indices, Tile(tile.offsets[:-1], tile.sizes[:-1]))],
                          [(op.result, tile)])
        elif isinstance(op, g.CollectiveOp):
            self.lower_collective(op)
        else:  # one task over whole tensors
            self.plan(op, [(v, whole(g.shape_of(v))) for v in op.operands],
                      [(r, whole(g.shape_of(r))) for r in op.results])

    def lower_collective(self, op: g.CollectiveOp) -> None:
        """Tiles that each wait only for the tasks writing what they read (MPK's
        fine-grained overlap of communication with computation): an all-reduce in the
        matmul's output tiles (rank >= 2) or elementwise ones; an all-gather or a
        reduce-scatter, which move rows between ranks, in column bands of all rows."""
        o = self.options
        if not o.collectives:
            raise TaskConversionError(f"{op.name}: this target has no collective tasks "
                                      "(convert-graph-to-task{collectives=false})", op)
        if not o.tile_collectives:
            self.plan(op, [(op.input, whole(g.shape_of(op.input)))],
                      [(op.result, whole(g.shape_of(op.result)))])
            return
        shape = g.shape_of(op.input)
        if isinstance(op, g.AllReduceOp):
            rank = len(shape)
            sizes = (tile_sizes(shape, 1, {rank - 2: o.matmul_tile[0],
                                           rank - 1: o.matmul_tile[1]}) if rank >= 2
                     else tile_sizes(shape, o.elementwise_tile))
            for tile in self.grid(shape, sizes):
                self.plan(op, [(op.input, tile)], [(op.result, tile)])
            return
        out = g.shape_of(op.result)
        budget = o.elementwise_tile // max(shape[0], out[0], 1)
        for tile in self.grid(shape, tile_sizes(shape, budget, {0: shape[0]})):
            self.plan(op, [(op.input, tile)],
                      [(op.result, Tile(tile.offsets, (out[0], *tile.sizes[1:])))])

    def rows_per_task(self, row: int) -> int:
        """Rows per task of an op whose rows hold ``row`` elements each (a reduction's
        row: the elements one output reduces): ``row_tile``, or more when rows are
        short, so that a task holds about ``elementwise_tile`` elements: tasks of a few
        short rows would cost more to schedule than to compute."""
        return max(self.options.row_tile, self.options.elementwise_tile // max(row, 1))

    def lower_elementwise(self, op: g.GraphOp) -> None:
        if isinstance(op, g.FusedOp):
            inner = list(op.body.block.ops)[:-1]
            # Constants with a shape are read from task.constant buffers like inputs.
            tables = [c.result for c in inner
                      if isinstance(c, g.ConstantOp) and not is_scalar_constant(c.result)]
            inputs, outputs = [*op.inputs, *tables], list(op.outputs)
            args = [*op.body.block.args, *tables]
            terminator = op.body.block.last_op
            assert terminator is not None
            body = self.bodies.pointwise(inner, args, list(terminator.operands))
        else:
            inputs = list(dict.fromkeys(v for v in op.operands if not is_scalar_constant(v)))
            outputs = list(op.results)
            ops = [] if isinstance(op, g.ExpandOp) else [op]
            yielded = [op.operands[0]] if isinstance(op, g.ExpandOp) else outputs
            body = self.bodies.pointwise(ops, inputs, yielded)
        shape = g.shape_of(outputs[0])
        if any(g.shape_of(r) != shape for r in outputs):
            raise TaskConversionError(f"{op.name}: outputs of different shapes")
        for tile in self.grid(shape, tile_sizes(shape, self.options.elementwise_tile)):
            self.plan(body, [(v, broadcast_region(tile, g.shape_of(v))) for v in inputs],
                      [(r, tile) for r in outputs])

    def lower_reshape(self, op: g.ReshapeOp) -> None:
        """Bands along the first dimension of size > 1 of the output whose elements are
        whole "rows" along the same dimension of the input: a band of ``r`` output rows
        is ``r * inner_out`` contiguous elements, so ``r`` must be a multiple of
        ``inner_in / gcd(inner_in, inner_out)``."""
        src, dst = g.shape_of(op.input), g.shape_of(op.result)
        a_in = next((d for d, n in enumerate(src) if n > 1), None)
        a_out = next((d for d, n in enumerate(dst) if n > 1), None)
        if a_in is None or a_out is None:
            self.plan(op, [(op.input, whole(src))], [(op.result, whole(dst))])
            return
        inner_in, inner_out = math.prod(src[a_in + 1:]), math.prod(dst[a_out + 1:])
        step = inner_in // math.gcd(inner_in, inner_out)
        rows = max(step, self.options.elementwise_tile // inner_out // step * step)

        def band(shape: Shape, axis: int, start: int, count: int) -> Tile:
            offsets, sizes = [0] * len(shape), list(shape)
            offsets[axis], sizes[axis] = start, count
            return Tile(tuple(offsets), tuple(sizes))

        self.reserve(-(-dst[a_out] // rows))
        for start in range(0, dst[a_out], rows):
            count = min(rows, dst[a_out] - start)
            first, last = start * inner_out // inner_in, (start + count) * inner_out // inner_in
            self.plan(op, [(op.input, band(src, a_in, first, last - first))],
                      [(op.result, band(dst, a_out, start, count))])

    def lower_reduce(self, op: g.ReduceOp) -> None:
        in_shape = g.shape_of(op.input)
        dims = set(g.normalize_dims(op.dims.get_values(), len(in_shape)))
        keep = op.keepdim.value.data
        out_shape = g.shape_of(op.result)
        # Which input dimension each output dimension indexes.
        kept = [d for d in range(len(in_shape)) if keep or d not in dims]
        fixed = {i: 1 for i, d in enumerate(kept) if d in dims}
        rows = self.rows_per_task(math.prod(in_shape[d] for d in dims))
        for tile in self.grid(out_shape, tile_sizes(out_shape, rows, fixed)):
            offsets, sizes = [0] * len(in_shape), list(in_shape)
            for i, d in enumerate(kept):
                if d not in dims:
                    offsets[d], sizes[d] = tile.offsets[i], tile.sizes[i]
            self.plan(op, [(op.input, Tile(tuple(offsets), tuple(sizes)))], [(op.result, tile)])

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
            ops.append(t.TaskOp(task.body, [(s.value, tile) for s, tile in task.ins],
                                [(s.value, tile) for s, tile in task.outs], waits,
                                results[index]))
        ops.append(t.ReturnOp())
        self.block.add_ops(ops)
        ftype = self.func.function_type
        kernel = t.KernelOp(self.func.sym_name.data, [memref_of(a) for a in ftype.inputs.data],
                            [memref_of(r) for r in ftype.outputs.data], Region(self.block))
        kernel.attributes["workers"] = IntegerAttr(self.options.workers, i64)
        for arg, old in zip(self.block.args, self.func.body.block.args, strict=False):
            arg.name_hint = old.name_hint
        return kernel
