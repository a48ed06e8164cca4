"""Scatters of ATen as graph ops. ``index_add``, ``index_copy`` and ``index_fill`` are
index_puts of slices (torch's own decompositions are index_puts that count a negative
index from the end, which the first two refuse). The reductions (``scatter_reduce``,
``index_reduce``, and ``scatter`` with ``reduce='multiply'``): each output position
along the dimension gathers every source element whose index names it, by comparison
(positions times source length per row, at most :data:`aten_order.ORDER_MAX`), and
reduces them with the op: sums and maxima exact up to order, products as a tree.
Positions no index names keep the input. Checked against eager in
``tests/test_aten_order.py`` and ``tests/test_lazy_index_bounds.py``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import Math
from mncore_ir.frontends.aten_expansions import argument, extreme, put, scatter
from mncore_ir.frontends.aten_handlers import handles, reduce
from mncore_ir.frontends.aten_order import ORDER_MAX
from mncore_ir.frontends.aten_scans import fold
from mncore_ir.frontends.fx_importer import FxImporter, unsupported

aten = torch.ops.aten

#: Where no source element lands, per reduction (floats; integers use their bounds).
IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}


def _slice_to(imp: FxImporter, x: SSAValue, extents: Sequence[int]) -> SSAValue:
    for d, n in enumerate(extents):
        if g.shape_of(x)[d] > n:
            x = imp.insert(g.SliceOp(x, dim=d, start=0, end=n), hint=False)
    return x


def _identity(x: SSAValue, how: str) -> float | int:
    typ = g.element_type_of(x)
    if g.is_float(typ) or how in ("sum", "mean", "prod"):
        return IDENTITY[how] if g.is_float(typ) else int(IDENTITY[how])
    bits = typ.width.data
    return -(2 ** (bits - 1)) if how == "amax" else 2 ** (bits - 1) - 1


def scatter_reduce(imp: FxImporter, node: fx.Node, x: SSAValue, dim: int, index: SSAValue,
                   source: SSAValue, how: str, include_self: bool) -> SSAValue:
    """``x`` with ``source`` reduced into it along ``dim`` at ``index`` (torch's
    scatter_reduce: the index no larger than the input outside ``dim``)."""
    shape, ishape = g.shape_of(x), g.shape_of(index)
    if not math.prod(ishape):
        return x
    n, rank = shape[dim], len(shape)
    if math.prod(ishape) * n > ORDER_MAX:
        raise unsupported(node, f"scatter_reduce of {math.prod(ishape)} elements into "
                                f"{n} positions (more than {ORDER_MAX} comparisons)")
    if how == "mean" and not g.is_float(g.element_type_of(x)):
        raise unsupported(node, "scatter_reduce 'mean' of integers (rounded division)")
    m = Math(imp.builder, x)
    source = _slice_to(imp, source, ishape)
    region = _slice_to(imp, x, [n if d == dim else s for d, s in enumerate(ishape)])
    # (..., n positions, ..., sources along dim last): source j lands on position t
    position = [1] * (rank + 1)
    position[dim] = n
    positions = imp.constant(np.arange(n).reshape(position), g.i64, position)
    lands = m.eq(_last(imp, _checked(imp, index, dim, n), dim), positions)
    values = _last(imp, source, dim)
    kept = m.where(lands, values, _identity(x, how))
    last = rank
    if how in ("sum", "mean"):
        total = reduce(imp, g.SumOp, kept, [last], False, hint=False)
    elif how == "prod":
        total = imp.reshape(fold(imp, kept, last, m.mul, 1), g.shape_of(kept)[:-1])
    else:
        total = extreme(imp, kept, [last], False, how == "amax")
    count = reduce(imp, g.SumOp, imp.insert(g.ConvertOp(lands, g.i64), hint=False),
                   [last], False, hint=False)
    touched = m.lt(imp.constant(0, g.i64), count)
    if how == "mean":
        divisor = imp.insert(g.ConvertOp(count, g.element_type_of(x)), hint=False)
        if include_self:
            total, divisor = m.add(total, region), m.add(divisor, 1.0)
        result = m.div(total, divisor)
    elif not include_self:
        result = total
    elif how == "sum":
        result = m.add(region, total)
    elif how == "prod":
        result = m.mul(region, total)
    else:
        result = m.e((g.MaximumOp if how == "amax" else g.MinimumOp)(region, total))
    result = m.where(touched, result, region)
    return _restore(imp, result, x, dim)


def _checked(imp: FxImporter, index: SSAValue, dim: int, n: int) -> SSAValue:
    """``index`` read back through a gather of ``0..n-1`` along ``dim``: the same
    values, and an index out of range (negative included) refused when the graph runs,
    as eager refuses it, rather than landing nowhere."""
    shape = list(g.shape_of(index))
    where = [1] * len(shape)
    where[dim] = shape[dim] = n
    positions = imp.insert(g.ExpandOp(imp.constant(np.arange(n).reshape(where), g.i64,
                                                   where), shape), hint=False)
    if g.element_type_of(index) != g.i64:
        index = imp.insert(g.ConvertOp(index, g.i64), hint=False)
    return imp.insert(g.GatherOp(positions, index, dim=dim), hint=False)


def _last(imp: FxImporter, x: SSAValue, dim: int) -> SSAValue:
    """``x`` of rank r as rank r+1 with ``dim``'s elements on a new last axis (the
    dimension itself left as 1)."""
    shape = list(g.shape_of(x))
    moved = x if dim == len(shape) - 1 else imp.insert(
        g.PermuteOp(x, perm=[d for d in range(len(shape)) if d != dim] + [dim]), hint=False)
    out = [s for d, s in enumerate(shape) if d != dim]
    out.insert(dim, 1)
    return imp.reshape(moved, [*out, shape[dim]])


def _restore(imp: FxImporter, region: SSAValue, x: SSAValue, dim: int) -> SSAValue:
    """``region`` (the index's extent outside ``dim``) completed with ``x`` elsewhere."""
    shape = g.shape_of(x)
    for d in reversed(range(len(shape))):
        have = g.shape_of(region)[d]
        if d == dim or have == shape[d]:
            continue
        rest = imp.insert(g.SliceOp(x, dim=d, start=have, end=shape[d]), hint=False)
        rest = _slice_to(imp, rest, [s if e != d else shape[d] for e, s in
                                     enumerate(g.shape_of(region))])
        region = imp.insert(g.ConcatOp(region, rest, dim=d), hint=False)
    return region


@handles(aten.scatter_reduce.two)
def _scatter_reduce(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, dim, index, source, how = node.args[:5]
    include_self = argument(node, 5, "include_self", True)
    dtype = imp.meta(node).dtype
    v = imp.as_type(x, dtype)
    if not g.shape_of(v):
        raise unsupported(node, "scatter_reduce of a 0-d tensor")
    return scatter_reduce(imp, node, v, dim % len(g.shape_of(v)), imp.value(index),
                          imp.as_type(source, dtype), how, include_self)


@handles(aten.index_reduce.default)
def _index_reduce(imp: FxImporter, node: fx.Node) -> SSAValue:
    """scatter_reduce with the 1-D index repeated across the source."""
    x, dim, index, source, how = node.args[:5]
    include_self = argument(node, 5, "include_self", True)
    dtype = imp.meta(node).dtype
    v, s = imp.as_type(x, dtype), imp.as_type(source, dtype)
    rank = len(g.shape_of(v))
    if not rank:  # a 0-d tensor is one of one element
        v, s, rank = imp.reshape(v, (1,)), imp.reshape(s, (1,)), 1
    dim %= rank
    where = [1] * rank
    where[dim] = g.shape_of(s)[dim]
    spread = imp.insert(g.ExpandOp(imp.reshape(imp.value(index), where), g.shape_of(s)),
                        hint=False)
    if g.element_type_of(spread) != g.i64:
        spread = imp.insert(g.ConvertOp(spread, g.i64), hint=False)
    out = scatter_reduce(imp, node, v, dim, spread, s, how, include_self)
    return imp.reshape(out, imp.meta(node).shape)


@handles(aten.scatter.reduce, aten.scatter.value_reduce)
def _scatter_with_reduce(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``reduce='add'`` accumulates (an index_put); ``'multiply'`` is a product."""
    how = argument(node, 4, "reduce", None)
    if how == "add":
        return scatter(imp, node)
    x, dim, index, value = node.args[:4]
    dtype = imp.meta(node).dtype
    v, i = imp.as_type(x, dtype), imp.value(index)
    source = imp.as_type(value, dtype)
    if not g.shape_of(source):
        source = imp.insert(g.ExpandOp(imp.reshape(source, (1,) * len(g.shape_of(i))),
                                       g.shape_of(i)), hint=False)
    return scatter_reduce(imp, node, v, dim % max(len(g.shape_of(v)), 1), i, source, "prod",
                          True)


@handles(aten.index_add.default, aten.index_copy.default)
def _index_add(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``x.index_add(dim, index, source, alpha=)`` (``index_copy``: the rows replaced):
    an index_put of the source's slices along ``dim``, a negative index out of range
    as in eager (torch's decomposition, an index_put, would count it from the end)."""
    x, dim, index, source = node.args[:4]
    dtype = imp.meta(node).dtype
    v, s = imp.as_type(x, dtype), imp.as_type(source, dtype)
    shape = imp.meta(node).shape
    if not math.prod(shape) or not imp.meta(index).numel():
        return v
    accumulate = node.target == aten.index_add.default
    alpha = argument(node, 4, "alpha", 1) if accumulate else 1
    if alpha != 1:
        s = imp.insert(g.MulOp(s, imp.constant(alpha, g.element_type_of(s))), hint=False)
    rank = max(len(shape), 1)
    v, s = imp.reshape(v, (1,)) if not shape else v, imp.reshape(s, (1,) * rank) if not \
        g.shape_of(s) else s
    i = imp.reshape(imp.value(index), (imp.meta(index).numel(),))
    out = put(imp, v, [*[None] * (dim % rank), i], s, accumulate, wrap=False)
    return imp.reshape(out, shape)


@handles(aten.index_fill.int_Scalar, aten.index_fill.int_Tensor)
def _index_fill(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``x.index_fill(dim, index, value)``: ``value`` put at the indexed slices along
    ``dim``, a negative index counted from the end (as in eager, unlike index_copy)."""
    x, dim, index, value = node.args[:4]
    dtype = imp.meta(node).dtype
    v = imp.as_type(x, dtype)
    shape = imp.meta(node).shape
    if not math.prod(shape) or not imp.meta(index).numel():
        return v
    rank = max(len(shape), 1)
    i = imp.reshape(imp.value(index), (imp.meta(index).numel(),))
    out = put(imp, imp.reshape(v, (1,)) if not shape else v, [*[None] * (dim % rank), i],
              imp.as_type(value, dtype), accumulate=False)
    return imp.reshape(out, shape)
