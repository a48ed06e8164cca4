"""The MN-Core instruction set, once: for each ALU and MAU instruction kind its arity,
its numpy semantics, its assembly mnemonic and its FLOPs.

The ``mncore`` dialect's verifier checks arities against it, the cycle simulator
executes its semantics and counts its FLOPs, and the assembly printer spells its
mnemonics; a new instruction is one entry here. Semantics act on arrays of words,
word-major as the simulator's memories hold them (``(4, PEs)`` for the ALU; the MAU's
matrix is the 16 words from its first source, ``(16, PEs)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Instruction:
    """One instruction kind of a compute slot."""

    arity: int
    """How many sources it reads."""
    semantics: Callable[..., np.ndarray | np.float32]
    """The result from the sources' words (a scalar for no sources: every word gets it)."""
    mnemonic: str
    """Its name in assembly text."""
    flops: int
    """Floating-point operations per PE (4 words for the ALU)."""


def _alu(arity: int, semantics: Callable[..., np.ndarray | np.float32], mnemonic: str,
         flops_per_word: int = 1) -> Instruction:
    return Instruction(arity, semantics, mnemonic, 4 * flops_per_word)


def _select(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(c != 0, a, b)


#: ALU instructions: elementwise on 4 words per PE; comparisons give 1.0 or 0.0 and
#: ``fsel c, a, b`` is ``c != 0 ? a : b``.
ALU: dict[str, Instruction] = {
    "fadd": _alu(2, np.add, "fvadd"),
    "fsub": _alu(2, np.subtract, "fvsub"),
    "fmul": _alu(2, np.multiply, "fvmul"),
    "fmax": _alu(2, np.maximum, "fvmax"),
    "fmin": _alu(2, np.minimum, "fvmin"),
    "fmadd": _alu(3, lambda a, b, c: a * b + c, "fvmadd", 2),
    "fpass": _alu(1, lambda a: a, "fvpass", 0),
    "fneg": _alu(1, np.negative, "fvneg"),
    "fexp": _alu(1, np.exp, "fvexp"),
    "flog": _alu(1, np.log, "fvlog"),
    "frsqrt": _alu(1, lambda a: 1 / np.sqrt(a), "fvrsqrt"),
    "frecip": _alu(1, lambda a: 1 / a, "fvrecip"),
    "fzero": _alu(0, lambda: np.float32(0.0), "fvzero", 0),
    "fcmpeq": _alu(2, np.equal, "fvcmpeq"),
    "fcmpne": _alu(2, np.not_equal, "fvcmpne"),
    "fcmplt": _alu(2, np.less, "fvcmplt"),
    "fcmple": _alu(2, np.less_equal, "fvcmple"),
    "fsel": _alu(3, _select, "fvsel", 0),
}


def _mma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``A . b + c`` per PE (word-major: ``a`` is ``(16, PEs)``, ``A`` its 4x4
    row-major matrix): each word ``((A_i0 b_0 + A_i1 b_1) + A_i2 b_2) + A_i3 b_3``,
    then ``+ c``, in that order whatever the operands' memory layout (numpy's einsum
    sums in another order for contiguous operands than for strided ones; a sum over
    an axis that is not the innermost of a C-ordered array adds its rows in order)."""
    products = a.reshape(4, 4, -1) * b[None]  # [i, j, PE]
    return products.sum(axis=1) + c


def _vmm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``b . A + c`` per PE, summed over ``i`` in order as :func:`_mma`."""
    products = b[:, None] * a.reshape(4, 4, -1)  # [i, j, PE]
    return products.sum(axis=0) + c


#: MAU instructions: a 4x4 matrix, a vector and an addend (16 multiply-adds per PE).
MAU: dict[str, Instruction] = {
    "mma": Instruction(3, _mma, "fvmma", 32),
    "vmm": Instruction(3, _vmm, "fvvmm", 32),
}
