"""Parsing IR text so that every later error can point at the source.

xDSL keeps no source position on parsed ops and does not verify while parsing. The
parser here remembers each op's span and verifies op by op right after parsing, so a
verifier failure is reported like a parse error: ``file:line:col``, the source line,
a caret and the message. It then checks SSA dominance, which xDSL does not.

It also corrects what xDSL 0.75 gets wrong in reading text:

* a hexadecimal literal where a float is expected (``dense<0x4B800000> : tensor<f32>``,
  which xDSL's printer writes for 16777216.0) is the float's bit pattern, as in MLIR,
  not an integer to convert; the bits are kept exactly, signalling NaNs included;
* a literal that does not fit its element type (``dense<1.0e+308> : tensor<f32>``,
  ``dense<300> : tensor<i8>``, ``dense<-1> : tensor<ui8>``, ``2**63`` as an ``index``),
  a hex string whose bytes are neither every element nor one (a splat), or a literal
  whose type xDSL cannot pack (``i128``, ``f80``) is an error at the literal, not
  ``inf``, a wrapped value or a Python exception; zero-size literals parse;
* an unterminated string literal is rejected in linear time (xDSL's regular
  expression backtracks exponentially on it), and bytes that are not UTF-8 are an
  error at the first of them.

A ``func.func`` is graph-level IR, so it must have a body and its signature is checked
against the graph's element types like the graph ops in it. A verifier error xDSL raises
from a block (an empty one that needs a terminator) is blamed on the op that holds it.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    AnyFloat,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FixedBitwidthType,
    Float80Type,
    Float128Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    RankedStructure,
    StringAttr,
    UnknownLoc,
)
from xdsl.dialects.func import FuncOp
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.ir import Block, Operation
from xdsl.parser import AttrParser, Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from mncore_ir.dialects.element_types import integer_range
from mncore_ir.dialects.graph import GRAPH_TYPES
from mncore_ir.dominance import DominanceError, check_dominance

#: The most bytes a dense literal may unpack to (xDSL expands a splat element by element).
MAX_LITERAL_BYTES = 1 << 30


class LinearMLIRLexer(MLIRLexer):
    """xDSL's lexer with a string-literal rule that fails in linear time.

    xDSL's rule repeats "a run of plain characters or an escape" with ``(...+|...)*``,
    a ``+`` nested in a ``*``: on a literal without its closing quote the regex engine
    tries every way of splitting the characters into runs before giving up, 2**n steps
    for n characters. Possessive quantifiers (``++``, ``*+``) match the same strings
    and never backtrack.
    """

    _unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )


_HEX_LITERAL = re.compile(r"-?\s*0[xX]")
_DENSE_HEX_STRING = re.compile(r'<\s*"')
_NUMBER = re.compile(r"-?\s*(0[xX][0-9a-fA-F]+|[0-9]+(\.[0-9]*([eE][+-]?[0-9]+)?)?)")


@dataclass
class _CheckedElement(AttrParser._TensorLiteralElement):  # pyright: ignore[reportPrivateUsage]
    """A dense-literal element converted as MLIR does, with its range checked."""

    def to_type(self, parser: AttrParser, type: object) -> object:
        if isinstance(type, AnyFloat) and not isinstance(self.value, tuple):
            return self._to_float(parser, type)
        if isinstance(type, IntegerType | IndexType):
            self._check_range(parser, type)
        return super().to_type(parser, type)  # type: ignore[arg-type]

    def _check_range(self, parser: AttrParser, type: IntegerType | IndexType) -> None:
        """Refuse an integer ``type`` cannot hold, before xDSL packs it (which raises a
        ``struct.error`` for ``index`` and only says "non-negative" for unsigned types)."""
        if isinstance(type, IntegerType) and type.width.data > 64:  # xDSL packs <= 64 bits
            parser.raise_error(f"dense literals of {type} are not supported", self.span)
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            return  # a boolean or a float: xDSL says whether the type takes it
        low, high = integer_range(type)
        if not low <= self.value < high:
            parser.raise_error(f"integer value {self.span.text} is out of range for "
                               f"{type} ([{low}, {high}))", self.span)

    def _to_float(self, parser: AttrParser, type: AnyFloat) -> float:
        """The element as a float of ``type``: a hex literal is its bit pattern."""
        bits = None
        if _HEX_LITERAL.match(self.span.text):
            value, bits = self._bit_pattern(parser, type)
        else:
            try:
                value = float(self.value)  # type: ignore[arg-type]
                type.pack([value])
            except OverflowError:
                value = math.inf
            except NotImplementedError:
                parser.raise_error(f"dense literals of {type} are not supported", self.span)
            if math.isinf(value):
                parser.raise_error(f"floating point value {self.span.text} is too large "
                                   f"for {type}", self.span)
        if isinstance(parser, LocatingParser) and parser.float_bits is not None:
            parser.float_bits.append(bits)
        return value

    def _bit_pattern(self, parser: AttrParser, type: AnyFloat) -> tuple[float, int]:
        if self.span.text.startswith("-"):
            parser.raise_error("a hexadecimal float literal is a bit pattern and takes no "
                               "minus sign", self.span)
        bits = int(self.value)  # type: ignore[arg-type]
        if bits.bit_length() > type.bitwidth:
            parser.raise_error(f"hexadecimal float literal {self.span.text} has more bits "
                               f"than {type}", self.span)
        try:
            raw = bits.to_bytes(type.compile_time_size, "little")
            return type.unpack(raw, 1)[0], bits
        except NotImplementedError:
            parser.raise_error(f"dense literals of {type} are not supported", self.span)


class LocatingParser(Parser):
    """An xDSL parser that records the span of every operation it parses, reads
    literals exactly and checks them against their types, and lexes in linear time.

    As MLIR's parser does, it gives each op without a written ``loc(...)`` its source
    location (``name:line:col``, lines counted from ``line_offset``, the chunk's first
    line in its file): passes copy it onto what they make of the op, so an error a later
    pass raises still points at the source (:func:`span_at`)."""

    def __init__(self, ctx: Context, text: str | bytes, name: str = "<unknown>",
                 line_offset: int = 0) -> None:
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(LinearMLIRLexer(Input(_decode(text, name), name)))
        self.op_spans: dict[Operation, Span] = {}
        self.line_offset = line_offset
        self._file = StringAttr(name)
        self._line_starts: list[int] = []
        self._after_location = -1  # where the token after the last written loc(...) is
        #: While a dense literal of floats is parsed: each element's bit pattern when
        #: it was written in hex, else None.
        self.float_bits: list[int | None] | None = None

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as e:  # a property or type rejected while building the op
            raise ParseError(span, str(e).strip()) from None
        self.op_spans[op] = span
        written = self._after_location == self._current_token.span.start  # its own loc(...)
        if isinstance(op.location, UnknownLoc) and not written:
            line, column = self._line_col(span.start)
            op.location = FileLineColLoc(self._file, IntAttr(line + self.line_offset),
                                         IntAttr(column))
        return op

    def parse_optional_location(self) -> LocationAttr | None:
        location = super().parse_optional_location()
        if location is not None:
            self._after_location = self._current_token.span.start
        return location

    def _line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of ``offset`` (the line starts found once)."""
        if not self._line_starts:
            self._line_starts = line_starts(self.lexer.input.content)
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def _parse_block(self) -> Block:
        """A block label is expected where an op's syntax ended early (``graph.exp %x :
        T -> T``): say what was found, not only xDSL's "in block definition"."""
        token = self._current_token
        if token.kind != MLIRTokenKind.CARET_IDENT:
            self.raise_error(f"expected an operation, a block label or '}}', found "
                             f"{token.text!r} (does the op before it take this syntax?)",
                             token.span)
        return super()._parse_block()

    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:  # pyright: ignore[reportPrivateUsage]
        element = super()._parse_tensor_literal_element()
        return _CheckedElement(element.is_negative, element.value, element.span)

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        outer, self.float_bits = self.float_bits, []
        try:
            with self._packing_errors("dense literal"):
                if _DENSE_HEX_STRING.match(self.lexer.input.content, self.pos):
                    return self._parse_dense_hex_string(type)
                attr = super().parse_dense_int_or_fp_elements_attr(type)
            bits = self.float_bits
        finally:
            self.float_bits = outer
        return _with_bit_patterns(attr, bits)

    def _parse_dense_hex_string(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        """``<"0x...">`` and its type: the raw bytes of every element, or of one for a
        splat, as in MLIR. xDSL takes any length, keeping bytes that make no whole
        element (which fail when printed) and counting a short literal's elements."""
        self.parse_punctuation("<", " in dense attribute")
        span = self._current_token.span
        text = self.parse_str_literal(" in dense attribute")
        self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_literal_type()
        data = _hex_bytes(text)
        if data is None:
            self.raise_error("a hexadecimal dense literal is \"0x\" and pairs of hex "
                             "digits", span)
        size, count = type.element_type.compile_time_size, math.prod(type.get_shape())
        if len(data) == size:
            data *= count
        elif len(data) != size * count:
            splat = f" (or {_bytes(size)} for a splat)" if count != 1 else ""
            self.raise_error(f"a hexadecimal dense literal of {_bytes(len(data))} does not "
                             f"fit {type}, which takes {_bytes(size * count)}{splat}", span)
        return DenseIntOrFPElementsAttr(type, BytesAttr(data))

    def _parse_dense_literal_type(self) -> RankedStructure[AnyDenseElement]:
        """The type of a dense literal, refused before xDSL expands a splat to its size."""
        start = self.pos
        type = super()._parse_dense_literal_type()
        element = type.element_type
        width = element.bitwidth if isinstance(element, FixedBitwidthType) else 8
        if math.prod(type.get_shape()) * max(width, 8) // 8 > MAX_LITERAL_BYTES:
            self.raise_error(f"a dense literal of type {type} takes more than "
                             f"{MAX_LITERAL_BYTES:,} bytes", start, self.pos)
        return type

    def _parse_builtin_densearray_attr(self) -> DenseArrayBase | None:
        with self._packing_errors("dense array"):
            return super()._parse_builtin_densearray_attr()

    @contextmanager
    def _packing_errors(self, what: str) -> Iterator[None]:
        """Turn the Python errors xDSL raises when it cannot pack a literal's values
        (no struct format for the type; a float too large) into a parse error at it."""
        start = self.pos
        try:
            yield
        except (NotImplementedError, OverflowError) as e:
            text = self.lexer.input.content[start:self.pos]
            span = Span(start, start + len(text.rstrip()), self.lexer.input)
            message = (f"{what}s of this element type are not supported"
                       if isinstance(e, NotImplementedError) else
                       f"a value of this {what} is too large for its element type")
            raise ParseError(span, message) from None

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        content = self.lexer.input.content
        start = self.pos
        number = _NUMBER.match(content, start)
        span = Span(start, number.end() if number else start, self.lexer.input)
        try:
            attr = super().parse_optional_builtin_int_or_float_attr()
        except VerifyException as e:  # an integer out of its type's range
            raise ParseError(span, str(e)) from None
        if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
            low, high = integer_range(attr.type)  # xDSL checks the range of iN only
            if not low <= attr.value.data < high:
                self.raise_error(f"integer value {span.text} is out of range for index "
                                 f"([{low}, {high}))", span)
        if isinstance(attr, FloatAttr):
            if isinstance(attr.type, Float80Type | Float128Type):  # xDSL cannot print them
                self.raise_error(f"float attributes of type {attr.type} are not supported",
                                 span)
            if _HEX_LITERAL.match(content, start):
                if span.text.startswith("-"):
                    self.raise_error("a hexadecimal float literal is a bit pattern and "
                                     "takes no minus sign", span)
            elif math.isinf(attr.value.data):
                self.raise_error(f"floating point value {span.text} is too large for "
                                 f"{attr.type}", span)
        return attr

    def parse_verified_module(self, implicit_module: bool = True) -> ModuleOp:
        module = self.parse_module(implicit_module)
        ops = list(module.walk())
        for op in ops:
            with self._located(op):
                verify_alone(op)
        for op in ops:  # after the ops in it, which name a bad type where it is used
            if isinstance(op, FuncOp):  # a function is graph-level IR
                with self._located(op):
                    _verify_graph_function(op)
        self._check_dominance(module)  # after the verifiers made every region one block
        return module

    @contextmanager
    def _located(self, op: Operation) -> Iterator[None]:
        """Report a verifier failure of ``op`` as a parse error at its source."""
        try:
            yield
        except VerifyException as e:
            # a container's check may blame one op inside it (``error.op``)
            span = self.op_spans.get(getattr(e, "op", op)) or self.op_spans.get(op)
            if span is None:
                raise
            raise ParseError(span, str(e).strip()) from None

    def _check_dominance(self, module: ModuleOp) -> None:
        """Reject a use its definition does not dominate, at the using op (xDSL's parser
        accepts a value used above its definition in the same block)."""
        try:
            check_dominance(module)
        except DominanceError as e:
            span = self.op_spans.get(e.op) if e.op is not None else None
            if span is None:
                raise
            raise ParseError(span, str(e)) from None


def _verify_graph_function(func: FuncOp) -> None:
    """A graph-level function has a body (xDSL reads ``func.func @f() {}`` as a
    declaration, which MLIR refuses and no pass or executor can run) and a signature of
    the graph's element types."""
    if not func.body.blocks:
        raise VerifyException(f"func.func @{func.sym_name.data} has no body: a graph-level "
                              "function is a definition, not a declaration")
    GRAPH_TYPES.verify(func)


def verify_alone(op: Operation) -> None:
    """Verify ``op`` and the blocks it holds, not the ops in them (each is verified on
    its own, so that an error is raised by the op it is about).

    ``op.verify(verify_nested_ops=False)`` alone skips what xDSL checks in
    ``Block.verify``: that a block of a single-block region that needs a terminator is
    not empty (``func.func @f(%x: tensor<2xf32>) {}``, whose entry block holds the
    argument). An empty block is checked here; it holds no op for ``Block.verify`` to
    descend into.
    """
    op.verify(verify_nested_ops=False)
    for region in op.regions:
        for block in region.blocks:
            if block.is_empty:
                block.verify()


def blame(root: Operation, error: VerifyException) -> tuple[Operation | None,
                                                            VerifyException]:
    """The op in ``root`` that a verifier ``error`` of ``root`` is about, and the error
    to report at it: the op the error names (``error.op``), else the first op that
    fails :func:`verify_alone` with that failure (searched only on failure: xDSL's
    errors name no op); ``None`` and ``error`` when no op fails alone."""
    named = getattr(error, "op", None)
    if isinstance(named, Operation):
        return named, error
    for op in root.walk():
        try:
            verify_alone(op)
        except VerifyException as found:
            named = getattr(found, "op", None)
            return (named if isinstance(named, Operation) else op), found
    return None, error


def _hex_bytes(text: str) -> bytes | None:
    """The bytes ``0x...`` spells, or None when it is not that."""
    if not text.startswith(("0x", "0X")):
        return None
    try:
        return bytes.fromhex(text[2:])
    except ValueError:
        return None


def _bytes(count: int) -> str:
    return f"{count} byte" if count == 1 else f"{count} bytes"


def _decode(text: str | bytes, name: str) -> str:
    """The source as text; bytes that are not UTF-8 are a parse error at the first."""
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as e:
        shown = text.decode("utf-8", "replace")
        at = len(text[:e.start].decode("utf-8", "replace"))
        raise ParseError(Span(at, at + 1, Input(shown, name)),
                         f"the input is not UTF-8: byte 0x{text[e.start]:02x} at offset "
                         f"{e.start} ({e.reason})") from None


def _with_bit_patterns(attr: DenseIntOrFPElementsAttr,
                       bits: list[int | None]) -> DenseIntOrFPElementsAttr:
    """``attr`` with its hex-written elements set to their exact bit patterns.

    xDSL stores a dense literal by packing Python floats, which turns a signalling
    NaN into a quiet one; ``bits`` holds one entry per written element (one for a
    splat).
    """
    if not any(b is not None for b in bits):
        return attr
    size = attr.get_element_type().compile_time_size  # len(attr) is 0 for tensor<0xf32>
    data = bytearray(attr.data.data)
    for i in range(len(attr)):
        pattern = bits[0] if len(bits) == 1 else bits[i]
        if pattern is not None:
            data[i * size:(i + 1) * size] = pattern.to_bytes(size, "little")
    return DenseIntOrFPElementsAttr(attr.type, BytesAttr(bytes(data)))


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


def line_starts(content: str) -> list[int]:
    """The offset at which each line of ``content`` starts."""
    return [0, *(m.end() for m in re.finditer("\n", content))]


def span_at(source: Input, location: FileLineColLoc, line_offset: int = 0) -> Span | None:
    """The span of the token at ``location`` in ``source`` (a chunk whose first line is
    line ``line_offset + 1`` of its file), or ``None`` when it is not in it."""
    if location.filename.data != source.name:
        return None
    content = source.content
    starts = [*line_starts(content), len(content) + 1]
    line, column = location.line.data - line_offset, location.column.data
    if not 1 <= line < len(starts) or not 1 <= column <= starts[line] - starts[line - 1]:
        return None
    start = end = starts[line - 1] + column - 1
    while end < len(content) and not content[end].isspace():
        end += 1
    return Span(start, max(end, start + 1), source)
