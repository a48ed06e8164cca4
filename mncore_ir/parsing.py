"""Parsing IR text so that every later error can point at the source.

xDSL keeps no source position on parsed ops and does not verify while parsing. The
parser here remembers each op's span and verifies op by op right after parsing, so a
verifier failure is reported like a parse error: ``file:line:col``, the source line,
a caret and the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span


class LocatingParser(Parser):
    """An xDSL parser that records the span of every operation it parses."""

    def __init__(self, ctx: Context, text: str | bytes, name: str = "<unknown>") -> None:
        super().__init__(ctx, text, name)
        self.op_spans: dict[Operation, Span] = {}

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as e:  # a property or type rejected while building the op
            raise ParseError(span, str(e).strip()) from None
        self.op_spans[op] = span
        return op

    def parse_verified_module(self, implicit_module: bool = True) -> ModuleOp:
        module = self.parse_module(implicit_module)
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as e:
                # a container's check may blame one op inside it (``error.op``)
                span = self.op_spans.get(getattr(e, "op", op)) or self.op_spans.get(op)
                if span is None:
                    raise
                raise ParseError(span, str(e).strip()) from None
        return module


def parse_module(ctx: Context, text: str | bytes, name: str = "<unknown>") -> ModuleOp:
    """Parse and verify ``text``; errors carry ``name:line:col``."""
    return LocatingParser(ctx, text, name).parse_verified_module()


@dataclass(frozen=True)
class LocatingMLIRFrontend(MLIRFrontend):
    """The ``mlir`` input format of the tools, verifying with source positions."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "input") -> ModuleOp:
        return LocatingParser(ctx, input.read(), input_name).parse_verified_module(
            not self.no_implicit_module
        )
