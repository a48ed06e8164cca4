"""Decoding ``mncore`` instructions for the cycle simulator: each issue's slot, words,
latency and the function computing its result, read out of its xDSL properties once
(they are slow to read, and every run of a program reads them again); a repeated
group's issues with their iteration's words."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_isa import ALU, MAU
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.targets.mncore_memories import Execute, tree

Words = slice | np.ndarray
"""Words of a memory: a span as a slice (a view, no gather), other lists as arrays."""


@dataclass(slots=True)
class Decoded:
    """One instruction as the simulator runs it, read out of its xDSL properties once
    (they are slow to read, and every run of a program reads them again)."""

    op: m.InstructionOp
    step: int
    slot: str
    reads: list[tuple[m.RefAttr, str, Words]]
    """(reference, space, words) of each source, a mask last; a DMA load's DRAM words."""
    write: tuple[m.RefAttr, str, Words] | None
    masked: bool
    block: int | None
    """:func:`l2b_of`."""
    flops: int
    latency: int
    execute: Execute


def decode(op: m.InstructionOp, machine: Machine) -> Decoded:
    reads, writes = op.operands_of(machine)
    accesses = [(ref, ref.space.data, slice(ref.address.data, ref.address.data + n))
                for ref, n in reads]
    written = [(ref, ref.space.data, slice(ref.address.data, ref.address.data + n))
               for ref, n in writes]
    if isinstance(op, m.DmaOp):  # the DRAM side as its words, in L2BM order
        dram = op.dram_words()
        words: Words = slice(int(dram[0]), int(dram[-1]) + 1) if span(dram) else dram
        side = accesses if op.kind.data == "load" else written
        side[0] = (side[0][0], "dram", words)
    latency = {"alu": machine.alu_latency, "mau": machine.alu_latency,
               "l1": machine.l1_latency, "l2": machine.l2_latency}.get(op.SLOT, 0)
    return Decoded(op, op.at, op.SLOT, accesses, written[0] if written else None,
                   isinstance(op, m.AluOp) and op.mask is not None, l2b_of(op),
                   op_flops(op, machine), latency, executor(op, machine))


def decode_program(program: m.ProgramOp) -> list[Decoded]:
    """Every issue of ``program`` decoded, in issue order: a repeated group's body once,
    each iteration's words shifted by the references' strides."""
    machine = program.target
    found: list[Decoded] = []
    for unit in program.units():
        if isinstance(unit, m.InstructionOp):
            found.append(decode(unit, machine))
            continue
        body = []
        for op in unit.group():
            reads, writes = op.strided_operands(machine)
            body.append((decode(op, machine), [s[3] for s in reads], [s[3] for s in writes]))
        for i in range(unit.times):
            start = unit.at + i * unit.every
            for ins, read_strides, write_strides in body:
                write = ins.write
                if write is not None and write_strides[0]:
                    write = (write[0], write[1], _shift(write[2], i * write_strides[0]))
                found.append(Decoded(
                    ins.op, start + ins.step, ins.slot,
                    [(r, sp, _shift(w, i * st)) if st else (r, sp, w) for (r, sp, w), st in
                     zip(ins.reads, read_strides, strict=True)],
                    write, ins.masked, ins.block, ins.flops, ins.latency, ins.execute))
    if any(isinstance(unit, m.RepeatOp) for unit in program.units()):
        found.sort(key=lambda ins: ins.step)  # stable: program order within a step
    return found


def _shift(words: Words, by: int) -> Words:
    return slice(words.start + by, words.stop + by) if isinstance(words, slice) else words + by


def span(words: np.ndarray) -> bool:
    """Whether ``words`` are consecutive, in order (not so a transposing DMA's rows)."""
    return int(words[-1]) - int(words[0]) + 1 == len(words) and bool((np.diff(words) == 1).all())


def l2b_of(op: m.InstructionOp) -> int | None:
    """The one L2B whose L2BM ``op`` touches (a DMA's), or ``None``: all of them."""
    if isinstance(op, m.DmaOp):
        return op.block if op.block is not None or op.kind.data == "load" else 0
    return None


def executor(op: m.InstructionOp, machine: Machine) -> Execute:
    """The function from an instruction's source values to the value it writes (each
    ``[word, PE or block]``, as memory holds them), its kind resolved once when it is
    decoded. The caller runs it under ``np.errstate(all="ignore")``: lanes no task uses
    hold anything."""
    kind = op.kind.data
    if isinstance(op, m.AluOp) and not ALU[kind].arity:
        constant = np.full((4, machine.pes), ALU[kind].semantics(), np.float32)
        return lambda values: constant
    if isinstance(op, m.AluOp) and kind == "fpass":  # a copy, never a source's view,
        return lambda values: values[0].copy()  # which a later write could change
    if isinstance(op, m.AluOp | m.MauOp):  # a new array (comparisons: bools to words)
        semantics = (ALU if isinstance(op, m.AluOp) else MAU)[kind].semantics
        return lambda values: semantics(*values).astype(np.float32, copy=False)
    if isinstance(op, m.L1Op | m.L2Op):
        return tree(kind, *tree_geometry(op, machine))
    if isinstance(op, m.DmaOp):  # the source's words, copied by fetch
        if kind == "store":  # from one L2B's copy (L2B 0's unless it names one)
            block = l2b_of(op) or 0
            return lambda values: values[0][:, block:block + 1]
        return lambda values: values[0]  # one column: to every L2B's copy, or one
    return _writes_nothing  # a wait


def tree_geometry(op: m.L1Op | m.L2Op, machine: Machine) -> tuple[int, int, int]:
    """A tree transfer's blocks (L1Bs, L2Bs), units below each (PEs, L1Bs) and words
    per unit."""
    if isinstance(op, m.L1Op):
        return machine.l1bs, machine.pes_per_l1b, 4
    return machine.l2bs, machine.l1b_per_l2b, op.count


def _writes_nothing(values: list[np.ndarray]) -> np.ndarray:
    raise AssertionError("an instruction that writes nothing was executed")


def op_flops(op: m.InstructionOp, machine: Machine) -> int:
    """What the instruction computes, from the ISA table."""
    if isinstance(op, m.AluOp):
        return ALU[op.kind.data].flops * machine.pes
    if isinstance(op, m.MauOp):
        return MAU[op.kind.data].flops * machine.pes
    return 0

