"""Ops the compiler cannot take, run eagerly on the host as they are traced (counted
as ``CpuFallback::<op>``): their device arguments are read, and what they write and
return goes back to the device."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends import lazy_collectives
from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_tensor import LazyError, LazyTensor
from mncore_ir.frontends.lazy_where import describe_location, user_location


def run_on_host(tracer: Any, func: torch._ops.OpOverload, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """Run an op the compiler cannot take eagerly on the host, counted."""
    tracer._pure(f"{func} runs on the host")
    tracer.metrics.counters[f"CpuFallback::{func}"] += 1
    host_args, host_kwargs = pytree.tree_map(
        lambda x: tracer.read(x, fallback=True).clone() if isinstance(x, LazyTensor) else x,
        (args, kwargs))
    out = func(*host_args, **host_kwargs)
    if func.namespace == "_c10d_functional":
        out = lazy_collectives.waited(out)
    written: dict[int, LazyTensor] = {}  # host tensor's id -> the device tensor
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        target, host = ((args[i], host_args[i]) if i < len(args)
                        else (kwargs.get(arg.name), host_kwargs.get(arg.name)))
        # a list of tensors is written element by element (``_foreach_add_``)
        pairs = zip(target, host, strict=True) if isinstance(target, list | tuple) \
            else [(target, host)]
        for device, written_host in pairs:
            if isinstance(device, LazyTensor):
                tracer._assign(device, written_host, lt._meta_like(written_host))
                written[id(written_host)] = device

    def to_device(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        if x.is_nested:
            raise LazyError(
                f"{func} returns a nested tensor, which the device does not hold (torch.nn's "
                "transformer layers take this path in eval mode with a key padding mask: "
                "build nn.TransformerEncoder with enable_nested_tensor=False, or call "
                f"torch.backends.mha.set_fastpath_enabled(False)), at "
                f"{describe_location(user_location())}")
        target = written.get(id(x))  # a returned out or self: the device tensor
        return lt.from_cpu(x) if target is None else target

    if func is torch.ops.aten._pack_padded_sequence.default:  # batch sizes stay on the host,
        return to_device(out[0]), out[1]  # as PackedSequence requires
    return pytree.tree_map(to_device, out)
