"""The ``mncore`` backend in PyTorch: PrivateUse1 renamed, and the kernels the
dispatcher reaches without Python dispatch (device allocation, copies to the device,
factories) routed to the lazy runtime."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import torch
from torch._decomp import decomposition_table

from mncore_ir.frontends.lazy_tensor import (
    DEVICE_NAME,
    DeviceData,
    LazyError,
    LazyTensor,
    _meta_like,
    active,
    from_cpu,
    set_device,
    wrap,
)
from mncore_ir.frontends.resampling_decompositions import RESAMPLING

aten = torch.ops.aten

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
            setattr(torch.Tensor, DEVICE_NAME, _transfer(getattr(torch.Tensor, DEVICE_NAME)))
        elif torch._C._get_privateuse1_backend_name() != DEVICE_NAME:
            raise RuntimeError("PrivateUse1 is already renamed to "
                               f"{torch._C._get_privateuse1_backend_name()!r}")
        set_device(torch.device(DEVICE_NAME, 0))
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
        lib.impl("one_hot", _one_hot, "AutogradPrivateUse1")
        lib.impl("set_.source_Tensor", _set_to, "AutogradPrivateUse1")
        lib.impl("floor_divide", _floor_divide, "AutogradPrivateUse1")
        lib.impl("floor_divide_.Tensor", _floor_divide_, "AutogradPrivateUse1")
        torch.serialization.register_package(18, lambda storage: None, _restore_location)
        # above autograd: resampling as its decomposition (indices, products), whose
        # backward autograd derives; the fused backward kernels have no decomposition
        for op in RESAMPLING:
            lib.impl(op.name().removeprefix("aten::"), decomposition_table[op],
                     "AutogradPrivateUse1")
        _LIBRARIES.append(lib)
        from mncore_ir.frontends import lazy_autocast

        lazy_autocast.register(getattr(torch, DEVICE_NAME))
        _SET_UP = True


_LIBRARIES: list[Any] = []


def _transfer(to_device: Any) -> Any:
    """``Tensor.mncore()`` (``to_device``, as PyTorch generates it): a plain host tensor
    that needs no gradient becomes a device buffer with one copy (``from_cpu``), where
    ``.to()`` allocates a zeroed device tensor and records a copy into it (64x64 f32:
    55.7 against 10.5 us; 768x1024: 333 against 134 us); anything else goes the way
    of ``.to()``."""

    def mncore(self: torch.Tensor, device: Any = None, non_blocking: bool = False,
               **kwargs: Any) -> torch.Tensor:
        if (device is None and not kwargs and type(self) is torch.Tensor
                and self.device.type == "cpu" and not self.requires_grad
                and not self.is_conj() and not self.is_neg()):  # (lazy bits: .to() resolves)
            active()  # refused before init, as .to() is
            return from_cpu(self)
        return to_device(self, device, non_blocking, **kwargs)

    mncore.__name__ = mncore.__qualname__ = DEVICE_NAME
    mncore.__doc__ = to_device.__doc__
    return mncore


_AUTOGRAD_CHECKED: set[int] = set()


def reach_autograd() -> None:
    """Make sure autograd can run this device's backward on the calling thread (once
    per thread). PyTorch's engine sizes its per-device queues at the process's first
    backward: after a backward on the host before ``import torch_mncore``, it has no
    queue for this device and every backward here failed on an internal assertion. A
    one-element backward finds out; then this thread runs backward itself
    (``torch.autograd.set_multithreading_enabled(False)``, as the host does)."""
    thread = threading.get_ident()
    if thread in _AUTOGRAD_CHECKED:
        return
    _AUTOGRAD_CHECKED.add(thread)
    try:
        with torch.inference_mode(False), torch.enable_grad():
            leaf = torch.zeros(1, device=DEVICE_NAME, requires_grad=True)
            torch.autograd.backward(leaf, torch.ones(1, device=DEVICE_NAME))
    except RuntimeError as error:
        if "device_ready_queues_" not in str(error):
            raise
        torch._C._set_multithreading_enabled(False)


def _restore_location(storage: Any, location: str) -> None:
    """``torch.load(..., map_location="mncore")``: a clear error (the device holds no
    storages for torch to fill; torch's own path failed on the backend module)."""
    if location == DEVICE_NAME or location.startswith(f"{DEVICE_NAME}:"):
        raise LazyError(f"torch.load cannot map storages to the {DEVICE_NAME} device: load "
                        "with map_location='cpu', then move the tensors (.mncore()) or load "
                        "the state dict into a model already on the device")


_META_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)


def _set_to(target: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """``target.set_(source)``: ``target`` becomes an alias of ``source`` (its storage
    and view chain, shape and strides), as eager's shares the storage; what
    ``register_parametrization``'s ``right_inverse`` does to a module on the device."""
    if not isinstance(source, LazyTensor) or not isinstance(target, LazyTensor):
        raise LazyError(f"set_ needs two tensors on the {DEVICE_NAME} device (move the "
                        "other one first: .mncore())")
    if source.dtype != target.dtype:
        raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of "
                           f"type {target.dtype}")
    aten.set_.source_Storage_storage_offset.redispatch(
        _META_KEYS, target, target.untyped_storage(), 0, source.shape, source.stride())
    target._storage_, target._views = source._storage_, source._views
    target._sig, target._cache = source._sig, source._cache
    return target


def _floor_divide(x: torch.Tensor, other: Any) -> torch.Tensor:
    """``x // y`` as eager's kernel computes it, a division rounded down with a number
    at its own value (torch's reference, traced otherwise, rounds the number to the
    tensor's type first: ``bf16 // 0.3`` divided by 0.30078125)."""
    return torch.div(x, other, rounding_mode="floor")


def _floor_divide_(x: torch.Tensor, other: Any) -> torch.Tensor:
    return x.div_(other, rounding_mode="floor")


def _one_hot(x: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """``one_hot`` as eager's CUDA kernel computes it, a scatter of ones, so that a class
    out of range is refused when the graph runs (torch's kernel for this device compares
    with ``arange``, which gives such a class a row of zeros)."""
    if x.dtype != torch.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if x.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max().item()) + 1  # eager reads it back too
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    out = torch.zeros((*x.shape, num_classes), dtype=torch.int64, device=x.device)
    return out.scatter_(-1, x.unsqueeze(-1), 1) if x.numel() else out


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
    data = torch.zeros(size, dtype=dtype or torch.get_default_dtype())  # no copy: it is new
    return wrap(DeviceData(data.shape, data.dtype, data), _meta_like(data))


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
