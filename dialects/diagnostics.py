"""The exceptions every level shares: each names the op to blame, so a tool can point at
its source position and the runtime at the user's line."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException


def source_location(op: Operation) -> FileLineColLoc | None:
    """Where ``op`` was written: its location, else that of the first op nested in it
    that has one (a task's body). The parser and the FX importer set them, and passes
    copy them onto what they make of an op."""
    for inner in op.walk():
        if isinstance(inner.location, FileLineColLoc):
            return inner.location
    return None


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
