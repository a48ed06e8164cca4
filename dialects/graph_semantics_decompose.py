"""The decompositions of graph ops into simpler graph ops, each written once.

A decomposition takes a ``Builder`` (a ``PatternRewriter`` is one) placed before the op
and the op, inserts the ops that compute it, and returns the values that replace the
op's results. Composites (GELU, softmax, layer norm and their backward ops) are
expanded by ``graph-decompose``; the decompositions of elementwise primitives (erf,
tanh, sigmoid, division, ...) are the recipes of a target that has no instruction for
them (the MN-Core ALU). ``graph_semantics`` binds them to op classes; each is tested
against the op's numpy reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g

#: (builder, op) -> the values replacing the op's results.
Decomposition = Callable[[Builder, Any], list[SSAValue]]

#: Abramowitz and Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ...)) exp(-x^2) for x >= 0,
#: t = 1 / (1 + p x); the error is below 1.5e-7.
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
#: erf(x) = x T(x^2) for |x| < 1 (Cephes' ``erff``, highest power first; relative error
#: about 1e-9 in exact arithmetic): 7.1.26's 1 - poly exp(-x^2) cancels near 0.
ERF_T = (7.853861353153693e-5, -8.010193625184903e-4, 5.188327685732524e-3,
         -2.685381193529856e-2, 1.128358514861418e-1, -3.761262582423300e-1,
         1.128379165726710)


class Insert:
    """Inserts ops through ``builder`` and returns their first result; makes 0-d
    constants of one element type."""

    def __init__(self, builder: Builder, like: SSAValue) -> None:
        self.builder = builder
        self.element_type: Attribute = g.element_type_of(like)

    def __call__(self, op: Operation) -> SSAValue:
        return self.builder.insert(op).results[0]

    def scalar(self, value: float | int) -> SSAValue:
        typ = g.tensor((), self.element_type)
        return self(g.ConstantOp(DenseIntOrFPElementsAttr.from_list(typ, [value])))


# --------------------------------------------------------------------------- primitives


def erf(b: Builder, op: g.ErfOp) -> list[SSAValue]:
    """x T(x^2) below 1 in magnitude (relative error a few ulps, where 7.1.26 loses
    every digit near 0: erf(1e-8) came out 0), else Abramowitz and Stegun 7.1.26 on
    |x|, with x's sign (error below 1.5e-7)."""
    e, x = Insert(b, op.input), op.input
    square = e(g.MulOp(x, x))
    series = e.scalar(ERF_T[0])
    for c in ERF_T[1:]:
        series = e(g.AddOp(e(g.MulOp(series, square)), e.scalar(c)))
    small = e(g.MulOp(series, x))
    ax = e(g.MaximumOp(x, e(g.NegOp(x))))
    t = e(g.ReciprocalOp(e(g.AddOp(e(g.MulOp(ax, e.scalar(ERF_P))), e.scalar(1.0)))))
    poly = e(g.MulOp(t, e.scalar(ERF_A[4])))
    for a in reversed(ERF_A[:4]):
        poly = e(g.MulOp(e(g.AddOp(poly, e.scalar(a))), t))
    gauss = e(g.ExpOp(e(g.NegOp(square))))
    magnitude = e(g.SubOp(e.scalar(1.0), e(g.MulOp(poly, gauss))))  # erf(|x|)
    negative = e(g.LtOp(x, e.scalar(0.0)))
    large = e(g.WhereOp(negative, e(g.NegOp(magnitude)), magnitude))
    return [e(g.WhereOp(e(g.LtOp(ax, e.scalar(1.0))), small, large))]


def tanh(b: Builder, op: g.TanhOp) -> list[SSAValue]:
    """1 - 2 / (exp(2x) + 1)"""
    e, x = Insert(b, op.input), op.input
    r = e(g.ReciprocalOp(e(g.AddOp(e(g.ExpOp(e(g.AddOp(x, x)))), e.scalar(1.0)))))
    return [e(g.SubOp(e.scalar(1.0), e(g.AddOp(r, r))))]


def sigmoid(b: Builder, op: g.SigmoidOp) -> list[SSAValue]:
    """1 / (1 + exp(-x))"""
    e, x = Insert(b, op.input), op.input
    return [e(g.ReciprocalOp(e(g.AddOp(e(g.ExpOp(e(g.NegOp(x)))), e.scalar(1.0)))))]


def div(b: Builder, op: g.DivOp) -> list[SSAValue]:
    """x * (1 / y)"""
    e = Insert(b, op.lhs)
    return [e(g.MulOp(op.lhs, e(g.ReciprocalOp(op.rhs))))]


def log1p(b: Builder, op: g.Log1pOp) -> list[SSAValue]:
    """log(u) * (x / (u - 1)) with u = 1 + x, which cancels u's rounding (Goldberg); x
    itself where u rounds to 1, and where x is +inf (inf / inf)."""
    e, x = Insert(b, op.input), op.input
    u = e(g.AddOp(x, e.scalar(1.0)))
    general = e(g.MulOp(e(g.LogOp(u)), e(g.DivOp(x, e(g.SubOp(u, e.scalar(1.0)))))))
    exact = e(g.OrOp(e(g.EqOp(u, e.scalar(1.0))), e(g.EqOp(x, e.scalar(math.inf)))))
    return [e(g.WhereOp(exact, x, general))]


#: Past this magnitude every f32 is an integer.
F32_INTEGERS = 2.0**23


def floor(b: Builder, op: g.FloorOp) -> list[SSAValue]:
    """Round to an integer by adding and subtracting 2**23 (of x's sign: the sum's ulp
    is 1, so f32 addition rounds it to nearest), then step down where that rounded up.
    Past 2**23 (and for infinities, NaN and signed zeros) x is its own floor."""
    e, x = Insert(b, op.input), op.input
    magic = e(g.WhereOp(e(g.GeOp(x, e.scalar(0.0))), e.scalar(F32_INTEGERS),
                        e.scalar(-F32_INTEGERS)))
    nearest = e(g.SubOp(e(g.AddOp(x, magic)), magic))
    below = e(g.WhereOp(e(g.GtOp(nearest, x)), e(g.SubOp(nearest, e.scalar(1.0))), nearest))
    magnitude = e(g.MaximumOp(x, e(g.NegOp(x))))
    integral = e(g.OrOp(e(g.GeOp(magnitude, e.scalar(F32_INTEGERS))),
                        e(g.EqOp(x, e.scalar(0.0)))))
    return [e(g.WhereOp(integral, x, below))]


def sqrt(b: Builder, op: g.SqrtOp) -> list[SSAValue]:
    """1 / rsqrt(x)"""
    e = Insert(b, op.input)
    return [e(g.ReciprocalOp(e(g.RsqrtOp(op.input))))]


def abs_(b: Builder, op: g.AbsOp) -> list[SSAValue]:
    """max(x, -x); a boolean is its own magnitude."""
    e, x = Insert(b, op.input), op.input
    if e.element_type == g.i1:
        return [x]
    return [e(g.MaximumOp(x, e(g.NegOp(x))))]


def relu(b: Builder, op: g.ReluOp) -> list[SSAValue]:
    """max(x, 0); a boolean is its own relu."""
    e, x = Insert(b, op.input), op.input
    if e.element_type == g.i1:
        return [x]
    return [e(g.MaximumOp(x, e.scalar(0.0 if g.is_float(e.element_type) else 0)))]


def not_(b: Builder, op: g.NotOp) -> list[SSAValue]:
    """x == false"""
    e = Insert(b, op.input)
    return [e(g.EqOp(op.input, e.scalar(0)))]


def matmul_permuted(b: Builder, op: g.MatmulPermutedOp) -> list[SSAValue]:
    """lhs @ permute(rhs, rhs_perm)"""
    e = Insert(b, op.lhs)
    return [e(g.MatmulOp(op.lhs, e(g.PermuteOp(op.rhs, perm=op.rhs_perm.get_values()))))]


# --------------------------------------------------------------------------- GELU


def _erf_gelu_cdf(e: Insert, x: SSAValue) -> SSAValue:
    """0.5 * (1 + erf(x / sqrt(2)))"""
    erf_ = e(g.ErfOp(e(g.MulOp(x, e.scalar(1 / math.sqrt(2))))))
    return e(g.MulOp(e(g.AddOp(erf_, e.scalar(1.0))), e.scalar(0.5)))


def _tanh_inner(e: Insert, x: SSAValue) -> SSAValue:
    """tanh(sqrt(2/pi) * (x + 0.044715 x^3))"""
    cube = e(g.MulOp(e(g.MulOp(x, x)), x))
    inner = e(g.AddOp(x, e(g.MulOp(cube, e.scalar(0.044715)))))
    return e(g.TanhOp(e(g.MulOp(inner, e.scalar(math.sqrt(2 / math.pi))))))


def gelu(b: Builder, op: g.GeluOp) -> list[SSAValue]:
    e, x = Insert(b, op.input), op.input
    if op.approximate.data == "tanh":
        half = e(g.MulOp(e(g.AddOp(_tanh_inner(e, x), e.scalar(1.0))), e.scalar(0.5)))
    else:
        half = _erf_gelu_cdf(e, x)
    return [e(g.MulOp(x, half))]


def gelu_backward(b: Builder, op: g.GeluBackwardOp) -> list[SSAValue]:
    e, x, grad = Insert(b, op.input), op.input, op.grad
    if op.approximate.data == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        t = _tanh_inner(e, x)
        left = e(g.MulOp(e(g.AddOp(t, e.scalar(1.0))), e.scalar(0.5)))
        sech2 = e(g.SubOp(e.scalar(1.0), e(g.MulOp(t, t))))
        poly = e(g.AddOp(e(g.MulOp(e(g.MulOp(x, x)), e.scalar(3 * kappa * beta))),
                         e.scalar(beta)))
        right = e(g.MulOp(e(g.MulOp(e(g.MulOp(x, e.scalar(0.5))), sech2)), poly))
        slope = e(g.AddOp(left, right))
    else:
        pdf = e(g.MulOp(e(g.ExpOp(e(g.MulOp(e(g.MulOp(x, x)), e.scalar(-0.5))))),
                        e.scalar(1 / math.sqrt(2 * math.pi))))
        slope = e(g.AddOp(_erf_gelu_cdf(e, x), e(g.MulOp(x, pdf))))
    return [e(g.MulOp(grad, slope))]


# --------------------------------------------------------------------------- rows


def _shifted(e: Insert, x: SSAValue, dim: int) -> SSAValue:
    """x - max(x) along ``dim``"""
    return e(g.SubOp(x, e(g.AmaxOp(x, dims=[dim], keepdim=True))))


def softmax(b: Builder, op: g.SoftmaxOp) -> list[SSAValue]:
    """exp(x - max) / sum(exp(x - max))"""
    e, dim = Insert(b, op.input), op.dim.value.data
    exp = e(g.ExpOp(_shifted(e, op.input, dim)))
    return [e(g.DivOp(exp, e(g.SumOp(exp, dims=[dim], keepdim=True))))]


def log_softmax(b: Builder, op: g.LogSoftmaxOp) -> list[SSAValue]:
    """(x - max) - log(sum(exp(x - max)))"""
    e, dim = Insert(b, op.input), op.dim.value.data
    shifted = _shifted(e, op.input, dim)
    total = e(g.SumOp(e(g.ExpOp(shifted)), dims=[dim], keepdim=True))
    return [e(g.SubOp(shifted, e(g.LogOp(total))))]


def softmax_backward(b: Builder, op: g.SoftmaxBackwardOp) -> list[SSAValue]:
    """y * (dy - sum(dy * y))"""
    e, dim, grad, out = Insert(b, op.grad), op.dim.value.data, op.grad, op.output
    dot = e(g.SumOp(e(g.MulOp(grad, out)), dims=[dim], keepdim=True))
    return [e(g.MulOp(out, e(g.SubOp(grad, dot))))]


def log_softmax_backward(b: Builder, op: g.LogSoftmaxBackwardOp) -> list[SSAValue]:
    """dy - exp(y) * sum(dy)"""
    e, dim, grad, out = Insert(b, op.grad), op.dim.value.data, op.grad, op.output
    total = e(g.SumOp(grad, dims=[dim], keepdim=True))
    return [e(g.SubOp(grad, e(g.MulOp(e(g.ExpOp(out)), total))))]


def _axes(value: SSAValue, normalized: int) -> tuple[list[int], list[int]]:
    """The normalized (last) dimensions and the leading ones."""
    rank = len(g.shape_of(value))
    return list(range(rank - normalized, rank)), list(range(rank - normalized))


def layer_norm(b: Builder, op: g.LayerNormOp) -> list[SSAValue]:
    """(x - mean) * rsqrt(var + eps) * w + b, with the mean and rstd."""
    e, x = Insert(b, op.input), op.input
    axes, _ = _axes(x, op.normalized_dims.value.data)
    mean = e(g.MeanOp(x, dims=axes, keepdim=True))
    centered = e(g.SubOp(x, mean))
    var = e(g.MeanOp(e(g.MulOp(centered, centered)), dims=axes, keepdim=True))
    rstd = e(g.RsqrtOp(e(g.AddOp(var, e.scalar(op.eps.value.data)))))
    out = e(g.AddOp(e(g.MulOp(e(g.MulOp(centered, rstd)), op.weight)), op.bias))
    return [out, mean, rstd]


def layer_norm_backward(b: Builder, op: g.LayerNormBackwardOp) -> list[SSAValue]:
    """dx = rstd/N * (N*g - sum(g) - x̂ * sum(g * x̂)) with g = dy * w."""
    k = op.normalized_dims.value.data
    e, x, grad = Insert(b, op.input), op.input, op.grad
    axes, lead = _axes(x, k)
    count = float(math.prod(g.shape_of(x)[-k:]))
    xhat = e(g.MulOp(e(g.SubOp(x, op.mean)), op.rstd))
    gw = e(g.MulOp(grad, op.weight))
    sum_g = e(g.SumOp(gw, dims=axes, keepdim=True))
    sum_gx = e(g.SumOp(e(g.MulOp(gw, xhat)), dims=axes, keepdim=True))
    inner = e(g.SubOp(e(g.SubOp(e(g.MulOp(gw, e.scalar(count))), sum_g)),
                      e(g.MulOp(xhat, sum_gx))))
    grad_input = e(g.MulOp(e(g.DivOp(op.rstd, e.scalar(count))), inner))
    grad_weight = e(g.SumOp(e(g.MulOp(grad, xhat)), dims=lead))
    grad_bias = e(g.SumOp(grad, dims=lead))
    return [grad_input, grad_weight, grad_bias]


# --------------------------------------------------------------------------- lookups


def _one_hot(e: Insert, indices: SSAValue, rows: int, like: Attribute, wrap: bool,
             transposed: bool = False) -> SSAValue:
    """``[n, rows]`` (``transposed``: ``[rows, n]``), in the element type ``like``: row
    ``i`` is 1 at ``indices.flat[i]`` (with ``wrap``, a negative index counts from the
    end), else 0."""
    n = math.prod(g.shape_of(indices))
    typ = g.element_type_of(indices)
    column, row = ([1, n], [rows, 1]) if transposed else ([n, 1], [1, rows])
    flat = e(g.ReshapeOp(indices, column))
    positions = e(g.ConstantOp(DenseIntOrFPElementsAttr.from_list(
        g.tensor(row, typ), list(range(rows)))))
    hits = e(g.EqOp(flat, positions))
    if wrap:
        count = e(g.ConstantOp(DenseIntOrFPElementsAttr.from_list(g.tensor((), typ), [rows])))
        hits = e(g.OrOp(hits, e(g.EqOp(flat, e(g.SubOp(positions, count))))))
    return e(g.ConvertOp(hits, like))


def embedding(b: Builder, op: g.EmbeddingOp) -> list[SSAValue] | None:
    """``weight[indices]`` as ``one_hot(indices) @ weight``, for a machine whose matrix
    unit is its fast path (a lane per output comparing its index with every row is
    ``rows`` instructions a wave). Each output is one product ``w * 1`` plus zeros:
    exact for finite ``w``; a non-finite weight makes its column NaN in the outputs of
    every other row's index (``0 * inf``), where the lookup gives it only to its own
    row's. f32 only."""
    weight, indices = op.weight, op.indices
    if g.element_type_of(weight) != g.f32:
        return None
    e = Insert(b, weight)
    rows, width = g.shape_of(weight)
    lead = list(g.shape_of(indices))
    product = e(g.MatmulOp(_one_hot(e, indices, rows, g.f32, wrap=False), weight))
    return [e(g.ReshapeOp(product, [*lead, width]))]


def index_put(b: Builder, op: g.IndexPutOp) -> list[SSAValue] | None:
    """``input.index_put_((indices,), values, accumulate=True)`` as ``input +
    one_hot(indices)^T @ values``: each row adds its occurrences' values (summed in
    another order than torch's, so repeated rows may round differently). Only
    accumulation (a write keeps the last occurrence, which no product says), f32,
    values of the full shape."""
    x, indices, values = op.input, op.indices, op.values
    shape = list(g.shape_of(x))
    n = math.prod(g.shape_of(indices))
    if (not op.accumulate.value.data or g.element_type_of(x) != g.f32
            or list(g.shape_of(values)) != [*g.shape_of(indices), *shape[1:]]):
        return None
    e = Insert(b, x)
    width = math.prod(shape[1:])
    one_hot = _one_hot(e, indices, shape[0], g.f32, wrap=True, transposed=True)
    flat = e(g.ReshapeOp(values, [n, width])) if [n, width] != list(
        g.shape_of(values)) else values
    added = e(g.MatmulOp(one_hot, flat))  # [rows, width]
    return [e(g.AddOp(x, e(g.ReshapeOp(added, shape)) if shape != [shape[0], width]
                      else added))]
