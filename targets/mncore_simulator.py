"""The cycle simulator of ``mncore`` programs, vectorised over PEs with numpy.

The machine is SIMD, so one instruction is a few numpy operations over arrays indexed
by PE (or by L1B/L2B block). Steps run in order; within a step every slot reads the
state before any slot writes it (VLIW). Timing is the compiler's job, as on the real
machine: the simulator does not stall on data, it *detects* hazards and reports them
with the step — reading a word before its writer's latency has passed, using DMA data
before the wait on its tag, addressing beyond a memory. Only ``mncore.wait`` stalls,
until its DMAs finish. DMAs share one engine: each takes the setup latency, then moves
its words at the engine's bandwidth after the words queued before it, so DMAs touch
memory in issue order (no hazard among them) and a wait covers the DMAs queued before
its tag's too. Reported: steps, cycles (4 per step plus DMA stalls), per-slot
utilisation, FLOPs and achieved vs peak FLOP/cycle.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.diagnostics import InterpretationError
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.dialects.values import find_function, paused_gc
from mncore_ir.targets.graph_interpreter import DEFAULT_MAX_BYTES
from mncore_ir.targets.mncore_decode import Decoded, Words, decode_program, span
from mncore_ir.targets.mncore_dram import dram_extent, load_inputs, read_outputs
from mncore_ir.targets.mncore_memories import (
    KEPT,
    Rows,
    borrowed,
    columns,
    physical,
    spans,
)
from mncore_ir.targets.mncore_plan import Step, build_plan

SLOTS = ("alu", "mau", "l1", "l2", "dma", "ctrl")



class HazardError(InterpretationError):
    """A program that would compute garbage on the machine."""

    def __init__(self, step: int, op: m.InstructionOp, message: str) -> None:
        super().__init__(f"step {step}: {op.name} {op.kind.data!r}: {message}".replace(
            " '':", ":"), op)
        self.step = step


@dataclass
class Report:
    machine: Machine
    steps: int
    cycles: int
    stall_cycles: int
    issued: dict[str, int]
    flops: int

    def utilisation(self, slot: str) -> float:
        return self.issued.get(slot, 0) / self.steps if self.steps else 0.0

    def format(self) -> str:
        achieved = self.flops / self.cycles if self.cycles else 0.0
        peak = self.machine.peak_flops_per_cycle
        slots = "  ".join(f"{s} {self.utilisation(s):.1%}" for s in SLOTS)
        return "\n".join([
            f"machine: {self.machine.describe()}",
            f"steps: {self.steps}  cycles: {self.cycles} (DMA stalls {self.stall_cycles})",
            f"slot utilisation: {slots}",
            f"FLOPs: {self.flops}  achieved {achieved:.1f} FLOP/cycle of peak {peak} "
            f"({achieved / peak:.1%})",
        ])


@dataclass
class State:
    machine: Machine
    memory: dict[str, np.ndarray] = field(default_factory=dict)
    ready: dict[str, np.ndarray] = field(default_factory=dict)
    writer: dict[str, np.ndarray] = field(default_factory=dict)
    pending: list[tuple[int, str, Words, int, str, Words, int | None]] = field(
        default_factory=list)
    """In-flight DMAs: (tag, destination space, destination words, finishing cycle, source
    space, source words, the one L2B whose L2BM it touches or ``None`` for all)."""
    dma_free: int = 0
    """The cycle the DMA engine finishes its queue: transfers share its bandwidth."""
    in_flight: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    """How many in-flight DMAs write (``"dst"``) or read (``"src"``) each word of a
    space, ``[word, L2B]`` for L2BM (a DMA to all L2Bs counts in every column), so that
    an access is checked against them all in one lookup, not one per DMA."""

    def busy(self, role: str, space: str, words: Words, block: int | None) -> bool:
        """Whether an in-flight DMA writes (``role`` ``"dst"``) or reads ``words`` of
        ``space`` as seen from L2B ``block`` (``None``: every L2B's copy)."""
        counts = self.in_flight.get((role, space))
        if counts is None:
            return False
        touched = counts[words]
        if block is not None and space == "l2bm":
            touched = touched[:, block]
        return bool(touched.any())

    def count(self, role: str, space: str, words: Words, block: int | None,
              delta: int) -> None:
        counts = self.in_flight.get((role, space))
        if counts is None:
            columns = self.machine.l2bs if space == "l2bm" else 1
            counts = self.in_flight[role, space] = np.zeros(
                (self.array(space).shape[0], columns), np.int32)
        column = slice(None) if block is None or space != "l2bm" else block
        if isinstance(words, slice) or len(words) < 2 or bool((words[1:] > words[:-1]).all()):
            counts[words, column] += delta
        else:  # words repeated within the DMA count once each time
            np.add.at(counts, (words, column), delta)

    def track(self, dma: tuple[int, str, Words, int, str, Words, int | None],
              delta: int) -> None:
        """Count an issued DMA's words in (``delta`` 1) or out (-1 at its wait)."""
        _, dspace, dwords, _, sspace, swords, block = dma
        self.count("dst", dspace, dwords, block, delta)
        self.count("src", sspace, swords, block, delta)

    def array(self, space: str) -> np.ndarray:
        """``space``'s words, word-major (``[word, PE or block]``, :mod:`mncore_memories`)."""
        if space not in self.memory:
            size = self.machine.size(space) if space != "dram" else self.dram_words
            self.memory[space] = np.zeros((size, columns(self.machine, space)), np.float32)
        return self.memory[space]

    def timed(self, space: str) -> None:
        """Track when each word of ``space`` is ready and which step wrote it (a checked
        run's; a values-only run needs neither)."""
        size = self.array(space).shape[0]
        self.ready[space] = np.zeros(size, np.int64)
        self.writer[space] = np.full(size, -1, np.int64)

    dram_words: int = 0


def check(program: m.ProgramOp) -> None:
    """The assembler's rules, as an interpretation error."""
    try:
        program.verify_()
    except VerifyException as error:
        raise InterpretationError(str(error)) from None


def bundles(instructions: list[Decoded]) -> list[tuple[int, list[Decoded]]]:
    """The instructions that write, by step."""
    found: list[tuple[int, list[Decoded]]] = []
    for ins in instructions:
        if ins.write is not None:
            if not found or found[-1][0] != ins.step:
                found.append((ins.step, []))
            found[-1][1].append(ins)
    return found


class Simulator:
    """A program decoded once for the cycle simulator, to run on many inputs (the lazy
    device runs one program every step)."""

    def __init__(self, program: m.ProgramOp, verify: bool = True,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """``verify=False`` skips the assembler's rules for a program already checked;
        a program whose DRAM would take more than ``max_bytes`` is refused before
        anything is allocated."""
        with paused_gc():  # a few objects per instruction, none garbage
            if verify:  # the assembler's rules, also when the IR was not verified when parsed
                check(program)
            self.program = program
            self.dram_words = dram_extent(program, max_bytes)
            self.instructions = decode_program(program)
            self.tensors = {role: program.tensors(role) for role in ("input", "output",
                                                                     "constant")}
        self.bundles = bundles(self.instructions)
        self.spaces = {space for ins in self.instructions for _, space, _ in
                       [*ins.reads, *([ins.write] if ins.write else [])]} - {"fwd"}
        self.written = written_rows(program.target, self.instructions)
        self.report: Report | None = None
        """The report of the first run: later runs only compute values."""
        self._plans: list[tuple[dict[str, np.ndarray], list[Step] | None, list[np.ndarray]]] = []

    def run(self, inputs: Sequence[Any], trace: list[dict[str, Any]] | None = None,
            memories: dict[str, np.ndarray] | None = None) -> tuple[list[np.ndarray], Report]:
        """The ``output`` tensors for numpy ``inputs`` (the ``input`` tensors in order),
        and the report. ``trace`` collects Chrome trace events; ``memories`` receives
        the final contents of every memory used."""
        with borrowed(self.program.target, self.written) as arrays:
            state = State(self.program.target, dict(arrays))
            state.dram_words = self.dram_words
            load_inputs(self.program, self.tensors, state.array("dram"), inputs)
            if self.report is None or trace is not None:
                self.checked(state, trace)
            else:
                self.values(state)
            if memories is not None:
                memories.update({space: physical(self.program.target, space, arr)
                                 for space, arr in state.memory.items()})
        assert self.report is not None
        return read_outputs(self.tensors["output"], state.array("dram")), self.report

    def checked(self, state: State, trace: list[dict[str, Any]] | None) -> None:
        """Run with every hazard check and the timing, into :attr:`report`."""
        machine = state.machine
        for space in self.spaces:
            state.timed(space)
        instructions = self.instructions
        issued: dict[str, int] = {}
        flops = stall = 0
        fwd: dict[int, np.ndarray] = {}
        unwaited: set[int] = set()  # tags of DMAs issued and not waited for yet
        index = 0
        last = instructions[-1].step if instructions else -1
        while index < len(instructions):
            step = instructions[index].step
            bundle = []
            while index < len(instructions) and instructions[index].step == step:
                bundle.append(instructions[index])
                index += 1
            start = 4 * step + stall
            for ins in bundle:  # a wait holds the whole bundle until its DMAs are done
                if ins.slot == "ctrl":  # the DMAs queued up to the tag's last are done
                    tag = ins.op.tag_number()
                    unwaited.discard(tag)
                    upto = 1 + max((k for k, p in enumerate(state.pending) if p[0] == tag),
                                   default=-1)
                    done, state.pending = state.pending[:upto], state.pending[upto:]
                    finish = max((p[3] for p in done), default=start)
                    stall += max(0, finish - 4 * step - stall)
                    for dma in done:
                        state.track(dma, -1)
            cycle = 4 * step + stall
            if trace is not None and cycle > start:
                trace.append({"name": "stall", "ph": "X", "pid": 0,
                              "tid": SLOTS.index("ctrl"), "ts": start, "dur": cycle - start,
                              "args": {"step": step}})
            writes = []
            for ins in bundle:
                op = ins.op
                issued[ins.slot] = issued.get(ins.slot, 0) + 1
                if trace is not None:
                    trace.append({"name": op.kind.data or op.name.removeprefix("mncore."),
                                  "ph": "X", "pid": 0, "tid": SLOTS.index(ins.slot),
                                  "ts": cycle, "dur": 4, "args": {"step": step,
                                                                  "asm": str(op)}})
                if ins.write is None:
                    continue
                values = [read(state, ins, ref, space, words, step, fwd)
                          for ref, space, words in ins.reads]
                mask = values.pop() if ins.masked else None
                with np.errstate(all="ignore"):  # lanes no task uses hold anything
                    writes.append((ins, ins.execute(values), mask))
                flops += ins.flops
            fwd = {}
            for ins, result, mask in writes:
                write(state, ins, result, step, 4 * step + stall, mask)
                if ins.slot == "dma":
                    unwaited.add(ins.op.tag_number())
                if ins.slot in ("alu", "mau") and (ins.slot == "alu" or step not in fwd):
                    fwd[step] = result
        if unwaited:
            raise InterpretationError(f"the program ends with DMA tags {sorted(unwaited)} "
                                      "not waited for")
        self.report = Report(machine, last + 1, 4 * (last + 1) + stall, stall, issued, flops)

    def values(self, state: State) -> None:
        """Run a program that a checked run found free of hazards: only the values
        (its timing, hence every check, does not depend on them), by its plan
        (:mod:`mncore_plan`) where it has one."""
        memory = {space: state.array(space) for space in self.spaces}
        with np.errstate(all="ignore"):  # lanes no task uses hold anything
            plan = self.plan(memory)
            if plan is not None:
                for run in plan:
                    run()
                return
            fwd: dict[int, np.ndarray] = {}
            for step, bundle in self.bundles:
                fwd = run_bundle(bundle, memory, fwd.get(step - 1))

    def plan(self, memory: dict[str, np.ndarray]) -> list[Step] | None:
        """The plan bound to these memories (kept from run to run, a few sets of them),
        made on their first run; its DRAM cell pointed at this run's DRAM."""
        on_chip = [space for space in memory if space != "dram"]
        found = next((entry for entry in self._plans
                      if all(entry[0][space] is memory[space] for space in on_chip)), None)
        if found is None:
            dram = [memory.get("dram", np.zeros((0, 1), np.float32))]
            arrays = {space: memory[space] for space in on_chip}
            with paused_gc():  # a few objects per instruction, none garbage
                found = (arrays, build_plan(self.program.target, self.bundles, arrays, dram,
                                            lambda bundle, memory: run_bundle(bundle, memory,
                                                                              None)), dram)
            self._plans = [*self._plans[-KEPT:], found]
        if "dram" in memory:
            found[2][0] = memory["dram"]
        return found[1]


def run_bundle(bundle: list[Decoded], memory: dict[str, np.ndarray],
               fwd: np.ndarray | None) -> dict[int, np.ndarray]:
    """One step's instructions, all reading before any writes (VLIW); ``fwd`` is the
    step before's ALU/MAU result. Returns this step's, for the next (keyed by step)."""
    writes = []
    for ins in bundle:
        values = [fwd if space == "fwd" else fetch(memory[space], words, ins)
                  for _, space, words in ins.reads]
        mask = values.pop() if ins.masked else None
        writes.append((ins, ins.execute(values), mask))
    found: dict[int, np.ndarray] = {}
    for ins, result, mask in writes:
        _, space, words = ins.write  # type: ignore[misc]
        store(memory[space], words, result, ins, space, mask)
        if ins.slot in ("alu", "mau") and (ins.slot == "alu" or ins.step not in found):
            found[ins.step] = result
    return found


def written_rows(machine: Machine, instructions: list[Decoded]) -> dict[str, Rows]:
    """The words (rows) of each on-chip memory that ``instructions`` write."""
    found: dict[str, np.ndarray] = {}
    for ins in instructions:
        if ins.write is not None and ins.write[1] not in ("dram", "fwd"):
            _, space, words = ins.write
            if space not in found:
                found[space] = np.zeros(machine.size(space) + 1, bool)
            rows = found[space]
            rows[words if isinstance(words, slice) else words[words < len(rows)]] = True
    return {space: spans(np.flatnonzero(rows)) for space, rows in found.items()}


def simulate(program: m.ProgramOp, inputs: Sequence[Any], trace: list[dict[str, Any]] | None
             = None, memories: dict[str, np.ndarray] | None = None, verify: bool = True,
             max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[list[np.ndarray], Report]:
    """Run ``program`` once (:class:`Simulator` decodes it for many runs)."""
    return Simulator(program, verify, max_bytes).run(inputs, trace, memories)


def _overlap(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first word of ``a`` that ``b`` (a pending DMA's words, sorted) also touches:
    a span by one bisection, other word lists by a bisection per word."""
    if not len(a) or not len(b):
        return None
    lo, hi = int(a[0]), int(a[-1])
    if span(a):  # a span, or a DMA's one run
        if hi < b[0] or b[-1] < lo:
            return None
        i = int(np.searchsorted(b, lo))
        return int(b[i]) if i < len(b) and b[i] <= hi else None
    found = b[np.minimum(np.searchsorted(b, a), len(b) - 1)] == a
    return int(a[found].min()) if found.any() else None


def _sorted(words: np.ndarray) -> np.ndarray:
    """``words`` in increasing order (a DMA's runs already are, unless they overlap)."""
    return words if len(words) < 2 or bool((words[1:] >= words[:-1]).all()) else np.sort(words)


def _apart(space: str, a: int | None, b: int | None) -> bool:
    """Two accesses of ``space`` that touch different L2Bs' copies."""
    return space == "l2bm" and a is not None and b is not None and a != b


def _last(words: Words) -> int:
    return words.stop - 1 if isinstance(words, slice) else int(words[-1])


def _array(words: Words) -> np.ndarray:
    return np.arange(words.start, words.stop) if isinstance(words, slice) else words


def _count(words: Words) -> int:
    return words.stop - words.start if isinstance(words, slice) else len(words)


def read(state: State, ins: Decoded, ref: m.RefAttr, space: str, words: Words, step: int,
         fwd: dict[int, np.ndarray]) -> np.ndarray:
    op = ins.op
    if space == "fwd":
        if step - 1 not in fwd:
            raise HazardError(step, op, f"reads fwd but step {step - 1} produced nothing")
        return fwd[step - 1]
    arr = state.array(space)
    if _last(words) >= arr.shape[0]:
        raise HazardError(step, op, f"{ref} + {_count(words)} words is beyond {space}")
    ready = state.ready[space][words]
    if ready.max() > step:  # the word ready last, for the message
        late = int(np.argmax(ready))
        word = int(_array(words)[late])
        raise HazardError(step, op, f"reads {space}[{word}] written at step "
                                    f"{state.writer[space][word]}, ready only at step "
                                    f"{ready[late]}")
    if ins.slot != "dma" and state.busy("dst", space, words, ins.block):
        for tag, dspace, dwords, _, _, _, block in state.pending:
            if dspace == space and not _apart(space, ins.block, block) and (
                    word := _overlap(_array(words), _sorted(_array(dwords)))) is not None:
                raise HazardError(step, op, f"reads {space}[{word}] before the wait on "
                                            f"DMA tag {tag}")
    return fetch(arr, words, ins)


def fetch(arr: np.ndarray, words: Words, ins: Decoded) -> np.ndarray:
    """The words as memory holds them, ``[word, PE or block]`` (no transposition: an
    instruction's few words of every PE lie together). A span is a view: copied where
    the instruction could pass it on as its result (a later write of the bundle would
    change it)."""
    value = arr[words]
    return value.copy() if isinstance(words, slice) and (
        arr.shape[1] == 1 or ins.slot in ("dma", "l1", "l2")) else value


def store(arr: np.ndarray, words: Words, value: np.ndarray, ins: Decoded, space: str,
          mask: np.ndarray | None) -> None:
    """Write ``value`` (``[word, PE or block]``): where ``mask`` is not zero, if given;
    one L2B's copy of L2BM for a DMA to one L2B (``value`` is its one column)."""
    if mask is not None:
        value = np.where(mask != 0, value, arr[words])
    block = ins.block if space == "l2bm" else None
    if block is None:  # (a DMA load's one column goes to every L2B's copy)
        arr[words] = value
    else:
        arr[words, block] = value[:, 0]


def write(state: State, ins: Decoded, value: np.ndarray, step: int, cycle: int,
          mask: np.ndarray | None = None) -> None:
    """``mask``: write only where it is not zero (the rest keeps its value)."""
    assert ins.write is not None
    op, (ref, space, words) = ins.op, ins.write
    arr = state.array(space)
    if _last(words) >= arr.shape[0]:
        raise HazardError(step, op, f"{ref} + {_count(words)} words is beyond {space}")
    mine = ins.block
    if ins.slot != "dma" and any(state.busy(r, space, words, mine) for r in ("dst", "src")):
        for tag, dspace, dwords, _, sspace, swords, block in state.pending:
            for busy, touched, what in ((dspace, dwords, "writing"),
                                        (sspace, swords, "reading")):
                if busy == space and not _apart(space, mine, block) and (
                        word := _overlap(_array(words), _sorted(_array(touched)))) is not None:
                    raise HazardError(step, op, f"writes {space}[{word}] while DMA tag "
                                                f"{tag} is still {what} it")
    store(arr, words, value, ins, space, mask)
    state.ready[space][words] = step + ins.latency
    state.writer[space][words] = step
    if ins.slot == "dma":  # setup overlaps the queue; the words share its bandwidth
        machine = state.machine
        n = _count(words)
        start = max(cycle + machine.dma_setup_cycles, state.dma_free)
        finish = state.dma_free = start + -(-n // machine.dma_words_per_cycle)
        ((_, sspace, source),) = ins.reads
        dma = (op.tag_number(), space, words, finish, sspace, source, mine)
        state.pending.append(dma)
        state.track(dma, 1)


def find_program(module: ModuleOp, name: str | None = None) -> m.ProgramOp:
    return find_function(module, name, m.ProgramOp)


def chrome_trace(program: m.ProgramOp, events: list[dict[str, Any]]) -> str:
    meta = [{"name": "process_name", "ph": "M", "pid": 0,
             "args": {"name": f"mncore.program @{program.sym_name.data} (ts = cycles)"}}]
    meta += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": i, "args": {"name": s}}
             for i, s in enumerate(SLOTS)]
    return json.dumps({"traceEvents": meta + events})
