"""The ATen -> graph table: for each core-ATen op the importer takes, the handler that
inserts its graph op (or a short fixed expansion). A new mapping is one ``@handles``."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.element_types import NARROW_FLOATS
from mncore_ir.frontends.fx_importer import (
    TORCH_TO_ELEMENT,
    FxImporter,
    FxImportError,
    Handler,
    sanitize,
    unsupported,
)

aten = torch.ops.aten

HANDLERS: dict[Any, Handler] = {}


def handles(*targets: Any) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for t in targets:
            HANDLERS[t] = fn
        return fn

    return register




# ---------------------------------------------------------------------- handlers

_BINARY = {
    aten.add.Tensor: g.AddOp, aten.sub.Tensor: g.SubOp, aten.mul.Tensor: g.MulOp,
    aten.div.Tensor: g.DivOp, aten.pow.Tensor_Tensor: g.PowOp, aten.pow.Tensor_Scalar: g.PowOp,
    aten.pow.Scalar: g.PowOp, aten.maximum.default: g.MaximumOp,
    aten.minimum.default: g.MinimumOp, aten.add.Scalar: g.AddOp, aten.sub.Scalar: g.SubOp,
    aten.mul.Scalar: g.MulOp, aten.div.Scalar: g.DivOp,
    aten.bitwise_and.Tensor: g.AndOp, aten.bitwise_or.Tensor: g.OrOp,
    aten.logical_and.default: g.AndOp, aten.logical_or.default: g.OrOp,
}
_COMPARE = {
    **{getattr(aten, n).Tensor: getattr(g, f"{n.capitalize()}Op")
       for n in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{getattr(aten, n).Scalar: getattr(g, f"{n.capitalize()}Op")
       for n in ("eq", "ne", "lt", "le", "gt", "ge")},
}
_UNARY = {
    aten.neg.default: g.NegOp, aten.abs.default: g.AbsOp, aten.relu.default: g.ReluOp,
    aten.exp.default: g.ExpOp, aten.log.default: g.LogOp, aten.log1p.default: g.Log1pOp,
    aten.sqrt.default: g.SqrtOp,
    aten.rsqrt.default: g.RsqrtOp, aten.reciprocal.default: g.ReciprocalOp,
    aten.tanh.default: g.TanhOp, aten.sigmoid.default: g.SigmoidOp, aten.erf.default: g.ErfOp,
}


#: Arithmetic that eager's CPU kernels compute in f32 for narrow floats, with a number's
#: own value (addition and subtraction round the number to the tensor's type first).
_ARITHMETIC = (g.MulOp, g.DivOp)


def computed_in(imp: FxImporter, node: fx.Node, dtype: torch.dtype) -> torch.dtype:
    """The type eager computes ``node``'s product or quotient in: a narrow float's with a
    Python number or a wider 0-d float tensor (whose own value CPU kernels read) is
    computed in f32 and rounded once (``x16 * 70000.0`` is 35008 for ``x16 = 0.5``:
    70000.0 rounded to f16 first would be inf); any other, in ``dtype``."""
    if dtype not in (torch.float16, torch.bfloat16):
        return dtype
    for x in node.args[:2]:
        if not isinstance(x, fx.Node):
            return torch.float32
        meta = imp.meta(x)
        if meta.dim() == 0 and meta.dtype in (torch.float32, torch.float64):
            return torch.float32
    return dtype


def _binary(imp: FxImporter, node: fx.Node) -> SSAValue:
    a, b = node.args[:2]
    op = _BINARY[node.target]
    dtype = imp.meta(node).dtype
    if node.kwargs.get("alpha", 1) != 1:
        # ``a + alpha * b``: a narrow float's in f32 (alpha rounded to its type first),
        # rounded once, as eager's vectorised kernel does
        x, y = (widened(imp, imp.as_type(v, dtype)) for v in (a, b))
        alpha = widened(imp, imp.as_type(node.kwargs["alpha"], dtype))
        result = imp.insert(op(x, imp.insert(g.MulOp(y, alpha))))
        return narrowed(imp, result, TORCH_TO_ELEMENT[dtype])
    if op in _ARITHMETIC and (compute := computed_in(imp, node, dtype)) != dtype:
        result = imp.insert(op(imp.as_type(a, compute), imp.as_type(b, compute)))
        return imp.insert(g.ConvertOp(result, TORCH_TO_ELEMENT[dtype]))
    if node.target is aten.pow.Tensor_Scalar and b in (0.5, -0.5) and dtype.is_floating_point:
        # eager's kernel takes these as sqrt and rsqrt: (-inf) ** 0.5 is nan, not inf
        root = g.SqrtOp if b == 0.5 else g.RsqrtOp
        return imp.insert(root(imp.as_type(a, dtype)))
    if op in (g.AndOp, g.OrOp) and dtype != torch.bool:
        raise unsupported(node, f"bitwise ops on {dtype} are not supported")
    if node.target in (aten.logical_and.default, aten.logical_or.default):
        a, b = (imp.insert(g.NeOp(imp.value(x), imp.as_type(0, imp.meta(x).dtype)))
                if imp.meta(x).dtype != torch.bool else imp.value(x) for x in (a, b))
        return imp.insert(op(a, b))
    return imp.insert(op(imp.as_type(a, dtype), imp.as_type(b, dtype)))


def _compare(imp: FxImporter, node: fx.Node) -> SSAValue:
    a, b = node.args[:2]
    common = torch.result_type(imp.meta(a), imp.meta(b))
    return imp.insert(_COMPARE[node.target](imp.as_type(a, common), imp.as_type(b, common)))


def _unary(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.insert(_UNARY[node.target](imp.value(node.args[0])))


for _t in _BINARY:
    HANDLERS[_t] = _binary
for _t in _COMPARE:
    HANDLERS[_t] = _compare
for _t in _UNARY:
    HANDLERS[_t] = _unary


@handles(aten.logical_not.default)
def _logical_not(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A boolean's negation; any other value is compared with zero (torch's result is
    boolean whatever the input)."""
    x = node.args[0]
    if imp.meta(x).dtype == torch.bool:
        return imp.insert(g.NotOp(imp.value(x)))
    return imp.insert(g.EqOp(imp.value(x), imp.as_type(0, imp.meta(x).dtype)))


@handles(aten.bitwise_not.default)
def _bitwise_not(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A boolean's negation; an integer's complement, ``-x - 1`` in two's complement
    (wrapping as the integer types do)."""
    x, dtype = node.args[0], imp.meta(node).dtype
    if dtype == torch.bool:
        return imp.insert(g.NotOp(imp.value(x)))
    if dtype.is_floating_point:
        raise unsupported(node, f"bitwise_not of {dtype} is not defined")
    negated = imp.insert(g.NegOp(imp.value(x)))
    return imp.insert(g.SubOp(negated, imp.as_type(1, dtype)))


@handles(aten.where.self)
def _where(imp: FxImporter, node: fx.Node) -> SSAValue:
    c, a, b = node.args
    dtype = imp.meta(node).dtype
    return imp.insert(g.WhereOp(imp.as_type(c, torch.bool), imp.as_type(a, dtype),
                                imp.as_type(b, dtype)))


@handles(aten.clamp.default)
def _clamp(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, lo, hi = [*node.args, None, None][:3]
    dtype = imp.meta(node).dtype
    v = imp.as_type(x, dtype)
    if lo is not None:
        v = imp.insert(g.MaximumOp(v, imp.as_type(lo, dtype)))
    if hi is not None:
        v = imp.insert(g.MinimumOp(v, imp.as_type(hi, dtype)))
    return v


@handles(aten.gelu.default)
def _gelu(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.insert(g.GeluOp(imp.value(node.args[0]),
                               approximate=node.kwargs.get("approximate", "none")))


@handles(aten.gelu_backward.default)
def _gelu_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.insert(g.GeluBackwardOp(imp.value(node.args[0]), imp.value(node.args[1]),
                                       approximate=node.kwargs.get("approximate", "none")))


@handles(aten._to_copy.default, aten.copy.default)
def _to_copy(imp: FxImporter, node: fx.Node) -> SSAValue:
    src = node.args[1] if node.target == aten.copy.default else node.args[0]
    out = imp.meta(node)
    v = imp.as_type(src, out.dtype)
    if g.shape_of(v) != tuple(out.shape):
        v = imp.insert(g.ExpandOp(v, imp.result_type().get_shape()))
    return v


@handles(aten.clone.default, aten.detach_copy.default, aten.detach.default,
         aten.alias.default, aten.alias_copy.default, aten.lift_fresh_copy.default)
def _identity(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.value(node.args[0])


@handles(aten.lift_fresh.default)
def _lift_fresh(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A fresh constant as a tensor (what ``make_fx`` records as ``lift_fresh_copy``)."""
    return imp.value(node.args[0])


@handles(aten.view.default, aten.view_copy.default, aten._unsafe_view.default,
         aten.reshape.default, aten.squeeze.dims, aten.squeeze.dim, aten.squeeze.default,
         aten.unsqueeze.default, aten.unsqueeze_copy.default, aten.squeeze_copy.dims)
def _reshape(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.reshape(imp.value(node.args[0]), imp.meta(node).shape)


@handles(aten.expand.default, aten.expand_copy.default)
def _expand(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    out = tuple(imp.meta(node).shape)
    if g.shape_of(v) == out:
        return v
    return imp.insert(g.ExpandOp(v, imp.result_type().get_shape()))


@handles(aten.permute.default, aten.permute_copy.default)
def _permute(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    return imp.insert(g.PermuteOp(v, perm=imp.dims(node.args[1], len(g.shape_of(v)))))


@handles(aten.t.default, aten.transpose.int, aten.t_copy.default, aten.transpose_copy.int)
def _transpose(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    rank = len(g.shape_of(v))
    d0, d1 = (node.args[1:3] if len(node.args) > 1 else (0, 1))
    perm = list(range(rank))
    if rank >= 2:
        d0, d1 = d0 % rank, d1 % rank
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return imp.insert(g.PermuteOp(v, perm=perm))


@handles(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    shape = g.shape_of(v)
    dim, start, end, step = (list(node.args[1:]) + [0, None, None, 1][len(node.args) - 1:])[:4]
    dim = dim % len(shape)
    start, end, step = slice(start, end, step).indices(shape[dim])
    return imp.insert(g.SliceOp(v, dim=dim, start=start, end=max(end, start), step=step))


@handles(aten.select.int, aten.select_copy.int)
def _select(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    shape = g.shape_of(v)
    dim = node.args[1] % len(shape)
    index = node.args[2] % shape[dim]
    piece = imp.insert(g.SliceOp(v, dim=dim, start=index, end=index + 1), hint=False)
    return imp.reshape(piece, imp.meta(node).shape)


@handles(aten.slice_scatter.default)
def _slice_scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``base`` with ``base[start:end:step]`` along ``dim`` replaced: slices and a concat
    for step 1."""
    base, src = imp.value(node.args[0]), imp.value(node.args[1])
    shape = g.shape_of(base)
    dim, start, end, step = [*node.args[2:], *[0, None, None, 1][len(node.args) - 2:]]
    dim = dim % len(shape)
    start, end, step = slice(start, end, step).indices(shape[dim])
    if step != 1:  # an index_put of the strided positions, along dim moved first
        perm = [dim, *[d for d in range(len(shape)) if d != dim]]
        moved = [imp.insert(g.PermuteOp(v, perm=perm), hint=False) for v in (base, src)]
        positions = imp.constant(np.arange(start, end, step), g.i64,
                                 (len(range(start, end, step)),))
        put = imp.insert(g.IndexPutOp(moved[0], positions, moved[1]), hint=False)
        return imp.insert(g.PermuteOp(put, perm=[perm.index(d) for d in range(len(shape))]))
    pieces = []
    if start > 0:
        pieces.append(imp.insert(g.SliceOp(base, dim=dim, start=0, end=start),
                                 hint=False))
    pieces.append(src)
    if end < shape[dim]:
        pieces.append(imp.insert(g.SliceOp(base, dim=dim, start=end, end=shape[dim]),
                                 hint=False))
    return pieces[0] if len(pieces) == 1 else imp.insert(g.ConcatOp(*pieces, dim=dim))


@handles(aten.split.Tensor, aten.split_copy.Tensor, aten.split_with_sizes.default,
         aten.split_with_sizes_copy.default)
def _split(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    v = imp.value(node.args[0])
    dim = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(g.shape_of(v))
    outs, start = [], 0
    for piece in imp.meta(node):
        size = piece.shape[dim]
        outs.append(imp.insert(g.SliceOp(v, dim=dim, start=start, end=start + size),
                               hint=False))
        start += size
    return tuple(outs)


@handles(operator.getitem)
def _getitem(imp: FxImporter, node: fx.Node) -> SSAValue:
    value = imp.env[node.args[0]][node.args[1]]
    if not isinstance(value, SSAValue | None):
        raise FxImportError(f"{node.name} reads a value that is not on the device")
    if value is None and not node.users:
        return None
    if value is None:
        raise FxImportError(f"{node.name} reads an output that was not computed")
    value.name_hint = sanitize(node.name)
    return value


@handles(aten.cat.default)
def _cat(imp: FxImporter, node: fx.Node) -> SSAValue:
    dtype = imp.meta(node).dtype
    inputs = [imp.as_type(x, dtype) for x in node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    return imp.insert(g.ConcatOp(*inputs, dim=dim % len(g.shape_of(inputs[0]))))


def splat(imp: FxImporter, node: fx.Node, value: Any) -> SSAValue:
    out = imp.meta(node)
    v = imp.constant(value, TORCH_TO_ELEMENT[out.dtype])
    if out.dim() == 0:
        return v
    return imp.insert(g.ExpandOp(v, imp.result_type().get_shape()))


@handles(aten.full.default, aten.full_like.default, aten.scalar_tensor.default,
         aten.new_full.default)
def _full(imp: FxImporter, node: fx.Node) -> SSAValue:
    value = (node.args[0] if node.target == aten.scalar_tensor.default
             else node.args[2] if node.target == aten.new_full.default else node.args[1])
    return splat(imp, node, value)


@handles(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default,
         aten.empty.memory_format, aten.empty_like.default, aten.new_empty.default,
         aten.empty_strided.default)
def _zeros(imp: FxImporter, node: fx.Node) -> SSAValue:
    # Empty tensors have unspecified contents: zeros are a valid choice.
    return splat(imp, node, 0)


@handles(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def _ones(imp: FxImporter, node: fx.Node) -> SSAValue:
    return splat(imp, node, 1)


@handles(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(imp: FxImporter, node: fx.Node) -> SSAValue:
    out = imp.meta(node)
    args = list(node.args)
    start, end, step = (0, args[0], 1) if len(args) == 1 else [*args, 1][:3]
    values = np.arange(start, end, step)
    return imp.constant(values, TORCH_TO_ELEMENT[out.dtype], tuple(out.shape))


def reduce(imp: FxImporter, op_type: type[g.ReduceOp], x: SSAValue, dims: Sequence[int],
           keep: bool, hint: bool = True) -> SSAValue:
    """``op_type`` of ``x`` over ``dims``; a reduction of every dimension is one of the
    flattened tensor, and one of the trailing (leading) dimensions one of a matrix, the
    rest flattened into its rows (columns): a target's kernels take few dimensions at a
    time (Triton's: 3 kept and 3 reduced)."""
    shape = g.shape_of(x)
    rank, dims = len(shape), sorted(set(dims))
    if rank > 1 and dims == list(range(rank)):
        flat = imp.insert(g.ReshapeOp(x, (math.prod(shape),)), hint=False)
        total = imp.insert(op_type(flat, dims=[0], keepdim=keep), hint=hint and not keep)
        return imp.reshape(total, (1,) * len(shape)) if keep else total
    kept = [s for d, s in enumerate(shape) if d not in dims]
    trailing, leading = dims == list(range(rank - len(dims), rank)), dims == list(
        range(len(dims)))
    if rank > 3 and (trailing or leading):
        reduced = math.prod(shape[d] for d in dims)
        matrix = (math.prod(kept), reduced) if trailing else (reduced, math.prod(kept))
        total = imp.insert(op_type(imp.reshape(x, matrix), dims=[1 if trailing else 0]),
                           hint=False)
        out = [1 if d in dims else s for d, s in enumerate(shape)] if keep else kept
        return imp.reshape(total, out)
    return imp.insert(op_type(x, dims=dims, keepdim=keep), hint=hint)


def _reduce(op_type: type[g.ReduceOp]) -> Handler:
    def handler(imp: FxImporter, node: fx.Node) -> SSAValue:
        x = node.args[0]
        out = imp.meta(node)
        v = imp.as_type(x, out.dtype)
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        return reduce(imp, op_type, v, imp.dims(dims, len(g.shape_of(v))), keep)

    return handler


HANDLERS[aten.sum.dim_IntList] = _reduce(g.SumOp)
HANDLERS[aten.sum.default] = _reduce(g.SumOp)
HANDLERS[aten.mean.dim] = _reduce(g.MeanOp)
HANDLERS[aten.mean.default] = _reduce(g.MeanOp)
HANDLERS[aten.amax.default] = _reduce(g.AmaxOp)


@handles(aten.any.dim, aten.any.dims, aten.any.default)
def _any(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``any``: the max of ``x != 0`` (as f32, a reduction every level has), as a bool.
    Over an empty dimension (where ``any`` is False and a max has no value) the node
    is refused, and runs on the host."""
    x = imp.value(node.args[0])
    shape = g.shape_of(x)
    dims = imp.dims(node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"),
                    len(shape))
    keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    if shape and any(shape[d] == 0 for d in dims):
        raise unsupported(node, "any over an empty dimension")
    if g.element_type_of(x) != g.i1:
        x = imp.insert(g.NeOp(x, imp.constant(0, g.element_type_of(x))), hint=False)
    truth = imp.insert(g.ConvertOp(x, g.f32), hint=False)
    found = reduce(imp, g.AmaxOp, truth, dims, keep, hint=False)
    return imp.insert(g.GtOp(found, imp.constant(0.0, g.f32)))  # exact on every level


def widened(imp: FxImporter, x: SSAValue) -> SSAValue:
    """``x`` in f32 if it is a narrow float: an expansion of several ops computes in f32
    and rounds once at the end (:func:`narrowed`), as torch's CPU kernels do."""
    if g.element_type_of(x) in NARROW_FLOATS:
        return imp.insert(g.ConvertOp(x, g.f32), hint=False)
    return x


def narrowed(imp: FxImporter, x: SSAValue, element_type: Any) -> SSAValue:
    """``x`` back in ``element_type`` after :func:`widened`."""
    if g.element_type_of(x) != element_type:
        return imp.insert(g.ConvertOp(x, element_type))
    return x


def variance(imp: FxImporter, node: fx.Node, dims: Any, correction: float, keep: bool
             ) -> tuple[SSAValue, SSAValue]:
    """``sum((x - mean)^2) / max(0, n - correction)`` over ``dims`` (as torch: inf, or
    NaN for none, where the correction takes every element), and the mean (shaped as
    the variance)."""
    given = imp.value(node.args[0])
    x = widened(imp, given)
    shape = g.shape_of(x)
    dims = imp.dims(dims, len(shape))
    count = math.prod(shape[d] for d in dims)
    mean = reduce(imp, g.MeanOp, x, dims, True, hint=False)
    centered = imp.insert(g.SubOp(x, mean), hint=False)
    squares = imp.insert(g.MulOp(centered, centered), hint=False)
    total = reduce(imp, g.SumOp, squares, dims, keep, hint=False)
    var = imp.insert(g.DivOp(total, imp.constant(max(0, count - correction),
                                                 g.element_type_of(x))))
    typ = g.element_type_of(given)
    return (narrowed(imp, var, typ),
            narrowed(imp, imp.reshape(mean, g.shape_of(var)), typ))


@handles(aten.var_mean.correction)
def _var_mean(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    correction = node.kwargs.get("correction", 1)
    return variance(imp, node, node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"),
                    1 if correction is None else correction, node.kwargs.get("keepdim", False))


@handles(aten.mm.default, aten.bmm.default)
def _mm(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.insert(g.MatmulOp(imp.value(node.args[0]), imp.value(node.args[1])))


@handles(aten.addmm.default)
def _addmm(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``beta * bias + alpha * (a @ b)``; with ``beta == 0`` torch ignores the bias
    (NaN included). A narrow float's is computed in f32 and rounded once, as eager's
    kernel accumulates (rounding the product before adding the bias was one unit in
    the last place off in a quarter of an f16 ``nn.Linear``'s outputs)."""
    bias, a, b = node.args[:3]
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    dtype = imp.meta(node).dtype
    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    product = imp.insert(g.MatmulOp(imp.as_type(a, compute), imp.as_type(b, compute)),
                         hint=beta == 0 and compute == dtype)
    if alpha != 1:
        product = imp.insert(g.MulOp(product, imp.as_type(alpha, compute)),
                             hint=beta == 0 and compute == dtype)
    if beta != 0:
        term = imp.as_type(bias, compute)
        if beta != 1:
            term = imp.insert(g.MulOp(term, imp.as_type(beta, compute)), hint=False)
        product = imp.insert(g.AddOp(product, term))
    return narrowed(imp, product, TORCH_TO_ELEMENT[dtype])


@handles(aten._softmax.default, aten._log_softmax.default)
def _softmax(imp: FxImporter, node: fx.Node) -> SSAValue:
    op = g.SoftmaxOp if node.target == aten._softmax.default else g.LogSoftmaxOp
    v = imp.value(node.args[0])
    return imp.insert(op(v, dim=node.args[1] % len(g.shape_of(v))))


@handles(aten._softmax_backward_data.default, aten._log_softmax_backward_data.default)
def _softmax_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    op = (g.SoftmaxBackwardOp if node.target == aten._softmax_backward_data.default
          else g.LogSoftmaxBackwardOp)
    grad, out = imp.value(node.args[0]), imp.value(node.args[1])
    return imp.insert(op(grad, out, dim=node.args[2] % len(g.shape_of(grad))))


def _optional(imp: FxImporter, arg: Any, value: float, shape: Sequence[int],
              like: fx.Node) -> SSAValue:
    """An optional weight or bias, else ``value`` everywhere, in ``like``'s type."""
    if arg is not None:
        return imp.value(arg)
    return imp.constant(np.full(shape, value), TORCH_TO_ELEMENT[imp.meta(like).dtype], shape)


@handles(aten.native_layer_norm.default)
def _layer_norm(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    x, normalized, w, b, eps = node.args
    shape = tuple(normalized)
    return imp.insert(g.LayerNormOp(imp.value(x), _optional(imp, w, 1.0, shape, x),
                                    _optional(imp, b, 0.0, shape, x),
                                    normalized_dims=len(shape), eps=float(eps)))


@handles(aten.native_layer_norm_backward.default)
def _layer_norm_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    grad, x, normalized, mean, rstd, w, _b, mask = node.args
    shape = tuple(normalized)
    outs = imp.insert(g.LayerNormBackwardOp(imp.value(grad), imp.value(x), imp.value(mean),
                                            imp.value(rstd), _optional(imp, w, 1.0, shape, x),
                                            normalized_dims=len(shape)))
    return tuple(o if m else None for o, m in zip(outs, mask, strict=True))


@handles(aten.embedding.default)
def _embedding(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.insert(g.EmbeddingOp(imp.value(node.args[0]), imp.value(node.args[1])))


def pairs(v: Any, default: Sequence[int]) -> list[int]:
    v = list(v) if isinstance(v, list | tuple) else [v]
    if not v:
        v = list(default)
    return v * 2 if len(v) == 1 else v


def windows_of(node: fx.Node, stride: Any, padding: Any, dilation: Any, rank: int
             ) -> dict[str, list[int]]:
    """A convolution's window properties as 2-D ones (a 1-D one has height 1)."""
    if rank == 3:
        return {"stride": [1, *pairs(stride, [1])[:1]], "padding": [0, *pairs(padding, [0])[:1]],
                "dilation": [1, *pairs(dilation, [1])[:1]]}
    if rank != 4:
        raise unsupported(node, f"{rank - 2}-D convolutions are not supported")
    return {"stride": pairs(stride, [1]), "padding": pairs(padding, [0]),
            "dilation": pairs(dilation, [1])}


def as_2d(imp: FxImporter, arg: fx.Node) -> SSAValue:
    """A 1-D convolution's operand (N, C, L) as a 2-D one's (N, C, 1, L)."""
    shape = imp.meta(arg).shape
    return imp.reshape(imp.value(arg), (*shape[:2], 1, *shape[2:]) if len(shape) == 3
                       else shape)


def convolution(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A 2-D convolution; a 1-D one as a 2-D one of height 1 (transposed ones:
    :mod:`~mncore_ir.frontends.aten_expansions`)."""
    x, w, b, stride, padding, dilation, _transposed, _out_pad, groups = node.args
    windows = windows_of(node, stride, padding, dilation, len(imp.meta(x).shape))
    out_channels = imp.meta(w).shape[0]
    bias = _optional(imp, b, 0.0, (out_channels,), w)
    conv = imp.insert(g.Conv2dOp(as_2d(imp, x), as_2d(imp, w), bias, **windows,
                                 groups=groups))
    return imp.reshape(conv, imp.meta(node).shape)


def convolution_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    grad, x, w, _bias_sizes, stride, padding, dilation, _transposed, _op, groups, mask = (
        node.args)
    windows = windows_of(node, stride, padding, dilation, len(imp.meta(x).shape))
    outs = imp.insert(g.Conv2dBackwardOp(as_2d(imp, grad), as_2d(imp, x), as_2d(imp, w),
                                         **windows, groups=groups))
    shapes = (imp.meta(x).shape, imp.meta(w).shape, g.shape_of(outs[2]))
    return tuple(imp.reshape(o, shape) if m else None
                 for o, shape, m in zip(outs, shapes, mask, strict=True))
