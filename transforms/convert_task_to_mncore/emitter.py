"""The emitter of convert-task-to-mncore: where values live (DRAM places, the constant
pool, LM and GRF slots, staging rings) and the instruction API (DMA, ALU, loads and
stores of per-lane words). It only receives calls: the kernels decide what to compute.

Instructions are appended in program order (their meaning), each in its own step, far
enough apart that every result is ready before the next instruction issues: a valid,
slow program, which ``mncore-schedule`` then packs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.ir import SSAValue

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.transforms.convert_task_to_mncore.common import (
    Descriptor,
    MNCoreConversionError,
    Ring,
    Slot,
    Staging,
    descriptors,
    shape,
    strides_of,
)
from mncore_ir.transforms.convert_task_to_mncore.residents import Residents
from mncore_ir.transforms.convert_task_to_mncore.views import View

#: The default compile budget: the CNN training step needs about 700k instructions.
MAX_INSTRUCTIONS = 2_000_000
#: Columns of C each L1B accumulates at once in the A-stationary matmul (its result
#: area in L1BM is sized by it).
JC = 4


class Emitter:
    """Allocation and instructions for one ``mncore.program``."""

    def __init__(self, machine: Machine, max_instructions: int = MAX_INSTRUCTIONS,
                 resident: bool = True) -> None:
        self.machine = machine
        self.max_instructions = max_instructions
        self.ops: list[m.InstructionOp | m.RepeatOp] = []
        self.next_step = 0  # the step of the next instruction in program order
        self.emitted = 0  # instructions written (a repeated group's body once)
        self.dram: dict[SSAValue, int] = {}  # a buffer's first word
        self.views: dict[SSAValue, View] = {}  # buffers laid out on others' words
        self.tag = 0
        self.size = 0
        per_l2b = machine.l1b_per_l2b * machine.pes_per_l1b
        self.wave = 4 * per_l2b  # lanes per wave
        self.chunk = 4 * machine.pes_per_l1b  # words per L1BM per wave
        self.pool: list[float] = []  # DRAM words of the constant pool
        self.pool_index: dict[tuple[int, ...], int] = {}
        self.pool_base = 0  # set once every buffer has its place
        self.constants: dict[tuple[int, ...], Slot] = {}
        self.ones: Slot | None = None
        half = machine.lm_words // 2
        self.lm_constants = {"lm0": 0, "lm1": 0}  # constants fill each LM's lower half
        self.lm_limit = half
        self.lm_ring = [Ring("lm0", half, 4, half // 4), Ring("lm1", half, 4, half // 4)]
        self.ring_taken: dict[Slot, int] = {}  # a load slot's load count when taken
        #: the lower halves' top half keeps waves in LM (constants may take it back)
        self.residents = Residents(machine, half // 2, half, ring_loads=half // 2,
                                   enabled=resident)
        #: Copy scratches (the ALU's port rules): at the start of each GRF and in each
        #: LM's constants, a wave's in turn, so consecutive tasks' copies do not wait
        #: for one another.
        self.scratches = min(4, machine.grf_words // 64)
        self.scratch = 0
        self.lm_scratch = {s: [self.reserve_lm(s) for _ in range(self.scratches)]
                           for s in ("lm0", "lm1")}
        self.loads = 0
        # L2BM: one staging range, each area as large as its transfer, handed out in
        # program order and wrapping round (consecutive tasks, independent or not, do
        # not reuse each other's areas, which would order them); L1BM: a ring of
        # chunks, a matmul result area, then two matmul operand areas.
        self.stage = Staging("l2bm", 0, machine.l2bm_words)
        #: Words of each L1BM that the current wave's lanes fill (lane ``i`` of an L2B is
        #: word ``i % width`` of L1B ``i // width``): a wave of few lanes fills a few
        #: words of each, so its staging area is small.
        self.width = self.chunk
        #: The most a matmul stages at once (a unit of B's columns, C's columns): a
        #: third of what the lane waves leave, so three are in flight.
        stages = max(2, min(4, machine.l2bm_words // self.wave // 2))
        self.big_area = (machine.l2bm_words - stages * self.wave) // 3
        chunks = max(2, min(16, machine.l1bm_words // self.chunk // 2))
        self.l1 = Ring("l1bm", 0, self.chunk, chunks)
        self.l1_out = chunks * self.chunk
        self.l1_top = self.l1_out + JC * self.chunk
        #: the matmul's units of B's columns (one loads while the last is read), in turn
        #: from one matmul to the next
        self.b_areas = Ring("l1bm", self.l1_top, (machine.l1bm_words - self.l1_top) // 2, 2)
        self.grf: dict[str, int] = {}  # GRF words the current wave took, per GRF
        self.grf_base = 0  # where the current wave's GRF words start (past the scratches)
        self.grf_first = 4 * self.scratches  # the first GRF word kernels hand out
        self.group: bool | None = None  # inside transfers(): whether a DMA joined
        self.released: list[Slot] = []
        #: Steps between instructions in program order: past every latency and the
        #: steps a write to LM blocks its reads.
        self.spacing = max(machine.alu_latency, machine.l1_latency, machine.l2_latency,
                           machine.lm_write_blocks_reads + 1)

    # --- places

    def place(self, value: SSAValue, words: int) -> int:
        """``value`` at the end of DRAM, for the whole program."""
        at = self.size
        self.dram[value] = at
        self.size += -(-max(words, 1) // 16) * 16
        self.check_dram(value, words, at)
        return at

    def allocate(self, buffers: Sequence[SSAValue], tasks: Sequence[t.TaskOp],
                 views: dict[SSAValue, View] | None = None) -> None:
        """Intermediate buffers share DRAM by liveness (from the first to the last task
        that touches them, in kernel order): first fit among the buffers still live.
        A view (``views``) lies on its root's words, which live as long as any of
        their views."""
        views = views or {}
        first: dict[SSAValue, int] = {}
        last: dict[SSAValue, int] = {}
        for i, task in enumerate(tasks):
            for v in (*task.ins, *task.outs):
                v = views[v].root if v in views else v
                first.setdefault(v, i)
                last[v] = i
        base, end = self.size, 0
        live: list[tuple[int, int, int]] = []  # (first word, past the last, last task)
        for v in sorted((v for v in buffers if v not in views),
                        key=lambda v: first.get(v, -1)):
            words = math.prod(shape(v))
            size = -(-max(words, 1) // 16) * 16
            live = [block for block in live if block[2] >= first.get(v, -1)]
            at = 0
            for lo, hi, _ in sorted(live):
                if at + size <= lo:
                    break
                at = max(at, hi)
            live.append((at, at + size, last.get(v, -1)))
            self.dram[v] = base + at
            end = max(end, at + size)
            self.check_dram(v, words, base + at)
        self.size = base + end
        for v, view in views.items():
            self.dram[v] = self.dram[view.root] + view.offset
        self.views = dict(views)

    def check_dram(self, value: SSAValue, words: int, at: int) -> None:
        if at + words > self.machine.dram_words:
            name = f"%{value.name_hint}" if value.name_hint else f"a {value.type}"
            raise MNCoreConversionError(
                f"convert-task-to-mncore: buffer {name} ({words} words at dram[{at}]) does not "
                f"fit in dram ({self.machine.dram_words} words on {self.machine.name})")

    def pooled(self, values: Sequence[float]) -> int:
        """The pool address of ``values`` (shared when asked again)."""
        key = _bits(values)
        if key not in self.pool_index:
            self.pool_index[key] = len(self.pool)
            self.pool.extend(float(v) for v in values)
        return self.pool_base + self.pool_index[key]

    def table(self, values: np.ndarray) -> np.ndarray:
        """DRAM addresses of per-lane compile-time values (in the constant pool)."""
        return self.pooled(values.tolist()) + np.arange(len(values))

    def strides(self, value: SSAValue) -> np.ndarray:
        """The DRAM words between neighbours along each dimension of ``value``: its
        view's, else row-major."""
        view = self.views.get(value)
        return strides_of(shape(value)) if view is None else np.array(view.strides, np.int64)

    def address(self, value: SSAValue, coords: Sequence[np.ndarray]) -> np.ndarray:
        """DRAM words of ``value`` at absolute coordinates (one array per dimension)."""
        strides = self.strides(value)
        out = np.full(len(coords[0]) if coords else 1, self.dram[value], np.int64)
        for c, s in zip(coords, strides, strict=True):
            out = out + c * s
        return out

    def reserve_lm(self, space: str) -> int:
        at = self.lm_constants[space]
        self.lm_constants[space] += 4
        return at

    def lm_slot(self) -> Slot:
        self.loads += 1
        slot = self.lm_ring[self.loads % 2].take()
        self.ring_taken[slot] = self.loads
        return slot

    def new_wave(self, lanes: int | None = None) -> None:
        """Every GRF slot is free again (the first words of each GRF stay copy
        scratches, the next one in turn), handed out from past the last wave's, round
        the GRF: consecutive waves (independent tasks' above all) write other words
        than the last one read, so the scheduler can overlap them. A wave of ``lanes``
        lanes (default: a whole wave of every L2B) is spread as few words over each L1B
        (:attr:`width`)."""
        if self.grf:
            self.grf_base = (self.grf_base + max(self.grf.values())) % (
                self.machine.grf_words - self.grf_first)
        self.scratch = (self.scratch + 1) % self.scratches
        self.residents.new_wave()
        self.grf = {"grf0": 0, "grf1": 0}
        self.released = []
        self.width = self.chunk
        if lanes is not None and lanes <= self.wave:
            per_l1b = -(-lanes // self.machine.l1b_per_l2b)
            self.width = min(self.chunk, -(-per_l1b // 4) * 4)

    def fresh(self) -> Slot:
        """A GRF slot of the current wave: one released, else a new one."""
        if self.released:
            return self.released.pop()
        space = min(self.grf, key=lambda s: self.grf[s])
        used, ring = self.grf[space], self.machine.grf_words - self.grf_first
        if used + 4 > ring:
            raise MNCoreConversionError("convert-task-to-mncore: a task needs more values "
                                        f"at once than the GRFs hold ({self.machine.grf_words} "
                                        f"words each on {self.machine.name})")
        self.grf[space] += 4
        return space, self.grf_first + (self.grf_base + used) % ring

    def release(self, slot: Slot) -> None:
        """``slot``'s value is dead: a later :meth:`fresh` may reuse it (the scheduler
        orders the new writes after the last reads)."""
        self.released.append(slot)

    def constant(self, value: float) -> Slot:
        """An LM slot holding ``value`` in all 4 words of every PE, loaded on first use."""
        return self._lower_half(_bits([value]),
                                lambda slot: self.broadcast(self.pooled([value]), slot))

    def pattern(self, values: Sequence[float]) -> Slot:
        """An LM slot holding the 4 ``values`` in its 4 words on every PE."""

        def load(slot: Slot) -> None:
            stage, l1 = self.stage.take(4), self.l1.take()
            self.dma("load", m.ref("dram", self.pooled(values)), m.ref(*stage), 4)
            self.emit(m.L2Op(0, "bcast", [m.ref(*stage)], m.ref(*l1), 4))
            self.emit(m.L1Op(0, "bcast", [m.ref(*l1)], m.ref(*slot)))

        return self._lower_half(_bits([4.0, *values]), load)  # keys apart from constants'

    def _lower_half(self, key: tuple[int, ...], load: Callable[[Slot], None]) -> Slot:
        """The constant slot of ``key`` in the lower half of lm0 or lm1, filled by
        ``load`` on first use."""
        if key not in self.constants:
            space = min(self.lm_constants, key=lambda s: self.lm_constants[s])
            at = self.lm_constants[space]
            if at + 4 > self.lm_limit or not self.residents.yield_to(space, at + 4):
                raise MNCoreConversionError(
                    f"convert-task-to-mncore: the kernel's constants do not fit in the lower "
                    f"halves of lm0 and lm1 ({self.lm_limit} words each, less the waves the "
                    "current one reads from there)")
            self.lm_constants[space] += 4
            load((space, at))
            self.constants[key] = (space, at)
        return self.constants[key]

    def ones_matrix(self) -> Slot:
        """16 words of 1.0 in LM: ``mma`` with it sums a vector's 4 words."""
        if self.ones is None:
            space = "lm0"
            at = self.lm_constants[space]
            if at + 16 > self.lm_limit or not self.residents.yield_to(space, at + 16):
                raise MNCoreConversionError("convert-task-to-mncore: the kernel's constants do "
                                            f"not fit in the lower half of {space}")
            self.lm_constants[space] += 16
            for row in range(4):
                self.broadcast(self.pooled([1.0]), (space, at + 4 * row))
            self.ones = (space, at)
        return self.ones

    # --- instructions

    def emit(self, op: m.InstructionOp) -> None:
        """Append ``op``; a program past the budget stops compiling here, before the
        emitter and the scheduler spend minutes on it."""
        self._count(1)
        op.step = m.i64_attr(self.next_step)
        self.next_step += self.spacing
        self.ops.append(op)
        self.residents.written(op)

    def repeat(self, body: Sequence[m.InstructionOp], count: int) -> None:
        """``body`` (instructions whose references carry their per-iteration strides)
        issued ``count`` times, as one ``mncore.repeat``: in program order, one
        instruction per :attr:`spacing` steps, as :meth:`emit` would; the scheduler
        packs the group as a unit. A single iteration is emitted plainly."""
        if count == 1:
            for op in body:
                self.emit(op.iteration(0, 0))
            return
        self._count(1 + len(body))
        for k, op in enumerate(body):
            op.step = m.i64_attr(k * self.spacing)
        period = len(body) * self.spacing
        self.ops.append(m.RepeatOp(self.next_step, count, period, body))
        self.next_step += count * period
        self.residents.written(self.ops[-1])

    def _count(self, n: int) -> None:
        self.emitted += n
        if self.emitted > self.max_instructions:
            raise MNCoreConversionError(
                f"convert-task-to-mncore: the program needs more than "
                f"{self.max_instructions:,} instructions; raise max_instructions or tile "
                "smaller")

    def dma(self, kind: str, src: m.RefAttr, dst: m.RefAttr, words: int, run: int | None = None,
            stride: int | None = None, l2b: int | None = None, rows: int | None = None,
            pitch: int | None = None) -> None:
        """One DMA and the wait on its tag; inside :meth:`transfers`, the group's tag
        (the group's one wait follows its last DMA)."""
        if self.group is None:
            self.tag += 1
        else:
            self.group = True
        op = m.DmaOp(0, kind, [src], dst, words, self.tag, run, stride, l2b, rows=rows,
                     pitch=pitch)
        self.emit(op)
        if kind == "store":  # from the numbers: cheaper than the op's properties
            self.residents.stored_over(dst.address.data,
                                       m.dram_extent(words, run, stride, rows, pitch),
                                       op.dram_words)
        if self.group is None:
            self.emit(m.WaitOp(0, "", [], None, None, self.tag))

    @contextmanager
    def transfers(self) -> Iterator[None]:
        """The DMAs issued inside share one tag and one wait, after the last of them:
        the pieces of one staging area are used together, so one wait is enough (and
        the scheduler places it when the last one is done)."""
        assert self.group is None, "transfer groups do not nest"
        self.tag += 1
        self.group = False  # True once a DMA joined
        try:
            yield
        except BaseException:  # the program is abandoned: no wait to add
            self.group = None
            raise
        joined, self.group = self.group, None
        if joined:
            self.emit(m.WaitOp(0, "", [], None, None, self.tag))

    def alu(self, kind: str, srcs: Sequence[Slot], dst: Slot, mask: Slot | None = None) -> None:
        """One ALU instruction (``mask``: write only where it is not zero). A source in a
        memory an earlier source already reads is first copied to a scratch word of a
        memory no source uses (the port rules)."""
        srcs = [*srcs, mask] if mask is not None else list(srcs)
        used = {srcs[0][0]} if srcs else set()
        for i in range(1, len(srcs)):
            if srcs[i][0] in used:
                space = next(s for s in ("grf0", "grf1", "lm0", "lm1")
                             if s not in used and s not in (x[0] for x in srcs[i + 1:]))
                scratch = (space, 4 * self.scratch if space.startswith("grf") else
                           self.lm_scratch[space][self.scratch])
                self.emit(m.AluOp(0, "fpass", [m.ref(*srcs[i])], m.ref(*scratch)))
                srcs[i] = scratch
            used.add(srcs[i][0])
        if mask is not None:
            *srcs, mask = srcs
        self.emit(m.AluOp(0, kind, [m.ref(*s) for s in srcs], m.ref(*dst),
                          mask=m.ref(*mask) if mask is not None else None))

    def broadcast(self, address: int, slot: Slot) -> None:
        """The DRAM word at ``address`` into all 4 words of ``slot`` on every PE."""
        stage, l1 = self.stage.take(4), self.l1.take()
        self.dma("load", m.ref("dram", address), m.ref(*stage), 4, 1, 0)
        self.emit(m.L2Op(0, "bcast", [m.ref(*stage)], m.ref(*l1), 4))
        self.emit(m.L1Op(0, "bcast", [m.ref(*l1)], m.ref(*slot)))

    def load(self, addresses: np.ndarray, fill: Slot | None = None) -> Slot:
        """Lane ``i`` of the wave gets the DRAM word ``addresses[i]``; with ``fill`` (a
        slot of zeros, say), the PEs past the wave's :attr:`width` get its words, not
        whatever their L1BM words held. A wave that holds these words in LM
        (:mod:`residents`) is read there instead."""
        if fill is None:
            found = self.residents.find(self.width, addresses, self.loads)
            if found is not None:
                return found
        slot = self.lm_slot()
        self._load_into(addresses, fill, slot)
        self.residents.loaded(self.width, addresses, slot, self.loads)
        return slot

    def _load_into(self, addresses: np.ndarray, fill: Slot | None, slot: Slot) -> None:
        if (addresses == addresses[0]).all() and fill is None:
            self.broadcast(int(addresses[0]), slot)
            return
        parts = self.per_l2b(addresses)
        plain = [descriptors(part, load=True) for _, part in parts]
        if fill is None and self._load_repeated(parts, plain, slot):
            return
        stage, l1 = self.stage.take(self.machine.l1b_per_l2b * self.width), self.l1.take()
        with self.transfers():
            for (n, _), part_descriptors in zip(parts, plain, strict=True):
                for first, address, words, run, stride, rows, pitch in part_descriptors:
                    self.dma("load", m.ref("dram", address),
                             m.ref("l2bm", stage[1] + first), words, run, stride, n, rows,
                             pitch)
        if fill is not None and self.width < self.chunk:
            self.emit(m.L1Op(0, "gather", [m.ref(*fill)], m.ref(*l1)))
        per_l2b = self.machine.l1b_per_l2b * self.width
        full = per_l2b if len(addresses) <= per_l2b else per_l2b * self.machine.l2bs
        lanes = len(addresses) if len(addresses) < full else None  # the rest no lane's
        self.emit(m.L2Op(0, "scatter", [m.ref(*stage)], m.ref(*l1), self.width, lanes=lanes))
        self.emit(m.L1Op(0, "scatter", [m.ref(*l1)], m.ref(*slot)))

    def _load_repeated(self, parts: list[tuple[int | None, np.ndarray]],
                       plain: list[list[Descriptor]], slot: Slot) -> bool:
        """Lanes (``parts``: :meth:`per_l2b`'s, whose DMAs would be ``plain``) that
        repeat words along the tree take only the distinct ones through DMA: one word
        per L1B where each L1B's lanes read one word (an L2 scatter of 4 words, an L1
        broadcast to its PEs: a channel's value of batch norm), or one L1B's words
        where every L1B's lanes read the same (an L2 broadcast: a bias row). False, and
        nothing emitted, for other lanes or where that is no cheaper."""
        blocks = self.machine.l1b_per_l2b
        rows = []
        for _, part in parts:  # each L2B's lanes as (L1B, word), the missing ones -1
            padded = np.full(blocks * self.width, -1, np.int64)
            padded[:len(part)] = part
            rows.append(padded.reshape(blocks, self.width))
        missing = [r < 0 for r in rows]
        firsts = [r[:, :1] for r in rows]
        if all(((r == f) | gone).all() for r, f, gone in zip(rows, firsts, missing,
                                                             strict=True)):
            # one word per L1B (a block with no lane reads its first's, any word)
            words = [np.where(f[:, 0] < 0, part[0], f[:, 0]) for (_, part), f in
                     zip(parts, firsts, strict=True)]
            kind, count = "scatter", 4
            sources = [np.repeat(w, 4) for w in words]
            l1_kind = "bcast"
        elif all(((r == r[:1]) | gone | (r[:1] < 0)).all() for r, gone in
                 zip(rows, missing, strict=True)) and all((r[0] >= 0).all() for r in rows):
            kind, count, l1_kind = "bcast", self.width, "scatter"
            sources = [r[0] for r in rows]
        else:
            return False
        fewer = [descriptors(source, load=True) for source in sources]
        if self._dma_cycles(fewer) >= self._dma_cycles(plain):
            return False  # the repeated words' pattern takes more descriptors than it saves
        stage, l1 = self.stage.take(len(sources[0])), self.l1.take()
        with self.transfers():
            for (n, _), source_descriptors in zip(parts, fewer, strict=True):
                for first, address, words_, run, stride, rows_, pitch in source_descriptors:
                    self.dma("load", m.ref("dram", address),
                             m.ref("l2bm", stage[1] + first), words_, run, stride, n,
                             rows_, pitch)
        self.emit(m.L2Op(0, kind, [m.ref(*stage)], m.ref(*l1), count))
        self.emit(m.L1Op(0, l1_kind, [m.ref(*l1)], m.ref(*slot)))
        return True

    def _dma_cycles(self, per_l2b: list[list[Descriptor]]) -> int:
        """The DMA engine's cycles for these transfers, set-ups included."""
        machine = self.machine
        return sum(machine.dma_setup_cycles + -(-d[2] // machine.dma_words_per_cycle)
                   for part in per_l2b for d in part)

    def keep(self, slot: Slot) -> Slot:
        """A loaded value copied to GRF: load slots are reused after a ring's worth of
        loads, so a value read across many loads must move out of them."""
        kept = self.fresh()
        self.alu("fpass", [slot], kept)
        return kept

    def store(self, slot: Slot, addresses: np.ndarray) -> None:
        """Lane ``i``'s word of ``slot`` to the DRAM word ``addresses[i]``."""
        stage, l1 = self.stage.take(self.machine.l1b_per_l2b * self.width), self.l1.take()
        self.emit(m.L1Op(0, "gather", [m.ref(*slot)], m.ref(*l1)))
        self.emit(m.L2Op(0, "gather", [m.ref(*l1)], m.ref(*stage), self.width))
        with self.transfers():
            for n, part in self.per_l2b(addresses):
                for first, address, words, run, stride, rows, pitch in descriptors(
                        part, load=False):
                    self.dma("store", m.ref("l2bm", stage[1] + first),
                             m.ref("dram", address), words, run, stride, n, rows, pitch)
        copy = self.residents.stored(self.width, addresses, slot, self.ring_taken.get(slot))
        if copy is not None:
            self.emit(copy)
            self.residents.copied()

    def load_to(self, addresses: np.ndarray, slot: Slot) -> None:
        """Lane ``i`` of ``slot`` (any PE memory) gets the DRAM word ``addresses[i]``,
        with no wave kept in LM found or recorded (a kernel's own layout)."""
        self._load_into(addresses, None, slot)

    def finished(self) -> list[m.InstructionOp | m.RepeatOp]:
        """The program's instructions, less the copies into resident slots that no
        later wave read."""
        unused = self.residents.unused_copies()
        return [op for op in self.ops if id(op) not in unused]

    def per_l2b(self, addresses: np.ndarray) -> list[tuple[int | None, np.ndarray]]:
        """A wave's lanes by L2B: L2B ``n`` takes lanes ``n L ..`` (``L``: its L1Bs times
        :attr:`width`); a wave that one L2B holds goes to all of them (loads) or comes
        from L2B 0 (stores)."""
        lanes = self.machine.l1b_per_l2b * self.width  # an L2B's lanes, width words each
        if len(addresses) <= lanes:
            return [(None, addresses)]
        return [(n, addresses[n * lanes:(n + 1) * lanes])
                for n in range(-(-len(addresses) // lanes))]


def _bits(values: Sequence[float]) -> tuple[int, ...]:
    """``values`` as the bits of their f64s: a key under which NaN finds itself and
    -0.0 is not 0.0 (as float keys, every NaN is new and the zeros are one)."""
    return tuple(np.asarray(values, np.float64).view(np.uint64).tolist())
