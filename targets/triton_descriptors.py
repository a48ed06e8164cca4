"""Where a task's tiles are, for the Triton megakernel: the arena layout and each task's
descriptor (an iteration space of 6 sizes; per operand the byte offset of its tile's
origin in the arena and 6 element strides; extras some task types need), built per task
kind as strided views of the kernel's buffers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Attribute, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.values import numpy_dtype

RANK = 6  # iteration spaces and strides have this many dimensions
ALIGN = 16


class TritonTargetError(Exception):
    """A kernel the Triton target cannot generate code for."""


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
    typ = value.type if isinstance(value, SSAValue) else value
    return numpy_dtype(typ.element_type)  # type: ignore[attr-defined]


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
            nbytes = math.prod(v.type.get_shape()) * dtype_of(v).itemsize  # type: ignore[attr-defined]
            self.size += -(-max(nbytes, 1) // ALIGN) * ALIGN

    def operand(self, value: SSAValue, origin: Sequence[int], strides: Sequence[int]) -> Operand:
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        dt = dtype_of(value)
        elems = sum(o * s for o, s in zip(origin, strides_of(shape), strict=True))
        return Operand(self.base[value] + elems * dt.itemsize, list(strides), dt)


# --------------------------------------------------------------------------- views per kind


def right_align(values: Sequence[int], rank: int, fill: int = 0) -> list[int]:
    return [fill] * (rank - len(values)) + list(values)


def elementwise_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    (_, out_tile), *_ = task.writes()
    space = list(out_tile.sizes)
    rank = len(space)
    operands = []
    for value, tile in task.reads():
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        strides = [0 if s == 1 and n != 1 else stride
                   for s, n, stride in zip(tile.sizes, space[rank - len(tile.sizes):], st,
                                           strict=True)]
        operands.append(layout.operand(value, tile.offsets, right_align(strides, rank)))
    for value, tile in task.writes():
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        operands.append(layout.operand(value, tile.offsets, st))
    return Descriptor(space, operands)


def permute_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    perm = task.attrs.data["perm"].get_values()  # type: ignore[attr-defined]
    st = strides_of(src.type.get_shape())  # type: ignore[attr-defined]
    return Descriptor(list(tile.sizes), [
        layout.operand(src, region.offsets, [st[p] for p in perm]),
        layout.operand(dst, tile.offsets, strides_of(dst.type.get_shape()))])  # type: ignore[attr-defined]


def slice_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    shape = src.type.get_shape()  # type: ignore[attr-defined]
    (dim,) = g.normalize_dims([task.attrs.data["dim"].value.data], len(shape))  # type: ignore[attr-defined]
    start = task.attrs.data["start"].value.data  # type: ignore[attr-defined]
    step_attr = task.attrs.data.get("step")
    step = step_attr.value.data if step_attr is not None else 1  # type: ignore[attr-defined]
    st = strides_of(shape)
    origin = list(region.offsets)
    origin[dim] += start
    strides = list(st)
    strides[dim] *= step
    return Descriptor(list(tile.sizes), [
        layout.operand(src, origin, strides),
        layout.operand(dst, tile.offsets, strides_of(dst.type.get_shape()))])  # type: ignore[attr-defined]


def reshape_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """Both regions are contiguous runs of the same length: a flat copy."""
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    n = math.prod(tile.sizes)
    return Descriptor([n], [layout.operand(src, region.offsets, [1]),
                            layout.operand(dst, tile.offsets, [1])])


def split_dims(rows: Sequence[int], red: Sequence[int], what: str) -> None:
    if len(rows) > 3 or len(red) > 3:
        raise TritonTargetError(f"{what}: at most 3 kept and 3 reduced dimensions")


def reduce_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    (src, region), = task.reads()
    (dst, tile), = task.writes()
    shape = src.type.get_shape()  # type: ignore[attr-defined]
    dims = set(g.normalize_dims(task.attrs.data["dims"].get_values(), len(shape)))  # type: ignore[attr-defined]
    keep = task.attrs.data.get("keepdim")
    keepdim = bool(keep.value.data) if keep is not None else False  # type: ignore[attr-defined]
    kept = [d for d in range(len(shape)) if d not in dims]
    red = sorted(dims)
    split_dims(kept, red, f"task kind {task.kind.data}")
    st = strides_of(shape)
    out_st = strides_of(dst.type.get_shape())  # type: ignore[attr-defined]
    out_index = {d: (d if keepdim else i) for i, d in enumerate(kept)}  # input -> output dim
    sizes = right_align([region.sizes[d] for d in kept], 3, 1) + right_align(
        [region.sizes[d] for d in red], 3, 1)
    src_strides = right_align([st[d] for d in kept], 3) + right_align([st[d] for d in red], 3)
    dst_strides = [*right_align([out_st[out_index[d]] for d in kept], 3), 0, 0, 0]
    return Descriptor(sizes, [layout.operand(src, region.offsets, src_strides),
                              layout.operand(dst, tile.offsets, dst_strides)])


def row_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """Row ops: rows are the tile's other dimensions, the row runs along ``dim`` (or the
    last ``normalized_dims`` for layer norm, whose weight and bias are the same for
    every row and whose statistics are one value per row)."""
    reads, writes = task.reads(), task.writes()
    x, region = reads[0]
    shape = x.type.get_shape()  # type: ignore[attr-defined]
    if task.kind.data == "layer_norm":
        k = task.attrs.data["normalized_dims"].value.data  # type: ignore[attr-defined]
        red = list(range(len(shape) - k, len(shape)))
    else:
        red = list(g.normalize_dims([task.attrs.data["dim"].value.data], len(shape)))  # type: ignore[attr-defined]
    rows = [d for d in range(len(shape)) if d not in red]
    split_dims(rows, red, f"task kind {task.kind.data}")
    sizes = right_align([region.sizes[d] for d in rows], 3, 1) + right_align(
        [region.sizes[d] for d in red], 3, 1)

    def full(value: SSAValue, tile: t.Tile) -> Operand:
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        strides = right_align([st[d] for d in rows], 3) + right_align([st[d] for d in red], 3)
        return layout.operand(value, tile.offsets, strides)

    if task.kind.data != "layer_norm":
        return Descriptor(sizes, [full(v, tile) for v, tile in [*reads, *writes]])
    (w, wt), (b, bt) = reads[1], reads[2]
    (out, ot), (mean, mt), (rstd, rt) = writes
    def per_column(value: SSAValue, tile: t.Tile) -> Operand:
        return layout.operand(value, tile.offsets, [0, 0, 0, *right_align(
            strides_of(value.type.get_shape()), 3)])  # type: ignore[attr-defined]

    def per_row(value: SSAValue, tile: t.Tile) -> Operand:
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        return layout.operand(value, tile.offsets,
                              [*right_align([st[d] for d in rows], 3), 0, 0, 0])

    eps = task.attrs.data["eps"].value.data  # type: ignore[attr-defined]
    desc = Descriptor(sizes, [full(x, region), per_column(w, wt), per_column(b, bt),
                              full(out, ot), per_row(mean, mt), per_row(rstd, rt)])
    desc.extras = [int(np.float64(eps).view(np.int64))]  # eps, bit-exact
    return desc


def matmul_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    (a, at), (b, bt) = task.reads()
    (c, ct), = task.writes()
    sa, sb, sc = (strides_of(v.type.get_shape()) for v in (a, b, c))  # type: ignore[attr-defined]
    m, n, k = ct.sizes[-2], ct.sizes[-1], at.sizes[-1]
    return Descriptor([m, n, k], [
        layout.operand(a, at.offsets, [sa[-2], 0, sa[-1]]),
        layout.operand(b, bt.offsets, [0, sb[-1], sb[-2]]),
        layout.operand(c, ct.offsets, [sc[-2], sc[-1], 0])])


def embedding_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """``out[r, c] = weight[index[r], c]`` over the output tile."""
    (w, wt), (idx, it) = task.reads()
    (out, ot), = task.writes()
    rank = len(ot.sizes)
    sw = strides_of(w.type.get_shape())  # type: ignore[attr-defined]
    si = strides_of(idx.type.get_shape())  # type: ignore[attr-defined]
    return Descriptor(list(ot.sizes), [
        layout.operand(w, wt.offsets, right_align([sw[1]], rank)),
        layout.operand(idx, it.offsets, [*si, 0]),
        layout.operand(out, ot.offsets, strides_of(out.type.get_shape()))],  # type: ignore[attr-defined]
        extras=[sw[0]])


def gather_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """``out[i] = x[i with i[dim] = index[i]]`` over the index's shape."""
    (x, xt), (idx, it) = task.reads()
    (out, ot), = task.writes()
    shape = x.type.get_shape()  # type: ignore[attr-defined]
    (dim,) = g.normalize_dims([task.attrs.data["dim"].value.data], len(shape))  # type: ignore[attr-defined]
    sx = strides_of(shape)
    along = sx[dim]
    sx[dim] = 0
    return Descriptor(list(ot.sizes), [
        layout.operand(x, xt.offsets, sx),
        layout.operand(idx, it.offsets, strides_of(idx.type.get_shape())),  # type: ignore[attr-defined]
        layout.operand(out, ot.offsets, strides_of(out.type.get_shape()))],  # type: ignore[attr-defined]
        extras=[along])


def scatter_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """``out = input`` (a flat copy of ``extras[0]`` elements), then
    ``out[i with i[dim] = index[i]] = value`` over the index's shape."""
    (x, xt), (idx, it), (val, vt) = task.reads()
    (out, ot), = task.writes()
    shape = out.type.get_shape()  # type: ignore[attr-defined]
    (dim,) = g.normalize_dims([task.attrs.data["dim"].value.data], len(shape))  # type: ignore[attr-defined]
    so = strides_of(shape)
    along = so[dim]
    so[dim] = 0
    index_shape = idx.type.get_shape()  # type: ignore[attr-defined]
    return Descriptor(list(index_shape), [
        layout.operand(x, xt.offsets, [0] * len(index_shape)),
        layout.operand(idx, it.offsets, strides_of(index_shape)),
        layout.operand(val, vt.offsets, [0] * len(index_shape)),
        layout.operand(out, ot.offsets, so)], extras=[math.prod(shape), along])


def index_put_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """``out = input`` (a flat copy of ``extras[0]`` elements), then
    ``out[index[i], j...] (+)= values[i, j...]`` over ``(*index.shape, *x.shape[1:])``."""
    (x, xt), (idx, it), (val, vt) = task.reads()
    (out, ot), = task.writes()
    shape = out.type.get_shape()  # type: ignore[attr-defined]
    index_shape = idx.type.get_shape()  # type: ignore[attr-defined]
    space = [*index_shape, *shape[1:]]
    if len(space) > RANK:
        raise TritonTargetError(f"index_put over {len(space)} dimensions")
    so = strides_of(shape)
    si = strides_of(index_shape)
    sv = strides_of(val.type.get_shape())  # type: ignore[attr-defined]
    vshape = val.type.get_shape()  # type: ignore[attr-defined]
    lead = len(space) - len(vshape)
    v_strides = [0] * lead + [0 if n == 1 and space[lead + d] != 1 else sv[d]
                              for d, n in enumerate(vshape)]
    return Descriptor(space, [
        layout.operand(x, xt.offsets, [0] * len(space)),
        layout.operand(idx, it.offsets, [*si, *[0] * (len(shape) - 1)]),
        layout.operand(val, vt.offsets, v_strides),
        layout.operand(out, ot.offsets, [*[0] * len(index_shape), *so[1:]])],
        extras=[math.prod(shape), so[0]])


def layer_norm_backward_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    (grad, gt), (x, xt), (mean, mt), (rstd, rt), (w, wt) = task.reads()
    (gi, git), (gw, gwt), (gb, gbt) = task.writes()
    shape = x.type.get_shape()  # type: ignore[attr-defined]
    k = task.attrs.data["normalized_dims"].value.data  # type: ignore[attr-defined]
    rows, red = list(range(len(shape) - k)), list(range(len(shape) - k, len(shape)))
    split_dims(rows, red, "task kind layer_norm_backward")
    sizes = right_align([shape[d] for d in rows], 3, 1) + right_align([shape[d] for d in red], 3, 1)

    def view(value: SSAValue, tile: t.Tile, row: bool, col: bool) -> Operand:
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        r = right_align([st[d] for d in rows], 3) if row else [0, 0, 0]
        c = right_align(st[len(st) - k:], 3) if col else [0, 0, 0]
        return layout.operand(value, tile.offsets, r + c)

    return Descriptor(sizes, [
        view(grad, gt, True, True), view(x, xt, True, True), view(mean, mt, True, False),
        view(rstd, rt, True, False), view(w, wt, False, True), view(gi, git, True, True),
        view(gw, gwt, False, True), view(gb, gbt, False, True)])


def window_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """conv2d and max-pool over whole NCHW tensors: the space is the output; extras
    carry the geometry."""
    reads, writes = task.reads(), task.writes()
    x = reads[0][0]
    n, c, h, wd = x.type.get_shape()  # type: ignore[attr-defined]
    out = writes[0][0]
    _, o, oh, ow = out.type.get_shape()  # type: ignore[attr-defined]
    attrs = task.attrs.data
    stride, padding, dilation = (attrs[k].get_values()  # type: ignore[attr-defined]
                                 for k in ("stride", "padding", "dilation"))
    if task.kind.data == "conv2d":
        kh, kw = reads[1][0].type.get_shape()[2:]  # type: ignore[attr-defined]
        groups_attr = attrs.get("groups")
        groups = groups_attr.value.data if groups_attr is not None else 1  # type: ignore[attr-defined]
    else:
        kh, kw = attrs["kernel"].get_values()  # type: ignore[attr-defined]
        groups = 1
    extras = [c, h, wd, kh, kw, *stride, *padding, *dilation, groups, o]
    operands = [layout.operand(v, tile.offsets, [0] * 4) for v, tile in [*reads, *writes]]
    return Descriptor([n, o, oh, ow], operands, extras)


def window_backward_view(task: t.TaskOp, layout: Layout) -> Descriptor:
    """conv2d and max-pool backward over whole NCHW tensors; extras carry the geometry
    (for max-pool: only the input's and the gradient's shapes)."""
    reads, writes = task.reads(), task.writes()
    grad, x = reads[0][0], reads[1][0]
    n, c, h, wd = x.type.get_shape()  # type: ignore[attr-defined]
    _, o, oh, ow = grad.type.get_shape()  # type: ignore[attr-defined]
    if task.kind.data == "conv2d_backward":
        attrs = task.attrs.data
        stride, padding, dilation = (attrs[k].get_values()  # type: ignore[attr-defined]
                                     for k in ("stride", "padding", "dilation"))
        kh, kw = reads[2][0].type.get_shape()[2:]  # type: ignore[attr-defined]
        groups_attr = attrs.get("groups")
        groups = groups_attr.value.data if groups_attr is not None else 1  # type: ignore[attr-defined]
    else:
        stride, padding, dilation, kh, kw, groups = (1, 1), (0, 0), (1, 1), 1, 1, 1
    extras = [c, h, wd, kh, kw, *stride, *padding, *dilation, groups, o, n, oh, ow]
    operands = [layout.operand(v, tile.offsets, [0] * 4) for v, tile in [*reads, *writes]]
    return Descriptor([n, c, h, wd], operands, extras)


VIEWS = {
    "elementwise": elementwise_view, "permute": permute_view, "slice": slice_view,
    "reshape": reshape_view, "sum": reduce_view, "mean": reduce_view, "amax": reduce_view,
    "softmax": row_view, "log_softmax": row_view, "softmax_backward": row_view,
    "log_softmax_backward": row_view, "layer_norm": row_view, "matmul": matmul_view,
    "embedding": embedding_view, "gather": gather_view, "scatter": scatter_view,
    "index_put": index_put_view, "layer_norm_backward": layer_norm_backward_view,
    "conv2d": window_view, "max_pool2d": window_view,
    "conv2d_backward": window_backward_view, "max_pool2d_backward": window_backward_view,
}
