"""Matmul kernels of convert-task-to-mncore: ``C = A @ B`` on the MAU.

* ``lower_matmul_stationary`` (any K, in chunks whose stationary rows fit in LM): A
  stays in the PEs as 4x4 matrices, B's columns stream through by strided DMAs, one L1
  broadcast feeds one ``mma``; the L2Bs split C's rows or columns. Past K, the last
  matrix and vector are padded with zeros by selects. Swapped, the same kernel
  computes ``C^T = B^T A^T`` (B^T stationary; A's and C's rows move as runs), which
  suits products of few rows and many columns.
* ``lower_matmul_streaming`` (any K; the first version): each PE one row and 4 columns
  of C, ``vmm`` over chunks of K, one DMA per piece.

``lower_matmul`` picks one (the pass's ``matmul_kernel`` option). ``pb`` is the
program's emitter: its rings, DRAM places and instruction list.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.transforms.convert_task_to_mncore.common import (
    MNCoreConversionError,
    Ring,
)
from mncore_ir.transforms.convert_task_to_mncore.emitter import JC, Emitter
from mncore_ir.transforms.convert_task_to_mncore.matmul_columns import (
    columns_of_c,
    one_l2b,
    up4,
)
from mncore_ir.transforms.convert_task_to_mncore.matmul_epilogue import Epilogue
from mncore_ir.transforms.convert_task_to_mncore.matmul_epilogue import Unit as EpilogueUnit
from mncore_ir.transforms.convert_task_to_mncore.matmul_epilogue import (
    apply as apply_epilogue,
)


def lower_matmul(pb: Emitter, task: t.TaskOp, op: g.MatmulOp | g.MatmulPermutedOp,
                 kernel: str = "auto", epilogue: Epilogue | None = None) -> bool:
    """The stationary kernel where a unit of B's rows fits in L1BM (in chunks of K
    whose stationary rows fit in LM as 4x4 matrices, each chunk adding to C), else the
    streaming one. B is read in place through a transpose of its last two dimensions
    (``graph.matmul_permuted``, F.linear's weight) or as it lies. ``auto`` keeps A or
    B^T stationary (``C^T = B^T A^T``), whichever :func:`estimate` finds faster. An
    ``epilogue`` runs on the stationary kernel's accumulators instead of storing C
    where :func:`cheap_epilogue` says so (not in the streaming kernel): True if it
    did."""
    if isinstance(op, g.MatmulPermutedOp):
        perm = list(op.rhs_perm.get_values())
        if not g.is_transpose(perm):
            raise MNCoreConversionError(
                f"convert-task-to-mncore: graph.matmul_permuted reads its right operand "
                f"through a transpose of the last two dimensions only, not {perm}", op)
    depth, chunk, fits, splits = geometry(pb, task)
    if kernel in ("stationary", "swapped", "split", "swapped-split") and not fits:
        raise MNCoreConversionError(
            f"convert-task-to-mncore: matmul_kernel={kernel} needs room for 4 rows of B "
            f"per column in L1BM and L2BM on {pb.machine.name}")
    transposed = isinstance(op, g.MatmulPermutedOp)
    blocks = pb.machine.l1b_per_l2b
    if kernel in ("split", "swapped-split") and not splits:
        raise MNCoreConversionError(
            f"convert-task-to-mncore: matmul_kernel={kernel} splits K ({depth}) over the "
            f"{blocks} L1Bs of an L2B: K must be a multiple of {4 * blocks} and its share "
            f"at most {chunk}", op)
    if fits and kernel != "streaming":
        plain, swapped = (operands(pb, task, transposed, swap) for swap in (False, True))
        options = {"stationary": plain, "swapped": swapped}
        if splits:
            options |= {"split": replace(plain, split=blocks),
                        "swapped-split": replace(swapped, split=blocks)}
        saved = round_trip(pb, task) if epilogue is not None else 0.0
        if saved and not any(cheap_epilogue(pb, o, depth, task) for o in options.values()):
            epilogue, saved = None, 0.0

        def cost(o: Operands) -> tuple[float, float]:  # an epilogue saves a round trip
            bound, work = estimate(pb, o, depth)
            return (bound - saved, work) if cheap_epilogue(pb, o, depth, task) else (
                bound, work)

        chosen = options[kernel] if kernel != "auto" else min(options.values(), key=cost)
        if epilogue is not None and not cheap_epilogue(pb, chosen, depth, task):
            epilogue = None
        if chosen.split > 1:  # every L1B holds its share of K: one chunk
            lower_matmul_stationary(pb, chosen, depth)
            return False
        for k_lo in range(0, depth, chunk):
            lower_matmul_stationary(pb, chosen.from_k(k_lo), min(chunk, depth - k_lo),
                                    epilogue if k_lo + chunk >= depth else None)
        return epilogue is not None
    lower_matmul_streaming(pb, task, transposed)
    return False


def geometry(pb: Emitter, task: t.TaskOp) -> tuple[int, int, bool, bool]:
    """K, the chunk of K whose stationary matrices fit in LM, whether the stationary
    kernels apply, and whether K may be split over the L1Bs of an L2B."""
    depth = task.reads()[0][1].sizes[-1]
    chunk = 2 * (pb.machine.lm_words - pb.lm_limit) // 16 * 4
    fits = chunk >= 4 and stationary_width(pb, min(depth, chunk)) >= 4
    blocks = pb.machine.l1b_per_l2b
    splits = blocks > 1 and depth % (4 * blocks) == 0 and depth // blocks <= chunk
    return depth, chunk, fits, splits


def epilogue_fits(pb: Emitter, task: t.TaskOp, kernel: str) -> bool:
    """Whether some stationary kernel that ``kernel`` allows would take an epilogue
    (:func:`cheap_epilogue`), from the shapes alone: asked before DRAM is placed, to
    move the consumer next to the product only where it may become an epilogue."""
    depth, _, fits, splits = geometry(pb, task)
    rows, cols = task.writes()[0][1].sizes[-2:]
    blocks = pb.machine.l1b_per_l2b
    shapes = {"stationary": (rows, cols, 1), "swapped": (cols, rows, 1)}
    if splits:
        shapes |= {"split": (rows, cols, blocks), "swapped-split": (cols, rows, blocks)}
    allowed = shapes.values() if kernel == "auto" else [shapes[kernel]] if kernel in shapes else []
    unplaced = (0, 0, 0)
    return fits and any(cheap_epilogue(pb, Operands(r, c, unplaced, unplaced, unplaced,
                                                    split=s), depth, task)
                        for r, c, s in allowed)


@dataclass(frozen=True)
class Operands:
    """A product ``O = S @ T`` as the stationary kernel walks it: ``S`` (rows x K) stays
    in the PEs, ``T`` (K x cols) streams, each by its first DRAM word and its strides;
    ``C = A @ B`` is ``S = A, T = B, O = C`` or, swapped, ``S = B^T, T = A^T, O = C^T``."""

    rows: int
    cols: int
    s: tuple[int, int, int]
    """The first word of ``S``, its stride between rows, its stride along K."""
    t: tuple[int, int, int]
    """The first word of ``T``, its stride along K, its stride between columns."""
    o: tuple[int, int, int]
    """The first word of ``O``, its stride between rows, between columns."""
    k_lo: int = 0
    """Where along K ``s`` and ``t`` start (after the first chunk, O is added to)."""
    swapped: bool = False
    """Whether O is C^T."""
    split: int = 1
    """L1Bs that share K (1: none): L1B ``g`` of each L2B multiplies the ``g``-th share
    of K, all of them the same columns of O, and the L2 ``reduce`` adds their parts."""

    def from_k(self, k_lo: int) -> Operands:
        """The same product from row ``k_lo`` of K on (of the product from 0)."""
        (s, s_row, s_k), (t_, t_k, t_col) = self.s, self.t
        return replace(self, s=(s + k_lo * s_k, s_row, s_k), t=(t_ + k_lo * t_k, t_k, t_col),
                       k_lo=k_lo)


def operands(pb: Emitter, task: t.TaskOp, transposed: bool, swap: bool) -> Operands:
    """The task's product, with A stationary or (``swap``) B^T."""
    (a, at), _ = task.reads()
    ((c, ct),) = task.writes()
    sa, sc = (pb.strides(v) for v in (a, c))
    base_a = pb.dram[a] + int(np.dot(at.offsets, sa))
    base_b, k_stride, col_stride = operand_b(pb, task, transposed)
    base_c = pb.dram[c] + int(np.dot(ct.offsets, sc))
    rows, cols = ct.sizes[-2], ct.sizes[-1]
    if swap:
        return Operands(cols, rows, (base_b, col_stride, k_stride),
                        (base_a, int(sa[-1]), int(sa[-2])), (base_c, int(sc[-1]), int(sc[-2])),
                        swapped=True)
    return Operands(rows, cols, (base_a, int(sa[-2]), int(sa[-1])), (base_b, k_stride, col_stride),
                    (base_c, int(sc[-2]), int(sc[-1])))


def estimate(pb: Emitter, ops: Operands, depth: int) -> tuple[float, float]:
    """Estimated cycles of the stationary kernel on ``ops``: the most of its MAU cycles,
    its DMA words at the engine's bandwidth, its DMAs at one a step (four per 4
    columns of K of S, a column of ``T`` that is not one run of words one of its own,
    and one per column of ``O``) and its L1 and L2 transfers at one a step (four per 4
    columns of K of S; an L1 broadcast per 4 rows of T and column of an L1B). K split
    over the L1Bs (``ops.split``) takes each L1B's share of the 4-row steps, for
    fewer columns at once. Then, between kernels bound alike (by the DMA engine's
    words, say), the sum of all of them: the less work besides."""
    machine, rows, cols, share = pb.machine, ops.rows, ops.cols, -(-depth // ops.split)
    by_rows = split_rows(pb, rows, cols, depth, ops.split)
    parts = machine.l2bs if by_rows else 1
    passes = -(-rows // (4 * machine.pes_per_l1b * parts))
    span = columns_per_unit(pb, by_rows, ops.split)
    units, width = -(-cols // span), max(4, stationary_width(pb, share))
    steps, pieces = -(-share // 4), -(-share // width)
    mau = passes * units * share * JC
    words = rows * depth + passes * depth * cols + rows * cols
    t_dmas = (machine.l2bs if ops.t[1] == 1 else min(span, cols)) * ops.split
    dmas = passes * (steps * 4 * parts + units * pieces * t_dmas + units * min(span, cols) * parts)
    l1 = passes * (steps * 4 + units * steps * JC)
    l2 = passes * (steps * 4 + units * (pieces + 1))
    bounds = (mau, words / machine.dma_words_per_cycle, 4 * dmas, 4 * l1, 4 * l2)
    return max(bounds), sum(bounds)


def round_trip(pb: Emitter, task: t.TaskOp) -> float:
    """Cycles a consumer of C spends on the DRAM round trip an epilogue saves: C's store
    and load back, each a DMA set-up and C's words."""
    ((_, tile),) = task.writes()
    machine = pb.machine
    return 2 * (machine.dma_setup_cycles + math.prod(tile.sizes) / machine.dma_words_per_cycle)


def cheap_epilogue(pb: Emitter, ops: Operands, depth: int, task: t.TaskOp) -> bool:
    """Whether an epilogue on ``ops``'s accumulators runs its body at most ``JC`` times
    more than the lane kernel would (once per wave): it runs once per accumulator
    column of every unit, where a lane kernel's wave takes a whole machine's lanes.
    Not with K split over the L1Bs (bringing the sums back from L2BM to the PEs for
    the body took the mncore2 GPT-2 step 41,052 -> 41,628 cycles)."""
    machine = pb.machine
    if ops.split > 1:  # the L2 reduce adds C up in L2BM: no accumulator holds it
        return False
    by_rows = split_rows(pb, ops.rows, ops.cols, depth, 1)
    passes = -(-ops.rows // (4 * machine.pes_per_l1b * (machine.l2bs if by_rows else 1)))
    runs = passes * -(-ops.cols // columns_per_unit(pb, by_rows, 1)) * min(JC, ops.cols)
    ((_, tile),) = task.writes()
    return runs <= -(-math.prod(tile.sizes) // (pb.wave * machine.l2bs)) + JC


def columns_per_unit(pb: Emitter, by_rows: bool, split: int) -> int:
    """Columns of O a unit of the stationary kernel computes: ``JC`` per L1B (per L2B
    when the L1Bs split K), on every L2B unless they split the rows."""
    machine = pb.machine
    return (machine.l1b_per_l2b if split == 1 else 1) * JC * (1 if by_rows else machine.l2bs)


def operand_b(pb: Emitter, task: t.TaskOp, transposed: bool) -> tuple[int, int, int]:
    """The DRAM word of B's tile's first element, and B's strides along K and along the
    columns: B's own, or, read through a transpose, the swapped strides of the buffer
    it reads (whose region the task names in its own coordinates)."""
    _, (b, region) = task.reads()
    strides = pb.strides(b)
    base = pb.dram[b] + int(np.dot(region.offsets, strides))
    rows, cols = int(strides[-2]), int(strides[-1])
    return (base, cols, rows) if transposed else (base, rows, cols)


def stationary_width(pb: Emitter, depth: int) -> int:
    """Rows of B a unit of the stationary kernel streams through L2BM and L1BM (a
    multiple of 4: K rounded up, past it zeros)."""
    bl1 = (pb.machine.l1bm_words - pb.l1_top) // 2
    return min(up4(depth), pb.big_area // (pb.machine.l1b_per_l2b * JC),
               bl1 // JC) // 4 * 4


def _zero_past(pb: Emitter, slot: tuple[str, int], valid: int, scratch: tuple[str, int]
               ) -> None:
    """Words ``valid..3`` of ``slot`` to 0 on every PE (they were read past K and may
    hold anything, an inf among them): selected into ``scratch`` (a GRF word, so an LM
    ``slot`` is not read and written in one step), then back."""
    keep = pb.pattern([1.0] * valid + [0.0] * (4 - valid))
    pb.alu("fsel", [keep, slot, pb.constant(0.0)], scratch)
    if scratch != slot:
        pb.alu("fpass", [scratch], slot)


#: Passes (of 8 rows of K) per repeated group of the stationary kernel's inner loop:
#: its broadcasts fill the L1 slot, so smaller groups let the transfers that build
#: later matrices in between.
GROUP = 16
#: Fewer passes than this (64 rows of K) are emitted as plain instructions: a group
#: is placed as a unit, which costs some overlap at its ends, and a short loop gains
#: little from the compact form (in groups from 2 passes on, the mncore2 GPT-2 step
#: took 1.2% more cycles; from 8, 0.7%).
MIN_PAIRS = 8


def lower_matmul_stationary(pb: Emitter, ops: Operands, depth: int,
                            epilogue: Epilogue | None = None) -> None:
    """``O (+)= S[:, :depth] @ T[:depth]`` (adding to O after the first chunk of K,
    which ``ops`` starts at) with S stationary: PE ``p`` of every L1B holds rows
    ``4p..4p+3`` of a block of S as 4x4 matrices in LM (one per 4 columns of K, loaded
    once), and L1B ``g`` computes ``JC`` columns of O at a time: ``T[4kc:4kc+4, j]`` is
    broadcast to its PEs and the MAU adds ``S(4x4) . t`` to column ``j``'s accumulator.
    Rows of S that are runs along K load as they lie (``mma``); an S whose rows are
    not (B^T, swapped) loads 4 of its columns per PE, runs of B's rows, as the
    transposed matrix (``vmm``: ``t . M = M^T t``). One L1 broadcast feeds one MAU
    instruction; columns of T stream through L2BM (strided DMAs, ``width`` rows at a
    time, or one run per L2B where a column is one) while the MAU works; columns of O
    are stored by DMAs. The L2Bs split either the rows (each its own block of S; T
    broadcast) or the columns (S broadcast; each L2B its own columns of T), whichever
    ``split_rows`` expects to be faster. With an ``epilogue`` (the last chunk of K),
    the finished columns go through it instead of to DRAM."""
    rows, cols = ops.rows, ops.cols
    base_s, s_row, s_k = ops.s
    base_t, t_k, t_col = ops.t
    by_k = s_k == 1  # a row of S is a run: 4x4 matrices as they lie
    split = ops.split
    share = depth // split  # the rows of K each L1B multiplies (a multiple of 4 if split)
    width = stationary_width(pb, share)
    per, jc, l2bs = pb.machine.pes_per_l1b, JC, pb.machine.l2bs
    half = pb.lm_limit
    first = pb.grf_first  # past the copy scratches
    vectors = Ring("grf0", pb.grf_first, 4, (pb.machine.grf_words - pb.grf_first) // 4)
    accs = [("grf1", first + 4 * j) for j in range(jc)]
    scratch = ("grf1", first + 4 * jc)
    by_rows = split_rows(pb, rows, cols, depth, split)
    tall = 4 * per  # rows of S an L2B holds
    span = columns_per_unit(pb, by_rows, split)

    def matrix(kc: int) -> tuple[str, int]:
        return ("lm0", "lm1")[kc % 2], half + 16 * (kc // 2)

    for r0 in range(0, rows, tall * (l2bs if by_rows else 1)):
        # (L2B or None for all, first row, rows) of each block of S this pass holds
        parts = [(one_l2b(pb, n), r0 + tall * n, min(tall, rows - r0 - tall * n))
                 for n in range(l2bs) if r0 + tall * n < rows] if by_rows else [
            (None, r0, min(tall, rows - r0))]
        for kc in range(-(-share // 4)):
            # by_k: S[first + 4p + i, 4kc:4kc+4] -> row i of PE p's matrix; else
            # S[first + 4p:first + 4p + 4, 4kc + i] -> its row i (the transpose); split,
            # L1B g's from row g share of K on, from word g sizes[i] of the stage on
            pieces = min(4, parts[0][2]) if by_k else min(4, share - 4 * kc)
            stages = [pb.stage.take(4 * per * split) for _ in range(pieces)]
            sizes = [4 * (-(-(parts[0][2] - i) // 4) if by_k else -(-parts[0][2] // 4))
                     for i in range(pieces)]  # each L1B's words of each piece
            with pb.transfers():  # the 4 rows of one column of matrices: one wait
                for i, stage in enumerate(stages):
                    for n, first, block in parts:
                        if not by_k:
                            load_piece(pb, base_s + first * s_row + (4 * kc + i) * s_k,
                                       stage, block, (None, None) if s_row == 1 else
                                       (1, s_row), n, split, share * s_k, sizes[i])
                        elif i < block:
                            load_piece(pb, base_s + (first + i) * s_row + 4 * kc, stage,
                                       4 * -(-(block - i) // 4), (4, 4 * s_row), n, split,
                                       share, sizes[i])
            space, at_ = matrix(kc)
            for i, stage in enumerate(stages):
                l1 = pb.l1.take()
                pb.emit(m.L2Op(0, "bcast" if split == 1 else "scatter", [m.ref(*stage)],
                               m.ref(*l1), sizes[i]))
                pb.emit(m.L1Op(0, "scatter", [m.ref(*l1)], m.ref(space, at_ + 4 * i)))
                if by_k and 4 * kc + 4 > share:  # the words past K are the next row's
                    _zero_past(pb, (space, at_ + 4 * i), share - 4 * kc, scratch)
            for i in range(pieces if not by_k else 4, 4):  # rows of S^T past K
                pb.alu("fzero", [], (space, at_ + 4 * i))
        # Units of (columns, rows of T): the next unit's DMAs are emitted before
        # this unit's work, so the engine's queue runs ahead of the MAU.
        units = [(c0, k0) for c0 in range(0, cols, span) for k0 in range(0, share, width)]
        areas = {0: load_columns(pb, base_t, (t_k, t_col), cols, share, width, *units[0],
                                 by_rows, split)}
        for u, (c0, k0) in enumerate(units):
            if u + 1 < len(units):
                areas[u + 1] = load_columns(pb, base_t, (t_k, t_col), cols, share, width,
                                            *units[u + 1], by_rows, split)
            live = [jl for jl in range(jc) if c0 + jl < cols]  # columns of L1B 0
            if k0 == 0 and ops.k_lo == 0:
                for jl in live:
                    pb.emit(m.AluOp(0, "fzero", [], m.ref(*accs[jl])))
            elif k0 == 0:  # a later chunk of K adds to what the earlier ones stored
                columns_of_c(pb, parts, span, c0, cols, ops.o, by_rows, accs, live,
                             store=False)
            area, kw = areas.pop(u), min(width, share - k0)

            full = kw // 4  # the 4-row steps with no words past K
            lead = min(full, (k0 // 4) % 2)  # a group starts on lm0's matrix
            pairs = (full - lead) // 2
            unit = _Unit(area, kw, k0, live, vectors, accs, "mma" if by_k else "vmm", matrix)
            if pairs < MIN_PAIRS:  # a short loop: plain instructions schedule tighter
                lead, pairs = lead + 2 * pairs, 0
            for kc in range(lead):
                for op in _k_step(pb, unit, kc):
                    pb.emit(op)
            for first in range(0, pairs, GROUP):
                kc = lead + 2 * first
                pb.repeat(_k_step(pb, unit, kc, True) + _k_step(pb, unit, kc + 1, True),
                          min(GROUP, pairs - first))
            for kc in range(lead + 2 * pairs, -(-kw // 4)):
                for op in _k_step(pb, unit, kc):
                    pb.emit(op)
            if k0 + width < share:
                continue
            if epilogue is not None and split == 1:
                apply_epilogue(pb, epilogue, EpilogueUnit(parts, span, c0, cols, by_rows,
                                                          ops.swapped), accs, live)
                continue
            columns_of_c(pb, parts, span, c0, cols, ops.o, by_rows, accs, live, store=True,
                         split=split)


def load_piece(pb: Emitter, address: int, stage: tuple[str, int], words: int,
               runs: tuple[int | None, int | None], l2b: int | None, split: int,
               pitch: int, size: int) -> None:
    """One piece of S's matrices into ``stage``: ``words`` from DRAM ``address`` (runs
    of ``runs``), or, K split over ``split`` L1Bs, L1B ``g``'s from ``g pitch`` words
    on into ``g size`` words on of the stage: one DMA of ``split`` rows where the
    pieces follow one another in the stage, else one each."""
    if split == 1:
        pb.dma("load", m.ref("dram", address), m.ref(*stage), words, *runs, l2b)
    elif words == size:
        pb.dma("load", m.ref("dram", address), m.ref(*stage), words * split, *runs, l2b,
               rows=split, pitch=pitch)
    else:
        for g in range(split):
            pb.dma("load", m.ref("dram", address + g * pitch),
                   m.ref(stage[0], stage[1] + g * size), words, *runs, l2b)


@dataclass(frozen=True)
class _Unit:
    """A unit of the stationary kernel's inner loop: T's rows ``k0..k0 + kw`` in L1BM
    from ``area`` (``[column][row]``), the columns ``live`` of L1B 0, their vector
    ring and accumulators, the MAU kind and where the matrix of each 4 rows of K is."""

    area: tuple[str, int]
    kw: int
    k0: int
    live: list[int]
    vectors: Ring
    accs: list[tuple[str, int]]
    kind: str
    matrix: Callable[[int], tuple[str, int]]


def _k_step(pb: Emitter, unit: _Unit, kc: int, repeated: bool = False) -> list[m.InstructionOp]:
    """Columns ``live`` times rows ``4 kc..4 kc + 3`` of the unit: T's 4 words broadcast,
    the matrix multiply-added (past K, the words are selected away in between: emitted
    here, and nothing returned). ``repeated``: the body of a group of 2 kc a pass (T's
    words advance 8 a pass, the matrices 16 in each LM)."""
    strides = ([8, 0], [16, 0, 0, 0]) if repeated else (None, None)
    area, kw = unit.area, unit.kw
    found: list[m.InstructionOp] = []
    for jl in unit.live:
        vector = unit.vectors.take()
        found.append(m.L1Op(0, "bcast", [m.ref(area[0], area[1] + jl * kw + 4 * kc)],
                            m.ref(*vector), strides=strides[0]))
        if 4 * kc + 4 > kw:  # past K: the next column's words, or stale
            pb.emit(found.pop())
            _zero_past(pb, vector, kw - 4 * kc, vector)
        found.append(m.MauOp(0, unit.kind, [m.ref(*unit.matrix(unit.k0 // 4 + kc)),
                                            m.ref(*vector), m.ref(*unit.accs[jl])],
                             m.ref(*unit.accs[jl]), strides=strides[1]))
        if 4 * kc + 4 > kw:
            pb.emit(found.pop())
    return found


def split_rows(pb: Emitter, rows: int, cols: int, depth: int, split: int = 1) -> bool:
    """Whether the L2Bs split C's rows (A loaded once; B once per pass of ``l2bs``
    row blocks) rather than its columns (B once per row block): the smaller of the
    estimated max(DMA cycles, MAU cycles), then the fewer MAU cycles."""
    machine, jc = pb.machine, JC
    if machine.l2bs == 1:
        return False

    def cost(by_rows: bool) -> tuple[float, float]:
        passes = -(-rows // (4 * machine.pes_per_l1b * (machine.l2bs if by_rows else 1)))
        span = columns_per_unit(pb, by_rows, split)
        mau = passes * -(-cols // span) * (depth // split) * jc  # 4-row steps x jc
        words = rows * depth + passes * depth * cols + rows * cols
        return max(mau, words / machine.dma_words_per_cycle), mau

    return cost(True) < cost(False)


def load_columns(pb: Emitter, base_b: int, sb: tuple[int, int], cols: int, depth: int,
                 width: int, c0: int, k0: int, shared: bool, split: int = 1
                 ) -> tuple[str, int]:
    """``B[k0:k0+width, c0 + (blocks n + g) JC + jl]`` to L1B ``g`` of L2B ``n`` as
    ``[jl][row]``, ``width`` words a column (past K, the next column's: selected away
    where read): each L2B gets its own columns (DMAs to one L2B each), or with
    ``shared`` every L2B the same ones (``n = 0``, broadcast DMAs). A column is a
    strided DMA, or, read through a transpose (``sb[0] == 1``), a run: an L2B's columns
    are then one DMA. With K split over ``split`` L1Bs (``depth`` rows each), L1B
    ``g`` gets ``B[g depth + k0.., c0 + n JC + jl]``."""
    kw, jc = min(width, depth - k0), JC
    stage = pb.stage.take(pb.machine.l1b_per_l2b * jc * kw)
    per_l2b = (pb.machine.l1b_per_l2b if split == 1 else 1) * jc
    with pb.transfers():
        for n in range(1 if shared else pb.machine.l2bs):
            first = c0 + n * per_l2b
            count = min(per_l2b, cols - first)
            l2b = None if shared else one_l2b(pb, n)
            for g in range(split if count > 0 else 0):
                top = base_b + (g * depth + k0) * sb[0] + first * sb[1]
                at = stage[1] + g * jc * kw  # L1B g's words
                if sb[0] == 1:
                    pb.dma("load", m.ref("dram", top), m.ref(stage[0], at), count * kw, kw,
                           sb[1], l2b)
                    continue
                for local in range(count):
                    pb.dma("load", m.ref("dram", top + local * sb[1]),
                           m.ref(stage[0], at + local * kw), kw, 1, sb[0], l2b)
    area = pb.b_areas.take()
    pb.emit(m.L2Op(0, "scatter", [m.ref(*stage)], m.ref(*area), jc * kw))
    return area


def lower_matmul_streaming(pb: Emitter, task: t.TaskOp, transposed: bool = False) -> None:
    """``C = A @ B`` on the MAU (any K): each PE owns one row and 4 columns of C and adds
    ``a(4) . B(4x4)`` over K in chunks of 4 (``vmm``). The PEs of one L1B share a
    block of 4 columns, so that block's 4x4 piece of B is broadcast to them; each PE
    gets its own piece of A's row. Missing rows and columns are zeros."""
    (a, at), _ = task.reads()
    ((c, ct),) = task.writes()
    rows, cols_all, depth = ct.sizes[-2], ct.sizes[-1], at.sizes[-1]
    sa, sc = (pb.strides(v) for v in (a, c))
    base_a = pb.dram[a] + int(np.dot(at.offsets, sa))
    base_b, k_stride, col_stride = operand_b(pb, task, transposed)
    base_c = pb.dram[c] + int(np.dot(ct.offsets, sc))
    per = pb.machine.pes_per_l1b
    blocks = pb.machine.l1b_per_l2b
    zeros = pb.pooled([0.0] * 4)
    row_blocks, col_blocks = -(-rows // per), -(-cols_all // 4)
    groups = [(jb, rb) for jb in range(col_blocks) for rb in range(row_blocks)]
    pb.new_wave()
    matrix, acc = ("grf0", pb.grf_first), ("grf1", pb.grf_first)
    for first in range(0, len(groups), blocks):
        wave = groups[first:first + blocks]
        pb.emit(m.AluOp(0, "fzero", [], m.ref(*acc)))
        for kc in range(0, depth, 4):
            width = min(4, depth - kc)
            stage_m = pb.stage.take(16 * blocks)[1]
            stage_v = pb.stage.take(4 * per * blocks)[1]
            with pb.transfers():  # this piece of B and of A: one wait
                for gi, (jb, _) in enumerate(wave):  # B[kc:kc+4, 4jb:4jb+4], zero padded
                    target = stage_m + 16 * gi
                    load_padded(pb, base_b + kc * k_stride + 4 * jb * col_stride,
                                (k_stride, col_stride), width, min(4, cols_all - 4 * jb),
                                target, zeros)
                    if width < 4:
                        pb.dma("load", m.ref("dram", zeros),
                                 m.ref("l2bm", target + 4 * width), 4 * (4 - width), 4, 0)
                for gi, (_, rb) in enumerate(wave):  # A[r, kc:kc+4] for each PE's row
                    # past K, the 4 words run into the next row (or buffer): one strided DMA,
                    # the extra words then set to zero by a select (they may be anything)
                    count = min(per, rows - rb * per)
                    source = m.ref("dram", base_a + int(rb * per * sa[-2] + kc * sa[-1]))
                    target = m.ref("l2bm", stage_v + 4 * per * gi)
                    if sa[-1] == 1:
                        pb.dma("load", source, target, 4 * count, 4, int(sa[-2]))
                    else:  # a strided view: each row's 4 words one by one
                        pb.dma("load", source, target, 4 * count, 1, int(sa[-1]),
                               rows=count, pitch=int(sa[-2]))
            l1_m, l1_v = pb.l1.take(), pb.l1.take()
            pb.emit(m.L2Op(0, "scatter", [m.ref("l2bm", stage_m)], m.ref(*l1_m),
                             16))
            for i in range(4):
                pb.emit(m.L1Op(0, "bcast", [m.ref(l1_m[0], l1_m[1] + 4 * i)],
                                 m.ref(matrix[0], matrix[1] + 4 * i)))
            pb.emit(m.L2Op(0, "scatter", [m.ref("l2bm", stage_v)], m.ref(*l1_v),
                             4 * per))
            vector = pb.lm_slot()
            pb.emit(m.L1Op(0, "scatter", [m.ref(*l1_v)], m.ref(*vector)))
            if width < 4:  # past K: the next row's words
                _zero_past(pb, vector, width, ("grf1", pb.grf_first + 4))  # past acc
            pb.emit(m.MauOp(0, "vmm", [m.ref(*matrix), m.ref(*vector),
                                         m.ref(*acc)], m.ref(*acc)))
        stage_c, l1_c = pb.stage.take(4 * per * blocks)[1], pb.l1.take()
        pb.emit(m.L1Op(0, "gather", [m.ref(*acc)], m.ref(*l1_c)))
        pb.emit(m.L2Op(0, "gather", [m.ref(*l1_c)], m.ref("l2bm", stage_c),
                         4 * per))
        with pb.transfers():
            for gi, (jb, rb) in enumerate(wave):
                cols = min(4, cols_all - 4 * jb)
                count = min(per, rows - rb * per)
                target = base_c + int(rb * per * sc[-2] + 4 * jb * sc[-1])
                source = m.ref("l2bm", stage_c + 4 * per * gi)
                if cols == 4:
                    pb.dma("store", source, m.ref("dram", target), 4 * count, 4,
                             int(sc[-2]))
                else:
                    for p in range(count):
                        pb.dma("store", m.ref("l2bm", stage_c + 4 * per * gi + 4 * p),
                                 m.ref("dram", target + int(p * sc[-2])), cols)


def load_padded(pb: Emitter, source: int, strides: tuple[int, int], rows: int, width: int,
                target: int, zeros: int) -> None:
    """``rows`` rows of ``width`` words (``strides``: between rows, between a row's
    words) into the 4-word slots of L2BM from ``target``, each padded with zeros (from
    ``zeros``)."""
    between, along = strides
    if width == 4 and along == 1:
        pb.dma("load", m.ref("dram", source), m.ref("l2bm", target), 4 * rows,
               4, between)
        return
    for r in range(rows):
        pb.dma("load", m.ref("dram", source + r * between), m.ref("l2bm", target + 4 * r),
               width, *((None, None) if along == 1 else (1, along)))
        if width < 4:
            pb.dma("load", m.ref("dram", zeros), m.ref("l2bm", target + 4 * r + width),
                   4 - width)
