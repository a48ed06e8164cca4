"""``-t triton``: a ``task.kernel`` as one persistent Triton megakernel.

The generated Python module holds the kernel's tables and code:

* an **arena** (one byte tensor) in which every buffer, input, output and constant has
  an offset; tasks reach their tiles through typed pointers cast from it;
* a **task table** (type, descriptor offset, waits, signalled event), a **descriptor
  table** (per task: an iteration space of 6 sizes, then per operand the byte offset of
  its tile's origin and 6 element strides, then extras of some types) and event tables;
* one ``@triton.jit`` device function per task type: elementwise bodies (also copies,
  reshapes, permutes, slices), matmul tiles with ``tl.dot``, reductions (sum, mean,
  amax), row ops (softmax, log-softmax and their backward, layer norm and its
  backward), embedding, gather, scatter, index_put, and direct conv2d and max-pool
  and their backward ops;
* the megakernel: each program takes the next task from an atomic ticket, waits on its
  events (acquire loads, at most ``spin_bound`` polls, after which the task is recorded
  as an error instead of hanging), runs it, and signals after a barrier (release add).
  Tasks are in a topological order, so this cannot deadlock whatever the grid, and with
  the interpreter's sequential grid of 1 it never waits at all;
* ``run(*inputs, mode=...)``: ``"megakernel"``, or ``"levels"`` (one launch per
  dependency level, the cross-check and fallback), on a GPU when one is there and under
  ``TRITON_INTERPRET=1`` otherwise; ``compile_for_gpu()`` compiles the megakernel for a
  GPU target without running it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.target import Target

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.targets.graph_interpreter import constant_value, numpy_dtype

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


def _right(values: Sequence[int], rank: int, fill: int = 0) -> list[int]:
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
        operands.append(layout.operand(value, tile.offsets, _right(strides, rank)))
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
    sizes = _right([region.sizes[d] for d in kept], 3, 1) + _right(
        [region.sizes[d] for d in red], 3, 1)
    src_strides = _right([st[d] for d in kept], 3) + _right([st[d] for d in red], 3)
    dst_strides = [*_right([out_st[out_index[d]] for d in kept], 3), 0, 0, 0]
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
    sizes = _right([region.sizes[d] for d in rows], 3, 1) + _right(
        [region.sizes[d] for d in red], 3, 1)

    def full(value: SSAValue, tile: t.Tile) -> Operand:
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        return layout.operand(value, tile.offsets,
                              _right([st[d] for d in rows], 3) + _right([st[d] for d in red], 3))

    if task.kind.data != "layer_norm":
        return Descriptor(sizes, [full(v, tile) for v, tile in [*reads, *writes]])
    (w, wt), (b, bt) = reads[1], reads[2]
    (out, ot), (mean, mt), (rstd, rt) = writes
    def per_column(value: SSAValue, tile: t.Tile) -> Operand:
        return layout.operand(value, tile.offsets, [0, 0, 0, *_right(
            strides_of(value.type.get_shape()), 3)])  # type: ignore[attr-defined]

    def per_row(value: SSAValue, tile: t.Tile) -> Operand:
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        return layout.operand(value, tile.offsets,
                              [*_right([st[d] for d in rows], 3), 0, 0, 0])

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
        layout.operand(w, wt.offsets, _right([sw[1]], rank)),
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
    sizes = _right([shape[d] for d in rows], 3, 1) + _right([shape[d] for d in red], 3, 1)

    def view(value: SSAValue, tile: t.Tile, row: bool, col: bool) -> Operand:
        st = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        r = _right([st[d] for d in rows], 3) if row else [0, 0, 0]
        c = _right(st[len(st) - k:], 3) if col else [0, 0, 0]
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


# --------------------------------------------------------------------------- code


#: Python source of the body ops, by graph op class: a format string over the operands.
_BODY_OPS: dict[type[Operation], str] = {
    g.AddOp: "{0} + {1}", g.SubOp: "{0} - {1}", g.MulOp: "{0} * {1}", g.DivOp: "{0} / {1}",
    g.NegOp: "-{0}", g.AbsOp: "tl.abs({0})", g.ExpOp: "tl.exp({0})", g.LogOp: "tl.log({0})",
    g.SqrtOp: "tl.sqrt({0})", g.RsqrtOp: "1.0 / tl.sqrt({0})", g.ReciprocalOp: "1.0 / {0}",
    g.TanhOp: "_tanh({0})", g.SigmoidOp: "1.0 / (1.0 + tl.exp(-{0}))",
    g.ErfOp: "tl.math.erf({0})", g.NotOp: "{0} == 0", g.PowOp: "_pow({0}, {1})",
    g.MaximumOp: "tl.maximum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
    g.MinimumOp: "tl.minimum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
    g.AndOp: "({0} != 0) & ({1} != 0)", g.OrOp: "({0} != 0) | ({1} != 0)",
    g.EqOp: "{0} == {1}", g.NeOp: "{0} != {1}", g.LtOp: "{0} < {1}", g.LeOp: "{0} <= {1}",
    g.GtOp: "{0} > {1}", g.GeOp: "{0} >= {1}", g.WhereOp: "tl.where({0} != 0, {1}, {2})",
    g.ReluOp: "tl.maximum({0}, 0)",
}


def _value_type(value: SSAValue | Attribute) -> str:
    return TYPES[dtype_of(value).name][1]


def body_source(body: t.BodyOp, args: Sequence[str], block: str) -> tuple[list[str], list[str]]:
    """Lines computing a task body on loaded blocks, and the names of its results."""
    names: dict[SSAValue, str] = dict(zip(body.body.block.args, args, strict=True))
    lines: list[str] = []
    for i, op in enumerate(body.body.block.ops):
        if isinstance(op, t.YieldOp):
            return lines, [names[v] for v in op.values]
        name = f"v{i}"
        ty = _value_type(op.results[0])
        operands = [names[o] for o in op.operands]
        if isinstance(op, g.ConstantOp):
            (value,) = constant_value(op.value).reshape(-1)  # type: ignore[arg-type]
            literal = repr(bool(value)) if ty == "tl.int1" else repr(value.item())
            literal = {"nan": "float('nan')", "inf": "float('inf')",
                       "-inf": "float('-inf')"}.get(literal, literal)
            expr = f"tl.full([{block}], {literal}, {ty})"
        elif isinstance(op, g.ConvertOp):
            expr = f"{operands[0]} != 0" if ty == "tl.int1" else f"{operands[0]}.to({ty})"
        elif isinstance(op, g.GeluOp | g.GeluBackwardOp):
            approx = op.properties.get("approximate")
            tanh = approx is not None and approx.data == "tanh"  # type: ignore[attr-defined]
            fn = ("_gelu_backward" if isinstance(op, g.GeluBackwardOp) else "_gelu") + (
                "_tanh" if tanh else "")
            expr = f"{fn}({', '.join(operands)})"
        elif type(op) in _BODY_OPS:
            expr = _BODY_OPS[type(op)].format(*operands)
        else:
            raise TritonTargetError(f"task.body @{body.sym_name.data}: {op.name} has no "
                                    "Triton form")
        lines.append(f"{name} = ({expr}).to({ty})")
        names[op.results[0]] = name
    raise TritonTargetError(f"task.body @{body.sym_name.data} has no task.yield")


def _load_desc(n_operands: int, extras: int = 0) -> list[str]:
    lines = [f"s{i} = tl.load(desc + d + {i})" for i in range(RANK)]
    for k in range(n_operands):
        base = RANK + k * (RANK + 1)
        lines.append(f"o{k} = tl.load(desc + d + {base})")
        lines += [f"t{k}_{j} = tl.load(desc + d + {base + 1 + j})" for j in range(RANK)]
    first = RANK + n_operands * (RANK + 1)
    lines += [f"x{j} = tl.load(desc + d + {first + j})" for j in range(extras)]
    return lines


def _ptr(k: int, dtype: np.dtype) -> str:
    return f"_ptr(arena, o{k}, {TYPES[dtype.name][0]})"


def _load(k: int, dtype: np.dtype, addr: str, mask: str, other: str = "0") -> str:
    text = f"tl.load({_ptr(k, dtype)} + {addr}, mask={mask}, other={other})"
    return f"({text} != 0)" if dtype.name == "bool" else text


def _store(k: int, dtype: np.dtype, addr: str, value: str, mask: str) -> str:
    ptr_type = TYPES[dtype.name][0]
    return f"tl.store({_ptr(k, dtype)} + {addr}, ({value}).to({ptr_type}), mask={mask})"


def _addr6(k: int, flat: str = "flat") -> str:
    return f"_addr6({flat}, s1, s2, s3, s4, s5, " + ", ".join(
        f"t{k}_{j}" for j in range(RANK)) + ")"


def _rows(k: int, what: str) -> str:
    return f"_addr3({what}, s1, s2, t{k}_0, t{k}_1, t{k}_2)"


def _cols(k: int, what: str) -> str:
    return f"_addr3({what}, s4, s5, t{k}_3, t{k}_4, t{k}_5)"


@dataclass
class TaskType:
    """Tasks that share one device function."""

    index: int
    kind: str
    key: tuple[Any, ...]
    example: t.TaskOp
    dtypes: list[np.dtype]
    largest: list[int] = field(default_factory=lambda: [0] * 4)

    @property
    def name(self) -> str:
        return f"_task{self.index}_{self.kind}"


def pointwise_source(tt: TaskType, body: list[str], args: list[str], results: list[str],
                     n_in: int) -> list[str]:
    block = min(pow2(tt.largest[0]), 1024)
    lines = [*_load_desc(len(tt.dtypes)), "n = s0 * s1 * s2 * s3 * s4 * s5",
             f"for start in range(0, n, {block}):",
             f"    flat = start + tl.arange(0, {block})", "    mask = flat < n"]
    for k in range(n_in):
        lines.append(f"    {args[k]} = {_load(k, tt.dtypes[k], _addr6(k), 'mask')}")
    lines += ["    " + line for line in body]
    for j, value in enumerate(results):
        k = n_in + j
        lines.append("    " + _store(k, tt.dtypes[k], _addr6(k), value, "mask"))
    return lines


def device_source(tt: TaskType, bodies: dict[str, t.BodyOp]) -> list[str]:
    """The body of one task type's device function."""
    kind = tt.kind
    if kind == "elementwise":
        body = bodies[tt.example.body.root_reference.data]  # type: ignore[union-attr]
        n_in = len(tt.example.ins)
        args = [f"a{k}" for k in range(n_in)]
        block = min(pow2(tt.largest[0]), 1024)
        lines, results = body_source(body, args, str(block))
        return pointwise_source(tt, lines, args, results, n_in)
    if kind in ("permute", "slice", "reshape"):
        return pointwise_source(tt, [], ["a0"], ["a0"], 1)
    if kind == "embedding":
        return _embedding_source(tt)
    if kind == "gather":
        return _gather_source(tt)
    if kind == "index_put":
        return _index_put_source(tt)
    if kind == "layer_norm_backward":
        return _layer_norm_backward_source(tt)
    if kind in ("conv2d", "max_pool2d"):
        return _window_source(tt)
    if kind == "conv2d_backward":
        return _conv_backward_source(tt)
    if kind == "max_pool2d_backward":
        return _pool_backward_source(tt)
    if kind == "scatter":
        return _scatter_source(tt)
    if kind == "matmul":
        return _matmul_source(tt)
    if kind in ("sum", "mean", "amax"):
        return _reduce_source(tt)
    return _row_source(tt)


def _embedding_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    return [*_load_desc(3, 1), "n = s0 * s1 * s2 * s3 * s4 * s5",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            f"    row = {_load(1, dt[1], _addr6(1), 'mask')}",
            f"    a0 = {_load(0, dt[0], 'row * x0 + ' + _addr6(0), 'mask')}",
            "    " + _store(2, dt[2], _addr6(2), "a0", "mask")]


def _gather_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    return [*_load_desc(3, 1), "n = s0 * s1 * s2 * s3 * s4 * s5",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            f"    where = {_load(1, dt[1], _addr6(1), 'mask')}",
            f"    a0 = {_load(0, dt[0], _addr6(0) + ' + where * x0', 'mask')}",
            "    " + _store(2, dt[2], _addr6(2), "a0", "mask")]


def _scatter_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    return [*_load_desc(4, 2),
            f"for start in range(0, x0, {block}):",  # out = input (both whole and contiguous)
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < x0",
            f"    a0 = {_load(0, dt[0], 'flat', 'mask')}",
            "    " + _store(3, dt[3], "flat", "a0", "mask"),
            "tl.debug_barrier()",
            f"value = {_load(2, dt[2], '0', 'True')}",
            "n = s0 * s1 * s2 * s3 * s4 * s5",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            f"    where = {_load(1, dt[1], _addr6(1), 'mask')}",
            "    " + _store(3, dt[3], _addr6(3) + " + where * x1",
                          f"tl.full([{block}], 0, value.dtype) + value", "mask")]


def _index_put_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    accumulate = tt.example.attrs.data.get("accumulate")
    add = accumulate is not None and accumulate.value.data  # type: ignore[attr-defined]
    target = f"{_ptr(3, dt[3])} + {_addr6(3)} + where * x1"
    write = (f"tl.atomic_add({target}, value, mask=mask)" if add
             else _store(3, dt[3], _addr6(3) + " + where * x1", "value", "mask"))
    return [*_load_desc(4, 2),
            f"for start in range(0, x0, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < x0",
            f"    a0 = {_load(0, dt[0], 'flat', 'mask')}",
            "    " + _store(3, dt[3], "flat", "a0", "mask"),
            "tl.debug_barrier()",
            "n = s0 * s1 * s2 * s3 * s4 * s5",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            f"    where = {_load(1, dt[1], _addr6(1), 'mask')}",
            f"    value = {_load(2, dt[2], _addr6(2), 'mask')}",
            "    " + write]


def _layer_norm_backward_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    bl = pow2(tt.largest[2])
    if bl > 16384:
        raise TritonTargetError("layer_norm_backward rows longer than 16384 elements")
    br = max(1, min(pow2(tt.largest[1]), 8192 // bl))
    ty = TYPES[dt[0].name][1]

    def at(k: int) -> str:
        return f"{_rows(k, 'rows')}[:, None] + {_cols(k, 'cols')}[None, :]"

    return [*_load_desc(8), "R = s0 * s1 * s2", "L = s3 * s4 * s5",
            f"cols = tl.arange(0, {bl})", "cmask = cols < L",
            f"dw = tl.zeros([{bl}], {ty})", f"db = tl.zeros([{bl}], {ty})",
            f"w = {_load(4, dt[4], _cols(4, 'cols'), 'cmask')}",
            f"for r0 in range(0, R, {br}):",
            f"    rows = r0 + tl.arange(0, {br})", "    rmask = rows < R",
            "    m2 = rmask[:, None] & cmask[None, :]",
            f"    gr = {_load(0, dt[0], at(0), 'm2')}",
            f"    x = {_load(1, dt[1], at(1), 'm2')}",
            f"    mean = {_load(2, dt[2], _rows(2, 'rows'), 'rmask')}",
            f"    rstd = {_load(3, dt[3], _rows(3, 'rows'), 'rmask')}",
            "    xhat = tl.where(m2, (x - mean[:, None]) * rstd[:, None], 0.0)",
            "    gx = tl.where(m2, gr * w[None, :], 0.0)",
            "    total = tl.sum(gx, axis=1)[:, None]",
            "    dot = tl.sum(gx * xhat, axis=1)[:, None]",
            "    gi = rstd[:, None] / L * (L * gx - total - xhat * dot)",
            "    " + _store(5, dt[5], at(5), "gi", "m2"),
            "    dw += tl.sum(tl.where(m2, gr * xhat, 0.0), axis=0)",
            "    db += tl.sum(tl.where(m2, gr, 0.0), axis=0)",
            _store(6, dt[6], _cols(6, "cols"), "dw", "cmask"),
            _store(7, dt[7], _cols(7, "cols"), "db", "cmask")]


def _window_source(tt: TaskType) -> list[str]:
    """Direct convolution / max-pool: each output element loops over its window."""
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 256)
    conv = tt.kind == "conv2d"
    ty = TYPES[dt[0].name][1]
    lines = [*_load_desc(4 if conv else 3, 14),
             "C = x0", "H = x1", "W = x2", "KH = x3", "KW = x4", "SH = x5", "SW = x6",
             "PH = x7", "PW = x8", "DH = x9", "DW = x10", "G = x11", "O = x12",
             "n = s2 * s3 * s4 * s5",
             f"for start in range(0, n, {block}):",
             f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
             "    ow = flat % s5", "    oh = (flat // s5) % s4",
             "    oc = (flat // (s5 * s4)) % s3",
             "    nb = flat // (s5 * s4 * s3)"]
    if conv:
        lines += ["    CG = C // G", "    group = oc // (O // G)",
                  f"    acc = {_load(2, dt[2], 'oc', 'mask')}",
                  "    for cg in range(0, CG):",
                  "        ci = group * CG + cg",
                  "        for kh in range(0, KH):",
                  "            ih = oh * SH - PH + kh * DH",
                  "            for kw in range(0, KW):",
                  "                iw = ow * SW - PW + kw * DW",
                  "                inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
                  "                xv = " + _load(0, dt[0], "((nb * C + ci) * H + ih) * W + iw",
                                                 "inside"),
                  "                wv = " + _load(1, dt[1], "((oc * CG + cg) * KH + kh) * KW + kw",
                                                 "mask"),
                  "                acc += xv * wv",
                  "    " + _store(3, dt[3], "flat", "acc", "mask")]
    else:
        lines += [f"    best = tl.full([{block}], float('-inf'), {ty})",
                  f"    arg = tl.zeros([{block}], tl.int64)",
                  "    for kh in range(0, KH):",
                  "        ih = oh * SH - PH + kh * DH",
                  "        for kw in range(0, KW):",
                  "            iw = ow * SW - PW + kw * DW",
                  "            inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
                  "            xv = " + _load(0, dt[0], "((nb * C + oc) * H + ih) * W + iw",
                                             "inside", "float('-inf')"),
                  "            better = xv > best",
                  "            best = tl.where(better, xv, best)",
                  "            arg = tl.where(better, (ih * W + iw).to(tl.int64), arg)",
                  "    " + _store(1, dt[1], "flat", "best", "mask"),
                  "    " + _store(2, dt[2], "flat", "arg", "mask")]
    return lines


_GEOMETRY = ["C = x0", "H = x1", "W = x2", "KH = x3", "KW = x4", "SH = x5", "SW = x6",
             "PH = x7", "PW = x8", "DH = x9", "DW = x10", "G = x11", "O = x12", "NB = x13",
             "OH = x14", "OW = x15"]


def _conv_backward_source(tt: TaskType) -> list[str]:
    """grad_input (over the input's elements, gathering from the output positions that
    used each one), grad_weight (over the weight's elements, summing over batch and
    output positions) and grad_bias (over the output channels)."""
    dt = tt.dtypes
    block = 256
    ty = TYPES[dt[0].name][1]
    g_at = "((nb * O + oc) * OH + oh) * OW + ow"
    return [*_load_desc(6, 16), *_GEOMETRY, "CG = C // G", "OG = O // G",
            "n = NB * C * H * W",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            "    iw = flat % W", "    ih = (flat // W) % H", "    ci = (flat // (W * H)) % C",
            "    nb = flat // (W * H * C)", "    group = ci // CG", "    cg = ci % CG",
            f"    acc = tl.zeros([{block}], {ty})",
            "    for oo in range(0, OG):",
            "        oc = group * OG + oo",
            "        for kh in range(0, KH):",
            "            th = ih + PH - kh * DH",
            "            oh = th // SH",
            "            for kw in range(0, KW):",
            "                tw = iw + PW - kw * DW",
            "                ow = tw // SW",
            "                used = mask & (th >= 0) & (th % SH == 0) & (oh < OH) & (tw >= 0)"
            " & (tw % SW == 0) & (ow < OW)",
            f"                gv = {_load(0, dt[0], g_at, 'used')}",
            "                wv = " + _load(2, dt[2], "((oc * CG + cg) * KH + kh) * KW + kw",
                                          "mask"),
            "                acc += gv * wv",
            "    " + _store(3, dt[3], "flat", "acc", "mask"),
            "n = O * CG * KH * KW",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            "    kw = flat % KW", "    kh = (flat // KW) % KH", "    cg = (flat // (KW * KH)) % CG",
            "    oc = flat // (KW * KH * CG)", "    ci = (oc // OG) * CG + cg",
            f"    acc = tl.zeros([{block}], {ty})",
            "    for nb in range(0, NB):",
            "        for oh in range(0, OH):",
            "            ih = oh * SH - PH + kh * DH",
            "            for ow in range(0, OW):",
            "                iw = ow * SW - PW + kw * DW",
            "                inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
            "                xv = " + _load(1, dt[1], "((nb * C + ci) * H + ih) * W + iw",
                                          "inside"),
            f"                gv = {_load(0, dt[0], g_at, 'mask')}",
            "                acc += xv * gv",
            "    " + _store(4, dt[4], "flat", "acc", "mask"),
            f"for start in range(0, O, {block}):",
            f"    oc = start + tl.arange(0, {block})", "    mask = oc < O",
            f"    acc = tl.zeros([{block}], {ty})",
            "    for nb in range(0, NB):",
            "        for oh in range(0, OH):",
            "            for ow in range(0, OW):",
            f"                acc += {_load(0, dt[0], g_at, 'mask')}",
            "    " + _store(5, dt[5], "oc", "acc", "mask")]


def _pool_backward_source(tt: TaskType) -> list[str]:
    """Zero the input gradient, then add each output gradient at its argmax."""
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    ty = TYPES[dt[3].name][1]
    target = f"{_ptr(3, dt[3])} + (flat // (OH * OW)) * (H * W) + where"
    return [*_load_desc(4, 16), *_GEOMETRY,
            "n = NB * C * H * W",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})",
            "    " + _store(3, dt[3], "flat", f"tl.zeros([{block}], {ty})", "flat < n"),
            "tl.debug_barrier()",
            "n = NB * C * OH * OW",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})", "    mask = flat < n",
            f"    where = {_load(2, dt[2], 'flat', 'mask')}",
            f"    gv = {_load(0, dt[0], 'flat', 'mask')}",
            f"    tl.atomic_add({target}, gv, mask=mask)"]


def _matmul_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    bm = min(pow2(tt.largest[1], 16), 64)
    bn = min(pow2(tt.largest[2], 16), 64)
    bk = min(pow2(tt.largest[3], 16), 32)
    acc = TYPES[dt[2].name][1]
    return [*_load_desc(3), "M = s3", "N = s4", "K = s5",
            f"for m0 in range(0, M, {bm}):",
            f"    rm = m0 + tl.arange(0, {bm})",
            f"    for n0 in range(0, N, {bn}):",
            f"        rn = n0 + tl.arange(0, {bn})",
            f"        acc = tl.zeros([{bm}, {bn}], {acc})",
            f"        for k0 in range(0, K, {bk}):",
            f"            rk = k0 + tl.arange(0, {bk})",
            "            a = " + _load(0, dt[0], "rm[:, None] * t0_3 + rk[None, :] * t0_5",
                                    "(rm[:, None] < M) & (rk[None, :] < K)"),
            "            b = " + _load(1, dt[1], "rk[:, None] * t1_5 + rn[None, :] * t1_4",
                                    "(rk[:, None] < K) & (rn[None, :] < N)"),
            '            acc += tl.dot(a, b, input_precision="ieee")',
            "        " + _store(2, dt[2], "rm[:, None] * t2_3 + rn[None, :] * t2_4", "acc",
                               "(rm[:, None] < M) & (rn[None, :] < N)")]


def _reduce_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    bl = min(pow2(tt.largest[2]), 1024)
    br = max(1, min(pow2(tt.largest[1]), 4096 // bl))
    ty = TYPES[dt[1].name][1]
    if tt.kind == "amax":
        init = other = "float('-inf')"
        combine = "tl.maximum(acc, tl.max(x, axis=1))"
    else:
        init, other, combine = "0", "0", "acc + tl.sum(x, axis=1)"
    lines = [*_load_desc(2), "R = s0 * s1 * s2", "L = s3 * s4 * s5",
             f"for r0 in range(0, R, {br}):",
             f"    rows = r0 + tl.arange(0, {br})", "    rmask = rows < R",
             f"    acc = tl.full([{br}], {init}, {ty})",
             f"    for l0 in range(0, L, {bl}):",
             f"        cols = l0 + tl.arange(0, {bl})",
             "        m2 = rmask[:, None] & (cols[None, :] < L)",
             "        x = " + _load(0, dt[0], f"{_rows(0, 'rows')}[:, None] + "
                                  f"{_cols(0, 'cols')}[None, :]", "m2", other),
             f"        acc = ({combine}).to({ty})"]
    if tt.kind == "mean":
        lines.append("    acc = acc / L")
    lines.append("    " + _store(1, dt[1], _rows(1, "rows"), "acc", "rmask"))
    return lines


def _row_source(tt: TaskType) -> list[str]:
    kind, dt = tt.kind, tt.dtypes
    bl = pow2(tt.largest[2])
    if bl > 16384:
        raise TritonTargetError(f"task kind {kind}: rows of {tt.largest[2]} elements are "
                                "longer than the 16384 one block holds")
    br = max(1, min(pow2(tt.largest[1]), 8192 // bl))
    n_ops = {"layer_norm": 6, "softmax": 2, "log_softmax": 2}.get(kind, 3)
    lines = [*_load_desc(n_ops, 1 if kind == "layer_norm" else 0),
             "R = s0 * s1 * s2", "L = s3 * s4 * s5",
             f"for r0 in range(0, R, {br}):",
             f"    rows = r0 + tl.arange(0, {br})",
             f"    cols = tl.arange(0, {bl})",
             "    rmask = rows < R",
             "    m2 = rmask[:, None] & (cols[None, :] < L)"]

    def at(k: int) -> str:
        return f"{_rows(k, 'rows')}[:, None] + {_cols(k, 'cols')}[None, :]"

    body: list[str]
    if kind in ("softmax", "log_softmax"):
        minus_inf = 'float("-inf")'
        body = [f"x = {_load(0, dt[0], at(0), 'm2', minus_inf)}",
                "shifted = x - tl.max(x, axis=1)[:, None]",
                "e = tl.where(m2, tl.exp(shifted), 0.0)",
                "total = tl.sum(e, axis=1)[:, None]",
                ("y = e / total" if kind == "softmax" else "y = shifted - tl.log(total)"),
                _store(1, dt[1], at(1), "y", "m2")]
    elif kind == "softmax_backward":
        body = [f"gr = {_load(0, dt[0], at(0), 'm2')}", f"out = {_load(1, dt[1], at(1), 'm2')}",
                "y = out * (gr - tl.sum(gr * out, axis=1)[:, None])",
                _store(2, dt[2], at(2), "y", "m2")]
    elif kind == "log_softmax_backward":
        body = [f"gr = {_load(0, dt[0], at(0), 'm2')}", f"out = {_load(1, dt[1], at(1), 'm2')}",
                "y = gr - tl.exp(out) * tl.sum(gr, axis=1)[:, None]",
                _store(2, dt[2], at(2), "y", "m2")]
    elif kind == "layer_norm":
        body = [f"x = {_load(0, dt[0], at(0), 'm2')}",
                f"w = {_load(1, dt[1], _cols(1, 'cols') + '[None, :]', 'm2')}",
                f"b = {_load(2, dt[2], _cols(2, 'cols') + '[None, :]', 'm2')}",
                "mean = tl.sum(x, axis=1) / L",
                "xc = tl.where(m2, x - mean[:, None], 0.0)",
                "var = tl.sum(xc * xc, axis=1) / L",
                "eps = x0.to(tl.float64, bitcast=True)",
                f"rstd = (1.0 / tl.sqrt(var + eps)).to({TYPES[dt[0].name][1]})",
                "y = xc * rstd[:, None] * w + b",
                _store(3, dt[3], at(3), "y", "m2"),
                _store(4, dt[4], _rows(4, "rows"), "mean", "rmask"),
                _store(5, dt[5], _rows(5, "rows"), "rstd", "rmask")]
    else:
        raise TritonTargetError(f"task kind {kind!r} has no Triton device function")
    return lines + ["    " + line for line in body]


# --------------------------------------------------------------------------- the module

_PRELUDE = '''\
import os

import torch
import triton
import triton.language as tl


@triton.jit
def _ptr(arena, offset, ty: tl.constexpr):
    return (arena + offset).to(tl.pointer_type(ty), bitcast=True)


@triton.jit
def _addr6(flat, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5):
    i5 = flat % s5
    r = flat // s5
    i4 = r % s4
    r = r // s4
    i3 = r % s3
    r = r // s3
    i2 = r % s2
    r = r // s2
    i1 = r % s1
    i0 = r // s1
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3 + i4 * t4 + i5 * t5


@triton.jit
def _addr3(flat, s1, s2, t0, t1, t2):
    i2 = flat % s2
    r = flat // s2
    i1 = r % s1
    i0 = r // s1
    return i0 * t0 + i1 * t1 + i2 * t2


@triton.jit
def _tanh(x):
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


@triton.jit
def _pow(a, b):
    r = tl.exp(b * tl.log(tl.abs(a)))
    whole = tl.floor(b) == b
    odd = whole & ((b - 2.0 * tl.floor(b * 0.5)) == 1.0)
    negative = tl.where(whole, tl.where(odd, -r, r), float("nan"))
    zero = tl.where(b == 0.0, 1.0, tl.where(b > 0.0, 0.0, float("inf")))
    return tl.where(a < 0.0, negative, tl.where(a == 0.0, zero, r))


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit
def _gelu_tanh(x):
    return 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@triton.jit
def _gelu_backward(grad, x):
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    return grad * (cdf + x * pdf)


@triton.jit
def _gelu_backward_tanh(grad, x):
    t = _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))
    right = 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x)
    return grad * (0.5 * (1.0 + t) + right)
'''

_RUNTIME = '''

@triton.jit
def megakernel(arena, tasks, descs, waits, counters, targets, ticket, errors, order,
               first, count, spin_bound):
    """Persistent worker: take a ticket, wait for the task's events, run it, signal."""
    i = tl.atomic_add(ticket, 1)
    while i < count:
        task = tl.load(order + first + i)
        row = tasks + task * 5
        kind = tl.load(row)
        d = tl.load(row + 1)
        w0 = tl.load(row + 2)
        nw = tl.load(row + 3)
        signal = tl.load(row + 4)
        for j in range(nw):
            event = tl.load(waits + w0 + j)
            target = tl.load(targets + event)
            seen = tl.atomic_add(counters + event, 0, sem="acquire")
            spins = 0
            while (seen < target) & (spins < spin_bound):
                seen = tl.atomic_add(counters + event, 0, sem="acquire")
                spins += 1
            if seen < target:
                tl.atomic_max(errors, task + 1)
        tl.debug_barrier()
{dispatch}
        tl.debug_barrier()
        if signal >= 0:
            tl.atomic_add(counters + signal, 1, sem="release")
        i = tl.atomic_add(ticket, 1)


SIGNATURE = {{"arena": "*u8", "tasks": "*i64", "descs": "*i64", "waits": "*i64",
             "counters": "*i32", "targets": "*i32", "ticket": "*i32", "errors": "*i32",
             "order": "*i64", "first": "i64", "count": "i64", "spin_bound": "i32"}}


class MegakernelError(RuntimeError):
    """A task waited longer than the spin bound: an event that never fires."""


def interpreting():
    return os.environ.get("TRITON_INTERPRET") == "1"


def _device(inputs):
    if interpreting():
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU here: set TRITON_INTERPRET=1 to run on the CPU")
    return torch.device("cuda")


def _table(values, dtype, device):
    return torch.tensor(values or [0], dtype=dtype, device=device)


def run(*inputs, mode="megakernel", grid=None, spin_bound=1 << 20, poison=True):
    """Run the kernel on torch tensors; returns its outputs. ``mode`` is
    ``"megakernel"`` (one launch) or ``"levels"`` (one launch per dependency level)."""
    if len(inputs) != len(INPUTS):
        raise TypeError(f"{{KERNEL}} takes {{len(INPUTS)}} inputs, got {{len(inputs)}}")
    device = _device(inputs)
    arena = torch.full((ARENA_BYTES,), 255 if poison else 0, dtype=torch.uint8, device=device)
    for value, (offset, shape, dtype) in zip(inputs, INPUTS):
        value = torch.as_tensor(value)
        if tuple(value.shape) != shape or value.dtype != dtype:
            raise TypeError(f"{{KERNEL}}: expected {{dtype}} of shape {{shape}}, got "
                            f"{{value.dtype}} of shape {{tuple(value.shape)}}")
        flat = value.detach().to(device).contiguous().reshape(-1).view(torch.uint8)
        arena[offset:offset + flat.numel()] = flat
    for offset, dtype, values in CONSTANTS:
        flat = torch.tensor(values, dtype=dtype, device=device).view(torch.uint8)
        arena[offset:offset + flat.numel()] = flat
    tasks = _table(TASKS, torch.int64, device)
    descs = _table(DESCS, torch.int64, device)
    waits = _table(WAITS, torch.int64, device)
    targets = _table(TARGETS, torch.int32, device)
    counters = torch.zeros(max(len(TARGETS), 1), dtype=torch.int32, device=device)
    errors = torch.zeros(1, dtype=torch.int32, device=device)
    if grid is None:
        grid = 1 if interpreting() else torch.cuda.get_device_properties(
            device).multi_processor_count
    if mode == "megakernel":
        launches = [(0, NUM_TASKS)]
        order = _table(list(range(NUM_TASKS)), torch.int64, device)
    elif mode == "levels":
        launches = LEVELS
        order = _table(LEVEL_ORDER, torch.int64, device)
    else:
        raise ValueError(f"mode must be 'megakernel' or 'levels', not {{mode!r}}")
    for first, count in launches:
        ticket = torch.zeros(1, dtype=torch.int32, device=device)
        megakernel[(grid,)](arena, tasks, descs, waits, counters, targets, ticket, errors,
                            order, first, count, spin_bound)
    failed = int(errors.item())
    if failed:
        raise MegakernelError(f"{{KERNEL}}: task {{failed - 1}} waited more than {{spin_bound}} "
                              "polls for an event that never fired")
    outs = []
    for offset, shape, dtype in OUTPUTS:
        n = 1
        for size in shape:
            n *= size
        nbytes = n * torch.empty((), dtype=dtype).element_size()
        outs.append(arena[offset:offset + nbytes].view(dtype).reshape(shape).clone())
    return outs


def compile_for_gpu(arch=90, warp_size=32):
    """Compile the megakernel for a CUDA GPU target without running it (needs Triton
    not in interpreter mode)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(fn=megakernel, signature=SIGNATURE, constexprs={{}})
    return triton.compile(source, target=GPUTarget("cuda", arch, warp_size))
'''


def _levels(preds: Sequence[Sequence[int]]) -> tuple[list[tuple[int, int]], list[int]]:
    depth: list[int] = []
    for ps in preds:
        depth.append(1 + max((depth[p] for p in ps), default=-1))
    order = sorted(range(len(preds)), key=lambda i: (depth[i], i))
    launches: list[tuple[int, int]] = []
    start = 0
    for level in range(max(depth, default=-1) + 1):
        count = depth.count(level)
        launches.append((start, count))
        start += count
    return launches, order


def _torch_dtype(dtype: np.dtype) -> str:
    return TYPES[dtype.name][2]


def _fmt_list(values: Sequence[Any], per_line: int = 16) -> str:
    rows = [", ".join(str(v) for v in values[i:i + per_line])
            for i in range(0, len(values), per_line)]
    return "[\n    " + ",\n    ".join(rows) + ",\n]" if rows else "[]"


def generate(kernel: t.KernelOp) -> str:
    """The Python source of the megakernel module for ``kernel``."""
    from mncore_ir.targets.task_simulator import predecessors

    layout = Layout(kernel)
    bodies = kernel.bodies()
    types: dict[tuple[Any, ...], TaskType] = {}
    rows: list[list[int]] = []
    descs: list[int] = []
    waits: list[int] = []
    events = {op.result: i for i, op in enumerate(
        o for o in kernel.body.block.ops if isinstance(o, t.EventOp))}
    targets = [op.triggers.value.data for op in kernel.body.block.ops
               if isinstance(op, t.EventOp)]
    unsupported = sorted({task.kind.data for task in kernel.tasks()
                          if task.kind.data not in VIEWS})
    if unsupported:
        raise TritonTargetError(f"the triton target has no device function for task kinds: "
                                f"{', '.join(unsupported)}")
    for task in kernel.tasks():
        desc = VIEWS[task.kind.data](task, layout)
        dtypes = [op.dtype for op in desc.operands]
        body = task.body.root_reference.data if task.body is not None else None
        key = (task.kind.data, body, tuple(d.name for d in dtypes))
        if key not in types:
            types[key] = TaskType(len(types), task.kind.data, key, task, dtypes)
        tt = types[key]
        sizes = _right(desc.sizes, RANK, 1)
        tt.largest[0] = max(tt.largest[0], math.prod(sizes))
        tt.largest[1] = max(tt.largest[1], math.prod(sizes[:3]) if task.kind.data != "matmul"
                            else sizes[3])
        tt.largest[2] = max(tt.largest[2], math.prod(sizes[3:]) if task.kind.data != "matmul"
                            else sizes[4])
        tt.largest[3] = max(tt.largest[3], sizes[5])
        signal = events[task.signal] if task.signal is not None else -1
        rows.append([tt.index, len(descs), len(waits), len(task.waits), signal])
        descs += desc.encode()
        waits += [events[e] for e in task.waits]

    functions = []
    for tt in types.values():
        lines = device_source(tt, bodies)
        functions.append("\n\n@triton.jit\ndef " + tt.name + "(arena, desc, d):\n"
                         + "\n".join("    " + line for line in lines) + "\n")
    dispatch = []
    for i, tt in enumerate(types.values()):
        keyword = "if" if i == 0 else "elif"
        dispatch.append(f"        {keyword} kind == {tt.index}:\n"
                        f"            {tt.name}(arena, descs, d)")
    launches, order = _levels(predecessors(kernel))

    def slot(value: SSAValue) -> str:
        shape = tuple(value.type.get_shape())  # type: ignore[attr-defined]
        return f"({layout.base[value]}, {shape!r}, {_torch_dtype(dtype_of(value))})"

    constants = []
    for op in kernel.body.block.ops:
        if isinstance(op, t.ConstantOp):
            values = constant_value(op.value).reshape(-1).tolist()  # type: ignore[arg-type]
            constants.append(f"({layout.base[op.result]}, "
                             f"{_torch_dtype(dtype_of(op.result))}, {values!r})")
    header = [
        f'"""The task kernel @{kernel.sym_name.data} as a persistent Triton megakernel '
        '(generated by mncore-ir: mncore-opt -t triton)."""', "",
    ]
    tables = [
        "", "", f"KERNEL = {('@' + kernel.sym_name.data)!r}",
        f"NUM_TASKS = {len(rows)}", f"ARENA_BYTES = {layout.size}",
        "# (byte offset, shape, dtype) of each input and output in the arena",
        f"INPUTS = [{', '.join(slot(v) for v in kernel.inputs)}]",
        f"OUTPUTS = [{', '.join(slot(v) for v in kernel.outputs)}]",
        f"CONSTANTS = [{', '.join(constants)}]",
        "# per task: type, descriptor offset, first wait, wait count, signalled event (-1: none)",
        f"TASKS = {_fmt_list([x for r in rows for x in r], 15)}",
        f"# per task: {RANK} sizes, then per operand: tile origin (bytes) and {RANK} strides",
        f"DESCS = {_fmt_list(descs)}",
        f"WAITS = {_fmt_list(waits)}",
        f"TARGETS = {_fmt_list(targets)}",
        "# per dependency level: (first, count) into LEVEL_ORDER",
        f"LEVELS = {launches!r}",
        f"LEVEL_ORDER = {_fmt_list(order)}",
        "TASK_TYPES = " + repr([tt.name for tt in types.values()]),
    ]
    return ("\n".join(header) + _PRELUDE + "".join(functions) + "\n".join(tables) + "\n"
            + _RUNTIME.format(dispatch="\n".join(dispatch)))


@dataclass(frozen=True)
class TritonTarget(Target):
    """A Python module with the persistent Triton megakernel of the module's only (or
    ``main``) task kernel, and its launcher."""

    name = "triton"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from mncore_ir.targets.task_simulator import find_kernel

        output.write(generate(find_kernel(module)))


def load(source: str, directory: str, name: str = "mncore_megakernel") -> Any:
    """Import generated source (Triton reads kernels' source files, so it is written to
    ``directory`` first)."""
    import hashlib
    import importlib.util
    import os

    digest = hashlib.blake2b(source.encode(), digest_size=8).hexdigest()
    path = os.path.join(directory, f"{name}_{digest}.py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"{name}_{digest}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
