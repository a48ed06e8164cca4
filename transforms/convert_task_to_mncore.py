"""``convert-task-to-mncore{machine=...}``: task kernels become ``mncore.program``s.

This first version lowers kernels of **elementwise tasks, copies (permute, reshape,
slice) and matmuls on f32 buffers**; other kinds are a clear error naming them. Every
buffer lives in DRAM, row-major. A task's output tile is processed in waves of 4 words
per PE over the PEs of one L2B (the DMA broadcasts to every L2B, so the others repeat
the same work):

* each input region is packed into an L2BM staging area by DMAs of its contiguous runs
  (broadcast operands read over the tile's image), scattered to the L1BMs and from
  there to the PEs' LM (a region that is one value everywhere is broadcast instead);
* the task's body runs on the ALU, values in GRF (copies keep every instruction inside
  the port rules); body constants are broadcast once into LM from a constant table;
* results are gathered back to L2BM and stored by DMAs of the output's runs;
* a matmul gives each PE one row and 4 columns of its tile and runs ``vmm`` on the MAU
  over K in chunks of 4 (see ``lower_matmul``).

Instructions are emitted in this order (their meaning) and placed by
``mncore-schedule``'s list scheduler.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.dialects.mncore_machines import MACHINES, Machine
from mncore_ir.targets.graph_interpreter import constant_value
from mncore_ir.transforms.mncore_schedule import schedule


class MNCoreConversionError(DiagnosticException):
    """A kernel this conversion cannot lower."""


#: Task kinds that only move data: their output tile is a copy of words of the input.
COPIES = ("permute", "reshape", "slice")

#: Body ops that are one ALU instruction.
_ALU = {g.AddOp: "fadd", g.SubOp: "fsub", g.MulOp: "fmul", g.MaximumOp: "fmax",
        g.MinimumOp: "fmin", g.NegOp: "fneg", g.ExpOp: "fexp", g.LogOp: "flog",
        g.RsqrtOp: "frsqrt", g.ReciprocalOp: "frecip"}

Slot = tuple[str, int]  # a PE memory and the first of its 4 words


def strides_of(shape: Sequence[int]) -> np.ndarray:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return np.array(out[::-1], dtype=np.int64)


def runs(addresses: np.ndarray) -> list[tuple[int, int, int]]:
    """(first element, first address, length) of each run of consecutive addresses."""
    if not len(addresses):
        return []
    breaks = np.flatnonzero(np.diff(addresses) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(addresses)]])
    return [(int(s), int(addresses[s]), int(e - s)) for s, e in zip(starts, ends, strict=True)]


class ProgramBuilder:
    def __init__(self, kernel: t.KernelOp, machine: Machine) -> None:
        self.kernel, self.machine = kernel, machine
        self.ops: list[m.InstructionOp] = []
        self.dram: dict[SSAValue, int] = {}
        self.tag = 0
        self.constants: dict[float, Slot] = {}
        self.lm_next = {"lm0": 0, "lm1": 0}
        self.size = 0
        per_l2b = machine.l1b_per_l2b * machine.pes_per_l1b
        self.wave = 4 * per_l2b  # elements per wave
        self.chunk = 4 * machine.pes_per_l1b  # words per L1BM per wave

    # --- places

    def place(self, value: SSAValue, words: int) -> int:
        at = self.size
        self.dram[value] = at
        self.size += -(-max(words, 1) // 16) * 16
        return at

    def lm_slot(self, index: int) -> Slot:
        space = ("lm0", "lm1")[index % 2]
        at = self.lm_next[space]
        self.lm_next[space] += 4
        if self.lm_next[space] > self.machine.lm_words:
            raise MNCoreConversionError("convert-task-to-mncore: the kernel's values do not fit "
                                        f"in {space} ({self.machine.lm_words} words)")
        return space, at

    # --- instructions

    def emit(self, op: m.InstructionOp) -> None:
        op.step = IntegerAttr(len(self.ops), i64)
        self.ops.append(op)

    def dma(self, kind: str, src: m.RefAttr, dst: m.RefAttr, words: int) -> None:
        self.tag += 1
        self.emit(m.DmaOp(0, kind, [src], dst, words, self.tag))
        self.emit(m.WaitOp(0, "", [], None, None, self.tag))

    def alu(self, kind: str, srcs: Sequence[Slot], dst: Slot) -> None:
        """One ALU instruction (sources at most 2). When both sources are in one memory,
        the second is first copied to the reserved word 0 of the other GRF."""
        srcs = list(srcs)
        if len(srcs) == 2 and srcs[0][0] == srcs[1][0]:
            scratch = ("grf1" if srcs[1][0] == "grf0" else "grf0", 0)
            self.emit(m.AluOp(0, "fpass", [m.RefAttr(*srcs[1])], m.RefAttr(*scratch)))
            srcs[1] = scratch
        self.emit(m.AluOp(0, kind, [m.RefAttr(*s) for s in srcs], m.RefAttr(*dst)))

    # --- the program

    def build(self) -> m.ProgramOp:
        kernel = self.kernel
        for task in kernel.tasks():
            if task.kind.data not in ("elementwise", "matmul", *COPIES):
                raise MNCoreConversionError(
                    f"convert-task-to-mncore: task kind {task.kind.data!r} is not lowered yet "
                    "(this version lowers elementwise tasks, copies and matmuls)")
        values = [*kernel.inputs, *kernel.outputs, *(
            op.results[0] for op in kernel.body.block.ops
            if isinstance(op, t.BufferOp | t.ConstantOp))]
        for v in values:
            if v.type.element_type != f32:  # type: ignore[attr-defined]
                raise MNCoreConversionError(f"convert-task-to-mncore: {v.type} is not f32 (this "
                                            "version lowers f32 buffers)")
            self.place(v, math.prod(v.type.get_shape()))  # type: ignore[attr-defined]
        tensors = []
        names = iter(range(1 << 30))
        for role, group in (("input", kernel.inputs), ("output", kernel.outputs)):
            for v in group:
                typ = TensorType(f32, v.type.get_shape())  # type: ignore[attr-defined]
                tensors.append(m.TensorOp.create(properties={
                    "sym_name": StringAttr(v.name_hint or f"{role}{next(names)}"),
                    "role": StringAttr(role), "at": m.RefAttr("dram", self.dram[v]),
                    "type": typ}))
        for op in kernel.body.block.ops:
            if isinstance(op, t.ConstantOp):
                value = op.value
                tensors.append(m.TensorOp.create(properties={
                    "sym_name": StringAttr(op.result.name_hint or f"const{next(names)}"),
                    "role": StringAttr("constant"),
                    "at": m.RefAttr("dram", self.dram[op.result]), "value": value,
                    "type": value.get_type()}))
        bodies = kernel.bodies()
        self.load_constants(list(bodies.values()), tensors)
        after_constants = dict(self.lm_next)
        for task in kernel.tasks():
            self.lm_next = dict(after_constants)  # input slots are reused task after task
            if task.kind.data == "matmul":
                self.lower_matmul(task)
            else:
                self.lower(task, bodies[task.body.root_reference.data] if task.body else None)
        block = Block([*tensors, *self.ops])  # type: ignore[list-item]
        program = m.ProgramOp(kernel.sym_name.data, self.machine.name, Region(block))
        schedule(program)
        return program

    def load_constants(self, bodies: Sequence[t.BodyOp], tensors: list[m.TensorOp]) -> None:
        """Every constant of every body, 4 copies each in DRAM, broadcast once to LM."""
        found: list[float] = [0.0, 1.0]  # zero and one serve relu and sigmoid
        for body in bodies:
            for op in body.body.block.ops:
                if isinstance(op, g.ConstantOp):
                    (v,) = constant_value(op.value).reshape(-1).tolist()  # type: ignore[arg-type]
                    if float(v) not in found:
                        found.append(float(v))
        table = np.repeat(np.array(found, np.float32), 4)
        at = self.zeros = self.size  # the first 4 words are zeros: matmul padding
        self.size += -(-len(table) // 16) * 16
        typ = TensorType(f32, [len(table)])
        tensors.append(m.TensorOp.create(properties={
            "sym_name": StringAttr("body_constants"), "role": StringAttr("constant"),
            "at": m.RefAttr("dram", at), "value": DenseIntOrFPElementsAttr.from_list(
                typ, table.tolist()), "type": typ}))
        for i, v in enumerate(found):
            self.dma("load", m.RefAttr("dram", at + 4 * i), m.RefAttr("l2bm", 0), 4)
            self.emit(m.L2Op(0, "bcast", [m.RefAttr("l2bm", 0)], m.RefAttr("l1bm", 0), 4))
            slot = self.lm_slot(i)
            self.emit(m.L1Op(0, "bcast", [m.RefAttr("l1bm", 0)], m.RefAttr(*slot)))
            self.constants[v] = slot

    def element_addresses(self, value: SSAValue, region: t.Tile, tile: t.Tile,
                          flat: np.ndarray) -> np.ndarray:
        """The DRAM word of ``value`` that each element of ``tile`` reads (broadcast)."""
        index = np.stack(np.unravel_index(flat, tile.sizes)) if tile.sizes else np.zeros(
            (0, len(flat)), np.int64)
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        strides = strides_of(shape)
        lead = len(tile.sizes) - len(shape)
        address = np.full(len(flat), self.dram[value], np.int64)
        for d in range(len(shape)):
            broadcast = region.sizes[d] == 1 and tile.sizes[lead + d] != 1
            coordinate = region.offsets[d] + (0 if broadcast else index[lead + d])
            address += coordinate * strides[d]
        return address

    def copy_addresses(self, task: t.TaskOp, tile: t.Tile, flat: np.ndarray) -> np.ndarray:
        """The DRAM word a permute, reshape or slice task reads for each element of its
        output tile."""
        ((value, region),) = task.reads()
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        strides = strides_of(shape)
        base = self.dram[value] + int(np.dot(region.offsets, strides)) if shape else \
            self.dram[value]
        kind = task.kind.data
        if kind == "reshape":  # both bands are contiguous runs
            return base + flat
        index = np.stack(np.unravel_index(flat, tile.sizes))
        if kind == "permute":
            perm = task.attrs.data["perm"].get_values()  # type: ignore[attr-defined]
            return base + sum(index[i] * strides[p] for i, p in enumerate(perm))
        dim = task.attrs.data["dim"].value.data % len(shape)  # type: ignore[attr-defined]
        start = task.attrs.data["start"].value.data  # type: ignore[attr-defined]
        step_attr = task.attrs.data.get("step")
        step = step_attr.value.data if step_attr is not None else 1  # type: ignore[attr-defined]
        along = [start + step * index[d] if d == dim else index[d] for d in range(len(shape))]
        return base + sum(along[d] * strides[d] for d in range(len(shape)))

    def lower(self, task: t.TaskOp, body: t.BodyOp | None) -> None:
        writes = task.writes()
        tile = writes[0][1]
        n = math.prod(tile.sizes)
        inputs = task.reads()
        in_slots = [self.lm_slot(i) for i in range(len(inputs))]
        for w in range(-(-n // self.wave)):
            grf = {"grf0": 4, "grf1": 4}  # word 0 of each GRF is the copy scratch
            flat = np.arange(w * self.wave, min(n, (w + 1) * self.wave))
            for i, (value, region) in enumerate(inputs):
                addresses = (self.element_addresses(value, region, tile, flat) if body
                             else self.copy_addresses(task, tile, flat))
                stage = 2 * i * self.wave
                if (addresses == addresses[0]).all():  # one value for every element
                    for k in range(4):
                        self.dma("load", m.RefAttr("dram", int(addresses[0])),
                                 m.RefAttr("l2bm", stage + k), 1)
                    self.emit(m.L2Op(0, "bcast", [m.RefAttr("l2bm", stage)],
                                     m.RefAttr("l1bm", 0), 4))
                    self.emit(m.L1Op(0, "bcast", [m.RefAttr("l1bm", 0)], m.RefAttr(*in_slots[i])))
                    continue
                for first, address, length in runs(addresses):
                    self.dma("load", m.RefAttr("dram", address), m.RefAttr("l2bm", stage + first),
                             length)
                self.emit(m.L2Op(0, "scatter", [m.RefAttr("l2bm", stage)], m.RefAttr("l1bm", 0),
                                 self.chunk))
                self.emit(m.L1Op(0, "scatter", [m.RefAttr("l1bm", 0)], m.RefAttr(*in_slots[i])))
            results = self.compute(body, in_slots, grf) if body else in_slots
            for j, ((value, out_tile), slot) in enumerate(zip(writes, results, strict=True)):
                stage = (2 * len(inputs) + 2 * j) * self.wave
                self.emit(m.L1Op(0, "gather", [m.RefAttr(*slot)], m.RefAttr("l1bm", 0)))
                self.emit(m.L2Op(0, "gather", [m.RefAttr("l1bm", 0)], m.RefAttr("l2bm", stage),
                                 self.chunk))
                addresses = self.element_addresses(value, out_tile, out_tile, flat)
                for first, address, length in runs(addresses):
                    self.dma("store", m.RefAttr("l2bm", stage + first),
                             m.RefAttr("dram", address), length)

    def lower_matmul(self, task: t.TaskOp) -> None:
        """``C = A @ B`` on the MAU: each PE owns one row and 4 columns of C and adds
        ``a(4) . B(4x4)`` over K in chunks of 4 (``vmm``). The PEs of one L1B share a
        block of 4 columns, so that block's 4x4 piece of B is broadcast to them; each PE
        gets its own piece of A's row. Missing rows and columns are zeros."""
        (a, at), (b, bt) = task.reads()
        ((c, ct),) = task.writes()
        rows, cols_all, depth = ct.sizes[-2], ct.sizes[-1], at.sizes[-1]
        sa, sb, sc = (strides_of(v.type.get_shape()) for v in (a, b, c))  # type: ignore[attr-defined]
        base_a = self.dram[a] + int(np.dot(at.offsets, sa))
        base_b = self.dram[b] + int(np.dot(bt.offsets, sb))
        base_c = self.dram[c] + int(np.dot(ct.offsets, sc))
        per = self.machine.pes_per_l1b
        blocks = self.machine.l1b_per_l2b
        row_blocks, col_blocks = -(-rows // per), -(-cols_all // 4)
        groups = [(jb, rb) for jb in range(col_blocks) for rb in range(row_blocks)]
        matrix, vector, acc = ("grf0", 4), self.lm_slot(0), ("grf1", 4)
        stage_m, stage_v, stage_c = 0, 16 * blocks, 16 * blocks + 4 * per * blocks
        for first in range(0, len(groups), blocks):
            wave = groups[first:first + blocks]
            self.emit(m.AluOp(0, "fzero", [], m.RefAttr(*acc)))
            for kc in range(0, depth, 4):
                width = min(4, depth - kc)
                for gi, (jb, _) in enumerate(wave):  # B[kc:kc+4, 4jb:4jb+4], zero padded
                    cols = min(4, cols_all - 4 * jb)
                    for i in range(4):
                        target = stage_m + 16 * gi + 4 * i
                        if i < width:
                            self.dma("load", m.RefAttr("dram", base_b + int((kc + i) * sb[-2] + 4
                                     * jb * sb[-1])), m.RefAttr("l2bm", target), cols)
                        if i >= width or cols < 4:
                            pad = 0 if i >= width else cols
                            self.dma("load", m.RefAttr("dram", self.zeros),
                                     m.RefAttr("l2bm", target + pad), 4 - pad)
                for gi, (_, rb) in enumerate(wave):  # A[r, kc:kc+4] for each PE's row
                    for p in range(per):
                        r = rb * per + p
                        if r >= rows:
                            continue
                        target = stage_v + 4 * per * gi + 4 * p
                        self.dma("load", m.RefAttr("dram", base_a + int(r * sa[-2] + kc
                                 * sa[-1])), m.RefAttr("l2bm", target), width)
                        if width < 4:
                            self.dma("load", m.RefAttr("dram", self.zeros),
                                     m.RefAttr("l2bm", target + width), 4 - width)
                self.emit(m.L2Op(0, "scatter", [m.RefAttr("l2bm", stage_m)],
                                 m.RefAttr("l1bm", 0), 16))
                for i in range(4):
                    self.emit(m.L1Op(0, "bcast", [m.RefAttr("l1bm", 4 * i)],
                                     m.RefAttr(matrix[0], matrix[1] + 4 * i)))
                self.emit(m.L2Op(0, "scatter", [m.RefAttr("l2bm", stage_v)],
                                 m.RefAttr("l1bm", 64), 4 * per))
                self.emit(m.L1Op(0, "scatter", [m.RefAttr("l1bm", 64)], m.RefAttr(*vector)))
                self.emit(m.MauOp(0, "vmm", [m.RefAttr(*matrix), m.RefAttr(*vector),
                                             m.RefAttr(*acc)], m.RefAttr(*acc)))
            self.emit(m.L1Op(0, "gather", [m.RefAttr(*acc)], m.RefAttr("l1bm", 0)))
            self.emit(m.L2Op(0, "gather", [m.RefAttr("l1bm", 0)], m.RefAttr("l2bm", stage_c),
                             4 * per))
            for gi, (jb, rb) in enumerate(wave):
                cols = min(4, cols_all - 4 * jb)
                for p in range(per):
                    r = rb * per + p
                    if r < rows:
                        self.dma("store", m.RefAttr("l2bm", stage_c + 4 * per * gi + 4 * p),
                                 m.RefAttr("dram", base_c + int(r * sc[-2] + 4 * jb * sc[-1])),
                                 cols)

    def compute(self, body: t.BodyOp, in_slots: list[Slot], grf: dict[str, int]) -> list[Slot]:
        """ALU instructions for ``body``; returns the slots of the yielded values."""
        where: dict[SSAValue, Slot] = dict(zip(body.body.block.args, in_slots, strict=True))
        counter = [0]

        def fresh() -> Slot:
            space = ("grf0", "grf1")[counter[0] % 2]
            counter[0] += 1
            at = grf[space]
            if at + 4 > self.machine.grf_words:
                raise MNCoreConversionError("convert-task-to-mncore: a task body needs more "
                                            f"values than {space} holds")
            grf[space] += 4
            return space, at

        for op in body.body.block.ops:
            if isinstance(op, t.YieldOp):
                return [where[v] for v in op.values]
            srcs = [where[o] for o in op.operands]
            if isinstance(op, g.ConstantOp):
                (v,) = constant_value(op.value).reshape(-1).tolist()  # type: ignore[arg-type]
                where[op.results[0]] = self.constants[float(v)]
                continue
            dst = fresh()
            if type(op) in _ALU:
                self.alu(_ALU[type(op)], srcs, dst)
            elif isinstance(op, g.DivOp):
                inverse = fresh()
                self.alu("frecip", [srcs[1]], inverse)
                self.alu("fmul", [srcs[0], inverse], dst)
            elif isinstance(op, g.SqrtOp):
                inverse = fresh()
                self.alu("frsqrt", srcs, inverse)
                self.alu("frecip", [inverse], dst)
            elif isinstance(op, g.AbsOp):
                negative = fresh()
                self.alu("fneg", srcs, negative)
                self.alu("fmax", [srcs[0], negative], dst)
            elif isinstance(op, g.ReluOp):
                self.alu("fmax", [srcs[0], self.constants[0.0]], dst)
            elif isinstance(op, g.SigmoidOp):
                e = fresh()
                self.alu("fneg", srcs, dst)
                self.alu("fexp", [dst], e)
                self.alu("fadd", [e, self.constants[1.0]], dst)
                self.alu("frecip", [dst], dst)
            elif isinstance(op, g.ConvertOp) and g.element_type_of(op.results[0]) == f32 \
                    and g.element_type_of(op.operands[0]) == f32:
                self.alu("fpass", srcs, dst)
            else:
                raise MNCoreConversionError(f"convert-task-to-mncore: {op.name} in task.body "
                                            f"@{body.sym_name.data} has no ALU form yet")
            where[op.results[0]] = dst
        raise MNCoreConversionError(f"task.body @{body.sym_name.data} has no task.yield")


@dataclass(frozen=True)
class ConvertTaskToMNCorePass(ModulePass):
    """Lower every ``task.kernel`` to an ``mncore.program`` for ``machine``."""

    name = "convert-task-to-mncore"

    machine: str = "tiny"
    """A machine of ``dialects/mncore_machines.py``."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.machine not in MACHINES:
            raise MNCoreConversionError(f"convert-task-to-mncore: unknown machine "
                                        f"{self.machine!r}; machines: {', '.join(MACHINES)}")
        for kernel in [o for o in op.body.block.ops if isinstance(o, t.KernelOp)]:
            program = ProgramBuilder(kernel, MACHINES[self.machine]).build()
            Rewriter.replace_op(kernel, program)
