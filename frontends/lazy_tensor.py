"""Lazy tensors: a wrapper tensor subclass on the renamed PrivateUse1 device whose ATen
ops are recorded into a functional graph instead of being run.

Values are SSA: a :class:`Node` is one functional ATen op on earlier values, a
:class:`DeviceData` leaf is a buffer the device holds, a :class:`Scalar` leaf is a
Python number hoisted into a graph input. Tensors that alias share a
:class:`LazyStorage`; a view is its storage's value seen through a chain of view ops,
and an in-place op on a view writes back through the inverse ops (``*_scatter``), which
is what functionalization does. The runtime (``lazy_runtime``) cuts, compiles and runs
the graph; it installs itself here (:func:`activate`), so this module does not import it.
"""

from __future__ import annotations

import copy
import itertools
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends.lazy_where import describe_location, user_location

aten = torch.ops.aten
DEVICE_NAME = "mncore"
_DEVICE: torch.device | None = None  # set by lazy_backend, after the rename


def set_device(device: torch.device) -> None:
    """The device lazy tensors are on (``lazy_backend`` renames PrivateUse1 first)."""
    global _DEVICE
    _DEVICE = device

# ---------------------------------------------------------------------- graph values


#: Numbers graph inputs (buffers and hoisted scalars) by creation.
_CREATED = itertools.count()


def created() -> int:
    """The serial the next graph input will have."""
    return next(_CREATED)


class DeviceData:
    """A device buffer: a CPU tensor here, possibly still being computed (a future)."""

    __slots__ = ("__weakref__", "_future", "_tensor", "dtype", "serial", "shape")

    live: weakref.WeakSet[DeviceData] = weakref.WeakSet()

    def __init__(self, shape: Sequence[int], dtype: torch.dtype,
                 tensor: torch.Tensor | None = None, future: Future[Any] | None = None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self._tensor = tensor
        self._future = future
        self.serial = next(_CREATED)  # which graph inputs a template capture made
        DeviceData.live.add(self)

    @property
    def ready(self) -> bool:
        return self._tensor is not None

    def tensor(self) -> torch.Tensor:
        """The buffer's contents, waiting for the execution that produces them."""
        if self._tensor is None:
            assert self._future is not None
            self._future.result()  # raises the execution's error, if any
            assert self._tensor is not None
        return self._tensor

    def fill(self, tensor: torch.Tensor) -> None:
        self._tensor = tensor
        self._future = None


class LazyError(RuntimeError):
    """A user-facing error of the lazy-tensor runtime."""


@dataclass(eq=False, slots=True)
class Scalar:
    """A Python number hoisted into a graph input, as a 0-d tensor of ``dtype``."""

    value: float | int
    dtype: torch.dtype
    serial: int = field(default_factory=_CREATED.__next__)


@dataclass(eq=False, slots=True, init=False)
class Node:
    """One functional ATen op; ``meta`` is its output as meta tensor(s)."""

    op: torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    meta: Any
    where: str
    key: Any
    """The op with its inputs' signatures and constant arguments (see ``node_key``)."""
    operands: tuple[Any, ...]
    """The graph values among ``args`` and ``kwargs``, in order (what a cut walks)."""

    def __init__(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: Any,
                 where: str = "", key: Any = None, operands: tuple[Any, ...] | None = None
                 ) -> None:
        """``key`` and ``operands`` are computed unless the caller (the tracer, per
        op) already has them."""
        self.op, self.args, self.kwargs, self.meta, self.where = op, args, kwargs, meta, where
        self.key = node_key(op, args, kwargs) if key is None else key
        if operands is None:
            found: list[Any] = []
            collect_values(args, found)
            collect_values(kwargs.values(), found)
            operands = tuple(found)
        self.operands = operands


@dataclass(eq=False, slots=True)
class Item:
    """Output ``index`` of a multi-output node."""

    node: Node
    index: int
    meta: Any = None


def collect_values(args: Any, into: list[Any]) -> None:
    """Append the graph values (nodes, their items, buffers, hoisted scalars) in
    ``args``, looking into lists and tuples."""
    for a in args:
        if isinstance(a, _GRAPH_VALUES):
            into.append(a)
        elif isinstance(a, list | tuple):
            collect_values(a, into)


_GRAPH_VALUES = (Node, Item, DeviceData, Scalar)


@dataclass(eq=False, slots=True)
class Placeholder:
    """What a decomposition's input holds while it is captured as a template
    (``lazy_templates``): it keys and shapes as the value it stands for, and ``data``
    says whether that value is a device buffer."""

    key: Any
    meta: torch.Tensor
    data: bool


Value = Node | Item | DeviceData


_SERIAL = itertools.count()


class LazyStorage:
    """What aliasing tensors share: the current value of their base. ``serial`` orders
    graph outputs by creation, so the same program gives the same graph every step."""

    __slots__ = ("__weakref__", "serial", "value", "version")

    def __init__(self, value: Value) -> None:
        self.value = value
        self.version = 0
        self.serial = next(_SERIAL)

    def set(self, value: Value) -> None:
        self.value = value
        self.version += 1


@dataclass(frozen=True, slots=True)
class ViewStep:
    """``op(base, *args)``: one step from a storage's base to a view."""

    op: torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    base_meta: torch.Tensor
    meta: torch.Tensor
    """The view's metadata, as the trace inferred it when the view was made (so that
    recording the step again, at every read of the view, infers nothing)."""


# ---------------------------------------------------------------------- shape inference

class OpKey:
    """An op as part of a cache key, one per op: hashed and compared by identity where
    an ``OpOverload``'s ``__hash__`` is Python code (about half a microsecond, and keys
    are hashed for every recorded op and again for every step's compile-cache lookup);
    printed as the op, since the on-disk cache digests the printed structure. ``plan``,
    ``hoist`` and ``inplace`` are what the tracer decided about the op (``lazy_ops``)."""

    __slots__ = ("hoist", "inplace", "op", "plan")

    def __init__(self, op: Any) -> None:
        self.op = op
        self.plan: str | None = None
        self.hoist: dict[int, Any] = {}
        self.inplace: tuple[Any, bool] | None = None

    def __repr__(self) -> str:
        return repr(self.op)


#: id(op) -> its key; the key holds the op, so the id is never reused while it lives.
OP_KEYS: dict[int, OpKey] = {}


def op_key(op: Any) -> OpKey:
    """The one :class:`OpKey` of ``op``."""
    key = OP_KEYS.get(id(op))
    if key is None:  # setdefault: one key even if autograd's thread asks at once
        key = OP_KEYS.setdefault(id(op), OpKey(op))
    return key


_META_CACHE: dict[tuple[Any, ...], Any] = {}
#: Signatures of meta tensors (mostly the shape cache's, which live as long as it).
_SIGS: dict[int, tuple[torch.Tensor, tuple[Any, ...]]] = {}
#: A meta tensor per signature (``LazyTensor.meta``).
_METAS: dict[tuple[Any, ...], torch.Tensor] = {}


def meta_key(x: Any) -> Any:
    """``x`` as a key of what it contributes to an op's result: a tensor by signature
    (shape, strides, dtype), a sequence element-wise, anything else by type and value.

    The type matters because Python equates values that torch does not: ``1 == 1.0 ==
    True`` share a hash but give int, float and bool results. Floats are keyed by their
    exact bits (``float.hex``), so ``-0.0`` differs from ``0.0`` and ``nan`` equals
    itself."""
    if isinstance(x, LazyTensor):
        return x._sig
    if isinstance(x, torch.Tensor):
        return (tuple(x.shape), x.stride(), x.dtype)
    if isinstance(x, list | tuple):
        return tuple(meta_key(v) for v in x)
    if isinstance(x, float):
        return (type(x), float.hex(x))
    if isinstance(x, complex):
        return (type(x), float.hex(x.real), float.hex(x.imag))
    return (type(x), x)


def node_key(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A node's structure: the op, its constant arguments (positional and keyword) by
    type and value, and its graph values by signature."""
    return (op_key(op), tuple(value_key(a) for a in args),
            meta_key(tuple(sorted(kwargs.items()))))


def value_key(v: Any) -> Any:
    """A graph value (or constant argument) as part of a node's key."""
    if isinstance(v, Node | Item):
        m = v.meta
        return (tuple(m.shape), m.stride(), m.dtype)
    if isinstance(v, DeviceData):
        return (v.shape, v.dtype)
    if isinstance(v, Scalar):  # the value is a graph input; its dtype is structure
        return ("S", v.dtype)
    if isinstance(v, Placeholder):
        return v.key
    if isinstance(v, list | tuple):
        return tuple(value_key(x) for x in v)
    return meta_key(v)


def _to_meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.device.type != "meta":  # a fresh one: ops write
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x


def _is_bool(x: Any) -> bool:
    return type(x) is bool or (isinstance(x, torch.Tensor) and x.dtype == torch.bool)


def _check_like_eager(op: torch._ops.OpOverload, args: tuple[Any, ...]) -> None:
    """What eager's kernels refuse and the meta kernels let through: subtraction with a
    boolean (``t - (t > 0)``), an integer tensor to a negative integer power, with
    eager's messages."""
    if (op is torch.ops.aten.pow.Tensor_Scalar and type(args[1]) is int and args[1] < 0
            and not (args[0].is_floating_point() or args[0].is_complex())):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if op.overloadpacket in (torch.ops.aten.sub, torch.ops.aten.rsub) and len(args) > 1:
        if _is_bool(args[0]) and _is_bool(args[1]):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        if _is_bool(args[0]) or _is_bool(args[1]):
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` "
                               "or `logical_not()` operator instead.")


def _run_meta(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    _check_like_eager(op, args)
    meta_args, meta_kwargs = pytree.tree_map(_to_meta, (args, kwargs))
    if "device" in meta_kwargs:
        meta_kwargs["device"] = "meta"
    return op(*meta_args, **meta_kwargs)


def infer_meta(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``op`` on meta tensors, cached on (op, input metadata): the meta kernels are
    slow (100-250 µs) and training steps repeat the same calls."""
    key = (op_key(op), meta_key(args), meta_key(tuple(sorted(kwargs.items()))))
    return infer_meta_cached(key, op, args, args, kwargs)


def infer_meta_cached(key: tuple[Any, ...], op: torch._ops.OpOverload,
                      graph_args: Sequence[Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
    """:func:`infer_meta` with a key the caller built; hoisted scalars are 0-d tensors."""
    cacheable = True
    try:
        return _META_CACHE[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable argument: compute without caching
        cacheable = False
    meta_args = tuple(torch.empty((), dtype=g.dtype, device="meta") if isinstance(g, Scalar)
                      else a for a, g in zip(args, graph_args, strict=True))
    out = _run_meta(op, meta_args, kwargs)
    if cacheable:
        _META_CACHE[key] = out
    return out


# ---------------------------------------------------------------------- the tensor

_WRAPPER = torch.Tensor._make_wrapper_subclass
_DATA = torch._C.TensorBase.data  # torch's property, which LazyTensor.data extends


#: Where eager's tensor printing puts its suffixes (``size=`` of an empty tensor, a
#: dtype), after which a device's name goes.
_SUFFIX = re.compile(r", (size|dtype)=")


class LazyTensor(torch.Tensor):
    """A tensor on the ``mncore`` device: its value is a storage seen through views."""

    _storage_: LazyStorage
    _views: tuple[ViewStep, ...]
    _cache: tuple[int, Value] | None
    _sig: tuple[tuple[int, ...], tuple[int, ...], torch.dtype]

    @staticmethod
    def __new__(cls, storage: LazyStorage, views: tuple[ViewStep, ...], meta: torch.Tensor,
                requires_grad: bool = False) -> LazyTensor:
        known = _SIGS.get(id(meta))
        if known is None or known[0] is not meta:
            known = (meta, (tuple(meta.shape), meta.stride(), meta.dtype))
            if len(_SIGS) < 100_000:
                _SIGS[id(meta)] = known
        sig = known[1]
        if requires_grad:
            r = _WRAPPER(cls, sig[0], strides=sig[1], dtype=sig[2], device=_DEVICE,
                         requires_grad=True)
        else:
            r = _WRAPPER(cls, sig[0], strides=sig[1], dtype=sig[2], device=_DEVICE)
        r._storage_ = storage
        r._views = views
        r._cache = None
        r._sig = sig
        return r

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        """As eager prints a device tensor: ``tensor([...], device='mncore:0', ...)``."""
        text = repr(self.materialize())[:-1]
        found = _SUFFIX.search(text)
        at = found.start() if found else len(text)
        text = f"{text[:at]}, device='{DEVICE_NAME}:0'{text[at:]}"
        if self.grad_fn is not None:
            text += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            text += ", requires_grad=True"
        return text + ")"

    def storage_offset(self) -> int:
        """Where the view starts in its storage, in elements, as eager's: its view steps
        replayed on a meta tensor shaped as the base (the wrapper's own offset is 0)."""
        if not self._views:
            return 0
        base = self._views[0].base_meta
        meta = torch.empty_strided(base.shape, base.stride(), dtype=base.dtype, device="meta")
        for step in self._views:
            meta = step.op(meta, *step.args, **dict(step.kwargs))
        return meta.storage_offset()

    def data_ptr(self) -> int:
        """A stand-in address, as code that groups tensors by storage needs one: each
        storage its own (4 GiB apart), a view's at its offset in it (the wrapper's own
        is 0 for every tensor, so all of them looked like one)."""
        return ((self._storage_.serial + 1) << 32) + self.storage_offset() * self.element_size()

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its number (``f"{loss:.4f}"``), as eager's does."""
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # the value, as recorded graph input ----------------------------------------

    def value(self) -> Value:
        """This tensor's current value; records the view ops from its base, once per
        version of the storage."""
        storage = self._storage_
        if not self._views:
            return storage.value
        if self._cache is not None and self._cache[0] == storage.version:
            return self._cache[1]
        value: Value = storage.value
        for step in self._views:
            value = Node(step.op, (value, *step.args), dict(step.kwargs), step.meta)
        self._cache = (storage.version, value)
        return value

    def meta(self) -> torch.Tensor:
        return meta_of(self._sig)

    def materialize(self) -> torch.Tensor:
        """The value on the host (a CPU tensor), syncing first if it is pending."""
        return active().read(self)

    def tolist(self) -> Any:  # torch refuses .tolist() on subclasses
        return self.materialize().tolist()

    def numpy(self, *, force: bool = False) -> Any:
        return self.materialize().numpy(force=force)

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyTensor:
        """A new tensor of this one's current value (a traced copy, computed at the next
        sync), with its ``requires_grad``, and its gradient or parameter mark; torch's own
        deep copy copied the lazy state itself (a storage whose value no sync computes,
        or a worker's lock)."""
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            copied = self.clone()
        copied.requires_grad_(self.requires_grad)
        memo[id(self)] = copied
        if getattr(self, "_is_param", False):  # as Parameter.__deepcopy__: no gradient
            copied._is_param = True  # type: ignore[attr-defined]
        elif self.is_leaf and self.grad is not None:  # as Tensor.__deepcopy__
            copied.grad = copy.deepcopy(self.grad, memo)
        return copied

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled (``torch.save``, ``copy.deepcopy`` through pickling) as torch pickles
        a tensor of a backend without host storage: its host value, rebuilt on the
        device it was saved from, or where ``torch.load``'s ``map_location`` says. A
        parameter moved by ``module.mncore()`` (a lazy tensor marked ``_is_param``)
        stays a parameter, as ``Parameter.__reduce_ex__`` keeps one."""
        if getattr(self, "_is_param", False):
            return (torch._utils._rebuild_parameter,
                    (self.detach(), self.requires_grad, OrderedDict()))
        return (torch._utils._rebuild_device_tensor_from_cpu_tensor,
                (self.materialize(), self.dtype, str(self.device), self.requires_grad))

    @property
    def data(self) -> torch.Tensor:
        return _DATA.__get__(self)

    @data.setter
    def data(self, value: torch.Tensor) -> None:
        """``p.data = value``: ``p`` now sees ``value``'s storage (its shape, strides
        and dtype too), as eager's ``set_data``; torch's own setter changes only the
        metadata of a wrapper tensor, so it kept its old value without an error."""
        if not isinstance(value, LazyTensor):
            raise LazyError(f"`.data =` of a tensor on {value.device} to one on the "
                            f"{DEVICE_NAME} device: move it first (.mncore()), at "
                            f"{describe_location(user_location())}")
        _DATA.__set__(self, value)
        self._storage_, self._views, self._sig = value._storage_, value._views, value._sig
        self._cache = None

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func: torch._ops.OpOverload, types: Any,
                           args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
                           ) -> Any:
        runtime = _ACTIVE or active()
        try:
            return runtime.dispatch(func, args, kwargs or {})
        except Exception as error:
            if threading.current_thread() is threading.main_thread():
                raise
            # autograd runs a device's backward on its own C++ thread, where an
            # exception aborts the process: keep it for the next sync or read.
            return runtime.defer(error, func, args, kwargs or {})


# ---------------------------------------------------------------------- the active runtime


class Dispatcher(Protocol):
    """What lazy tensors need of the runtime (``lazy_runtime.Runtime``), which
    :func:`activate` installs: this module is below it and does not import it."""

    def dispatch(self, func: torch._ops.OpOverload, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any: ...

    def defer(self, error: Exception, func: torch._ops.OpOverload, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any: ...

    def read(self, tensor: Any, fallback: bool = False) -> torch.Tensor: ...


_ACTIVE: Dispatcher | None = None


def activate(runtime: Dispatcher) -> None:
    """Make ``runtime`` the one every lazy tensor's ops go to."""
    global _ACTIVE
    _ACTIVE = runtime


def current() -> Dispatcher | None:
    """The active runtime, if ``torch_mncore.init`` started one."""
    return _ACTIVE


def active() -> Dispatcher:
    """The active runtime, which ``torch_mncore.init`` starts: without it there is no
    device to run on (no silent default that a later ``init`` would replace)."""
    if _ACTIVE is None:
        where = describe_location(user_location())
        raise LazyError(f"torch_mncore is not initialised at {where}: call "
                        "torch_mncore.init(device=...) (or init_cpu(), init_mncore(), "
                        "init_cuda()) before using the mncore device")
    return _ACTIVE


def wrap(value: Value, meta: torch.Tensor) -> LazyTensor:
    """A new tensor owning a new storage that holds ``value``."""
    return LazyTensor(LazyStorage(value), (), meta)


def from_cpu(tensor: torch.Tensor) -> LazyTensor:
    """Transfer a host tensor to the device (a copy: later host writes do not show).
    The device holds dense (strided) tensors only."""
    if tensor.layout != torch.strided:
        raise LazyError(f"a {tensor.layout} tensor cannot move to the {DEVICE_NAME} device "
                        f"(it holds dense tensors: call .to_dense() first), at "
                        f"{describe_location(user_location())}")
    data = tensor.detach().contiguous().clone()
    return wrap(DeviceData(data.shape, data.dtype, data), _meta_like(data))


def uploaded(tensor: torch.Tensor) -> LazyTensor:
    """A host tensor an op on the device reads, copied there; refused if autograd would
    have to carry its gradient back across the devices (its backward failed inside
    autograd's engine with an internal assertion), as eager refuses mixing devices."""
    if tensor.requires_grad and torch.is_grad_enabled():
        raise LazyError(f"a host tensor that requires grad (shape {list(tensor.shape)}) is "
                        f"used in an op on the {DEVICE_NAME} device: move it there first "
                        f"(x.mncore(), or module.mncore() for a module's parameters), at "
                        f"{describe_location(user_location())}")
    return from_cpu(tensor)


_SCALAR_METAS: dict[torch.dtype, torch.Tensor] = {}


def scalar_meta(dtype: torch.dtype) -> torch.Tensor:
    """A 0-d meta tensor of ``dtype`` (one per dtype: tensors key on its identity)."""
    meta = _SCALAR_METAS.get(dtype)
    if meta is None:
        meta = _SCALAR_METAS[dtype] = torch.empty((), dtype=dtype, device="meta")
    return meta


def meta_of(sig: tuple[tuple[int, ...], tuple[int, ...], torch.dtype]) -> torch.Tensor:
    """The meta tensor of a signature (shape, strides, dtype), one per signature: meta
    tensors are read, never written (an op's meta kernel gets fresh ones)."""
    meta = _METAS.get(sig)
    if meta is None:
        meta = torch.empty_strided(sig[0], sig[1], dtype=sig[2], device="meta")
        if len(_METAS) < 100_000:
            _METAS[sig] = meta
    return meta


def _meta_like(t: torch.Tensor) -> torch.Tensor:
    return meta_of((tuple(t.shape), t.stride(), t.dtype))
