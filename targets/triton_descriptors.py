"""Where a task's tiles are, for the Triton megakernel: the arena layout and each task's
descriptor (an iteration space of 6 sizes; per operand the byte offset of its tile's
origin in the arena and 6 element strides; extras some task types need), built per op
class as strided views of the kernel's buffers, with the op's properties read through
its typed accessors."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.task_regions import buffer_shape
from mncore_ir.dialects.values import numpy_dtype

RANK = 6  # iteration spaces and strides have this many dimensions
ALIGN = 16


class TritonTargetError(Exception):
    """A kernel the Triton target cannot generate code for; ``op`` is the op to blame,
    when there is one (tools and the runtime point at its source position)."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


#: numpy dtype name -> (Triton pointer element type, Triton value type, torch dtype).
TYPES = {
    "float32": ("tl.float32", "tl.float32", "torch.float32"),
    "float64": ("tl.float64", "tl.float64", "torch.float64"),
    "int64": ("tl.int64", "tl.int64", "torch.int64"),
    "int32": ("tl.int32", "tl.int32", "torch.int32"),
    "uint8": ("tl.uint8", "tl.uint8", "torch.uint8"),
    "bool": ("tl.int8", "tl.int1", "torch.bool"),  # stored as bytes
}


def dtype_of(value: SSAValue | Attribute) -> np.dtype:
    """The numpy dtype of a buffer, a tensor, or their type."""
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, MemRefType | TensorType)
    return numpy_dtype(typ.get_element_type())


def strides_of(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def pow2(n: int, low: int = 1) -> int:
    return max(low, 1 << max(0, math.ceil(math.log2(max(n, 1)))))


# --------------------------------------------------------------------------- descriptors


@dataclass
class Operand:
    """A tile as seen from an iteration space: origin (bytes into the arena) and one
    element stride per space dimension."""

    offset: int
    strides: list[int]
    dtype: np.dtype


@dataclass
class Descriptor:
    sizes: list[int]
    operands: list[Operand]
    extras: list[int] = field(default_factory=list)

    def coalesced(self) -> Descriptor:
        """The same points with adjacent dimensions merged where every operand steps
        through them as through one (a stride is the next one's times its size) and
        size-1 dimensions dropped: a contiguous tile becomes one dimension, whose
        addresses device code computes with one multiplication instead of five
        divisions. Only for device code that reads the space as one flat index."""
        if not self.sizes:
            return self
        keep = [i for i, n in enumerate(self.sizes) if n != 1] or [len(self.sizes) - 1]
        sizes = [self.sizes[keep[0]]]
        strides = [[op.strides[keep[0]]] for op in self.operands]
        for i in keep[1:]:
            n = self.sizes[i]
            merge = all(s[-1] == op.strides[i] * n
                        for s, op in zip(strides, self.operands, strict=True))
            if merge:
                sizes[-1] *= n
            else:
                sizes.append(n)
            for s, op in zip(strides, self.operands, strict=True):
                if merge:
                    s[-1] = op.strides[i]
                else:
                    s.append(op.strides[i])
        return Descriptor(sizes, [Operand(op.offset, s, op.dtype)
                                  for op, s in zip(self.operands, strides, strict=True)],
                          self.extras)

    def encode(self) -> list[int]:
        sizes = [1] * (RANK - len(self.sizes)) + list(self.sizes)
        out = list(sizes)
        for op in self.operands:
            strides = [0] * (RANK - len(op.strides)) + list(op.strides)
            out += [op.offset, *strides]
        return out + list(self.extras)


class Layout:
    """Byte offsets of every memref of the kernel in the arena."""

    def __init__(self, kernel: t.KernelOp) -> None:
        self.base: dict[SSAValue, int] = {}
        self.size = 0
        values = [*kernel.inputs, *kernel.outputs,
                  *(op.results[0] for op in kernel.body.block.ops
                    if isinstance(op, t.BufferOp | t.ConstantOp))]
        for v in values:
            self.base[v] = self.size
            nbytes = math.prod(buffer_shape(v)) * dtype_of(v).itemsize
            self.size += -(-max(nbytes, 1) // ALIGN) * ALIGN

    def operand(self, value: SSAValue, origin: Sequence[int], strides: Sequence[int]) -> Operand:
        dt = dtype_of(value)
        elems = sum(o * s for o, s in zip(origin, strides_of(buffer_shape(value)), strict=True))
        return Operand(self.base[value] + elems * dt.itemsize, list(strides), dt)


# --------------------------------------------------------------------------- views per op


def right_align(values: Sequence[int], rank: int, fill: int = 0) -> list[int]:
    return [fill] * (rank - len(values)) + list(values)


def _strides(value: SSAValue) -> list[int]:
    """The row-major element strides of a buffer."""
    return strides_of(buffer_shape(value))


def _dim(dim: int, rank: int) -> int:
    """A ``dim`` property as a dimension in [0, rank)."""
    (d,) = g.normalize_dims([dim], rank)
    return d


def elementwise_view(task: t.TaskOp, op: Operation, layout: Layout) -> Descriptor:
    """A pointwise body or an elementwise graph op: the space is the first output tile;
    inputs broadcast onto it (right-aligned, stride 0 along their size-1 dimensions)."""
    (_, out_tile), *_ = task.writes()
    space = list(out_tile.sizes)
    rank = len(space)
    operands = []
    for value, tile in task.reads():
        strides = [0 if s == 1 and n != 1 else stride
                   for s, n, stride in zip(tile.sizes, space[rank - len(tile.sizes):],
                                           _strides(value), strict=True)]
        operands.append(layout.operand(value, tile.offsets, right_align(strides, rank)))
    for value, tile in task.writes():
        operands.append(layout.operand(value, tile.offsets, _strides(value)))
    return Descriptor(space, operands)


def permute_view(task: t.TaskOp, op: g.PermuteOp, layout: Layout) -> Descriptor:
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    st = _strides(src)
    return Descriptor(list(tile.sizes), [
        layout.operand(src, region.offsets, [st[p] for p in op.perm.get_values()]),
        layout.operand(dst, tile.offsets, _strides(dst))])


def slice_view(task: t.TaskOp, op: g.SliceOp, layout: Layout) -> Descriptor:
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    dim = _dim(op.dim.value.data, len(buffer_shape(src)))
    origin = list(region.offsets)
    origin[dim] += op.start.value.data
    strides = _strides(src)
    strides[dim] *= op.step.value.data
    return Descriptor(list(tile.sizes), [
        layout.operand(src, origin, strides),
        layout.operand(dst, tile.offsets, _strides(dst))])


def reshape_view(task: t.TaskOp, op: g.ReshapeOp, layout: Layout) -> Descriptor:
    """Both regions are contiguous runs of the same length: a flat copy."""
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    n = math.prod(tile.sizes)
    return Descriptor([n], [layout.operand(src, region.offsets, [1]),
                            layout.operand(dst, tile.offsets, [1])])


def split_dims(rows: Sequence[int], red: Sequence[int], what: str) -> None:
    if len(rows) > 3 or len(red) > 3:
        raise TritonTargetError(f"{what}: at most 3 kept and 3 reduced dimensions")


def reduce_view(task: t.TaskOp, op: g.ReduceOp, layout: Layout) -> Descriptor:
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    rank = len(buffer_shape(src))
    dims = set(g.normalize_dims(op.dims.get_values(), rank))
    keepdim = bool(op.keepdim.value.data)
    kept = [d for d in range(rank) if d not in dims]
    red = sorted(dims)
    split_dims(kept, red, op.name)
    st, out_st = _strides(src), _strides(dst)
    out_index = {d: (d if keepdim else i) for i, d in enumerate(kept)}  # input -> output dim
    sizes = right_align([region.sizes[d] for d in kept], 3, 1) + right_align(
        [region.sizes[d] for d in red], 3, 1)
    src_strides = right_align([st[d] for d in kept], 3) + right_align([st[d] for d in red], 3)
    dst_strides = [*right_align([out_st[out_index[d]] for d in kept], 3), 0, 0, 0]
    return Descriptor(sizes, [layout.operand(src, region.offsets, src_strides),
                              layout.operand(dst, tile.offsets, dst_strides)])


RowOps = g.RowOp | g.RowBackwardOp | g.LayerNormOp


def row_view(task: t.TaskOp, op: RowOps, layout: Layout) -> Descriptor:
    """Row ops: rows are the tile's other dimensions, the row runs along ``dim`` (or the
    last ``normalized_dims`` for layer norm, whose weight and bias are the same for
    every row and whose statistics are one value per row)."""
    reads, writes = task.reads(), task.writes()
    x, region = reads[0]
    rank = len(buffer_shape(x))
    if isinstance(op, g.LayerNormOp):
        red = list(range(rank - op.normalized_dims.value.data, rank))
    else:
        red = [_dim(op.dim.value.data, rank)]
    rows = [d for d in range(rank) if d not in red]
    split_dims(rows, red, op.name)
    sizes = right_align([region.sizes[d] for d in rows], 3, 1) + right_align(
        [region.sizes[d] for d in red], 3, 1)

    def full(value: SSAValue, tile: t.Tile) -> Operand:
        st = _strides(value)
        strides = right_align([st[d] for d in rows], 3) + right_align([st[d] for d in red], 3)
        return layout.operand(value, tile.offsets, strides)

    if not isinstance(op, g.LayerNormOp):
        return Descriptor(sizes, [full(v, tile) for v, tile in [*reads, *writes]])
    (w, wt), (b, bt) = reads[1], reads[2]
    (out, ot), (mean, mt), (rstd, rt) = writes

    def per_column(value: SSAValue, tile: t.Tile) -> Operand:
        return layout.operand(value, tile.offsets, [0, 0, 0, *right_align(_strides(value), 3)])

    def per_row(value: SSAValue, tile: t.Tile) -> Operand:
        st = _strides(value)
        return layout.operand(value, tile.offsets,
                              [*right_align([st[d] for d in rows], 3), 0, 0, 0])

    desc = Descriptor(sizes, [full(x, region), per_column(w, wt), per_column(b, bt),
                              full(out, ot), per_row(mean, mt), per_row(rstd, rt)])
    desc.extras = [int(np.float64(op.eps.value.data).view(np.int64))]  # eps, bit-exact
    return desc


def matmul_view(task: t.TaskOp, op: g.MatmulOp | g.MatmulPermutedOp, layout: Layout
                ) -> Descriptor:
    """(m, n, k) loops; a permuted right operand is read through its strides."""
    (a, at), (b, bt) = task.reads()
    (c, ct), = task.writes()
    sa, sb, sc = _strides(a), _strides(b), _strides(c)
    if isinstance(op, g.MatmulPermutedOp):
        sb = [sb[p] for p in op.rhs_perm.get_values()]
    m, n, k = ct.sizes[-2], ct.sizes[-1], at.sizes[-1]
    return Descriptor([m, n, k], [
        layout.operand(a, at.offsets, [sa[-2], 0, sa[-1]]),
        layout.operand(b, bt.offsets, [0, sb[-1], sb[-2]]),
        layout.operand(c, ct.offsets, [sc[-2], sc[-1], 0])])


def embedding_view(task: t.TaskOp, op: g.EmbeddingOp, layout: Layout) -> Descriptor:
    """``out[r, c] = weight[index[r], c]`` over the output tile."""
    (w, wt), (idx, it) = task.reads()
    (out, ot), = task.writes()
    sw = _strides(w)
    return Descriptor(list(ot.sizes), [
        layout.operand(w, wt.offsets, right_align([sw[1]], len(ot.sizes))),
        layout.operand(idx, it.offsets, [*_strides(idx), 0]),
        layout.operand(out, ot.offsets, _strides(out))], extras=[sw[0]])


def gather_view(task: t.TaskOp, op: g.GatherOp, layout: Layout) -> Descriptor:
    """``out[i] = x[i with i[dim] = index[i]]`` over the index's shape."""
    (x, xt), (idx, it) = task.reads()
    (out, ot), = task.writes()
    sx = _strides(x)
    dim = _dim(op.dim.value.data, len(sx))
    along = sx[dim]
    sx[dim] = 0
    return Descriptor(list(ot.sizes), [
        layout.operand(x, xt.offsets, sx),
        layout.operand(idx, it.offsets, _strides(idx)),
        layout.operand(out, ot.offsets, _strides(out))], extras=[along])


def scatter_view(task: t.TaskOp, op: g.ScatterOp, layout: Layout) -> Descriptor:
    """``out = input`` (a flat copy of ``extras[0]`` elements), then
    ``out[i with i[dim] = index[i]] = value`` over the index's shape."""
    (x, xt), (idx, it), (val, vt) = task.reads()
    (out, ot), = task.writes()
    shape = buffer_shape(out)
    so = strides_of(shape)
    dim = _dim(op.dim.value.data, len(shape))
    along = so[dim]
    so[dim] = 0
    index_shape = buffer_shape(idx)
    return Descriptor(list(index_shape), [
        layout.operand(x, xt.offsets, [0] * len(index_shape)),
        layout.operand(idx, it.offsets, strides_of(index_shape)),
        layout.operand(val, vt.offsets, [0] * len(index_shape)),
        layout.operand(out, ot.offsets, so)], extras=[math.prod(shape), along])


def index_put_view(task: t.TaskOp, op: g.IndexPutOp, layout: Layout) -> Descriptor:
    """``out = input`` (a flat copy of ``extras[0]`` elements), then
    ``out[index[i], j...] (+)= values[i, j...]`` over ``(*index.shape, *x.shape[1:])``."""
    (x, xt), (idx, it), (val, vt) = task.reads()
    (out, ot), = task.writes()
    shape, index_shape = buffer_shape(out), buffer_shape(idx)
    space = [*index_shape, *shape[1:]]
    if len(space) > RANK:
        raise TritonTargetError(f"index_put over {len(space)} dimensions")
    so = strides_of(shape)
    sv = _strides(val)
    vshape = buffer_shape(val)
    lead = len(space) - len(vshape)
    v_strides = [0] * lead + [0 if n == 1 and space[lead + d] != 1 else sv[d]
                              for d, n in enumerate(vshape)]
    return Descriptor(space, [
        layout.operand(x, xt.offsets, [0] * len(space)),
        layout.operand(idx, it.offsets, [*strides_of(index_shape), *[0] * (len(shape) - 1)]),
        layout.operand(val, vt.offsets, v_strides),
        layout.operand(out, ot.offsets, [*[0] * len(index_shape), *so[1:]])],
        extras=[math.prod(shape), so[0]])


def layer_norm_backward_view(task: t.TaskOp, op: g.LayerNormBackwardOp, layout: Layout
                             ) -> Descriptor:
    (grad, gt), (x, xt), (mean, mt), (rstd, rt), (w, wt) = task.reads()
    (gi, git), (gw, gwt), (gb, gbt) = task.writes()
    shape = buffer_shape(x)
    k = op.normalized_dims.value.data
    rows, red = list(range(len(shape) - k)), list(range(len(shape) - k, len(shape)))
    split_dims(rows, red, op.name)
    sizes = right_align([shape[d] for d in rows], 3, 1) + right_align([shape[d] for d in red], 3, 1)

    def view(value: SSAValue, tile: t.Tile, row: bool, col: bool) -> Operand:
        st = _strides(value)
        r = right_align([st[d] for d in rows], 3) if row else [0, 0, 0]
        c = right_align(st[len(st) - k:], 3) if col else [0, 0, 0]
        return layout.operand(value, tile.offsets, r + c)

    return Descriptor(sizes, [
        view(grad, gt, True, True), view(x, xt, True, True), view(mean, mt, True, False),
        view(rstd, rt, True, False), view(w, wt, False, True), view(gi, git, True, True),
        view(gw, gwt, False, True), view(gb, gbt, False, True)])


def window_view(task: t.TaskOp, op: g.Conv2dOp | g.MaxPool2dOp, layout: Layout
                ) -> Descriptor:
    """conv2d and max-pool over whole NCHW tensors: the space is the output; extras
    carry the geometry."""
    reads, writes = task.reads(), task.writes()
    n, c, h, wd = buffer_shape(reads[0][0])
    _, o, oh, ow = buffer_shape(writes[0][0])
    if isinstance(op, g.Conv2dOp):
        kh, kw = buffer_shape(reads[1][0])[2:]
        groups = op.groups.value.data
    else:
        kh, kw = op.kernel.get_values()
        groups = 1
    extras = [c, h, wd, kh, kw, *op.stride.get_values(), *op.padding.get_values(),
              *op.dilation.get_values(), groups, o]
    operands = [layout.operand(v, tile.offsets, [0] * 4) for v, tile in [*reads, *writes]]
    return Descriptor([n, o, oh, ow], operands, extras)


def window_backward_view(task: t.TaskOp, op: g.Conv2dBackwardOp | g.MaxPool2dBackwardOp,
                         layout: Layout) -> Descriptor:
    """conv2d and max-pool backward over whole NCHW tensors; extras carry the geometry
    (for max-pool: only the input's and the gradient's shapes)."""
    reads = task.reads()
    n, c, h, wd = buffer_shape(reads[1][0])
    _, o, oh, ow = buffer_shape(reads[0][0])
    geometry: list[int]
    if isinstance(op, g.Conv2dBackwardOp):
        kh, kw = buffer_shape(reads[2][0])[2:]
        geometry = [kh, kw, *op.stride.get_values(), *op.padding.get_values(),
                    *op.dilation.get_values(), op.groups.value.data]
    else:
        geometry = [1, 1, 1, 1, 0, 0, 1, 1, 1]
    extras = [c, h, wd, *geometry, o, n, oh, ow]
    operands = [layout.operand(v, tile.offsets, [0] * 4)
                for v, tile in [*reads, *task.writes()]]
    return Descriptor([n, c, h, wd], operands, extras)


View = Callable[[t.TaskOp, Any, Layout], Descriptor]
"""A task's descriptor from the task, its computation (of the op class the view is
registered under) and the arena layout."""

VIEWS: dict[type[Operation], View] = {
    t.BodyOp: elementwise_view, g.PermuteOp: permute_view, g.SliceOp: slice_view,
    g.ReshapeOp: reshape_view, g.SumOp: reduce_view, g.MeanOp: reduce_view,
    g.AmaxOp: reduce_view, g.SoftmaxOp: row_view, g.LogSoftmaxOp: row_view,
    g.SoftmaxBackwardOp: row_view, g.LogSoftmaxBackwardOp: row_view,
    g.LayerNormOp: row_view, **dict.fromkeys(g.MATMULS, matmul_view), g.EmbeddingOp: embedding_view,
    g.GatherOp: gather_view, g.ScatterOp: scatter_view, g.IndexPutOp: index_put_view,
    g.LayerNormBackwardOp: layer_norm_backward_view, g.Conv2dOp: window_view,
    g.MaxPool2dOp: window_view, g.Conv2dBackwardOp: window_backward_view,
    g.MaxPool2dBackwardOp: window_backward_view,
}
"""The view of each computation a device function exists for, by op class."""


def view_of(op: Operation | None) -> View | None:
    """The view of a task computing ``op`` (``computation()``): pointwise bodies and
    elementwise graph ops share one; ``None`` when the target has no device function."""
    if op is None:
        return None
    if op.has_trait(g.Elementwise):
        return elementwise_view
    return VIEWS.get(type(op))
