"""Profiles of what the lazy runtime does, written as Chrome Trace Event Format JSON (what
Perfetto and ``chrome://tracing`` load): one complete event (``"ph": "X"``) per traced
step, sync, compile, wait and graph execution, on the thread that did it.

The runtime's hooks read :data:`ACTIVE` once per sync, read or execution and do nothing
more while it is ``None``, so an unprofiled program pays one attribute read per step.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from mncore_ir.frontends.lazy_tensor import LazyError

#: The profile being recorded, if any (``torch_mncore.profile``).
ACTIVE: Profile | None = None

#: Timers whose events the runtime records itself, with more detail than a duration.
_RECORDED_BY_THE_RUNTIME = frozenset({"SyncTime", "ExecuteTime", "TransferToDeviceTime"})
#: The event a timer's sample stands for, where the runtime does not record it itself.
_TIMER_EVENTS = {"CompileTime": ("compile", "compile")}


class Profile:
    """The events recorded so far; times are ``time.perf_counter()`` seconds."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.origin = time.perf_counter()
        self.pid = os.getpid()
        self.events: list[dict[str, Any]] = []
        self.threads: dict[int, str] = {}
        self.steps = 0
        self.trace_start = self.origin  # where tracing of the current step began
        self.traced_ops_at_start: int | None = None
        self._compiling = threading.local()  # the runtime is timing a compile itself

    def complete(self, name: str, category: str, start: float, end: float,
                 **args: Any) -> None:
        """Record ``name`` as running from ``start`` to ``end`` on this thread."""
        tid = threading.get_native_id()
        if tid not in self.threads:
            self.threads[tid] = threading.current_thread().name
        event = {"name": name, "cat": category, "ph": "X", "pid": self.pid, "tid": tid,
                 "ts": round((start - self.origin) * 1e6, 3),
                 "dur": round(max(end - start, 0.0) * 1e6, 3)}
        if args:
            event["args"] = args
        self.events.append(event)  # one append: atomic under the GIL

    def timer(self, name: str, seconds: float) -> None:
        """A timer's sample (``Metrics.time``) as an event ending now, unless the
        runtime records that work itself."""
        if name in _RECORDED_BY_THE_RUNTIME or getattr(self._compiling, "on", False):
            return
        end = time.perf_counter()
        event, category = _TIMER_EVENTS.get(name, (name, "timer"))
        self.complete(event, category, end - seconds, end)

    @contextlib.contextmanager
    def compiling(self) -> Iterator[None]:
        """The runtime times this thread's compile itself (with its graph's key)."""
        self._compiling.on = True
        try:
            yield
        finally:
            self._compiling.on = False

    def end_trace(self, start: float, traced_ops: int) -> None:
        """A sync begins at ``start``: the step's tracing ran since the last sync."""
        ops = traced_ops - (self.traced_ops_at_start or 0)
        args: dict[str, Any] = {"step": self.steps}
        if self.traced_ops_at_start is not None and ops >= 0:
            args["ops"] = ops
        self.complete("trace", "host", self.trace_start, start, **args)
        self.steps += 1

    def begin_trace(self, at: float, traced_ops: int) -> None:
        """A sync ended at ``at``: the next step's tracing begins."""
        self.trace_start = at
        self.traced_ops_at_start = traced_ops

    def document(self) -> dict[str, Any]:
        """The Trace Event Format document: thread names, then events by start (a
        parent before the children that share its start)."""
        names = [{"name": "process_name", "ph": "M", "pid": self.pid, "tid": 0,
                  "args": {"name": "torch_mncore"}}]
        names += [{"name": "thread_name", "ph": "M", "pid": self.pid, "tid": tid,
                   "args": {"name": name}} for tid, name in sorted(self.threads.items())]
        events = sorted(self.events, key=lambda e: (e["ts"], -e["dur"]))
        return {"traceEvents": names + events, "displayTimeUnit": "ms"}


@contextlib.contextmanager
def recording(path: str | os.PathLike[str], drain: Callable[[], None],
              traced_ops: int | None = None) -> Iterator[Profile]:
    """Record a profile while the block runs; on leaving it (also by an exception), let
    the submitted graphs finish (``drain``) so their executions are in it, and write it.
    ``traced_ops``: the runtime's count now, so the first step's trace counts its ops."""
    global ACTIVE
    path = os.fspath(path)
    if ACTIVE is not None:
        raise LazyError(f"torch_mncore.profile({path!r}): a profile is already being "
                        f"recorded to {ACTIVE.path!r}; profiles do not nest")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise LazyError(f"torch_mncore.profile({path!r}): the folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise LazyError(f"torch_mncore.profile({path!r}) is a folder; give a file name "
                        "such as 'trace.json'")
    profile = Profile(path)
    profile.traced_ops_at_start = traced_ops
    ACTIVE = profile
    try:
        yield profile
    finally:
        try:
            drain()
        finally:
            ACTIVE = None
            _write(profile)


def _write(profile: Profile) -> None:
    try:
        with open(profile.path, "w") as f:
            json.dump(profile.document(), f)
    except OSError as error:
        raise LazyError(f"torch_mncore.profile: cannot write {profile.path!r}: {error}"
                        ) from error
