"""A decoded program's values-only run as a *plan*: one closure per instruction, each
with the views of the memories it reads and writes bound once, writing its result in
place (a tree transfer as one strided copy, no tiled or transposed temporary).

Runs after the first only compute values (:meth:`Simulator.values`): the first, checked
run found the program free of hazards, and its timing does not depend on values. A
bundle reads the machine's state before any of its slots writes (VLIW); a plan runs
its instructions one after another, so a bundle where a slot writes words that a later
slot of the same step reads or writes runs as before (all reads, then all writes). A
program that reads ``fwd`` gets no plan (:func:`build_plan` returns ``None``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_isa import ALU
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.targets.mncore_decode import Decoded, Words, tree_geometry

#: ALU kinds whose semantics is a ufunc giving f32 for f32 words: computed into the
#: destination's view (a ufunc reads overlapping operands as if copied first).
_FLOAT_UFUNCS = frozenset(
    kind for kind, instruction in ALU.items()
    if isinstance(instruction.semantics, np.ufunc) and instruction.arity and
    instruction.semantics(*[np.float32(1)] * instruction.arity).dtype == np.float32)

Step = Callable[[], None]
#: Where a run's DRAM is: a fresh array each run, so closures look it up here.
DramCell = list[np.ndarray]
#: A bundle's generic run: (the bundle, the memories) -> None.
Generic = Callable[[list[Decoded], dict[str, np.ndarray]], None]


def build_plan(machine: Machine, bundles: list[tuple[int, list[Decoded]]],
               memory: dict[str, np.ndarray], dram: DramCell, generic: Generic
               ) -> list[Step] | None:
    """The closures that compute what ``bundles`` compute on ``memory`` (its on-chip
    arrays, kept from run to run) and the DRAM in ``dram[0]``; ``generic`` runs a
    bundle whose slots touch each other's words. ``None`` for a program that reads
    ``fwd``."""
    plan: list[Step] = []
    for _, bundle in bundles:
        if any(space == "fwd" for ins in bundle for _, space, _ in ins.reads):
            return None
        if _entangled(bundle):
            plan.append(lambda bundle=bundle: generic(bundle, {**memory, "dram": dram[0]}))
        else:
            plan.extend(_step(machine, ins, memory, dram) for ins in bundle)
    return plan


def _extent(words: Words) -> tuple[int, int]:
    if isinstance(words, slice):
        return words.start, words.stop
    return int(words.min()), int(words.max()) + 1


def _entangled(bundle: list[Decoded]) -> bool:
    """Whether a slot writes words that a later slot of the bundle reads or writes
    (L2Bs' copies not told apart: at worst a bundle runs the generic way)."""
    if len(bundle) < 2:
        return False
    for i, ins in enumerate(bundle):
        assert ins.write is not None
        _, space, words = ins.write
        lo, hi = _extent(words)
        for later in bundle[i + 1:]:
            assert later.write is not None
            for _, other, touched in (*later.reads, later.write):
                if other == space:
                    a, b = _extent(touched)
                    if a < hi and lo < b:
                        return True
    return False


def _step(machine: Machine, ins: Decoded, memory: dict[str, np.ndarray],
          dram: DramCell) -> Step:
    op = ins.op
    assert ins.write is not None
    _, space, words = ins.write
    if isinstance(op, m.DmaOp):
        return _dma(ins, memory, dram)
    # on chip, every operand is a span of rows (the decoder's): bound as views
    assert isinstance(words, slice) and space != "dram", op
    dst = memory[space][words]
    values = [memory[space][words] for _, space, words in ins.reads]
    if isinstance(op, m.L1Op | m.L2Op):
        return _tree(machine, op, values[0], dst)
    mask = values.pop() if ins.masked else None
    kind = op.kind.data
    if isinstance(op, m.AluOp) and kind == "fpass":
        (a,) = values
        if mask is None:
            return lambda: np.copyto(dst, a)
        return lambda: np.copyto(dst, a, where=mask != 0)
    if isinstance(op, m.AluOp) and not ALU[kind].arity:
        execute = ins.execute
        if mask is None:
            return lambda: dst.__setitem__(Ellipsis, execute([]))
        return lambda: np.copyto(dst, execute([]), where=mask != 0)
    semantics = ALU[kind].semantics if isinstance(op, m.AluOp) else None
    if mask is None and kind in _FLOAT_UFUNCS:  # straight into the destination
        assert isinstance(semantics, np.ufunc)
        return lambda: semantics(*values, out=dst)
    execute = ins.execute  # the ISA's semantics, as the checked run computes them
    if mask is None:
        return lambda: dst.__setitem__(Ellipsis, execute(values))
    return lambda: np.copyto(dst, execute(values), where=mask != 0)


def _tree(machine: Machine, op: m.L1Op | m.L2Op, src: np.ndarray, dst: np.ndarray) -> Step:
    """A transfer along the tree as one copy into the destination's view, with the
    column order of :func:`mncore_memories.tree`."""
    blocks, per, n = tree_geometry(op, machine)
    kind = op.kind.data
    if kind == "bcast":  # [w, b] -> [w, u blocks + b]
        into, value = dst.reshape(n, per, blocks), src[:, None, :]
    elif kind == "scatter":  # [u n + w, b] -> [w, u blocks + b]
        into, value = dst.reshape(n, per, blocks), src.reshape(per, n, blocks).transpose(
            1, 0, 2)
    elif kind == "gather":  # [w, u blocks + b] -> [u n + w, b]
        into, value = dst.reshape(per, n, blocks), src.reshape(n, per, blocks).transpose(
            1, 0, 2)
    else:  # reduce: summed over the units in their order, as the checked run sums
        summed = src.reshape(n, per, blocks)
        return lambda: np.sum(summed, axis=1, out=dst)
    return lambda: into.__setitem__(Ellipsis, value)


def _dma(ins: Decoded, memory: dict[str, np.ndarray], dram: DramCell) -> Step:
    """A load into every L2B's copy of L2BM or one; a store from one copy."""
    assert ins.write is not None
    (_, _, source), (_, _, target) = ins.reads[0], ins.write
    block = ins.block
    l2bm = memory["l2bm"]
    if ins.op.kind.data == "load":
        assert isinstance(target, slice)
        if block is None:  # one DRAM column to every copy
            into = l2bm[target]
            return lambda: into.__setitem__(Ellipsis, dram[0][source])
        column = l2bm[target, block]
        return lambda: column.__setitem__(Ellipsis, dram[0][source, 0])
    assert isinstance(source, slice)
    copy = l2bm[source, (block or 0):(block or 0) + 1]
    return lambda: dram[0].__setitem__(target, copy)
