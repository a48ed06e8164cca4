"""The exceptions every level shares: each names the op to blame, so a tool can point at
its source position and the runtime at the user's line."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException


class OpVerifyException(VerifyException):
    """A container-level check (kernel, program) that failed because of one op inside
    it: tools report it at that op's position."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op


class InterpretationError(Exception):
    """Bad inputs for a function, or an op that cannot run; ``op`` is the op to blame,
    when there is one (a tool points at its source position)."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op
