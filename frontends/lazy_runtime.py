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


_RECORD, _VIEW, _INPLACE, _DECOMPOSE, _ALPHA, _ADDC, _FALLBACK, _UNSUPPORTED, _OUT = (
    "record", "view", "inplace", "decompose", "alpha", "addc", "fallback", "unsupported", "out")
_FACTORY, _COPY = "factory", "copy"
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
    elif func in (aten._copy_from.default, aten._copy_from_and_resize.default):
        plan = _COPY
    elif torch.Tag.out in func.tags:
        plan = _OUT
    elif _takes_device(func) and (func not in IMPORTABLE or "empty" in func.__name__):
        plan = _FACTORY  # what the compiler cannot import, and uninitialised memory
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
            if self._stopping:
                raise LazyError("this runtime has been shut down (torch_mncore.init() "
                                "replaced it, or the program is exiting)")
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
        """Run the queued jobs, then end the thread and wait for it to go. The thread
        frees each job's tensors after signalling its future, and a daemon thread that
        is inside torch (freeing a tensor drops the GIL) when the interpreter shuts down
        aborts the process: at exit it must be gone, not just idle."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()

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
        if plan is _OUT:
            return self._out(func, args, kwargs)
        if plan is _FACTORY:
            return self._factory(func, args, kwargs)
        if plan is _COPY:
            return self._copy_from(func, *args, **kwargs)
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

    def _out(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        """An ``out=`` overload (what factories like ``arange`` call on an empty device
        tensor too): its functional variant, traced, then written into the outs."""
        functional = _out_functional(func)
        names = _out_names(func)
        outs = [kwargs.get(name) for name in names]
        if functional is None or not all(isinstance(o, LazyTensor) for o in outs):
            return self._fallback(func, args, kwargs)
        # the out= op itself on meta tensors: the outs' final shapes, resized as eager
        # resizes them. Its warnings are the meta kernels' (resizing warnings that
        # eager's kernels need not give).
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                metas = lt.infer_meta(func, args, kwargs)
        except NotImplementedError:  # no meta kernel: the functional's shapes
            metas = None
        except Exception:  # refused (dtypes that cannot be cast, a host-only input):
            return self._fallback(func, args, kwargs)  # eager's own verdict
        call = {k: v for k, v in kwargs.items() if k not in names}
        parameters = {a.name for a in functional._schema.arguments}
        if "dtype" in parameters and "dtype" not in call and len(outs) == 1:
            call["dtype"] = outs[0].dtype  # a factory's out= takes the out's dtype
        if "device" in parameters:
            call["device"] = outs[0].device
        results = self.dispatch(functional, args, call)
        if len(outs) == 1:
            results, metas = (results,), (metas,)
        for i, (out, result) in enumerate(zip(outs, results, strict=True)):
            self._assign(out, result, None if metas is None else metas[i])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _factory(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        """A factory made on the host and moved to the device. A ``*_like`` or ``new_*``
        factory reads only its ``self``'s metadata, so ``self`` is not synced; other
        tensors (``linspace``'s ends) are read."""
        self.metrics.counters[f"HostFactory::{func}"] += 1
        names = [a.name for a in func._schema.arguments]

        def to_host(name: str, x: Any) -> Any:
            if not isinstance(x, LazyTensor):
                return x
            if name == "self":
                return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype)
            return self.read(x, fallback=True)

        host_args = [to_host(name, a) for name, a in zip(names, args, strict=False)]
        host_kwargs = {k: to_host(k, v) for k, v in kwargs.items()}
        device = kwargs.get("device")
        if device is not None and not _on_device(device):  # made for another device
            return func(*host_args, **host_kwargs)
        host_kwargs["device"] = torch.device("cpu")
        return pytree.tree_map(
            lambda x: lt.from_cpu(x) if isinstance(x, torch.Tensor) else x,
            func(*host_args, **host_kwargs))

    def _copy_from(self, func: torch._ops.OpOverload, src: torch.Tensor, dst: torch.Tensor,
                   non_blocking: bool = False) -> torch.Tensor:
        """The backend's copy between host and device (``_copy_from``): ``dst.copy_(src)``;
        ``_copy_from_and_resize`` first gives ``dst`` the shape of ``src``."""
        resize = func is aten._copy_from_and_resize.default and dst.shape != src.shape
        if not isinstance(dst, LazyTensor):  # to the host
            if resize:
                dst.resize_(src.shape)
            return dst.copy_(self.read(src))
        if resize:  # all of dst is overwritten: its old value is not needed
            self._assign(dst, src, torch.empty(src.shape, dtype=dst.dtype, device="meta"))
        else:
            self.dispatch(aten.copy_.default, (dst, src), {})
        return dst

    def _assign(self, out: LazyTensor, result: torch.Tensor,
                meta: torch.Tensor | None) -> None:
        """Write ``result`` into ``out`` as an ``out=`` argument is written: cast to its
        dtype, and resized first where the shape differs."""
        if not isinstance(result, LazyTensor):
            result = lt.from_cpu(result)
        if result.dtype != out.dtype:
            result = self.dispatch(aten._to_copy.default, (result,), {"dtype": out.dtype})
        if meta is None:
            meta = lt._meta_like(result)
        if out.shape != meta.shape:
            _resize(out, meta)
        self._write(out, result.value())

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
                    keys.append(lt.meta_key(a))
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
                keys.append(lt.meta_key(values))
                args = (*args[:i], type(a)(values), *args[i + 1:])
            else:
                graph_args.append(a)
                keys.append(lt.meta_key(a))
        if kwargs:
            graph_kwargs = dict(kwargs)
            if "device" in kwargs:
                graph_kwargs["device"] = torch.device("cpu")
            key = (func, tuple(keys), lt.meta_key(tuple(sorted(kwargs.items()))))
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
        host_args, host_kwargs = pytree.tree_map(
            lambda x: self.read(x, fallback=True).clone() if isinstance(x, LazyTensor) else x,
            (args, kwargs))
        out = func(*host_args, **host_kwargs)
        written: dict[int, LazyTensor] = {}  # host tensor's id -> the device tensor
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            target, host = ((args[i], host_args[i]) if i < len(args)
                            else (kwargs.get(arg.name), host_kwargs.get(arg.name)))
            if isinstance(target, LazyTensor):
                self._assign(target, host, lt._meta_like(host))
                written[id(host)] = target

        def to_device(x: Any) -> Any:
            if not isinstance(x, torch.Tensor):
                return x
            target = written.get(id(x))  # a returned out or self: the device tensor
            return lt.from_cpu(x) if target is None else target

        return pytree.tree_map(to_device, out)

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
            if reason is None:
                reason = f"sync() at {lt.describe_location(lt.user_location())}"
            try:
                graph = self.compiler.cut([s.value for s in outputs])
                compiled = self.compiler.compile(graph, reason)
            except Exception as error:
                _fail(outputs, error)
                raise
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
        assert isinstance(data, DeviceData), "sync() left a traced tensor without a buffer"
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


def _takes_device(func: torch._ops.OpOverload) -> bool:
    """A factory: it takes the device to make its result on."""
    return any(a.name == "device" and a.kwarg_only for a in func._schema.arguments)


def _on_device(device: Any) -> bool:
    return device is not None and torch.device(device).type == lt.DEVICE_NAME


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


def _writes(arg: torch._C.Argument) -> bool:
    return arg.alias_info is not None and arg.alias_info.is_write


_OUT_NAMES: dict[torch._ops.OpOverload, tuple[str, ...]] = {}


def _out_names(func: torch._ops.OpOverload) -> tuple[str, ...]:
    """The names of an out= overload's outputs (keyword-only, in the returns' order)."""
    names = _OUT_NAMES.get(func)
    if names is None:
        names = _OUT_NAMES[func] = tuple(a.name for a in func._schema.arguments if _writes(a))
    return names


#: What a factory's functional overload takes and its out= overload does not.
_FACTORY_KWARGS = frozenset(("dtype", "layout", "device", "pin_memory"))
_OUT_FUNCTIONAL: dict[torch._ops.OpOverload, torch._ops.OpOverload | None] = {}


def _out_functional(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The functional overload that the out= overload ``func`` writes into its outs:
    the same inputs (names, types, defaults, order) and one result per out; a factory's
    may also take ``dtype``, ``layout``, ``device`` and ``pin_memory``. (The inverse of
    ``torch._library._out_variant.to_out_variant``, which does not allow the latter.)"""
    if func in _OUT_FUNCTIONAL:
        return _OUT_FUNCTIONAL[func]
    if not all(a.kwarg_only for a in func._schema.arguments if _writes(a)):
        _OUT_FUNCTIONAL[func] = None  # it updates an input too: run it on the host
        return None
    inputs = [(a.name, str(a.type), a.default_value)
              for a in func._schema.arguments if not _writes(a)]
    names = {i[0] for i in inputs}
    found = None
    packet = func.overloadpacket
    for name in packet.overloads():
        candidate = getattr(packet, name)
        schema = candidate._schema
        if (schema.is_mutable or candidate.is_view
                or len(schema.returns) != len(_out_names(func))):
            continue
        own = [(a.name, str(a.type), a.default_value) for a in schema.arguments
               if not (a.kwarg_only and a.name in _FACTORY_KWARGS and a.name not in names)]
        if own == inputs:
            found = candidate
            break
    _OUT_FUNCTIONAL[func] = found
    return found


def _resize(tensor: LazyTensor, meta: torch.Tensor) -> None:
    """Give ``tensor`` the shape and strides of ``meta``, as eager resizes an out=
    argument of the wrong shape. A wrapper subclass cannot be resized through dispatch
    (its storage holds no data), so its metadata is set by ``set_``'s meta kernel on
    its own storage; the old value is dropped with a fresh storage."""
    if tensor._views:
        raise LazyError(f"an out= tensor that is a view of another must have the result's "
                        f"shape {list(meta.shape)}, not {list(tensor.shape)}, at "
                        f"{lt.describe_location(lt.user_location())}")
    aten.set_.source_Storage_storage_offset.redispatch(
        _META_KEYS, tensor, tensor.untyped_storage(), 0, meta.shape, meta.stride())
    tensor._sig = (tuple(meta.shape), meta.stride(), meta.dtype)
    tensor._cache = None
    tensor._storage_ = LazyStorage(tensor._storage_.value)


_META_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)


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
    """Let submitted graphs finish and the worker thread end before the interpreter
    goes (see ``Worker.stop``)."""
    if _RUNTIME is not None:
        _RUNTIME.worker.stop()


def runtime() -> Runtime:
    """The process's runtime, which ``torch_mncore.init`` starts: without it there is no
    device to run on (no silent default that a later ``init`` would replace)."""
    if _RUNTIME is None:
        where = lt.describe_location(lt.user_location())
        raise LazyError(f"torch_mncore is not initialised at {where}: call "
                        "torch_mncore.init(device=...) (or init_cpu(), init_mncore(), "
                        "init_cuda()) before using the mncore device")
    return _RUNTIME


def init(device: str = "cpu", implicit_sync: str | None = None, asynchronous: bool = True,
         gate: bool = True) -> Runtime:
    """Start the runtime for ``device``. A runtime already running first runs what was
    traced on its device and waits for it, so every tensor keeps its value across the
    switch (its buffer is then an input of the new device's graphs)."""
    global _RUNTIME
    if device not in DEVICES:
        raise LazyError(f"unknown device {device!r}; devices: {', '.join(DEVICES)}")
    if device == "mncore":
        try:
            mncore_machine()
        except ValueError as error:
            raise LazyError(str(error)) from None
    new = Runtime(device, implicit_sync, asynchronous, gate)
    if _RUNTIME is not None:
        try:
            _finish(_RUNTIME, f"torch_mncore.init({device!r})")
        except LazyError:
            new.worker.stop()
            raise
    _RUNTIME = new
    return new


def _finish(old: Runtime, caller: str) -> None:
    """Run what is traced on ``old``'s device, wait for it and end its worker. On an
    error ``old`` stays the runtime; the tensors of the failed step keep the error, so
    a second call goes ahead."""
    where = lt.describe_location(lt.user_location())
    try:
        old.sync(wait=True, reason=f"{caller} at {where}")
    except Exception as error:
        raise LazyError(f"{caller} at {where}: what was traced on the {old.device!r} device "
                        f"failed there, so the device is still {old.device!r}: {error}\n"
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

