"""Waves of lanes that stay in the PEs' LM, so that a later task reading the same DRAM
words in the same lanes takes them from LM instead of DRAM.

A lane kernel's wave holds lane ``i``'s word in one 4-word LM or GRF slot of the PE that
lane ``i`` maps to (by the wave's width; a wave that fits one L2B on every L2B alike). A
later wave of the same width whose lane ``i`` loads the same DRAM word ``A[i]`` finds it
there, exactly as a load would leave it, as long as neither the DRAM words (a store) nor
the slot (any instruction writing LM) has been written since. Two kinds of slot hold
such waves:

* a load's ring slot, recorded as it is loaded (no instruction added); found again only
  while at least half a ring of loads is left before the ring reuses it, since a kernel
  may take that many more loads in the wave that finds it;
* a *resident* slot in the top of each LM's lower half, into which a stored wave's
  result is copied (one ``fpass``) when it was computed in GRF: evicted least recently
  used, never while the current wave uses it. A copy no later wave reads is dropped
  when the program is done (:meth:`Residents.unused_copies`).

Stores stay: ``mncore-forward-stores`` removes the ones no load reads any more.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.transforms.convert_task_to_mncore.common import Slot

_LMS = ("lm0", "lm1")

#: DRAM words per block of the coarse count a store is checked against first.
_BLOCK = 1024

Key = tuple[int, int, bytes]  # (wave width, lanes, the lanes' DRAM words)


@dataclass(eq=False)  # waves are compared by identity
class _Wave:
    """A slot holding lane ``i``'s DRAM word ``words[i]``."""

    key: Key
    slot: Slot
    words: np.ndarray
    taken_at: int | None  # a ring slot: the load count when it was taken
    copy: m.AluOp | None = None  # the copy that filled a resident slot
    wave: int = 0  # the last wave that found or made it


@dataclass
class Residents:
    """The waves the emitter may find in LM (see the module)."""

    machine: Machine
    first: int  # the resident area of each LM starts here, up to ``top``
    top: int
    ring_loads: int  # loads after which a ring slot is reused
    enabled: bool = True  # False: nothing is recorded, so nothing is found
    waves: OrderedDict[Key, _Wave] = field(default_factory=OrderedDict)  # by last use
    wave: int = 0

    def __post_init__(self) -> None:
        self.free: list[Slot] = [(space, at) for at in range(self.first, self.top, 4)
                                 for space in _LMS][::-1]
        self.floor = dict.fromkeys(_LMS, self.first)  # constants may push it up
        self.freed: list[Slot] = []  # free from the next wave on
        self.copies: list[m.AluOp] = []
        self.used: set[int] = set()  # ids of copies some wave found
        self.pending: _Wave | None = None
        per = self.machine.lm_words // 4
        self.held: list[list[_Wave]] = [[] for _ in range(2 * per)]  # by LM slot
        self.lo = np.zeros(2 * per, np.int64)  # the DRAM hull of each slot's waves
        self.hi = np.full(2 * per, -1, np.int64)
        self.count = np.zeros(0, np.int32)  # per DRAM word, the waves holding it
        self.blocks = np.zeros(0, np.int32)  # per block of _BLOCK words, the same summed

    def _index(self, space: str, at: int) -> int:
        return _LMS.index(space) * (self.machine.lm_words // 4) + at // 4

    def new_wave(self) -> None:
        self.wave += 1
        self.free.extend(self.freed)
        self.freed = []

    @staticmethod
    def key(width: int, words: np.ndarray) -> Key:
        return width, len(words), np.ascontiguousarray(words, np.int64).tobytes()

    def find(self, width: int, words: np.ndarray, loads: int) -> Slot | None:
        """The slot holding this wave's words, if one does and may be used now."""
        wave = self.waves.get(self.key(width, words))
        if wave is None:
            return None
        if wave.taken_at is not None and loads - wave.taken_at > self.ring_loads // 2:
            return None
        wave.wave = self.wave
        if wave.copy is not None:
            self.used.add(id(wave.copy))
        self.waves.move_to_end(wave.key)
        return wave.slot

    def loaded(self, width: int, words: np.ndarray, slot: Slot, taken_at: int) -> None:
        """A load left lane ``i``'s ``words[i]`` in the ring slot ``slot``."""
        if self.enabled:
            self._add(_Wave(self.key(width, words), slot, words, taken_at))

    def stored(self, width: int, words: np.ndarray, slot: Slot, taken_at: int | None
               ) -> m.AluOp | None:
        """A store took lane ``i``'s ``words[i]`` from ``slot``: recorded where it lies if
        that is LM (``taken_at``: a ring slot's load count), else the copy into a
        resident slot to emit, then :meth:`copied` (``None`` when every resident slot is
        in use)."""
        if not self.enabled:
            return None
        key = self.key(width, words)
        if slot[0] in _LMS:
            self._add(_Wave(key, slot, words, taken_at))
            return None
        home = self._resident_slot()
        if home is None:
            return None
        copy = m.AluOp(0, "fpass", [m.ref(*slot)], m.ref(*home))
        self.copies.append(copy)
        self.pending = _Wave(key, home, words, None, copy)
        return copy

    def copied(self) -> None:
        """The copy :meth:`stored` returned is emitted: its slot holds the wave."""
        assert self.pending is not None
        self._add(self.pending)
        self.pending = None

    def unused_copies(self) -> set[int]:
        """The ids of the copies into resident slots that no wave found."""
        return {id(c) for c in self.copies} - self.used

    def yield_to(self, space: str, upto: int) -> bool:
        """Give the words of ``space`` below ``upto`` to constants; False if a wave the
        current one uses lies there."""
        if upto <= self.floor[space]:
            return True
        if any(w.wave == self.wave and w.slot[0] == space and self.first <= w.slot[1] < upto
               for w in self.waves.values()):
            return False
        self.floor[space] = upto
        self._drop_range(space, self.first, upto)
        self.free = [s for s in self.free if s[0] != space or s[1] >= upto]
        self.freed = [s for s in self.freed if s[0] != space or s[1] >= upto]
        return True

    def _resident_slot(self) -> Slot | None:
        if self.free:
            return self.free.pop()
        for wave in self.waves.values():  # least recently used first
            index = self._index(*wave.slot)
            if wave.copy is not None and all(w.wave != self.wave for w in self.held[index]):
                self._drop(index)
                self.freed.remove(wave.slot)
                return wave.slot
        return None

    def _add(self, wave: _Wave) -> None:
        old = self.waves.get(wave.key)
        if old is not None:
            self._remove(old)
        wave.wave = self.wave
        index = self._index(*wave.slot)
        self.held[index].append(wave)
        self.waves[wave.key] = wave
        self._hull(index)
        self._count(wave, 1)

    def _count(self, wave: _Wave, by: int) -> None:
        words = wave.words
        if len(words) > 1 and not (np.diff(words) > 0).all():
            words = np.unique(words)
        if by > 0 and int(words[-1]) >= len(self.count):
            size = -(-max(2 * len(self.count), int(words[-1]) + 1) // _BLOCK) * _BLOCK
            grown = np.zeros(size, np.int32)
            grown[:len(self.count)] = self.count
            self.count = grown
            self.blocks = grown.reshape(-1, _BLOCK).sum(axis=1, dtype=np.int32)
        self.count[words] += by
        blocks = words // _BLOCK  # ascending
        first = int(blocks[0])
        per_block = np.bincount(blocks - first).astype(np.int32)
        self.blocks[first:first + len(per_block)] += by * per_block

    def _hull(self, index: int) -> None:
        waves = self.held[index]
        self.lo[index] = min((int(w.words.min()) for w in waves), default=0)
        self.hi[index] = max((int(w.words.max()) for w in waves), default=-1)

    def _remove(self, wave: _Wave) -> None:
        """``wave`` is gone; a resident slot's copy gone, its slot is free again."""
        if wave.copy is not None:
            self._drop(self._index(*wave.slot))
            return
        index = self._index(*wave.slot)
        self.held[index].remove(wave)
        del self.waves[wave.key]
        self._count(wave, -1)
        self._hull(index)

    def _drop(self, index: int) -> None:
        """The slot ``index`` is written: its waves are gone."""
        waves, self.held[index] = self.held[index], []
        self.hi[index] = -1
        for wave in waves:
            del self.waves[wave.key]
            self._count(wave, -1)
            if wave.copy is not None and wave.slot[1] >= self.floor[wave.slot[0]]:
                self.freed.append(wave.slot)

    def _drop_range(self, space: str, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        first = self._index(space, max(lo, 0))
        for index in range(first, self._index(space, min(hi, self.machine.lm_words) - 1) + 1):
            if self.held[index]:
                self._drop(index)

    def written(self, op: m.InstructionOp | m.RepeatOp) -> None:
        """``op`` is emitted: the waves whose slot or DRAM words it writes are gone."""
        if not self.waves:
            return
        if isinstance(op, m.RepeatOp):
            for body in op.group():
                for space, first, n, stride in body.strided_operands(self.machine)[1]:
                    if space in _LMS:
                        reach = stride * (op.times - 1)
                        self._drop_range(space, first + min(reach, 0), first + n + max(reach, 0))
            return
        if isinstance(op, m.DmaOp):  # its DRAM words: :meth:`stored_over`
            return
        dst = op.dst
        if dst is not None and dst.space.data in _LMS:
            for ref, n in op.operands_of(self.machine)[1]:
                self._drop_range(ref.space.data, ref.address.data, ref.address.data + n)

    def stored_over(self, lo: int, extent: int, words: Callable[[], np.ndarray]) -> None:
        """A store writes ``words()``, which lie from DRAM word ``lo`` over ``extent``
        words: the waves holding any of them are gone."""
        if not self.waves or not self.blocks[lo // _BLOCK:(lo + extent - 1) // _BLOCK + 1].any():
            return
        written = words()
        if not self.count[written[written < len(self.count)]].any():
            return
        hi = lo + extent - 1
        mask = np.zeros(extent, bool)
        mask[written - lo] = True
        for index in np.flatnonzero((self.hi >= lo) & (self.lo <= hi)).tolist():
            for wave in list(self.held[index]):
                inside = wave.words[(wave.words >= lo) & (wave.words <= hi)]
                if wave in self.held[index] and mask[inside - lo].any():
                    self._remove(wave)
