"""``--verify-diagnostics`` as ``mlir-opt`` has it: the diagnostics a run produces are
matched against ``expected-*`` directives written in the input.

A directive is ``expected-<severity>[-re][@<where>] {{text}}`` anywhere on a line
(usually in a ``//`` comment). ``severity`` is ``error``, ``warning``, ``note`` or
``remark``; ``where`` is ``+N`` or ``-N`` (lines below or above the directive),
``above`` or ``below`` (the nearest line that holds no directive) or ``unknown`` (a
diagnostic without a source position); without it, the directive's own line. The text
must occur in the message; with ``-re``, ``{{...}}`` inside the text is a regular
expression (Python syntax). Each diagnostic matches one unmatched directive of its
severity and line, in the same ``--split-input-file`` chunk; a diagnostic that matches
none, or a directive that nothing matches, is a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Input, Span

__all__ = ["Diagnostic", "Expectation", "LocatedError", "parse_expectations", "render",
           "unmatched"]

#: A directive, as mlir's SourceMgrDiagnosticVerifierHandler reads it.
_DIRECTIVE = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)(?P<re>-re)?"
    r" *(?:@(?P<where>[+-][0-9]+|above|below|unknown))? *\{\{(?P<text>.*)\}\}\s*$"
)
#: What starts a directive: a line with this but not the whole form is malformed.
_DIRECTIVE_START = re.compile(r"expected-(?:error|warning|note|remark)(?:-re)?(?= *[@{])")
_REGEX_PART = re.compile(r"\{\{(.*?)\}\}")


class LocatedError(DiagnosticException):
    """A diagnostic raised by a pass, moved to the source position of the op it blames
    (reported like a parse error)."""

    def __init__(self, span: Span, msg: str) -> None:
        super().__init__(msg)
        self.span = span
        self.msg = msg


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic of a run: its severity, message and source span (``None``: no
    known position), with the chunk's line offset already in the span."""

    severity: str
    message: str
    span: Span | None = None

    @property
    def line(self) -> int | None:
        return None if self.span is None else self.span.get_location().line


@dataclass
class Expectation:
    """One ``expected-*`` directive: what it matches and where it was written."""

    severity: str
    text: str
    pattern: re.Pattern[str]
    line: int | None  # None: @unknown
    span: Span  # the directive in the input
    matched: bool = field(default=False, compare=False)

    def matches(self, diagnostic: Diagnostic) -> bool:
        return (not self.matched and diagnostic.severity == self.severity
                and diagnostic.line == self.line
                and self.pattern.search(diagnostic.message) is not None)


def render(span: Span | None, message: str, file: str) -> str:
    """``message`` at ``span`` (``file:line:col: message`` with the source line and a
    caret), or ``file: message`` when there is no span."""
    if span is None:
        return f"{file}: {message}"
    context = span.print_with_context().splitlines()[1:]
    return "\n".join([f"{span.get_location()}: {message}", *context])


def parse_expectations(text: str, name: str, line_offset: int = 0) -> list[Expectation]:
    """The directives in ``text`` (one ``--split-input-file`` chunk, whose first line is
    line ``line_offset + 1`` of the file ``name``). Raises :class:`ParseError` at a
    malformed directive."""
    source = Input(text, name)
    found: list[Expectation] = []
    below: list[Expectation] = []  # waiting for the next line without a directive
    last_plain: int | None = None  # the last line without a directive, so far
    start = 0
    for index, line in enumerate(text.split("\n")):
        number = line_offset + index + 1
        begin = _DIRECTIVE_START.search(line)
        if begin is None:
            for expectation in below:
                expectation.line = number
            below.clear()
            last_plain = number
        else:
            span = Span(start + begin.start(), start + len(line.rstrip()), source, line_offset)
            expectation = _expectation(line, begin.start(), span, number, last_plain)
            found.append(expectation)
            if expectation.line == -1:
                below.append(expectation)
        start += len(line) + 1
    if below:
        raise ParseError(below[0].span, "expected-*@below has no line below it")
    return found


def _expectation(line: str, at: int, span: Span, number: int,
                 last_plain: int | None) -> Expectation:
    """The directive starting at column ``at`` of ``line`` (line ``number``); its line
    is -1 for ``@below``, resolved by the caller."""
    match = _DIRECTIVE.match(line, at)
    if match is None:
        raise ParseError(span, "malformed directive: expected "
                               "'expected-<error|warning|note|remark>[-re]"
                               "[@+N|@-N|@above|@below|@unknown] {{text}}'")
    where, text = match["where"], match["text"]
    if where is None:
        target: int | None = number
    elif where == "unknown":
        target = None
    elif where == "above":
        if last_plain is None:
            raise ParseError(span, "expected-*@above has no line above it")
        target = last_plain
    elif where == "below":
        target = -1
    else:
        target = number + int(where)
        if target < 1:
            raise ParseError(span, f"expected-*@{where} points before the first line")
    return Expectation(match["severity"], text, _pattern(text, match["re"] is not None, span),
                       target, span)


def _pattern(text: str, regex: bool, span: Span) -> re.Pattern[str]:
    """A substring match of ``text``; with ``regex``, its ``{{...}}`` parts are regular
    expressions and the rest literal."""
    if not regex:
        return re.compile(re.escape(text))
    parts, end = [], 0
    for part in _REGEX_PART.finditer(text):
        parts += [re.escape(text[end:part.start()]), f"(?:{part[1]})"]
        end = part.end()
    parts.append(re.escape(text[end:]))
    try:
        return re.compile("".join(parts))
    except re.error as error:
        raise ParseError(span, f"invalid regular expression in directive: {error}") from None


def unmatched(expectations: list[Expectation], diagnostics: Iterable[Diagnostic],
              file: str) -> list[str]:
    """Match ``diagnostics`` to ``expectations`` (one chunk's); the failures, each a
    message with its position: unexpected diagnostics, then directives not met."""
    failures = []
    for diagnostic in diagnostics:
        expectation = next((e for e in expectations if e.matches(diagnostic)), None)
        if expectation is None:
            where = " at an unknown location" if diagnostic.span is None else ""
            failures.append(render(diagnostic.span, f"error: unexpected {diagnostic.severity}"
                                   f"{where}: {diagnostic.message}", file))
        else:
            expectation.matched = True
    for expectation in expectations:
        if not expectation.matched:
            where = "" if expectation.line is not None else " at an unknown location"
            failures.append(render(expectation.span, f"error: expected {expectation.severity}"
                                   f' "{expectation.text}"{where} was not produced', file))
    return failures
