"""``-t mncore-asm``: an ``mncore.program`` as assembly text in the manner of MN-Core 2's.

One line per step, the step's instructions joined by ``;`` (a VLIW bundle); runs of
empty steps are ``nop/N``. Operands follow the assembler's register names: ``$lm`` is
LM0, ``$ln`` LM1, ``$lr`` GRF0, ``$ls`` GRF1, then the word address, and ``v`` for the
4-word vector a step reads per PE; ``$lb``/``$lc`` are L1BM/L2BM, ``$d`` DRAM and
``$aluf`` the forwarded result. ``?REG`` is an ALU write mask, ``/N`` a word count,
``/R:S`` a strided DMA's run and stride, ``*N:P`` its rows and their pitch, ``@N`` a
DMA's one L2B and ``#T`` a DMA tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_isa import ALU, MAU

REGISTERS = {"lm0": "$lm", "lm1": "$ln", "grf0": "$lr", "grf1": "$ls", "l1bm": "$lb",
             "l2bm": "$lc", "dram": "$d"}


def operand(ref: m.RefAttr, vector: bool) -> str:
    if ref.space.data == "fwd":
        return "$aluf"
    return f"{REGISTERS[ref.space.data]}{ref.address.data}{'v' if vector else ''}"


def instruction(op: m.InstructionOp) -> str:
    kind = op.kind.data
    if isinstance(op, m.WaitOp):
        return f"wait #{op.tag_number()}"
    if isinstance(op, m.AluOp | m.MauOp):
        mnemonic = (ALU if isinstance(op, m.AluOp) else MAU)[kind].mnemonic
        refs = [*op.srcs.data, op.destination()]
        text = " ".join([mnemonic, *(operand(r, True) for r in refs)])
        return text + (f" ?{operand(op.mask, True)}" if op.mask is not None else "")
    prefix = {"l1": "l1", "l2": "l2", "dma": "dma"}[op.SLOT]
    text = " ".join([prefix + kind, *(operand(r, op.SLOT == "l1" and r.space.data != "l1bm")
                                      for r in [*op.srcs.data, op.destination()])])
    if op.words is not None:
        text += f" /{op.words.value.data}"
    if op.run is not None and op.stride is not None:
        text += f" /{op.run.value.data}:{op.stride.value.data}"
    if op.rows is not None and op.pitch is not None:
        text += f" *{op.rows.value.data}:{op.pitch.value.data}"
    if op.l2b is not None:
        text += f" @{op.l2b.value.data}"
    if op.tag is not None:
        text += f" #{op.tag.value.data}"
    return text


def program_asm(program: m.ProgramOp) -> str:
    lines = [f"# mncore.program @{program.sym_name.data} on {program.target.describe()}"]
    for op in program.body.block.ops:
        if isinstance(op, m.TensorOp):
            lines.append(f"# {op.role.data} @{op.sym_name.data}: {op.type} at "
                         f"{operand(op.at, False)}")
        elif isinstance(op, m.BufferOp):
            layout = "" if op.shape is None or op.strides is None else (
                f" ({list(op.shape.get_values())}, strides {list(op.strides.get_values())})")
            lines.append(f"# buffer @{op.sym_name.data}: {op.words.value.data} words at "
                         f"{operand(op.at, False)}{layout}")
    bundles: dict[int, list[str]] = {}
    for op in program.instructions():
        bundles.setdefault(op.at, []).append(instruction(op))
    step = 0
    for at in sorted(bundles):
        if at > step:
            lines.append(f"nop/{at - step}")
        lines.append(" ; ".join(bundles[at]))
        step = at + 1
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class MNCoreAsmTarget(Target):
    """Assembly text of every ``mncore.program`` in the module."""

    name = "mncore-asm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write("\n".join(program_asm(op) for op in module.ops
                               if isinstance(op, m.ProgramOp)))
