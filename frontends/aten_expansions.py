"""ATen ops the graph dialect has no op of their own for, expanded into graph ops it has:
padding into concatenations, advanced indexing into a gather (and its writes into an
index_put), a diagonal into a strided slice, a cumulative sum into a triangular
product, and a few pointwise identities (window ops: :mod:`aten_windows`). Each
expansion is exact, or rounds as a sum taken in another order, and is checked against
eager PyTorch on every device in ``tests/test_aten_expansions.py``."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.values import constant_value
from mncore_ir.frontends.aten_handlers import (
    handles,
    narrowed,
    reduce,
    splat,
    variance,
    widened,
)
from mncore_ir.frontends.fx_importer import TORCH_TO_ELEMENT, FxImporter, Handler, unsupported

aten = torch.ops.aten

def argument(node: fx.Node, index: int, name: str, default: Any) -> Any:
    """Argument ``index`` (or keyword ``name``) of ``node``, else ``default``."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def zeros_when_empty(handler: Handler) -> Handler:
    """``handler``, except that a node whose (first) result has no element is zeros:
    the expansions would build ops of size zero."""

    @functools.wraps(handler)
    def run(imp: FxImporter, node: fx.Node) -> Any:
        meta = imp.meta(node)
        meta = meta[0] if isinstance(meta, list | tuple) else meta
        return splat(imp, node, 0) if meta.numel() == 0 else handler(imp, node)

    return run


@handles(aten.logical_xor.default)
def _logical_xor(imp: FxImporter, node: fx.Node) -> SSAValue:
    a, b = (_truth(imp, x) for x in node.args[:2])
    return imp.insert(g.NeOp(a, b))


def _truth(imp: FxImporter, arg: fx.Node) -> SSAValue:
    """A tensor as booleans: ``x != 0`` unless it is boolean already."""
    x = imp.value(arg)
    if g.element_type_of(x) == g.i1:
        return x
    return imp.insert(g.NeOp(x, imp.constant(0, g.element_type_of(x))), hint=False)


def fused_multiply_add(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``prims.fma(a, b, c)``, ``a * b + c``: Dynamo's form of ``addcmul_`` and
    ``addcdiv_`` with a ``value`` and of ``add_`` with a tensor ``alpha`` (every Adam
    step). A narrow float is computed in f32 and rounded once; in f32 the product is
    rounded before the sum, where eager's kernel may fuse them (one unit in the last
    place at most, as the lazy path's ``addcmul``). Registered by the ``torch.compile``
    backend: the op exists once Dynamo has loaded inductor's prims."""
    dtype = imp.meta(node).dtype
    a, b, c = (widened(imp, imp.as_type(x, dtype)) for x in node.args[:3])
    product = imp.insert(g.MulOp(a, b), hint=False)
    return narrowed(imp, imp.insert(g.AddOp(product, c)), TORCH_TO_ELEMENT[dtype])


@handles(aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor,
         aten.clamp_min.default, aten.clamp_max.default)
def _clamp_tensor(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``min(max(x, lo), hi)`` with either bound a tensor, a scalar or absent."""
    dtype = imp.meta(node).dtype
    lo = hi = None
    if node.target in (aten.clamp.Tensor,):
        lo, hi = argument(node, 1, "min", None), argument(node, 2, "max", None)
    elif node.target in (aten.clamp_min.Tensor, aten.clamp_min.default):
        lo = node.args[1]
    else:
        hi = node.args[1]
    v = imp.as_type(node.args[0], dtype)
    if lo is not None:
        v = imp.insert(g.MaximumOp(v, imp.as_type(lo, dtype)), hint=hi is None)
    if hi is not None:
        v = imp.insert(g.MinimumOp(v, imp.as_type(hi, dtype)))
    return v


@handles(aten.var.correction, aten.var.dim)
def _var(imp: FxImporter, node: fx.Node) -> SSAValue:
    if node.target == aten.var.dim:
        correction = 1 if argument(node, 2, "unbiased", True) else 0
        keep = argument(node, 3, "keepdim", False)
    else:
        correction = node.kwargs.get("correction", 1)
        keep = node.kwargs.get("keepdim", False)
    correction = 1 if correction is None else correction
    return variance(imp, node, argument(node, 1, "dim", None), correction, keep)[0]


def _mirrored(imp: FxImporter, x: SSAValue) -> SSAValue:
    """An order-reversing map that is its own inverse: ``-x`` for floats, ``-1 - x``
    (the bitwise complement) for integers, which has no overflow at the minimum."""
    typ = g.element_type_of(x)
    if g.is_float(typ):
        return imp.insert(g.NegOp(x), hint=False)
    return imp.insert(g.SubOp(imp.constant(-1, typ), x), hint=False)


def _comparable(imp: FxImporter, x: SSAValue) -> SSAValue:
    """Booleans as integers (maxima of booleans are of 0 and 1)."""
    if g.element_type_of(x) == g.i1:
        return imp.insert(g.ConvertOp(x, g.i64), hint=False)
    return x


def extreme(imp: FxImporter, x: SSAValue, dims: list[int], keep: bool, largest: bool
            ) -> SSAValue:
    """The largest (or smallest) element over ``dims``; NaN wherever one is NaN."""
    if largest:
        return reduce(imp, g.AmaxOp, x, dims, keep, hint=False)
    return _mirrored(imp, reduce(imp, g.AmaxOp, _mirrored(imp, x), dims, keep, hint=False))


@handles(aten.amin.default, aten.min.default, aten.max.default)
def _amin(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``amax``, or ``amin(x) = mirror(amax(mirror(x)))`` (:func:`_mirrored`)."""
    given = imp.value(node.args[0])
    x = _comparable(imp, given)
    rank = len(g.shape_of(x))
    dims = imp.dims(argument(node, 1, "dim", None), rank)
    keep = argument(node, 2, "keepdim", False)
    if node.target == aten.min.default:
        keep = False
    found = extreme(imp, x, dims, keep, node.target == aten.max.default)
    return narrowed(imp, found, g.element_type_of(given))


def first_index(imp: FxImporter, x: SSAValue, found: SSAValue, dim: int, keep: bool
                ) -> SSAValue:
    """The first index along ``dim`` where ``x`` equals ``found`` (kept dims) or is
    NaN, as torch's argmax and max.dim pick it: the least of the indices where it does
    and ``size`` where it does not."""
    shape = g.shape_of(x)
    size = shape[dim]
    hit = imp.insert(g.EqOp(x, found), hint=False)
    if g.is_float(g.element_type_of(x)):
        hit = imp.insert(g.OrOp(hit, imp.insert(g.NeOp(x, x), hint=False)), hint=False)
    where = [1] * len(shape)
    where[dim] = size
    positions = imp.constant(np.arange(size).reshape(where), g.i64, where)
    candidates = imp.insert(g.WhereOp(hit, positions, imp.constant(size, g.i64)),
                            hint=False)
    return extreme(imp, candidates, [dim], keep, largest=False)


@handles(aten.argmax.default, aten.argmin.default)
def _argmax(imp: FxImporter, node: fx.Node) -> SSAValue:
    """The first index of the extreme along ``dim`` (of the flattened tensor without
    one)."""
    x = _comparable(imp, imp.value(node.args[0]))
    dim, keep = argument(node, 1, "dim", None), argument(node, 2, "keepdim", False)
    if dim is None:
        flat = imp.reshape(x, (math.prod(g.shape_of(x)),))
        index = first_index(imp, flat, extreme(imp, flat, [0], True,
                                               node.target == aten.argmax.default), 0, False)
        return imp.reshape(index, (1,) * len(g.shape_of(x))) if keep else index
    dim = dim % max(len(g.shape_of(x)), 1)
    if not g.shape_of(x):
        return imp.constant(0, g.i64)
    found = extreme(imp, x, [dim], True, node.target == aten.argmax.default)
    return first_index(imp, x, found, dim, keep)


@handles(aten.max.dim, aten.min.dim)
def _max_dim(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """The extreme along ``dim`` and its first index."""
    given = imp.value(node.args[0])
    x = _comparable(imp, given)
    keep = argument(node, 2, "keepdim", False)
    if not g.shape_of(x):
        return given, imp.constant(0, g.i64)
    dim = node.args[1] % len(g.shape_of(x))
    found = extreme(imp, x, [dim], True, node.target == aten.max.dim)
    values = found if keep else imp.reshape(found, [n for d, n in
                                                   enumerate(g.shape_of(x)) if d != dim])
    return narrowed(imp, values, g.element_type_of(given)), first_index(imp, x, found, dim,
                                                                        keep)


def along(imp: FxImporter, x: SSAValue, dim: int, matrix: np.ndarray) -> SSAValue:
    """``x`` with dimension ``dim`` (of size ``matrix.shape[1]``) replaced by
    ``matrix @ x`` along it: the dimension moved last and multiplied by the
    transposed constant (in f32 for a narrow float)."""
    typ = g.element_type_of(x)
    x = widened(imp, x)
    shape = list(g.shape_of(x))
    rank = len(shape)
    out_size, in_size = matrix.shape
    perm = [d for d in range(rank) if d != dim] + [dim]
    moved = x if dim == rank - 1 else imp.insert(g.PermuteOp(x, perm=perm), hint=False)
    lead = [shape[d] for d in perm[:-1]]
    rows = imp.reshape(moved, (math.prod(lead), in_size))
    weights = imp.constant(matrix.T, g.element_type_of(x), (in_size, out_size))
    product = imp.insert(g.MatmulOp(rows, weights), hint=False)
    result = imp.reshape(product, (*lead, out_size))
    if dim != rank - 1:
        inverse = [perm.index(d) for d in range(rank)]
        result = imp.insert(g.PermuteOp(result, perm=inverse), hint=False)
    return narrowed(imp, result, typ)


# ----------------------------------------------------------------------- padding


@handles(aten.constant_pad_nd.default)
@zeros_when_empty
def _constant_pad_nd(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Negative pads slice, positive ones concatenate splats of ``value``; pairs run
    from the last dimension backward, as torch's."""
    x = imp.value(node.args[0])
    pad, value = list(node.args[1]), argument(node, 2, "value", 0)
    typ = g.element_type_of(x)
    for i in range(len(pad) // 2):
        dim = len(g.shape_of(x)) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        size = g.shape_of(x)[dim]
        start, end = max(-before, 0), size - max(-after, 0)
        if (start, end) != (0, size):
            x = imp.insert(g.SliceOp(x, dim=dim, start=start, end=end), hint=False)
        pieces = []
        for amount in (before, after):
            if amount > 0:
                shape = list(g.shape_of(x))
                shape[dim] = amount
                fill = imp.insert(g.ExpandOp(imp.constant(value, typ), shape), hint=False)
                pieces.append(fill)
        if pieces:
            parts = ([pieces.pop(0)] if before > 0 else []) + [x] + pieces
            x = imp.insert(g.ConcatOp(*parts, dim=dim), hint=False)
    return imp.reshape(x, imp.meta(node).shape)


# ---------------------------------------------------------------------- indexing


def _wrapped(imp: FxImporter, index: SSAValue, size: int) -> SSAValue:
    """``index`` as i64 with negative entries counted from ``size`` (a constant with
    none as it is)."""
    if g.element_type_of(index) != g.i64:
        index = imp.insert(g.ConvertOp(index, g.i64), hint=False)
    if isinstance(index.owner, g.ConstantOp) and constant_value(index.owner.value).min(
            initial=0) >= 0:
        return index
    # clamped to [-size - 1, size] first, where an index out of range stays out of
    # range: the arithmetic below then stays small (an integer in an f32 word, at the
    # MN-Core level, must stay below 2**24)
    index = imp.insert(g.MaximumOp(index, imp.constant(-size - 1, g.i64)), hint=False)
    index = imp.insert(g.MinimumOp(index, imp.constant(size, g.i64)), hint=False)
    negative = imp.insert(g.LtOp(index, imp.constant(0, g.i64)), hint=False)
    shifted = imp.insert(g.AddOp(index, imp.constant(size, g.i64)), hint=False)
    return imp.insert(g.WhereOp(negative, shifted, index), hint=False)


def _clamped(imp: FxImporter, index: SSAValue, size: int, replaced: bool) -> SSAValue:
    """``index`` as i64, negative entries left out of range; clamped to ``[-1, size]``
    when the caller replaces every out-of-range entry (the arithmetic on it then stays
    small), else as it is, so that the op refusing it names the user's index."""
    if g.element_type_of(index) != g.i64:
        index = imp.insert(g.ConvertOp(index, g.i64), hint=False)
    if not replaced or isinstance(index.owner, g.ConstantOp):
        return index
    index = imp.insert(g.MaximumOp(index, imp.constant(-1, g.i64)), hint=False)
    return imp.insert(g.MinimumOp(index, imp.constant(size, g.i64)), hint=False)


@dataclass(frozen=True)
class _Indexing:
    """Advanced indexing of a tensor of ``shape`` reduced to one index along a leading
    dimension: the indexed dimensions moved first (``perm``) and flattened into
    ``rows``, the broadcast index shape ``batch``, the other dimensions' sizes
    ``tail``, and where torch puts the batch dimensions in the result (``first``:
    where the indexed dimensions were if they are adjacent, else 0)."""

    perm: list[int]
    rows: int
    batch: tuple[int, ...]
    tail: list[int]
    first: int

    def result_perm(self) -> list[int]:
        """From (batch, tail) order to torch's result order."""
        nb, first = len(self.batch), self.first
        return [*range(nb, nb + first), *range(nb), *range(nb + first, nb + len(self.tail))]


def _linear_index(imp: FxImporter, shape: Sequence[int], indices: Sequence[SSAValue | None],
                  wrap: bool = True, checked: bool = False) -> tuple[_Indexing, SSAValue]:
    """The layout of ``x[indices]`` and the flat (count,) row index into the flattened
    indexed dimensions. An index outside its dimension makes the row index ``rows``,
    out of range, so the gather or scatter refuses it as torch does (in range, a
    bad index of one dimension could land on another row). ``wrap``: negative indices
    count from the end, as advanced indexing's do; else they are out of range, as
    ``index_select``'s and ``scatter``'s are. ``checked``: a single index is made
    ``rows`` when out of range too (index_put, which the row index feeds, counts
    negative rows from the end)."""
    indices = [*indices, *[None] * (len(shape) - len(indices))]
    indexed = [d for d, i in enumerate(indices) if i is not None]
    rest = [d for d, i in enumerate(indices) if i is None]
    batch = g.broadcast_shapes(*(g.shape_of(indices[d]) for d in indexed))
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    layout = _Indexing(indexed + rest, math.prod(shape[d] for d in indexed), tuple(batch),
                       [shape[d] for d in rest], indexed[0] if adjacent else 0)
    linear = valid = None
    stride = 1
    for d in reversed(indexed):
        index = indices[d]
        if g.shape_of(index) != batch:  # broadcast before the arithmetic, which then
            # fuses into one elementwise kernel with the bounds its clamp sets
            lead = (1,) * (len(batch) - len(g.shape_of(index)))
            index = imp.insert(g.ExpandOp(imp.reshape(index, lead + g.shape_of(index)),
                                          batch), hint=False)
        index = _wrapped(imp, index, shape[d]) if wrap else _clamped(
            imp, index, shape[d], checked or len(indexed) > 1)
        if len(indexed) > 1 or checked:
            inside = imp.insert(g.AndOp(
                imp.insert(g.GeOp(index, imp.constant(0, g.i64)), hint=False),
                imp.insert(g.LtOp(index, imp.constant(shape[d], g.i64)), hint=False)),
                hint=False)
            valid = inside if valid is None else imp.insert(g.AndOp(valid, inside),
                                                            hint=False)
        if stride != 1:
            index = imp.insert(g.MulOp(index, imp.constant(stride, g.i64)), hint=False)
        linear = index if linear is None else imp.insert(g.AddOp(linear, index), hint=False)
        stride *= shape[d]
    assert linear is not None
    if valid is not None:
        linear = imp.insert(g.WhereOp(valid, linear, imp.constant(layout.rows, g.i64)),
                            hint=False)
    return layout, imp.reshape(linear, (math.prod(batch),))


def _rows_first(imp: FxImporter, x: SSAValue, layout: _Indexing) -> SSAValue:
    """``x`` with its indexed dimensions moved first and flattened: (rows, *tail)."""
    if layout.perm != list(range(len(layout.perm))):
        x = imp.insert(g.PermuteOp(x, perm=layout.perm), hint=False)
    return imp.reshape(x, (layout.rows, *layout.tail))


def take(imp: FxImporter, x: SSAValue, indices: Sequence[SSAValue | None],
         wrap: bool = True) -> SSAValue:
    """``x[indices]`` for integer index tensors (None: the whole dimension), as torch
    places the result's dimensions: one gather along the flattened indexed ones
    (``wrap``: see :func:`_linear_index`)."""
    layout, linear = _linear_index(imp, g.shape_of(x), indices, wrap)
    count, tail = math.prod(layout.batch), layout.tail
    flat = imp.reshape(linear, (count, *[1] * len(tail)))
    if tail:
        flat = imp.insert(g.ExpandOp(flat, (count, *tail)), hint=False)
    gathered = imp.insert(g.GatherOp(_rows_first(imp, x, layout), flat, dim=0), hint=False)
    result = imp.reshape(gathered, (*layout.batch, *tail))
    if layout.first > 0:
        result = imp.insert(g.PermuteOp(result, perm=layout.result_perm()), hint=False)
    return result


def put(imp: FxImporter, x: SSAValue, indices: Sequence[SSAValue | None], values: SSAValue,
        accumulate: bool, wrap: bool = True) -> SSAValue:
    """``x[indices] = values`` (``+=`` with ``accumulate``): one index_put along the
    flattened indexed dimensions, ``values`` laid out as the gather of :func:`take`
    would read them (``wrap``: see :func:`_linear_index`)."""
    shape = g.shape_of(x)
    layout, linear = _linear_index(imp, shape, indices, wrap, checked=not wrap)
    batch, tail = layout.batch, layout.tail
    placed = [*tail[:layout.first], *batch, *tail[layout.first:]]
    if g.shape_of(values) != tuple(placed):
        lead = (1,) * (len(placed) - len(g.shape_of(values)))
        values = imp.insert(g.ExpandOp(imp.reshape(values, lead + g.shape_of(values)),
                                       placed), hint=False)
    if layout.first > 0:
        order = layout.result_perm()
        values = imp.insert(g.PermuteOp(values, perm=[order.index(d) for d in
                                                      range(len(order))]), hint=False)
    values = imp.reshape(values, (math.prod(batch), *tail))
    written = imp.insert(g.IndexPutOp(_rows_first(imp, x, layout), linear, values,
                                      accumulate=accumulate), hint=False)
    moved = imp.reshape(written, [shape[d] for d in layout.perm])
    if layout.perm == list(range(len(shape))):
        return moved
    return imp.insert(g.PermuteOp(moved, perm=[layout.perm.index(d) for d in
                                               range(len(shape))]))


@handles(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, indices, values = node.args[:3]
    accumulate = argument(node, 3, "accumulate", False)
    dtype = imp.meta(node).dtype
    if imp.meta(node).numel() == 0 or imp.meta(values).numel() == 0:
        return imp.as_type(x, dtype)
    masked = [i for i in indices if i is not None and imp.meta(i).dtype == torch.bool]
    if masked:
        return _masked_put(imp, node, indices, bool(accumulate))
    _integer_indices(imp, node, indices)
    return put(imp, imp.value(x), [None if i is None else imp.value(i) for i in indices],
               imp.as_type(values, dtype), bool(accumulate))


def _masked_put(imp: FxImporter, node: fx.Node, indices: Sequence[Any], accumulate: bool
                ) -> SSAValue:
    """``x[mask] = v`` (``+=``) for one value: ``where(mask, v, x)``, the mask over the
    dimensions it indexes. As many values as true elements depend on the mask."""
    x, _, values = node.args[:3]
    dtype = imp.meta(node).dtype
    at = [d for d, i in enumerate(indices) if i is not None]
    if len(at) != 1 or imp.meta(values).numel() != 1:
        raise unsupported(node, "indexing with a torch.bool tensor (as many values as "
                                "true elements)")
    (first,) = at
    mask = imp.value(indices[first])
    rank, span = len(imp.meta(node).shape), len(g.shape_of(mask))
    mask = imp.reshape(mask, (1,) * first + g.shape_of(mask) + (1,) * (rank - first - span))
    v = imp.reshape(imp.as_type(values, dtype), ())
    base = imp.as_type(x, dtype)
    if accumulate:
        v = imp.insert(g.AddOp(base, v), hint=False)
    return imp.insert(g.WhereOp(mask, v, base))


@handles(aten.gather.default)
@zeros_when_empty
def _gather(imp: FxImporter, node: fx.Node) -> SSAValue:
    """An index smaller than the input outside ``dim`` reads the input's first
    elements there."""
    x, dim, index = node.args[:3]
    v, i = imp.value(x), imp.value(index)
    if not g.shape_of(v):  # a 0-d input: its one element, as the index's shape
        return imp.reshape(imp.insert(g.GatherOp(imp.reshape(v, (1,)), imp.reshape(
            i, (1,)), dim=0), hint=False), g.shape_of(i))
    dim %= len(g.shape_of(v))
    for d, (n, size) in enumerate(zip(g.shape_of(i), g.shape_of(v), strict=True)):
        if d != dim and n < size:
            v = imp.insert(g.SliceOp(v, dim=d, start=0, end=n), hint=False)
    return imp.insert(g.GatherOp(v, i, dim=dim))


@handles(aten.scatter.value, aten.scatter.src, aten.scatter_add.default)
def scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A scalar scattered is graph.scatter; a tensor (and ``scatter_add``, ``reduce=
    'add'``) is an index_put at each index element's full coordinates."""
    x, dim, index, value = node.args[:4]
    accumulate = (node.target == aten.scatter_add.default
                  or argument(node, 4, "reduce", None) == "add")
    dtype = imp.meta(node).dtype
    v, i = imp.as_type(x, dtype), imp.value(index)
    rank = len(g.shape_of(v))
    if not rank or not math.prod(g.shape_of(i)):
        return v
    dim %= rank
    if not accumulate and not (isinstance(value, fx.Node) and imp.meta(value).dim() != 0):
        return imp.insert(g.ScatterOp(v, i, imp.as_type(value, dtype), dim=dim))
    shape = g.shape_of(i)
    source = imp.as_type(value, dtype)
    if g.shape_of(source):  # the source's leading elements, as many as the index's
        for d, n in enumerate(shape):
            if g.shape_of(source)[d] > n:
                source = imp.insert(g.SliceOp(source, dim=d, start=0, end=n), hint=False)
    coords: list[SSAValue | None] = []
    for d, n in enumerate(shape):
        if d == dim:
            coords.append(i)
            continue
        where = [1] * rank
        where[d] = n
        coords.append(imp.constant(np.arange(n).reshape(where), g.i64, where))
    return put(imp, v, coords, source, accumulate, wrap=False)


def _integer_indices(imp: FxImporter, node: fx.Node, indices: Sequence[Any]) -> None:
    """Refuse a boolean mask, whose result's size depends on the values."""
    for i in indices:
        if i is not None and imp.meta(i).dtype not in (torch.int64, torch.int32):
            raise unsupported(node, f"indexing with a {imp.meta(i).dtype} tensor")


@handles(aten.index.Tensor, aten._unsafe_index.Tensor)
def _index(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Advanced indexing with integer tensors; a boolean mask (whose result's size
    depends on the values) is refused."""
    indices = node.args[1]
    _integer_indices(imp, node, indices)
    if imp.meta(node).numel() == 0:
        return splat(imp, node, 0)
    x = imp.value(node.args[0])
    result = take(imp, x, [None if i is None else imp.value(i) for i in indices])
    return imp.reshape(result, imp.meta(node).shape)


@handles(aten.index_select.default)
@zeros_when_empty
def _index_select(imp: FxImporter, node: fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    rank = len(g.shape_of(x))
    if rank == 0:
        return imp.reshape(x, imp.meta(node).shape)
    dim = node.args[1] % rank
    index = imp.value(node.args[2])
    index = imp.reshape(index, (math.prod(g.shape_of(index)),))
    result = take(imp, x, [*[None] * dim, index], wrap=False)
    return imp.reshape(result, imp.meta(node).shape)


@handles(aten.flip.default)
@zeros_when_empty
def _flip(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Each flipped dimension gathered in reverse order."""
    x = imp.value(node.args[0])
    rank = len(g.shape_of(x))
    for dim in sorted({d % max(rank, 1) for d in node.args[1]}) if rank else []:
        n = g.shape_of(x)[dim]
        if n > 1:
            reverse = imp.constant(np.arange(n - 1, -1, -1), g.i64, (n,))
            x = take(imp, x, [*[None] * dim, reverse])
    return imp.reshape(x, imp.meta(node).shape)


@handles(aten.diagonal.default, aten.diagonal_copy.default)
@zeros_when_empty
def _diagonal(imp: FxImporter, node: fx.Node) -> SSAValue:
    """The two dimensions moved last and flattened: the diagonal is a slice with step
    ``columns + 1``."""
    x = imp.value(node.args[0])
    shape = g.shape_of(x)
    offset = argument(node, 1, "offset", 0)
    d1, d2 = argument(node, 2, "dim1", 0) % len(shape), argument(node, 3, "dim2", 1) % len(shape)
    others = [d for d in range(len(shape)) if d not in (d1, d2)]
    moved = imp.insert(g.PermuteOp(x, perm=[*others, d1, d2]), hint=False)
    rows, cols = shape[d1], shape[d2]
    flat = imp.reshape(moved, (*[shape[d] for d in others], rows * cols))
    count = imp.meta(node).shape[-1]
    start = offset if offset >= 0 else -offset * cols
    step = cols + 1
    diagonal = imp.insert(g.SliceOp(flat, dim=len(others), start=start,
                                    end=start + (count - 1) * step + 1, step=step))
    return imp.reshape(diagonal, imp.meta(node).shape)
