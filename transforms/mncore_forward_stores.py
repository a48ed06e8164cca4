"""``mncore-forward-stores``: data handed from task to task on chip, not through DRAM.

convert-task-to-mncore lowers each task on its own: a task stores its result from an
L2BM staging area to DRAM, and the next task loads it back into its own staging area.
Where the words a load brings are still in L2BM, exactly where a store took them from,
the load is not needed: its readers read them in place. Then a store whose words no
load reads any more, and which is no program output, is not needed either.

A load ``dram[e_i] -> l2bm[Y + i]`` may be forwarded when, for every ``i``, the last
store to ``dram[e_i]`` read it from ``l2bm[X + i]`` (one shift ``X - Y`` for all) and,
for a load to every L2B, that word held the same value in every L2B's copy
(*replicated*: written from replicated data by instructions that act alike on every
L2B, or loaded to all of them), or, for a load to one L2B, the store read that L2B's
copy (or a replicated word). A reader of L2BM reads the sources instead (``l2bm[X..]``)
when every word it reads, in every copy it reads (an L2 instruction reads all of them,
a DMA one), was written by such loads, all with the same shift, and no source word has
been written since its store; an L2 instruction's words that no later store can see
(``mncore_forward_stores_demand``: a matmul's operand scattered to every L2B, of which
one holds rows) are not asked for, and what it then writes is no longer *replicated*.
A load goes when all its readers (until its words are next written) do, and a wait
goes when it is left with no transfer. The analysis is one
sweep over the program in order (the input's order is its meaning: the pass runs
before mncore-schedule), with a version per L2BM word and L2B copy: a few numpy
operations per instruction. Strided or repeated sources and forwarded data stored
again are left alone (conservative, never wrong).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.passes import ModulePass

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.values import paused_gc
from mncore_ir.transforms.mncore_forward_stores_demand import demanded_reads


@dataclass
class _Candidate:
    """A load that may be forwarded: its shift ``X - Y``, and whether every reader so
    far may read its sources instead."""

    load: m.DmaOp
    shift: int
    ok: bool = True


def _span(ref: m.RefAttr, n: int) -> slice:
    return slice(ref.address.data, ref.address.data + n)


def _words(span: slice) -> np.ndarray:
    return np.arange(span.start, span.stop)


def forward_stores(program: m.ProgramOp) -> tuple[int, int]:
    """Forward what can be in ``program`` (unscheduled); returns (loads, stores) removed."""
    machine = program.target
    dram_words = max([1] + [t.at.address.data + math.prod(t.type.get_shape())
                            for t in program.body.block.ops if isinstance(t, m.TensorOp)]
                     + [op.dram.address.data + op.dram_extent() for op in program.units()
                        if isinstance(op, m.DmaOp)])
    l2bm, l2bs = machine.size("l2bm"), machine.l2bs
    everywhere = slice(None)
    replicated = {space: np.ones(machine.size(space), bool) for space in
                  ("lm0", "lm1", "grf0", "grf1", "l1bm", "l2bm")}
    # per L2BM word and L2B copy: bumped by every write to that copy
    version = np.zeros((l2bm, l2bs), np.int64)
    alias = np.full((l2bm, l2bs), -1, np.int64)  # the candidate whose load wrote it
    expected = np.zeros((l2bm, l2bs), np.int64)  # its source's version when stored
    stored_from = np.full(dram_words, -1, np.int64)  # the L2BM word last stored there
    stored_copy = np.zeros(dram_words, np.int64)  # from which L2B's copy
    stored_version = np.zeros((dram_words, l2bs), np.int64)  # every copy's, then
    stored_replicated = np.zeros(dram_words, bool)
    candidates: list[_Candidate] = []
    renames: list[tuple[m.InstructionOp, int]] = []  # readers that may read the sources

    demanded = demanded_reads(program)
    partial: set[m.InstructionOp] = set()  # readers renamed for their demanded words

    def read_l2bm(op: m.InstructionOp, words: slice, copies: int | slice) -> bool:
        """Check a read of L2BM (``copies``: one L2B's or all) against the loads being
        forwarded: it may read their sources instead if every word it reads that
        carries data (a scatter's ``lanes``) and can reach a store (``demanded``), in
        every copy it reads, was written by them, all shifted alike, and their sources
        are unchanged; else their loads must stay. True if it reads one."""
        owners = alias[words, copies]
        if (owners < 0).all():
            return False
        live = op.live(machine) if isinstance(op, m.L2Op) else None
        demand = demanded.get(op) if isinstance(op, m.L2Op) else None
        if demand is not None and not demand.all():
            live = demand if live is None else live & demand
        mine = owners if live is None else owners[live]
        if (mine < 0).all():  # no word it reads to any effect was loaded: left alone
            return False
        shifts = {candidates[int(o)].shift if o >= 0 else None for o in mine.flat}
        shift = next(iter(shifts)) if len(shifts) == 1 else None
        # read in place, the whole read moves: it must stay inside L2BM
        if shift is not None and words.start + shift >= 0 and words.stop + shift <= l2bm:
            sources = slice(words.start + shift, words.stop + shift)
            same = version[sources, copies] == expected[words, copies]
            if (same if live is None else same[live]).all():
                renames.append((op, shift))
                if demand is not None and not demand.all():
                    partial.add(op)
                return True
        for owner in set(owners[owners >= 0].tolist()):
            candidates[owner].ok = False
        return True

    # a repeated group's instructions (ALU, MAU, L1) touch neither L2BM nor DRAM: only
    # which of their words are replicated matters, per iteration
    for _, op, _, reads, writes in program.issues():
        alike = True  # every source replicated, so the result is too
        aliased = False
        one = op.block if isinstance(op, m.DmaOp) else None  # one L2B's copy, or all
        for space, first, n, _ in reads:
            if space == "fwd" or space == "dram":
                alike = alike and space == "dram"
                continue
            words = slice(first, first + n)
            if space == "l2bm":  # a store without an L2B reads L2B 0's copy
                copy = (one or 0) if isinstance(op, m.DmaOp) else everywhere
                aliased = read_l2bm(op, words, copy) or aliased
                # renamed for some copies' words only: the others' values change
                if one is not None or op in partial:
                    alike = False
            alike = alike and bool(replicated[space][words].all())
        if isinstance(op, m.AluOp) and op.mask is not None:  # keeps some old words
            alike = alike and bool(replicated[op.destination().space.data][
                _span(op.destination(), 4)].all())
        if isinstance(op, m.DmaOp) and op.kind.data == "store":
            dram = op.dram_words()
            source = _span(op.srcs.data[0], op.count)
            stored_from[dram] = -1 if aliased else _words(source)
            stored_copy[dram] = one or 0
            stored_version[dram] = version[source]
            stored_replicated[dram] = replicated["l2bm"][source]
            continue
        copies = everywhere if one is None else one
        for space, first, n, _ in writes:
            words = slice(first, first + n)
            if space == "l2bm":
                version[words, copies] += 1
                alias[words, copies] = -1
            replicated[space][words] = alike if not isinstance(op, m.DmaOp) else (
                one is None)
        if isinstance(op, m.DmaOp):  # a load: forwardable?
            dram = op.dram_words()
            source = stored_from[dram]
            words = _span(op.destination(), op.count)
            if (source < 0).any() or not (np.diff(source) == 1).all():
                continue
            # to every L2B: sources alike in every copy; to one: stored from its copy
            if not (stored_replicated[dram].all() if one is None else
                    (stored_replicated[dram] | (stored_copy[dram] == one)).all()):
                continue
            shift = int(source[0]) - words.start
            # its own write changes the sources it overlaps, unless it rewrites them in
            # place (shift 0) with the values they hold
            mine = (source >= words.start) & (source < words.stop)
            if one is None:
                mine = mine[:, None]  # a version per copy
            if (shift == 0 or not mine.any()) and (
                    version[source, copies] - mine == stored_version[dram][:, copies]).all():
                alias[words, copies] = len(candidates)
                expected[words, copies] = version[source, copies]
                candidates.append(_Candidate(op, shift))
    for reader, shift in renames:
        (src,) = reader.srcs.data
        reader.srcs = ArrayAttr([m.ref("l2bm", src.address.data + shift)])
    loads = [c for c in candidates if c.ok]
    for candidate in loads:
        candidate.load.detach()
        candidate.load.erase()
    stores = _dead_stores(program, dram_words)
    _drop_idle_waits(program)
    return len(loads), stores


def _dead_stores(program: m.ProgramOp, dram_words: int) -> int:
    """Remove the stores whose words no later load reads and no output holds."""
    live = np.zeros(dram_words, bool)
    for tensor in program.tensors("output"):
        at = tensor.at.address.data
        live[at:at + math.prod(tensor.type.get_shape())] = True
    dead = []
    for op in reversed(program.units()):  # repeated groups hold no DMAs
        if not isinstance(op, m.DmaOp):
            continue
        words = op.dram_words()
        if op.kind.data == "load":
            live[words] = True
        elif live[words].any():
            live[words] = False
        else:
            dead.append(op)
    for op in dead:
        op.detach()
        op.erase()
    return len(dead)


def _drop_idle_waits(program: m.ProgramOp) -> None:
    """Remove each wait that no DMA issued since the last wait on its tag waits for."""
    issued: set[int] = set()
    for op in program.units():
        if isinstance(op, m.DmaOp):
            issued.add(op.tag_number())
        elif isinstance(op, m.WaitOp):
            if op.tag_number() in issued:
                issued.discard(op.tag_number())
            else:
                op.detach()
                op.erase()


@dataclass(frozen=True)
class MNCoreForwardStoresPass(ModulePass):
    """Hand data between tasks in L2BM instead of through DRAM (see the module)."""

    name = "mncore-forward-stores"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [o for o in op.walk() if isinstance(o, m.ProgramOp)]:
            with paused_gc():
                forward_stores(program)
