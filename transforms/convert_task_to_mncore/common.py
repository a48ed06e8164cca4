"""What convert-task-to-mncore's modules share: its error, a slot's and a buffer's
shape, DRAM address runs and their DMA descriptors, and rings of on-chip areas."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.values import constant_value

Slot = tuple[str, int]  # a PE memory and the first of its 4 words

#: Ops whose tasks only move data: their output tile is a copy of words of the input.
COPIES = (g.PermuteOp, g.ReshapeOp, g.SliceOp)
#: Reductions, and the ALU instruction that accumulates each.
REDUCTIONS: dict[type[g.ReduceOp], str] = {g.SumOp: "fadd", g.MeanOp: "fadd",
                                           g.AmaxOp: "fmax"}


class MNCoreConversionError(DiagnosticException):
    """A kernel this conversion cannot lower; ``op`` is the op to blame (the tools
    report its source position)."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


def shape(value: SSAValue) -> tuple[int, ...]:
    """The shape of a buffer (or of a tensor)."""
    typ = value.type
    assert isinstance(typ, MemRefType | TensorType), typ
    return tuple(typ.get_shape())


def element(value: SSAValue) -> Attribute:
    """The element type of a buffer (or of a tensor)."""
    typ = value.type
    assert isinstance(typ, MemRefType | TensorType), typ
    return typ.get_element_type()


op_label = t.computation_label  # what a task computes, as messages name it

def constant_values(op: g.ConstantOp) -> np.ndarray:
    """The values of a graph constant, flat."""
    value = op.value
    assert isinstance(value, DenseIntOrFPElementsAttr)
    return constant_value(value).reshape(-1)


def reduced_dims(task: t.TaskOp, op: g.ReduceOp) -> tuple[list[int], list[int]]:
    """The reduced dimensions of a reduction task's input and the input dimension
    each output dimension indexes."""
    ((value, _),) = task.reads()
    rank = len(shape(value))
    dims = sorted(int(d) % rank for d in op.dims.get_values())
    keep = bool(op.keepdim.value.data)
    return dims, [d for d in range(rank) if keep or d not in dims]


def strides_of(sizes: Sequence[int]) -> np.ndarray:
    out, acc = [], 1
    for n in reversed(sizes):
        out.append(acc)
        acc *= n
    return np.array(out[::-1], dtype=np.int64)


def runs(addresses: np.ndarray) -> list[tuple[int, int, int]]:
    """(first element, first address, length) of each run of consecutive addresses."""
    if not len(addresses):
        return []
    breaks = np.flatnonzero(np.diff(addresses) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(addresses)]])
    return [(int(s), int(addresses[s]), int(e - s)) for s, e in zip(starts, ends, strict=True)]


#: A DMA of a wave's lanes: (first lane, first DRAM address, words, run, stride, rows,
#: pitch); run and stride ``None`` where each row is one contiguous run, rows and pitch
#: ``None`` for one row.
Descriptor = tuple[int, int, int, int | None, int | None, int | None, int | None]


def descriptors(addresses: np.ndarray, load: bool) -> list[Descriptor]:
    """The runs of ``addresses`` grouped into strided DMAs, and those into rows: the
    lanes of a window's or a transposed block's rows are one DMA, not one per row. A
    load may read a word again (stride or pitch 0); a store never writes one twice. A
    load whose lanes repeat each word (a channel's scale over its plane) is read as
    rows of one word each where that takes fewer DMAs."""
    found = _rows(_strided(runs(addresses), load), load)
    if load and len(found) > 1:
        repeated = _rows(_repeats(addresses), load)
        if len(repeated) < len(found):
            return repeated
    return found


def _repeats(addresses: np.ndarray) -> list[tuple[int, int, int, int | None, int | None]]:
    """Each stretch of lanes reading one word, as a DMA that reads it again and again."""
    breaks = np.flatnonzero(np.diff(addresses) != 0) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(addresses)]])
    return [(int(s), int(addresses[s]), int(e - s), 1, 0) if e - s > 1
            else (int(s), int(addresses[s]), 1, None, None)
            for s, e in zip(starts, ends, strict=True)]


def _strided(found: list[tuple[int, int, int]], load: bool
             ) -> list[tuple[int, int, int, int | None, int | None]]:
    """Consecutive runs of one length a fixed stride apart, as one strided DMA each."""
    out: list[tuple[int, int, int, int | None, int | None]] = []
    i = 0
    while i < len(found):
        first, address, length = found[i]
        j = i + 1
        if j < len(found) and found[j][2] == length:
            stride = found[j][1] - address
            while (j < len(found) and found[j][2] == length
                   and found[j][1] - found[j - 1][1] == stride):
                j += 1
            if stride >= length or (load and stride >= 0):
                out.append((first, address, length * (j - i), length, stride))
                i = j
                continue
        out.append((first, address, length, None, None))
        i += 1
    return out


def _rows(found: list[tuple[int, int, int, int | None, int | None]], load: bool
          ) -> list[Descriptor]:
    """Consecutive descriptors of one shape whose first addresses advance alike, as the
    rows of one: lanes follow on (the L2BM side stays contiguous), and for a store the
    rows do not overlap."""
    out: list[Descriptor] = []
    i = 0
    while i < len(found):
        first, address, words, run, stride = found[i]
        extent = words if run is None or stride is None else stride * (words // run - 1) + run
        j = i + 1
        if j < len(found):
            pitch = found[j][1] - address
            while (j < len(found) and found[j][2:] == (words, run, stride)
                   and found[j][0] == first + (j - i) * words
                   and found[j][1] - found[j - 1][1] == pitch):
                j += 1
            if j - i > 1 and pitch >= 0 and (load or pitch >= extent):
                out.append((first, address, words * (j - i), run, stride, j - i, pitch))
                i = j
                continue
        out.append((first, address, words, run, stride, None, None))
        i += 1
    return out


class Staging:
    """A memory range handed out in program order, each area as large as the transfer
    it stages, wrapping round at the end: reuse is safe (the scheduler orders it), and
    small transfers leave room for many more in flight than areas of one size would.
    An area is live until the next one is taken: a wrap never lands on the last."""

    ALIGN = 16

    def __init__(self, space: str, start: int, size: int) -> None:
        self.space, self.start, self.size, self.next = space, start, size, 0
        self.last = 0  # where the last area taken starts

    def take(self, words: int) -> Slot:
        words = -(-max(words, 1) // self.ALIGN) * self.ALIGN
        assert words <= self.size, (words, self.size)
        if self.next + words > self.size:
            self.next = 0
            assert words <= self.last, f"{self.space} staging of {words} words would " \
                "overwrite the area taken before it"
        at = self.start + self.next
        self.last = self.next
        self.next += words
        return self.space, at


class Ring:
    """Areas of one memory handed out round-robin: reuse is safe (the scheduler orders
    it) and the ring's length is how many transfers may overlap."""

    def __init__(self, space: str, start: int, size: int, count: int) -> None:
        self.space, self.start, self.size, self.count, self.next = space, start, size, count, 0

    def take(self) -> Slot:
        at = self.start + self.size * (self.next % self.count)
        self.next += 1
        return self.space, at
