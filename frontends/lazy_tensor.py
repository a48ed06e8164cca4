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
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

import torch
from torch.utils import _pytree as pytree

aten = torch.ops.aten
DEVICE_NAME = "mncore"
_DEVICE: torch.device | None = None  # set by ensure_backend, after the rename

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


@dataclass(eq=False, slots=True)
class Node:
    """One functional ATen op; ``meta`` is its output as meta tensor(s)."""

    op: torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    meta: Any
    where: str = ""
    key: Any = None
    """The op with its inputs' signatures and constant arguments (see ``node_key``)."""
    operands: tuple[Any, ...] = ()
    """The graph values among ``args`` and ``kwargs``, in order (what a cut walks)."""

    def __post_init__(self) -> None:
        if self.key is None:
            self.key = node_key(self.op, self.args, self.kwargs)
        operands: list[Any] = []
        _collect_values(self.args, operands)
        _collect_values(self.kwargs.values(), operands)
        self.operands = tuple(operands)


@dataclass(eq=False, slots=True)
class Item:
    """Output ``index`` of a multi-output node."""

    node: Node
    index: int
    meta: Any = None


def _collect_values(args: Any, into: list[Any]) -> None:
    """Append the graph values (nodes, their items, buffers, hoisted scalars) in
    ``args``, looking into lists and tuples."""
    for a in args:
        if isinstance(a, _GRAPH_VALUES):
            into.append(a)
        elif isinstance(a, list | tuple):
            _collect_values(a, into)


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


# ---------------------------------------------------------------------- shape inference

_META_CACHE: dict[tuple[Any, ...], Any] = {}
#: Signatures of meta tensors (mostly the shape cache's, which live as long as it).
_SIGS: dict[int, tuple[torch.Tensor, tuple[Any, ...]]] = {}


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
    return (op, tuple(value_key(a) for a in args), meta_key(tuple(sorted(kwargs.items()))))


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
    if isinstance(x, LazyTensor):
        return x.meta()
    if isinstance(x, torch.Tensor) and x.device.type != "meta":
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x


def _run_meta(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    meta_args, meta_kwargs = pytree.tree_map(_to_meta, (args, kwargs))
    if "device" in meta_kwargs:
        meta_kwargs["device"] = "meta"
    return op(*meta_args, **meta_kwargs)


def infer_meta(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``op`` on meta tensors, cached on (op, input metadata): the meta kernels are
    slow (100-250 µs) and training steps repeat the same calls."""
    key = (op, meta_key(args), meta_key(tuple(sorted(kwargs.items()))))
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


# ---------------------------------------------------------------------- source lines

_TORCH_DIR = os.path.dirname(torch.__file__)
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))
_INTERNAL: dict[Any, bool] = {}


def user_location() -> str:
    """``file:line: code`` of the innermost frame outside torch and this package."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        internal = _INTERNAL.get(code)
        if internal is None:
            name = code.co_filename
            module = frame.f_globals.get("__name__", "")
            internal = name.startswith((_TORCH_DIR, _OWN_DIR, "<")) or module.startswith(
                ("torch_mncore", "mncore_ir.frontends"))
            _INTERNAL[code] = internal
        if not internal:
            return f'File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}'
        frame = frame.f_back
    return ""


def describe_location(where: str) -> str:
    """``path:line`` and the source line, for error messages."""
    import linecache
    import re

    m = re.match(r'File "([^"]+)", line (\d+)', where)
    if not m:
        return "<unknown source line>"
    path, line = m.group(1), int(m.group(2))
    return f"{path}:{line}: {linecache.getline(path, line).strip()}"


# ---------------------------------------------------------------------- the tensor

_DATA = torch._C.TensorBase.data  # torch's property, which LazyTensor.data extends


class LazyTensor(torch.Tensor):
    """A tensor on the ``mncore`` device: its value is a storage seen through views."""

    _storage_: LazyStorage
    _views: tuple[ViewStep, ...]
    _cache: tuple[int, Value] | None
    _sig: tuple[tuple[int, ...], tuple[int, ...], torch.dtype]

    @staticmethod
    def __new__(cls, storage: LazyStorage, views: tuple[ViewStep, ...], meta: torch.Tensor,
                requires_grad: bool = False) -> LazyTensor:
        r = torch.Tensor._make_wrapper_subclass(
            cls, meta.shape, strides=meta.stride(), dtype=meta.dtype,
            device=_DEVICE, requires_grad=requires_grad)
        r._storage_ = storage
        r._views = views
        r._cache = None
        sig = _SIGS.get(id(meta))
        if sig is None or sig[0] is not meta:
            sig = (meta, (tuple(meta.shape), meta.stride(), meta.dtype))
            if len(_SIGS) < 100_000:
                _SIGS[id(meta)] = sig
        r._sig = sig[1]
        return r

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return f"LazyTensor({self.materialize()!r}, device='{DEVICE_NAME}:0')"

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
            value = Node(step.op, (value, *step.args), dict(step.kwargs),
                         infer_meta(step.op, (step.base_meta, *step.args), dict(step.kwargs)))
        self._cache = (storage.version, value)
        return value

    def meta(self) -> torch.Tensor:
        return torch.empty_strided(self.shape, self.stride(), dtype=self.dtype, device="meta")

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


_SCALAR_METAS: dict[torch.dtype, torch.Tensor] = {}


def scalar_meta(dtype: torch.dtype) -> torch.Tensor:
    """A 0-d meta tensor of ``dtype`` (one per dtype: tensors key on its identity)."""
    meta = _SCALAR_METAS.get(dtype)
    if meta is None:
        meta = _SCALAR_METAS[dtype] = torch.empty((), dtype=dtype, device="meta")
    return meta


def _meta_like(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


# ---------------------------------------------------------------------- backend setup

_SETUP_LOCK = threading.Lock()
_SET_UP = False


def ensure_backend() -> None:
    """Rename PrivateUse1 to ``mncore`` (once per process) and route its factories here,
    so ``.mncore()``, ``.to("mncore")`` and ``torch.zeros(..., device="mncore")`` work."""
    global _SET_UP
    with _SETUP_LOCK:
        if _SET_UP:
            return
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

        if torch._C._get_privateuse1_backend_name() == "privateuseone":
            _setup_privateuseone_for_python_backend(DEVICE_NAME)
        elif torch._C._get_privateuse1_backend_name() != DEVICE_NAME:
            raise RuntimeError("PrivateUse1 is already renamed to "
                               f"{torch._C._get_privateuse1_backend_name()!r}")
        global _DEVICE
        _DEVICE = torch.device(DEVICE_NAME, 0)
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("empty.memory_format", _empty, "PrivateUse1")
        lib.impl("empty_strided", _empty_strided, "PrivateUse1")
        # torch.tensor(..., device=), indexing with lists and other C++ paths copy to
        # the device with Python dispatch excluded: they reach the backend's kernels.
        # Every other factory (arange, eye, the windows, tril_indices, ...) is the
        # runtime's to record or make on the host, not a composite kernel's that
        # writes through an out= kernel or calls a CPU-only stub with device tensors.
        for name in ("_copy_from", "_copy_from_and_resize", *_factory_names()):
            lib.impl(name, _runtime_kernel(name), "PrivateUse1")
        # above autograd: the composite kernel would refuse a device tensor first
        lib.impl("tensor_split.tensor_indices_or_sections", _tensor_split,
                 "AutogradPrivateUse1")
        _LIBRARIES.append(lib)
        from mncore_ir.frontends import lazy_autocast

        lazy_autocast.register(getattr(torch, DEVICE_NAME))
        _SET_UP = True


_LIBRARIES: list[Any] = []


def _tensor_split(x: torch.Tensor, split: torch.Tensor, dim: int = 0) -> list[torch.Tensor]:
    """``tensor_split`` at split points held by a tensor: its values read to the host
    (as ``.tolist()`` would; CUDA refuses a device tensor here), the split traced."""
    points = split.cpu()
    if points.dim() == 0:
        return torch.ops.aten.tensor_split.sections(x, int(points.item()), dim)
    return torch.ops.aten.tensor_split.indices(x, points.tolist(), dim)


def _empty(size: Sequence[int], dtype: torch.dtype | None = None, layout: Any = None,
           device: Any = None, pin_memory: Any = None, memory_format: Any = None
           ) -> LazyTensor:
    return from_cpu(torch.zeros(size, dtype=dtype or torch.get_default_dtype()))


def _empty_strided(size: Sequence[int], stride: Sequence[int], dtype: torch.dtype | None = None,
                   layout: Any = None, device: Any = None, pin_memory: Any = None) -> LazyTensor:
    return _empty(size, dtype)


def _factory_names() -> list[str]:
    """ATen's factories the dispatcher has: overloads with a keyword-only ``device``,
    no tensor inputs and one tensor result (less the two device allocators above)."""
    names = []
    for schema in torch._C._jit_get_all_schemas():
        qualified = f"{schema.name}.{schema.overload_name}".rstrip(".")
        namespace, name = qualified.split("::")
        if (namespace == "aten" and name not in ("empty.memory_format", "empty_strided")
                and [str(r.type) for r in schema.returns] == ["Tensor"]
                and any(a.name == "device" and a.kwarg_only for a in schema.arguments)
                and not any("Tensor" in str(a.type) for a in schema.arguments)
                and torch._C._dispatch_has_kernel(qualified)):
            names.append(name)
    return names


def _runtime_kernel(name: str) -> Any:
    """The backend's kernel of the ATen op ``name``: the runtime's dispatch."""
    packet, _, overload = name.partition(".")
    op = getattr(getattr(aten, packet), overload or "default")

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return LazyTensor.__torch_dispatch__(op, (), args, kwargs)

    return kernel
