"""``mncore-schedule``: a static list scheduler for ``mncore`` programs.

The input's instruction order is its meaning (steps there only need to be increasing);
the pass gives every instruction the earliest step that keeps that meaning and obeys
the machine: one instruction per slot per step, the LM/GRF port rules, and the
latencies — a value is read only once its writer's latency has passed, DMA data only
after the wait on its tag, and a wait is placed once its transfers are done (so it does
not stall). The DMA engine's queue is the DMAs' issue order: a DMA may be placed before
others already placed only where it delays none of them (:class:`DmaQueue`), so the
finish the scheduler gave each DMA, and the steps of the waits placed by them, hold.
Instructions are placed in critical-path order (longest latency-weighted path to the
end first), each at its earliest free step.

Dependencies come from the words instructions touch, per memory space: read after
write (the writer's latency; after the wait for DMA writes), write after read (same
step or later: a bundle reads before it writes) and write after write (a later step).
A DMA owns the words it reads and writes until the wait on its tag (or on a later DMA's),
except from later DMAs: the one engine moves DMAs' words in their issue order, so a
load of the words a store writes, or into the L2BM words a store reads, is issued right
after the store, not after its wait. The forwarding
operand ``fwd`` ties two instructions to adjacent steps and is not
accepted here.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.dialects.values import paused_gc
from mncore_ir.transforms.mncore_schedule_histories import (
    Interval,
    PerSpace,
    Segments,
    WordHistories,
)


class ScheduleError(DiagnosticException):
    """A program the scheduler cannot place."""


#: space, words (intervals; for DRAM every word, a DMA's strided runs being many), the
#: one L2B or None: all
Access = tuple[str, "list[Interval] | np.ndarray", int | None]


def accesses(op: m.InstructionOp | m.RepeatOp, machine: Machine
             ) -> tuple[list[Access], list[Access]]:
    """The words ``op`` reads and writes; a repeated group's as the hull of each
    reference over its iterations."""
    if isinstance(op, m.RepeatOp):
        found: tuple[list[Access], list[Access]] = ([], [])
        reach = op.times - 1
        for body in op.group():
            for side, pieces in zip(found, body_accesses(body, machine), strict=True):
                side.extend((space, [(lo, hi + stride * reach)], None)
                            for space, lo, hi, stride in pieces)
        return found
    reads, writes = op.operands_of(machine)
    block = None
    if isinstance(op, m.DmaOp):  # one L2B's copy of L2BM, or all for a plain load
        block = op.block if op.block is not None or op.kind.data == "load" else 0
    found = (
        [(r.space.data, [(r.address.data, r.address.data + n)],
          block if r.space.data == "l2bm" else None) for r, n in reads],
        [(r.space.data, [(r.address.data, r.address.data + n)],
          block if r.space.data == "l2bm" else None) for r, n in writes])
    if isinstance(op, m.DmaOp):  # the DRAM side may be strided
        side = found[0] if op.kind.data == "load" else found[1]
        side[0] = ("dram", op.dram_words(), None)
    return found


Piece = tuple[str, int, int, int]  # space, first word, past the last, stride


def body_accesses(op: m.InstructionOp, machine: Machine) -> tuple[list[Piece], list[Piece]]:
    """(reads, writes) of an instruction of a repeated group in its iteration 0, each
    with its reference's stride."""
    reads, writes = op.strided_operands(machine)
    return ([(sp, a, a + n, st) for sp, a, n, st in reads],
            [(sp, a, a + n, st) for sp, a, n, st in writes])


def touch(group: m.RepeatOp, pieces: list[tuple[int, Piece]], other: Node, last: bool,
          span: int) -> int:
    """The steps from ``group``'s start to its first (``last``: its last) issue that
    touches a word ``other`` reads or writes (a dependence holds from, or until, there);
    ``pieces``: (step in the body, access) of its instructions' accesses; ``span``: its
    :func:`extent`."""
    period, count = group.every, group.times
    found = 0 if last else span
    for rel, (space, lo, hi, stride) in pieces:
        for other_space, intervals, _ in [*other.reads, *other.writes]:
            if other_space != space:
                continue
            for x, y in intervals:  # iterations i with [lo + i s, hi + i s) meeting [x, y)
                first = 0 if stride == 0 else max(0, (x - hi) // stride + 1)
                final = count - 1 if stride == 0 else min(count - 1, -(-(y - lo) // stride) - 1)
                if first > final or not (lo + first * stride < y and x < hi + first * stride):
                    continue
                found = max(found, final * period + rel) if last else min(
                    found, first * period + rel)
    return found


def _meet(a: int | None, b: int | None) -> bool:
    """Whether accesses to two L2Bs' copies (``None``: all) touch a common copy."""
    return a is None or b is None or a == b


@dataclass
class Node:
    op: m.InstructionOp | m.RepeatOp
    reads: list[Access]
    writes: list[Access]
    preds: list[tuple[int, int]] = field(default_factory=list)  # (node, minimum distance)
    succs: list[tuple[int, int]] = field(default_factory=list)
    priority: int = 0
    step: int = -1


def latency(op: m.InstructionOp | m.RepeatOp, machine: Machine) -> int:
    """Steps from an instruction's issue until its result is ready; for a repeated
    group, from its start until its last result is (so a reader after the group
    waits for all of it)."""
    if isinstance(op, m.RepeatOp):
        return extent(op) + max(latency(b, machine) for b in op.group())
    return {"alu": machine.alu_latency, "mau": machine.alu_latency, "l1": machine.l1_latency,
            "l2": machine.l2_latency, "dma": 0, "ctrl": 0}[op.SLOT]


def extent(op: m.InstructionOp | m.RepeatOp) -> int:
    """Steps from a unit's issue to its last issue: 0 but for a repeated group."""
    return op.last_step() - op.at if isinstance(op, m.RepeatOp) else 0


def dma_steps(op: m.InstructionOp, machine: Machine) -> int:
    """Steps from a DMA's issue until its words have arrived."""
    cycles = machine.dma_setup_cycles + -(-op.count // machine.dma_words_per_cycle)
    return -(-cycles // 4)


def build_graph(ops: Sequence[m.InstructionOp | m.RepeatOp], machine: Machine) -> list[Node]:
    """Nodes with their dependency edges. Per memory word, the last writer and the
    readers since it are enough: older accesses are ordered through them."""
    nodes = []
    for op in ops:
        if not isinstance(op, m.RepeatOp) and any(r.space.data == "fwd" for r in op.srcs.data):
            raise ScheduleError(f"mncore-schedule: step {op.at}: {op.name} reads fwd, which "
                                "ties it to the previous step; write the value to a memory")
        nodes.append(Node(op, *accesses(op, machine)))
    extents = [extent(node.op) for node in nodes]  # a group's walks its body: once
    latencies = [latency(node.op, machine) for node in nodes]
    is_dma = [isinstance(node.op, m.DmaOp) for node in nodes]
    waiting_dma: dict[int, list[int]] = {}  # tag -> DMA nodes not yet waited for
    waited_by: dict[int, int] = {}  # DMA node -> its wait node
    # Per word, the writers and readers since the last write that covered them: (node,
    # L2B or None); L2BM words have a copy per L2B, which DMAs may touch one at a time.
    # Words an instruction touches together share one tuple, so each distinct history
    # is looked at (and extended) once per access.
    writers: dict[str, Segments | WordHistories] = PerSpace()
    readers: dict[str, Segments | WordHistories] = PerSpace()
    pieces: dict[int, list[tuple[int, Piece]]] = {}  # a group's accesses, by its node

    def group_pieces(k: int) -> list[tuple[int, Piece]]:
        if k not in pieces:
            pieces[k] = [(op.at, piece) for op in nodes[k].op.group()  # type: ignore[union-attr]
                         for side in body_accesses(op, machine) for piece in side]
        return pieces[k]

    def edge(a: int, b: int, distance: int) -> None:
        nodes[b].preds.append((a, distance))
        nodes[a].succs.append((b, distance))

    def after(i: int, j: int, distance: int, what: str) -> tuple[int, int]:
        """The constraint ``j`` gets from an earlier access by ``i``: an in-flight DMA
        owns its words until the wait on its tag."""
        if isinstance(nodes[i].op, m.DmaOp):
            if i not in waited_by:
                raise ScheduleError(f"mncore-schedule: step {nodes[j].op.at}: "
                                    f"{nodes[j].op.name} {what} the words of the DMA at step "
                                    f"{nodes[i].op.at} before waiting for it")
            return waited_by[i], 0
        return i, distance

    for j, node in enumerate(nodes):
        if isinstance(node.op, m.WaitOp):
            tag = node.op.tag_number()
            for i in waiting_dma.pop(tag, []):
                edge(i, j, dma_steps(nodes[i].op, machine))
                waited_by[i] = j
            continue
        found: dict[tuple[int, str], int] = {}  # (earlier node, what j does) -> distance
        queued: set[int] = set()  # earlier DMAs touching words this DMA touches
        dma = is_dma[j]
        for space, words, block in node.reads:
            for history in writers[space].distinct(words):
                for i, other in history:
                    if not _meet(block, other):
                        continue
                    if dma and is_dma[i]:
                        queued.add(i)
                    else:
                        found[(i, "reads")] = latencies[i]
        for space, words, block in node.writes:
            for history in writers[space].distinct(words):
                for i, other in history:
                    if not _meet(block, other):
                        continue
                    if dma and is_dma[i]:
                        queued.add(i)
                    else:
                        found[(i, "overwrites")] = 1 + extents[i]
            for history in readers[space].distinct(words):
                for i, other in history:
                    if not _meet(block, other):
                        continue
                    if dma and is_dma[i]:
                        queued.add(i)
                    else:
                        found.setdefault((i, "overwrites"), extents[i])
        # the engine moves DMAs' words in their issue order: a DMA after another that
        # touches its words needs only to be issued after it, not after its wait
        needs: dict[int, int] = dict.fromkeys(queued, 1)
        for (i, what), distance in found.items():
            source, gap = after(i, j, distance, what)
            if isinstance(nodes[i].op, m.RepeatOp):  # after the last issue touching j's words
                gap -= extents[i] - touch(nodes[i].op, group_pieces(i), node, True,
                                          extents[i])
            if isinstance(node.op, m.RepeatOp):  # from the first issue touching i's words
                gap -= touch(node.op, group_pieces(j), nodes[i], False, extents[j])
            needs[source] = max(needs.get(source, gap), gap)
        for i, gap in needs.items():
            if i != j:
                edge(i, j, gap)
        for space, words, block in node.reads:
            readers[space].extend(words, lambda h, b=block, j=j: (*h, (j, b)))
        for space, words, block in node.writes:
            if block is None:
                writers[space].assign(words, ((j, None),))
                readers[space].assign(words, ())
            else:  # older accesses of other L2Bs' copies stay live
                writers[space].extend(words, lambda h, b=block, j=j: (
                    *(w for w in h if w[1] != b), (j, b)))
                readers[space].extend(words, lambda h, b=block: tuple(
                    r for r in h if r[1] != b))
        if isinstance(node.op, m.DmaOp):
            waiting_dma.setdefault(node.op.tag_number(), []).append(j)
    if waiting_dma:
        raise ScheduleError(f"mncore-schedule: DMA tags {sorted(waiting_dma)} are never "
                            "waited for")
    for node in reversed(nodes):  # successors come later in program order
        node.priority = max((nodes[s].priority + d for s, d in node.succs), default=0) + 1
    return nodes


class Reservations:
    """What each step already uses: slots, PE memory ports, LM writes and reads. With a
    ``period``, steps are taken modulo it: the table of one iteration of a repeated
    group whose iterations start ``period`` steps apart (a modulo schedule)."""

    def __init__(self, period: int | None = None) -> None:
        self.period = period
        self.slots: set[tuple[int, str]] = set()
        self.ports: dict[tuple[int, str], list[str]] = {}
        self.skip: dict[str, dict[int, int]] = defaultdict(dict)
        """Per slot, a taken step -> a later step to look at next (path-compressed): the
        search for a free step skips a long run of taken ones at once."""

    def _key(self, step: int) -> int:
        return step % self.period if self.period else step

    def free_from(self, slot: str, step: int) -> int:
        """The first step from ``step`` whose ``slot`` is free."""
        if self.period:
            while (step % self.period, slot) in self.slots:
                step += 1
            return step
        skip = self.skip[slot]
        path = []
        while step in skip:
            path.append(step)
            step = skip[step]
        for taken in path:
            skip[taken] = step
        return step

    def fits(self, node: Node, step: int, machine: Machine) -> bool:
        key = self._key
        if (key(step), node.op.SLOT) in self.slots:
            return False
        uses = [(a[0], "read") for a in node.reads] + [(a[0], "write") for a in node.writes]
        for space, direction in uses:
            if space.startswith("lm"):
                if self.ports.get((key(step), space)):
                    return False
                if sum(1 for s, _ in uses if s == space) > 1:
                    return False
                gap = machine.lm_write_blocks_reads
                if direction == "read" and any(
                        "write" in self.ports.get((key(step - k), space), ()) for k in
                        range(1, gap + 1)):
                    return False
                if direction == "write" and any(
                        "read" in self.ports.get((key(step + k), space), ()) for k in
                        range(1, gap + 1)):
                    return False
            elif space.startswith("grf"):
                taken = self.ports.get((key(step), space), [])
                if taken.count(direction) + sum(
                        1 for s, d in uses if s == space and d == direction) > 1:
                    return False
        return True

    def take(self, node: Node, step: int) -> None:
        self.slots.add((self._key(step), node.op.SLOT))
        if not self.period:
            self.skip[node.op.SLOT][step] = step + 1
        for space, direction in [(a[0], "read") for a in node.reads] + [
                (a[0], "write") for a in node.writes]:
            if space.startswith(("lm", "grf")):
                self.ports.setdefault((self._key(step), space), []).append(direction)


class DmaQueue:
    """The DMA engine as placed so far: the DMAs' issue steps in order, with the cycle
    each starts moving words (after its set-up and the words queued before it) and
    finishes. A DMA issued at step ``s`` queues behind every DMA issued before ``s``."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.steps: list[int] = []
        self.starts: list[int] = []
        self.finishes: list[int] = []

    def _finish(self, i: int, step: int, words: int) -> int:
        """The finish of ``words`` issued at ``step``, behind the ``i`` DMAs before it."""
        machine = self.machine
        start = max(4 * step + machine.dma_setup_cycles, self.finishes[i - 1] if i else 0)
        return start + -(-words // machine.dma_words_per_cycle)

    def earliest(self, step: int, words: int) -> int:
        """The first step from ``step`` where a DMA of ``words`` finishes before the next
        placed DMA starts (so it delays none); past the last one, any step."""
        steps, starts = self.steps, self.starts
        i = bisect_left(steps, step)
        while i < len(steps):
            if steps[i] != step and self._finish(i, step, words) <= starts[i]:
                return step
            step = max(step, steps[i] + 1)  # later in this gap only finishes later
            i += 1
        return step

    def place(self, step: int, words: int) -> int:
        """Queue a DMA at ``step`` (found by :meth:`earliest`); returns its finish cycle."""
        i = bisect_left(self.steps, step)
        finish = self._finish(i, step, words)
        self.steps.insert(i, step)
        self.starts.insert(i, finish - -(-words // self.machine.dma_words_per_cycle))
        self.finishes.insert(i, finish)
        return finish


@dataclass
class Group:
    """A repeated group as the scheduler places it: its body's nodes (iteration 0's
    accesses) and every (step offset from the group's start, body node) it issues."""

    body: list[Node]
    issues: list[tuple[int, Node]]


def _together(a: Piece, b: Piece, count: int) -> bool:
    """Whether ``a`` and ``b`` touch a common word in one iteration (with unequal
    strides, whether their hulls meet, conservatively)."""
    space, lo, hi, stride = a
    space_b, lo_b, hi_b, stride_b = b
    if space != space_b:
        return False
    if stride == stride_b:
        return lo < hi_b and lo_b < hi
    reach = count - 1
    return lo < hi_b + stride_b * reach and lo_b < hi + stride * reach


def _carried(a: Piece, b: Piece, count: int) -> int | None:
    """The fewest iterations ``d >= 1`` after which ``b`` touches a word ``a`` touched
    (``None``: never; with unequal strides, 1, conservatively)."""
    space, lo, hi, stride = a
    space_b, lo_b, hi_b, stride_b = b
    if space != space_b or count < 2:
        return None
    if stride != stride_b:
        reach = count - 1
        return 1 if lo < hi_b + stride_b * reach and lo_b < hi + stride * reach else None
    if stride == 0:
        return 1 if lo < hi_b and lo_b < hi else None
    # b's words in iteration i + d: [lo_b + d s, hi_b + d s) meets [lo, hi) for
    # (lo - hi_b) / s < d < (hi - lo_b) / s
    first = max(1, (lo - hi_b) // stride + 1)
    return first if first <= count - 1 and lo_b + first * stride < hi else None


def modulo_schedule(group: m.RepeatOp, machine: Machine) -> Group:
    """Give ``group``'s body the shortest period (from the busiest slot's count up)
    at which each instruction, in order, takes its earliest step after its own
    iteration's earlier accesses, with a modulo reservation table, and every
    dependence on an earlier iteration holds. Rewrites the body's steps and period."""
    ops = group.group()
    pieces = [body_accesses(op, machine) for op in ops]
    nodes = [Node(op, [(sp, [(lo, hi)], None) for sp, lo, hi, _ in r],
                  [(sp, [(lo, hi)], None) for sp, lo, hi, _ in w]) for op, (r, w) in
             zip(ops, pieces, strict=True)]
    lat = [latency(op, machine) for op in ops]
    # (a, b, distance, iterations apart) for every ordered pair that shares words
    deps: list[tuple[int, int, int, int]] = []
    for a, (reads_a, writes_a) in enumerate(pieces):
        for b, (reads_b, writes_b) in enumerate(pieces):
            for first, second, distance in ((writes_a, reads_b, lat[a]),
                                            (writes_a, writes_b, 1),
                                            (reads_a, writes_b, 0)):
                for x in first:
                    for y in second:
                        if a < b and _together(x, y, group.times):
                            deps.append((a, b, distance, 0))
                        d = _carried(x, y, group.times)
                        if d is not None:
                            deps.append((a, b, distance, d))
    busiest = max(Counter(op.SLOT for op in ops).values())
    longest = len(ops) * (max(lat) + machine.lm_write_blocks_reads + 2)  # one op at a time
    for period in range(busiest, longest + 1):
        table = Reservations(period)
        rel: list[int] = []
        for b, node in enumerate(nodes):
            step = max([0] + [rel[a] + dist for a, b2, dist, d in deps if b2 == b and d == 0])
            tries = 0
            while not table.fits(node, step, machine) and tries < period:
                step, tries = step + 1, tries + 1
            if tries == period:
                break
            table.take(node, step)
            rel.append(step)
        else:
            if all(rel[b] + d * period >= rel[a] + dist for a, b, dist, d in deps if d):
                break
    else:
        raise ScheduleError(f"mncore-schedule: step {group.at}: no period fits the "
                            "mncore.repeat's body")
    for op, step in zip(ops, rel, strict=True):
        op.step = m.i64_attr(step)
        op.detach()
    block = group.body.block
    for i in sorted(range(len(ops)), key=lambda i: (rel[i], i)):
        block.add_op(ops[i])
    group.period = m.i64_attr(period)
    issues = sorted(((i * period + rel[b], nodes[b]) for i in range(group.times)
                     for b in range(len(ops))), key=lambda x: x[0])
    return Group(nodes, issues)


def _place_group(table: Reservations, group: Group, step: int, machine: Machine) -> int:
    """The first start from ``step`` at which every issue of the group fits."""
    while True:
        for offset, node in group.issues:
            if not table.fits(node, step + offset, machine):
                free = table.free_from(node.op.SLOT, step + offset)
                step = max(step + 1, free - offset)
                break
        else:
            return step


def schedule(program: m.ProgramOp) -> int:
    """Re-step ``program``'s instructions in place; returns the number of steps."""
    machine = program.target
    ops = program.units()
    groups: dict[int, Group] = {}
    end = -1  # the last step of the repeated groups so far
    for i, op in enumerate(ops):
        if op.at <= end:
            raise ScheduleError(f"mncore-schedule: step {op.at}: {op.name} issues inside an "
                                f"earlier mncore.repeat (to step {end}): groups in the "
                                "input must not interleave with other instructions (its "
                                "order is its meaning)")
        if isinstance(op, m.RepeatOp):
            end = op.last_step()
            groups[i] = modulo_schedule(op, machine)
    nodes = build_graph(ops, machine)
    remaining = [len(n.preds) for n in nodes]
    ready = [(-n.priority, i) for i, n in enumerate(nodes) if not n.preds]
    heapq.heapify(ready)
    table = Reservations()
    queue = DmaQueue(machine)
    finish: dict[int, int] = {}  # a DMA node's finish cycle
    while ready:
        _, i = heapq.heappop(ready)
        node = nodes[i]
        step = max([0] + [nodes[p].step + d for p, d in node.preds])
        if isinstance(node.op, m.WaitOp):  # when its transfers leave the engine's queue
            step = max([step] + [-(-finish[p] // 4) for p, _ in node.preds if p in finish])
        if i in groups:
            node.step = step = _place_group(table, groups[i], step, machine)
            for offset, body in groups[i].issues:
                table.take(body, step + offset)
        else:
            dma = isinstance(node.op, m.DmaOp)
            while True:
                step = table.free_from(node.op.SLOT, step)
                if dma and (free := queue.earliest(step, node.op.count)) != step:
                    step = free
                elif table.fits(node, step, machine):
                    break
                else:
                    step += 1
            node.step = step
            table.take(node, step)
            if dma:
                finish[i] = queue.place(step, node.op.count)
        for s, _ in node.succs:
            remaining[s] -= 1
            if remaining[s] == 0:
                heapq.heappush(ready, (-nodes[s].priority, s))
    block = program.body.block
    for node in nodes:
        node.op.step = m.i64_attr(node.step)
        node.op.detach()
    for i in sorted(range(len(nodes)), key=lambda i: (nodes[i].step, i)):
        block.add_op(nodes[i].op)  # placement ops keep their places in front
    return max((n.op.last_step() if isinstance(n.op, m.RepeatOp) else n.step
                for n in nodes), default=-1) + 1


@dataclass(frozen=True)
class MNCoreSchedulePass(ModulePass):
    """Give every ``mncore.program``'s instructions their earliest legal steps."""

    name = "mncore-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [o for o in op.walk() if isinstance(o, m.ProgramOp)]:
            with paused_gc():  # millions of edge tuples, none garbage until the end
                schedule(program)
