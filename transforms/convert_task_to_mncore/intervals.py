"""Integers in words for convert-task-to-mncore: the interval of values each integer
may take, tracked through the kernel, so that an integer result is brought into its
type (booleans 0 and 1, narrow integers wrapped) only where it may leave it, and one
that a word (f32) cannot hold exactly is refused rather than rounded."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, Signedness, i1
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.values import constant_value
from mncore_ir.transforms.convert_task_to_mncore.common import (
    COPIES,
    REDUCTIONS,
    MNCoreConversionError,
    constant_values,
    element,
    op_label,
    reduced_dims,
    shape,
)

Interval = tuple[int, int]  # the least and the greatest value an integer may take

#: A word (f32) holds every integer up to this magnitude exactly; the cycle simulator
#: refuses integer inputs from here on, and the lowering refuses any integer that could
#: reach past it (rather than compute a rounded one).
EXACT_INTEGERS = 2**24
#: A float converted to a narrow integer type is clamped to this magnitude, then wrapped.
WRAPPED_FLOATS = 2**22 - 1
#: Constant integral exponents up to this magnitude are lowered to products.
MULTIPLIED_POWERS = 4

#: Integer results of these body ops, from the operands' intervals.
_INTERVALS: dict[type[Operation], Callable[..., Interval]] = {
    g.AddOp: lambda a, b: (a[0] + b[0], a[1] + b[1]),
    g.SubOp: lambda a, b: (a[0] - b[1], a[1] - b[0]),
    g.MulOp: lambda a, b: (min(x * y for x in a for y in b), max(x * y for x in a for y in b)),
    g.MaximumOp: lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    g.MinimumOp: lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    g.NegOp: lambda a: (-a[1], -a[0]),
    g.AbsOp: lambda a: (max(a[0], -a[1], 0), max(-a[0], a[1])),
    g.ReluOp: lambda a: (max(a[0], 0), max(a[1], 0)),
    g.WhereOp: lambda c, a, b: (min(a[0], b[0]), max(a[1], b[1])),
    g.ConvertOp: lambda a: a,
}
#: Body ops whose integer result may be a magnitude none of their operands has, which
#: a word then rounds past 2**24, and constants, which a word rounds there; the others
#: (selections, negations, truncated floats) hold exact integers of any size, and only
#: wrapping into a narrow type computes on them.
_NEW_MAGNITUDES = (g.AddOp, g.SubOp, g.MulOp, g.PowOp, g.ConstantOp)
#: Body ops whose result is a truth value (0 or 1) whatever its type.
_TRUTHS = (g.EqOp, g.NeOp, g.LtOp, g.LeOp, g.GtOp, g.GeOp, g.AndOp, g.OrOp, g.NotOp)


def type_interval(element_type: Attribute) -> Interval | None:
    """The values an integer type holds (``None``: f32, which needs no tracking)."""
    if element_type == i1:
        return (0, 1)
    if not isinstance(element_type, IntegerType):
        return None
    width = element_type.width.data
    if element_type.signedness.data == Signedness.UNSIGNED:
        return (0, 2**width - 1)
    return (-(2 ** (width - 1)), 2 ** (width - 1) - 1)


def input_interval(element_type: Attribute) -> Interval | None:
    """What an integer input may hold: its type's values a word holds exactly."""
    full = type_interval(element_type)
    if full is None:
        return None
    return (max(full[0], 1 - EXACT_INTEGERS), min(full[1], EXACT_INTEGERS - 1))


def truncated_interval(element_type: Attribute) -> Interval:
    """The values a float converted to the integer ``element_type`` holds before it is
    brought into the type (the conversion truncates, then clamps to these, since past
    the type torch's conversion is undefined): a wide type's own range, as far as a
    float reaches into it; a narrow type's values wrap (as eager's CPU conversion does
    them) from any integer of magnitude below 2**22, where wrapping is exact."""
    low, high = type_interval(element_type) or (0, 0)
    if max(-low, high) < WRAPPED_FLOATS:
        return (-WRAPPED_FLOATS, WRAPPED_FLOATS)
    return _inward(low, np.float32(np.inf)), _inward(high, np.float32(-np.inf))


def _inward(bound: int, toward: np.float32) -> int:
    """The float nearest ``bound`` on its side of it (toward ``toward``), as an int."""
    near = np.float32(bound)
    if (int(near) - bound) * (1 if toward < 0 else -1) > 0:  # past the bound: step back
        near = np.nextafter(near, toward)
    return int(near)


def constant_exponent(op: g.PowOp) -> float | None:
    """The exponent of ``x ** y`` when it is a constant."""
    exponent = op.operands[1].owner
    if isinstance(exponent, g.ConstantOp):
        (b,) = constant_values(exponent).tolist()
        return float(b)
    return None


def body_interval(op: Operation, operands: Sequence[Interval | None]) -> Interval | None:
    """The values ``op``'s integer result may take before it is brought into its type
    (``None`` for an f32 result); raises where an integer result has no exact form."""
    result = g.element_type_of(op.results[0])
    if type_interval(result) is None:
        return None
    if isinstance(op, _TRUTHS):
        return (0, 1)
    if isinstance(op, g.ConstantOp):
        values = constant_values(op)
        return (int(values.min()), int(values.max()))
    if isinstance(op, g.ConvertOp) and operands == [None]:  # a float truncated: exact
        return truncated_interval(result)
    if isinstance(op, g.PowOp) and None not in operands:
        b = constant_exponent(op)
        if b is not None and 0 <= b <= MULTIPLIED_POWERS:
            base = operands[0]
            assert base is not None
            top = max(-base[0], base[1]) ** int(b)
            return (1, 1) if b == 0 else (-top if base[0] < 0 and b % 2 else 0, top)
    if type(op) in _INTERVALS and None not in operands:
        return _INTERVALS[type(op)](*operands)
    raise MNCoreConversionError(
        f"convert-task-to-mncore: {op.name} with a {result} result has no exact form at the "
        "mncore level (words are f32: only addition, subtraction, multiplication, small "
        "constant powers, comparisons and selections of integers are exact)", op)


def check_exact(interval: Interval, what: str, op: Operation | None) -> None:
    """Refuse an integer that may reach past what a word holds exactly."""
    low, high = interval
    if max(-low, high) > EXACT_INTEGERS:
        raise MNCoreConversionError(
            f"convert-task-to-mncore: {what} may take values in [{low}, {high}], beyond "
            f"the ±2**24 that a word (f32) holds exactly (integer inputs are below 2**24)", op)


def settled(interval: Interval, element_type: Attribute) -> Interval:
    """``interval`` brought into ``element_type``'s values (booleans: 0 and 1; narrow
    integers wrap, to anything)."""
    full = type_interval(element_type)
    assert full is not None
    if full[0] <= interval[0] and interval[1] <= full[1]:
        return interval
    return (0, 1) if element_type == i1 else full


def _overlap(a: t.Tile, b: t.Tile) -> bool:
    return all(p < q + m and q < p + n for p, n, q, m in
               zip(a.offsets, a.sizes, b.offsets, b.sizes, strict=True))


def _covers(a: t.Tile, b: t.Tile) -> bool:
    """Whether region ``a`` holds all of region ``b``."""
    return all(p <= q and q + m <= p + n for p, n, q, m in
               zip(a.offsets, a.sizes, b.offsets, b.sizes, strict=True))


class Intervals:
    """What the regions of a kernel's integer buffers hold, as its tasks write them
    (buffers are reused, so the last writes of a region count)."""

    def __init__(self, kernel: t.KernelOp) -> None:
        self.written: dict[SSAValue, list[tuple[t.Tile, Interval]]] = {}
        for op in kernel.body.block.ops:  # the integer constants, whole
            if isinstance(op, t.ConstantOp) and type_interval(element(op.result)) is not None:
                values = constant_value(op.value).reshape(-1)
                if values.size:
                    interval = (int(values.min()), int(values.max()))
                    check_exact(interval, f"task.constant {op.value.get_type()}", op)
                    sizes = shape(op.result)
                    self.written[op.result] = [(t.Tile((0,) * len(sizes), sizes), interval)]

    def of(self, value: SSAValue, region: t.Tile) -> Interval | None:
        """What ``region`` of an integer buffer may hold (``None``: an f32 one): what
        the last writes of its parts wrote, or any input a word holds."""
        element_type = element(value)
        if type_interval(element_type) is None:
            return None
        found = [interval for tile, interval in self.written.get(value, [])
                 if _overlap(tile, region)]
        if not found:
            return input_interval(element_type)
        return (min(i[0] for i in found), max(i[1] for i in found))

    def note(self, value: SSAValue, tile: t.Tile, interval: Interval) -> None:
        """A task writes values in ``interval`` (brought into their type) to ``tile`` of
        ``value``: they replace what earlier writes left in it."""
        interval = settled(interval, element(value))
        kept = [(old, i) for old, i in self.written.get(value, []) if not _covers(tile, old)]
        self.written[value] = [*kept, (tile, interval)]

    def task(self, task: t.TaskOp, op: g.GraphOp | t.BodyOp) -> Interval | None:
        """What a task's integer output may take before it is brought into its type
        (``None``: an f32 output, or a pointwise task, whose ops are brought into their
        types one by one); records what the task writes, and refuses integers a word
        cannot hold exactly. ``op``: what the task computes."""
        writes = task.writes()
        if isinstance(op, t.BodyOp):
            intervals = self.body(task, op)
            yielded = next(o for o in op.body.block.ops if isinstance(o, t.YieldOp))
            for (value, tile), result in zip(writes, yielded.values, strict=True):
                if (interval := intervals.get(result)) is not None:
                    self.note(value, tile, interval)
            return None
        if all(type_interval(element(v)) is None for v, _ in writes):
            return None
        if isinstance(op, g.MaxPool2dOp) and len(writes) == 2:  # f32 values, their indices
            ((value, _),) = task.reads()[:1]
            spatial = math.prod(shape(value)[-2:])
            check_exact((0, spatial - 1), "max_pool2d's indices", task)
            self.note(writes[1][0], writes[1][1], (0, spatial - 1))
            return None
        interval = self.lanes(task, op)
        for value, tile in writes:
            self.note(value, tile, interval)
        return interval

    def lanes(self, task: t.TaskOp, op: g.GraphOp) -> Interval:
        """:meth:`task` of a task that is not pointwise."""
        ins = [self.of(v, region) for v, region in task.reads()]
        moves = isinstance(op, (*COPIES, *REDUCTIONS, g.GatherOp, g.EmbeddingOp, g.ScatterOp,
                                g.IndexPutOp, g.MaxPool2dOp))
        if moves and ins[0] is not None:
            low, high = ins[0]
            if isinstance(op, g.SumOp | g.MeanOp):  # accumulated exactly, the mean after
                ((value, _),) = task.reads()
                n = math.prod(shape(value)[d] for d in reduced_dims(task, op)[0])
                mean = isinstance(op, g.MeanOp)
                slack = n if mean else 0  # the quotient's remainder test
                check_exact((n * low - slack, n * high + slack), f"the {op_label(op)} "
                            f"of {n} elements of {value.type}", task)
                divided = mean and element(task.writes()[0][0]) != i1
                return (low, high) if divided else (n * low, n * high)
            if isinstance(op, g.ScatterOp | g.IndexPutOp) and ins[2] is not None:
                if isinstance(op, g.IndexPutOp) and op.accumulate.value.data:
                    count = math.prod(shape(task.reads()[1][0]))
                    low += count * min(ins[2][0], 0)
                    high += count * max(ins[2][1], 0)
                    check_exact((low, high), f"index_put accumulating {count} values", task)
                return (min(low, ins[2][0]), max(high, ins[2][1]))
            if not isinstance(op, g.ScatterOp | g.IndexPutOp):
                return (low, high)
        element_type = element(task.writes()[0][0])
        raise MNCoreConversionError(
            f"convert-task-to-mncore: a {op_label(op)} task with {element_type} values "
            "has no exact form at the mncore level (it computes in f32)", task)

    def body(self, task: t.TaskOp, body: t.BodyOp) -> dict[SSAValue, Interval | None]:
        """What each integer value of ``body`` may take before it is brought into its
        type; refuses integers a word cannot hold exactly."""
        known: dict[SSAValue, Interval | None] = {}  # as brought into their types
        raw: dict[SSAValue, Interval | None] = {}
        for arg, (value, region) in zip(body.body.block.args, task.reads(), strict=True):
            known[arg] = self.of(value, region)
        for op in body.body.block.ops:
            if isinstance(op, t.YieldOp):
                break
            interval = body_interval(op, [known[o] for o in op.operands])
            raw[op.results[0]] = interval
            if interval is not None:
                element_type = g.element_type_of(op.results[0])
                wraps = settled(interval, element_type) != interval and element_type != i1
                if isinstance(op, _NEW_MAGNITUDES) or wraps:  # (a boolean is != 0: exact)
                    check_exact(interval, f"{op.name} in task.body @{body.sym_name.data}", op)
                interval = settled(interval, element_type)
            known[op.results[0]] = interval
        return raw
