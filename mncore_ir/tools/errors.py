"""One clear message and a non-zero exit for every user error, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.utils.exceptions import ParseError

from mncore_ir.pipeline import PassError
from mncore_ir.tools.diagnostics import LocatedError, render


def describe(error: BaseException) -> str:
    """``file:line:col: error: message`` and the source line, or just the message; an
    internal error in a pass says so (``internal error in pass 'X': ...``)."""
    if isinstance(error, (ParseError, LocatedError)):
        return render(error.span, f"error: {error.msg}", "")
    if isinstance(error, PassError):
        return str(error)
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
