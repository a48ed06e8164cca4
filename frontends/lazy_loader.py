"""``DeviceLoader``: torch_xla's ``MpDeviceLoader`` for the lazy runtime — batches come
out on the ``mncore`` device, the next ones moved by a background thread while the
current step is traced.

The thread does not call ``.mncore()``, which may go through the runtime's dispatch
(``.to()``'s path, for a tensor that requires grad), whose state (the trace, template
captures, errors deferred from autograd's thread, the counters) belongs to the tracing
thread. It makes the device buffer directly (``lazy_tensor.from_cpu``, what
``.mncore()`` of a plain host tensor does), which touches no runtime state: that copy
is the whole cost of a transfer, paid here off the tracing thread.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends import lazy_profile
from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_runtime import runtime
from mncore_ir.frontends.lazy_tensor import LazyError, LazyTensor
from mncore_ir.frontends.lazy_worker import Metrics, start_thread

_BATCH, _ERROR, _END = "batch", "error", "end"
_POLL_S = 0.05  # how often a blocked thread looks whether it should stop
#: The loader threads still running, with their stop events (stopped at exit).
_RUNNING: dict[threading.Thread, threading.Event] = {}
_LOCK = threading.Lock()


class DeviceLoader:
    """Iterate ``loader`` (batches: tensors or nested lists, tuples and dicts of them)
    with every tensor moved to the ``mncore`` device, up to ``prefetch`` batches ahead.

    As ``MpDeviceLoader``, each batch handed out first syncs (``torch_mncore.sync()``)
    once every ``batches_per_execution`` batches, and so does the end of the data: the
    step traced on the previous batch runs while this one is traced. An error of the
    loader is raised in the caller, at the batch it would have given. ``len()`` is the
    loader's."""

    def __init__(self, loader: Iterable[Any], prefetch: int = 2,
                 batches_per_execution: int = 1) -> None:
        if prefetch < 1:
            raise LazyError(f"DeviceLoader(prefetch={prefetch}): prefetch at least 1 batch")
        if batches_per_execution < 1:
            raise LazyError(f"DeviceLoader(batches_per_execution={batches_per_execution}): "
                            "sync at least every batch (1) or every few")
        self.loader = loader
        self.prefetch = prefetch
        self.batches_per_execution = batches_per_execution

    def __iter__(self) -> DeviceIterator:
        return DeviceIterator(iter(self.loader), self.prefetch, self.batches_per_execution)

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]  # a TypeError if it has none


class DeviceIterator:
    """One pass over a loader: a thread moves batches into a queue of ``prefetch``.
    Closing it (also by dropping it: garbage collection) stops the thread."""

    def __init__(self, source: Iterator[Any], prefetch: int,
                 batches_per_execution: int) -> None:
        metrics = runtime().metrics  # a LazyError naming init() when there is none
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._batches_per_execution = batches_per_execution
        self._handed_out = 0
        self._done = False
        # the thread holds no reference to this object, so dropping it closes it; it
        # moves batches with one intra-op thread (see ``start_thread``)
        with _LOCK:
            self._thread = start_thread(
                _produce, (source, self._queue, self._stop, metrics), "mncore-device-loader")
            _RUNNING[self._thread] = self._stop

    def __iter__(self) -> DeviceIterator:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        if self._handed_out % self._batches_per_execution == 0:
            runtime().sync()
        kind, item = self._take()
        if kind == _BATCH:
            self._handed_out += 1
            # tensors the thread could not move (needing grad, on another device)
            return pytree.tree_map(
                lambda x: x.mncore() if isinstance(x, torch.Tensor) and
                not isinstance(x, LazyTensor) else x, item)
        self._finish()
        if kind == _ERROR:
            raise item
        runtime().sync()
        raise StopIteration

    def _take(self) -> tuple[str, Any]:
        """The next entry of the queue, waiting (recorded when profiling)."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            pass
        profile = lazy_profile.ACTIVE
        start = time.perf_counter()
        try:
            while True:
                try:
                    return self._queue.get(timeout=_POLL_S)
                except queue.Empty:
                    if not self._thread.is_alive() and self._queue.empty():
                        raise LazyError("the DeviceLoader's thread ended without a "
                                        "batch, an error or the end of the data") from None
        finally:
            if profile is not None:
                profile.complete("loader_wait", "wait", start, time.perf_counter())

    def _finish(self) -> None:
        self._done = True
        self._stop.set()
        while True:  # a thread blocked on a full queue sees the stop at its next poll
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def close(self) -> None:
        """Stop the thread (after the batch it is reading, if any) and wait for it."""
        self._finish()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def __del__(self) -> None:
        # garbage collection must not block on a loader that is slow to give its batch:
        # the thread ends by itself once it sees the stop
        if not getattr(self, "_done", True):
            self._finish()


def _produce(source: Iterator[Any], batches: queue.Queue[tuple[str, Any]],
             stop: threading.Event, metrics: Metrics) -> None:
    """The thread: read, move and queue batches until the data ends or ``stop``."""
    index = 0
    try:
        while not stop.is_set():
            try:
                batch = next(source)
            except StopIteration:
                _put(batches, (_END, None), stop)
                return
            start = time.perf_counter()
            moved = pytree.tree_map(_to_device, batch)
            end = time.perf_counter()
            metrics.time("TransferToDeviceTime", end - start)
            profile = lazy_profile.ACTIVE
            if profile is not None:
                profile.complete("transfer_to_device", "loader", start, end, batch=index)
            index += 1
            _put(batches, (_BATCH, moved), stop)
    except BaseException as error:
        error.add_note("(raised by the loader that torch_mncore.DeviceLoader reads in its "
                       "background thread)")
        _put(batches, (_ERROR, error), stop)
    finally:
        close = getattr(source, "close", None)
        if stop.is_set() and callable(close):  # a generator: run its finally blocks
            close()
        with _LOCK:
            _RUNNING.pop(threading.current_thread(), None)


@atexit.register
def _stop_all() -> None:
    """Stop the loaders' threads and wait for them before the interpreter goes: a
    daemon thread inside torch at shutdown aborts the process (see ``Worker.stop``)."""
    with _LOCK:
        running = list(_RUNNING.items())
    for _, stop in running:
        stop.set()
    for thread, _ in running:
        thread.join()


def _put(batches: queue.Queue[tuple[str, Any]], entry: tuple[str, Any],
         stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            batches.put(entry, timeout=_POLL_S)
            return
        except queue.Full:
            continue


def _to_device(x: Any) -> Any:
    """A host tensor's device copy, as ``.mncore()`` makes it (``from_cpu``); tensors
    that need autograd or live on another device are left for the caller's
    ``.mncore()``."""
    if type(x) is torch.Tensor and x.device.type == "cpu" and not x.requires_grad:
        return lt.from_cpu(x)
    return x
