"""torch_mncore: run PyTorch code on the ``mncore`` device by changing three lines.

    import torch_mncore
    torch_mncore.init_cpu()            # or init(device="interp"), init_mncore(), ...
    model = Model().mncore()
    ...
    torch_mncore.sync()                # at the end of each step

Ops on ``mncore`` tensors are traced, not run; ``sync()`` compiles the step's graph
(cached by structure) and runs it asynchronously. The runtime lives in
``mncore_ir.frontends.lazy_runtime``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import torch
from torch import nn

from mncore_ir.frontends import lazy_profile as _profile
from mncore_ir.frontends import lazy_runtime as _rt
from mncore_ir.frontends.lazy_backend import ensure_backend as _ensure_backend
from mncore_ir.frontends.lazy_loader import DeviceLoader
from mncore_ir.frontends.lazy_names import name_inputs as _name_inputs
from mncore_ir.frontends.lazy_pure import assume_pure
from mncore_ir.frontends.lazy_runtime import (
    DEVICES,
    ImplicitSyncError,
    LazyError,
)
from mncore_ir.frontends.lazy_tensor import DEVICE_NAME as _DEVICE_NAME
from mncore_ir.frontends.lazy_tensor import LazyTensor as _LazyTensor
from mncore_ir.frontends.lazy_tensor import current as _current_runtime

# The device must exist before autograd's engine first runs: it sizes its per-device
# queues once. So importing torch_mncore registers it.
_ensure_backend()

_M = TypeVar("_M", bound=nn.Module)


def _check_swappable(module: nn.Module, where: str) -> None:
    """Refuse, before anything moves, a module whose parameter (or gradient) a live
    autograd graph also holds (an output of an earlier forward): torch's swap fails on
    it halfway through the module, with an internal message."""
    for name, param in module.named_parameters():
        for tensor, what in ((param, name), (param.grad, f"{name}.grad")):
            if tensor is not None and tensor._use_count() > 2:
                raise LazyError(
                    f"cannot move {what} {where}: a live autograd graph also holds it (an "
                    "output of an earlier forward, not run under torch.no_grad()); delete "
                    "or detach that output first, or move a copy (copy.deepcopy)")


@contextlib.contextmanager
def _swapping_parameters() -> Iterator[None]:
    """Make ``nn.Module._apply`` move parameters by ``torch.utils.swap_tensors``.

    ``module.to("cuda")`` keeps each ``Parameter`` object (it sets ``param.data``), so
    tied weights stay tied and optimizers built earlier still hold the model's
    parameters. ``.data =`` cannot turn a CPU tensor into a lazy tensor (a wrapper
    subclass), and ``_apply`` then makes a new ``Parameter`` per module, untying shared
    ones; swapping keeps the object and gives it the moved contents instead.
    """
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        yield
    finally:
        torch.__future__.set_swap_module_params_on_conversion(before)


def _module_mncore(self: _M, device: int | torch.device | None = None) -> _M:
    """Move all parameters and buffers to the ``mncore`` device, in place, keeping
    parameter identity as ``.to("cuda")`` does."""
    _check_swappable(self, f"to the {_DEVICE_NAME} device")
    with _swapping_parameters():
        moved = self._apply(lambda t: t.mncore(device))
    _name_module(moved)
    return moved


def _name_module(module: nn.Module) -> None:
    """Name the module's tensors as graph inputs (``model.0.weight``: dumps read so)."""
    _name_inputs((f"model.{name}", t) for name, t in (*module.named_parameters(),
                                                       *module.named_buffers())
                 if isinstance(t, _LazyTensor))


# torch's own method (not a wrapper of an earlier import of this module)
_TORCH_MODULE_TO = getattr(nn.Module.to, "_mncore_wraps", nn.Module.to)


_TORCH_MODULE_CPU = getattr(nn.Module.cpu, "_mncore_wraps", nn.Module.cpu)


def _on_the_device(module: nn.Module) -> bool:
    return any(isinstance(t, _LazyTensor) for t in (*module.parameters(), *module.buffers()))


@functools.wraps(_TORCH_MODULE_TO)
def _module_to(self: _M, *args: Any, **kwargs: Any) -> _M:
    # nn.Module.to, keeping parameter identity when the target is the mncore device or
    # the module leaves it (as moves between CUDA and the host keep it)
    device = torch._C._nn._parse_to(*args, **kwargs)[0]
    if device is None or (device.type != _DEVICE_NAME and not _on_the_device(self)):
        return _TORCH_MODULE_TO(self, *args, **kwargs)
    _check_swappable(self, f"to {device}")
    with _swapping_parameters():
        moved = _TORCH_MODULE_TO(self, *args, **kwargs)
    if device.type == _DEVICE_NAME:
        _name_module(moved)
    return moved


@functools.wraps(_TORCH_MODULE_CPU)
def _module_cpu(self: _M) -> _M:
    # nn.Module.cpu, keeping parameter identity when the module leaves the device: an
    # optimizer built earlier still holds its parameters
    if not _on_the_device(self):
        return _TORCH_MODULE_CPU(self)
    _check_swappable(self, "to the host")
    with _swapping_parameters():
        return _TORCH_MODULE_CPU(self)


# torch's classes do not declare these attributes: set them as attributes, not fields
setattr(_module_to, "_mncore_wraps", _TORCH_MODULE_TO)  # noqa: B010
setattr(_module_cpu, "_mncore_wraps", _TORCH_MODULE_CPU)  # noqa: B010
setattr(nn.Module, "mncore", _module_mncore)  # noqa: B010
setattr(nn.Module, "to", _module_to)  # noqa: B010
setattr(nn.Module, "cpu", _module_cpu)  # noqa: B010

__all__ = [
    "DEVICES",
    "DeviceLoader",
    "ImplicitSyncError",
    "LazyError",
    "assume_pure",
    "counter_names",
    "counter_value",
    "counters",
    "init",
    "init_cpu",
    "init_cuda",
    "init_mncore",
    "metric_data",
    "metric_names",
    "metrics_report",
    "optimizer_step",
    "profile",
    "reset_metrics",
    "set_implicit_sync",
    "short_metrics_report",
    "sync",
    "wait_device_ops",
]


def init(device: str = "cpu", implicit_sync: str | None = None, asynchronous: bool = True,
         gate: bool = True, host_fallback: bool = True, device_threads: int = 1) -> None:
    """Select the device that runs compiled graphs.

    ``device``: ``"cpu"`` (generated torch CPU code, the default), ``"interp"`` (the
    reference interpreter), ``"task"`` (the megakernel simulator), ``"triton"`` (the
    Triton megakernel: on a GPU, or in Triton's interpreter without one) or
    ``"mncore"`` (a static program for the machine ``$MNCORE_MACHINE``, default
    ``tiny``, run by the cycle simulator). ``implicit_sync``: what reading a value before
    ``sync()`` does — ``"error"``, ``"warn"`` (default, or ``$MNCORE_IMPLICIT_SYNC``) or
    ``"silent"``.
    ``asynchronous=False`` runs each graph inside ``sync()``; ``gate=False`` lets tracing
    resume before the worker has prepared its inputs (for measurements).
    ``host_fallback``: what the device cannot compile (an op, a form of one, a dtype)
    runs eagerly on the host, in the parts of the step it needs, counted as
    ``CpuFallback::<op>``; ``False`` makes it a :class:`LazyError` naming the op and
    line instead (``MNCORE_DEBUG=1`` lists the host ops and why).
    ``device_threads``: the intra-op threads of the worker thread that runs graphs
    asynchronously (default 1). More threads speed up large graphs on the host devices, but
    while the worker lives, the host's own small parallel ops (the user's eager code)
    slow down wherever the threads outnumber the cores: OpenMP's idle threads then
    sleep, and each parallel op pays a wake-up.

    Call it before anything else uses the device: ``sync()``, ``.mncore()`` and the rest
    raise :class:`LazyError` until then. Calling it again switches device: what was
    traced is first run on the old device and waited for, so tensors keep their values;
    if that fails, the error is raised and the device is not switched.
    """
    _rt.init(device, implicit_sync, asynchronous, gate, host_fallback, device_threads)


def init_cpu(**options: Any) -> None:
    init("cpu", **options)


def init_mncore(**options: Any) -> None:
    init("mncore", **options)


def init_cuda(**options: Any) -> None:
    """The GPU path is the Triton megakernel device."""
    init("triton", **options)


def sync(wait: bool = False) -> None:
    """End a step: compile the traced graph (cached) and submit it to the device."""
    _rt.runtime().sync(wait=wait)


def wait_device_ops() -> None:
    """Wait until everything submitted has run (raises its error, if one failed)."""
    _rt.runtime().wait()


def set_implicit_sync(policy: str) -> None:
    if policy not in _rt.POLICIES:
        raise LazyError(f"implicit-sync policy must be one of {_rt.POLICIES}, not {policy!r}")
    _rt.runtime().implicit_sync = policy


# ---------------------------------------------------------------------- metrics
# torch_xla.debug.metrics' functions, over the runtime's counters and timers


def metrics_report() -> str:
    """Every counter, every timer (samples, total, mean, 50/90/99th percentiles) and the
    live device buffers."""
    return _rt.runtime().metrics.report()


def short_metrics_report(counter_names: Sequence[str] | None = None,
                         metric_names: Sequence[str] | None = None) -> str:
    """The few lines that say whether a loop runs well: ops traced, compiles cached and
    not, executions, implicit syncs, CPU fallbacks by op, compile and execute times; or
    the counters and timers named."""
    return _rt.runtime().metrics.short_report(counter_names, metric_names)


def counters() -> dict[str, int]:
    return _rt.runtime().metrics.snapshot()


def counter_names() -> list[str]:
    """The counters counted so far (since ``reset_metrics()``)."""
    return sorted(counters())


def counter_value(name: str) -> int | None:
    """A counter's value; ``None`` if it has not been counted (as torch_xla)."""
    return counters().get(name)


def metric_names() -> list[str]:
    """The timers that have samples: ``CompileTime``, ``SyncTime``, ``ExecuteTime``,
    ``TransferToDeviceTime`` (``DeviceLoader``)."""
    return sorted(_rt.runtime().metrics.timers())


def metric_data(name: str) -> tuple[int, float, list[tuple[float, float]]]:
    """A timer's (sample count, total seconds, samples as (wall time, seconds)); a
    ``LazyError`` listing the timers when ``name`` has no samples."""
    return _rt.runtime().metrics.data(name)


def reset_metrics() -> None:
    _rt.runtime().metrics.clear()


# ---------------------------------------------------------------------- training helpers


def optimizer_step(optimizer: torch.optim.Optimizer, barrier: bool = False,
                   optimizer_args: dict[str, Any] | None = None) -> Any:
    """``optimizer.step(**optimizer_args)``, then with ``barrier`` a ``sync()`` (as
    ``xm.optimizer_step``); returns what the step returns (the loss of a closure)."""
    result = optimizer.step(**(optimizer_args or {}))
    if barrier:
        sync()
    return result


@contextlib.contextmanager
def profile(path: str | os.PathLike[str]) -> Iterator[None]:
    """Record what the runtime does inside the block — each step's tracing, syncs,
    compiles (graph key, op count, cached or not), the worker's executions, the waits
    of the user's thread — and write it to ``path`` as Chrome trace JSON for Perfetto
    (ui.perfetto.dev) when the block ends, also by an exception. The graphs submitted
    by then are waited for, so their executions are in it."""
    current = _current_runtime()
    traced_ops = current.metrics.traced_ops if isinstance(current, _rt.Runtime) else None
    with _profile.recording(path, drain=_rt.drain, traced_ops=traced_ops):
        yield
