"""torch.special's Bessel functions and the normal quantile as graph arithmetic: the
polynomial approximations of Abramowitz and Stegun (9.4.1-9.4.6 for J0, J1, Y0, Y1;
9.8.1-9.8.8 for I0, I1, K0, K1; absolute error below 2.2e-7 on the scaled function),
and ``ndtri`` as Giles' erfinv of ``2p - 1`` with its logarithm taken of ``4p(1 - p)``
(exact in the tails). Every level computes these (the cpu device too: they are
expansions, not graph ops), within 1e-6 of torch (``tests/test_aten_special.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import (
    ERFINV_CENTRAL,
    ERFINV_TAIL,
    Math,
)
from mncore_ir.frontends.aten_handlers import handles, narrowed, widened
from mncore_ir.frontends.fx_importer import TORCH_TO_ELEMENT, FxImporter

aten = torch.ops.aten

# A&S 9.8: I0, I1 in t = x/3.75 (even powers, lowest first) and 3.75/x; K0, K1 in x/2
# (even powers) and 2/x.
I0_NEAR = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813)
I0_FAR = (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706,
          0.02635537, -0.01647633, 0.00392377)
I1_NEAR = (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411)
I1_FAR = (0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967,
          -0.02895312, 0.01787654, -0.00420059)
K0_NEAR = (-0.57721566, 0.42278420, 0.23069756, 0.03488590, 0.00262698, 0.00010750,
           0.00000740)
K0_FAR = (1.25331414, -0.07832358, 0.02189568, -0.01062446, 0.00587872, -0.00251540,
          0.00053208)
K1_NEAR = (1.0, 0.15443144, -0.67278579, -0.18156897, -0.01919402, -0.00110404,
           -0.00004686)
K1_FAR = (1.25331414, 0.23498619, -0.03655620, 0.01504268, -0.00780353, 0.00325614,
          -0.00068245)
# A&S 9.4: J0, Y0, J1, Y1 in (x/3)^2 for |x| <= 3; amplitude and phase in 3/x past it.
J0_NEAR = (1.0, -2.2499997, 1.2656208, -0.3163866, 0.0444479, -0.0039444, 0.0002100)
Y0_NEAR = (0.36746691, 0.60559366, -0.74350384, 0.25300117, -0.04261214, 0.00427916,
           -0.00024846)
F0 = (0.79788456, -0.00000077, -0.00552740, -0.00009512, 0.00137237, -0.00072805,
      0.00014476)
THETA0 = (-0.78539816, -0.04166397, -0.00003954, 0.00262573, -0.00054125, -0.00029333,
          0.00013558)
J1_NEAR = (0.5, -0.56249985, 0.21093573, -0.03954289, 0.00443319, -0.00031761, 0.00001109)
Y1_NEAR = (-0.6366198, 0.2212091, 2.1682709, -1.3164827, 0.3123951, -0.0400976, 0.0027873)
F1 = (0.79788456, 0.00000156, 0.01659667, 0.00017105, -0.00249511, 0.00113653,
      -0.00020033)
THETA1 = (-2.35619449, 0.12499612, 0.00005650, -0.00637879, 0.00074348, 0.00079824,
          -0.00029166)


#: A&S 26.2.23, the normal quantile's tail in t = sqrt(-2 log p) (error below 4.5e-4),
#: highest power first; and where ndtri takes it (Giles' polynomials end near w = 16).
NORMAL_TAIL_P = (0.010328, 0.802853, 2.515517)
NORMAL_TAIL_Q = (0.001308, 0.189269, 1.432788, 1.0)
NDTRI_DEEP = 16.0


def _series(m: Math, t: SSAValue, coefficients: Sequence[float]) -> SSAValue:
    """Σ c_k t^k, lowest power first."""
    return m.poly(t, list(reversed(coefficients)))


def _i(m: Math, x: SSAValue, near: Sequence[float], far: Sequence[float], odd: bool,
       scaled: bool) -> SSAValue:
    """I0 or I1 (``odd``), or e^-|x| times it (``scaled``)."""
    ax = m.abs(x)
    t = m.mul(ax, 1 / 3.75)
    small = _series(m, m.mul(t, t), near)
    if odd:
        small = m.mul(small, ax)
    if scaled:
        small = m.mul(small, m.unary(g.ExpOp, m.neg(ax)))
    large = m.div(_series(m, m.div(3.75, ax), far), m.unary(g.SqrtOp, ax))
    if not scaled:  # e^|x| in two halves: overflows only where I does
        half = m.unary(g.ExpOp, m.mul(ax, 0.5))
        large = m.mul(m.mul(large, half), half)
    value = m.where(m.le(ax, 3.75), small, large)
    return m.with_sign_of(value, x) if odd else value


def _k(m: Math, x: SSAValue, order: int, scaled: bool) -> SSAValue:
    """K0 or K1 for x > 0 (e^x times it, ``scaled``); inf at 0, NaN below."""
    half = m.mul(x, 0.5)
    log_half = m.unary(g.LogOp, half)
    if order == 0:
        small = m.sub(_series(m, m.mul(half, half), K0_NEAR),
                      m.mul(log_half, _i(m, x, I0_NEAR, I0_FAR, False, False)))
        far = K0_FAR
    else:
        product = m.mul(m.mul(x, log_half), _i(m, x, I1_NEAR, I1_FAR, True, False))
        small = m.div(m.add(product, _series(m, m.mul(half, half), K1_NEAR)), x)
        far = K1_FAR
    if scaled:
        small = m.mul(small, m.unary(g.ExpOp, x))
    large = m.div(_series(m, m.div(2.0, x), far), m.unary(g.SqrtOp, x))
    if not scaled:
        large = m.mul(large, m.unary(g.ExpOp, m.neg(x)))
    value = m.where(m.le(x, 2.0), small, large)
    value = m.where(m.eq(x, 0.0), math.inf, value)
    return m.where(m.lt(x, 0.0), math.nan, value)


def _j_y(m: Math, x: SSAValue, order: int, second: bool) -> SSAValue:
    """J0, J1 (``second``: Y0, Y1; NaN below 0, -inf at 0)."""
    ax = m.abs(x)
    t = m.mul(ax, 1 / 3)
    t2 = m.mul(t, t)
    j_near = _series(m, t2, J0_NEAR if order == 0 else J1_NEAR)
    if order == 1:
        j_near = m.mul(j_near, ax)
    u = m.div(3.0, ax)
    amplitude = m.div(_series(m, u, F0 if order == 0 else F1), m.unary(g.SqrtOp, ax))
    phase = m.add(ax, _series(m, u, THETA0 if order == 0 else THETA1))
    if not second:
        value = m.where(m.le(ax, 3.0), j_near,
                        m.mul(amplitude, m.unary(g.CosOp, phase)))
        return m.with_sign_of(value, x) if order == 1 else value
    log_term = m.mul(m.unary(g.LogOp, m.mul(ax, 0.5)), 2 / math.pi)
    if order == 0:
        y_near = m.add(m.mul(log_term, j_near), _series(m, t2, Y0_NEAR))
    else:
        y_near = m.div(m.add(m.mul(m.mul(log_term, ax), j_near), _series(m, t2, Y1_NEAR)),
                       ax)
    value = m.where(m.le(ax, 3.0), y_near, m.mul(amplitude, m.unary(g.SinOp, phase)))
    value = m.where(m.eq(x, 0.0), -math.inf, value)
    return m.where(m.lt(x, 0.0), math.nan, value)


def _ndtri(m: Math, p: SSAValue) -> SSAValue:
    """sqrt(2) erfinv(2p - 1), Giles' w taken as -log(4p(1 - p)); where w passes the
    range of his polynomials (p below 1e-7, f32's tail), A&S 26.2.23 refined by two
    Newton steps on log Φ (Φ through erfcx, which does not underflow); ±inf at 1 and
    0."""
    w = m.neg(m.unary(g.LogOp, m.mul(m.mul(p, 4.0), m.sub(1.0, p))))
    central = m.poly(m.sub(w, 2.5), ERFINV_CENTRAL)
    tail = m.poly(m.sub(m.unary(g.SqrtOp, w), 3.0), ERFINV_TAIL)
    x = m.sub(m.mul(p, 2.0), 1.0)
    value = m.mul(m.mul(m.where(m.lt(w, 5.0), central, tail), x), math.sqrt(2))
    log_p = m.unary(g.LogOp, p)
    t = m.unary(g.SqrtOp, m.mul(log_p, -2.0))
    deep = m.neg(m.sub(t, m.div(m.poly(t, NORMAL_TAIL_P), m.poly(t, NORMAL_TAIL_Q))))
    for _ in range(2):
        scaled = m.mul(m.unary(g.ErfcxOp, m.mul(deep, -1 / math.sqrt(2))), 0.5)
        log_cdf = m.sub(m.unary(g.LogOp, scaled), m.mul(m.mul(deep, deep), 0.5))
        deep = m.sub(deep, m.mul(m.sub(log_cdf, log_p),
                                 m.mul(scaled, math.sqrt(2 * math.pi))))
    value = m.where(m.lt(NDTRI_DEEP, w), deep, value)
    return m.where(m.eq(p, 0.0), -math.inf, m.where(m.eq(p, 1.0), math.inf, value))


FUNCTIONS: dict[object, Callable[[Math, SSAValue], SSAValue]] = {
    aten.i0.default: lambda m, x: _i(m, x, I0_NEAR, I0_FAR, False, False),
    aten.special_modified_bessel_i0.default: lambda m, x: _i(m, x, I0_NEAR, I0_FAR, False,
                                                             False),
    aten.special_i0e.default: lambda m, x: _i(m, x, I0_NEAR, I0_FAR, False, True),
    aten.special_i1.default: lambda m, x: _i(m, x, I1_NEAR, I1_FAR, True, False),
    aten.special_modified_bessel_i1.default: lambda m, x: _i(m, x, I1_NEAR, I1_FAR, True,
                                                             False),
    aten.special_i1e.default: lambda m, x: _i(m, x, I1_NEAR, I1_FAR, True, True),
    aten.special_modified_bessel_k0.default: lambda m, x: _k(m, x, 0, False),
    aten.special_modified_bessel_k1.default: lambda m, x: _k(m, x, 1, False),
    aten.special_scaled_modified_bessel_k0.default: lambda m, x: _k(m, x, 0, True),
    aten.special_scaled_modified_bessel_k1.default: lambda m, x: _k(m, x, 1, True),
    aten.special_bessel_j0.default: lambda m, x: _j_y(m, x, 0, False),
    aten.special_bessel_j1.default: lambda m, x: _j_y(m, x, 1, False),
    aten.special_bessel_y0.default: lambda m, x: _j_y(m, x, 0, True),
    aten.special_bessel_y1.default: lambda m, x: _j_y(m, x, 1, True),
    aten.special_spherical_bessel_j0.default: lambda m, x: m.where(
        m.eq(x, 0.0), 1.0, m.div(m.unary(g.SinOp, x), x)),
    aten.special_ndtri.default: _ndtri,
}


@handles(*FUNCTIONS)
def _special(imp: FxImporter, node: fx.Node) -> SSAValue:
    """In the result's float type (f32 for a narrow one, rounded once)."""
    dtype = imp.meta(node).dtype
    x = widened(imp, imp.as_type(node.args[0], dtype))
    return narrowed(imp, FUNCTIONS[node.target](Math(imp.builder, x), x),
                    TORCH_TO_ELEMENT[dtype])
