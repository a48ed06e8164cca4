"""The access histories ``mncore-schedule`` keeps per memory word: for each word, the
instructions that wrote and read it since its last covering write, so that a new
access finds what it depends on without looking at every earlier instruction."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence

import numpy as np

Interval = tuple[int, int]  # first word, past the last

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


class WordHistories:
    """A history per DRAM word, as an index into a table of histories: a DMA touches
    its words (often hundreds of strided runs) in a few numpy operations, where
    :class:`Segments` would split a segment per run."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, np.int32)  # 0: the empty history (4 bytes a word)
        self.table: list[History] = [()]

    def _ids(self, words: np.ndarray) -> np.ndarray:
        if len(words) and int(words.max()) >= len(self.ids):
            grown = np.zeros(max(2 * len(self.ids), int(words.max()) + 1), np.int32)
            grown[:len(self.ids)] = self.ids
            self.ids = grown
        return self.ids[words]

    def distinct(self, words: np.ndarray) -> list[History]:
        """The different histories of ``words``."""
        return [self.table[i] for i in np.unique(self._ids(words)).tolist()]

    def extend(self, words: np.ndarray, change: Callable[[History], History]) -> None:
        """Replace each word's history by ``change`` of it, each distinct one once."""
        found, inverse = np.unique(self._ids(words), return_inverse=True)
        first = len(self.table)
        self.table.extend(change(self.table[i]) for i in found.tolist())
        self.ids[words] = first + inverse

    def assign(self, words: np.ndarray, history: History) -> None:
        """Every word of ``words`` gets ``history``."""
        self._ids(words)
        self.ids[words] = len(self.table)
        self.table.append(history)


class PerSpace(dict[str, "Segments | WordHistories"]):
    """Histories per memory space, made on first use: DRAM's per word."""

    def __missing__(self, space: str) -> Segments | WordHistories:
        self[space] = found = WordHistories() if space == "dram" else Segments()
        return found
