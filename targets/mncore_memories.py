"""The cycle simulator's memories: held word-major (``[word, PE or block]``: an
instruction's few words of every PE lie together) with unit-major columns (so a tree
transfer moves runs of words, not single words), and reused from run to run (zeroed
where the last run wrote, not allocated again: a fresh array's pages fault in on first
touch, which cost a store to LM more than its copy)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

import numpy as np

from mncore_ir.dialects.mncore_machines import PE_SPACES, Machine

Execute = Callable[[list[np.ndarray]], np.ndarray]
#: Spans of a memory's words (rows), as ``(start, stop)``.
Rows = list[tuple[int, int]]


def tree(kind: str, blocks: int, per: int, n: int) -> Execute:
    """A transfer between ``blocks`` blocks' memories (L1BM, L2BM) and the ``per``
    units below each (PEs, L1Bs), ``n`` words each. Memory columns are unit-major: unit
    ``u`` of block ``b`` is column ``u blocks + b`` below (:func:`physical` gives the
    machine's order). A scatter gives a unit words ``u n .. u n + n - 1`` of its
    block's, a gather the inverse, a reduce sums over the units in their order."""
    if kind == "bcast":  # block columns -> the columns below each
        return lambda values: np.tile(values[0], (1, per))
    if kind == "scatter":  # [u n + w, b] -> [w, u blocks + b]
        return lambda values: values[0].reshape(per, n, blocks).transpose(1, 0, 2).reshape(
            n, per * blocks)
    if kind == "gather":  # [w, u blocks + b] -> [u n + w, b]
        return lambda values: values[0].reshape(n, per, blocks).transpose(1, 0, 2).reshape(
            per * n, blocks)
    return lambda values: values[0].reshape(n, per, blocks).sum(axis=1)


def physical(machine: Machine, space: str, arr: np.ndarray) -> np.ndarray:
    """A memory as ``[PE or block, word]`` in the machine's order (PE ``p`` of L1B
    ``l`` of L2B ``b`` is ``(b L + l) P + p``), from the simulator's columns."""
    per_l2b, l1b = machine.l1b_per_l2b, np.arange(machine.l1bs)
    column = (l1b % per_l2b) * machine.l2bs + l1b // per_l2b  # an L1B's column of L1BM
    if space in PE_SPACES:
        pe = np.arange(machine.pes)
        column = (pe % machine.pes_per_l1b) * machine.l1bs + column[pe // machine.pes_per_l1b]
    elif space != "l1bm":
        return arr.T.copy()
    return arr[:, column].T.copy()


def columns(machine: Machine, space: str) -> int:
    """The columns of ``space``'s array: one per PE, per L1B or L2B block, one for DRAM."""
    return {"l1bm": machine.l1bs, "l2bm": machine.l2bs, "dram": 1}.get(space, machine.pes)


def spans(rows: np.ndarray) -> Rows:
    """The runs of consecutive row numbers among ``rows`` (sorted, distinct)."""
    if not len(rows):
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts, stops = rows[np.r_[0, breaks]], rows[np.r_[breaks - 1, len(rows) - 1]] + 1
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


class _Memories:
    def __init__(self, machine: Machine) -> None:
        self.arrays = {space: np.zeros((machine.size(space), columns(machine, space)),
                                       np.float32) for space in (*PE_SPACES, "l1bm", "l2bm")}
        self.dirty: dict[str, Rows] = {}


_FREE: dict[Machine, list[_Memories]] = {}
_LOCK = threading.Lock()
#: Sets of memories kept per machine between runs (more are made for runs at once in
#: several threads, and dropped as they end): mncore2's take up to 75 MB each, of which
#: only the pages a program touched are resident.
KEPT = 2


@contextlib.contextmanager
def borrowed(machine: Machine, written: dict[str, Rows]) -> Iterator[dict[str, np.ndarray]]:
    """Zeroed memories of ``machine`` (all but DRAM) for one run, which writes only
    the rows ``written``: runs in other threads get others."""
    with _LOCK:
        free = _FREE.setdefault(machine, [])
        memories = free.pop() if free else _Memories(machine)
    for space, rows in memories.dirty.items():
        arr = memories.arrays[space]
        for start, stop in rows:
            arr[start:stop] = 0
    try:
        yield memories.arrays
    finally:
        memories.dirty = written
        with _LOCK:
            if len(_FREE[machine]) < KEPT:
                _FREE[machine].append(memories)
