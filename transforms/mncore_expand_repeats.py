"""``mncore-expand-repeats``: every ``mncore.repeat`` as the plain instructions it issues.

The compact form and its expansion issue the same instructions at the same steps, so a
program means the same either way; the expansion is what an assembler without a repeat
form, or a reader who wants every instruction, needs, and what a test compares the
compact form against. Instructions end up in issue order (a group's iterations
interleave with the instructions issued during its span).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mncore_ir.dialects import mncore as m


def expand_repeats(program: m.ProgramOp) -> int:
    """Expand ``program``'s repeated groups in place; returns how many there were."""
    units = program.units()
    groups = sum(isinstance(op, m.RepeatOp) for op in units)
    if not groups:
        return 0
    issued = program.instructions()
    block = program.body.block
    for op in units:
        op.detach()
    for op in units:
        if isinstance(op, m.RepeatOp):
            op.erase()
    for op in issued:
        block.add_op(op)  # tensors and buffers keep their places in front
    return groups


@dataclass(frozen=True)
class MNCoreExpandRepeatsPass(ModulePass):
    """Replace every ``mncore.repeat`` by the instructions it issues."""

    name = "mncore-expand-repeats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [o for o in op.walk() if isinstance(o, m.ProgramOp)]:
            expand_repeats(program)
