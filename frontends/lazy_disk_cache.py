"""The on-disk compile cache (``MNCORE_CACHE_DIR``): one file per compiled step and
device, its first line naming the compiler that wrote it and the digest of the IR
below it. An entry that is not intact is ignored (one warning) and rewritten."""

from __future__ import annotations

import hashlib
import os
import re
import warnings

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from mncore_ir.parsing import parse_module

COMPILER_VERSION = "mncore-ir 0.1.0 graph-v14"

#: The first line of an on-disk entry: the compiler that wrote it and the body's digest.
_HEADER = re.compile(r"// (.+); blake2b ([0-9a-f]{32})\n")


def _digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _unpack(data: bytes) -> str:
    """The IR of an on-disk entry; ``ValueError`` saying why when it is not intact."""
    newline = data.find(b"\n") + 1
    header = _HEADER.fullmatch(data[:newline].decode("ascii", "replace"))
    if not header:
        raise ValueError("no valid header line")
    if header.group(1) != COMPILER_VERSION:
        raise ValueError(f"written by {header.group(1)!r}, not {COMPILER_VERSION!r}")
    body = data[newline:]
    if _digest(body) != header.group(2):
        raise ValueError("its checksum does not match (truncated or edited)")
    return body.decode()


def _pack(ir: str) -> bytes:
    body = ir.encode()
    return f"// {COMPILER_VERSION}; blake2b {_digest(body)}\n".encode() + body


def load(ctx: Context, path: str) -> tuple[str, ModuleOp] | None:
    """The entry at ``path``, parsed; None when there is none or it is not intact
    (then one warning: the step is compiled again and the entry rewritten)."""
    try:
        with open(path, "rb") as f:
            ir = _unpack(f.read())
        return ir, parse_module(ctx, ir, path)
    except FileNotFoundError:
        return None
    except Exception as error:  # whatever is wrong with it, compiling again mends it
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        warnings.warn(f"ignoring the compile-cache entry {path}: {why}; compiling the "
                      "step again and rewriting it", stacklevel=2)
        return None

def store(path: str, ir: str) -> None:
    """Write the entry atomically (a reader never sees half of it); a cache that
    cannot be written costs a warning, not the step."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(_pack(ir))
        os.replace(tmp, path)
    except OSError as error:
        warnings.warn(f"cannot write the compile-cache entry {path}: {error}",
                      stacklevel=2)
