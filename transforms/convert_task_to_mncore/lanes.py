"""Lane kernels of convert-task-to-mncore: each output element of a task's tile is a
*lane*; lanes run in waves of 4 words per PE over all PEs (L2B ``n`` gets its lanes by
DMAs to it alone; a wave that fits one L2B goes to all of them, which repeat the same
work). A lane kernel loads per-lane DRAM words, computes on the ALU and stores.

Here: pointwise bodies, copies (permute, reshape, slice), reductions over time (lanes
in parallel) or through the tree (few outputs of many elements), and gather, scatter,
embedding and index_put, which compare each lane's index with every candidate position
and select by write masks (a SIMD machine has no data-dependent addressing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.transforms.convert_task_to_mncore import scalar
from mncore_ir.transforms.convert_task_to_mncore.common import (
    REDUCTIONS,
    Slot,
    descriptors,
    element,
    reduced_dims,
    shape,
)
from mncore_ir.transforms.convert_task_to_mncore.emitter import Emitter
from mncore_ir.transforms.convert_task_to_mncore.intervals import Interval, type_interval

#: Accumulators a lane reduction takes turns with.
ACCUMULATORS = 4

Lanes = Callable[[list[np.ndarray]], list[Slot]]  # absolute coordinates -> result slots


def lanes_over(e: Emitter, tile: t.Tile, writes: Sequence[tuple[SSAValue, t.Tile]],
               kernel: Lanes) -> None:
    """Run ``kernel`` on waves of the lanes of ``tile`` (absolute coordinates, one
    array per dimension) and store the slots it returns to ``writes``."""
    n = math.prod(tile.sizes)
    lanes = e.wave * e.machine.l2bs  # every L2B takes its own lanes
    for w in range(-(-n // lanes)):
        flat = np.arange(w * lanes, min(n, (w + 1) * lanes))
        e.new_wave(len(flat))
        local = np.unravel_index(flat, tile.sizes) if tile.sizes else ()
        coords = [o + c for o, c in zip(tile.offsets, local, strict=True)] or [
            np.zeros(len(flat), np.int64)]
        results = kernel(coords if tile.sizes else [])
        for (value, out_tile), slot in zip(writes, results, strict=True):
            e.store(slot, e.address(value, coords) if out_tile.sizes else
                    np.full(len(flat), e.dram[value]))
    e.width = e.chunk  # the next kernel's waves are whole unless it says otherwise


def pointwise(e: Emitter, task: t.TaskOp, body: t.BodyOp, tile: t.Tile,
              intervals: dict[SSAValue, Interval | None], coords: list[np.ndarray]
              ) -> list[Slot]:
    """The body on every lane, its operands broadcast to the tile as numpy does."""
    count = len(coords[0]) if coords else 1
    slots = [e.load(operand_words(e, value, region, tile, coords, count))
             for value, region in task.reads()]
    return scalar.compute(e, body, slots, intervals)


def operand_words(e: Emitter, value: SSAValue, region: t.Tile, tile: t.Tile,
                  coords: list[np.ndarray], count: int) -> np.ndarray:
    """The DRAM words of a pointwise operand (``region`` of ``value``) at the ``count``
    lanes of ``tile`` at ``coords``, broadcast to the tile as numpy does."""
    sizes = shape(value)
    if not sizes:
        return np.full(count, e.dram[value])
    lead = len(tile.sizes) - len(sizes)
    return e.address(value, [np.full_like(coords[lead + d], region.offsets[d])
                             if region.sizes[d] == 1 and tile.sizes[lead + d] != 1 else
                             coords[lead + d] - tile.offsets[lead + d] + region.offsets[d]
                             for d in range(len(sizes))])


def pointwise_packed(e: Emitter, group: Sequence[tuple[t.TaskOp, t.BodyOp]],
                     intervals: dict[SSAValue, Interval | None]) -> None:
    """Tasks computing one pointwise body (the first's) on different tensors, as one
    lane kernel: their lanes one after another (``packing``), each operand and result
    a word per lane wherever its task's tensor lies."""
    reads = [task.reads() for task, _ in group]
    writes = [task.writes() for task, _ in group]
    tiles = [out[0][1] for out in writes]
    starts = np.cumsum([0] + [math.prod(tile.sizes) for tile in tiles])
    lanes = e.wave * e.machine.l2bs
    body = group[0][1]
    for w in range(-(-int(starts[-1]) // lanes)):
        lo, hi = w * lanes, min(int(starts[-1]), (w + 1) * lanes)
        e.new_wave(hi - lo)
        parts = []  # (member, tile, coordinates, lanes) of each task in the wave
        for i, (tile, start, stop) in enumerate(zip(tiles, starts[:-1], starts[1:],
                                                    strict=True)):
            if max(lo, start) < min(hi, stop):
                flat = np.arange(max(lo, start) - start, min(hi, stop) - start)
                local = np.unravel_index(flat, tile.sizes) if tile.sizes else ()
                coords = [o + c for o, c in zip(tile.offsets, local, strict=True)]
                parts.append((i, tile, coords, len(flat)))
        slots = [e.load(np.concatenate([
            operand_words(e, *reads[i][k], tile, coords, count)
            for i, tile, coords, count in parts])) for k in range(len(body.arg_types))]
        results = scalar.compute(e, body, slots, intervals)
        for k, slot in enumerate(results):
            e.store(slot, np.concatenate([
                e.address(writes[i][k][0], coords) if tile.sizes else
                np.full(count, e.dram[writes[i][k][0]])
                for i, tile, coords, count in parts]))
    e.width = e.chunk


def copy(e: Emitter, task: t.TaskOp, op: g.PermuteOp | g.ReshapeOp | g.SliceOp,
         tile: t.Tile, coords: list[np.ndarray]) -> list[Slot]:
    """A permute, reshape or slice lane: one load from the word it copies."""
    ((value, region),) = task.reads()
    sizes = shape(value)
    local = [c - o for c, o in zip(coords, tile.offsets, strict=True)]
    if isinstance(op, g.ReshapeOp):  # both bands are runs of the row-major order
        flat = np.ravel_multi_index(local, tile.sizes) if local else np.zeros(1, np.int64)
        if sizes:
            flat = flat + np.ravel_multi_index(region.offsets, sizes)
        at = e.address(value, list(np.unravel_index(flat, sizes)) if sizes else [])
    elif isinstance(op, g.PermuteOp):
        mine = [np.zeros_like(local[0])] * len(sizes)
        for i, p in enumerate(op.perm.get_values()):
            mine[p] = local[i] + region.offsets[p]
        at = e.address(value, mine)
    else:
        dim = op.dim.value.data % len(sizes)
        start, step = op.start.value.data, op.step.value.data
        at = e.address(value, [start + step * local[d] if d == dim else
                               local[d] + region.offsets[d] for d in range(len(sizes))])
    return [e.load(at)]


def reduce(e: Emitter, task: t.TaskOp, op: g.ReduceOp, coords: list[np.ndarray]
           ) -> list[Slot]:
    """Each lane accumulates its reduced elements, loaded one after another, into
    :data:`ACCUMULATORS` accumulators in turn, combined at the end."""
    ((value, region),) = task.reads()
    sizes = shape(value)
    dims, kept = reduced_dims(task, op)
    count = len(coords[0]) if coords else 1
    base = [np.full(count, region.offsets[d], np.int64) for d in range(len(sizes))]
    for i, d in enumerate(kept):
        if d not in dims:
            base[d] = coords[i]
    kind = REDUCTIONS[type(op)]
    reduced = [sizes[d] for d in dims]
    # a few accumulators in turn, then combined: each chain is a few times shorter
    # (an ALU result is read 3 steps after its issue)
    accs = [e.fresh() for _ in range(max(1, min(ACCUMULATORS, math.prod(reduced))))]
    for r, index in enumerate(np.ndindex(*reduced)):
        mine = list(base)
        for d, i in zip(dims, index, strict=True):
            mine[d] = np.full(count, i, np.int64)
        x = e.load(e.address(value, mine))
        acc = accs[r % len(accs)]
        e.alu(kind if r >= len(accs) else "fpass", [acc, x] if r >= len(accs) else [x], acc)
    acc = accs[0]
    for other in accs[1:]:
        e.alu(kind, [acc, other], acc)
    element_type = element(task.writes()[0][0])
    if isinstance(op, g.MeanOp) and type_interval(element_type) is None:
        e.alu("fmul", [acc, e.constant(1.0 / math.prod(reduced))], acc)
    elif isinstance(op, g.MeanOp) and element_type != i1:  # numpy's mean, cast: truncated
        scalar.truncated_quotient(e, acc, math.prod(reduced))
    return [acc]


def tree_pays(e: Emitter, task: t.TaskOp, op: g.GraphOp) -> bool:
    """Whether a sum or mean goes through the tree: few outputs of many elements.
    Counted in loads: lanes take ``R`` loads per wave of outputs; the tree takes
    :func:`tree_plan`'s passes per wave of sums, plus about 4 for the tree and the
    store."""
    if not isinstance(op, g.SumOp | g.MeanOp) or type_interval(
            element(task.writes()[0][0])) is not None:
        return False  # integers accumulate in lanes (exactly, then into their type)
    ((value, _),) = task.reads()
    sizes = shape(value)
    reduced = math.prod(sizes[d] for d in reduced_dims(task, op)[0])
    outputs = math.prod(task.writes()[0][1].sizes)
    plan = tree_plan(e, outputs, reduced)
    waves = -(-outputs // (plan.per * e.machine.l2bs))
    return waves * (plan.passes + 4) < reduced * -(-outputs // (e.wave * e.machine.l2bs))


def reduce_tree(e: Emitter, task: t.TaskOp, op: g.SumOp | g.MeanOp) -> None:
    """A sum or mean through the tree (:func:`sum_trees`), every output of the tile a
    sum of its reduced elements."""
    ((value, region),) = task.reads()
    ((out, tile),) = task.writes()
    sizes = shape(value)
    dims, kept = reduced_dims(task, op)
    reduced = np.indices([sizes[d] for d in dims]).reshape(len(dims), -1)
    count = reduced.shape[1]
    rows, targets = [], []
    for flat in range(math.prod(tile.sizes)):
        at = [o + c for o, c in zip(tile.offsets, np.unravel_index(flat, tile.sizes),
                                    strict=True)]
        mine = [np.full(count, region.offsets[d], np.int64) for d in range(len(sizes))]
        for i, d in enumerate(kept):
            if d not in dims:
                mine[d] = np.full(count, at[i], np.int64)
        for d, index in zip(dims, reduced, strict=True):
            mine[d] = index
        rows.append(e.address(value, mine))
        targets.append(e.address(out, [np.array([c]) for c in at])[0] if at else
                       e.dram[out])
    sum_trees(e, np.stack(rows), np.array(targets, np.int64),
              1.0 / count if isinstance(op, g.MeanOp) else 1.0)


#: About the steps of a tree from its last pass to its store (the L1 and L2 moves and
#: the MAU's latency).
TREE_STEPS = 25


@dataclass(frozen=True)
class TreePlan:
    """How :func:`sum_trees` lays sums out: ``span`` L1Bs each (1, or an L2B's), so
    ``per`` sums per L2B, in ``passes`` of ``width`` words per L1B (a multiple of 4:
    one pass of a short sum loads only its words)."""

    span: int
    per: int
    passes: int
    width: int


def tree_plan(e: Emitter, sums: int, count: int) -> TreePlan:
    """Each sum on one L1B (as many at once as there are L1Bs) or on a whole L2B (one
    per L2B), whichever is estimated faster: the words it moves (every lane of a used
    L1B is loaded) at the DMA engine's rate, about 4 steps a pass and
    :data:`TREE_STEPS` a wave of sums, and the L2 reduction's latency."""
    machine = e.machine
    plans = []
    for span in (1, machine.l1b_per_l2b):
        per = machine.l1b_per_l2b // span
        passes = max(1, -(-count // (span * e.chunk)))  # an empty sum: a pass of zeros
        per_l1b = -(-max(1, count) // span)  # a one-pass sum's elements on each L1B
        width = e.chunk if passes > 1 else min(e.chunk, -(-per_l1b // 4) * 4)
        used = min(machine.l2bs, -(-sums // per))  # L2Bs of the first wave
        waves = -(-sums // (per * machine.l2bs))
        words = waves * passes * used * machine.l1b_per_l2b * width
        steps = (words / (4 * machine.dma_words_per_cycle) + waves * (4 * passes + TREE_STEPS)
                 + (2 * machine.l2_latency if span > 1 else 0))
        plans.append((steps, TreePlan(span, per, passes, width)))
    return min(plans, key=lambda p: p[0])[1]


def sum_trees(e: Emitter, addresses: np.ndarray, targets: np.ndarray, scale: float) -> None:
    """``scale`` times the sum of each row of the DRAM words ``addresses`` (sums x
    elements), stored to ``targets``, many sums at once: each on its own L1B (or L2B,
    :func:`tree_plan`), its elements spread over the block's lanes (zeros past the
    end) and accumulated there, pass after pass. The L1 ``reduce`` sums over the PEs
    (and, a sum per L2B, the L2 ``reduce`` over the L1Bs) keeping 4 words apart, a
    broadcast brings them back to the PEs and the MAU adds the 4 (``mma`` with a
    matrix of ones); each L1B's first word is gathered to L2BM and stored."""
    machine = e.machine
    sums, count = addresses.shape
    plan = tree_plan(e, sums, count)
    per, lanes = plan.per, plan.span * plan.width  # lanes of one sum in a pass
    block = machine.l1b_per_l2b * plan.width  # lanes of one L2B
    zero, ones = e.pooled([0.0]), e.ones_matrix()
    for first in range(0, sums, per * machine.l2bs):
        wave = range(first, min(sums, first + per * machine.l2bs))
        used = -(-len(wave) // per)
        e.new_wave()  # GRF words past the last wave's: waves overlap in time
        e.width = plan.width
        acc, vector, total = e.fresh(), e.fresh(), e.fresh()
        zeros = e.fresh()  # what the PEs past the width read
        e.alu("fzero", [], zeros)
        for p in range(plan.passes):
            chunk = np.full(used * block, zero, np.int64)
            for k, f in enumerate(wave):
                part = addresses[f, p * lanes:(p + 1) * lanes]
                at = (k // per) * block + (k % per) * lanes
                chunk[at:at + len(part)] = part
            x = e.load(chunk, fill=zeros)
            e.alu("fadd" if p else "fpass", [acc, x] if p else [x], acc)
        l1, back = e.l1.take(), e.l1.take()
        e.emit(m.L1Op(0, "reduce", [m.ref(*acc)], m.ref(*l1)))
        if per == 1:  # over the L1Bs too, then back to every one
            stage = e.stage.take(4)
            e.emit(m.L2Op(0, "reduce", [m.ref(*l1)], m.ref(*stage), 4))
            e.emit(m.L2Op(0, "bcast", [m.ref(*stage)], m.ref(*back), 4))
            l1 = back
        e.emit(m.L1Op(0, "bcast", [m.ref(*l1)], m.ref(*vector)))
        e.emit(m.AluOp(0, "fzero", [], m.ref(*total)))
        e.emit(m.MauOp(0, "mma", [m.ref(*ones), m.ref(*vector), m.ref(*total)],
                       m.ref(*total)))
        if scale != 1.0:
            e.alu("fmul", [total, e.constant(scale)], total)
        gathered, stage = e.l1.take(), e.stage.take(machine.l1b_per_l2b)
        e.emit(m.L1Op(0, "gather", [m.ref(*total)], m.ref(*gathered)))
        e.emit(m.L2Op(0, "gather", [m.ref(*gathered)], m.ref(*stage), 1))
        with e.transfers():  # the sum on L1Bs g.. is word g of its L2B's stage
            for n in range(used):
                mine = targets[wave.start + n * per:min(wave.stop, wave.start + (n + 1) * per)]
                l2b = n if used > 1 else None
                for at, address, words, run, stride, rows, pitch in descriptors(
                        mine, load=False):
                    e.dma("store", m.ref("l2bm", stage[1] + at * plan.span),
                          m.ref("dram", address), words, run, stride, l2b, rows, pitch)
    e.width = e.chunk


def select_matching(e: Emitter, index: Slot, candidates: int,
                    value_at: Callable[[int], Slot], acc: Slot) -> None:
    """``acc = value_at(k)`` in the lanes whose ``index`` equals ``k``, for each
    candidate ``k`` (a counter in GRF counts through them)."""
    counter, match = e.fresh(), e.fresh()
    e.alu("fzero", [], counter)
    for k in range(candidates):
        if k:
            e.alu("fadd", [counter, e.constant(1.0)], counter)
        e.alu("fcmpeq", [index, counter], match)
        e.alu("fpass", [value_at(k)], acc, mask=match)


def gather(e: Emitter, task: t.TaskOp, op: g.GatherOp, coords: list[np.ndarray]
           ) -> list[Slot]:
    """``out[c] = input[c with c[dim] = index[c]]``."""
    (x, _), (index, _) = task.reads()
    sizes = shape(x)
    dim = op.dim.value.data % len(sizes)
    where = e.keep(e.load(e.address(index, coords)))
    acc = e.fresh()
    e.alu("fzero", [], acc)

    def candidate(k: int) -> Slot:
        return e.load(e.address(x, [np.full_like(c, k) if d == dim else c
                                    for d, c in enumerate(coords)]))

    select_matching(e, where, sizes[dim], candidate, acc)
    return [acc]


def scatter(e: Emitter, task: t.TaskOp, op: g.ScatterOp, coords: list[np.ndarray]
            ) -> list[Slot]:
    """``out = input``, then ``out[c with c[dim] = index[c]] = value``: lane ``c`` of
    the output takes ``value`` when some ``index[c with c[dim] = j]`` is ``c[dim]``."""
    (x, _), (index, _), (value, _) = task.reads()
    idx_shape = shape(index)
    dim = op.dim.value.data % len(idx_shape)
    acc, match = e.fresh(), e.fresh()
    e.alu("fpass", [e.load(e.address(x, coords))], acc)
    fill = e.keep(e.load(np.full(len(coords[0]), e.dram[value])))
    inside = np.ones(len(coords[0]), bool)
    for d, c in enumerate(coords):
        if d != dim:
            inside &= c < idx_shape[d]
    mine = e.keep(e.load(e.table(coords[dim])))
    outside = e.pooled([-1.0])
    for j in range(idx_shape[dim]):
        at = e.address(index, [np.full_like(c, j) if d == dim else np.minimum(
            c, idx_shape[d] - 1) for d, c in enumerate(coords)])
        where = e.load(np.where(inside, at, outside))
        e.alu("fcmpeq", [where, mine], match)
        e.alu("fpass", [fill], acc, mask=match)
    return [acc]


def embedding(e: Emitter, task: t.TaskOp, coords: list[np.ndarray]) -> list[Slot]:
    """``out[..., d] = weight[indices[...], d]``."""
    (weight, _), (indices, _) = task.reads()
    rows = shape(weight)[0]
    lead = coords[:-1]
    where = e.keep(e.load(e.address(indices, lead) if lead else
                          np.full(len(coords[-1]), e.dram[indices])))
    acc = e.fresh()
    e.alu("fzero", [], acc)
    select_matching(e, where, rows, lambda k: e.load(e.address(
        weight, [np.full_like(coords[-1], k), coords[-1]])), acc)
    return [acc]


def index_put(e: Emitter, task: t.TaskOp, op: g.IndexPutOp, coords: list[np.ndarray]
              ) -> list[Slot]:
    """``out = input``, then for each index position ``i``: the lanes of row
    ``indices[i]`` take (or add, with ``accumulate``) ``values[i, ...]``, by a write
    mask; positions in order, so a repeated row keeps the last value."""
    (x, _), (indices, _), (values, _) = task.reads()
    add = bool(op.accumulate.value.data)
    index_shape, value_shape = shape(indices), shape(values)
    lanes = len(coords[0])
    acc, match = e.fresh(), e.fresh()
    e.alu("fpass", [e.load(e.address(x, coords))], acc)
    row = e.keep(e.load(e.table(coords[0])))
    for position in np.ndindex(*index_shape):
        where = e.load(np.full(lanes, e.address(
            indices, [np.array([p]) for p in position])[0] if position else
            e.dram[indices]))
        e.alu("fcmpeq", [where, row], match)
        full = [np.full(lanes, p) for p in position] + list(coords[1:])
        lead = len(full) - len(value_shape)
        value = e.load(e.address(values, [
            np.zeros(lanes, np.int64) if n == 1 else full[lead + d]
            for d, n in enumerate(value_shape)]) if value_shape else
            np.full(lanes, e.dram[values]))
        if add:
            e.alu("fadd", [acc, value], acc, mask=match)
        else:
            e.alu("fpass", [value], acc, mask=match)
    return [acc]
