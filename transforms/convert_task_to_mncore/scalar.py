"""The scalar-body compiler of convert-task-to-mncore: a ``task.body``'s graph ops as
ALU instructions on 4-word slots (every lane at once), and the ALU sequences the
kernels share: integers brought into their types, floors, exact integer quotients, and
``pow`` without branches. An op that is one ALU instruction is looked up in the graph
semantics table (``alu``).

The ALU has add, multiply, min/max, compare-and-select, exp, log, reciprocal and
reciprocal square root; a few ops have in-place sequences here (tested against the
table's decompositions), and any other op compiles through its table decomposition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, Signedness, f32, i1
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.graph_semantics import SEMANTICS, decomposed
from mncore_ir.dialects.graph_semantics_decompose import ERF_A, ERF_P, ERF_T
from mncore_ir.transforms.convert_task_to_mncore.common import (
    MNCoreConversionError,
    Slot,
    constant_values,
)
from mncore_ir.transforms.convert_task_to_mncore.emitter import Emitter
from mncore_ir.transforms.convert_task_to_mncore.intervals import (
    MULTIPLIED_POWERS,
    Interval,
    constant_exponent,
    truncated_interval,
    type_interval,
)

#: 2**23: f32 values from here on are integers, and adding it rounds smaller ones.
_F32_INTEGRAL = float(2**23)
#: 1.5 * 2**23: adding and subtracting it rounds an f32 below 2**22 in magnitude to the
#: nearest integer.
_ROUNDER = float(3 * 2**22)


def compute(e: Emitter, body: t.BodyOp, in_slots: list[Slot],
            intervals: dict[SSAValue, Interval | None]) -> list[Slot]:
    """ALU instructions for ``body``; returns the slots of the yielded values.
    ``intervals``: what each integer result may take before it is brought into its
    type (``Intervals.body``)."""
    where: dict[SSAValue, Slot] = dict(zip(body.body.block.args, in_slots, strict=True))
    ops = list(body.body.block.ops)
    dying = _last_uses(ops)
    for op in ops:
        if isinstance(op, t.YieldOp):
            return [where[v] for v in op.values]
        srcs = [where[o] for o in op.operands]
        if isinstance(op, g.ConstantOp):
            (v,) = constant_values(op).tolist()
            where[op.results[0]] = e.constant(float(v))
            continue
        dst = e.fresh()
        instructions(e, body, op, srcs, dst)
        interval = intervals.get(op.results[0])
        if interval is not None:
            settle(e, dst, interval, g.element_type_of(op.results[0]))
        where[op.results[0]] = dst
        _release(e, dying.get(op, ()), where)
    raise MNCoreConversionError(f"task.body @{body.sym_name.data} has no task.yield")


def _last_uses(ops: list[Operation]) -> dict[Operation, list[SSAValue]]:
    """The op results each op reads for the last time (none that a yield reads)."""
    last: dict[SSAValue, Operation] = {}
    for op in ops:
        for v in op.operands:
            last[v] = op
    dying: dict[Operation, list[SSAValue]] = {}
    for v, op in last.items():
        if not isinstance(op, t.YieldOp) and not isinstance(v.owner, g.ConstantOp) \
                and isinstance(v.owner, Operation):
            dying.setdefault(op, []).append(v)
    return dying


def _release(e: Emitter, values: Sequence[SSAValue], where: dict[SSAValue, Slot]) -> None:
    """Give back the GRF slots of values no later op reads (distinct ones: two values
    may share a slot)."""
    for slot in dict.fromkeys(where[v] for v in values):
        e.release(slot)


def instructions(e: Emitter, body: t.BodyOp, op: Operation, srcs: list[Slot],
                 dst: Slot) -> None:
    """The ALU instructions of one body op, from ``srcs`` into ``dst``."""
    if isinstance(op, g.AndOp | g.OrOp):  # logical: operands as 0 or 1 first
        for k, operand in enumerate(op.operands):
            if g.element_type_of(operand) != i1:
                truth = e.fresh()
                e.alu("fcmpne", [srcs[k], e.constant(0.0)], truth)
                srcs[k] = truth
    spec = SEMANTICS.get(type(op))
    if spec is not None and spec.alu is not None:  # one ALU instruction
        e.alu(spec.alu, srcs[::-1] if spec.alu_swapped else srcs, dst)
    else:
        composed(e, body, op, srcs, dst)


def through_table(e: Emitter, body: t.BodyOp, op: Operation, srcs: list[Slot],
                  dst: Slot) -> None:
    """An op with no ALU sequence of its own: the semantics table's decomposition."""
    expansion = decomposed(op)
    if expansion is None:
        raise MNCoreConversionError(f"convert-task-to-mncore: {op.name} in task.body "
                                    f"@{body.sym_name.data} has no ALU form", op)
    scratch, (result,) = expansion
    where: dict[SSAValue, Slot] = dict(zip(scratch.args, srcs, strict=True))
    ops = list(scratch.ops)
    dying = _last_uses(ops)
    for inner in ops:
        if isinstance(inner, g.ConstantOp):
            (v,) = constant_values(inner).tolist()
            where[inner.results[0]] = e.constant(float(v))
            continue
        where[inner.results[0]] = e.fresh()
        instructions(e, body, inner, [where[o] for o in inner.operands],
                     where[inner.results[0]])
        _release(e, [v for v in dying.get(inner, ()) if v is not result], where)
    e.alu("fpass", [where[result]], dst)
    if isinstance(result.owner, Operation) and not isinstance(result.owner, g.ConstantOp):
        e.release(where[result])


def composed(e: Emitter, body: t.BodyOp, op: Operation, srcs: list[Slot], dst: Slot) -> None:
    """A body op that is several ALU instructions."""
    one = e.constant
    if isinstance(op, g.DivOp):
        divide(e, srcs[0], srcs[1], dst, _constant_operand(op.operands[1]))
    elif isinstance(op, g.SqrtOp):
        inverse = e.fresh()
        e.alu("frsqrt", srcs, inverse)
        e.alu("frecip", [inverse], dst)
    elif isinstance(op, g.AbsOp):  # max(x, -x) + 0: fmax keeps -0 of max(+0, -0)
        negative = e.fresh()
        e.alu("fneg", srcs, negative)
        e.alu("fmax", [srcs[0], negative], dst)
        e.alu("fadd", [dst, e.constant(0.0)], dst)
    elif isinstance(op, g.ReluOp):
        e.alu("fmax", [srcs[0], e.constant(0.0)], dst)
    elif isinstance(op, g.NotOp) and g.element_type_of(op.operands[0]) == i1:
        e.alu("fsub", [one(1.0), srcs[0]], dst)
    elif isinstance(op, g.SigmoidOp):  # 1 / (1 + exp(-x))
        x = e.fresh()
        e.alu("fneg", srcs, dst)
        e.alu("fexp", [dst], x)
        e.alu("fadd", [x, one(1.0)], dst)
        e.alu("frecip", [dst], dst)
    elif isinstance(op, g.TanhOp):
        tanh(e, srcs[0], dst)
    elif isinstance(op, g.ErfOp):
        erf(e, srcs[0], dst)
    elif isinstance(op, g.PowOp):
        power(e, op, srcs, dst)
    elif isinstance(op, g.ConvertOp):
        target = g.element_type_of(op.results[0])
        source = g.element_type_of(op.operands[0])
        if target == i1:
            e.alu("fcmpne", [srcs[0], e.constant(0.0)], dst)
        elif target == f32 or isinstance(source, IntegerType):
            e.alu("fpass", srcs, dst)  # words hold exact values
        elif isinstance(target, IntegerType):
            to_integer(e, srcs[0], dst, target)
        else:
            raise MNCoreConversionError(
                f"convert-task-to-mncore: {op.name} from {source} to {target} in "
                f"task.body @{body.sym_name.data} has no ALU form (rounding)")
    else:
        through_table(e, body, op, srcs, dst)


#: tanh's Taylor coefficients of x**3 .. x**9: below |x| = 1/4 the next term is under
#: 1e-8 of the value, where the exponential form cancels (5% off at 2e-6, 0 at 1e-8).
TANH_SERIES = (-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0)
TANH_SERIES_BELOW = 0.25


def tanh(e: Emitter, x: Slot, dst: Slot) -> None:
    """``1 - 2 / (exp(2x) + 1)``, and for ``|x| < 1/4`` the odd series
    ``x (1 + x^2 (c3 + x^2 (c5 + x^2 (c7 + x^2 c9))))``, selected per word."""
    square, series, large = e.fresh(), e.fresh(), e.fresh()
    one = e.constant(1.0)
    e.alu("fadd", [x, x], large)
    e.alu("fexp", [large], large)
    e.alu("fadd", [large, one], large)
    e.alu("frecip", [large], large)
    e.alu("fadd", [large, large], large)
    e.alu("fsub", [one, large], large)
    e.alu("fmul", [x, x], square)
    e.alu("fpass", [e.constant(TANH_SERIES[-1])], series)
    for c in reversed(TANH_SERIES[:-1]):
        e.alu("fmadd", [series, square, e.constant(c)], series)
    e.alu("fmadd", [series, square, one], series)
    e.alu("fmul", [series, x], series)
    e.alu("fneg", [x], square)
    e.alu("fmax", [x, square], square)  # |x|
    e.alu("fcmplt", [square, e.constant(TANH_SERIES_BELOW)], square)
    e.alu("fsel", [square, series, large], dst)
    for slot in (square, series, large):
        e.release(slot)


def erf(e: Emitter, x: Slot, dst: Slot) -> None:
    """The semantics table's erf (below 1 in magnitude Cephes' series x T(x^2), else
    Abramowitz and Stegun 7.1.26 on |x| with x's sign), instruction for instruction,
    but in 5 GRF slots besides x's, updated in place where its decomposition would take
    a slot per op."""
    ax, tt, poly, ex, sign = e.fresh(), e.fresh(), e.fresh(), e.fresh(), e.fresh()
    e.alu("fneg", [x], ax)
    e.alu("fmax", [x, ax], ax)
    e.alu("fmul", [ax, e.constant(ERF_P)], tt)
    e.alu("fadd", [tt, e.constant(1.0)], tt)
    e.alu("frecip", [tt], tt)
    e.alu("fmul", [tt, e.constant(ERF_A[4])], poly)
    for a in reversed(ERF_A[:4]):
        e.alu("fadd", [poly, e.constant(a)], poly)
        e.alu("fmul", [poly, tt], poly)
    e.alu("fmul", [x, x], ex)  # x^2
    e.alu("fmul", [ex, e.constant(ERF_T[0])], tt)  # the series, from its highest power
    for c in ERF_T[1:-1]:
        e.alu("fadd", [tt, e.constant(c)], tt)
        e.alu("fmul", [tt, ex], tt)
    e.alu("fadd", [tt, e.constant(ERF_T[-1])], tt)
    e.alu("fmul", [tt, x], tt)  # x T(x^2)
    e.alu("fneg", [ex], ex)
    e.alu("fexp", [ex], ex)
    e.alu("fmul", [poly, ex], poly)
    e.alu("fsub", [e.constant(1.0), poly], poly)  # erf(|x|)
    e.alu("fneg", [poly], ex)
    e.alu("fcmplt", [x, e.constant(0.0)], sign)
    e.alu("fsel", [sign, ex, poly], poly)
    e.alu("fcmplt", [ax, e.constant(1.0)], ax)
    e.alu("fsel", [ax, tt, poly], dst)
    for slot in (ax, tt, poly, ex, sign):
        e.release(slot)


def power(e: Emitter, op: g.PowOp, srcs: list[Slot], dst: Slot) -> None:
    """``x ** y`` as eager: a constant exponent as PyTorch's scalar fast paths (small
    integers by multiplication, ``0.5`` as sqrt, ``-0.5`` as rsqrt: they differ from
    C's ``pow`` at -0.0 and -inf), any other as C's ``pow`` (:func:`general_power`)."""
    b = constant_exponent(op)
    if b is not None:
        if b.is_integer() and abs(b) <= MULTIPLIED_POWERS:
            integer_power(e, srcs[0], int(b), dst)
            return
        if abs(b) == 0.5:
            e.alu("frsqrt", [srcs[0]], dst)
            if b > 0:
                e.alu("frecip", [dst], dst)
            return
    general_power(e, srcs[0], srcs[1], dst)


def integer_power(e: Emitter, x: Slot, b: int, dst: Slot) -> None:
    """``x ** b`` for a small integer ``b``: ``|b| - 1`` products, then a reciprocal
    when ``b < 0`` (``x ** 0`` is 1, even for NaN)."""
    if b == 0:
        e.alu("fpass", [e.constant(1.0)], dst)
        return
    e.alu("fpass", [x], dst)
    for _ in range(abs(b) - 1):
        e.alu("fmul", [dst, x], dst)
    if b < 0:
        e.alu("frecip", [dst], dst)


def general_power(e: Emitter, x: Slot, y: Slot, dst: Slot) -> None:
    """``x ** y`` for an exponent known only at run time, without branches:
    ``|x| ** y`` as exp(y log|x|); 1 where ``y == 0`` or ``|x| == 1`` (where the
    product is 0 * inf); negated where ``x``'s sign bit is set (-0.0 too) and ``y``
    is an odd integer; NaN (log x) where a finite ``x < 0`` meets a non-integral
    ``y``."""
    one, zero = e.constant(1.0), e.constant(0.0)
    magnitude, cond, whole, scratch = e.fresh(), e.fresh(), e.fresh(), e.fresh()
    e.alu("fneg", [x], scratch)
    e.alu("fmax", [x, scratch], scratch)  # |x|
    e.alu("flog", [scratch], magnitude)
    e.alu("fmul", [magnitude, y], magnitude)
    e.alu("fexp", [magnitude], magnitude)
    e.alu("fcmpeq", [scratch, one], cond)
    e.alu("fcmpeq", [y, zero], scratch)
    e.alu("fmax", [cond, scratch], cond)
    e.alu("fsel", [cond, one, magnitude], magnitude)
    integral(e, y, whole, scratch)
    e.alu("fmul", [y, e.constant(0.5)], cond)
    integral(e, cond, cond, scratch)
    e.alu("fcmplt", [cond, whole], cond)  # y is odd: integral, y / 2 is not
    e.alu("frecip", [x], scratch)  # 1 / -0.0 is -inf, 1 / -inf is -0.0
    e.alu("fmin", [x, scratch], scratch)
    e.alu("fcmplt", [scratch, zero], scratch)  # the sign bit of x
    e.alu("fmul", [cond, scratch], cond)
    e.alu("fneg", [magnitude], scratch)
    e.alu("fsel", [cond, scratch, magnitude], magnitude)
    e.alu("fcmplt", [x, zero], cond)
    e.alu("fcmplt", [whole, cond], cond)  # x < 0 and y is not integral
    e.alu("fsub", [x, x], scratch)
    e.alu("fcmpeq", [scratch, zero], scratch)  # x is finite
    e.alu("fmul", [cond, scratch], cond)
    e.alu("flog", [x], scratch)  # NaN where x < 0
    e.alu("fsel", [cond, scratch, magnitude], dst)


def integral(e: Emitter, value: Slot, dst: Slot, scratch: Slot) -> None:
    """``dst`` = 1.0 where ``value`` is an integer (or ±inf), else 0.0; ``dst`` may
    be ``value``. The ALU has no floor: |v| + 2**23 rounds to an integer, and
    exactly that sum minus 2**23 gives back |v| when |v| < 2**23 is one; from 2**23
    on every float is an integer."""
    big = e.constant(_F32_INTEGRAL)
    e.alu("fneg", [value], scratch)
    e.alu("fmax", [value, scratch], scratch)  # |v|
    e.alu("fadd", [scratch, big], dst)
    e.alu("fsub", [dst, big], dst)
    e.alu("fcmpeq", [dst, scratch], dst)
    e.alu("fcmple", [big, scratch], scratch)
    e.alu("fmax", [dst, scratch], dst)


# --- integers in words


def settle(e: Emitter, slot: Slot, interval: Interval, element_type: Attribute) -> Slot:
    """Bring the integers of ``slot`` (within ``interval``) into ``element_type``'s
    values as numpy's cast does: booleans are ``!= 0``, narrow integers wrap."""
    full = type_interval(element_type)
    assert full is not None
    if full[0] <= interval[0] and interval[1] <= full[1]:
        return slot
    if element_type == i1:
        e.alu("fcmpne", [slot, e.constant(0.0)], slot)
        return slot
    modulus = full[1] - full[0] + 1
    assert modulus <= 2**16, "wider types hold every exact integer"
    if full[0]:
        e.alu("fadd", [slot, e.constant(float(-full[0]))], slot)
    quotient, scratch = e.fresh(), e.fresh()
    e.alu("fmul", [slot, e.constant(1.0 / modulus)], quotient)  # exact
    floor(e, quotient, scratch)
    e.alu("fmul", [quotient, e.constant(float(modulus))], quotient)
    e.alu("fsub", [slot, quotient], slot)
    if full[0]:
        e.alu("fadd", [slot, e.constant(float(full[0]))], slot)
    return slot


def _constant_operand(value: SSAValue) -> float | None:
    """The value of a body constant (a scalar), else None."""
    if isinstance(value.owner, g.ConstantOp):
        values = constant_values(value.owner)
        if values.size == 1:
            return float(values.reshape(-1)[0])
    return None


#: Veltkamp's splitter for f32 (2**12 + 1): ``a * 4097 - (a * 4097 - a)`` is ``a``'s
#: upper 12 bits, and what is left of ``a`` fits in its lower 12.
_SPLITTER = 4097.0


def divide(e: Emitter, x: Slot, y: Slot, dst: Slot, divisor: float | None = None) -> None:
    """``dst`` = ``x / y`` rounded as IEEE division (eager's) rounds it, where the ALU has
    only a reciprocal: ``q = x * (1 / y)`` may be an ulp or two off (41 / 41 is
    0.99999994), so its remainder ``x - q y`` is computed exactly (Dekker's product of
    ``q`` and ``y`` split by Veltkamp's method; Sterbenz: ``x - q y`` is then exact) and
    ``q`` corrected by it times the reciprocal; where that is not finite (infinities,
    zeros, overflow) ``q`` stands. A constant divisor (``divisor``) has its reciprocal
    and halves as constants; a power of two is one exact product."""
    one = e.constant
    if divisor is not None and math.isfinite(divisor) and divisor != 0.0 and \
            math.frexp(divisor)[0] in (0.5, -0.5):
        e.alu("fmul", [x, one(1.0 / divisor)], dst)
        return
    temporaries = [e.fresh() for _ in range(4)]
    q, p, hi, lo = temporaries
    if divisor is None:
        r, y_hi, y_lo = e.fresh(), e.fresh(), e.fresh()
        temporaries += [r, y_hi, y_lo]
        e.alu("frecip", [y], r)
        e.alu("fmul", [y, one(_SPLITTER)], y_hi)
        e.alu("fsub", [y_hi, y], y_lo)
        e.alu("fsub", [y_hi, y_lo], y_hi)
        e.alu("fsub", [y, y_hi], y_lo)
    else:  # the same, at compile time, in f32
        d, splitter = np.float32(divisor), np.float32(_SPLITTER)
        with np.errstate(all="ignore"):
            high = np.float32(d * splitter) - np.float32(np.float32(d * splitter) - d)
            r, y_hi, y_lo = (one(float(v)) for v in (np.float32(1.0) / d, high,
                                                     np.float32(d - high)))
    e.alu("fmul", [x, r], q)
    e.alu("fmul", [q, y], p)  # q y = p + (the error below), exactly
    e.alu("fmul", [q, one(_SPLITTER)], hi)
    e.alu("fsub", [hi, q], lo)
    e.alu("fsub", [hi, lo], hi)
    e.alu("fsub", [q, hi], lo)
    error = e.fresh()
    e.alu("fmul", [hi, y_hi], error)
    e.alu("fsub", [error, p], error)
    e.alu("fmadd", [hi, y_lo, error], error)  # (a * b and + c rounded apart, as Dekker's)
    e.alu("fmadd", [lo, y_hi, error], error)
    e.alu("fmadd", [lo, y_lo, error], error)
    e.alu("fsub", [x, p], p)  # the remainder: x - p - error
    e.alu("fsub", [p, error], p)
    e.alu("fmul", [p, r], p)  # the correction
    e.alu("fadd", [q, p], error)
    e.alu("fcmpeq", [error, error], hi)  # not NaN: corrected
    e.alu("fsel", [hi, error, q], dst)
    for slot in (*temporaries, error):
        e.release(slot)


def truncate(e: Emitter, x: Slot, dst: Slot) -> None:
    """``dst`` = ``x`` rounded toward zero (a float converted to an integer type), exact
    for every float: ``|x| + 2**23 - 2**23`` is ``|x|`` rounded to the nearest integer
    below ``2**23`` (the sum's ulp is 1), one less where that rounded up; from ``2**23``
    on ``|x|`` is an integer already; then ``x``'s sign."""
    magnitude, rounded, flag = e.fresh(), e.fresh(), e.fresh()
    big = e.constant(_F32_INTEGRAL)
    e.alu("fneg", [x], magnitude)
    e.alu("fmax", [x, magnitude], magnitude)
    e.alu("fadd", [magnitude, big], rounded)
    e.alu("fsub", [rounded, big], rounded)
    e.alu("fcmplt", [magnitude, rounded], flag)  # rounded up: step down
    e.alu("fsub", [rounded, flag], rounded)
    e.alu("fcmple", [big, magnitude], flag)
    e.alu("fsel", [flag, magnitude, rounded], rounded)
    e.alu("fneg", [rounded], magnitude)
    e.alu("fcmplt", [x, e.constant(0.0)], flag)
    e.alu("fsel", [flag, magnitude, rounded], dst)
    for slot in (magnitude, rounded, flag):
        e.release(slot)


def to_integer(e: Emitter, x: Slot, dst: Slot, target: IntegerType) -> None:
    """``dst`` = the float ``x`` converted to ``target`` as eager's CPU kernels do:
    truncated toward zero; past what the conversion instruction takes (2**31, or 2**63
    for 64-bit types) or NaN, its "integer indefinite" (the least int32 or int64, whose
    low bits a narrower type keeps: 0), where torch leaves the result undefined; then
    clamped to :func:`truncated_interval` (the settle that follows wraps a narrow type)."""
    truncate(e, x, dst)
    low, high = truncated_interval(target)
    e.alu("fmax", [dst, e.constant(float(low))], dst)
    e.alu("fmin", [dst, e.constant(float(high))], dst)
    wide = target.width.data == 64 or (target.width.data == 32 and target.signedness.data
                                       == Signedness.UNSIGNED)
    bound, width = (2.0**63, 64) if wide else (2.0**31, 32)
    signed = target.signedness.data != Signedness.UNSIGNED
    indefinite = -(2.0 ** (width - 1)) if target.width.data == width and signed else 0.0
    magnitude, flag = e.fresh(), e.fresh()
    e.alu("fneg", [x], magnitude)
    e.alu("fmax", [x, magnitude], magnitude)
    e.alu("fcmple", [e.constant(bound), magnitude], flag)
    e.alu("fcmpne", [x, x], magnitude)  # NaN
    e.alu("fmax", [flag, magnitude], flag)
    e.alu("fsel", [flag, e.constant(indefinite), dst], dst)
    e.release(magnitude)
    e.release(flag)


def floor(e: Emitter, value: Slot, scratch: Slot) -> None:
    """``value`` = floor(``value``) for ``|value| < 2**22``: adding and subtracting
    1.5 * 2**23 rounds to the nearest integer, one less where that is above."""
    e.alu("fadd", [value, e.constant(_ROUNDER)], scratch)
    e.alu("fsub", [scratch, e.constant(_ROUNDER)], scratch)
    e.alu("fcmplt", [value, scratch], value)
    e.alu("fsub", [scratch, value], value)


def truncated_quotient(e: Emitter, acc: Slot, n: int) -> None:
    """``acc`` = trunc(``acc`` / ``n``) for an integer ``|acc| <= 2**24`` and ``n >=
    1``, exactly: the rounded product by 1 / ``n`` is within 1 of ``|acc| / n``, its
    floor is corrected by the remainder, and ``acc``'s sign put back."""
    if n == 1:
        return
    size, guess, rest, flag = e.fresh(), e.fresh(), e.fresh(), e.fresh()
    divisor, big = e.constant(float(n)), e.constant(_F32_INTEGRAL)
    e.alu("fneg", [acc], size)
    e.alu("fmax", [acc, size], size)
    e.alu("fmul", [size, e.constant(1.0 / n)], guess)  # <= 2**23
    e.alu("fadd", [guess, big], rest)  # rounded below 2**23, then its floor
    e.alu("fsub", [rest, big], rest)
    e.alu("fcmplt", [guess, rest], flag)
    e.alu("fsub", [rest, flag], rest)
    e.alu("fcmple", [big, guess], flag)  # from 2**23 on, already integral
    e.alu("fsel", [flag, guess, rest], guess)
    e.alu("fmul", [guess, divisor], rest)
    e.alu("fsub", [size, rest], rest)  # the remainder, in [-n, 2n)
    e.alu("fcmplt", [rest, e.constant(0.0)], flag)
    e.alu("fsub", [guess, flag], guess)
    e.alu("fcmple", [divisor, rest], flag)
    e.alu("fadd", [guess, flag], guess)
    e.alu("fcmplt", [acc, e.constant(0.0)], flag)
    e.alu("fneg", [guess], rest)
    e.alu("fsel", [flag, rest, guess], acc)
