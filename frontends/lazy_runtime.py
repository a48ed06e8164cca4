"""The lazy-tensor runtime: one per process, started by ``torch_mncore.init``. It holds
the device, the trace (as a :class:`~mncore_ir.frontends.lazy_trace.Tracer`), the
compile cache and the worker; ``sync()`` cuts the traced graph at the live tensors,
compiles it for the device and submits it to the worker while the next step is traced;
reading a value that is not computed yet syncs under the implicit-sync policy.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import warnings
from concurrent.futures import Future
from typing import Any

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false

from mncore_ir.frontends import lazy_backend, lazy_profile
from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_backend import ensure_backend
from mncore_ir.frontends.lazy_compile import CompiledGraph, GraphCompiler
from mncore_ir.frontends.lazy_graph import TraceGraph
from mncore_ir.frontends.lazy_names import note_named_buffers
from mncore_ir.frontends.lazy_tensor import DeviceData, LazyError, LazyStorage, LazyTensor
from mncore_ir.frontends.lazy_trace import Tracer
from mncore_ir.frontends.lazy_where import describe_location, user_location
from mncore_ir.frontends.lazy_worker import Job, Metrics, Worker
from mncore_ir.pipeline import DEVICES as DEVICE_TABLE
from mncore_ir.pipeline import Device, device

#: The devices ``torch_mncore.init`` takes, by name.
DEVICES = tuple(DEVICE_TABLE)
POLICIES = ("error", "warn", "silent")


class ImplicitSyncError(LazyError):
    """A value was read before ``sync()`` under the ``"error"`` policy."""


class Runtime(Tracer):
    """Per-process state: the device, the trace, the compile cache and the worker."""

    def __init__(self, device: Device, implicit_sync: str | None = None,
                 asynchronous: bool = True, gate: bool = True,
                 host_fallback: bool = True, device_threads: int = 1) -> None:
        ensure_backend()
        super().__init__(Metrics())
        self.device = device
        self.implicit_sync = implicit_sync or os.environ.get("MNCORE_IMPLICIT_SYNC", "warn")
        if self.implicit_sync not in POLICIES:
            raise LazyError(f"implicit-sync policy must be one of {POLICIES}, "
                            f"not {self.implicit_sync!r}")
        self.asynchronous = asynchronous
        self.gate = gate
        self.compiler = GraphCompiler(device, self.metrics, host_fallback)
        self.worker = Worker(self.metrics, device_threads)
        self.last: tuple[TraceGraph, CompiledGraph] | None = None  # the latest graph run
        self.guard_failures_seen: set[str] = set()  # Dynamo's, counted (frontends/dynamo)

    def _raise_deferred(self) -> None:
        if self.deferred is not None:
            error, self.deferred = self.deferred, None
            raise error

    # ------------------------------------------------------------------ sync

    def sync(self, wait: bool = False, reason: str | None = None) -> None:
        """Cut the graph at the live tensors, compile (cached) and submit it. ``reason``
        (for ``MNCORE_DEBUG``) defaults to the user's line that called ``sync()``."""
        self._raise_deferred()
        self._raise_step_errors()
        start = time.perf_counter()
        live = {id(s): s for s in (r() for r in self.pending) if s is not None}
        outputs = sorted((s for s in live.values() if not isinstance(s.value, DeviceData)),
                         key=lambda s: s.serial)
        self.pending = []
        profile = lazy_profile.ACTIVE
        if outputs:
            if reason is None:
                reason = f"sync() at {describe_location(user_location())}"
            if profile is not None:
                profile.end_trace(start, self.metrics.traced_ops)
            try:
                graph = self.compiler.cut([s.value for s in outputs])
                compiled = (self.compiler.compile(graph, reason) if profile is None
                            else self._compile_profiled(profile, graph, reason))
            except Exception as error:
                _fail(outputs, error)
                if profile is not None:
                    self._profile_sync(profile, start, reason, error=str(error))
                raise
            buffers = [DeviceData(tuple(v.meta.shape), v.meta.dtype,
                                  future=None) for v in graph.outputs]
            future: Future[None] = Future()
            for b in buffers:
                b._future = future
            for storage, buffer in zip(outputs, buffers, strict=True):
                storage.set(buffer)
            note_named_buffers()  # named parameters' new buffers: the next step's inputs
            job = Job(compiled, graph, buffers, future)
            self.last = (graph, compiled)
            self.metrics.counters["Executions"] += 1
            self.metrics.time("SyncTime", time.perf_counter() - start)
            if self.asynchronous:
                self.worker.submit(job, self.gate)
            else:
                self.worker._run(job)
        if wait:
            self.wait()
        if profile is not None and outputs:
            self._profile_sync(profile, start, reason, graph=graph.key, ops=len(graph.nodes))

    def _compile_profiled(self, profile: lazy_profile.Profile, graph: TraceGraph,
                          reason: str) -> CompiledGraph:
        """``compiler.compile``, recorded with the graph's key and size and whether the
        in-memory cache had it (``cached``) or the disk cache (``disk_cached``)."""
        counts = self.metrics.counters
        before = counts["CachedCompile"], counts["DiskCachedCompile"]
        start = time.perf_counter()
        args: dict[str, Any] = {"graph": graph.key, "ops": len(graph.nodes)}
        try:
            with profile.compiling():
                compiled = self.compiler.compile(graph, reason)
            args["cached"] = counts["CachedCompile"] > before[0]
            args["disk_cached"] = counts["DiskCachedCompile"] > before[1]
            return compiled
        except Exception as error:
            args["error"] = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise
        finally:
            profile.complete("compile", "compile", start, time.perf_counter(), **args)

    def _profile_sync(self, profile: lazy_profile.Profile, start: float, reason: str | None,
                      **args: Any) -> None:
        end = time.perf_counter()
        profile.complete("sync", "host", start, end, reason=reason, **args)
        profile.begin_trace(end, self.metrics.traced_ops)

    def wait(self) -> None:
        profile = lazy_profile.ACTIVE
        if profile is None:
            self.worker.wait_all()
        else:
            start = time.perf_counter()
            self.worker.wait_all()
            profile.complete("wait_device_ops", "wait", start, time.perf_counter())
        self._raise_deferred()
        self._raise_step_errors()

    def _raise_step_errors(self) -> None:
        last = self.worker._last
        if last is not None and last.done() and last.exception() is not None:
            error = last.exception()
            self.worker._last = None
            if isinstance(error, LazyError):
                raise error
            raise LazyError(f"graph execution failed: {error}") from error

    def read(self, tensor: Any, fallback: bool = False) -> torch.Tensor:
        """The host value of ``tensor``; an implicit sync if it is not computed yet
        (under the policy, except for CPU fallbacks, which are counted instead)."""
        if not isinstance(tensor, LazyTensor):
            return tensor
        self._pure("a value is read")
        if threading.current_thread() is threading.main_thread():
            self._raise_deferred()
        storage = tensor._storage_
        if not isinstance(storage.value, DeviceData):
            if fallback:
                self.metrics.counters["FallbackSyncs"] += 1
                self.sync(reason="a CPU fallback")
            else:
                self._implicit_sync()
        data = storage.value
        assert isinstance(data, DeviceData), "sync() left a traced tensor without a buffer"
        profile = lazy_profile.ACTIVE
        try:
            if profile is None or data.ready:
                value = data.tensor()
            else:  # the user's thread waits for the execution that computes it
                start = time.perf_counter()
                try:
                    value = data.tensor()
                finally:
                    profile.complete("read_wait", "wait", start, time.perf_counter())
        except Exception as error:
            self.worker._last = None  # delivered here, not again at the next sync
            if isinstance(error, LazyError):
                raise
            raise LazyError(f"graph execution failed: {error}") from error
        if tensor._views:  # the views were recorded on the base's strides: give it them
            base = tensor._views[0].base_meta
            if (value.stride() != base.stride() and value.numel() > 1
                    and is_non_overlapping_and_dense_or_false(base)):
                value = torch.empty_strided(base.shape, base.stride(),
                                            dtype=value.dtype).copy_(value)
        for step in tensor._views:
            value = step.op(value, *step.args, **dict(step.kwargs))
        return value

    def _implicit_sync(self) -> None:
        where = describe_location(user_location())
        self.metrics.counters["ImplicitSyncs"] += 1
        if self.implicit_sync == "error":
            raise ImplicitSyncError(
                f"reading a lazy tensor before torch_mncore.sync() at {where} (policy "
                "'error'; use torch_mncore.set_implicit_sync('warn') to sync automatically)")
        if self.implicit_sync == "warn":
            warnings.warn(f"implicit sync at {where}: call torch_mncore.sync() at the end "
                          "of the step to keep graphs whole", stacklevel=4)
        self.sync(reason=f"implicit sync at {where}")


# ---------------------------------------------------------------------- the process's runtime

@atexit.register
def _drain() -> None:
    """Let submitted graphs finish and the worker thread end before the interpreter
    goes (see ``Worker.stop``)."""
    current = lt.current()
    if isinstance(current, Runtime):
        current.worker.stop()


def runtime() -> Runtime:
    """The process's runtime, which ``torch_mncore.init`` starts (a ``LazyError``
    until then)."""
    active = lt.active()
    assert isinstance(active, Runtime)
    return active


def init(name: str = "cpu", implicit_sync: str | None = None, asynchronous: bool = True,
         gate: bool = True, host_fallback: bool = True, device_threads: int = 1) -> Runtime:
    """Start the runtime for the device ``name``. A runtime already running first runs
    what was traced on its device and waits for it, so every tensor keeps its value
    across the switch (its buffer is then an input of the new device's graphs)."""
    try:
        chosen = device(name)
    except ValueError as error:  # an unknown device, or machine for it
        raise LazyError(str(error)) from None
    new = Runtime(chosen, implicit_sync, asynchronous, gate, host_fallback, device_threads)
    old = lt.current()
    if isinstance(old, Runtime):
        try:
            _finish(old, f"torch_mncore.init({name!r})")
        except LazyError:
            new.worker.stop()
            raise
    lt.activate(new)
    lazy_backend.reach_autograd()
    return new


def _finish(old: Runtime, caller: str) -> None:
    """Run what is traced on ``old``'s device, wait for it and end its worker. On an
    error ``old`` stays the runtime; the tensors of the failed step keep the error, so
    a second call goes ahead."""
    where = describe_location(user_location())
    try:
        old.sync(wait=True, reason=f"{caller} at {where}")
    except Exception as error:
        raise LazyError(f"{caller} at {where}: what was traced on the {old.device.name!r} "
                        f"device failed there, so the device is still {old.device.name!r}: "
                        f"{error}\n"
                        "(the tensors that step computes hold this error; call "
                        f"{caller} again to switch anyway)") from error
    old.worker.stop()


def _fail(outputs: list[LazyStorage], error: Exception) -> None:
    """Give the storages of a step that could not be compiled a buffer that raises
    ``error``: reading one, or running a later step on it, reports why."""
    failed: Future[None] = Future()
    failed.set_exception(error)
    for storage in outputs:
        meta = storage.value.meta
        storage.set(DeviceData(tuple(meta.shape), meta.dtype, future=failed))


def drain() -> None:
    """Wait for the graphs submitted so far, without raising their errors (the next
    sync or read does): a profile ends with their executions in it."""
    current = lt.current()
    if isinstance(current, Runtime):
        current.worker.wait_all()
