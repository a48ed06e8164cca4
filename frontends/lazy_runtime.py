"""The lazy-tensor runtime: records ops, cuts the graph at ``sync()``, compiles it with a
structural cache, and runs it on a worker thread while the next step is traced.

One :class:`Runtime` per process (``runtime()``), created by ``torch_mncore.init``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import warnings
import weakref
from collections import Counter, defaultdict, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.fx import DECOMPOSITIONS
from mncore_ir.frontends.fx import HANDLERS as IMPORTABLE
from mncore_ir.frontends.fx import HIDDEN_MUTATION_DECOMPOSITIONS as TRACE_DECOMPOSITIONS
from mncore_ir.frontends.lazy_compile import CompiledGraph, GraphCompiler, TraceGraph, replay
from mncore_ir.frontends.lazy_tensor import (
    DeviceData,
    Item,
    LazyError,
    LazyStorage,
    LazyTensor,
    Node,
    Scalar,
    Value,
    ViewStep,
)
from mncore_ir.pipeline import mncore_machine

aten = torch.ops.aten

DEVICES = ("cpu", "interp", "task", "triton", "mncore")
POLICIES = ("error", "warn", "silent")


class ImplicitSyncError(LazyError):
    """A value was read before ``sync()`` under the ``"error"`` policy."""


# ---------------------------------------------------------------------- scalar hoisting

_BAKED = (0, 1, -1)


def _tensor_overload(op: torch._ops.OpOverload, index: int) -> torch._ops.OpOverload | None:
    """The overload of ``op``'s packet that takes a Tensor where ``op`` takes a Scalar."""
    name = op._overloadname
    for candidate in (name.replace("Scalar", "Tensor"), "Tensor", "Tensor_Tensor"):
        overload = getattr(op.overloadpacket, candidate, None)
        if overload is None or overload is op:
            continue
        schema_args = overload._schema.arguments
        if index < len(schema_args) and isinstance(schema_args[index].type, torch.TensorType):
            return overload
    return None


_RECORD, _VIEW, _INPLACE, _DECOMPOSE, _ALPHA, _ADDC, _FALLBACK, _UNSUPPORTED = (
    "record", "view", "inplace", "decompose", "alpha", "addc", "fallback", "unsupported")
_PLANS: dict[torch._ops.OpOverload, str] = {}


def _plan(func: torch._ops.OpOverload) -> str:
    """How ``dispatch`` handles ``func``, decided once per op."""
    if func in TRACE_DECOMPOSITIONS:
        plan = _DECOMPOSE
    elif func in (aten.add_.Tensor, aten.add.Tensor, aten.sub.Tensor, aten.sub_.Tensor):
        plan = _ALPHA
    elif func in (aten.addcmul_.default, aten.addcmul.default, aten.addcdiv_.default,
                  aten.addcdiv.default):
        plan = _ADDC
    elif func in (aten.set_.source_Tensor, aten.set_.source_Storage):
        plan = _UNSUPPORTED
    elif func.is_view:
        plan = _VIEW
    elif func._schema.is_mutable:
        plan = _INPLACE
    elif func in IMPORTABLE or func in DECOMPOSITIONS:
        plan = _RECORD
    else:
        plan = _FALLBACK
    _PLANS[func] = plan
    return plan


_HOIST: dict[tuple[torch._ops.OpOverload, int], torch._ops.OpOverload | None] = {}


def _hoist_target(func: torch._ops.OpOverload, index: int) -> torch._ops.OpOverload | None:
    """The op to record when argument ``index`` becomes a tensor input, or None when
    the scalar must be baked into the graph (cached per op and position)."""
    key = (func, index)
    if key not in _HOIST:
        schema_args = func._schema.arguments
        target = None
        if index < len(schema_args):
            typ = schema_args[index].type
            if isinstance(typ, torch.TensorType):
                target = func
            elif isinstance(typ, torch.NumberType):
                target = _tensor_overload(func, index)
        _HOIST[key] = target
    return _HOIST[key]


_SCALAR_DTYPES: dict[tuple[torch.dtype, type], torch.dtype] = {}


def _scalar_dtype(tensor_dtype: torch.dtype, scalar_type: type) -> torch.dtype:
    """The dtype a Python scalar takes next to a tensor (it never widens a float tensor)."""
    key = (tensor_dtype, scalar_type)
    if key not in _SCALAR_DTYPES:
        _SCALAR_DTYPES[key] = torch.result_type(
            torch.empty(1, dtype=tensor_dtype, device="meta"), scalar_type(2))
    return _SCALAR_DTYPES[key]


# ---------------------------------------------------------------------- metrics


@dataclass
class Metrics:
    counters: Counter[str] = field(default_factory=Counter)
    times: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    traced_ops: int = 0  # a plain int: it is counted per op

    def snapshot(self) -> dict[str, int]:
        return {"TracedOps": self.traced_ops, **self.counters} if self.traced_ops else dict(
            self.counters)

    def clear(self) -> None:
        self.counters.clear()
        self.times.clear()
        self.traced_ops = 0

    def time(self, name: str, seconds: float) -> None:
        self.times[name].append(seconds)

    def report(self) -> str:
        lines = ["Counters:"]
        lines += [f"  {k}: {v}" for k, v in sorted(self.snapshot().items())]
        lines.append("Timers (count, total s, mean ms):")
        for k, v in sorted(self.times.items()):
            lines.append(f"  {k}: {len(v)}, {sum(v):.4f}, {1e3 * sum(v) / len(v):.3f}")
        lines.append(f"Live device buffers: {len(DeviceData.live)}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- execution jobs


@dataclass(eq=False)
class Job:
    """One graph execution: inputs gathered on the worker, outputs filled into buffers."""

    compiled: CompiledGraph
    graph: TraceGraph
    outputs: list[DeviceData]
    future: Future[None]
    prepared: threading.Event = field(default_factory=threading.Event)


class _Failed(Exception):
    def __init__(self, node: Node, cause: Exception) -> None:
        self.node, self.cause = node, cause


def diagnose(graph: TraceGraph, args: list[torch.Tensor], error: BaseException) -> str:
    """Which traced op fails: replay the trace eagerly on the host, op by op, and name
    the user's source line of the first that raises."""

    def call(node: Node, a: tuple[Any, ...], k: dict[str, Any]) -> Any:
        try:
            return node.op(*a, **k)
        except Exception as cause:
            raise _Failed(node, cause) from cause

    try:
        replay(graph, args, call, lambda value, i: value[i])
    except _Failed as failed:
        return f"{failed.cause} (at {lt.describe_location(failed.node.where)})"
    return str(error)


class Worker:
    """Runs jobs in order on one thread. ``submit`` returns once the job's Python-side
    preparation is done, so tracing the next step does not fight it for the GIL."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._jobs: list[Job] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="mncore-worker", daemon=True)
        self._thread.start()
        self._last: Future[None] | None = None
        # device-busy intervals, for the benchmarks' idle fractions
        self.busy: deque[tuple[float, float]] = deque(maxlen=10_000)

    def submit(self, job: Job, gate: bool) -> None:
        with self._cond:
            self._jobs.append(job)
            self._last = job.future
            self._cond.notify()
        if gate:
            job.prepared.wait()

    def wait_all(self) -> None:
        last = self._last
        if last is not None:
            with contextlib.suppress(Exception):
                last.result()

    def stop(self) -> None:
        """End the thread once the queued jobs have run."""
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._cond.wait()
                if not self._jobs:
                    return
                job = self._jobs.pop(0)
            self._run(job)

    def _run(self, job: Job) -> None:
        try:
            start = time.perf_counter()
            args = [_scalar_tensor(x) if isinstance(x, Scalar) else x.tensor()
                    for x in job.graph.inputs]
            job.prepared.set()
            begin = time.perf_counter()
            try:
                results = job.compiled.run(args)
                self.busy.append((begin, time.perf_counter()))
                take_counts = getattr(job.compiled.run, "take_counts", None)
                if take_counts is not None:  # a simulator's steps and cycles
                    self.metrics.counters.update(take_counts())
            except Exception as error:
                raise LazyError(f"graph execution failed: {diagnose(job.graph, args, error)}"
                                ) from error
            for buffer, result in zip(job.outputs, results, strict=True):
                buffer.fill(result)
            self.metrics.time("ExecuteTime", time.perf_counter() - start)
            job.future.set_result(None)
        except BaseException as error:
            job.prepared.set()
            job.future.set_exception(error)


def _scalar_tensor(s: Scalar) -> torch.Tensor:
    return torch.tensor(s.value, dtype=s.dtype)


# ---------------------------------------------------------------------- the runtime


class Runtime:
    """Per-process state: the device, the trace, the compile cache and the worker."""

    def __init__(self, device: str = "cpu", implicit_sync: str | None = None,
                 asynchronous: bool = True, gate: bool = True) -> None:
        lt.ensure_backend()
        self.device = device
        self.implicit_sync = implicit_sync or os.environ.get("MNCORE_IMPLICIT_SYNC", "warn")
        if self.implicit_sync not in POLICIES:
            raise LazyError(f"implicit-sync policy must be one of {POLICIES}, "
                            f"not {self.implicit_sync!r}")
        self.asynchronous = asynchronous
        self.gate = gate
        self.metrics = Metrics()
        self.compiler = GraphCompiler(device, self.metrics)
        self.worker = Worker(self.metrics)
        # storages written since the last sync (weakly: dead tensors are no outputs)
        self.pending: list[weakref.ref[LazyStorage]] = []
        self.deferred: Exception | None = None
        self.last: tuple[TraceGraph, CompiledGraph] | None = None  # the latest graph run

    # ------------------------------------------------------------------ dispatch

    def dispatch(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        if func is aten._local_scalar_dense.default:
            return self.read(args[0]).item()
        if func is aten._to_copy.default and _leaves_device(kwargs):
            return func(self.read(args[0]), **kwargs)
        if func is aten.copy_.default and not isinstance(args[0], LazyTensor):
            return args[0].copy_(self.read(args[1]))
        self.metrics.traced_ops += 1
        plan = _PLANS.get(func) or _plan(func)
        if plan is _RECORD:
            return self._record(func, args, kwargs)
        if plan is _VIEW:
            return self._view(func, args, kwargs)
        if plan is _INPLACE:
            return self._inplace(func, args, kwargs)
        if plan is _DECOMPOSE:  # ops whose schema hides a mutation
            return TRACE_DECOMPOSITIONS[func](*args, **kwargs)
        if plan is _ALPHA:
            alpha = kwargs.get("alpha", 1)
            if alpha == 1:
                return (self._inplace if func._schema.is_mutable else self._record)(
                    func, args, kwargs)
            scaled = self.dispatch(aten.mul.Tensor, (args[1], alpha), {})
            return self.dispatch(func, (args[0], scaled), {})
        if plan is _ADDC:
            return self._addc(func, args, kwargs)
        if plan is _UNSUPPORTED:
            raise LazyError(f"{func} is not supported on lazy tensors, at "
                            f"{lt.describe_location(lt.user_location())}")
        return self._fallback(func, args, kwargs)

    def _addc(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        """``x + value * (t1 op t2)`` as separate ops, so ``value`` can be a graph input."""
        x, t1, t2 = args[:3]
        value = kwargs.get("value", args[3] if len(args) > 3 else 1)
        inner = aten.mul.Tensor if "addcmul" in func.__name__ else aten.div.Tensor
        prod = self.dispatch(inner, (t1, t2), {})
        if value != 1:
            prod = self.dispatch(aten.mul.Tensor, (prod, value), {})
        add = aten.add_.Tensor if func._schema.is_mutable else aten.add.Tensor
        return self.dispatch(add, (x, prod), {})

    def _new_node(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Node:
        """The graph node of ``func(*args)``: tensors become their values, hoistable
        Python scalars become :class:`Scalar` inputs (switching to the op's Tensor
        overload where the schema wants a Scalar), and the output metadata comes from
        the shape cache, keyed on the inputs' signatures."""
        graph_args: list[Any] = []
        keys: list[Any] = []
        first_dtype = None
        for i, a in enumerate(args):
            if isinstance(a, LazyTensor):
                graph_args.append(a.value() if a._views else a._storage_.value)
                sig = a._sig
                keys.append(sig)
                if first_dtype is None:
                    first_dtype = sig[2]
            elif isinstance(a, torch.Tensor):  # a host tensor used on the device
                data = lt.from_cpu(a)
                graph_args.append(data.value())
                keys.append(data._sig)
                if first_dtype is None:
                    first_dtype = a.dtype
            elif type(a) is float or type(a) is int:
                target = _hoist_target(func, i) if first_dtype is not None and (
                    a not in _BAKED) else None
                if target is None:  # baked into the graph: part of its structure
                    graph_args.append(a)
                    keys.append(a)
                    continue
                func = target
                dtype = _SCALAR_DTYPES.get((first_dtype, type(a))) or _scalar_dtype(
                    first_dtype, type(a))
                graph_args.append(Scalar(a, dtype))
                keys.append(("S", dtype))
            elif isinstance(a, list | tuple) and any(isinstance(x, torch.Tensor) for x in a):
                values = [x if isinstance(x, LazyTensor) or not isinstance(x, torch.Tensor)
                          else lt.from_cpu(x) for x in a]
                graph_args.append(type(a)(x.value() if isinstance(x, LazyTensor) else x
                                          for x in values))
                keys.append(tuple(x._sig if isinstance(x, LazyTensor) else x for x in values))
                args = (*args[:i], type(a)(values), *args[i + 1:])
            else:
                graph_args.append(a)
                keys.append(lt.meta_key(a, True) if isinstance(a, list | tuple) else a)
        if kwargs:
            graph_kwargs = dict(kwargs)
            if "device" in kwargs:
                graph_kwargs["device"] = torch.device("cpu")
            key = (func, tuple(keys), lt.meta_key(tuple(sorted(kwargs.items())),
                                                  lt.keyed_by_value(func)))
        else:
            graph_kwargs = kwargs
            key = (func, tuple(keys), ())
        meta = lt.infer_meta_cached(key, func, graph_args, args, kwargs)
        return Node(func, tuple(graph_args), graph_kwargs, meta, lt.user_location(), key)

    def _record(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        node = self._new_node(func, args, kwargs)
        meta = node.meta
        if type(meta) is torch.Tensor:  # the common case, kept short: it is per op
            storage = LazyStorage(node)
            self.pending.append(weakref.ref(storage))
            return LazyTensor(storage, (), meta)
        outs = []
        for i, m in enumerate(node.meta):
            if isinstance(m, torch.Tensor):
                outs.append(self._track(lt.wrap(Item(node, i, m), m)))
            else:
                outs.append(m)
        return type(node.meta)(outs) if isinstance(node.meta, tuple) else outs

    def _track(self, tensor: LazyTensor) -> LazyTensor:
        self.pending.append(weakref.ref(tensor._storage_))
        return tensor

    def _view(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        base = args[0]
        if not isinstance(base, LazyTensor):
            return self._record(func, args, kwargs)
        meta = lt.infer_meta(func, (base.meta(), *args[1:]), kwargs)
        step = ViewStep(func, tuple(args[1:]), tuple(sorted(kwargs.items())), base.meta())
        views = (*base._views, step)
        if isinstance(meta, torch.Tensor):
            return LazyTensor(base._storage_, views, meta)
        # several views (split, unbind): record them as ordinary ops on a copy
        return self._record(func, args, kwargs)

    def _inplace(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        target = args[0]
        schema = func._schema
        writes = [i for i, a in enumerate(schema.arguments)
                  if a.alias_info is not None and a.alias_info.is_write]
        functional = _functional_variant(func)
        if writes != [0] or functional is None or not isinstance(target, LazyTensor) or (
                functional not in IMPORTABLE and functional not in DECOMPOSITIONS):
            return self._fallback(func, args, kwargs)
        if func is aten.copy_.default:
            src = args[1]
            if not isinstance(src, LazyTensor):
                if not target._views and src.shape == target.shape and src.dtype == target.dtype:
                    target._storage_.set(lt.from_cpu(src).value())  # a host-to-device copy
                    return target
                src = lt.from_cpu(src)
            node = self._new_node(aten.copy.default, (target, src), {})
        else:
            node = self._new_node(functional, args, kwargs)
        self._write(target, node)
        return target

    def _write(self, target: LazyTensor, new: Value) -> None:
        """Make ``new`` the value of ``target``, writing through its views."""
        storage = target._storage_
        value = new
        if not target._views:
            storage.set(value)
            self.pending.append(weakref.ref(storage))
            return
        bases: list[Value] = [storage.value]
        for step in target._views[:-1]:
            prev = bases[-1]
            bases.append(Node(step.op, (prev, *step.args), dict(step.kwargs),
                              lt.infer_meta(step.op, (step.base_meta, *step.args),
                                            dict(step.kwargs))))
        for step, base in zip(reversed(target._views), reversed(bases), strict=True):
            value = _scatter(step, base, value)
        storage.set(value)
        self.pending.append(weakref.ref(storage))

    def _fallback(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        """Run an op the compiler cannot take eagerly on the host, counted."""
        self.metrics.counters[f"CpuFallback::{func}"] += 1
        host = pytree.tree_map(
            lambda x: self.read(x, fallback=True).clone() if isinstance(x, LazyTensor) else x,
            (args, kwargs))
        out = func(*host[0], **host[1])
        for i, a in enumerate(args):
            if isinstance(a, LazyTensor) and func._schema.arguments[i].alias_info is not None and (
                    func._schema.arguments[i].alias_info.is_write):
                self._write(a, lt.from_cpu(host[0][i]).value())
        if func._schema.is_mutable and isinstance(args[0], LazyTensor):
            return args[0]
        return pytree.tree_map(lambda x: lt.from_cpu(x) if isinstance(x, torch.Tensor) else x, out)

    def defer(self, error: Exception, func: torch._ops.OpOverload, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        """Remember ``error`` for the next sync or read; return zeros shaped like the
        op's outputs so the caller can go on."""
        if self.deferred is None:
            self.deferred = error
        meta = lt.infer_meta(func, args, kwargs)
        to_host = func is aten._to_copy.default and _leaves_device(kwargs)

        def zeros(m: Any) -> Any:
            if not isinstance(m, torch.Tensor):
                return m
            host = torch.zeros(m.shape, dtype=m.dtype)
            return host if to_host else lt.from_cpu(host)

        return pytree.tree_map(zeros, meta)

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
        if outputs:
            graph = self.compiler.cut([s.value for s in outputs])
            if reason is None:
                reason = f"sync() at {lt.describe_location(lt.user_location())}"
            compiled = self.compiler.compile(graph, reason)
            buffers = [DeviceData(tuple(v.meta.shape), v.meta.dtype,
                                  future=None) for v in graph.outputs]
            future: Future[None] = Future()
            for b in buffers:
                b._future = future
            for storage, buffer in zip(outputs, buffers, strict=True):
                storage.set(buffer)
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

    def wait(self) -> None:
        self.worker.wait_all()
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
        assert isinstance(data, DeviceData)
        try:
            value = data.tensor()
        except Exception as error:
            self.worker._last = None  # delivered here, not again at the next sync
            if isinstance(error, LazyError):
                raise
            raise LazyError(f"graph execution failed: {error}") from error
        for step in tensor._views:
            value = step.op(value, *step.args, **dict(step.kwargs))
        return value

    def _implicit_sync(self) -> None:
        where = lt.describe_location(lt.user_location())
        self.metrics.counters["ImplicitSyncs"] += 1
        if self.implicit_sync == "error":
            raise ImplicitSyncError(
                f"reading a lazy tensor before torch_mncore.sync() at {where} (policy "
                "'error'; use torch_mncore.set_implicit_sync('warn') to sync automatically)")
        if self.implicit_sync == "warn":
            warnings.warn(f"implicit sync at {where}: call torch_mncore.sync() at the end "
                          "of the step to keep graphs whole", stacklevel=4)
        self.sync(reason=f"implicit sync at {where}")


def _leaves_device(kwargs: dict[str, Any]) -> bool:
    device = kwargs.get("device")
    return device is not None and torch.device(device).type != lt.DEVICE_NAME


def _functional_variant(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    if func is aten.copy_.default:
        return aten.copy.default
    name = func._schema.name.split("::")[1]
    if not name.endswith("_"):
        return None
    packet = getattr(aten, name[:-1], None)
    return getattr(packet, func._overloadname, None) if packet is not None else None


def _scatter(step: ViewStep, base: Value, new: Value) -> Value:
    """The base value with the view ``step`` of it replaced by ``new``."""
    op, args = step.op, step.args
    meta = step.base_meta
    packet = op.overloadpacket
    if packet in (aten.view, aten._unsafe_view, aten.reshape, aten.squeeze, aten.unsqueeze,
                  aten.flatten, aten.view_copy):
        node_op, node_args = aten.view.default, (new, list(meta.shape))
    elif packet in (aten.alias, aten.detach):
        return new
    elif packet in (aten.t, aten.transpose):
        node_op = aten.t.default if packet is aten.t else aten.transpose.int
        node_args = (new,) if packet is aten.t else (new, *args)
    elif packet is aten.permute:
        inverse = [0] * len(args[0])
        for i, p in enumerate(args[0]):
            inverse[p % len(inverse)] = i
        node_op, node_args = aten.permute.default, (new, inverse)
    elif packet is aten.select:
        node_op, node_args = aten.select_scatter.default, (base, new, *args)
    elif packet is aten.slice:
        node_op, node_args = aten.slice_scatter.default, (base, new, *args)
    else:
        raise LazyError(f"an in-place update through a view made by {op} is not supported, "
                        f"at {lt.describe_location(lt.user_location())}")
    meta_args = tuple(_value_meta(a) for a in node_args)
    return Node(node_op, node_args, {}, lt.infer_meta(node_op, meta_args, {}))


def _value_meta(v: Any) -> Any:
    if isinstance(v, Node | Item):
        return v.meta
    if isinstance(v, DeviceData):
        return torch.empty(v.shape, dtype=v.dtype, device="meta")
    return v


# ---------------------------------------------------------------------- the process's runtime

_RUNTIME: Runtime | None = None


@atexit.register
def _drain() -> None:
    """Let submitted graphs finish before the interpreter goes: a daemon thread killed
    inside a torch op aborts the process."""
    if _RUNTIME is not None:
        _RUNTIME.worker.wait_all()


def runtime() -> Runtime:
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = Runtime()
    return _RUNTIME


def init(device: str = "cpu", implicit_sync: str | None = None, asynchronous: bool = True,
         gate: bool = True) -> Runtime:
    global _RUNTIME
    if device not in DEVICES:
        raise LazyError(f"unknown device {device!r}; devices: {', '.join(DEVICES)}")
    if device == "mncore":
        try:
            mncore_machine()
        except ValueError as error:
            raise LazyError(str(error)) from None
    if device == "triton" and not torch.cuda.is_available():
        # Triton picks interpreter or compiler per function when it is decorated, and
        # make_fx imports triton.language: choose before any tracing.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    if _RUNTIME is not None:
        _RUNTIME.worker.wait_all()
        _RUNTIME.worker.stop()
    _RUNTIME = Runtime(device, implicit_sync, asynchronous, gate)
    return _RUNTIME

