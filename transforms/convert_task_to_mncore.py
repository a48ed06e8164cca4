"""``convert-task-to-mncore{machine=...}``: task kernels become ``mncore.program``s.

Every buffer lives in DRAM, row-major, one value per word: f32, and integers and booleans
as exact f32 values (below 2**24); intermediates share DRAM by liveness. Most task kinds
are **lane kernels**: each output element of the task's tile is a *lane*, and lanes are
processed in waves of 4 words per PE over all PEs (L2B ``n`` gets its lanes by DMAs to
it alone; a wave that fits one L2B goes to all of them, which repeat the same work). A
lane kernel is a straight line of

* **loads**: any per-lane DRAM addresses, moved by DMAs of their runs (a run of rows at
  a constant distance is one strided DMA) into an L2BM staging area, then scattered to
  the L1BMs and from there to each PE's LM (one value for every lane is broadcast);
* ALU instructions on the loaded slots (values in GRF);
* **stores**: gathered back through L1BM and L2BM and written by DMAs of their runs.

Staging areas and LM slots are used round-robin, so successive loads overlap. The
kernels:

* elementwise: the task's body on the ALU (division, sqrt, abs, relu, sigmoid, tanh, erf
  and ``where`` are composed from ALU instructions);
* permute, reshape, slice: loads from the source words, stores;
* sum, mean, amax: the reduced elements of each lane are loaded one after another and
  accumulated (the reduction runs over time, lanes in parallel); a sum or mean of few
  outputs over many elements goes through the tree instead (``reduce_tree``);
* gather, scatter, embedding, index_put: there is no data-dependent addressing on a SIMD
  machine, so each lane compares its index with every candidate position and selects
  (one-hot, by write masks);
* conv2d, max-pool and their backward ops: ``mncore_windows``;
* matmul on the MAU: ``mncore_matmul``.

Instructions are emitted in this order (their meaning) and placed by
``mncore-schedule``'s list scheduler.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.dialects.mncore_machines import MACHINES, Machine
from mncore_ir.dialects.values import constant_value
from mncore_ir.transforms import mncore_matmul
from mncore_ir.transforms import mncore_windows as windows
from mncore_ir.transforms.mncore_common import (
    MNCoreConversionError,
    Ring,
    descriptors,
    strides_of,
)
from mncore_ir.transforms.mncore_schedule import schedule

#: Task kinds that only move data: their output tile is a copy of words of the input.
COPIES = ("permute", "reshape", "slice")
REDUCTIONS = {"sum": "fadd", "mean": "fadd", "amax": "fmax"}
LOWERED = ("elementwise", "matmul", *COPIES, *REDUCTIONS, "gather", "scatter", "embedding",
           "index_put", "conv2d", "conv2d_backward", "max_pool2d", "max_pool2d_backward")

#: Body ops that are one ALU instruction.
_ALU = {g.AddOp: "fadd", g.SubOp: "fsub", g.MulOp: "fmul", g.MaximumOp: "fmax",
        g.MinimumOp: "fmin", g.NegOp: "fneg", g.ExpOp: "fexp", g.LogOp: "flog",
        g.RsqrtOp: "frsqrt", g.ReciprocalOp: "frecip", g.EqOp: "fcmpeq", g.NeOp: "fcmpne",
        g.LtOp: "fcmplt", g.LeOp: "fcmple", g.AndOp: "fmul", g.OrOp: "fmax",
        g.WhereOp: "fsel"}
_SWAPPED = {g.GtOp: "fcmplt", g.GeOp: "fcmple"}  # a > b is b < a

#: Abramowitz and Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ...)) exp(-x^2) for x >= 0,
#: t = 1 / (1 + p x); the error is below 1.5e-7.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

#: Constant integral exponents up to this magnitude are lowered to products.
_MULTIPLIED_POWERS = 4
#: 2**23: f32 values from here on are integers, and adding it rounds smaller ones.
_F32_INTEGRAL = float(2**23)

Slot = tuple[str, int]  # a PE memory and the first of its 4 words

# --- integers in words

Interval = tuple[int, int]  # the least and the greatest value an integer may take

#: A word (f32) holds every integer up to this magnitude exactly; the cycle simulator
#: refuses integer inputs from here on, and the lowering refuses any integer that could
#: reach past it (rather than compute a rounded one).
EXACT_INTEGERS = 2**24
#: 1.5 * 2**23: adding and subtracting it rounds an f32 below 2**22 in magnitude to the
#: nearest integer.
_ROUNDER = float(3 * 2**22)

#: Integer results of these body ops, from the operands' intervals.
_INTERVALS: dict[type[Operation], Callable[..., Interval]] = {
    g.AddOp: lambda a, b: (a[0] + b[0], a[1] + b[1]),
    g.SubOp: lambda a, b: (a[0] - b[1], a[1] - b[0]),
    g.MulOp: lambda a, b: (min(x * y for x in a for y in b), max(x * y for x in a for y in b)),
    g.MaximumOp: lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    g.MinimumOp: lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    g.NegOp: lambda a: (-a[1], -a[0]),
    g.AbsOp: lambda a: (max(a[0], -a[1], 0), max(-a[0], a[1])),
    g.ReluOp: lambda a: (max(a[0], 0), max(a[1], 0)),
    g.WhereOp: lambda c, a, b: (min(a[0], b[0]), max(a[1], b[1])),
    g.ConvertOp: lambda a: a,
}
#: Body ops whose result is a truth value (0 or 1) whatever its type.
_TRUTHS = (g.EqOp, g.NeOp, g.LtOp, g.LeOp, g.GtOp, g.GeOp, g.AndOp, g.OrOp, g.NotOp)


def type_interval(element: Attribute) -> Interval | None:
    """The values an integer type holds (``None``: f32, which needs no tracking)."""
    if element == i1:
        return (0, 1)
    if not isinstance(element, IntegerType):
        return None
    width = element.width.data
    if element.signedness.data == Signedness.UNSIGNED:
        return (0, 2**width - 1)
    return (-(2 ** (width - 1)), 2 ** (width - 1) - 1)


def input_interval(element: Attribute) -> Interval | None:
    """What an integer input may hold: its type's values a word holds exactly."""
    full = type_interval(element)
    if full is None:
        return None
    return (max(full[0], 1 - EXACT_INTEGERS), min(full[1], EXACT_INTEGERS - 1))


def body_interval(op: Operation, operands: Sequence[Interval | None]) -> Interval | None:
    """The values ``op``'s integer result may take before it is brought into its type
    (``None`` for an f32 result); raises where an integer result has no exact form."""
    result = g.element_type_of(op.results[0])
    if type_interval(result) is None:
        return None
    if isinstance(op, _TRUTHS):
        return (0, 1)
    if isinstance(op, g.ConstantOp):
        values = constant_value(op.value).reshape(-1)  # type: ignore[arg-type]
        return (int(values.min()), int(values.max()))
    if isinstance(op, g.PowOp) and None not in operands:
        exponent = op.operands[1].owner
        if isinstance(exponent, g.ConstantOp):
            (b,) = constant_value(exponent.value).reshape(-1).tolist()  # type: ignore[arg-type]
            if 0 <= b <= _MULTIPLIED_POWERS:
                base = operands[0]
                assert base is not None
                top = max(-base[0], base[1]) ** int(b)
                return (1, 1) if b == 0 else (-top if base[0] < 0 and b % 2 else 0, top)
    if type(op) in _INTERVALS and None not in operands:
        return _INTERVALS[type(op)](*operands)
    raise MNCoreConversionError(
        f"convert-task-to-mncore: {op.name} with a {result} result has no exact form at the "
        "mncore level (words are f32: only addition, subtraction, multiplication, small "
        "constant powers, comparisons and selections of integers are exact)", op)


def check_exact(interval: Interval, what: str, op: Operation | None) -> None:
    """Refuse an integer that may reach past what a word holds exactly."""
    low, high = interval
    if max(-low, high) > EXACT_INTEGERS:
        raise MNCoreConversionError(
            f"convert-task-to-mncore: {what} may take values in [{low}, {high}], beyond "
            f"the ±2**24 that a word (f32) holds exactly (integer inputs are below 2**24)", op)



def _overlap(a: t.Tile, b: t.Tile) -> bool:
    return all(p < q + m and q < p + n for p, n, q, m in
               zip(a.offsets, a.sizes, b.offsets, b.sizes, strict=True))


def _covers(a: t.Tile, b: t.Tile) -> bool:
    """Whether region ``a`` holds all of region ``b``."""
    return all(p <= q and q + m <= p + n for p, n, q, m in
               zip(a.offsets, a.sizes, b.offsets, b.sizes, strict=True))


def settled(interval: Interval, element: Attribute) -> Interval:
    """``interval`` brought into ``element``'s values (booleans: 0 and 1; narrow
    integers wrap, to anything)."""
    full = type_interval(element)
    assert full is not None
    if full[0] <= interval[0] and interval[1] <= full[1]:
        return interval
    return (0, 1) if element == i1 else full

#: The default compile budget: the CNN training step needs about 700k instructions.
MAX_INSTRUCTIONS = 2_000_000


class ProgramBuilder:
    def __init__(self, kernel: t.KernelOp, machine: Machine, matmul: str = "auto",
                 max_instructions: int = MAX_INSTRUCTIONS) -> None:
        self.kernel, self.machine, self.matmul = kernel, machine, matmul
        self.max_instructions = max_instructions
        self.ops: list[m.InstructionOp] = []
        self.dram: dict[SSAValue, int] = {}
        self.tag = 0
        self.size = 0
        per_l2b = machine.l1b_per_l2b * machine.pes_per_l1b
        self.wave = 4 * per_l2b  # lanes per wave
        self.chunk = 4 * machine.pes_per_l1b  # words per L1BM per wave
        self.pool: list[float] = []  # DRAM words of the constant pool
        self.pool_index: dict[tuple[float, ...], int] = {}
        self.constants: dict[float, Slot] = {}
        self.ones: Slot | None = None
        half = machine.lm_words // 2
        self.lm_constants = {"lm0": 0, "lm1": 0}  # constants fill each LM's lower half
        self.lm_limit = half
        self.lm_ring = [Ring("lm0", half, 4, half // 4), Ring("lm1", half, 4, half // 4)]
        self.loads = 0
        # L2BM: a ring of wave-sized staging areas, then a ring of three large areas for
        # matmul operands and results; L1BM: a ring of chunks, a matmul result area, then
        # two matmul operand areas.
        stages = max(2, min(4, machine.l2bm_words // self.wave // 2))
        self.stage = Ring("l2bm", 0, self.wave, stages)
        top = stages * self.wave
        self.big_stage = Ring("l2bm", top, (machine.l2bm_words - top) // 3, 3)
        chunks = max(2, min(8, machine.l1bm_words // self.chunk // 2))
        self.l1 = Ring("l1bm", 0, self.chunk, chunks)
        self.l1_out = chunks * self.chunk
        self.l1_top = self.l1_out + mncore_matmul.JC * self.chunk
        self.grf: dict[str, int] = {}
        # integer buffers: the intervals of the regions written last (buffers are reused)
        self.intervals: dict[SSAValue, list[tuple[t.Tile, Interval]]] = {}

    # --- places

    def place(self, value: SSAValue, words: int) -> int:
        """``value`` at the end of DRAM, for the whole program."""
        at = self.size
        self.dram[value] = at
        self.size += -(-max(words, 1) // 16) * 16
        self.check_dram(value, words, at)
        return at

    def allocate(self, buffers: Sequence[SSAValue]) -> None:
        """Intermediate buffers share DRAM by liveness (from the first to the last task
        that touches them, in kernel order): first fit among the buffers still live."""
        first: dict[SSAValue, int] = {}
        last: dict[SSAValue, int] = {}
        for i, task in enumerate(self.kernel.tasks()):
            for v in (*task.ins, *task.outs):
                first.setdefault(v, i)
                last[v] = i
        base, end = self.size, 0
        live: list[tuple[int, int, int]] = []  # (first word, past the last, last task)
        for v in sorted(buffers, key=lambda v: first.get(v, -1)):
            words = math.prod(v.type.get_shape())  # type: ignore[attr-defined]
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

    def check_dram(self, value: SSAValue, words: int, at: int) -> None:
        if at + words > self.machine.dram_words:
            name = f"%{value.name_hint}" if value.name_hint else f"a {value.type}"
            raise MNCoreConversionError(
                f"convert-task-to-mncore: buffer {name} ({words} words at dram[{at}]) does not "
                f"fit in dram ({self.machine.dram_words} words on {self.machine.name})")

    def pooled(self, values: Sequence[float]) -> int:
        """The pool address of ``values`` (shared when asked again)."""
        key = tuple(float(v) for v in values)
        if key not in self.pool_index:
            self.pool_index[key] = len(self.pool)
            self.pool.extend(key)
        return self.pool_base + self.pool_index[key]

    def lm_slot(self) -> Slot:
        self.loads += 1
        return self.lm_ring[self.loads % 2].take()

    def fresh(self) -> Slot:
        """A new GRF slot of the current wave (word 0 of each GRF is a copy scratch)."""
        space = min(self.grf, key=lambda s: self.grf[s])
        at = self.grf[space]
        if at + 4 > self.machine.grf_words:
            raise MNCoreConversionError("convert-task-to-mncore: a task needs more values "
                                        f"at once than the GRFs hold ({self.machine.grf_words} "
                                        f"words each on {self.machine.name})")
        self.grf[space] += 4
        return space, at

    # --- instructions

    def emit(self, op: m.InstructionOp) -> None:
        """Append ``op``; a program past the budget stops compiling here, before the
        emitter and the scheduler spend minutes on it."""
        if len(self.ops) >= self.max_instructions:
            raise MNCoreConversionError(
                f"convert-task-to-mncore: the program needs more than "
                f"{self.max_instructions:,} instructions; raise max_instructions or tile "
                "smaller")
        op.step = IntegerAttr(len(self.ops), i64)
        self.ops.append(op)

    def dma(self, kind: str, src: m.RefAttr, dst: m.RefAttr, words: int, run: int | None = None,
            stride: int | None = None, l2b: int | None = None) -> None:
        self.tag += 1
        self.emit(m.DmaOp(0, kind, [src], dst, words, self.tag, run, stride, l2b))
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
                scratch = (space, 0 if space.startswith("grf") else self.lm_scratch[space])
                self.emit(m.AluOp(0, "fpass", [m.RefAttr(*srcs[i])], m.RefAttr(*scratch)))
                srcs[i] = scratch
            used.add(srcs[i][0])
        if mask is not None:
            *srcs, mask = srcs
        self.emit(m.AluOp(0, kind, [m.RefAttr(*s) for s in srcs], m.RefAttr(*dst),
                          mask=m.RefAttr(*mask) if mask is not None else None))

    def constant(self, value: float) -> Slot:
        """An LM slot holding ``value`` in all 4 words of every PE, loaded on first use."""
        if value not in self.constants:
            space = min(self.lm_constants, key=lambda s: self.lm_constants[s])
            at = self.lm_constants[space]
            if at + 4 > self.lm_limit:
                raise MNCoreConversionError(
                    f"convert-task-to-mncore: the kernel's constants do not fit in the lower "
                    f"halves of lm0 and lm1 ({self.lm_limit} words each)")
            self.lm_constants[space] += 4
            self.broadcast(self.pooled([value]), (space, at))
            self.constants[value] = (space, at)
        return self.constants[value]

    def broadcast(self, address: int, slot: Slot) -> None:
        """The DRAM word at ``address`` into all 4 words of ``slot`` on every PE."""
        stage, l1 = self.stage.take(), self.l1.take()
        self.dma("load", m.RefAttr("dram", address), m.RefAttr(*stage), 4, 1, 0)
        self.emit(m.L2Op(0, "bcast", [m.RefAttr(*stage)], m.RefAttr(*l1), 4))
        self.emit(m.L1Op(0, "bcast", [m.RefAttr(*l1)], m.RefAttr(*slot)))

    def load(self, addresses: np.ndarray) -> Slot:
        """Lane ``i`` of the wave gets the DRAM word ``addresses[i]``."""
        slot = self.lm_slot()
        if (addresses == addresses[0]).all():
            self.broadcast(int(addresses[0]), slot)
            return slot
        stage, l1 = self.stage.take(), self.l1.take()
        for n, part in self.per_l2b(addresses):
            for first, address, words, run, stride in descriptors(part, load=True):
                self.dma("load", m.RefAttr("dram", address),
                         m.RefAttr("l2bm", stage[1] + first), words, run, stride, n)
        self.emit(m.L2Op(0, "scatter", [m.RefAttr(*stage)], m.RefAttr(*l1), self.chunk))
        self.emit(m.L1Op(0, "scatter", [m.RefAttr(*l1)], m.RefAttr(*slot)))
        return slot

    def store(self, slot: Slot, addresses: np.ndarray) -> None:
        """Lane ``i``'s word of ``slot`` to the DRAM word ``addresses[i]``."""
        stage, l1 = self.stage.take(), self.l1.take()
        self.emit(m.L1Op(0, "gather", [m.RefAttr(*slot)], m.RefAttr(*l1)))
        self.emit(m.L2Op(0, "gather", [m.RefAttr(*l1)], m.RefAttr(*stage), self.chunk))
        for n, part in self.per_l2b(addresses):
            for first, address, words, run, stride in descriptors(part, load=False):
                self.dma("store", m.RefAttr("l2bm", stage[1] + first),
                         m.RefAttr("dram", address), words, run, stride, n)

    def per_l2b(self, addresses: np.ndarray) -> list[tuple[int | None, np.ndarray]]:
        """A wave's lanes by L2B: L2B ``n`` takes lanes ``n wave ..``; a wave that one L2B
        holds goes to all of them (loads) or comes from L2B 0 (stores)."""
        if len(addresses) <= self.wave:
            return [(None, addresses)]
        return [(n, addresses[n * self.wave:(n + 1) * self.wave])
                for n in range(-(-len(addresses) // self.wave))]

    # --- the program

    def build(self) -> m.ProgramOp:
        kernel = self.kernel
        for task in kernel.tasks():
            kind = task.kind.data
            if kind not in LOWERED:
                hint = (" (run graph-decompose before convert-graph-to-task: it expands "
                        "row ops into elementwise ops and reductions)" if kind in (
                            "softmax", "log_softmax", "softmax_backward",
                            "log_softmax_backward", "layer_norm") else "")
                raise MNCoreConversionError(
                    f"convert-task-to-mncore: task kind {kind!r} is not lowered{hint}; "
                    f"lowered kinds: {', '.join(LOWERED)}")
        ops = kernel.body.block.ops
        fixed = [*kernel.inputs, *kernel.outputs,
                 *(op.result for op in ops if isinstance(op, t.ConstantOp))]
        buffers = [op.result for op in ops if isinstance(op, t.BufferOp)]
        for v in [*fixed, *buffers]:
            element = v.type.element_type  # type: ignore[attr-defined]
            if element != f32 and not isinstance(element, IntegerType):
                raise MNCoreConversionError(f"convert-task-to-mncore: {v.type} has no word "
                                            "form (f32, integers and booleans do)")
        for v in fixed:
            self.place(v, math.prod(v.type.get_shape()))  # type: ignore[attr-defined]
        self.note_fixed(kernel)
        self.allocate(buffers)
        self.pool_base = self.size
        tensors: list[m.TensorOp | m.BufferOp] = [*self.tensors()]
        tensors += [m.BufferOp.create(properties={  # where the intermediates live
            "sym_name": StringAttr(f"buffer{i}"), "at": m.RefAttr("dram", self.dram[v]),
            "words": IntegerAttr(math.prod(v.type.get_shape()), i64)})  # type: ignore[attr-defined]
            for i, v in enumerate(buffers)]
        self.lm_scratch = {s: self.reserve_lm(s) for s in ("lm0", "lm1")}
        bodies = kernel.bodies()
        for task in kernel.tasks():
            kind = task.kind.data
            if kind == "matmul":
                self.task_interval(task)  # refuses integers
                mncore_matmul.lower_matmul(self, task)
            else:
                body = bodies[task.body.root_reference.data] if task.body else None
                self.lower_lanes(task, body)
        if self.pool:
            typ = TensorType(f32, [len(self.pool)])
            tensors.append(m.TensorOp.create(properties={
                "sym_name": StringAttr("constant_pool"), "role": StringAttr("constant"),
                "at": m.RefAttr("dram", self.pool_base),
                "value": DenseIntOrFPElementsAttr.from_list(
                    typ, np.array(self.pool, np.float32).tolist()), "type": typ}))
        block = Block([*tensors, *self.ops])  # type: ignore[list-item]
        program = m.ProgramOp(kernel.sym_name.data, self.machine.name, Region(block))
        schedule(program)
        return program

    def reserve_lm(self, space: str) -> int:
        at = self.lm_constants[space]
        self.lm_constants[space] += 4
        return at

    def tensors(self) -> list[m.TensorOp]:
        kernel, tensors, names = self.kernel, [], iter(range(1 << 30))
        for role, group in (("input", kernel.inputs), ("output", kernel.outputs)):
            for v in group:
                typ = TensorType(v.type.element_type, v.type.get_shape())  # type: ignore[attr-defined]
                tensors.append(m.TensorOp.create(properties={
                    "sym_name": StringAttr(v.name_hint or f"{role}{next(names)}"),
                    "role": StringAttr(role), "at": m.RefAttr("dram", self.dram[v]),
                    "type": typ}))
        for op in kernel.body.block.ops:
            if isinstance(op, t.ConstantOp):
                tensors.append(m.TensorOp.create(properties={
                    "sym_name": StringAttr(op.result.name_hint or f"const{next(names)}"),
                    "role": StringAttr("constant"),
                    "at": m.RefAttr("dram", self.dram[op.result]), "value": op.value,
                    "type": op.value.get_type()}))
        return tensors

    # --- lane kernels

    def address(self, value: SSAValue, coords: Sequence[np.ndarray]) -> np.ndarray:
        """DRAM words of ``value`` at absolute coordinates (one array per dimension)."""
        strides = strides_of(value.type.get_shape())  # type: ignore[attr-defined]
        out = np.full(len(coords[0]) if coords else 1, self.dram[value], np.int64)
        for c, s in zip(coords, strides, strict=True):
            out = out + c * s
        return out

    def lower_lanes(self, task: t.TaskOp, body: t.BodyOp | None) -> None:
        interval = self.task_interval(task)
        if self.tree_pays(task):
            self.reduce_tree(task)
            return
        if task.kind.data == "conv2d_backward":
            windows.lower_conv2d_backward(self, task)
            return
        writes = task.writes()
        tile = writes[0][1]
        lanes: Callable[[list[np.ndarray]], list[Slot]] = {
            "elementwise": lambda c: self.elementwise(task, body, tile, c),  # type: ignore[arg-type]
            "gather": lambda c: self.gather(task, c),
            "scatter": lambda c: self.scatter(task, c),
            "embedding": lambda c: self.embedding(task, c),
            "index_put": lambda c: self.index_put(task, c),
            "conv2d": lambda c: windows.conv2d(self, task, c),
            "max_pool2d": lambda c: windows.max_pool2d(self, task, c),
            "max_pool2d_backward": lambda c: windows.max_pool2d_backward(self, task, c),
        }.get(task.kind.data, lambda c: self.reduce(task, c) if task.kind.data in REDUCTIONS
              else [self.load(self.copy_addresses(task, tile, c))])
        element = writes[0][0].type.element_type  # type: ignore[attr-defined]

        def kernel(coords: list[np.ndarray]) -> list[Slot]:
            slots = lanes(coords)
            if interval is not None:  # into the output's type (wrapped, or 0 and 1)
                slots = [self.settle(slot, interval, element) for slot in slots]
            return slots

        self.lanes_over(tile, writes, kernel)

    def lanes_over(self, tile: t.Tile, writes: Sequence[tuple[SSAValue, t.Tile]],
                   kernel: Callable[[list[np.ndarray]], list[Slot]]) -> None:
        """Run ``kernel`` on waves of the lanes of ``tile`` (absolute coordinates, one
        array per dimension) and store the slots it returns to ``writes``."""
        n = math.prod(tile.sizes)
        lanes = self.wave * self.machine.l2bs  # every L2B takes its own lanes
        for w in range(-(-n // lanes)):
            self.grf = {"grf0": 4, "grf1": 4}
            flat = np.arange(w * lanes, min(n, (w + 1) * lanes))
            local = np.unravel_index(flat, tile.sizes) if tile.sizes else ()
            coords = [o + c for o, c in zip(tile.offsets, local, strict=True)] or [
                np.zeros(len(flat), np.int64)]
            results = kernel(coords if tile.sizes else [])
            for (value, out_tile), slot in zip(writes, results, strict=True):
                self.store(slot, self.address(value, coords) if out_tile.sizes else
                           np.full(len(flat), self.dram[value]))

    def elementwise(self, task: t.TaskOp, body: t.BodyOp, tile: t.Tile,
                    coords: list[np.ndarray]) -> list[Slot]:
        slots = []
        for value, region in task.reads():
            shape = value.type.get_shape()  # type: ignore[attr-defined]
            lead = len(tile.sizes) - len(shape)
            mine = [np.full_like(coords[lead + d], region.offsets[d])
                    if region.sizes[d] == 1 and tile.sizes[lead + d] != 1 else
                    coords[lead + d] - tile.offsets[lead + d] + region.offsets[d]
                    for d in range(len(shape))]
            count = len(coords[0]) if coords else 1
            slots.append(self.load(self.address(value, mine) if shape else
                                   np.full(count, self.dram[value])))
        return self.compute(body, slots, self.body_intervals(task, body))

    def copy_addresses(self, task: t.TaskOp, tile: t.Tile, coords: list[np.ndarray]
                       ) -> np.ndarray:
        """The DRAM word a permute, reshape or slice task reads for each lane."""
        ((value, region),) = task.reads()
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        local = [c - o for c, o in zip(coords, tile.offsets, strict=True)]
        kind = task.kind.data
        if kind == "reshape":  # both bands are contiguous runs
            flat = np.ravel_multi_index(local, tile.sizes) if local else np.zeros(1, np.int64)
            return self.address(value, [np.full_like(flat, o) for o in region.offsets]) + flat
        if kind == "permute":
            perm = task.attrs.data["perm"].get_values()  # type: ignore[attr-defined]
            mine = [np.zeros_like(local[0])] * len(shape)
            for i, p in enumerate(perm):
                mine[p] = local[i] + region.offsets[p]
            return self.address(value, mine)
        dim = task.attrs.data["dim"].value.data % len(shape)  # type: ignore[attr-defined]
        start = task.attrs.data["start"].value.data  # type: ignore[attr-defined]
        step_attr = task.attrs.data.get("step")
        step = step_attr.value.data if step_attr is not None else 1  # type: ignore[attr-defined]
        return self.address(value, [start + step * local[d] if d == dim else
                                    local[d] + region.offsets[d] for d in range(len(shape))])

    @staticmethod
    def reduced_dims(task: t.TaskOp) -> tuple[list[int], list[int]]:
        """The reduced dimensions of a reduction task's input and the input dimension
        each output dimension indexes."""
        ((value, _),) = task.reads()
        rank = len(value.type.get_shape())  # type: ignore[attr-defined]
        dims = sorted(int(d) % rank for d in  # type: ignore[attr-defined]
                      task.attrs.data["dims"].get_values())  # type: ignore[attr-defined]
        keep = task.attrs.data.get("keepdim")
        keep = bool(keep.value.data) if keep is not None else False  # type: ignore[attr-defined]
        return dims, [d for d in range(rank) if keep or d not in dims]

    def reduce(self, task: t.TaskOp, coords: list[np.ndarray]) -> list[Slot]:
        """Each lane accumulates its reduced elements, loaded one after another."""
        ((value, region),) = task.reads()
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        dims, kept = self.reduced_dims(task)
        count = len(coords[0]) if coords else 1
        base = [np.full(count, region.offsets[d], np.int64) for d in range(len(shape))]
        for i, d in enumerate(kept):
            if d not in dims:
                base[d] = coords[i]
        kind = REDUCTIONS[task.kind.data]
        acc = self.fresh()
        reduced = [shape[d] for d in dims]
        for r, index in enumerate(np.ndindex(*reduced)):
            mine = list(base)
            for d, i in zip(dims, index, strict=True):
                mine[d] = np.full(count, i, np.int64)
            x = self.load(self.address(value, mine))
            self.alu(kind if r else "fpass", [acc, x] if r else [x], acc)
        element = task.writes()[0][0].type.element_type  # type: ignore[attr-defined]
        if task.kind.data == "mean" and type_interval(element) is None:
            self.alu("fmul", [acc, self.constant(1.0 / math.prod(reduced))], acc)
        elif task.kind.data == "mean" and element != i1:  # numpy's mean, cast: truncated
            self.truncated_quotient(acc, math.prod(reduced))
        return [acc]

    def tree_pays(self, task: t.TaskOp) -> bool:
        """Whether a sum or mean goes through the tree: few outputs of many elements.
        Counted in loads: lanes take ``R`` loads per wave of outputs; the tree takes
        ``R / wave`` per output, plus about 4 for the tree and the store."""
        if task.kind.data not in ("sum", "mean") or type_interval(
                task.writes()[0][0].type.element_type) is not None:
            return False  # integers accumulate in lanes (exactly, then into their type)
        ((value, _),) = task.reads()
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        reduced = math.prod(shape[d] for d in self.reduced_dims(task)[0])
        outputs = math.prod(task.writes()[0][1].sizes)
        return outputs * (-(-reduced // self.wave) + 4) < reduced * -(-outputs // self.wave)

    def reduce_tree(self, task: t.TaskOp) -> None:
        """A sum or mean through the tree, one output at a time: its elements spread
        over every lane of the wave (zeros past the end) and accumulate there, the L1
        and L2 ``reduce`` sum over PEs and L1Bs keeping the 4 words apart, and the MAU
        adds the 4 (``mma`` with a matrix of ones) after a broadcast back to the PEs."""
        ((value, region),) = task.reads()
        ((out, tile),) = task.writes()
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        dims, kept = self.reduced_dims(task)
        reduced = np.indices([shape[d] for d in dims]).reshape(len(dims), -1)
        count = reduced.shape[1]
        for flat in range(math.prod(tile.sizes)):
            at = [o + c for o, c in zip(tile.offsets, np.unravel_index(flat, tile.sizes),
                                        strict=True)]
            mine = [np.full(count, region.offsets[d], np.int64) for d in range(len(shape))]
            for i, d in enumerate(kept):
                if d not in dims:
                    mine[d] = np.full(count, at[i], np.int64)
            for d, index in zip(dims, reduced, strict=True):
                mine[d] = index
            self.sum_tree(self.address(value, mine),
                          self.address(out, [np.array([c]) for c in at]) if at else
                          np.array([self.dram[out]]),
                          1.0 / count if task.kind.data == "mean" else 1.0)

    def sum_tree(self, addresses: np.ndarray, target: np.ndarray, scale: float) -> None:
        """``scale`` times the sum of the DRAM words ``addresses``, stored to the word
        ``target``, through the tree (see ``reduce_tree``)."""
        zero, ones = self.pooled([0.0]), self.ones_matrix()
        self.grf = {"grf0": 4, "grf1": 4}
        acc, vector, total = ("grf0", 4), ("grf0", 8), ("grf1", 4)
        for first in range(0, len(addresses), self.wave):
            chunk = np.full(self.wave, zero, np.int64)
            part = addresses[first:first + self.wave]
            chunk[:len(part)] = part
            x = self.load(chunk)
            self.alu("fadd" if first else "fpass", [acc, x] if first else [x], acc)
        l1, stage, back = self.l1.take(), self.stage.take(), self.l1.take()
        self.emit(m.L1Op(0, "reduce", [m.RefAttr(*acc)], m.RefAttr(*l1)))
        self.emit(m.L2Op(0, "reduce", [m.RefAttr(*l1)], m.RefAttr(*stage), 4))
        self.emit(m.L2Op(0, "bcast", [m.RefAttr(*stage)], m.RefAttr(*back), 4))
        self.emit(m.L1Op(0, "bcast", [m.RefAttr(*back)], m.RefAttr(*vector)))
        self.emit(m.AluOp(0, "fzero", [], m.RefAttr(*total)))
        self.emit(m.MauOp(0, "mma", [m.RefAttr(*ones), m.RefAttr(*vector),
                                     m.RefAttr(*total)], m.RefAttr(*total)))
        if scale != 1.0:
            self.alu("fmul", [total, self.constant(scale)], total)
        self.store(total, target)

    def ones_matrix(self) -> Slot:
        """16 words of 1.0 in LM: ``mma`` with it sums a vector's 4 words."""
        if self.ones is None:
            space = "lm0"
            at = self.lm_constants[space]
            if at + 16 > self.lm_limit:
                raise MNCoreConversionError("convert-task-to-mncore: the kernel's constants do "
                                            f"not fit in the lower half of {space}")
            self.lm_constants[space] += 16
            for row in range(4):
                self.broadcast(self.pooled([1.0]), (space, at + 4 * row))
            self.ones = (space, at)
        return self.ones

    def select_matching(self, index: Slot, candidates: int, value_at: Callable[[int], Slot],
                        acc: Slot) -> None:
        """``acc = value_at(k)`` in the lanes whose ``index`` equals ``k``, for each
        candidate ``k`` (a counter in GRF counts through them)."""
        counter, match = self.fresh(), self.fresh()
        self.alu("fzero", [], counter)
        for k in range(candidates):
            if k:
                self.alu("fadd", [counter, self.constant(1.0)], counter)
            self.alu("fcmpeq", [index, counter], match)
            self.alu("fpass", [value_at(k)], acc, mask=match)

    def gather(self, task: t.TaskOp, coords: list[np.ndarray]) -> list[Slot]:
        """``out[c] = input[c with c[dim] = index[c]]``."""
        (x, _), (index, _) = task.reads()
        shape = x.type.get_shape()  # type: ignore[attr-defined]
        dim = task.attrs.data["dim"].value.data % len(shape)  # type: ignore[attr-defined]
        where = self.keep(self.load(self.address(index, coords)))
        acc = self.fresh()
        self.alu("fzero", [], acc)

        def candidate(k: int) -> Slot:
            return self.load(self.address(x, [np.full_like(c, k) if d == dim else c
                                              for d, c in enumerate(coords)]))

        self.select_matching(where, shape[dim], candidate, acc)
        return [acc]

    def scatter(self, task: t.TaskOp, coords: list[np.ndarray]) -> list[Slot]:
        """``out = input``, then ``out[c with c[dim] = index[c]] = value``: lane ``c`` of
        the output takes ``value`` when some ``index[c with c[dim] = j]`` is ``c[dim]``."""
        (x, _), (index, _), (value, _) = task.reads()
        idx_shape = index.type.get_shape()  # type: ignore[attr-defined]
        dim = task.attrs.data["dim"].value.data % len(idx_shape)  # type: ignore[attr-defined]
        acc, match = self.fresh(), self.fresh()
        self.alu("fpass", [self.load(self.address(x, coords))], acc)
        fill = self.keep(self.load(np.full(len(coords[0]), self.dram[value])))
        inside = np.ones(len(coords[0]), bool)
        for d, c in enumerate(coords):
            if d != dim:
                inside &= c < idx_shape[d]
        mine = self.keep(self.load(self.table(coords[dim])))
        outside = self.pooled([-1.0])
        for j in range(idx_shape[dim]):
            at = self.address(index, [np.full_like(c, j) if d == dim else np.minimum(
                c, idx_shape[d] - 1) for d, c in enumerate(coords)])
            where = self.load(np.where(inside, at, outside))
            self.alu("fcmpeq", [where, mine], match)
            self.alu("fpass", [fill], acc, mask=match)
        return [acc]

    def embedding(self, task: t.TaskOp, coords: list[np.ndarray]) -> list[Slot]:
        """``out[..., d] = weight[indices[...], d]``."""
        (weight, _), (indices, _) = task.reads()
        rows = weight.type.get_shape()[0]  # type: ignore[attr-defined]
        lead = coords[:-1]
        where = self.keep(self.load(self.address(indices, lead) if lead else
                                    np.full(len(coords[-1]), self.dram[indices])))
        acc = self.fresh()
        self.alu("fzero", [], acc)
        self.select_matching(where, rows, lambda k: self.load(self.address(
            weight, [np.full_like(coords[-1], k), coords[-1]])), acc)
        return [acc]

    def index_put(self, task: t.TaskOp, coords: list[np.ndarray]) -> list[Slot]:
        """``out = input``, then for each index position ``i``: the lanes of row
        ``indices[i]`` take (or add, with ``accumulate``) ``values[i, ...]``, by a write
        mask; positions in order, so a repeated row keeps the last value."""
        (x, _), (indices, _), (values, _) = task.reads()
        accumulate = task.attrs.data.get("accumulate")
        add = bool(accumulate.value.data) if accumulate is not None else False  # type: ignore[attr-defined]
        index_shape = indices.type.get_shape()  # type: ignore[attr-defined]
        value_shape = values.type.get_shape()  # type: ignore[attr-defined]
        lanes = len(coords[0])
        acc, match = self.fresh(), self.fresh()
        self.alu("fpass", [self.load(self.address(x, coords))], acc)
        row = self.keep(self.load(self.table(coords[0])))
        for position in np.ndindex(*index_shape):
            where = self.load(np.full(lanes, self.address(
                indices, [np.array([p]) for p in position])[0] if position else
                self.dram[indices]))
            self.alu("fcmpeq", [where, row], match)
            full = [np.full(lanes, p) for p in position] + list(coords[1:])
            lead = len(full) - len(value_shape)
            value = self.load(self.address(values, [
                np.zeros(lanes, np.int64) if n == 1 else full[lead + d]
                for d, n in enumerate(value_shape)]) if value_shape else
                np.full(lanes, self.dram[values]))
            if add:
                self.alu("fadd", [acc, value], acc, mask=match)
            else:
                self.alu("fpass", [value], acc, mask=match)
        return [acc]

    def keep(self, slot: Slot) -> Slot:
        """A loaded value copied to GRF: load slots are reused after a ring's worth of
        loads, so a value read across many loads must move out of them."""
        kept = self.fresh()
        self.alu("fpass", [slot], kept)
        return kept

    def table(self, values: np.ndarray) -> np.ndarray:
        """DRAM addresses of per-lane compile-time values (in the constant pool)."""
        return self.pooled(values.tolist()) + np.arange(len(values))

    # --- integers

    def note_fixed(self, kernel: t.KernelOp) -> None:
        """The intervals of the kernel's integer inputs and constants."""
        for op in kernel.body.block.ops:
            if isinstance(op, t.ConstantOp) and type_interval(op.value.get_type(
                    ).element_type) is not None:  # type: ignore[attr-defined]
                values = constant_value(op.value).reshape(-1)
                if values.size:
                    interval = (int(values.min()), int(values.max()))
                    check_exact(interval, f"task.constant {op.value.get_type()}", op)
                    shape = tuple(op.value.get_type().get_shape())  # type: ignore[attr-defined]
                    self.intervals[op.result] = [(t.Tile((0,) * len(shape), shape), interval)]

    def interval_of(self, value: SSAValue, region: t.Tile) -> Interval | None:
        """What ``region`` of an integer buffer may hold (``None``: an f32 one): what
        the last writes of its parts wrote, or any input a word holds."""
        element = value.type.element_type  # type: ignore[attr-defined]
        if type_interval(element) is None:
            return None
        found = [interval for tile, interval in self.intervals.get(value, [])
                 if _overlap(tile, region)]
        if not found:
            return input_interval(element)
        return (min(i[0] for i in found), max(i[1] for i in found))

    def note(self, value: SSAValue, tile: t.Tile, interval: Interval) -> None:
        """A task writes values in ``interval`` (brought into their type) to ``tile`` of
        ``value``: they replace what earlier writes left in it."""
        interval = settled(interval, value.type.element_type)  # type: ignore[attr-defined]
        kept = [(old, i) for old, i in self.intervals.get(value, [])
                if not _covers(tile, old)]
        self.intervals[value] = [*kept, (tile, interval)]

    def task_interval(self, task: t.TaskOp) -> Interval | None:
        """What a task's integer output may take before it is brought into its type
        (``None``: an f32 output, or an elementwise task, whose ops are brought into
        their types one by one); records what the task writes, and refuses integers a
        word cannot hold exactly."""
        writes = task.writes()
        if task.kind.data == "elementwise" and task.body:
            body = self.kernel.bodies()[task.body.root_reference.data]
            intervals = self.body_intervals(task, body)
            yielded = next(op for op in body.body.block.ops if isinstance(op, t.YieldOp))
            for (value, tile), result in zip(writes, yielded.values, strict=True):
                if (interval := intervals.get(result)) is not None:
                    self.note(value, tile, interval)
            return None
        if all(type_interval(v.type.element_type) is None  # type: ignore[attr-defined]
               for v, _ in writes):
            return None
        if task.kind.data == "max_pool2d" and len(writes) == 2:  # f32 values, their indices
            ((value, _),) = task.reads()[:1]
            spatial = math.prod(value.type.get_shape()[-2:])  # type: ignore[attr-defined]
            check_exact((0, spatial - 1), "max_pool2d's indices", task)
            self.note(writes[1][0], writes[1][1], (0, spatial - 1))
            return None
        interval = self.lane_interval(task)
        for value, tile in writes:
            self.note(value, tile, interval)
        return interval

    def lane_interval(self, task: t.TaskOp) -> Interval:
        """:meth:`task_interval` of a task that is not elementwise."""
        kind = task.kind.data
        ins = [self.interval_of(v, region) for v, region in task.reads()]
        if kind in (*COPIES, *REDUCTIONS, "gather", "embedding", "scatter", "index_put",
                    "max_pool2d") and ins[0] is not None:
            low, high = ins[0]
            if kind in ("sum", "mean"):  # accumulated exactly, the mean divided after
                ((value, _),) = task.reads()
                shape = value.type.get_shape()  # type: ignore[attr-defined]
                n = math.prod(shape[d] for d in self.reduced_dims(task)[0])
                slack = n if kind == "mean" else 0  # the quotient's remainder test
                check_exact((n * low - slack, n * high + slack), f"the {kind} of {n} "
                            f"elements of {value.type}", task)
                mean = kind == "mean" and task.writes()[0][0].type.element_type != i1  # type: ignore[attr-defined]
                return (low, high) if mean else (n * low, n * high)
            if kind in ("scatter", "index_put") and ins[2] is not None:
                added = task.attrs.data.get("accumulate")
                if kind == "index_put" and added is not None and added.value.data:  # type: ignore[attr-defined]
                    count = math.prod(task.reads()[1][0].type.get_shape())  # type: ignore[attr-defined]
                    low += count * min(ins[2][0], 0)
                    high += count * max(ins[2][1], 0)
                    check_exact((low, high), f"index_put accumulating {count} values", task)
                return (min(low, ins[2][0]), max(high, ins[2][1]))
            if kind not in ("scatter", "index_put"):
                return (low, high)
        element = task.writes()[0][0].type.element_type  # type: ignore[attr-defined]
        raise MNCoreConversionError(
            f"convert-task-to-mncore: a {kind} task with {element} values has no exact form "
            "at the mncore level (it computes in f32)", task)

    def body_intervals(self, task: t.TaskOp, body: t.BodyOp) -> dict[SSAValue, Interval | None]:
        """What each integer value of ``body`` may take before it is brought into its
        type; refuses integers a word cannot hold exactly."""
        known: dict[SSAValue, Interval | None] = {}  # as brought into their types
        raw: dict[SSAValue, Interval | None] = {}
        for arg, (value, region) in zip(body.body.block.args, task.reads(), strict=True):
            known[arg] = self.interval_of(value, region)
        for op in body.body.block.ops:
            if isinstance(op, t.YieldOp):
                break
            interval = body_interval(op, [known[o] for o in op.operands])
            raw[op.results[0]] = interval
            if interval is not None:
                check_exact(interval, f"{op.name} in task.body @{body.sym_name.data}", op)
                interval = settled(interval, g.element_type_of(op.results[0]))
            known[op.results[0]] = interval
        return raw

    def settle(self, slot: Slot, interval: Interval, element: Attribute) -> Slot:
        """Bring the integers of ``slot`` (within ``interval``) into ``element``'s values
        as numpy's cast does: booleans are ``!= 0``, narrow integers wrap."""
        full = type_interval(element)
        assert full is not None
        if full[0] <= interval[0] and interval[1] <= full[1]:
            return slot
        if element == i1:
            self.alu("fcmpne", [slot, self.constant(0.0)], slot)
            return slot
        modulus = full[1] - full[0] + 1
        assert modulus <= 2**16, "wider types hold every exact integer"
        if full[0]:
            self.alu("fadd", [slot, self.constant(float(-full[0]))], slot)
        quotient, scratch = self.fresh(), self.fresh()
        self.alu("fmul", [slot, self.constant(1.0 / modulus)], quotient)  # exact
        self.floor(quotient, scratch)
        self.alu("fmul", [quotient, self.constant(float(modulus))], quotient)
        self.alu("fsub", [slot, quotient], slot)
        if full[0]:
            self.alu("fadd", [slot, self.constant(float(full[0]))], slot)
        return slot

    def floor(self, value: Slot, scratch: Slot) -> None:
        """``value`` = floor(``value``) for ``|value| < 2**22``: adding and subtracting
        1.5 * 2**23 rounds to the nearest integer, one less where that is above."""
        self.alu("fadd", [value, self.constant(_ROUNDER)], scratch)
        self.alu("fsub", [scratch, self.constant(_ROUNDER)], scratch)
        self.alu("fcmplt", [value, scratch], value)
        self.alu("fsub", [scratch, value], value)

    def truncated_quotient(self, acc: Slot, n: int) -> None:
        """``acc`` = trunc(``acc`` / ``n``) for an integer ``|acc| <= 2**24`` and ``n >=
        1``, exactly: the rounded product by 1 / ``n`` is within 1 of ``|acc| / n``, its
        floor is corrected by the remainder, and ``acc``'s sign put back."""
        if n == 1:
            return
        size, guess, rest, flag = self.fresh(), self.fresh(), self.fresh(), self.fresh()
        divisor, big = self.constant(float(n)), self.constant(_F32_INTEGRAL)
        self.alu("fneg", [acc], size)
        self.alu("fmax", [acc, size], size)
        self.alu("fmul", [size, self.constant(1.0 / n)], guess)  # <= 2**23
        self.alu("fadd", [guess, big], rest)  # rounded below 2**23, then its floor
        self.alu("fsub", [rest, big], rest)
        self.alu("fcmplt", [guess, rest], flag)
        self.alu("fsub", [rest, flag], rest)
        self.alu("fcmple", [big, guess], flag)  # from 2**23 on, already integral
        self.alu("fsel", [flag, guess, rest], guess)
        self.alu("fmul", [guess, divisor], rest)
        self.alu("fsub", [size, rest], rest)  # the remainder, in [-n, 2n)
        self.alu("fcmplt", [rest, self.constant(0.0)], flag)
        self.alu("fsub", [guess, flag], guess)
        self.alu("fcmple", [divisor, rest], flag)
        self.alu("fadd", [guess, flag], guess)
        self.alu("fcmplt", [acc, self.constant(0.0)], flag)
        self.alu("fneg", [guess], rest)
        self.alu("fsel", [flag, rest, guess], acc)

    # --- task bodies on the ALU

    def compute(self, body: t.BodyOp, in_slots: list[Slot],
                intervals: dict[SSAValue, Interval | None]) -> list[Slot]:
        """ALU instructions for ``body``; returns the slots of the yielded values.
        ``intervals``: what each integer result may take before it is brought into its
        type (:meth:`body_intervals`)."""
        where: dict[SSAValue, Slot] = dict(zip(body.body.block.args, in_slots, strict=True))
        one, zero = (lambda: self.constant(1.0)), (lambda: self.constant(0.0))
        for op in body.body.block.ops:
            if isinstance(op, t.YieldOp):
                return [where[v] for v in op.values]
            srcs = [where[o] for o in op.operands]
            if isinstance(op, g.ConstantOp):
                (v,) = constant_value(op.value).reshape(-1).tolist()  # type: ignore[arg-type]
                where[op.results[0]] = self.constant(float(v))
                continue
            dst = self.fresh()
            if isinstance(op, g.AndOp | g.OrOp):  # logical: operands as 0 or 1 first
                for k, operand in enumerate(op.operands):
                    if g.element_type_of(operand) != i1:
                        truth = self.fresh()
                        self.alu("fcmpne", [srcs[k], zero()], truth)
                        srcs[k] = truth
            if type(op) in _ALU:
                self.alu(_ALU[type(op)], srcs, dst)
            elif type(op) in _SWAPPED:
                self.alu(_SWAPPED[type(op)], srcs[::-1], dst)
            elif isinstance(op, g.DivOp):
                inverse = self.fresh()
                self.alu("frecip", [srcs[1]], inverse)
                self.alu("fmul", [srcs[0], inverse], dst)
            elif isinstance(op, g.SqrtOp):
                inverse = self.fresh()
                self.alu("frsqrt", srcs, inverse)
                self.alu("frecip", [inverse], dst)
            elif isinstance(op, g.AbsOp):
                negative = self.fresh()
                self.alu("fneg", srcs, negative)
                self.alu("fmax", [srcs[0], negative], dst)
            elif isinstance(op, g.ReluOp):
                self.alu("fmax", [srcs[0], zero()], dst)
            elif isinstance(op, g.NotOp) and g.element_type_of(op.operands[0]) == i1:
                self.alu("fsub", [one(), srcs[0]], dst)
            elif isinstance(op, g.SigmoidOp):  # 1 / (1 + exp(-x))
                e = self.fresh()
                self.alu("fneg", srcs, dst)
                self.alu("fexp", [dst], e)
                self.alu("fadd", [e, one()], dst)
                self.alu("frecip", [dst], dst)
            elif isinstance(op, g.TanhOp):  # 1 - 2 / (exp(2x) + 1)
                e = self.fresh()
                self.alu("fadd", [srcs[0], srcs[0]], dst)
                self.alu("fexp", [dst], e)
                self.alu("fadd", [e, one()], dst)
                self.alu("frecip", [dst], e)
                self.alu("fadd", [e, e], dst)
                self.alu("fsub", [one(), dst], dst)
            elif isinstance(op, g.ErfOp):
                self.erf(srcs[0], dst)
            elif isinstance(op, g.PowOp):
                self.power(op, srcs, dst)
            elif isinstance(op, g.ConvertOp):
                target = g.element_type_of(op.results[0])
                source = g.element_type_of(op.operands[0])
                if target == i1:
                    self.alu("fcmpne", [srcs[0], zero()], dst)
                elif target == f32 or isinstance(source, IntegerType):
                    self.alu("fpass", srcs, dst)  # words hold exact values
                else:
                    raise MNCoreConversionError(
                        f"convert-task-to-mncore: {op.name} from {source} to {target} in "
                        f"task.body @{body.sym_name.data} has no ALU form (rounding)")
            else:
                raise MNCoreConversionError(f"convert-task-to-mncore: {op.name} in task.body "
                                            f"@{body.sym_name.data} has no ALU form", op)
            interval = intervals.get(op.results[0])
            if interval is not None:
                self.settle(dst, interval, g.element_type_of(op.results[0]))
            where[op.results[0]] = dst
        raise MNCoreConversionError(f"task.body @{body.sym_name.data} has no task.yield")

    def erf(self, x: Slot, dst: Slot) -> None:
        """Abramowitz and Stegun 7.1.26 on |x|, with x's sign (error below 1.5e-7)."""
        ax, tt, poly, e = self.fresh(), self.fresh(), self.fresh(), self.fresh()
        self.alu("fneg", [x], ax)
        self.alu("fmax", [x, ax], ax)
        self.alu("fmul", [ax, self.constant(_ERF_P)], tt)
        self.alu("fadd", [tt, self.constant(1.0)], tt)
        self.alu("frecip", [tt], tt)
        self.alu("fmul", [tt, self.constant(_ERF_A[4])], poly)
        for a in reversed(_ERF_A[:4]):
            self.alu("fadd", [poly, self.constant(a)], poly)
            self.alu("fmul", [poly, tt], poly)
        self.alu("fmul", [ax, ax], e)
        self.alu("fneg", [e], e)
        self.alu("fexp", [e], e)
        self.alu("fmul", [poly, e], poly)
        self.alu("fsub", [self.constant(1.0), poly], poly)  # erf(|x|)
        self.alu("fneg", [poly], e)
        self.alu("fcmplt", [x, self.constant(0.0)], tt)
        self.alu("fsel", [tt, e, poly], dst)

    def power(self, op: g.PowOp, srcs: list[Slot], dst: Slot) -> None:
        """``x ** y`` as eager: a constant exponent as PyTorch's scalar fast paths (small
        integers by multiplication, ``0.5`` as sqrt, ``-0.5`` as rsqrt: they differ from
        C's ``pow`` at -0.0 and -inf), any other as C's ``pow`` (:meth:`general_power`)."""
        exponent = op.operands[1].owner
        if isinstance(exponent, g.ConstantOp):
            (b,) = constant_value(exponent.value).reshape(-1).tolist()  # type: ignore[arg-type]
            if float(b).is_integer() and abs(b) <= _MULTIPLIED_POWERS:
                self.integer_power(srcs[0], int(b), dst)
                return
            if abs(b) == 0.5:
                self.alu("frsqrt", [srcs[0]], dst)
                if b > 0:
                    self.alu("frecip", [dst], dst)
                return
        self.general_power(srcs[0], srcs[1], dst)

    def integer_power(self, x: Slot, b: int, dst: Slot) -> None:
        """``x ** b`` for a small integer ``b``: ``|b| - 1`` products, then a reciprocal
        when ``b < 0`` (``x ** 0`` is 1, even for NaN)."""
        if b == 0:
            self.alu("fpass", [self.constant(1.0)], dst)
            return
        self.alu("fpass", [x], dst)
        for _ in range(abs(b) - 1):
            self.alu("fmul", [dst, x], dst)
        if b < 0:
            self.alu("frecip", [dst], dst)

    def general_power(self, x: Slot, y: Slot, dst: Slot) -> None:
        """``x ** y`` for an exponent known only at run time, without branches:
        ``|x| ** y`` as exp(y log|x|); 1 where ``y == 0`` or ``|x| == 1`` (where the
        product is 0 * inf); negated where ``x``'s sign bit is set (-0.0 too) and ``y``
        is an odd integer; NaN (log x) where a finite ``x < 0`` meets a non-integral
        ``y``."""
        one, zero = self.constant(1.0), self.constant(0.0)
        magnitude, cond, whole, scratch = self.fresh(), self.fresh(), self.fresh(), self.fresh()
        self.alu("fneg", [x], scratch)
        self.alu("fmax", [x, scratch], scratch)  # |x|
        self.alu("flog", [scratch], magnitude)
        self.alu("fmul", [magnitude, y], magnitude)
        self.alu("fexp", [magnitude], magnitude)
        self.alu("fcmpeq", [scratch, one], cond)
        self.alu("fcmpeq", [y, zero], scratch)
        self.alu("fmax", [cond, scratch], cond)
        self.alu("fsel", [cond, one, magnitude], magnitude)
        self.integral(y, whole, scratch)
        self.alu("fmul", [y, self.constant(0.5)], cond)
        self.integral(cond, cond, scratch)
        self.alu("fcmplt", [cond, whole], cond)  # y is odd: integral, y / 2 is not
        self.alu("frecip", [x], scratch)  # 1 / -0.0 is -inf, 1 / -inf is -0.0
        self.alu("fmin", [x, scratch], scratch)
        self.alu("fcmplt", [scratch, zero], scratch)  # the sign bit of x
        self.alu("fmul", [cond, scratch], cond)
        self.alu("fneg", [magnitude], scratch)
        self.alu("fsel", [cond, scratch, magnitude], magnitude)
        self.alu("fcmplt", [x, zero], cond)
        self.alu("fcmplt", [whole, cond], cond)  # x < 0 and y is not integral
        self.alu("fsub", [x, x], scratch)
        self.alu("fcmpeq", [scratch, zero], scratch)  # x is finite
        self.alu("fmul", [cond, scratch], cond)
        self.alu("flog", [x], scratch)  # NaN where x < 0
        self.alu("fsel", [cond, scratch, magnitude], dst)

    def integral(self, value: Slot, dst: Slot, scratch: Slot) -> None:
        """``dst`` = 1.0 where ``value`` is an integer (or ±inf), else 0.0; ``dst`` may
        be ``value``. The ALU has no floor: |v| + 2**23 rounds to an integer, and
        exactly that sum minus 2**23 gives back |v| when |v| < 2**23 is one; from 2**23
        on every float is an integer."""
        big = self.constant(_F32_INTEGRAL)
        self.alu("fneg", [value], scratch)
        self.alu("fmax", [value, scratch], scratch)  # |v|
        self.alu("fadd", [scratch, big], dst)
        self.alu("fsub", [dst, big], dst)
        self.alu("fcmpeq", [dst, scratch], dst)
        self.alu("fcmple", [big, scratch], scratch)
        self.alu("fmax", [dst, scratch], dst)


@dataclass(frozen=True)
class ConvertTaskToMNCorePass(ModulePass):
    """Lower every ``task.kernel`` to an ``mncore.program`` for ``machine``."""

    name = "convert-task-to-mncore"

    machine: str = "tiny"
    """A machine of ``dialects/mncore_machines.py``."""

    matmul_kernel: str = "auto"
    """``stationary`` (A in LM, ``mma``; needs K a multiple of 4 that fits), ``streaming``
    (any K, ``vmm``) or ``auto``: stationary where it applies."""

    max_instructions: int = MAX_INSTRUCTIONS
    """The compile budget: a kernel whose program needs more instructions is refused
    (emitting, scheduling and verifying a program takes time in proportion)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.machine not in MACHINES:
            raise MNCoreConversionError(f"convert-task-to-mncore: unknown machine "
                                        f"{self.machine!r}; machines: {', '.join(MACHINES)}")
        if self.matmul_kernel not in ("auto", "stationary", "streaming"):
            raise MNCoreConversionError(f"convert-task-to-mncore: matmul_kernel is auto, "
                                        f"stationary or streaming, not {self.matmul_kernel!r}")
        if self.max_instructions < 1:
            raise MNCoreConversionError("convert-task-to-mncore: max_instructions must be at "
                                        f"least 1, not {self.max_instructions}")
        for kernel in [o for o in op.body.block.ops if isinstance(o, t.KernelOp)]:
            program = ProgramBuilder(kernel, MACHINES[self.machine], self.matmul_kernel,
                                     self.max_instructions).build()
            Rewriter.replace_op(kernel, program)
