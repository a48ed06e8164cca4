"""How a task's regions must be laid out for the graph op its body computes.

The megakernel simulator runs a tile body's graph op on the regions as they are; the
Triton descriptors and convert-task-to-mncore address the buffers directly and take the
regions to be laid out as convert-graph-to-task tiles each op: a reduction reads whole
reduced dimensions at its output tile's rows, a row op whole rows, a matmul one matrix
per operand, and ops it never tiles (convolutions, gathers, ...) whole buffers. The task
verifier checks these rules here, keyed by op class, so a task the targets would
misread is an error at its position, not a crash or a wrong result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import OpVerifyException
from mncore_ir.dialects.task_regions import (
    Accesses,
    RegionTypes,
    Tile,
    buffer_shape,
    element_type,
)


class _Task(Protocol):  # task.task, without importing the dialect this module serves
    @property
    def body_name(self) -> str: ...


class _Body(Protocol):  # task.body
    @property
    def arg_types(self) -> list[Attribute]: ...
    @property
    def yield_types(self) -> list[Attribute]: ...
    def tile_op(self) -> g.GraphOp | None: ...


Rule = Callable[[g.GraphOp, Accesses, Accesses], None]


def verify_layout(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """Raise when the regions of a task whose tile body computes ``op`` are not laid
    out as the targets read them (elementwise ops take any regions of their shapes)."""
    rule = _TILED.get(type(op))
    if rule is not None:
        rule(op, reads, writes)
    elif not op.has_trait(g.Elementwise):
        for what, pairs in (("input", reads), ("output", writes)):
            for i, (value, tile) in enumerate(pairs):
                _need_whole(value, tile, range(len(tile.sizes)), f"{op.name} {what} {i}",
                            "the targets run this op over whole buffers")


def body_use_error(name: str, arg_types: Sequence[Attribute], yield_types: Sequence[Attribute],
                   pointwise: bool, reads: Accesses, writes: Accesses, ins: RegionTypes,
                   outs: RegionTypes) -> str | None:
    """Why a task with regions ``reads`` and ``writes`` (of types ``ins`` and ``outs``)
    cannot run body ``@name`` (``None`` when it can): a pointwise body takes and yields
    a point of each region, a tile body the regions themselves."""
    if pointwise:
        try:
            verify_pointwise_regions(reads, writes)
        except VerifyException as error:
            return f"task.task @{name}: {error}"
    wanted = [[TensorType(e, [] if pointwise else sizes) for e, sizes in regions]
              for regions in (ins, outs)]
    for what, types, want in (("takes", arg_types, wanted[0]),
                              ("yields", yield_types, wanted[1])):
        if list(types) != want:
            return (f"task.body @{name} {what} ({', '.join(map(str, types))}) but the task "
                    f"needs ({', '.join(map(str, want))})")
    return None


def verify_pointwise_regions(reads: Accesses, writes: Accesses) -> None:
    """A pointwise body runs over one iteration space, the first output's tile: every
    output tile has its sizes, every input region broadcasts to them (size 1 or equal,
    right-aligned)."""
    if not writes:
        raise VerifyException("a pointwise task writes at least one output")
    space = writes[0][1].sizes
    for i, (_, tile) in enumerate(writes[1:], 1):
        if tile.sizes != space:
            raise VerifyException(f"pointwise task: output {i} region [{tile}] is not the "
                                  f"size of output 0's ({'x'.join(map(str, space))})")
    for i, (_, region) in enumerate(reads):
        lead = len(space) - len(region.sizes)
        if lead < 0 or any(s not in (1, space[lead + d]) for d, s in enumerate(region.sizes)):
            raise VerifyException(
                f"pointwise task: input {i} region [{region}] does not broadcast to the "
                f"output tile ({'x'.join(map(str, space))})")


def _need_whole(value: SSAValue, tile: Tile, dims: Iterable[int], what: str,
                why: str) -> None:
    shape = buffer_shape(value)
    for d in dims:
        if tile.offsets[d] != 0 or tile.sizes[d] != shape[d]:
            raise VerifyException(f"task.task {what}: region [{tile}] does not cover "
                                  f"dimension {d} of its buffer ({shape[d]}): {why}")


def _matmul_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """The kernels address one matrix per operand from its region's origin."""
    perm = op.rhs_perm.get_values() if isinstance(op, g.MatmulPermutedOp) else None
    for what, pairs in (("input", reads), ("output", writes)):
        for i, (_, tile) in enumerate(pairs):
            sizes = tile.sizes
            if perm is not None and what == "input" and i == 1:  # as the matmul reads it
                sizes = tuple(sizes[p] for p in perm)
            if any(s != 1 for s in sizes[:-2]):
                raise VerifyException(f"task.task {op.name} {what} {i}: region [{tile}] "
                                      "spans more than one matrix (leading sizes must be 1)")


def _reduction_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """Reduced dimensions whole (or, with ``keepdim``, a chunk: a split reduction's
    partial result); each kept one is the output tile's."""
    assert isinstance(op, g.ReduceOp)
    ((value, region),) = reads
    ((_, tile),) = writes
    rank = len(region.sizes)
    dims = sorted(set(g.normalize_dims(op.dims.get_values(), rank)))
    keepdim = bool(op.keepdim.value.data)
    if not keepdim:
        _need_whole(value, region, dims, f"{op.name} input 0",
                    "a task reduces whole dimensions")
    kept = [d for d in range(rank) if keepdim or d not in dims]
    for i, d in enumerate(kept):
        if d not in dims and region.offsets[d] != tile.offsets[i]:
            raise VerifyException(
                f"task.task {op.name}: input region [{region}] starts at {region.offsets[d]} "
                f"in dimension {d}, its output tile [{tile}] at {tile.offsets[i]}")


def _row_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """Rows run whole along ``dim`` (layer norm: along the normalized dimensions)."""
    if isinstance(op, g.LayerNormOp):
        pairs = reads[:1]
        rank = len(pairs[0][1].sizes)
        dims = list(range(rank - op.normalized_dims.value.data, rank))
    else:
        assert isinstance(op, g.RowOp | g.RowBackwardOp)
        pairs = reads
        dims = g.normalize_dims([op.dim.value.data], len(pairs[0][1].sizes))
    for i, (value, tile) in enumerate([*pairs, *writes[:1]]):
        _need_whole(value, tile, dims, f"{op.name} operand {i}", "a task holds whole rows")


def _slice_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """``start`` counts from the buffer's first element along ``dim``."""
    assert isinstance(op, g.SliceOp)
    ((value, region),) = reads
    _need_whole(value, region, g.normalize_dims([op.dim.value.data], len(region.sizes)),
                f"{op.name} input 0", "start and step index the whole dimension")


def _reshape_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """Both regions are runs of consecutive elements: the task is a flat copy."""
    for what, (value, tile) in (("input", reads[0]), ("output", writes[0])):
        rank = len(tile.sizes)
        first = next((d for d, s in enumerate(tile.sizes) if s != 1), rank)
        _need_whole(value, tile, range(first + 1, rank), f"{op.name} {what} 0",
                    "a reshape task copies a run of consecutive elements")


def _embedding_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """The whole table; the rows of the output tile are those of its indices."""
    (weight, weight_tile), (_, index_tile) = reads
    ((out, tile),) = writes
    _need_whole(weight, weight_tile, range(2), f"{op.name} input 0", "rows are looked up "
                "in the whole table")
    _need_whole(out, tile, [len(tile.sizes) - 1], f"{op.name} output 0", "a task writes "
                "whole rows")
    if index_tile.offsets != tile.offsets[:-1]:
        raise VerifyException(f"task.task {op.name}: index region [{index_tile}] is not at "
                              f"the rows of the output tile [{tile}]")


def _collective_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """An all-reduce combines the ranks' values point by point: any matching regions;
    an all-gather or a reduce-scatter moves rows between ranks: all of them, at the
    same columns of input and output."""
    if isinstance(op, g.AllReduceOp):
        return
    ((value, region),) = reads
    ((out, tile),) = writes
    _need_whole(value, region, [0], f"{op.name} input 0", "ranks exchange whole rows")
    _need_whole(out, tile, [0], f"{op.name} output 0", "ranks exchange whole rows")
    if region.offsets[1:] != tile.offsets[1:]:
        raise VerifyException(f"task.task {op.name}: input region [{region}] and output "
                              f"region [{tile}] are at different columns")


def _any_regions(op: g.GraphOp, reads: Accesses, writes: Accesses) -> None:
    """A permute task reads the region its output tile maps back to, wherever it is."""


_TILED: dict[type[g.GraphOp], Rule] = {
    **dict.fromkeys(g.MATMULS, _matmul_regions), g.SumOp: _reduction_regions,
    g.MeanOp: _reduction_regions,
    g.AmaxOp: _reduction_regions, g.SoftmaxOp: _row_regions, g.LogSoftmaxOp: _row_regions,
    g.SoftmaxBackwardOp: _row_regions, g.LogSoftmaxBackwardOp: _row_regions,
    g.LayerNormOp: _row_regions, g.SliceOp: _slice_regions, g.ReshapeOp: _reshape_regions,
    g.EmbeddingOp: _embedding_regions, g.PermuteOp: _any_regions,
    **dict.fromkeys(g.COLLECTIVES, _collective_regions),
}
"""Ops convert-graph-to-task tiles, with what their regions must satisfy beyond the
op's shapes; other ops that are not elementwise run over whole buffers."""


def verify_task_bodies(tasks: Sequence[_Task], accesses: Sequence[tuple[Accesses, Accesses]],
                        bodies: Mapping[str, _Body]) -> None:
    """Each task's body takes and yields its regions, laid out as the targets read them.
    What depends only on the body and the regions' types is checked once per
    combination (the tiles of one operator share it); the layout, per task."""
    checked: dict[tuple[str, RegionTypes, RegionTypes], tuple[str | None, g.GraphOp | None]] = {}
    for task, (reads, writes) in zip(tasks, accesses, strict=True):
        key = (task.body_name, tuple((element_type(v), r.sizes) for v, r in reads),
               tuple((element_type(v), r.sizes) for v, r in writes))
        found = checked.get(key)
        if found is None:
            body = bodies.get(task.body_name)
            op = body.tile_op() if body is not None else None
            found = checked[key] = (
                f"task.task refers to @{key[0]}, which is no task.body of this kernel"
                if body is None else body_use_error(key[0], body.arg_types, body.yield_types,
                                                    op is None, reads, writes, key[1], key[2]),
                op)
        error, op = found
        try:
            if error is not None:
                raise VerifyException(error)
            if op is not None:
                verify_layout(op, reads, writes)
        except VerifyException as failure:
            raise OpVerifyException(cast(Operation, task), str(failure)) from None
