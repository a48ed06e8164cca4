"""Decompositions of the transcendental graph ops (trigonometric, hyperbolic, gamma,
erfc, erfinv, fmod) into what an ALU has: +, -, *, reciprocal, exp, log, rsqrt, compare,
select and floor. They are the recipes of targets without an instruction for the op
(the MN-Core ALU, the Triton target where ``tl`` has none); the cpu and interp devices
run torch's and numpy's own functions. Each is a published single-precision method
(Cephes' ``sinf``/``atanf``, Numerical Recipes' ``erfcc``, Giles' ``erfinv``,
Dekker's exact product) or a Chebyshev fit computed here (log Γ near its zeros),
checked against the numpy reference in ``tests/test_graph_semantics.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.builder import Builder
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_decompose import Insert

Value = SSAValue | float

#: π/2 in 8-bit parts and a rounded tail (Cody and Waite): with the quadrant k split
#: into a multiple of 256 and the rest, every product of a part is exact for k < 2**24,
#: so sin and cos keep an absolute error near 1e-7 up to |x| = 2**24.
PIO2_PARTS = (1.5703125, 0.000484466552734375, -6.407499313354492e-07,
              9.89530235528946e-10, 2.5632829192545614e-12)
#: Past 2**24 the reduction would need more of π's digits than f32 products carry:
#: sin, cos and tan are NaN there (a visible failure, not a wrong number).
TRIG_LARGEST = 2.0**24
#: sin(r) = r + r z P(z), cos(r) = 1 - z/2 + z^2 Q(z) on [-π/4, π/4], z = r^2 (Cephes).
SIN_P = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
COS_Q = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
#: atan(t) = t + t z R(z) on [-tan(π/8), tan(π/8)] (Cephes ``atanf``).
ATAN_R = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
TAN_3PI_8, TAN_PI_8 = 2.414213562373095, 0.4142135623730950
#: erfc(z) = t exp(-z^2 + E(t)), t = 1 / (1 + z/2), relative error below 1.2e-7
#: (Numerical Recipes' ``erfcc``).
ERFC_E = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
          0.09678418, 0.37409196, 1.00002368, -1.26551223)
#: erfinv(x) = x P(w), w = -log(1 - x^2), in two pieces (Giles 2010, single precision).
ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
#: Γ and ψ: the recurrence lifts arguments below this, then the asymptotic series.
GAMMA_SHIFT = 8
#: Stirling's series for log Γ past the shift: 1/(12z) - 1/(360z^3) + 1/(1260z^5).
LGAMMA_SERIES = (1 / 1260, -1 / 360, 1 / 12)
#: On [1/2, 5/2], log Γ(z) = (z - 1)(z - 2) R(z - 3/2): the factor holds both zeros, so
#: the result keeps its relative precision next to them (2 ulp); below 8 the
#: recurrence steps down into this interval (adding logarithms: nothing cancels).
LGAMMA_CORE_DEGREE = 14


def _lgamma_core() -> tuple[float, ...]:
    """R's coefficients, highest power first: a Chebyshev fit of log Γ(z) / (z-1)(z-2)
    in double precision at 400 nodes (its poles are 3/2 away: degree 14 leaves 1e-9)."""
    nodes = np.cos((2 * np.arange(400) + 1) * np.pi / 800)
    ratio = [math.lgamma(1.5 + t) / ((0.5 + t) * (t - 0.5)) for t in nodes]
    fit = np.polynomial.chebyshev.chebfit(nodes, ratio, LGAMMA_CORE_DEGREE)
    return tuple(float(c) for c in np.polynomial.chebyshev.cheb2poly(fit)[::-1])


LGAMMA_CORE = _lgamma_core()
#: ψ(z) = log z - 1/(2z) - w/12 + w^2/120 - w^3/252, w = 1/z^2.
DIGAMMA_SERIES = (-1 / 252, 1 / 120, -1 / 12)
#: Beyond this magnitude the hyperbolic functions drop their vanishing term.
HYPERBOLIC_LARGE = 20.0
#: Beyond this magnitude asinh(x) = sign(x) (log|x| + log 2), and acosh likewise.
INVERSE_HYPERBOLIC_LARGE = 4096.0
#: Veltkamp's splitting constant for f32 (2**12 + 1): a product of halves is exact.
SPLITTER = 4097.0
#: Rounds a quotient to 21 bits the same way (2**3 + 1).
QUOTIENT_SPLITTER = 9.0


class Math:
    """Graph ops written as arithmetic; numbers become 0-d constants of ``like``'s
    element type."""

    def __init__(self, b: Builder, like: SSAValue) -> None:
        self.e = Insert(b, like)

    def v(self, x: Value) -> SSAValue:
        return self.e.scalar(x) if isinstance(x, int | float) else x

    def _bin(self, cls: type[g.BinaryOp], a: Value, b: Value) -> SSAValue:
        return self.e(cls(self.v(a), self.v(b)))

    def add(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.AddOp, a, b)

    def sub(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.SubOp, a, b)

    def mul(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.MulOp, a, b)

    def div(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.DivOp, a, b)

    def lt(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.LtOp, a, b)

    def le(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.LeOp, a, b)

    def eq(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.EqOp, a, b)

    def ne(self, a: Value, b: Value) -> SSAValue:
        return self._bin(g.NeOp, a, b)

    def or_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(g.OrOp, a, b)

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._bin(g.AndOp, a, b)

    def where(self, c: SSAValue, a: Value, b: Value) -> SSAValue:
        return self.e(g.WhereOp(c, self.v(a), self.v(b)))

    def unary(self, cls: type[g.UnaryOp], x: SSAValue) -> SSAValue:
        return self.e(cls(x))

    def neg(self, x: SSAValue) -> SSAValue:
        return self.unary(g.NegOp, x)

    def abs(self, x: SSAValue) -> SSAValue:
        return self.e(g.MaximumOp(x, self.neg(x)))

    def recip(self, x: SSAValue) -> SSAValue:
        return self.unary(g.ReciprocalOp, x)

    def floor(self, x: SSAValue) -> SSAValue:
        return self.unary(g.FloorOp, x)

    def trunc(self, x: SSAValue) -> SSAValue:
        whole = self.floor(self.abs(x))
        return self.where(self.lt(x, 0.0), self.neg(whole), whole)

    def with_sign_of(self, magnitude: SSAValue, x: SSAValue) -> SSAValue:
        """``magnitude`` negated where ``x`` is negative."""
        return self.where(self.lt(x, 0.0), self.neg(magnitude), magnitude)

    def negative(self, x: SSAValue) -> SSAValue:
        """``x < 0``, and true for -0 (its reciprocal is -inf)."""
        zero = self.eq(x, 0.0)
        return self.or_(self.lt(x, 0.0), self.and_(zero, self.lt(self.recip(x), 0.0)))

    def poly(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """Horner's rule, highest power first."""
        acc = self.v(coefficients[0])
        for c in coefficients[1:]:
            acc = self.add(self.mul(acc, x), c)
        return acc


# ------------------------------------------------------------------ trigonometric


def _quadrant(m: Math, x: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """x = k π/2 + r with |r| <= π/4: sin(r), cos(r), whether k is odd, and whether
    k mod 4 is 2 or 3."""
    k = m.floor(m.add(m.mul(x, 2 / math.pi), 0.5))
    high = m.mul(m.trunc(m.mul(k, 1 / 256)), 256.0)  # low keeps k's sign
    low = m.sub(k, high)
    r = x
    for part in PIO2_PARTS[:-1]:
        r = m.sub(m.sub(r, m.mul(high, part)), m.mul(low, part))
    r = m.sub(r, m.mul(k, PIO2_PARTS[-1]))
    # x 2/π rounds by up to a unit past 2**23: a second, small quadrant puts r back
    step = m.floor(m.add(m.mul(r, 2 / math.pi), 0.5))
    for part in PIO2_PARTS:
        r = m.sub(r, m.mul(step, part))
    k = m.add(k, step)
    z = m.mul(r, r)
    sin = m.add(r, m.mul(m.mul(r, z), m.poly(z, SIN_P)))
    cos = m.add(m.sub(1.0, m.mul(z, 0.5)), m.mul(m.mul(z, z), m.poly(z, COS_Q)))
    half = m.floor(m.mul(k, 0.5))
    odd = m.ne(k, m.mul(half, 2.0))
    upper = m.ne(half, m.mul(m.floor(m.mul(half, 0.5)), 2.0))
    huge = m.le(TRIG_LARGEST, m.abs(x))
    return m.where(huge, math.nan, sin), m.where(huge, math.nan, cos), odd, upper


def sin(b: Builder, op: g.SinOp) -> list[SSAValue]:
    """Quadrants 0-3 give sin r, cos r, -sin r, -cos r."""
    m = Math(b, op.input)
    s, c, odd, upper = _quadrant(m, op.input)
    value = m.where(odd, c, s)
    return [m.where(upper, m.neg(value), value)]


def cos(b: Builder, op: g.CosOp) -> list[SSAValue]:
    """Quadrants 0-3 give cos r, -sin r, -cos r, sin r."""
    m = Math(b, op.input)
    s, c, odd, upper = _quadrant(m, op.input)
    value = m.where(odd, s, c)
    return [m.where(m.ne(odd, upper), m.neg(value), value)]


def tan(b: Builder, op: g.TanOp) -> list[SSAValue]:
    """sin r / cos r, or -cos r / sin r in odd quadrants."""
    m = Math(b, op.input)
    s, c, odd, _ = _quadrant(m, op.input)
    return [m.where(odd, m.neg(m.div(c, s)), m.div(s, c))]


def _atan(m: Math, x: SSAValue) -> SSAValue:
    ax = m.abs(x)
    big, mid = m.lt(TAN_3PI_8, ax), m.lt(TAN_PI_8, ax)
    base = m.where(big, math.pi / 2, m.where(mid, math.pi / 4, 0.0))
    t = m.where(big, m.neg(m.recip(ax)),
                m.where(mid, m.div(m.sub(ax, 1.0), m.add(ax, 1.0)), ax))
    z = m.mul(t, t)
    angle = m.add(base, m.add(t, m.mul(m.mul(t, z), m.poly(z, ATAN_R))))
    return m.with_sign_of(angle, x)


def atan(b: Builder, op: g.AtanOp) -> list[SSAValue]:
    """Cephes: |x| reduced by tan(3π/8) and tan(π/8), then a polynomial."""
    return [_atan(Math(b, op.input), op.input)]


def asin(b: Builder, op: g.AsinOp) -> list[SSAValue]:
    """atan(x / sqrt((1 - x)(1 + x))); NaN past ±1 from the square root."""
    m, x = Math(b, op.input), op.input
    root = m.unary(g.SqrtOp, m.mul(m.sub(1.0, x), m.add(1.0, x)))
    return [_atan(m, m.div(x, root))]


def acos(b: Builder, op: g.AcosOp) -> list[SSAValue]:
    """2 atan(sqrt((1 - x) / (1 + x))), precise near both ends."""
    m, x = Math(b, op.input), op.input
    root = m.unary(g.SqrtOp, m.div(m.sub(1.0, x), m.add(1.0, x)))
    return [m.mul(_atan(m, root), 2.0)]


def atan2(b: Builder, op: g.Atan2Op) -> list[SSAValue]:
    """atan(min/max) of the magnitudes, reflected into the octant of (x, y); signed
    zeros pick the half-plane as torch's atan2 does."""
    m, y, x = Math(b, op.lhs), op.lhs, op.rhs
    ay, ax = m.abs(y), m.abs(x)
    hi, lo = m.e(g.MaximumOp(ax, ay)), m.e(g.MinimumOp(ax, ay))
    ratio = m.where(m.eq(hi, lo), 1.0, m.div(lo, hi))  # inf / inf: the diagonal
    angle = _atan(m, m.where(m.eq(hi, 0.0), 0.0, ratio))
    angle = m.where(m.lt(ax, ay), m.sub(math.pi / 2, angle), angle)
    angle = m.where(m.negative(x), m.sub(math.pi, angle), angle)
    return [m.where(m.negative(y), m.neg(angle), angle)]


# ------------------------------------------------------------------ hyperbolic


def sinh(b: Builder, op: g.SinhOp) -> list[SSAValue]:
    """(e + e / (e + 1)) / 2 with e = expm1|x| (no cancellation near 0); past 20,
    exp(|x|/2)^2 / 2, which overflows only where sinh does."""
    m, x = Math(b, op.input), op.input
    ax = m.abs(x)
    e = m.unary(g.Expm1Op, ax)
    near = m.mul(m.add(e, m.div(e, m.add(e, 1.0))), 0.5)
    half = m.unary(g.ExpOp, m.mul(ax, 0.5))
    far = m.mul(m.mul(half, 0.5), half)
    return [m.with_sign_of(m.where(m.lt(ax, HYPERBOLIC_LARGE), near, far), x)]


def cosh(b: Builder, op: g.CoshOp) -> list[SSAValue]:
    """(exp|x| + exp(-|x|)) / 2; past 20, exp(|x|/2)^2 / 2."""
    m = Math(b, op.input)
    ax = m.abs(op.input)
    ex = m.unary(g.ExpOp, ax)
    near = m.mul(m.add(ex, m.recip(ex)), 0.5)
    half = m.unary(g.ExpOp, m.mul(ax, 0.5))
    far = m.mul(m.mul(half, 0.5), half)
    return [m.where(m.lt(ax, HYPERBOLIC_LARGE), near, far)]


def asinh(b: Builder, op: g.AsinhOp) -> list[SSAValue]:
    """log1p(|x| + x^2 / (1 + sqrt(1 + x^2))) with x's sign; past 4096,
    log|x| + log 2."""
    m, x = Math(b, op.input), op.input
    ax = m.abs(x)
    sq = m.mul(ax, ax)
    inner = m.add(ax, m.div(sq, m.add(1.0, m.unary(g.SqrtOp, m.add(1.0, sq)))))
    near = m.unary(g.Log1pOp, inner)
    far = m.add(m.unary(g.LogOp, ax), math.log(2))
    return [m.with_sign_of(m.where(m.lt(ax, INVERSE_HYPERBOLIC_LARGE), near, far), x)]


def acosh(b: Builder, op: g.AcoshOp) -> list[SSAValue]:
    """log1p(t + sqrt(2t + t^2)) with t = x - 1; past 4096, log x + log 2; NaN
    below 1."""
    m, x = Math(b, op.input), op.input
    t = m.sub(x, 1.0)
    near = m.unary(g.Log1pOp, m.add(t, m.unary(g.SqrtOp, m.add(m.mul(t, 2.0),
                                                                m.mul(t, t)))))
    far = m.add(m.unary(g.LogOp, x), math.log(2))
    value = m.where(m.lt(x, INVERSE_HYPERBOLIC_LARGE), near, far)
    return [m.where(m.lt(x, 1.0), math.nan, value)]


def atanh(b: Builder, op: g.AtanhOp) -> list[SSAValue]:
    """log1p(2|x| / (1 - |x|)) / 2 with x's sign."""
    m, x = Math(b, op.input), op.input
    ax = m.abs(x)
    half = m.mul(m.unary(g.Log1pOp, m.div(m.mul(ax, 2.0), m.sub(1.0, ax))), 0.5)
    return [m.with_sign_of(half, x)]


def expm1(b: Builder, op: g.Expm1Op) -> list[SSAValue]:
    """Kahan's (u - 1) x / log u with u = exp(x): the roundings of u cancel; x where
    u rounds to 1, -1 where u - 1 does, inf where u overflows."""
    m, x = Math(b, op.input), op.input
    u = m.unary(g.ExpOp, x)
    um1 = m.sub(u, 1.0)
    general = m.mul(um1, m.div(x, m.unary(g.LogOp, u)))
    value = m.where(m.eq(u, 1.0), x, m.where(m.eq(um1, -1.0), -1.0, general))
    return [m.where(m.eq(u, math.inf), math.inf, value)]


# ------------------------------------------------------------------ error function


def _erfc_positive(m: Math, z: SSAValue) -> SSAValue:
    t = m.recip(m.add(m.mul(z, 0.5), 1.0))
    return m.mul(t, m.unary(g.ExpOp, m.sub(m.poly(t, ERFC_E), m.mul(z, z))))


def erfc(b: Builder, op: g.ErfcOp) -> list[SSAValue]:
    """Numerical Recipes' erfcc on |x| (relative error below 1.2e-7, so tails keep
    their digits), reflected as 2 - erfc(-x) below 0."""
    m, x = Math(b, op.input), op.input
    tail = _erfc_positive(m, m.abs(x))
    return [m.where(m.lt(x, 0.0), m.sub(2.0, tail), tail)]


def erfcx(b: Builder, op: g.ErfcxOp) -> list[SSAValue]:
    """erfcc without its exp(-x^2) factor on |x| (relative error below 1.2e-7, no
    underflow), reflected as 2 exp(x^2) - erfcx(-x) below 0."""
    m, x = Math(b, op.input), op.input
    z = m.abs(x)
    t = m.recip(m.add(m.mul(z, 0.5), 1.0))
    tail = m.mul(t, m.unary(g.ExpOp, m.poly(t, ERFC_E)))
    return [m.where(m.lt(x, 0.0), m.sub(m.mul(m.unary(g.ExpOp, m.mul(x, x)), 2.0), tail),
                    tail)]


def erfinv(b: Builder, op: g.ErfinvOp) -> list[SSAValue]:
    """Giles' two polynomials in w = -log((1 - x)(1 + x)); ±inf at ±1, NaN past them
    (the logarithm of a negative number)."""
    m, x = Math(b, op.input), op.input
    w = m.neg(m.unary(g.LogOp, m.mul(m.sub(1.0, x), m.add(1.0, x))))
    central = m.poly(m.sub(w, 2.5), ERFINV_CENTRAL)
    tail = m.poly(m.sub(m.unary(g.SqrtOp, w), 3.0), ERFINV_TAIL)
    value = m.mul(m.where(m.lt(w, 5.0), central, tail), x)
    edge = m.eq(m.abs(x), 1.0)
    return [m.where(edge, m.mul(x, math.inf), value)]


# ------------------------------------------------------------------ Γ and ψ


def _reflected(m: Math, x: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Where x < 1/2 (reflection), z = max(x, 1 - x) and the offset of x from its
    nearest integer (the period of sin(πx) and tan(πx) up to sign)."""
    reflect = m.lt(x, 0.5)
    z = m.where(reflect, m.sub(1.0, x), x)
    fraction = m.sub(x, m.floor(x))  # exact for |x| >= 1/2, as is the step down by 1
    offset = m.where(m.lt(0.5, fraction), m.sub(fraction, 1.0), fraction)
    return reflect, z, m.where(m.lt(m.abs(x), 0.5), x, offset)


def _lifted(m: Math, z: SSAValue) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
    """Whether z is below the shift, z lifted past it, and z, z+1, ... of the lift."""
    lift = m.lt(z, float(GAMMA_SHIFT))
    steps = [z if k == 0 else m.add(z, float(k)) for k in range(GAMMA_SHIFT)]
    return lift, m.where(lift, m.add(z, float(GAMMA_SHIFT)), z), steps


def lgamma(b: Builder, op: g.LgammaOp) -> list[SSAValue]:
    """Stirling's series from 8; below, the recurrence steps z down by n into [3/2, 5/2)
    (log Γ(z) = log Γ(z - n) + log (z-1)...(z-n)) and a polynomial with the zeros 1
    and 2 as factors takes [1/2, 5/2]; reflection log(π / |sin πx|) - log Γ(1 - x)
    below 1/2; +inf at the poles and at ±inf, as torch."""
    m, x = Math(b, op.input), op.input
    reflect, z, offset = _reflected(m, x)
    inv = m.recip(z)
    series = m.mul(inv, m.poly(m.mul(inv, inv), LGAMMA_SERIES))
    stirling = m.add(m.sub(m.mul(m.sub(z, 0.5), m.unary(g.LogOp, z)), z),
                     m.add(series, 0.5 * math.log(2 * math.pi)))
    # n = floor(z - 3/2) for z in [5/2, 8), so n <= 6; z - n is exact
    steps = m.where(m.lt(z, 2.5), 0.0, m.floor(m.sub(z, 1.5)))
    t = m.sub(z, steps)
    factors = [m.where(m.lt(float(k), steps), m.add(t, float(k)) if k else t, 1.0)
               for k in range(GAMMA_SHIFT - 2)]
    product = factors[0]
    for factor in factors[1:]:
        product = m.mul(product, factor)
    core = m.mul(m.mul(m.sub(t, 1.0), m.sub(t, 2.0)), m.poly(m.sub(t, 1.5), LGAMMA_CORE))
    near = m.add(core, m.unary(g.LogOp, product))
    value = m.where(m.lt(z, float(GAMMA_SHIFT)), near, stirling)
    sine = m.abs(m.unary(g.SinOp, m.mul(offset, math.pi)))
    reflected = m.sub(m.unary(g.LogOp, m.div(math.pi, sine)), value)
    value = m.where(reflect, reflected, value)
    pole = m.or_(m.eq(offset, 0.0), m.eq(x, -math.inf))  # (|sin| may be -0)
    return [m.where(m.and_(pole, m.le(x, 0.0)), math.inf,
                    m.where(m.eq(x, math.inf), math.inf, value))]


def digamma(b: Builder, op: g.DigammaOp) -> list[SSAValue]:
    """The asymptotic series past 8 (the recurrence subtracts 1/z + ... + 1/(z+7)
    below); reflection ψ(1 - x) - π / tan(πx) below 1/2; NaN at the negative
    integers and -inf at +0 (+inf at -0), as torch."""
    m, x = Math(b, op.input), op.input
    reflect, z, offset = _reflected(m, x)
    lift, zs, steps = _lifted(m, z)
    inv = m.recip(zs)
    w = m.mul(inv, inv)
    value = m.add(m.sub(m.unary(g.LogOp, zs), m.mul(inv, 0.5)),
                  m.mul(w, m.poly(w, DIGAMMA_SERIES)))
    total = m.recip(steps[0])
    for step in steps[1:]:
        total = m.add(total, m.recip(step))
    value = m.where(lift, m.sub(value, total), value)
    cot = m.div(math.pi, m.unary(g.TanOp, m.mul(offset, math.pi)))
    value = m.where(reflect, m.sub(value, cot), value)
    pole = m.and_(m.le(x, 0.0), m.eq(offset, 0.0))
    zero = m.where(m.negative(x), math.inf, -math.inf)
    return [m.where(m.eq(x, 0.0), zero, m.where(pole, math.nan, value))]


# ------------------------------------------------------------------ fmod


def _split(m: Math, v: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Veltkamp: v = hi + lo with 12-bit halves, so their products are exact."""
    c = m.mul(v, SPLITTER)
    hi = m.sub(c, m.sub(c, v))
    return hi, m.sub(v, hi)


def _reduce(m: Math, a: SSAValue, b: SSAValue) -> SSAValue:
    """a - q b computed exactly, for q the quotient rounded toward zero and then to 21
    bits: Dekker's product gives q b as p + err without rounding, a - p is exact
    (Sterbenz) as p is near a, and the result, a multiple of b's ulp times q's last
    bit below |b| times that bit, is representable even if the division was off by
    a few ulps (MN-Core's is a product with a reciprocal)."""
    q = m.trunc(m.div(a, b))
    c = m.mul(q, QUOTIENT_SPLITTER)
    q = m.sub(c, m.sub(c, q))
    qh, ql = _split(m, q)
    bh, bl = _split(m, b)
    p = m.mul(q, b)
    err = m.add(m.add(m.add(m.sub(m.mul(qh, bh), p), m.mul(qh, bl)), m.mul(ql, bh)),
                m.mul(ql, bl))
    return m.sub(m.sub(a, p), err)


def _fmod_float(m: Math, a: SSAValue, b: SSAValue) -> SSAValue:
    """Two exact reductions (the second takes quotients below 2**21, so quotients up
    to 2**42 are exact), then the last quotient's rounding corrected: the
    remainder takes a's sign and falls below |b|. NaN for b = 0 or an infinite a; a
    itself where |a| < |b|."""
    r = _reduce(m, _reduce(m, a, b), b)
    ab = m.abs(b)
    step = m.with_sign_of(ab, a)
    wrong_sign = m.and_(m.ne(r, 0.0), m.ne(m.lt(r, 0.0), m.lt(a, 0.0)))
    r = m.where(wrong_sign, m.add(r, step), r)
    r = m.where(m.le(ab, m.abs(r)), m.sub(r, step), r)
    r = m.where(m.lt(m.abs(a), ab), a, r)
    return m.where(m.or_(m.eq(b, 0.0), m.eq(m.abs(a), math.inf)), math.nan, r)


def fmod(b: Builder, op: g.FmodOp) -> list[SSAValue]:
    """Floats: :func:`_fmod_float`. Integers: the same in f32 (exact below 2**24,
    where the integer words of MN-Core are exact), converted back."""
    typ = g.element_type_of(op.lhs)
    if g.is_float(typ):
        m = Math(b, op.lhs)
        return [_fmod_float(m, op.lhs, op.rhs)]
    e = Insert(b, op.lhs)
    lhs, rhs = (e(g.ConvertOp(v, g.f32)) for v in (op.lhs, op.rhs))
    return [e(g.ConvertOp(_fmod_float(Math(b, lhs), lhs, rhs), typ))]
