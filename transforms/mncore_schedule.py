"""``mncore-schedule``: a static list scheduler for ``mncore`` programs.

The input's instruction order is its meaning (steps there only need to be increasing);
the pass gives every instruction the earliest step that keeps that meaning and obeys
the machine: one instruction per slot per step, the LM/GRF port rules, and the
latencies — a value is read only once its writer's latency has passed, DMA data only
after the wait on its tag, and a wait is placed once its transfers are done (so it does
not stall): DMAs issue in the order they are placed, which is the order of the engine's
queue, so the scheduler knows when each one finishes. Instructions are placed in
critical-path order (longest latency-weighted path to the end first), each at its
earliest free step.

Dependencies come from the words instructions touch, per memory space: read after
write (the writer's latency; after the wait for DMA writes), write after read (same
step or later: a bundle reads before it writes) and write after write (a later step).
A DMA owns the words it reads and writes until the wait on its tag. The forwarding
operand ``fwd`` ties two instructions to adjacent steps and is not
accepted here.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.dialects.values import paused_gc


class ScheduleError(DiagnosticException):
    """A program the scheduler cannot place."""


Interval = tuple[int, int]  # first word, past the last
Access = tuple[str, list[Interval], int | None]  # space, words, the one L2B or None: all


def accesses(op: m.InstructionOp, machine: Machine) -> tuple[list[Access], list[Access]]:
    reads, writes = op.operands_of(machine)
    block = None
    if isinstance(op, m.DmaOp):  # one L2B's copy of L2BM, or all for a plain load
        block = op.block if op.block is not None or op.kind.data == "load" else 0
    found: tuple[list[Access], list[Access]] = (
        [(r.space.data, [(r.address.data, r.address.data + n)],
          block if r.space.data == "l2bm" else None) for r, n in reads],
        [(r.space.data, [(r.address.data, r.address.data + n)],
          block if r.space.data == "l2bm" else None) for r, n in writes])
    if isinstance(op, m.DmaOp):  # the DRAM side may be strided
        side = found[0] if op.kind.data == "load" else found[1]
        side[0] = ("dram", op.dram_intervals(), None)
    return found


def _meet(a: int | None, b: int | None) -> bool:
    """Whether accesses to two L2Bs' copies (``None``: all) touch a common copy."""
    return a is None or b is None or a == b


@dataclass
class Node:
    op: m.InstructionOp
    reads: list[Access]
    writes: list[Access]
    preds: list[tuple[int, int]] = field(default_factory=list)  # (node, minimum distance)
    succs: list[tuple[int, int]] = field(default_factory=list)
    priority: int = 0
    step: int = -1


def latency(op: m.InstructionOp, machine: Machine) -> int:
    return {"alu": machine.alu_latency, "mau": machine.alu_latency, "l1": machine.l1_latency,
            "l2": machine.l2_latency, "dma": 0, "ctrl": 0}[op.SLOT]


def dma_steps(op: m.InstructionOp, machine: Machine) -> int:
    """Steps from a DMA's issue until its words have arrived."""
    cycles = machine.dma_setup_cycles + -(-op.count // machine.dma_words_per_cycle)
    return -(-cycles // 4)


History = tuple[tuple[int, "int | None"], ...]


#: Words per block of :class:`Segments` (a split shifts at most one block's list).
BLOCK = 1024


class Segments:
    """A history per word of one memory, kept as segments of equal history (an access
    touches a few segments, not each of its words), in blocks of :data:`BLOCK` words:
    segment ``i`` of a block runs from ``starts[i]`` to ``starts[i + 1]`` or the
    block's end."""

    def __init__(self) -> None:
        self.blocks: dict[int, tuple[list[int], list[History]]] = {}

    @staticmethod
    def _pieces(intervals: Sequence[Interval]) -> Iterator[tuple[int, int, int]]:
        """(block, first word, past the last) of each interval, cut at block ends."""
        for lo, hi in intervals:
            while lo < hi:
                block = lo // BLOCK
                end = min(hi, (block + 1) * BLOCK)
                yield block, lo, end
                lo = end

    def _block(self, block: int) -> tuple[list[int], list[History]]:
        found = self.blocks.get(block)
        if found is None:
            found = self.blocks[block] = ([block * BLOCK], [()])
        return found

    @staticmethod
    def _split(starts: list[int], values: list[History], at: int, end: int) -> int:
        """The index of the segment starting at ``at`` (split off if need be; the
        block's length if ``at`` is its ``end``)."""
        if at >= end:
            return len(starts)
        i = bisect_right(starts, at) - 1
        if starts[i] == at:
            return i
        starts.insert(i + 1, at)
        values.insert(i + 1, values[i])
        return i + 1

    def distinct(self, intervals: Sequence[Interval]) -> list[History]:
        """The different histories of the words of ``intervals``."""
        found: dict[int, History] = {}
        for block, lo, hi in self._pieces(intervals):
            if block not in self.blocks:
                found.setdefault(id(()), ())
                continue
            starts, values = self.blocks[block]
            i = bisect_right(starts, lo) - 1
            while i < len(starts) and starts[i] < hi:
                found.setdefault(id(values[i]), values[i])
                i += 1
        return list(found.values())

    def extend(self, intervals: Sequence[Interval], change: Callable[[History], History]
               ) -> None:
        """Replace each word's history by ``change`` of it, computing each distinct one
        once (the originals are kept alive while their ids key the memo)."""
        memo: dict[int, tuple[History, History]] = {}
        for block, lo, hi in self._pieces(intervals):
            starts, values = self._block(block)
            end = (block + 1) * BLOCK
            first, last = self._split(starts, values, lo, end), self._split(
                starts, values, hi, end)
            for i in range(first, last):
                old = values[i]
                if id(old) not in memo:
                    memo[id(old)] = (old, change(old))
                values[i] = memo[id(old)][1]

    def assign(self, intervals: Sequence[Interval], history: History) -> None:
        """Every word of ``intervals`` gets ``history`` (one segment per piece)."""
        for block, lo, hi in self._pieces(intervals):
            starts, values = self._block(block)
            end = (block + 1) * BLOCK
            first, last = self._split(starts, values, lo, end), self._split(
                starts, values, hi, end)
            starts[first:last] = [lo]
            values[first:last] = [history]


def build_graph(ops: Sequence[m.InstructionOp], machine: Machine) -> list[Node]:
    """Nodes with their dependency edges. Per memory word, the last writer and the
    readers since it are enough: older accesses are ordered through them."""
    nodes = []
    for op in ops:
        if any(r.space.data == "fwd" for r in op.srcs.data):
            raise ScheduleError(f"mncore-schedule: step {op.at}: {op.name} reads fwd, which "
                                "ties it to the previous step; write the value to a memory")
        nodes.append(Node(op, *accesses(op, machine)))
    waiting_dma: dict[int, list[int]] = {}  # tag -> DMA nodes not yet waited for
    waited_by: dict[int, int] = {}  # DMA node -> its wait node
    # Per word, the writers and readers since the last write that covered them: (node,
    # L2B or None); L2BM words have a copy per L2B, which DMAs may touch one at a time.
    # Words an instruction touches together share one tuple, so each distinct history
    # is looked at (and extended) once per access.
    writers: dict[str, Segments] = defaultdict(Segments)
    readers: dict[str, Segments] = defaultdict(Segments)

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
        for space, words, block in node.reads:
            for history in writers[space].distinct(words):
                for i, other in history:
                    if _meet(block, other):
                        found[(i, "reads")] = latency(nodes[i].op, machine)
        for space, words, block in node.writes:
            for history in writers[space].distinct(words):
                for i, other in history:
                    if _meet(block, other):
                        found[(i, "overwrites")] = 1
            for history in readers[space].distinct(words):
                for i, other in history:
                    if _meet(block, other):
                        found.setdefault((i, "overwrites"), 0)
        needs: dict[int, int] = {}
        for (i, what), distance in found.items():
            source, gap = after(i, j, distance, what)
            needs[source] = max(needs.get(source, 0), gap)
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
    """What each step already uses: slots, PE memory ports, LM writes and reads."""

    def __init__(self) -> None:
        self.slots: set[tuple[int, str]] = set()
        self.ports: dict[tuple[int, str], list[str]] = {}
        self.skip: dict[str, dict[int, int]] = defaultdict(dict)
        """Per slot, a taken step -> a later step to look at next (path-compressed): the
        search for a free step skips a long run of taken ones at once."""

    def free_from(self, slot: str, step: int) -> int:
        """The first step from ``step`` whose ``slot`` is free."""
        skip = self.skip[slot]
        path = []
        while step in skip:
            path.append(step)
            step = skip[step]
        for taken in path:
            skip[taken] = step
        return step

    def fits(self, node: Node, step: int, machine: Machine) -> bool:
        if (step, node.op.SLOT) in self.slots:
            return False
        uses = [(a[0], "read") for a in node.reads] + [(a[0], "write") for a in node.writes]
        for space, direction in uses:
            if space.startswith("lm"):
                if self.ports.get((step, space)):
                    return False
                if sum(1 for s, _ in uses if s == space) > 1:
                    return False
                gap = machine.lm_write_blocks_reads
                if direction == "read" and any(
                        "write" in self.ports.get((step - k, space), ()) for k in
                        range(1, gap + 1)):
                    return False
                if direction == "write" and any(
                        "read" in self.ports.get((step + k, space), ()) for k in
                        range(1, gap + 1)):
                    return False
            elif space.startswith("grf"):
                taken = self.ports.get((step, space), [])
                if taken.count(direction) + sum(
                        1 for s, d in uses if s == space and d == direction) > 1:
                    return False
        return True

    def take(self, node: Node, step: int) -> None:
        self.slots.add((step, node.op.SLOT))
        self.skip[node.op.SLOT][step] = step + 1
        for space, direction in [(a[0], "read") for a in node.reads] + [
                (a[0], "write") for a in node.writes]:
            if space.startswith(("lm", "grf")):
                self.ports.setdefault((step, space), []).append(direction)


def schedule(program: m.ProgramOp) -> int:
    """Re-step ``program``'s instructions in place; returns the number of steps."""
    machine = program.target
    ops = program.instructions()
    nodes = build_graph(ops, machine)
    remaining = [len(n.preds) for n in nodes]
    ready = [(-n.priority, i) for i, n in enumerate(nodes) if not n.preds]
    heapq.heapify(ready)
    table = Reservations()
    engine_free = 0  # the cycle the DMA engine finishes the transfers placed so far
    last_dma = -1  # the step of the last DMA placed
    finish: dict[int, int] = {}
    while ready:
        _, i = heapq.heappop(ready)
        node = nodes[i]
        step = max((nodes[p].step + d for p, d in node.preds), default=0)
        if isinstance(node.op, m.WaitOp):  # when its transfers leave the engine's queue
            step = max([step] + [-(-finish[p] // 4) for p, _ in node.preds if p in finish])
        if isinstance(node.op, m.DmaOp):  # issued in the order placed: the queue's order
            step = max(step, last_dma + 1)
        step = table.free_from(node.op.SLOT, step)
        while not table.fits(node, step, machine):
            step = table.free_from(node.op.SLOT, step + 1)
        node.step = step
        table.take(node, step)
        if isinstance(node.op, m.DmaOp):
            last_dma = step
            start = max(4 * step + machine.dma_setup_cycles, engine_free)
            engine_free = finish[i] = start + -(-len(node.op.dram_words()) //
                                                machine.dma_words_per_cycle)
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
    return max((n.step for n in nodes), default=-1) + 1


@dataclass(frozen=True)
class MNCoreSchedulePass(ModulePass):
    """Give every ``mncore.program``'s instructions their earliest legal steps."""

    name = "mncore-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [o for o in op.walk() if isinstance(o, m.ProgramOp)]:
            with paused_gc():  # millions of edge tuples, none garbage until the end
                schedule(program)
