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
from collections.abc import Iterable
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import BoolAttr, MemRefType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.task import Tile
from mncore_ir.dialects.values import paused_gc
from mncore_ir.transforms.convert_graph_to_task_bodies import is_scalar_constant
from mncore_ir.transforms.convert_graph_to_task_kernel import (
    PlannedTask,
    Storage,
    TaskConversionError,
    TaskPlanner,
    region_types,
)
from mncore_ir.transforms.convert_graph_to_task_tiles import (
    Shape,
    broadcast_region,
    grid,
    k_slabs,
    permuted_back,
    tile_sizes,
    whole,
)

__all__ = ["ConvertGraphToTaskPass", "KernelBuilder", "TaskConversionError"]

Values = list[SSAValue]


def without_leading_ones(shape: Shape) -> Shape:
    lead = next((i for i, n in enumerate(shape) if n != 1), len(shape))
    return tuple(shape[lead:])


def unit_reshaped(tile: Tile, source: Shape, shape: Shape) -> Tile:
    """``tile`` of a tensor of ``source`` shape, reshaped to ``shape`` by adding or
    dropping leading unit dimensions only: the same offsets and sizes along the other
    ones (so the tile's regions still broadcast onto it)."""
    spans = iter([(o, n) for o, n, d in zip(tile.offsets, tile.sizes, source, strict=True)
                  if d != 1])
    placed = [next(spans) if d != 1 else (0, 1) for d in shape]
    return Tile(tuple(o for o, _ in placed), tuple(n for _, n in placed))


def pointwise_parts(op: g.GraphOp) -> tuple[list[Operation], Values, Values, Values, Values]:
    """An elementwise op's or fused chain's pointwise body, as (ops, args, inputs,
    yielded, outputs): the ops on the values ``args``, which the tasks read from
    ``inputs`` (constants with a shape are read from ``task.constant`` buffers like
    inputs), yielding ``yielded`` into ``outputs``."""
    if isinstance(op, g.FusedOp):
        inner = list(op.body.block.ops)[:-1]
        tables = [c.result for c in inner
                  if isinstance(c, g.ConstantOp) and not is_scalar_constant(c.result)]
        terminator = op.body.block.last_op
        assert terminator is not None
        return (inner, [*op.body.block.args, *tables], [*op.inputs, *tables],
                list(terminator.operands), list(op.outputs))
    inputs = list(dict.fromkeys(v for v in op.operands if not is_scalar_constant(v)))
    if isinstance(op, g.ExpandOp):
        return [], inputs, inputs, [op.operands[0]], list(op.results)
    return [op], inputs, inputs, list(op.results), list(op.results)


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

    permuted_reads: bool = True
    """A matmul whose right operand is a permute (the transposed weight of
    ``F.linear``, a KV cache's keys) reads the permute's input where it lies, in
    ``graph.matmul_permuted`` tiles, instead of waiting for a copy of it; false for
    targets without that tile kernel."""

    split_k: int = 64
    """When a matmul's output tiles would leave over half of the workers idle (a
    matrix-vector product in decoding), its contracted dimension is cut into slabs of
    at least this many, each a task writing a partial product, and a pointwise task per
    tile sums them (MPK's split-K); 0: never."""

    fill_workers: bool = True
    """Cut ops whose tasks would leave over half of the workers idle (decoding at
    batch 1) finer: long rows of row ops and reductions fewer to a task, down to one;
    a sum or max along one long dimension (an argmax over a vocabulary) into chunks of
    at least ``elementwise_tile``, reduced each, then together."""

    in_place_index_put: bool = True
    """An index_put is a tiled copy of its input into its result and one task writing
    the values there in place (reading the buffer it writes); false: one task over
    whole tensors."""

    target: str = "gpu"
    """What consumes the kernel: ``gpu`` (the megakernel simulator, the Triton
    megakernel: every tiling above) or ``mncore`` (convert-task-to-mncore, which has no
    split-K, split-reduction or in-place tiles, and reads through transposes only)."""

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
        if self.split_k < 0:
            raise TaskConversionError("convert-graph-to-task: split_k must be >= 0 (0: never "
                                      "split)")
        if self.target not in ("gpu", "mncore"):
            raise TaskConversionError(f"convert-graph-to-task: target {self.target!r} is not "
                                      "gpu or mncore")
        options = self if self.target == "gpu" else replace(
            self, split_k=0, fill_workers=False, in_place_index_put=False)
        for func in [o for o in op.body.block.ops if isinstance(o, FuncOp)]:
            typ = next((t for t in (*func.function_type.inputs, *func.function_type.outputs)
                        if not isinstance(t, TensorType)), None)
            if typ is not None:
                raise TaskConversionError(
                    f"convert-graph-to-task: @{func.sym_name.data} takes or returns {typ}; "
                    "a graph function's arguments and results are tensors", func)
            with paused_gc():
                kernel = KernelBuilder(options, func).build()
            Rewriter.replace_op(func, kernel)


class KernelBuilder(TaskPlanner):
    """How each graph op is cut into tasks."""

    options: ConvertGraphToTaskPass

    def lower(self, op: g.GraphOp) -> None:
        o = self.options
        if isinstance(op, g.FusedOp) or op.has_trait(g.Elementwise) or isinstance(op, g.ExpandOp):
            self.lower_elementwise(op)
        elif isinstance(op, g.MatmulOp | g.MatmulPermutedOp):
            self.lower_matmul(op)
        elif isinstance(op, g.RowOp | g.RowBackwardOp):
            shape = g.shape_of(op.operands[0])
            (dim,) = g.normalize_dims([op.dim.value.data], len(shape))
            rows = self.rows_per_task(shape[dim], math.prod(shape) // max(shape[dim], 1))
            for tile in self.grid(shape, tile_sizes(shape, rows, {dim: shape[dim]})):
                self.plan(op, [(v, tile) for v in op.operands], [(op.result, tile)])
        elif isinstance(op, g.LayerNormOp):
            shape = g.shape_of(op.input)
            k = op.normalized_dims.value.data
            lead = len(shape) - k
            full = {d: shape[d] for d in range(lead, len(shape))}
            rows = self.rows_per_task(math.prod(shape[lead:]), math.prod(shape[:lead]))
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
                self.plan(op, [(op.input, permuted_back(tile, perm))], [(op.result, tile)])
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
            rows = self.rows_per_task(shape[-1], math.prod(shape[:-1]))
            for tile in self.grid(shape, tile_sizes(shape, rows, {rank - 1: shape[-1]})):
                self.plan(op, [(op.weight, whole(g.shape_of(op.weight))),
                               (op.indices, Tile(tile.offsets[:-1], tile.sizes[:-1]))],
                          [(op.result, tile)])
        elif isinstance(op, g.CollectiveOp):
            self.lower_collective(op)
        elif isinstance(op, g.IndexPutOp) and o.in_place_index_put:
            self.lower_index_put(op)
        else:  # one task over whole tensors
            self.plan(op, [(v, whole(g.shape_of(v))) for v in op.operands],
                      [(r, whole(g.shape_of(r))) for r in op.results])

    def lower_index_put(self, op: g.IndexPutOp) -> None:
        """The input copied into the result in elementwise tiles (spread over the
        workers), then one task writing the values into the result in place: of a KV
        cache's update, only the copy grows with the cache."""
        shape = g.shape_of(op.result)
        copy = self.bodies.pointwise([], [op.input], [op.input])
        for tile in self.grid(shape, tile_sizes(shape, self.options.elementwise_tile)):
            self.plan(copy, [(op.input, tile)], [(op.result, tile)])
        self.record_accesses()
        self.plan(op, [(v, whole(g.shape_of(v))) for v in (op.result, op.indices, op.values)],
                  [(op.result, whole(shape))])

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

    def lower_matmul(self, op: g.MatmulOp | g.MatmulPermutedOp) -> None:
        """``matmul_tile`` output tiles, each reading a row band of the left operand and
        a column band of the right one; a right operand that is a transpose read where
        it lies (``transposed_reads``), as a ``graph.matmul_permuted`` of the input
        reads its own; the contracted dimension cut into slabs, each a task writing a
        partial product that a pointwise task sums, when the output tiles are too few to
        fill the workers (``split_k``)."""
        o = self.options
        shape = g.shape_of(op.result)
        rank = len(shape)
        sizes = tile_sizes(shape, 1, {rank - 2: o.matmul_tile[0], rank - 1: o.matmul_tile[1]})
        tiles = math.prod(-(-n // s) for n, s in zip(shape, sizes, strict=True))
        slabs = k_slabs(g.shape_of(op.lhs)[-1], tiles, o.workers, o.split_k)
        rhs: SSAValue = op.rhs
        perm = tuple(range(rank))
        body: g.GraphOp = op
        permute = rhs.owner
        if isinstance(op, g.MatmulPermutedOp):  # one tile body per matrix, as below
            perm = op.rhs_perm.get_values()
        elif isinstance(permute, g.PermuteOp) and permute in self.permuted:
            rhs, perm = permute.input, permute.perm.get_values()
            body = g.MatmulPermutedOp.create(  # a prototype: the tile bodies' class and perm
                result_types=[op.result.type], properties={"rhs_perm": permute.perm})
        result = self.where[op.result]
        split = len(slabs) > 1
        # Partial products stacked along the rows: slab s's tile is rows s*m + mo.
        m = shape[-2]
        partial = self.scratch(MemRefType(g.element_type_of(op.result),
                                          (*shape[:-2], len(slabs) * m, shape[-1])),
                               f"{op.result.name_hint or 'matmul'}_partial") if split else result
        self.reserve(tiles * (len(slabs) + split))
        for s, (k0, ks) in enumerate(slabs):
            for tile in grid(shape, sizes):
                lead, (mo, no), (ms, ns) = tile.offsets[:-2], tile.offsets[-2:], tile.sizes[-2:]
                ones = (1,) * (rank - 2)
                right = permuted_back(Tile((*lead, k0, no), (*ones, ks, ns)), perm)
                ins = [(op.lhs, Tile((*lead, mo, k0), (*ones, ms, ks))), (rhs, right)]
                name = self.bodies.tile(body, region_types(ins), region_types([(op.result,
                                                                                 tile)]))
                out = Tile((*lead, s * m + mo, no), tile.sizes) if split else tile
                if self.needed([r for _, r in ins], [out]):
                    self.tasks.append(PlannedTask(name, [(self.storage_of(v), r)
                                                         for v, r in ins], [(partial, out)]))
        if split:  # the sums, after their partial products
            self.record_accesses()
            self.sum_partials(op, partial, len(slabs), grid(shape, sizes))
            self.free.setdefault(partial.memref, []).append(partial)

    def sum_partials(self, op: g.MatmulOp, partial: Storage, count: int,
                     tiles: Iterable[Tile]) -> None:
        """Pointwise tasks adding each tile's ``count`` partial products, computing in
        the same tasks the elementwise op that alone reads the product, directly or
        through a reshape that only adds or drops leading unit dimensions (a bias add,
        an activation, a residual add at batch 1: the matmul's epilogue), which is then
        not lowered on its own."""
        found = self.epilogue(op)
        product: SSAValue = op.result
        if found is None:
            ops, args, inputs, yielded, outputs = [], [product], [product], [product], [
                product]
        else:
            user, view = found
            if view is not None:
                self.absorbed.add(view)
                product = view.result
            ops, args, inputs, yielded, outputs = pointwise_parts(user)
            self.absorbed.add(user)
            self.check_addressable(user, [*user.operands, *user.results])
            for r in user.results:
                self.where[r] = self.storage_for_result(r, self.direct)
        summed = [a for a, v in zip(args, inputs, strict=True) if v is product]
        reads = [v for v in inputs if v is not product]
        body = self.bodies.pointwise(ops, args, yielded, summed, count)
        m = g.shape_of(op.result)[-2]
        source, shape = g.shape_of(op.result), g.shape_of(product)
        for tile in tiles:
            parts = [Tile((*tile.offsets[:-2], s * m + tile.offsets[-2], tile.offsets[-1]),
                          tile.sizes) for s in range(count)]
            at = unit_reshaped(tile, source, shape)
            self.tasks.append(PlannedTask(
                body, [*((partial, p) for p in parts),
                       *((self.storage_of(v), broadcast_region(at, g.shape_of(v)))
                         for v in reads)],
                [(self.where[r], at) for r in outputs]))

    def epilogue(self, op: g.MatmulOp) -> tuple[g.GraphOp, g.ReshapeOp | None] | None:
        """The elementwise op (or fused chain) that is the only reader of ``op``'s
        product, of its shape, directly or through a reshape that only adds or drops
        leading unit dimensions, whose other operands exist before ``op``; and that
        reshape."""
        product, view = op.result, None
        user = self.sole_reader(product)
        if isinstance(user, g.ReshapeOp) and (without_leading_ones(g.shape_of(user.result))
                                              == without_leading_ones(g.shape_of(product))):
            product, view = user.result, user
            user = self.sole_reader(product)
        if user is None:
            return None
        if not (isinstance(user, g.FusedOp) or (isinstance(user, g.GraphOp)
                and user.has_trait(g.Elementwise))):
            return None
        if any(g.shape_of(r) != g.shape_of(product) for r in user.results):
            return None
        here = self.position[op]
        for value in user.operands:
            owner = value.owner
            if (value is not product and isinstance(owner, Operation)
                    and self.position.get(owner, here) >= here):
                return None
        return user, view

    def sole_reader(self, value: SSAValue) -> Operation | None:
        """The one op reading ``value``, which the function does not return."""
        users = {use.operation for use in value.uses}
        return users.pop() if len(users) == 1 and value not in self.returned else None

    def rows_per_task(self, row: int, rows: int) -> int:
        """Rows per task of an op with ``rows`` rows of ``row`` elements each (a
        reduction's row: the elements one output reduces): ``row_tile``, or more when
        rows are short, so that a task holds about ``elementwise_tile`` elements: tasks
        of a few short rows would cost more to schedule than to compute. Long rows that
        would make too few tasks to fill half of the workers (attention over a KV cache
        at batch 1) go fewer to a task, down to one per worker."""
        o = self.options
        wide = max(o.row_tile, o.elementwise_tile // max(row, 1))
        if o.fill_workers and row * wide > o.elementwise_tile and 2 * -(-rows // wide) <= o.workers:
            return max(1, min(o.elementwise_tile // max(row, 1), -(-rows // o.workers)))
        return wide

    def lower_elementwise(self, op: g.GraphOp) -> None:
        ops, args, inputs, yielded, outputs = pointwise_parts(op)
        body = self.bodies.pointwise(ops, args, yielded)
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
        reduced = math.prod(in_shape[d] for d in dims)
        rows = self.rows_per_task(reduced, math.prod(out_shape))
        sizes = tile_sizes(out_shape, rows, fixed)
        tiles = math.prod(-(-n // s) for n, s in zip(out_shape, sizes, strict=True))
        chunks = (k_slabs(reduced, tiles, self.options.workers, self.options.elementwise_tile)
                  if self.options.fill_workers and len(dims) == 1
                  and not isinstance(op, g.MeanOp) else [(0, reduced)])
        (dim,) = dims if len(chunks) > 1 else (None,)
        partial = None
        if dim is not None:  # partial reductions of chunks, then their reduction
            part_shape = tuple(len(chunks) if d == dim else n for d, n in enumerate(in_shape))
            partial = self.scratch(MemRefType(g.element_type_of(op.result), part_shape),
                                   f"{op.result.name_hint or 'reduce'}_partial")
            first = type(op).create(result_types=[op.result.type], properties={
                **op.properties, "keepdim": BoolAttr.from_bool(True)})
        for c, (start, count) in enumerate(chunks):
            for tile in self.grid(out_shape, sizes):
                offsets, extents = [0] * len(in_shape), list(in_shape)
                for i, d in enumerate(kept):
                    if d not in dims:
                        offsets[d], extents[d] = tile.offsets[i], tile.sizes[i]
                if partial is None:
                    self.plan(op, [(op.input, Tile(tuple(offsets), tuple(extents)))],
                              [(op.result, tile)])
                    continue
                offsets[dim], extents[dim] = start, count
                ins = [(op.input, Tile(tuple(offsets), tuple(extents)))]
                offsets[dim], extents[dim] = c, 1
                out = Tile(tuple(offsets), tuple(extents))
                if not self.needed([ins[0][1]], [out]):
                    continue
                self.tasks.append(PlannedTask(
                    self.bodies.tile(first, region_types(ins), ((g.element_type_of(op.result),
                                                                 out.sizes),)),
                    [(self.storage_of(op.input), ins[0][1])], [(partial, out)]))
        if partial is not None:
            self.record_accesses()
            for tile in self.grid(out_shape, sizes):
                offsets, extents = [0] * len(in_shape), list(part_shape)
                for i, d in enumerate(kept):
                    if d not in dims:
                        offsets[d], extents[d] = tile.offsets[i], tile.sizes[i]
                region = Tile(tuple(offsets), tuple(extents))
                self.tasks.append(PlannedTask(
                    self.bodies.tile(op, ((g.element_type_of(op.result), region.sizes),),
                                     region_types([(op.result, tile)])),
                    [(partial, region)], [(self.where[op.result], tile)]))
            self.free.setdefault(partial.memref, []).append(partial)
