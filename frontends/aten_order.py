"""Order statistics of ATen as graph ops, by counting: an element's place in sorted
order is the number of elements that sort before it (NaN last ascending, first
descending, as torch), ties broken by position, so the sort is stable. ``sort``,
``topk``, ``kthvalue``, ``median``/``nanmedian`` gather at those places;
``searchsorted``/``bucketize`` count the boundaries below. The comparisons are
pairwise along the dimension (n**2 per row) up to :data:`ORDER_MAX` of them; longer
rows sort by a bitonic network (n log**2 n), up to :data:`BITONIC_MAX` elements, past
which the op runs on the host. Exact: only comparisons, integer sums and gathers.
Checked against eager in ``tests/test_aten_order.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import Math
from mncore_ir.frontends.aten_expansions import argument, extreme
from mncore_ir.frontends.aten_handlers import handles, reduce
from mncore_ir.frontends.fx_importer import FxImporter, unsupported

aten = torch.ops.aten

#: Pairwise comparisons (elements times the sorted dimension's length) one sort may
#: build; past this it runs on the host.
ORDER_MAX = 1 << 22
#: Longer rows sort by a bitonic network (:func:`bitonic_order`) up to this length.
BITONIC_MAX = 1 << 17


def _last(imp: FxImporter, x: SSAValue, dim: int) -> SSAValue:
    """``x`` with ``dim`` moved last."""
    rank = len(g.shape_of(x))
    if dim == rank - 1:
        return x
    perm = [d for d in range(rank) if d != dim] + [dim]
    return imp.insert(g.PermuteOp(x, perm=perm), hint=False)


def _back(imp: FxImporter, x: SSAValue, dim: int) -> SSAValue:
    """Undo :func:`_last` (for a result of the same rank)."""
    rank = len(g.shape_of(x))
    if dim == rank - 1:
        return x
    perm = [d for d in range(rank) if d != dim] + [dim]
    return imp.insert(g.PermuteOp(x, perm=[perm.index(d) for d in range(rank)]), hint=False)


def _count(imp: FxImporter, truth: SSAValue, axis: int) -> SSAValue:
    """How many are true along ``axis`` (i64)."""
    ones = imp.insert(g.ConvertOp(truth, g.i64), hint=False)
    return reduce(imp, g.SumOp, ones, [axis], False, hint=False)


def _positions(imp: FxImporter, n: int, rank: int, axis: int) -> SSAValue:
    """0, 1, ..., n-1 along ``axis`` of a rank-``rank`` i64 constant."""
    shape = [1] * rank
    shape[axis] = n
    return imp.constant(np.arange(n).reshape(shape), g.i64, shape)


def _pairs(imp: FxImporter, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """x as (..., n, 1) and as (..., 1, n): element i against element j."""
    shape = g.shape_of(x)
    return imp.reshape(x, (*shape, 1)), imp.reshape(x, (*shape[:-1], 1, shape[-1]))


def sort_order(imp: FxImporter, node: fx.Node, x: SSAValue, descending: bool,
               network: bool = False) -> SSAValue:
    """The indices that sort ``x`` along its last dimension, stably (i64, x's shape).
    A long row sorts by the bitonic network only with ``network``: where the caller
    asked for a stable sort; torch's other sorts order long rows' ties their own way,
    so those run on the host, as eager orders them."""
    shape = g.shape_of(x)
    n = shape[-1]
    if g.element_type_of(x) == g.i1:
        x = imp.insert(g.ConvertOp(x, g.i64), hint=False)
    if math.prod(shape) * n > ORDER_MAX:
        if n > BITONIC_MAX or not network:
            raise unsupported(node, f"sorting {n} elements {math.prod(shape[:-1])} times "
                                    f"(past {ORDER_MAX} comparisons; a stable sort of up "
                                    f"to {BITONIC_MAX} elements uses a sorting network)")
        return bitonic_order(imp, x, descending)
    m = Math(imp.builder, x)
    mine, other = _pairs(imp, x)  # rows i, columns j
    before = m.lt(mine, other) if descending else m.lt(other, mine)
    tie = m.eq(other, mine)
    if g.is_float(g.element_type_of(x)):
        nan_mine, nan_other = m.ne(mine, mine), m.ne(other, other)
        first, second = (nan_other, nan_mine) if descending else (nan_mine, nan_other)
        before = m.or_(before, m.and_(first, m.e(g.NotOp(second))))
        tie = m.or_(tie, m.and_(nan_mine, nan_other))
    rank = len(shape) + 1
    earlier = m.lt(_positions(imp, n, rank, rank - 1), _positions(imp, n, rank, rank - 2))
    place = _count(imp, m.or_(before, m.and_(tie, earlier)), rank - 1)  # (..., n)
    # the index whose place is k: sum over i of i * [place_i == k]
    at, k = _pairs(imp, place)[1], _positions(imp, n, rank, rank - 2)
    chosen = m.where(m.eq(at, k), _positions(imp, n, rank, rank - 1),
                     imp.constant(0, g.i64))
    return reduce(imp, g.SumOp, chosen, [rank - 1], False, hint=False)


def _bounds(typ: Any) -> tuple[float | int, float | int]:
    if g.is_float(typ):
        return -math.inf, math.inf
    bits = typ.width.data
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def bitonic_order(imp: FxImporter, x: SSAValue, descending: bool) -> SSAValue:
    """The stable sorting indices of long rows by Batcher's bitonic network: the row
    padded to a power of two N (with elements that sort last), then log2(N)(log2(N)+1)/2
    compare-exchange stages on (value, index) pairs, each pairing i with i + j inside
    blocks of 2j as a reshape (ties broken by index, which makes it stable; NaN placed
    as torch places it)."""
    shape, typ = g.shape_of(x), g.element_type_of(x)
    n, lead = shape[-1], shape[:-1]
    size = 1 << max(n - 1, 0).bit_length()
    low, high = _bounds(typ)
    pad = (low if descending else (math.nan if g.is_float(typ) else high))
    m = Math(imp.builder, x)
    index = imp.insert(g.ExpandOp(imp.constant(np.arange(size).reshape((1,) * len(lead)
                                                                       + (size,)), g.i64,
                                               (1,) * len(lead) + (size,)),
                                  (*lead, size)), hint=False)
    values = x
    if size > n:
        filler = imp.insert(g.ExpandOp(imp.constant(pad, typ), (*lead, size - n)), hint=False)
        values = imp.insert(g.ConcatOp(x, filler, dim=len(lead)), hint=False)
    floats = g.is_float(typ)

    def first(a: SSAValue, ia: SSAValue, b: SSAValue, ib: SSAValue) -> SSAValue:
        """Whether (a, ia) sorts before (b, ib)."""
        strictly = m.lt(b, a) if descending else m.lt(a, b)
        same = m.eq(a, b)
        if floats:
            nan_a, nan_b = m.ne(a, a), m.ne(b, b)
            ahead, behind = (nan_a, nan_b) if descending else (nan_b, nan_a)
            strictly = m.or_(strictly, m.and_(ahead, m.e(g.NotOp(behind))))
            same = m.or_(same, m.and_(nan_a, nan_b))
        return m.or_(strictly, m.and_(same, m.lt(ia, ib)))

    k = 2
    while k <= size:
        j = k // 2
        while j >= 1:
            blocks = size // (2 * j)
            view = (*lead, blocks, 2, j)
            pieces = []
            for v in (values, index):
                r = imp.reshape(v, view)
                pieces.append([imp.reshape(imp.insert(g.SliceOp(r, dim=len(lead) + 1,
                                                                start=h, end=h + 1),
                                                      hint=False), (*lead, blocks, j))
                               for h in (0, 1)])
            (a, b), (ia, ib) = pieces
            rising = imp.constant(np.array([((q * 2 * j) & k) == 0 for q in range(blocks)])
                                  .reshape(blocks, 1), g.i1, (blocks, 1))
            ordered = first(a, ia, b, ib)  # the pair is in ascending network order
            swap = m.ne(ordered, rising)
            moved = [[m.where(swap, q, p), m.where(swap, p, q)] for p, q in ((a, b), (ia, ib))]
            values, index = (imp.reshape(imp.insert(g.ConcatOp(
                *(imp.reshape(h, (*lead, blocks, 1, j)) for h in pair), dim=len(lead) + 1),
                hint=False), (*lead, size)) for pair in moved)
            j //= 2
        k *= 2
    if size == n:
        return index
    return imp.insert(g.SliceOp(index, dim=len(lead), start=0, end=n), hint=False)


def _gathered(imp: FxImporter, x: SSAValue, indices: SSAValue) -> SSAValue:
    return imp.insert(g.GatherOp(x, indices, dim=len(g.shape_of(x)) - 1), hint=False)


def _first(imp: FxImporter, x: SSAValue, k: int) -> SSAValue:
    last = len(g.shape_of(x)) - 1
    return imp.insert(g.SliceOp(x, dim=last, start=0, end=k), hint=False)


@handles(aten.sort.default, aten.sort.stable)
def _sort(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    x = imp.value(node.args[0])
    stable = False
    if node.target == aten.sort.stable:
        dim, descending = node.kwargs.get("dim", -1), node.kwargs.get("descending", False)
        stable = bool(node.kwargs.get("stable", False))
    else:
        dim, descending = argument(node, 1, "dim", -1), argument(node, 2, "descending", False)
    if not g.shape_of(x):
        return x, imp.constant(0, g.i64)
    dim %= len(g.shape_of(x))
    moved = _last(imp, x, dim)
    order = sort_order(imp, node, moved, descending, network=stable)
    return _back(imp, _gathered(imp, moved, order), dim), _back(imp, order, dim)


@handles(aten.topk.default)
def _topk(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """The first k of the descending (``largest``) or ascending order."""
    x, k = imp.value(node.args[0]), node.args[1]
    dim = argument(node, 2, "dim", -1)
    largest = argument(node, 3, "largest", True)
    if not g.shape_of(x):
        return x, imp.constant(0, g.i64)
    dim %= len(g.shape_of(x))
    moved = _last(imp, x, dim)
    order = _first(imp, sort_order(imp, node, moved, largest), k)
    return _back(imp, _gathered(imp, moved, order), dim), _back(imp, order, dim)


def _pick(imp: FxImporter, moved: SSAValue, order: SSAValue, place: SSAValue,
          keep: bool, dim: int) -> tuple[SSAValue, SSAValue]:
    """The element at sorted place ``place`` (..., 1) of each row, and its index."""
    index = _gathered(imp, order, place)
    value = _gathered(imp, moved, index)
    if keep:
        return _back(imp, value, dim), _back(imp, index, dim)
    shape = g.shape_of(moved)[:-1]
    return imp.reshape(value, shape), imp.reshape(index, shape)


def _rows(imp: FxImporter, node: fx.Node, dim: Any) -> tuple[SSAValue, int]:
    """The input with the reduced dimension last (flattened when ``dim`` is None)."""
    x = imp.value(node.args[0])
    if dim is None:
        return imp.reshape(x, (max(math.prod(g.shape_of(x)), 1),)), 0
    if not g.shape_of(x):
        return imp.reshape(x, (1,)), 0
    dim %= len(g.shape_of(x))
    return _last(imp, x, dim), dim


def _place(imp: FxImporter, rows: SSAValue, value: int) -> SSAValue:
    """The constant place ``value`` for every row, shaped (..., 1)."""
    shape = (*g.shape_of(rows)[:-1], 1)
    return imp.insert(g.ExpandOp(imp.reshape(imp.constant(value, g.i64), (1,) * len(shape)),
                                 shape), hint=False)


@handles(aten.kthvalue.default)
def _kthvalue(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    k, dim, keep = node.args[1], argument(node, 2, "dim", -1), argument(node, 3, "keepdim",
                                                                          False)
    rows, dim = _rows(imp, node, dim)
    order = sort_order(imp, node, rows, False)
    value, index = _pick(imp, rows, order, _place(imp, rows, k - 1), keep, dim)
    if not g.shape_of(imp.value(node.args[0])):
        return imp.reshape(value, ()), imp.reshape(index, ())
    return value, index


def _halved(imp: FxImporter, count: SSAValue, n: int) -> SSAValue:
    """``(count - 1) // 2`` for counts 1..n, as a count: how many of 3, 5, 7, ... are
    at most ``count`` (no division)."""
    m = Math(imp.builder, count)
    shape = g.shape_of(count)
    odd = imp.constant(np.arange(3, 2 * n + 2, 2).reshape((1,) * len(shape) + (-1,)), g.i64,
                       (1,) * len(shape) + (n,))
    return _count(imp, m.le(odd, imp.reshape(count, (*shape, 1))), len(shape))


@handles(aten.median.default, aten.median.dim, aten.nanmedian.default, aten.nanmedian.dim)
def _median(imp: FxImporter, node: fx.Node) -> Any:
    """The lower median. ``median``: NaN (the first one) where a row has one;
    ``nanmedian``: the median of the other elements (NaN where all are)."""
    whole = node.target in (aten.median.default, aten.nanmedian.default)
    dim = None if whole else node.args[1]
    keep = False if whole else argument(node, 2, "keepdim", False)
    rows, dim = _rows(imp, node, dim)
    n = g.shape_of(rows)[-1]
    order = sort_order(imp, node, rows, False)
    m = Math(imp.builder, rows)
    if g.is_float(g.element_type_of(rows)):
        real = _count(imp, m.eq(rows, rows), len(g.shape_of(rows)) - 1)
    else:
        real = imp.insert(g.ExpandOp(imp.reshape(imp.constant(n, g.i64), (1,) * (len(
            g.shape_of(rows)) - 1)), g.shape_of(rows)[:-1]), hint=False)
    middle = _halved(imp, real, n)
    if node.target in (aten.median.default, aten.median.dim):  # the first NaN, if any
        mm = Math(imp.builder, real)
        middle = mm.where(mm.lt(real, n), real, middle)
    place = imp.reshape(middle, (*g.shape_of(middle), 1))
    value, index = _pick(imp, rows, order, place, keep, dim)
    if whole:
        return imp.reshape(value, ())
    if not g.shape_of(imp.value(node.args[0])):
        return imp.reshape(value, ()), imp.reshape(index, ())
    return value, index


@handles(aten.searchsorted.Tensor, aten.bucketize.Tensor)
def _searchsorted(imp: FxImporter, node: fx.Node) -> SSAValue:
    """How many boundaries are below each value (at most it, ``right``)."""
    if node.target == aten.bucketize.Tensor:
        values, boundaries = node.args[:2]
        right = argument(node, 3, "right", False)
        int32 = argument(node, 2, "out_int32", False)
    else:
        boundaries, values = node.args[:2]
        int32 = argument(node, 2, "out_int32", False)
        right = argument(node, 3, "right", False) or node.kwargs.get("side") == "right"
    dtype = torch.promote_types(imp.meta(values).dtype, imp.meta(boundaries).dtype)
    v, b = imp.as_type(values, dtype), imp.as_type(boundaries, dtype)
    sorter = node.kwargs.get("sorter")
    if sorter is not None and imp.meta(sorter).numel():  # the boundaries in order
        b = _gathered(imp, b, imp.value(sorter))
    vs, bs = g.shape_of(v), g.shape_of(b)
    if math.prod(vs) * bs[-1] > ORDER_MAX:
        raise unsupported(node, f"searching {bs[-1]} boundaries (more than {ORDER_MAX} "
                                "comparisons)")
    m = Math(imp.builder, v)
    if len(bs) == 1:
        column = imp.reshape(v, (*vs, 1))
        row = imp.reshape(b, (1,) * len(vs) + bs)
    else:
        column, row = imp.reshape(v, (*vs, 1)), imp.reshape(b, (*bs[:-1], 1, bs[-1]))
    below = m.le(row, column) if right else m.lt(row, column)
    if g.is_float(g.element_type_of(v)):  # NaN sorts after every boundary
        below = m.or_(below, m.ne(column, column))
    found = _count(imp, below, len(vs))
    if int32:
        return imp.insert(g.ConvertOp(found, IntegerType(32)))
    return found


@handles(aten.histc.default)
def _histc(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Counts of ``bins`` equal bins over [min, max] (the data's range when both are 0,
    widened by 1 each way when that is one value); the top edge belongs to the last
    bin and values outside are not counted, as torch."""
    x = imp.value(node.args[0])
    bins = argument(node, 1, "bins", 100)
    low, high = argument(node, 2, "min", 0), argument(node, 3, "max", 0)
    flat = imp.reshape(x, (max(math.prod(g.shape_of(x)), 1),))
    total = g.shape_of(flat)[0]
    if total * bins > ORDER_MAX:
        raise unsupported(node, f"histc of {total} elements into {bins} bins")
    m = Math(imp.builder, flat)
    if low == high:
        lo = extreme(imp, flat, [0], False, False)
        hi = extreme(imp, flat, [0], False, True)
        same = m.eq(lo, hi)
        lo, hi = m.where(same, m.sub(lo, 1.0), lo), m.where(same, m.add(hi, 1.0), hi)
    else:
        lo, hi = m.v(float(low)), m.v(float(high))
    position = m.floor(m.div(m.mul(m.sub(flat, lo), float(bins)), m.sub(hi, lo)))
    position = m.where(m.eq(flat, hi), float(bins - 1), position)
    inside = m.and_(m.le(lo, flat), m.le(flat, hi))
    edges = imp.constant(np.arange(bins, dtype=np.float64).reshape(bins, 1),
                         g.element_type_of(flat), (bins, 1))
    hit = m.and_(m.eq(imp.reshape(position, (1, total)), edges),
                 imp.reshape(inside, (1, total)))
    counts = reduce(imp, g.SumOp, m.where(hit, 1.0, 0.0), [1], False, hint=False)
    if not math.prod(g.shape_of(x)):
        return m.mul(counts, 0.0)
    return counts
