"""Products and scans of ATen as graph ops: ``prod`` as a tree of products of halves,
the cumulative ops (``cumprod``, ``cummax``, ``cummin``, ``logcumsumexp``) as
Hillis-Steele scans: log2(n) steps, each one elementwise combine with the tensor
shifted along the dimension (the identity shifted in). Exact where the combine is
(max, min), else rounding as a parallel scan does. Checked against eager in
``tests/test_aten_order.py``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import Math
from mncore_ir.frontends.aten_expansions import argument
from mncore_ir.frontends.aten_handlers import handles, narrowed, widened
from mncore_ir.frontends.fx_importer import TORCH_TO_ELEMENT, FxImporter

aten = torch.ops.aten

Combine = Callable[[SSAValue, SSAValue], SSAValue]


def filled(imp: FxImporter, value: float | int, like: SSAValue, shape: Sequence[int]
           ) -> SSAValue:
    """A tensor of ``shape`` holding ``value`` in ``like``'s element type."""
    scalar = imp.constant(value, g.element_type_of(like))
    return imp.insert(g.ExpandOp(imp.reshape(scalar, (1,) * len(shape)), tuple(shape)),
                      hint=False)


def _slice(imp: FxImporter, x: SSAValue, dim: int, start: int, end: int) -> SSAValue:
    return imp.insert(g.SliceOp(x, dim=dim, start=start, end=end), hint=False)


def scan(imp: FxImporter, x: SSAValue, dim: int, combine: Combine,
         identity: float | int) -> SSAValue:
    """The inclusive scan of ``x`` along ``dim``: step k combines each element with
    the one 2**k before it (``identity`` before the start)."""
    shape = list(g.shape_of(x))
    n, step = shape[dim], 1
    while step < n:
        pad = filled(imp, identity, x, [step if d == dim else s for d, s in enumerate(shape)])
        shifted = imp.insert(g.ConcatOp(pad, _slice(imp, x, dim, 0, n - step), dim=dim),
                             hint=False)
        x = combine(x, shifted)
        step *= 2
    return x


def fold(imp: FxImporter, x: SSAValue, dim: int, combine: Combine,
         identity: float | int) -> SSAValue:
    """``x`` reduced along ``dim`` to size 1 by combining halves (an odd length padded
    with ``identity``; an empty one is the identity, as an empty product is 1)."""
    if g.shape_of(x)[dim] == 0:
        return filled(imp, identity, x, [1 if d == dim else s
                                         for d, s in enumerate(g.shape_of(x))])
    while (n := g.shape_of(x)[dim]) > 1:
        if n % 2:
            shape = list(g.shape_of(x))
            shape[dim] = 1
            x = imp.insert(g.ConcatOp(x, filled(imp, identity, x, shape), dim=dim),
                           hint=False)
            n += 1
        x = combine(_slice(imp, x, dim, 0, n // 2), _slice(imp, x, dim, n // 2, n))
    return x


def _in(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, Math, Any]:
    """The input in the result's type (in f32 for a narrow float), Math on it, and the
    result's element type."""
    meta = imp.meta(node)
    dtype = (meta[0] if isinstance(meta, tuple | list) else meta).dtype
    x = widened(imp, imp.as_type(node.args[0], dtype))
    return x, Math(imp.builder, x), TORCH_TO_ELEMENT[dtype]


@handles(aten.prod.default, aten.prod.dim_int)
def _prod(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, m, typ = _in(imp, node)
    shape = g.shape_of(x)
    if node.target == aten.prod.default or not shape:
        flat = imp.reshape(x, (math.prod(shape),)) if shape else imp.reshape(x, (1,))
        return narrowed(imp, imp.reshape(fold(imp, flat, 0, m.mul, 1), ()), typ)
    dim = node.args[1] % len(shape)
    total = fold(imp, x, dim, m.mul, 1)
    if not argument(node, 2, "keepdim", False):
        total = imp.reshape(total, [s for d, s in enumerate(shape) if d != dim])
    return narrowed(imp, total, typ)


@handles(aten.cumprod.default)
def _cumprod(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, m, typ = _in(imp, node)
    if not g.shape_of(x):
        return narrowed(imp, x, typ)
    return narrowed(imp, scan(imp, x, node.args[1] % len(g.shape_of(x)), m.mul, 1), typ)


@handles(aten.cumsum.default)
def _cumsum(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A scan of sums in the result's type (an integer or bool input sums in int64, as
    eager's): an infinity or NaN reaches only the elements after it (a product with a
    triangle of ones made ``0 * inf`` NaNs of the ones before it)."""
    x, m, typ = _in(imp, node)
    shape = g.shape_of(x)
    if not shape or math.prod(shape) == 0:
        return narrowed(imp, x if shape else imp.reshape(x, imp.meta(node).shape), typ)
    return narrowed(imp, scan(imp, x, node.args[1] % len(shape), m.add, 0), typ)


@handles(aten.logcumsumexp.default)
def _logcumsumexp(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A scan of ``logaddexp(a, b) = max + log1p(exp(-|a - b|))``, and ``a + log 2``
    where ``a = b`` (so ±inf pairs stay infinite)."""
    x, m, typ = _in(imp, node)
    if not g.shape_of(x):
        return narrowed(imp, x, typ)

    def logaddexp(a: SSAValue, b: SSAValue) -> SSAValue:
        top = m.e(g.MaximumOp(a, b))
        gap = m.neg(m.abs(m.sub(a, b)))
        general = m.add(top, m.unary(g.Log1pOp, m.unary(g.ExpOp, gap)))
        return m.where(m.eq(a, b), m.add(a, math.log(2)), general)

    return narrowed(imp, scan(imp, x, node.args[1] % len(g.shape_of(x)), logaddexp,
                              -math.inf), typ)


@handles(aten.cummax.default, aten.cummin.default)
def _cummax(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """The running extreme, and the last index where an element reached it (NaN from
    its first NaN on, indexed by the latest NaN), as torch."""
    x, m, typ = _in(imp, node)
    shape = g.shape_of(x)
    if not shape:
        return narrowed(imp, x, typ), imp.constant(0, g.i64)
    dim = node.args[1] % len(shape)
    largest = node.target == aten.cummax.default
    op = g.MaximumOp if largest else g.MinimumOp
    running = scan(imp, x, dim, lambda a, b: m.e(op(a, b)), _lowest(x, largest))
    reached = m.eq(x, running)
    if g.is_float(g.element_type_of(x)):
        reached = m.or_(reached, m.ne(x, x))
    where = [1] * len(shape)
    where[dim] = shape[dim]
    positions = imp.constant(np.arange(shape[dim]).reshape(where), g.i64, where)
    marks = imp.insert(g.WhereOp(reached, positions, imp.constant(-1, g.i64)), hint=False)
    latest = scan(imp, marks, dim, lambda a, b: imp.insert(g.MaximumOp(a, b), hint=False),
                  -1)
    return narrowed(imp, running, typ), latest


def _lowest(x: SSAValue, largest: bool) -> float | int:
    """The identity of a running maximum (minimum) in ``x``'s type."""
    typ = g.element_type_of(x)
    if g.is_float(typ):
        return -math.inf if largest else math.inf
    bits = typ.width.data if hasattr(typ, "width") else 64
    signed = typ != g.i1 and not str(typ).startswith("ui")
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return low if largest else high
