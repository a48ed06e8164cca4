"""Where in the user's program a lazy op was called: recorded with every node (for
error messages, dumps' ``loc(...)`` and FX stack traces), so it must be cheap."""

from __future__ import annotations

import linecache
import os
import re
import sys
from types import CodeType, FrameType

import torch

_TORCH_DIR = os.path.dirname(torch.__file__)
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))
#: id(code) -> (code, whether it is torch's or this package's): keyed by identity, as
#: a code object's own hash is computed from its contents at every lookup; the code
#: is held, so its id is never reused while its entry lives.
_INTERNAL: dict[int, tuple[CodeType, bool]] = {}
#: (id(code), instruction offset) of a user frame -> its location (the code is held
#: in ``_INTERNAL``).
_SITES: dict[tuple[int, int], str] = {}


def user_location() -> str:
    """``File "path", line N, in name`` of the innermost frame outside torch and this
    package ("" if there is none)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        known = _INTERNAL.get(id(code))
        if known is None or known[0] is not code:
            name = code.co_filename
            module = frame.f_globals.get("__name__", "")
            known = (code, name.startswith((_TORCH_DIR, _OWN_DIR, "<")) or module.startswith(
                ("torch_mncore", "mncore_ir.frontends")))
            _INTERNAL[id(code)] = known
        if not known[1]:
            site = (id(code), frame.f_lasti)  # the instruction: its line costs a search
            where = _SITES.get(site)
            if where is None:
                where = f'File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}'
                if len(_SITES) < 100_000:
                    _SITES[site] = where
            return where
        frame = frame.f_back
    return ""


def describe_location(where: str) -> str:
    """``path:line: code`` of a :func:`user_location`, for error messages."""
    m = re.match(r'File "([^"]+)", line (\d+)', where)
    if not m:
        return "<unknown source line>"
    path, line = m.group(1), int(m.group(2))
    return f"{path}:{line}: {linecache.getline(path, line).strip()}"
