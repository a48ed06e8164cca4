"""The event graph of a task kernel, read once: who signals each event, what each task
waits on, and so each task's predecessors. The kernel verifier and every target that
orders tasks (simulator, timing model, Triton) start from the same reading.

The functions take a task's operands by group (``TaskOp.operand_groups()``) or anything
with a kernel's ``tasks()``, so that this module does not import the dialect it serves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from xdsl.ir import SSAValue

from mncore_ir.dialects.task_regions import Accesses, Tile


class TaskOperands(NamedTuple):
    """A task's operands by group."""

    ins: tuple[SSAValue, ...]
    outs: tuple[SSAValue, ...]
    waits: tuple[SSAValue, ...]
    signal: SSAValue | None


class _Task(Protocol):
    def operand_groups(self) -> TaskOperands: ...


class _Kernel(Protocol):
    def tasks(self) -> Sequence[_Task]: ...


class EventGraph(NamedTuple):
    """Who signals each event (task indices, in order) and what each task waits on."""

    signallers: dict[SSAValue, list[int]]
    waits: list[tuple[SSAValue, ...]]

    def predecessors(self) -> list[list[int]]:
        """For each task, the tasks it waits for (the signallers of its events)."""
        return [sorted({p for e in waits for p in self.signallers.get(e, ())})
                for waits in self.waits]

    def ancestors(self) -> list[int]:
        """For each task, the tasks that finish before it starts, as a bitset (a
        Python integer): the signallers of the events it waits on, transitively."""
        before: list[int] = []
        for preds in self.predecessors():
            bits = 0
            for p in preds:
                bits |= before[p] | 1 << p
            before.append(bits)
        return before


class Race(NamedTuple):
    """Two tasks that touch one region of ``buffer``, at least one writing it, with no
    chain of events from the ``first`` to the ``second``."""

    first: int
    second: int
    buffer: SSAValue
    first_writes: bool
    second_writes: bool


def first_race(accesses: Sequence[tuple[Accesses, Accesses]], graph: EventGraph
               ) -> Race | None:
    """The first pair of tasks (by the later one) whose accesses conflict without an
    event ordering them, or ``None``. Which value such a kernel computes would depend
    on the order the workers happen to run its tasks in (``accesses``: each task's
    reads and writes, in kernel order).

    Each buffer is cut into cells at every region's bounds; walking the accesses in
    order, a read must follow its cells' last writer and a write must also follow the
    cells' readers since then (earlier accesses follow those, by the same checks)."""
    cells = _Cells(accesses)
    preds = [set(p) for p in graph.predecessors()]
    ancestors: list[int] = []  # bitsets, computed once an order is not a direct wait

    def ordered(first: int, second: int) -> bool:
        if first == second or first in preds[second]:
            return True
        if not ancestors:
            ancestors.extend(graph.ancestors())
        return bool(ancestors[second] >> first & 1)

    last_writer: dict[SSAValue, dict[int, int]] = {value: {} for value in cells.cuts}
    readers: dict[SSAValue, dict[int, list[int]]] = {value: {} for value in cells.cuts}
    for index, (reads, writes) in enumerate(accesses):
        for writing, regions in ((False, reads), (True, writes)):
            for value, tile in regions:
                writers, readers_of = last_writer[value], readers[value]
                checked: set[int] = set()
                for cell in cells.of(value, tile):
                    earlier = [writers.get(cell, index)]
                    if writing:
                        earlier += readers_of.pop(cell, ())
                        writers[cell] = index
                    else:
                        readers_of.setdefault(cell, []).append(index)
                    for position, first in enumerate(earlier):  # the writer, then readers
                        if first not in checked:
                            checked.add(first)
                            if not ordered(first, index):
                                return Race(first, index, value, position == 0, writing)
    return None


class _Cells:
    """Each buffer's cells: the boxes between consecutive bounds of the regions that
    the tasks access, in every dimension; a region is a box of whole cells."""

    def __init__(self, accesses: Sequence[tuple[Accesses, Accesses]]) -> None:
        bounds: dict[SSAValue, list[set[int]]] = {}
        for reads, writes in accesses:
            for value, tile in (*reads, *writes):
                dims = bounds.setdefault(value, [set() for _ in tile.offsets])
                for dim, offset, size in zip(dims, tile.offsets, tile.sizes, strict=True):
                    dim.update((offset, offset + size))
        self.cuts = {value: [sorted(dim) for dim in dims] for value, dims in bounds.items()}
        self.index = {value: [{bound: i for i, bound in enumerate(dim)} for dim in cuts]
                      for value, cuts in self.cuts.items()}

    def of(self, value: SSAValue, tile: Tile) -> Iterable[int]:
        """The cells of ``tile`` in ``value``, each by its row-major number."""
        cuts, index = self.cuts[value], self.index[value]
        ranges = [range(at[o], at[o + s]) for at, o, s in zip(index, tile.offsets, tile.sizes,
                                                             strict=True)]
        numbers = [0]
        for span, cut in zip(ranges, cuts, strict=True):
            count = len(cut)
            numbers = [n * count + i for n in numbers for i in span]
        return numbers


def event_graph(groups: Sequence[TaskOperands]) -> EventGraph:
    """The events between tasks of operands ``groups`` (in kernel order)."""
    signallers: dict[SSAValue, list[int]] = {}
    waits: list[tuple[SSAValue, ...]] = []
    for index, group in enumerate(groups):
        if group.signal is not None:
            signallers.setdefault(group.signal, []).append(index)
        waits.append(group.waits)
    return EventGraph(signallers, waits)


def predecessors(kernel: _Kernel) -> list[list[int]]:
    """For each task of ``kernel``, the tasks it waits for."""
    return event_graph([task.operand_groups() for task in kernel.tasks()]).predecessors()
