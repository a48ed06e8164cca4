"""ATen ops that read or write a tensor at computed positions, as gathers and
index_puts with constant (or counted) indices: ``unfold`` (sliding windows),
``as_strided`` reads and writes of a contiguous tensor, ``diagonal_scatter``,
``masked_scatter`` (the k-th true element takes the k-th source element: a running
count), ``nonzero_static`` (a fixed number of coordinates), and distances (``cdist``,
``pdist``) and ``addbmm`` written with broadcasting. Checked against eager in
``tests/test_aten_views.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import Math
from mncore_ir.frontends.aten_expansions import argument, put, take, zeros_when_empty
from mncore_ir.frontends.aten_handlers import handles, narrowed, reduce, widened
from mncore_ir.frontends.aten_order import ORDER_MAX
from mncore_ir.frontends.aten_scans import scan
from mncore_ir.frontends.fx_importer import TORCH_TO_ELEMENT, FxImporter, unsupported

aten = torch.ops.aten


def _flat_read(imp: FxImporter, x: SSAValue, positions: np.ndarray) -> SSAValue:
    """``x.flatten()[positions]`` (constant positions, any shape)."""
    flat = imp.reshape(x, (math.prod(g.shape_of(x)),))
    index = imp.constant(positions.reshape(-1), g.i64, (positions.size,))
    return imp.reshape(take(imp, flat, [index]), positions.shape)


def _strided(node: fx.Node, x: Any, size: list[int], stride: list[int], offset: int | None
             ) -> np.ndarray:
    """The storage positions ``as_strided(size, stride, offset)`` reads, for a
    contiguous input (a view's storage is not the lazy value)."""
    if not x.is_contiguous() or x.storage_offset():
        raise unsupported(node, "as_strided of a tensor that is not contiguous")
    grids = np.meshgrid(*[np.arange(n) for n in size], indexing="ij")
    positions = (offset or 0) + sum((gr * s for gr, s in zip(grids, stride, strict=True)),
                                    np.zeros(tuple(size), np.int64))
    if positions.size and positions.max() >= x.numel():
        raise unsupported(node, "as_strided past the end of the tensor")
    return np.asarray(positions, np.int64)


@handles(aten.as_strided_copy.default, aten.as_strided.default)
def _as_strided(imp: FxImporter, node: fx.Node) -> SSAValue:
    positions = _strided(node, imp.meta(node.args[0]), node.args[1], node.args[2],
                         argument(node, 3, "storage_offset", None))
    return _flat_read(imp, imp.value(node.args[0]), positions)


@handles(aten.as_strided_scatter.default)
def _as_strided_scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, src = imp.value(node.args[0]), imp.value(node.args[1])
    positions = _strided(node, imp.meta(node.args[0]), node.args[2], node.args[3],
                         argument(node, 4, "storage_offset", None))
    shape = g.shape_of(x)
    flat = imp.reshape(x, (math.prod(shape),))
    index = imp.constant(positions.reshape(-1), g.i64, (positions.size,))
    written = put(imp, flat, [index], imp.reshape(src, (positions.size,)), False)
    return imp.reshape(written, shape)


@handles(aten.unfold.default, aten.unfold_copy.default)
def _unfold(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Windows of ``size`` every ``step`` along ``dim``: one gather of constant
    positions, the window's elements on a new last dimension."""
    x = imp.value(node.args[0])
    dim, size, step = node.args[1:4]
    shape = g.shape_of(x)
    if not shape:
        return imp.reshape(x, (1,))
    dim %= len(shape)
    count = (shape[dim] - size) // step + 1
    windows = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    index = imp.constant(windows, g.i64, windows.shape)
    read = take(imp, x, [None] * dim + [index])  # (..., count, size, ...)
    rank = len(shape) + 1
    perm = [d for d in range(rank) if d != dim + 1] + [dim + 1]
    return imp.insert(g.PermuteOp(read, perm=perm))


@handles(aten.diagonal_scatter.default)
def _diagonal_scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, src = imp.value(node.args[0]), imp.value(node.args[1])
    offset = argument(node, 2, "offset", 0)
    dim1, dim2 = argument(node, 3, "dim1", 0), argument(node, 4, "dim2", 1)
    shape = g.shape_of(x)
    dim1, dim2 = dim1 % len(shape), dim2 % len(shape)
    length = g.shape_of(src)[-1]
    rows = np.arange(length) + max(-offset, 0)
    cols = np.arange(length) + max(offset, 0)
    indices: list[SSAValue | None] = [None] * len(shape)
    indices[dim1] = imp.constant(rows, g.i64, (length,))
    indices[dim2] = imp.constant(cols, g.i64, (length,))
    # x[..., rows, ..., cols, ...] has the diagonal first (the indexed dims apart) or in
    # dim1's place (adjacent); src has it last
    rank = len(shape)
    first = min(dim1, dim2) if abs(dim1 - dim2) == 1 else 0
    order = list(range(rank - 2))
    order.insert(first, rank - 2)
    values = src if order == sorted(order) else imp.insert(g.PermuteOp(src, perm=order),
                                                           hint=False)
    return put(imp, x, indices, values, False)


@handles(aten.masked_scatter.default)
def _masked_scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Where the (broadcast) mask is true, the source's elements in order: the k-th
    true element (a running count of the flattened mask) reads source element k."""
    x, mask, source = node.args[:3]
    dtype = imp.meta(node).dtype
    v = imp.as_type(x, dtype)
    shape = g.shape_of(v)
    total = math.prod(shape)
    m = imp.value(mask)
    if g.shape_of(m) != shape:
        m = imp.insert(g.ExpandOp(imp.reshape(m, (1,) * (len(shape) - len(g.shape_of(m)))
                                              + g.shape_of(m)), shape), hint=False)
    flat_mask = imp.reshape(m, (total,))
    count = imp.insert(g.ConvertOp(flat_mask, g.i64), hint=False)
    k = scan(imp, count, 0, lambda a, b: imp.insert(g.AddOp(a, b), hint=False), 0)
    src = imp.as_type(source, dtype)
    available = math.prod(g.shape_of(src))
    if not available:
        return v
    math_ = Math(imp.builder, k)
    position = math_.e(g.MinimumOp(math_.e(g.MaximumOp(math_.sub(k, 1), imp.constant(
        0, g.i64))), imp.constant(available - 1, g.i64)))
    picked = take(imp, imp.reshape(src, (available,)), [position])
    chosen = imp.insert(g.WhereOp(flat_mask, picked, imp.reshape(v, (total,))), hint=False)
    return imp.reshape(chosen, shape)


@handles(aten.nonzero_static.default)
@zeros_when_empty
def _nonzero_static(imp: FxImporter, node: fx.Node) -> SSAValue:
    """The coordinates of the first ``size`` nonzero elements, ``fill_value`` rows
    after them: row r is the element whose running count of nonzeros is r + 1."""
    x = imp.value(node.args[0])
    size = argument(node, 1, "size", None)
    fill = node.kwargs.get("fill_value", -1)
    shape = g.shape_of(x)
    total = math.prod(shape)
    if total * size > ORDER_MAX:
        raise unsupported(node, f"nonzero_static of {total} elements into {size} rows")
    flat = imp.reshape(x, (max(total, 1),)) if total else None
    if flat is None:
        return imp.insert(g.ExpandOp(imp.constant(fill, g.i64), (size, len(shape))))
    nonzero = imp.insert(g.NeOp(flat, imp.constant(0, g.element_type_of(flat))), hint=False)
    ones = imp.insert(g.ConvertOp(nonzero, g.i64), hint=False)
    running = scan(imp, ones, 0, lambda a, b: imp.insert(g.AddOp(a, b), hint=False), 0)
    m = Math(imp.builder, running)
    # row r (size, 1) against element e (1, total): e is row r's if nonzero and counted r+1
    rows = imp.constant(np.arange(1, size + 1).reshape(size, 1), g.i64, (size, 1))
    hit = m.and_(imp.reshape(nonzero, (1, total)), m.eq(imp.reshape(running, (1, total)),
                                                         rows))
    coords = np.stack(np.unravel_index(np.arange(total), shape), axis=-1) if shape else \
        np.zeros((total, 0), np.int64)
    out = []
    for d in range(len(shape)):
        coord = imp.constant(coords[:, d].reshape(1, total), g.i64, (1, total))
        picked = reduce(imp, g.SumOp, m.where(hit, coord, imp.constant(0, g.i64)), [1],
                        False, hint=False)
        out.append(imp.reshape(picked, (size, 1)))
    present = imp.reshape(m.le(imp.constant(np.arange(1, size + 1), g.i64, (size,)),
                               imp.reshape(reduce(imp, g.SumOp, ones, [0], False,
                                                  hint=False), (1,))), (size, 1))
    table = out[0] if len(out) == 1 else imp.insert(g.ConcatOp(*out, dim=1), hint=False)
    return imp.insert(g.WhereOp(present, table, imp.constant(fill, g.i64)))


@handles(aten.addbmm.default)
def _addbmm(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` as ATen computes it: one
    addmm per batch into the result (each in f32, rounded once for a narrow float)."""
    x, b1, b2 = node.args[:3]
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    dtype = imp.meta(node).dtype
    typ, shape = TORCH_TO_ELEMENT[dtype], tuple(imp.meta(node).shape)
    first, second = (widened(imp, imp.as_type(v, dtype)) for v in (b1, b2))
    m = Math(imp.builder, first)
    result = imp.as_type(x, dtype)
    if g.shape_of(result) != shape:
        result = imp.insert(g.ExpandOp(result, shape), hint=False)
    scale = beta
    for b in range(g.shape_of(first)[0]):
        pick = [imp.reshape(imp.insert(g.SliceOp(v, dim=0, start=b, end=b + 1), hint=False),
                            g.shape_of(v)[1:]) for v in (first, second)]
        product = m.e(g.MatmulOp(*pick))
        if alpha != 1:
            product = m.mul(product, float(alpha))
        if scale != 0:
            current = widened(imp, result)
            product = m.add(current if scale == 1 else m.mul(current, float(scale)), product)
        result, scale = narrowed(imp, product, typ), 1
    return result


def _norm(m: Math, imp: FxImporter, diff: SSAValue, p: float, axis: int) -> SSAValue:
    """The p-norm along ``axis`` (p = 0: nonzeros counted; inf: the largest)."""
    ad = m.abs(diff)
    if p == 0:
        nonzero = m.e(g.ConvertOp(m.ne(ad, 0.0), g.element_type_of(diff)))
        return reduce(imp, g.SumOp, nonzero, [axis], False, hint=False)
    if math.isinf(p):
        return reduce(imp, g.AmaxOp, ad, [axis], False, hint=False)
    if p == 1:
        return reduce(imp, g.SumOp, ad, [axis], False, hint=False)
    if p == 2:
        return m.unary(g.SqrtOp, reduce(imp, g.SumOp, m.mul(ad, ad), [axis], False,
                                        hint=False))
    powered = m.e(g.PowOp(ad, m.v(float(p))))
    return m.e(g.PowOp(reduce(imp, g.SumOp, powered, [axis], False, hint=False),
                       m.v(1 / p)))


@handles(aten._cdist_forward.default)
def _cdist(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Distances of every row pair by broadcasting (no ``|x|^2 + |y|^2 - 2xy`` trick,
    which cancels): (..., P, 1, M) - (..., 1, R, M), normed along M."""
    x1, x2, p = node.args[:3]
    typ = TORCH_TO_ELEMENT[imp.meta(node).dtype]
    a, b = (widened(imp, imp.value(v)) for v in (x1, x2))
    sa, sb = g.shape_of(a), g.shape_of(b)
    if math.prod(sa[:-1]) * sb[-2] * sa[-1] > ORDER_MAX:
        raise unsupported(node, "cdist of more than ORDER_MAX differences")
    m = Math(imp.builder, a)
    diff = m.sub(imp.reshape(a, (*sa[:-1], 1, sa[-1])),
                 imp.reshape(b, (*sb[:-2], 1, sb[-2], sb[-1])))
    return narrowed(imp, _norm(m, imp, diff, float(p), len(sa)), typ)


@handles(aten._pdist_forward.default)
def _pdist(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Distances of rows i < j in order: two gathers of constant rows, normed."""
    x, p = node.args[0], argument(node, 1, "p", 2.0)
    typ = TORCH_TO_ELEMENT[imp.meta(node).dtype]
    v = widened(imp, imp.value(x))
    n = g.shape_of(v)[0]
    first, second = np.triu_indices(n, 1)
    if not first.size:
        return imp.insert(g.ExpandOp(imp.constant(0.0, g.element_type_of(v)), (0,)))
    m = Math(imp.builder, v)
    rows = [take(imp, v, [imp.constant(i, g.i64, (i.size,))]) for i in (first, second)]
    return narrowed(imp, _norm(m, imp, m.sub(*rows), float(p), 1), typ)


@handles(aten.put.default)
def _put(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``x.flatten()[index] = source`` (``+=``), negative indices from the end."""
    x, index, source = node.args[:3]
    accumulate = argument(node, 3, "accumulate", False)
    dtype = imp.meta(node).dtype
    v = imp.as_type(x, dtype)
    shape = g.shape_of(v)
    count = math.prod(imp.meta(index).shape)
    if not count:
        return v
    flat = imp.reshape(v, (math.prod(shape),))
    written = put(imp, flat, [imp.reshape(imp.value(index), (count,))],
                  imp.reshape(imp.as_type(source, dtype), (count,)), bool(accumulate))
    return imp.reshape(written, shape)


@handles(aten._trilinear.default)
def _trilinear(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``sum(i1' * i2' * i3', sumdim)`` with each input's ``expand`` dimensions inserted
    (what ``bilinear`` decomposes to), in ATen's order: i1 with i2 summed over the
    dimensions i3 lacks, then with i3 over the rest (each in f32, rounded once for a
    narrow float)."""
    i1, i2, i3, e1, e2, e3, sumdim = node.args[:7]
    dtype = imp.meta(node).dtype
    typ = TORCH_TO_ELEMENT[dtype]
    values = []
    for arg, expand in ((i1, e1), (i2, e2), (i3, e3)):
        v = widened(imp, imp.as_type(arg, dtype))
        shape = list(g.shape_of(v))
        for d in sorted(expand):
            shape.insert(d, 1)
        values.append(imp.reshape(v, shape))
    m = Math(imp.builder, values[0])
    pair = m.mul(values[0], values[1])
    first = sorted(d for d in sumdim if d in e3)
    if first:
        pair = reduce(imp, g.SumOp, pair, first, True, hint=False)
    pair = widened(imp, narrowed(imp, pair, typ))
    product = m.mul(pair, values[2])
    rest = sorted(d for d in sumdim if d not in e3)
    if rest:
        product = reduce(imp, g.SumOp, product, rest, True, hint=False)
    out = tuple(imp.meta(node).shape)
    return narrowed(imp, imp.reshape(product, out), typ)
