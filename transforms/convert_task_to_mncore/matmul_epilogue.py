"""A matmul's pointwise consumer computed on the matmul's accumulators (an epilogue):
a bias add and ReLU after a linear layer, a ReLU's mask in the backward, an SGD update
of a weight gradient. Lowered on their own, the matmul stores C and the consumer loads
it back: a DRAM round trip (a store, a load, their set-ups) on the step's critical path.
As an epilogue, each column of C that the stationary kernel finishes in its PEs'
accumulators goes through the body there: the other operands load in the
accumulators' layout, the results store from it, and C itself is never stored.

Taken where C is an intermediate that only that task reads, over C's tile, with f32
values only and a cheap body (a few adds, products, comparisons and selects: the body
runs once per accumulator column, four a unit, where the lane kernel runs it once per
wave), and the task can move to the matmul's place (no task in between writes what it
reads or touches what it writes). The results are the lane kernel's, bit for bit: the
same instructions on the same words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.transforms.convert_task_to_mncore import scalar
from mncore_ir.transforms.convert_task_to_mncore.common import Slot, element, shape
from mncore_ir.transforms.convert_task_to_mncore.emitter import JC, Emitter
from mncore_ir.transforms.convert_task_to_mncore.intervals import Interval
from mncore_ir.transforms.convert_task_to_mncore.lanes import operand_words
from mncore_ir.transforms.convert_task_to_mncore.matmul_columns import columns_of_c
from mncore_ir.transforms.convert_task_to_mncore.views import is_copy

#: Body ops an epilogue runs (each a few ALU instructions at most).
CHEAP = (g.AddOp, g.SubOp, g.MulOp, g.NegOp, g.ReluOp, g.MaximumOp, g.MinimumOp,
         g.CompareOp, g.WhereOp, g.ConstantOp, t.YieldOp)
#: At most this many computing ops (constants aside) in an epilogue's body.
MOST_OPS = 8


@dataclass
class Epilogue:
    """``task`` (computing ``body``) on the accumulators of the matmul writing ``c``."""

    task: t.TaskOp
    body: t.BodyOp
    c: SSAValue
    place: int
    """The consumer's place in the task order it was found in."""
    known: dict[SSAValue, Interval | None] | None = None
    """The body's integer intervals (``Intervals.body``), set where it is lowered."""


def find_epilogues(tasks: Sequence[t.TaskOp], computed: Sequence[t.BodyOp | g.GraphOp],
                   intermediates: set[SSAValue], skip: set[int]) -> dict[int, Epilogue]:
    """The epilogues by the index of their matmul task (``tasks`` in program order;
    ``skip``: indices that are no candidates, packed tasks among them)."""
    readers: dict[SSAValue, list[int]] = {}
    writers: dict[SSAValue, list[int]] = {}
    for i, task in enumerate(tasks):
        for v in dict.fromkeys(task.ins):
            readers.setdefault(v, []).append(i)
        for v in task.outs:
            writers.setdefault(v, []).append(i)
    found: dict[int, Epilogue] = {}
    for i, (task, op) in enumerate(zip(tasks, computed, strict=True)):
        if not isinstance(op, g.MATMULS) or len(task.outs) != 1:
            continue
        c = task.outs[0]
        users = readers.get(c, [])
        if c not in intermediates or len(users) != 1 or writers.get(c) != [i]:
            continue
        j = users[0]
        body = computed[j]
        if j <= i or j in skip or not isinstance(body, t.BodyOp) or not _cheap(body):
            continue
        consumer = tasks[j]
        ((_, c_tile),) = task.writes()
        if (any(element(v) != f32 for v in (*consumer.ins, *consumer.outs))
                or any(v == c and region != c_tile for v, region in consumer.reads())
                or any(tile.sizes != c_tile.sizes or tile.offsets != consumer.writes()[0][1].offsets
                       for _, tile in consumer.writes())
                or math.prod(c_tile.sizes[:-2]) != 1 or c in consumer.outs):
            continue
        reads, writes = set(consumer.ins) - {c}, set(consumer.outs)
        if any(reads & set(tasks[k].outs) or writes & {*tasks[k].ins, *tasks[k].outs}
               for k in range(i + 1, j)):
            continue
        found[i] = Epilogue(consumer, body, c, j)
    return found


def next_to_their_matmuls(order: list[int], fused: dict[int, Epilogue]
                          ) -> tuple[list[int], dict[int, Epilogue]]:
    """``order`` (task indices by place) with each epilogue's consumer moved to the place
    after its matmul, and the epilogues by their matmul's new place: what the consumer
    reads and writes then lives from there (intermediates share DRAM by liveness, so a
    consumer computed early but placed late would write words still another buffer's)."""
    moved = {ep.place for ep in fused.values()}
    new_order: list[int] = []
    new_fused: dict[int, Epilogue] = {}
    for place, j in enumerate(order):
        if place in moved:
            continue
        new_order.append(j)
        if place in fused:
            new_fused[len(new_order) - 1] = fused[place]
            new_order.append(order[fused[place].place])
    return new_order, new_fused


def fits_in_grf(pb: Emitter, epilogue: Epilogue) -> bool:
    """Whether the epilogue's values fit in the GRF words the kernel leaves free (past
    its scratches, its accumulators and their scratch), counting a slot per column
    ``jl`` for every operand, result and op as if none died: tiny's GRFs hold 25 such
    slots, too few for an LSTM's gate sums (the step failed to compile and ran parts on
    the host)."""
    ring = pb.machine.grf_words - pb.grf_first
    free = ring // 4 + (ring - 4 * (JC + 1)) // 4
    ops = sum(not isinstance(op, g.ConstantOp | t.YieldOp)
              for op in epilogue.body.body.block.ops)
    values = len(set(epilogue.task.ins) - {epilogue.c}) + len(epilogue.task.outs) + ops
    return JC * values <= free


def _cheap(body: t.BodyOp) -> bool:
    ops = list(body.body.block.ops)
    return (body.is_pointwise() and not is_copy(body) and all(isinstance(op, CHEAP) for op in ops)
            and sum(not isinstance(op, g.ConstantOp | t.YieldOp) for op in ops) <= MOST_OPS)


def apply(pb: Emitter, epilogue: Epilogue, unit: Unit, accs: list[Slot], live: list[int]
          ) -> None:
    """Run the epilogue on the accumulators ``accs[jl]`` of a unit's columns ``live``:
    operands of C's shape load by the path that loads C back for a later chunk of K,
    others (a bias, broadcast along C's rows or columns) lane by lane in the
    accumulators' layout; the results store by the path that would have stored C."""
    consumer, body, c = epilogue.task, epilogue.body, epilogue.c
    tile = consumer.writes()[0][1]
    saved = (pb.width, dict(pb.grf), pb.grf_base, list(pb.released))
    pb.width = pb.chunk  # a lane per accumulator word
    # GRF: the accumulators and the kernel's scratch stay; the rest is free
    pb.grf, pb.grf_base, pb.released = {"grf0": 0, "grf1": 4 * (JC + 1)}, 0, []
    try:
        lanes = accumulator_lanes(pb, unit)
        operands: list[list[Slot]] = []  # per read, a slot per column jl
        for value, region in consumer.reads():
            if value == c:
                operands.append(accs)
                continue
            o = _layout(pb, value, region, tile, unit.swapped)
            if o is not None:  # as C lies: the columns, as a later chunk of K loads C
                slots = [pb.fresh() for _ in accs]
                columns_of_c(pb, unit.parts, unit.span, unit.c0, unit.cols, o, unit.by_rows,
                             slots, live, store=False)
                operands.append(slots)
                continue
            loaded: dict[bytes, Slot] = {}
            slots = []
            for jl in range(len(accs)):
                words = operand_words(pb, value, region, tile,
                                      _coords(tile, lanes, jl, unit), len(lanes[0]))
                per = len(words) // pb.machine.l2bs
                if (words.reshape(pb.machine.l2bs, per) == words[:per]).all():
                    words = words[:per]  # every L2B alike: one load to all of them
                if jl in live and words.tobytes() not in loaded:
                    loaded[words.tobytes()] = pb.fresh()
                    pb.load_to(words, loaded[words.tobytes()])
                slots.append(loaded.get(words.tobytes(), accs[jl]))
            operands.append(slots)
        results = {jl: scalar.compute(pb, body, [slots[jl] for slots in operands],
                                      epilogue.known or {}) for jl in live}
        for k, (value, region) in enumerate(consumer.writes()):
            o = _layout(pb, value, region, tile, unit.swapped)
            assert o is not None, "an output is as large as its tile"
            columns_of_c(pb, unit.parts, unit.span, unit.c0, unit.cols, o, unit.by_rows,
                         [results[jl][k] if jl in results else accs[jl]
                          for jl in range(len(accs))], live, store=True)
    finally:
        pb.width, pb.grf, pb.grf_base, pb.released = saved


def _layout(pb: Emitter, value: SSAValue, region: t.Tile, tile: t.Tile, swapped: bool
            ) -> tuple[int, int, int] | None:
    """``(first word, stride between rows of O, between columns)`` of ``value``'s
    ``region`` where it covers the tile as C does (no broadcast), else ``None``."""
    sizes = shape(value)
    if len(sizes) != len(tile.sizes) or tuple(region.sizes) != tuple(tile.sizes):
        return None
    strides = pb.strides(value)
    base = pb.dram[value] + int(np.dot(region.offsets, strides))
    rows, cols = int(strides[-2]), int(strides[-1])
    return (base, cols, rows) if swapped else (base, rows, cols)


def _coords(tile: t.Tile, lanes: tuple[np.ndarray, np.ndarray, np.ndarray], jl: int,
            unit: Unit) -> list[np.ndarray]:
    """The tile's coordinates at each lane of accumulator ``jl`` (a row or column past
    O's: its first, so that a lane with no element of O reads what its L1B's others
    do, and a bias row or column still loads as one word per L1B or one L1B's words)."""
    rows_o, cols_o, inside = lanes
    col = cols_o + jl
    row, col = np.where(inside, rows_o, 0), np.where(col < unit.cols, col, 0)
    i, j = (col, row) if unit.swapped else (row, col)
    lead = [np.full(len(i), o, np.int64) for o in tile.offsets[:-2]]
    return [*lead, tile.offsets[-2] + i, tile.offsets[-1] + j]


@dataclass(frozen=True)
class Unit:
    """Where a unit of the stationary kernel's columns lie: the parts of O's rows
    (``(L2B, first row, rows)``, one per L2B where the L2Bs split the rows), the
    columns it computes from ``c0`` (``span`` of O's ``cols``), and whether O is C^T."""

    parts: list[tuple[int | None, int, int]]
    span: int
    c0: int
    cols: int
    by_rows: bool
    swapped: bool


def accumulator_lanes(pb: Emitter, unit: Unit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each lane of the machine (L2B, L1B, PE, word, in the emitter's lane order)
    the row of O its accumulator words hold, the column of O of its first accumulator,
    and whether its row is one of O's: PE ``p`` of L1B ``g`` of L2B ``n`` holds
    ``O[first + 4p + w, c0 + g JC + jl]`` in word ``w`` of accumulator ``jl``, where the
    L2Bs split the rows each with its part's ``first``, else all of them the first
    part's rows and L2B ``n`` the columns from ``c0 + n L JC`` (``L`` L1Bs an L2B)."""
    machine, parts, by_rows = pb.machine, unit.parts, unit.by_rows
    blocks = machine.l1b_per_l2b
    lanes = np.arange(machine.l2bs * blocks * pb.chunk)
    n, g, word = lanes // (blocks * pb.chunk), lanes // pb.chunk % blocks, lanes % pb.chunk
    firsts = np.zeros(machine.l2bs, np.int64)
    counts = np.zeros(machine.l2bs, np.int64)
    for k, (_, first, block) in enumerate(parts if by_rows else parts[:1] * machine.l2bs):
        firsts[k], counts[k] = first, block
    rows = firsts[n] + word
    cols = unit.c0 + g * JC + (0 if by_rows else n * blocks * JC)
    return rows, cols, word < counts[n]
