"""ATen's pointwise math on graph's elementwise ops: the transcendental functions that
have a graph op each (one mapping), and those written with them: remainders and
rounding divisions from ``graph.fmod`` (as ATen's CPU kernels compute them), the ELU
family from ``graph.expm1``, rounding from ``graph.floor``, ``hypot``, ``copysign``,
``signbit``, logarithms of other bases. Checked against eager PyTorch on every device in
``tests/test_transcendental.py`` and by the OpInfo sweep."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import Math
from mncore_ir.frontends.aten_expansions import argument
from mncore_ir.frontends.aten_handlers import computed_in, handles, narrowed, splat, widened
from mncore_ir.frontends.fx_importer import TORCH_TO_ELEMENT, FxImporter, unsupported

aten = torch.ops.aten

#: ATen ops that are one graph op, on operands brought to the result's type.
FUNCTIONS: dict[Any, type[g.GraphOp]] = {
    aten.sin.default: g.SinOp, aten.cos.default: g.CosOp, aten.tan.default: g.TanOp,
    aten.asin.default: g.AsinOp, aten.acos.default: g.AcosOp, aten.atan.default: g.AtanOp,
    aten.sinh.default: g.SinhOp, aten.cosh.default: g.CoshOp,
    aten.asinh.default: g.AsinhOp, aten.acosh.default: g.AcoshOp,
    aten.atanh.default: g.AtanhOp, aten.expm1.default: g.Expm1Op,
    aten.erfc.default: g.ErfcOp, aten.erfinv.default: g.ErfinvOp,
    aten.special_erfcx.default: g.ErfcxOp,
    aten.lgamma.default: g.LgammaOp, aten.digamma.default: g.DigammaOp,
    aten.atan2.default: g.Atan2Op,
    aten.fmod.Tensor: g.FmodOp, aten.fmod.Scalar: g.FmodOp,
}


def _operands(imp: FxImporter, node: fx.Node, count: int) -> list[SSAValue]:
    dtype = imp.meta(node).dtype
    return [imp.as_type(a, dtype) for a in node.args[:count]]


@handles(*FUNCTIONS)
def _function(imp: FxImporter, node: fx.Node) -> SSAValue:
    op = FUNCTIONS[node.target]
    return imp.insert(op(*_operands(imp, node, 2 if issubclass(op, g.BinaryOp) else 1)))


@handles(aten.polygamma.default)
def _polygamma(imp: FxImporter, node: fx.Node) -> SSAValue:
    """ψ's 0th derivative is ψ; the others have no graph op."""
    n, x = node.args[:2]
    if n != 0:
        raise unsupported(node, f"polygamma of order {n} is not supported (only 0)")
    return imp.insert(g.DigammaOp(imp.as_type(x, imp.meta(node).dtype)))


# ------------------------------------------------------------------ remainders


def _in(imp: FxImporter, node: fx.Node, opmath: bool = False
        ) -> tuple[Math, SSAValue, SSAValue, Any]:
    """The operands in the result's type, and Math on them (in f32 for a narrow float:
    several ops, one rounding). ``opmath``: a number or wider 0-d operand of a narrow
    float enters at its own value where eager's kernel reads it so (:func:`computed_in`:
    ``bf16 // 0.3`` divides by 0.3, not by 0.30078125)."""
    dtype = imp.meta(node).dtype
    typ = TORCH_TO_ELEMENT[dtype]
    if opmath and computed_in(imp, node, dtype) != dtype:
        a, b = (imp.as_type(v, torch.float32) for v in node.args[:2])
    else:
        a, b = (widened(imp, v) for v in _operands(imp, node, 2))
    return Math(imp.builder, a), a, b, typ


@handles(aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder.Scalar_Tensor)
def _remainder(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Python's ``%``: fmod, moved by b where it has the other sign (ATen's kernel)."""
    m, a, b, typ = _in(imp, node)
    r = m.e(g.FmodOp(a, b))
    zero = 0.0 if g.is_float(g.element_type_of(r)) else 0
    moved = m.and_(m.ne(r, zero), m.ne(m.lt(r, zero), m.lt(b, zero)))
    return narrowed(imp, m.where(moved, m.add(r, b), r), typ)


@handles(aten.div.Tensor_mode, aten.div.Scalar_mode, aten.floor_divide.default,
         aten.floor_divide.Scalar)
def _rounding_division(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``a / b`` rounded toward zero or down. Floats as ATen's CPU kernels: trunc(a/b);
    floor from the exact remainder, ``(a - fmod(a, b)) / b`` stepped down where the
    signs differ, then rounded to the nearest integer. Integers: their exact remainder,
    the quotient of the exact multiple taken in f64."""
    mode = node.kwargs.get("rounding_mode", "floor" if "floor_divide" in str(node.target)
                           else None)
    if mode is None:
        return imp.insert(g.DivOp(*_operands(imp, node, 2)))
    m, a, b, typ = _in(imp, node, opmath=True)
    if not g.is_float(typ):
        return _integer_division(imp, m, a, b, typ, mode)
    if mode == "trunc":
        return narrowed(imp, m.trunc(m.div(a, b)), typ)
    r = m.e(g.FmodOp(a, b))
    quotient = m.div(m.sub(a, r), b)
    quotient = m.where(m.and_(m.ne(r, 0.0), m.ne(m.lt(r, 0.0), m.lt(b, 0.0))),
                       m.sub(quotient, 1.0), quotient)
    down = m.floor(quotient)
    rounded = m.where(m.lt(0.5, m.sub(quotient, down)), m.add(down, 1.0), down)
    rounded = m.where(m.eq(quotient, 0.0), m.mul(m.div(a, b), 0.0), rounded)  # signed 0
    return narrowed(imp, m.where(m.eq(b, 0.0), m.div(a, b), rounded), typ)


def _integer_division(imp: FxImporter, m: Math, a: SSAValue, b: SSAValue, typ: Any,
                      mode: str) -> SSAValue:
    """The exact multiple ``a - fmod(a, b)`` of ``b`` divided in f64, which is exact
    below 2**53. Past it (int64) the f64 quotient is off by up to ~2**11 (and one
    below an integer truncates to the one under it), so the residual of that estimate,
    a small exact multiple of ``b`` in int64 arithmetic, is divided again, rounded to
    the nearest integer, and added."""
    r = m.e(g.FmodOp(a, b))
    multiple = m.sub(a, r)
    quotient = _f64_quotient(imp, m, multiple, b, typ, rounded=False)
    if typ == g.i64:
        residual = m.sub(multiple, m.mul(quotient, b))
        quotient = m.add(quotient, _f64_quotient(imp, m, residual, b, typ, rounded=True))
    if mode == "floor":
        step = m.and_(m.ne(r, 0), m.ne(m.lt(r, 0), m.lt(b, 0)))
        quotient = m.where(step, m.sub(quotient, 1), quotient)
    return quotient


def _f64_quotient(imp: FxImporter, m: Math, a: SSAValue, b: SSAValue, typ: Any,
                  rounded: bool) -> SSAValue:
    """``a / b`` taken in f64, converted back to ``typ`` toward zero or (``rounded``)
    to the nearest integer."""
    f64 = g.Float64Type()
    x, y = (m.e(g.ConvertOp(v, f64)) for v in (a, b))
    wide = Math(imp.builder, x)
    quotient = wide.div(x, y)
    if rounded:
        quotient = wide.floor(wide.add(quotient, 0.5))
    return m.e(g.ConvertOp(quotient, typ))


# ------------------------------------------------------------------ ELU


@handles(aten.elu.default)
def _elu(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``scale * x`` above 0, ``scale * alpha * expm1(input_scale * x)`` below."""
    alpha, scale, input_scale = (argument(node, k, name, 1.0) for k, name in
                                 enumerate(("alpha", "scale", "input_scale"), start=1))
    typ = TORCH_TO_ELEMENT[imp.meta(node).dtype]
    x = widened(imp, imp.as_type(node.args[0], imp.meta(node).dtype))
    m = Math(imp.builder, x)
    below = m.mul(m.unary(g.Expm1Op, m.mul(x, float(input_scale))), float(scale * alpha))
    return narrowed(imp, m.where(m.lt(0.0, x), m.mul(x, float(scale)), below), typ)


@handles(aten.elu_backward.default)
def _elu_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    """The slope ``scale`` above 0; below, ``input_scale * scale * alpha * exp(input_scale
    * x)``, from the input or (``is_result``) from the output ``y`` as
    ``input_scale * (y + scale * alpha)``."""
    grad, alpha, scale, input_scale, is_result, saved = node.args[:6]
    typ = TORCH_TO_ELEMENT[imp.meta(node).dtype]
    dy, v = (widened(imp, imp.as_type(t, imp.meta(node).dtype)) for t in (grad, saved))
    m = Math(imp.builder, v)
    if is_result:
        below = m.mul(m.add(v, float(scale * alpha)), float(input_scale))
    else:
        below = m.mul(m.unary(g.ExpOp, m.mul(v, float(input_scale))),
                      float(input_scale * scale * alpha))
    slope = m.where(m.lt(0.0, v), float(scale), below)
    return narrowed(imp, m.mul(dy, slope), typ)


# ------------------------------------------------------------------ signs


@handles(aten.signbit.default)
def _signbit(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Negative, or -0 (whose reciprocal is -inf)."""
    x = imp.value(node.args[0])
    typ = g.element_type_of(x)
    if typ == g.i1:
        return splat(imp, node, False)
    if not g.is_float(typ):
        return imp.insert(g.LtOp(x, imp.constant(0, typ)))
    return Math(imp.builder, x).negative(x)


@handles(aten.copysign.Tensor, aten.copysign.Scalar)
def _copysign(imp: FxImporter, node: fx.Node) -> SSAValue:
    m, a, b, typ = _in(imp, node)
    magnitude = m.abs(a)
    return narrowed(imp, m.where(m.negative(b), m.neg(magnitude), magnitude), typ)


@handles(aten.hypot.default)
def _hypot(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``hi * sqrt(1 + (lo/hi)^2)`` of the magnitudes: no overflow before the result's;
    0 at the origin, inf where either is infinite (even beside a NaN)."""
    m, a, b, typ = _in(imp, node)
    ax, bx = m.abs(a), m.abs(b)
    hi, lo = m.e(g.MaximumOp(ax, bx)), m.e(g.MinimumOp(ax, bx))
    ratio = m.div(lo, hi)
    value = m.mul(hi, m.unary(g.SqrtOp, m.add(m.mul(ratio, ratio), 1.0)))
    value = m.where(m.eq(hi, 0.0), 0.0, value)
    infinite = m.or_(m.eq(ax, math.inf), m.eq(bx, math.inf))
    return narrowed(imp, m.where(infinite, math.inf, value), typ)


# ------------------------------------------------------------------ identities


@handles(aten.isnan.default)
def _isnan(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``x != x``: true exactly for NaN; no integer is NaN."""
    x = imp.value(node.args[0])
    if not g.is_float(g.element_type_of(x)):
        return splat(imp, node, False)
    return imp.insert(g.NeOp(x, x))


@handles(aten.sign.default)
def _sign(imp: FxImporter, node: fx.Node) -> SSAValue:
    """1 where positive, -1 where negative, 0 elsewhere: as eager's ``(0 < x) - (x < 0)``,
    also for NaN and -0.0 (+0.0)."""
    x = imp.value(node.args[0])
    typ = g.element_type_of(x)
    if typ == g.i1:
        return x
    zero, one = imp.constant(0, typ), imp.constant(1, typ)
    negative = imp.insert(g.WhereOp(imp.insert(g.LtOp(x, zero), hint=False),
                                    imp.insert(g.NegOp(one), hint=False), zero), hint=False)
    return imp.insert(g.WhereOp(imp.insert(g.GtOp(x, zero), hint=False), one, negative))


@handles(aten.floor.default, aten.ceil.default, aten.trunc.default, aten.round.default,
         aten.frac.default)
def _rounding(imp: FxImporter, node: fx.Node) -> SSAValue:
    """All of ``graph.floor``: ``ceil(x) = -floor(-x)``; ``trunc(x)`` is
    ``floor(|x|)`` with x's sign; ``round`` takes half to even from ``d = x - floor(x)`` (exact in
    floating point); ``frac(x) = x - trunc(x)``. An integer is its own floor."""
    x = imp.value(node.args[0])
    if not g.is_float(g.element_type_of(x)):
        return x
    m, target = Math(imp.builder, x), node.target
    if target == aten.floor.default:
        return imp.insert(g.FloorOp(x))
    if target == aten.ceil.default:
        return m.neg(m.floor(m.neg(x)))
    if target == aten.trunc.default:
        return m.trunc(x)
    if target == aten.frac.default:
        return m.sub(x, m.trunc(x))
    return half_to_even(imp, x)


def half_to_even(imp: FxImporter, x: SSAValue) -> SSAValue:
    """The nearest integer, ties to even, from ``d = x - floor(x)`` (exact)."""
    m = Math(imp.builder, x)
    down = m.floor(x)
    up = m.add(down, 1.0)
    fraction = m.sub(x, down)
    halved = m.floor(m.mul(down, 0.5))
    odd = m.lt(m.add(halved, halved), down)
    return m.where(m.lt(0.5, fraction), up,
                   m.where(m.lt(fraction, 0.5), down, m.where(odd, up, down)))


@handles(aten.round.decimals)
def _round_decimals(imp: FxImporter, node: fx.Node) -> SSAValue:
    """As ATen: ``round(x * 10^d) / 10^d``, or ``round(x / 10^-d) * 10^-d`` for d < 0."""
    x = imp.value(node.args[0])
    decimals = argument(node, 1, "decimals", 0)
    if not g.is_float(g.element_type_of(x)):
        return x
    typ = g.element_type_of(x)
    x = widened(imp, x)
    m = Math(imp.builder, x)
    scale = float(10 ** abs(decimals))
    if decimals >= 0:
        return narrowed(imp, m.div(half_to_even(imp, m.mul(x, scale)), scale), typ)
    return narrowed(imp, m.mul(half_to_even(imp, m.div(x, scale)), scale), typ)


@handles(aten.log2.default, aten.log10.default, aten.exp2.default)
def _other_bases(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Logarithms and powers of other bases through the natural ones (a rounding more
    than a native kernel: within a few ulps; in f32 for a narrow float)."""
    typ = TORCH_TO_ELEMENT[imp.meta(node).dtype]
    x = widened(imp, imp.as_type(node.args[0], imp.meta(node).dtype))
    base = 10.0 if node.target == aten.log10.default else 2.0
    scale = imp.constant(math.log(base), g.element_type_of(x))
    if node.target == aten.exp2.default:
        result = imp.insert(g.ExpOp(imp.insert(g.MulOp(x, scale), hint=False)), hint=False)
    else:
        result = imp.insert(g.DivOp(imp.insert(g.LogOp(x), hint=False), scale), hint=False)
    return narrowed(imp, result, typ)


@handles(aten.fmax.default, aten.fmin.default)
def _fmax(imp: FxImporter, node: fx.Node) -> SSAValue:
    """maximum/minimum that ignore a NaN operand (NaN only where both are)."""
    dtype = imp.meta(node).dtype
    a, b = (imp.as_type(v, dtype) for v in node.args[:2])
    op = g.MaximumOp if node.target == aten.fmax.default else g.MinimumOp
    both = imp.insert(op(a, b), hint=False)
    if not g.is_float(TORCH_TO_ELEMENT[dtype]):
        return both
    b_or_both = imp.insert(g.WhereOp(imp.insert(g.NeOp(b, b), hint=False), a, both),
                           hint=False)
    return imp.insert(g.WhereOp(imp.insert(g.NeOp(a, a), hint=False), b, b_or_both))


@handles(aten.angle.default)
def _angle(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A real number's argument: π below 0, else 0 (NaN stays NaN)."""
    dtype = imp.meta(node).dtype
    x = imp.as_type(node.args[0], dtype)
    m = Math(imp.builder, x)
    return m.where(m.lt(x, 0.0), math.pi, m.where(m.ne(x, x), x, 0.0))
