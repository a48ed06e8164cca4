"""Tracing: each ATen op on a lazy tensor becomes a functional graph node (or a view,
an in-place write through views, a host factory, a CPU fallback), as
:mod:`mncore_ir.frontends.lazy_ops` decides for the op. The runtime adds reading values
and running steps (:meth:`Tracer.read`)."""

from __future__ import annotations

import abc
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import decomposition_table
from torch.utils import _pytree as pytree

from mncore_ir.frontends import lazy_collectives
from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_host import run_on_host
from mncore_ir.frontends.lazy_ops import (
    ADDC,
    ALPHA,
    COLLECTIVE_READY,
    COPY,
    CORE,
    DECOMPOSE,
    DECOMPOSE_OR_FALLBACK,
    FACTORY,
    INPLACE,
    INPLACE_VIEW,
    NARROW_FLOATS,
    OUT,
    PROCESS_GROUP,
    RECORD,
    SPECIAL,
    TRACE_DECOMPOSITIONS,
    UNSUPPORTED,
    VIEW,
    as_strided_of_storage,
    baked,
    check_inplace,
    core_decomposition,
    hoist_target,
    hoisted_number,
    inplace_form,
    leaves_device,
    narrow_opmath,
    on_device,
    out_functional,
    out_names,
    plan_of,
    refuse_write_to_copy,
    resize_out,
    scatter_view,
    single_views,
    underlying_plan,
    view_variant,
)
from mncore_ir.frontends.lazy_promotion import addc_operands, check_alpha, scaled_sum
from mncore_ir.frontends.lazy_templates import LIMIT as TEMPLATE_LIMIT
from mncore_ir.frontends.lazy_templates import NotPure, Template, capture, signature
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
    collect_values,
)
from mncore_ir.frontends.lazy_where import describe_location, user_location
from mncore_ir.frontends.lazy_worker import Metrics

aten = torch.ops.aten

_MISSING = object()
#: View ops that return their input as it is (``torch.tensor(..., device=)`` lifts its
#: result with ``lift_fresh``): the result shares the storage, with no view step.
_ALIASES = (aten.detach.default, aten.alias.default, aten.lift_fresh.default)
_META_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)



class Tracer(abc.ABC):
    """Records the ATen ops of lazy tensors. ``pending`` holds the storages written
    since the last step was cut (weakly: dead tensors are no outputs); an error raised
    on autograd's device thread waits in ``deferred`` for the next sync or read."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.pending: list[weakref.ref[LazyStorage]] = []
        self.deferred: Exception | None = None
        self.capturing = 0  # > 0 while a decomposition is captured as a template
        self.templates: dict[Any, Template | None] = {}

    @abc.abstractmethod
    def read(self, tensor: Any, fallback: bool = False) -> torch.Tensor:
        """The host value of ``tensor`` (a sync when it is not computed yet)."""

    @abc.abstractmethod
    def sync(self, wait: bool = False, reason: str | None = None) -> None:
        """Cut the trace into a graph and run it (``wait``: until every graph is done)."""

    def dispatch(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        key = lt.OP_KEYS.get(id(func))
        plan = key.plan if key is not None and key.plan is not None else plan_of(func)
        if plan is SPECIAL:
            done = self._special(func, args, kwargs)
            if done is not _MISSING:
                return done
            plan = underlying_plan(func)
        self.metrics.traced_ops += 1
        if plan is RECORD:
            return self._record(func, args, kwargs)
        if plan is PROCESS_GROUP:  # dist.all_reduce and friends
            return lazy_collectives.run_process_group_op(self, func, args, kwargs)
        if plan is COLLECTIVE_READY:
            return lazy_collectives.ready(func, args[0])
        if plan is VIEW:
            return self._view(func, args, kwargs)
        if plan is CORE:  # torch's decomposition, traced op by op
            return self._record_core(func, args, kwargs)
        if plan is INPLACE:
            return self._inplace(func, args, kwargs)
        if plan is DECOMPOSE:  # ops whose schema hides a mutation
            return TRACE_DECOMPOSITIONS[func](*args, **kwargs)
        if plan is ALPHA:
            alpha = kwargs.get("alpha", 1)
            common = check_alpha(args, alpha) if "alpha" in kwargs else None  # eager's
            if common == torch.bool:  # checks, before the split (none without alpha)
                alpha = bool(alpha)  # as eager's kernel reads it
            if alpha == 1:
                return (self._inplace if func._schema.is_mutable else self._record)(
                    func, args, kwargs)
            if common in NARROW_FLOATS or any(isinstance(a, torch.Tensor) and a.dtype
                                              != common for a in args[:2]):
                return scaled_sum(self.dispatch, func, args, alpha)
            scaled = self.dispatch(aten.mul.Tensor, (args[1], alpha), {})
            return self.dispatch(func, (args[0], scaled), {})
        if plan is ADDC:
            return self._addc(func, args, kwargs)
        if plan is OUT:
            return self._out(func, args, kwargs)
        if plan is FACTORY:
            return self._factory(func, args, kwargs)
        if plan is COPY:
            return self._copy_from(func, *args, **kwargs)
        if plan is INPLACE_VIEW:
            return self._inplace_view(func, args, kwargs)
        if plan is DECOMPOSE_OR_FALLBACK:
            return self._decompose_or_fallback(func, args, kwargs)
        if plan is UNSUPPORTED:
            raise LazyError(f"{func} is not supported on lazy tensors, at "
                            f"{describe_location(user_location())}")
        return self._fallback(func, args, kwargs)

    def _special(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        """A :data:`SPECIAL` op's special case (a value read, a copy off the device),
        or ``_MISSING`` where it does not apply."""
        if func is aten._local_scalar_dense.default:
            return self.read(args[0]).item()
        if func is aten._to_copy.default and leaves_device(kwargs):
            return func(self.read(args[0]), **kwargs)
        if func is aten.copy_.default and not isinstance(args[0], LazyTensor):
            return args[0].copy_(self.read(args[1]))
        if func in (aten.equal.default, aten.allclose.default):  # traced, one bool read
            self._pure(f"{func} reads a value")
            a, b = args[:2]
            if func is aten.equal.default:
                return a.shape == b.shape and bool(torch.eq(a, b).all().item())
            return bool(torch.isclose(a, b, *args[2:], **kwargs).all().item())
        if func is aten._linalg_check_errors.default:  # torch's check, of the read info
            self._pure(f"{func} reads a value")
            return func(self.read(args[0]), *args[1:], **kwargs)
        return _MISSING

    def _addc(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        """``x + value * (t1 op t2)`` as separate ops, so ``value`` can be a graph input.
        In bf16/f16 torch's decomposition instead: it computes in f32, as eager does."""
        args, common = addc_operands(self.dispatch, func, args)
        x, t1, t2 = args[:3]
        if common in NARROW_FLOATS and func in decomposition_table:
            return decomposition_table[func](*args, **kwargs)
        value = kwargs.get("value", args[3] if len(args) > 3 else 1)
        inner = aten.div.Tensor if "addcdiv" in func.__name__ else aten.mul.Tensor
        prod = self.dispatch(inner, (t1, t2), {})
        if value != 1:
            prod = self.dispatch(aten.mul.Tensor, (prod, value), {})
        add = aten.add_.Tensor if func._schema.is_mutable else aten.add.Tensor
        return self.dispatch(add, (x, prod), {})

    def _out(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        """An ``out=`` overload (what factories like ``arange`` call on an empty device
        tensor too): its functional variant, traced, then written into the outs."""
        functional = out_functional(func)
        names = out_names(func)
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
        tensors (``linspace``'s ends) are read. A seeded random factory draws anew at
        each call, so no template may keep its numbers."""
        if torch.Tag.nondeterministic_seeded in func.tags:
            self._pure(f"{func} draws random numbers")
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
        if device is not None and not on_device(device):  # made for another device
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
            resize_out(out, meta)
        self._write(out, result.value())

    def _new_node(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Node:
        """The graph node of ``func(*args)``: tensors become their values, hoistable
        Python scalars become :class:`Scalar` inputs (switching to the op's Tensor
        overload where the schema wants a Scalar), and the output metadata comes from
        the shape cache, keyed on the inputs' signatures."""
        graph_args: list[Any] = []
        keys: list[Any] = []
        operands: list[Any] = []  # the graph values, as ``Node`` would collect them
        first_dtype, first_rank = None, 0
        for i, a in enumerate(args):
            kind = type(a)
            if kind is LazyTensor or isinstance(a, LazyTensor):
                value = a.value() if a._views else a._storage_.value
                graph_args.append(value)
                operands.append(value)
                sig = a._sig
                keys.append(sig)
                if first_dtype is None:
                    first_dtype, first_rank = sig[2], len(sig[0])
            elif isinstance(a, torch.Tensor):  # a host tensor used on the device
                # its value now would be frozen into a template (a host tensor that
                # changes between calls, read from outside an assume_pure function)
                self._pure(f"{func} reads a host tensor")
                data = lt.uploaded(a)
                value = data.value()
                graph_args.append(value)
                operands.append(value)
                keys.append(data._sig)
                if first_dtype is None:
                    first_dtype, first_rank = a.dtype, a.dim()
            elif kind is float or kind is int:
                target = None
                if first_dtype is not None and not baked(a, func) and (
                        first_rank or not narrow_opmath(first_dtype, func)):
                    hoist = lt.op_key(func).hoist
                    target = hoist[i] if i in hoist else hoist_target(func, i)
                if target is None:  # baked into the graph: part of its structure
                    graph_args.append(a)
                    keys.append(lt.meta_key(a))
                    continue
                a, dtype = hoisted_number(a, first_dtype, first_rank, func, kwargs)
                func = target
                scalar = Scalar(a, dtype)
                graph_args.append(scalar)
                operands.append(scalar)
                keys.append(("S", dtype))
            elif isinstance(a, list | tuple) and any(isinstance(x, torch.Tensor) for x in a):
                values = [x if isinstance(x, LazyTensor) or not isinstance(x, torch.Tensor)
                          else lt.uploaded(x) for x in a]
                listed = type(a)(x.value() if isinstance(x, LazyTensor) else x for x in values)
                graph_args.append(listed)
                collect_values(listed, operands)
                keys.append(lt.meta_key(values))
                args = (*args[:i], type(a)(values), *args[i + 1:])
            else:
                graph_args.append(a)
                if isinstance(a, list | tuple):
                    collect_values(a, operands)
                keys.append(lt.meta_key(a))
        if kwargs:
            graph_kwargs = {k: self._graph_tensor(v) if isinstance(v, torch.Tensor) else v
                            for k, v in kwargs.items()}
            if "device" in kwargs:
                graph_kwargs["device"] = torch.device("cpu")
            collect_values(graph_kwargs.values(), operands)
            key = (lt.op_key(func), tuple(keys), lt.meta_key(tuple(sorted(kwargs.items()))))
        else:
            graph_kwargs = kwargs
            key = (lt.op_key(func), tuple(keys), ())
        meta = lt.infer_meta_cached(key, func, graph_args, args, kwargs)
        return Node(func, tuple(graph_args), graph_kwargs, meta, user_location(), key,
                    tuple(operands))

    @staticmethod
    def _graph_tensor(tensor: torch.Tensor) -> Any:
        """A tensor argument as the graph value it reads (a host tensor is uploaded)."""
        if isinstance(tensor, LazyTensor):
            return tensor.value() if tensor._views else tensor._storage_.value
        return lt.uploaded(tensor).value()

    def _record(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        try:
            node = self._new_node(func, args, kwargs)
        except NotImplementedError:
            # no meta kernel can tell the result's shape without the values (indexing
            # with a boolean mask): the op runs on the host
            return self._fallback(func, args, kwargs)
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
            return self._record_core(func, args, kwargs)
        base_meta = base.meta()
        if func in _ALIASES:
            # the same value: the alias shares its base's storage and view chain (a
            # write through it is a write to the base, as scatter_view's identity)
            alias = LazyTensor(base._storage_, base._views, base_meta)
            alias._cache = base._cache
            alias._alias = True  # type: ignore[attr-defined]  # (resize_out refuses it)
            return alias
        items = tuple(sorted(kwargs.items())) if kwargs else ()
        if func is aten.as_strided.default and base._views:
            return as_strided_of_storage(base, args[1:], kwargs)
        key = (lt.op_key(func), (base._sig, *map(lt.meta_key, args[1:])), lt.meta_key(items))
        meta = lt.infer_meta_cached(key, func, (base_meta, *args[1:]),
                                    (base_meta, *args[1:]), kwargs)
        if isinstance(meta, torch.Tensor):
            views = (*base._views, ViewStep(func, tuple(args[1:]), items, base_meta, meta))
            return LazyTensor(base._storage_, views, meta)
        parts = single_views(func, args, kwargs, meta)
        if parts is not None:  # split, unbind: each part a view of the base, as eager's
            return type(meta)(self._view(f, (base, *a), {}) for f, a in parts)
        copies = self._record_core(func, args, kwargs)  # others: copies, not written
        for copy in copies:
            copy._made_by = func  # type: ignore[attr-defined]
        return copies

    def _decompose_or_fallback(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                               kwargs: dict[str, Any]) -> Any:
        """Through torch's decomposition when its template (captured once per call
        signature) records only ops the compiler takes; else on the host, whole. Not
        for bf16/f16: these decompositions compute in the narrow type, where torch's
        CPU kernels compute in f32 (grid_sample's coordinates would round)."""
        called = signature(args, kwargs)
        if called is not None:
            template = self._template((DECOMPOSE_OR_FALLBACK, func, called[0]), func,
                                      decomposition_table[func], args, kwargs, called[1],
                                      whole=True)
            if template is not None:
                return template.record(self, called[1])
        return self._fallback(func, args, kwargs)

    def _template(self, key: tuple[Any, ...], func: torch._ops.OpOverload,
                  decomposition: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any], values: list[Any], whole: bool = False) -> Any:
        """The template of a call's signature ``key``, captured at its first call
        (None: none may stand for it). ``whole``: only one that records importable ops
        and no narrow float (the signature keys dtypes, so this is decided once)."""
        template = self.templates.get(key, _MISSING)
        if template is not _MISSING:
            return template
        narrow = whole and any(
            isinstance(a, torch.Tensor) and a.dtype in (torch.bfloat16, torch.float16)
            for a in pytree.tree_leaves((args, kwargs)))
        template = None if narrow else capture(self, func, decomposition, args, kwargs,
                                               values)
        if whole and template is not None and not template.importable:
            template = None
        self.metrics.counters["TemplateCaptures" if template is not None
                              else f"NoTemplate::{func}"] += 1
        if len(self.templates) < TEMPLATE_LIMIT:
            self.templates[key] = template
        return template

    def _inplace_view(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        """``squeeze_``, ``t_``, ...: the tensor itself becomes the view its view op
        makes (shape, strides and view chain; the data is untouched)."""
        target = args[0]
        view = self._view(view_variant(func), args, kwargs) if isinstance(
            target, LazyTensor) else None
        if not isinstance(view, LazyTensor) or view._storage_ is not target._storage_:
            raise LazyError(f"{func} is not supported on this tensor, at "
                            f"{describe_location(user_location())}")
        aten.set_.source_Storage_storage_offset.redispatch(
            _META_KEYS, target, target.untyped_storage(), 0, view.shape, view.stride())
        target._views, target._sig, target._cache = view._views, view._sig, None
        return target

    def _record_core(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
        """Trace ``func``'s decomposition to core ATen, if torch has one, else record
        ``func``: through the template of the call's signature (captured at its first
        call), else by running the decomposition. A decomposition that fails on lazy
        tensors (one that needs a value, or is broken) records ``func`` whole: its meta
        kernel still checks the call, and the compile re-traces it with ``make_fx``,
        which reports the failure at its line."""
        hoisted = self._hoist_scalars(func, args, kwargs)
        if hoisted is not None:
            func, args = hoisted
        decomposition = core_decomposition(func)
        if decomposition is None:
            return self._record(func, args, kwargs)
        called = signature(args, kwargs)
        if called is not None:
            template = self._template((func, decomposition, called[0]), func, decomposition,
                                      args, kwargs, called[1])
            if template is not None:
                return template.record(self, called[1])
        try:
            return decomposition(*args, **kwargs)
        except NotPure:
            raise  # inside another capture: that one gives up
        except Exception:
            return self._record(func, args, kwargs)

    def _hoist_scalars(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                       kwargs: dict[str, Any]
                       ) -> tuple[torch._ops.OpOverload, tuple[Any, ...]] | None:
        """``func``'s Tensor overload with each hoistable Python number as a 0-d device
        buffer, as :meth:`_new_node` hoists them: before a decomposition, which would
        otherwise bake the number into its nodes (a new graph per learning rate)."""
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is None:
            return None
        hoisted = None
        for i, a in enumerate(args):
            if (type(a) is not float and type(a) is not int) or baked(a, func):
                continue
            target = hoist_target(func, i)
            if target is None or not (first.dim() or not narrow_opmath(first.dtype, func)):
                continue
            a, dtype = hoisted_number(a, first.dtype, first.dim(), func, kwargs)
            func, hoisted = target, hoisted or list(args)
            hoisted[i] = lt.wrap(DeviceData((), dtype, torch.tensor(a, dtype=dtype)),
                                 lt.scalar_meta(dtype))
        return None if hoisted is None else (func, tuple(hoisted))

    def _pure(self, what: str) -> None:
        """Refuse ``what`` inside a capture: a template cannot stand for it."""
        if self.capturing:
            raise NotPure(what)

    def _inplace(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        target = args[0]
        functional, decomposed = inplace_form(func)
        if functional is None or not isinstance(target, LazyTensor):
            return self._fallback(func, args, kwargs)
        if func is aten.copy_.default:
            src = args[1]
            if not isinstance(src, LazyTensor):
                if not target._views and src.shape == target.shape and src.dtype == target.dtype:
                    target._storage_.set(lt.from_cpu(src).value())  # a host-to-device copy
                    return target
                src = lt.from_cpu(src)
            node = self._new_node(aten.copy.default, (target, src), {})
        elif decomposed:  # the new value
            result = self.dispatch(functional, args, kwargs)
            if isinstance(result, torch.Tensor):
                check_inplace(result, target)
            self._write(target, (result if isinstance(result, LazyTensor)
                                 else lt.from_cpu(result)).value())
            return target
        else:
            node = self._new_node(functional, args, kwargs)
            if type(node.meta) is torch.Tensor:
                check_inplace(node.meta, target)
        self._write(target, node)
        return target

    def _write(self, target: LazyTensor, new: Value) -> None:
        """Make ``new`` the value of ``target``, writing through its views."""
        refuse_write_to_copy(target)
        storage = target._storage_
        value = new
        if not target._views:
            storage.set(value)
            self.pending.append(weakref.ref(storage))
            return
        bases: list[Value] = [storage.value]
        for step in target._views[:-1]:
            prev = bases[-1]
            bases.append(Node(step.op, (prev, *step.args), dict(step.kwargs), step.meta))
        for step, base in zip(reversed(target._views), reversed(bases), strict=True):
            value = scatter_view(step, base, value)
        storage.set(value)
        self.pending.append(weakref.ref(storage))

    def _fallback(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        return run_on_host(self, func, args, kwargs)

    def defer(self, error: Exception, func: torch._ops.OpOverload, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        """Remember ``error`` for the next sync or read; return zeros shaped like the
        op's outputs so the caller can go on. Inside a capture the error is the
        capture's, which gives up."""
        if self.capturing:
            raise error
        if self.deferred is None:
            self.deferred = error
        meta = lt.infer_meta(func, args, kwargs)
        to_host = func is aten._to_copy.default and leaves_device(kwargs)

        def zeros(m: Any) -> Any:
            if not isinstance(m, torch.Tensor):
                return m
            host = torch.zeros(m.shape, dtype=m.dtype)
            return host if to_host else lt.from_cpu(host)

        return pytree.tree_map(zeros, meta)
