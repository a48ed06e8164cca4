"""One clear message and a non-zero exit for every user error, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.utils.exceptions import ParseError


def describe(error: BaseException) -> str:
    """``file:line:col: error: message`` and the source line, or just the message."""
    if isinstance(error, ParseError):
        loc = error.span.get_location()
        context = error.span.print_with_context().splitlines()[1:]
        return "\n".join([f"{loc.file}:{loc.line}:{loc.col}: error: {error.msg}", *context])
    if isinstance(error, FileNotFoundError):
        return f"error: cannot open {error.filename}: no such file"
    message = str(error).strip() or type(error).__name__
    return f"error: {message}"


@contextmanager
def cli_errors(tool: str) -> Iterator[None]:
    """Turn exceptions into ``tool: message`` and exit 1 (``MNCORE_TRACEBACK=1`` re-raises)."""
    try:
        yield
    except (SystemExit, KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as error:  # xDSL's ArgSpecParseError is a BaseException
        if os.environ.get("MNCORE_TRACEBACK"):
            raise
        sys.stdout.flush()
        print(f"{tool}: {describe(error)}", file=sys.stderr)
        sys.exit(1)
