"""torch.distributed on lazy tensors.

``dist.all_reduce(t)`` and the other process-group calls reach dispatch as ``c10d``
ops, whose schemas declare no mutation although they write their tensors: run as an
ordinary host fallback, they wrote host copies and the device tensors kept their old
values (an all-reduce that returned without reducing). Here each runs through the
process group on the tensors' host values, after every graph traced before it has run
(collectives meet in program order on every rank), is waited for, and writes its outputs
back into the device tensors. The functional collectives (``_c10d_functional``) are
recorded into the step's graph instead (``aten_collectives``); those the importer
lacks run on the host, waited for before any value crosses back.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends.lazy_tensor import (
    LazyError,
    LazyTensor,
    _meta_like,
)
from mncore_ir.frontends.lazy_where import describe_location, user_location


class Tracer(Protocol):
    """What this module needs of the lazy tracer (``lazy_trace.Tracer``, which calls
    it: it cannot import that module back)."""

    metrics: Any

    def _pure(self, what: str) -> None: ...

    def sync(self, wait: bool = False, reason: str | None = None) -> None: ...

    def read(self, tensor: Any, fallback: bool = False) -> torch.Tensor: ...

    def _assign(self, out: LazyTensor, result: torch.Tensor, meta: torch.Tensor | None
                ) -> None: ...


#: The arguments of c10d's ops that the op writes (every op not named here, and
#: ``send``, only reads its tensors).
WRITTEN = frozenset({"tensors", "output_tensors", "output_tensor", "output", "outputs",
                     "output_lists"})
READ_ONLY = frozenset({"send", "barrier", "monitored_barrier_", "check_for_nan"})
KNOWN = frozenset({"allreduce_", "allreduce_coalesced_", "broadcast_", "reduce_", "recv_",
                   "recv_any_source_", "allgather_", "allgather_coalesced_",
                   "allgather_into_tensor_coalesced_", "_allgather_base_", "reduce_scatter_",
                   "_reduce_scatter_base_", "reduce_scatter_tensor_coalesced_", "scatter_",
                   "gather_", "alltoall_", "alltoall_base_"}) | READ_ONLY


def is_process_group_op(func: torch._ops.OpOverload) -> bool:
    return func.namespace == "c10d"


def run_process_group_op(tracer: Tracer, func: torch._ops.OpOverload, args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Any:
    """``func`` through its process group on host copies of the device tensors, waited
    for; the tensors it writes get the results; its returned tensors are the device
    tensors it wrote (or new device tensors)."""
    name = func._schema.name.split("::")[1]
    if name not in KNOWN:
        raise LazyError(f"{func} on mncore tensors is not supported, at "
                        f"{describe_location(user_location())}: move the tensors to the "
                        "host first (tensor.cpu())")
    tracer._pure(f"{func} communicates")
    tracer.metrics.counters[f"Collective::{func}"] += 1
    # Collectives must reach the process group in program order on every rank: the
    # graphs traced so far (which may hold recorded collectives) run first, and no
    # graph runs on the worker thread while this one communicates.
    tracer.sync(wait=True, reason=f"{func} at {describe_location(user_location())}")
    host_args, host_kwargs = pytree.tree_map(  # copies: the op writes them
        lambda x: tracer.read(x, fallback=True).clone() if isinstance(x, LazyTensor) else x,
        (args, kwargs))
    out = func(*host_args, **host_kwargs)
    for work in pytree.tree_leaves(out):  # the op's Work, done before the values are read
        if not isinstance(work, torch.Tensor) and hasattr(work, "wait"):
            work.wait()
    written: dict[int, LazyTensor] = {}
    if name not in READ_ONLY:
        for i, arg in enumerate(func._schema.arguments):
            if arg.name not in WRITTEN:
                continue
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            host = host_args[i] if i < len(args) else host_kwargs.get(arg.name)
            for target, result in zip(pytree.tree_leaves(value), pytree.tree_leaves(host),
                                      strict=True):
                if isinstance(target, LazyTensor):
                    tracer._assign(target, result, _meta_like(result))
                    written[id(result)] = target
    return pytree.tree_map(
        lambda x: written.get(id(x), x) if isinstance(x, torch.Tensor) else x, out)


#: Ops that wait for a collective's value or wrap it for waiting: a recorded
#: collective's value is ready when the graph computes it.
READY = frozenset({"wait_tensor", "_wrap_tensor_autograd"})


def is_ready_op(func: torch._ops.OpOverload) -> bool:
    return func.namespace == "_c10d_functional" and func._opname in READY


def ready(func: torch._ops.OpOverload, value: LazyTensor) -> Any:
    """``wait_tensor``: the value itself; ``_wrap_tensor_autograd``: wrapped as eager
    wraps it (an ``AsyncCollectiveTensor``, whose ``wait()`` user code calls)."""
    if func._opname == "wait_tensor":
        return value
    from torch.distributed._functional_collectives import AsyncCollectiveTensor

    return AsyncCollectiveTensor(value)


def waited(out: Any) -> Any:
    """A functional collective's outputs, waited for (a host fallback's results are read
    at once)."""
    wait = torch.ops._c10d_functional.wait_tensor.default
    return pytree.tree_map(lambda x: wait(x) if isinstance(x, torch.Tensor) else x, out)
