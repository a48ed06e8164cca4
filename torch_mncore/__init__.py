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

from mncore_ir.frontends import lazy_runtime as _rt
from mncore_ir.frontends.lazy_runtime import (
    DEVICES,
    ImplicitSyncError,
    LazyError,
)
from mncore_ir.frontends.lazy_tensor import ensure_backend as _ensure_backend

# The device must exist before autograd's engine first runs: it sizes its per-device
# queues once. So importing torch_mncore registers it.
_ensure_backend()

__all__ = [
    "DEVICES",
    "ImplicitSyncError",
    "LazyError",
    "counters",
    "init",
    "init_cpu",
    "init_cuda",
    "init_mncore",
    "metrics_report",
    "reset_metrics",
    "set_implicit_sync",
    "sync",
    "wait_device_ops",
]


def init(device: str = "cpu", implicit_sync: str | None = None, asynchronous: bool = True,
         gate: bool = True) -> None:
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
    """
    _rt.init(device, implicit_sync, asynchronous, gate)


def init_cpu(**options: object) -> None:
    init("cpu", **options)  # type: ignore[arg-type]


def init_mncore(**options: object) -> None:
    init("mncore", **options)  # type: ignore[arg-type]


def init_cuda(**options: object) -> None:
    """The GPU path is the Triton megakernel device."""
    init("triton", **options)  # type: ignore[arg-type]


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


def metrics_report() -> str:
    return _rt.runtime().metrics.report()


def counters() -> dict[str, int]:
    return _rt.runtime().metrics.snapshot()


def reset_metrics() -> None:
    _rt.runtime().metrics.clear()
