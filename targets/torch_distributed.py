"""The graph level's collectives through ``torch.distributed``: the engine of real
multi-process runs (``torchrun``; gloo on CPUs, NCCL where GPUs are). The cpu device's
generated code calls these functions; the interp device's interpreter reaches them
through :class:`ProcessGroupRanks`. Meaning is the IR's (``graph.all_reduce``,
``graph.all_gather``, ``graph.reduce_scatter``: dim 0, rank order), whatever a backend
supports: ``avg`` is a sum divided by the group's size (gloo has no average), and a
reduce-scatter on gloo is an all-reduce of which the rank keeps its part."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

functional = torch.ops._c10d_functional


def _group(name: str, size: int) -> dist.ProcessGroup:
    """The process group ``name`` (as functional collectives name groups), checked
    against the size the IR was compiled for."""
    if not dist.is_initialized():
        raise RuntimeError("a collective needs torch.distributed: call "
                           "torch.distributed.init_process_group first (or run under torchrun)")
    group = dist.distributed_c10d._resolve_process_group(name)
    if group.size() != size:
        raise RuntimeError(f"process group {name!r} has {group.size()} ranks; the graph was "
                           f"compiled for {size}")
    return group


def all_reduce(x: torch.Tensor, reduce: str, group: str, size: int) -> torch.Tensor:
    _group(group, size)
    engine_reduce = "sum" if reduce == "avg" else reduce
    out = functional.wait_tensor(functional.all_reduce(x.contiguous(), engine_reduce, group))
    if reduce != "avg":
        return out
    return out / size if out.is_floating_point() else out // size


def all_gather(x: torch.Tensor, group: str, size: int) -> torch.Tensor:
    _group(group, size)
    return functional.wait_tensor(
        functional.all_gather_into_tensor(x.contiguous(), size, group))


def reduce_scatter(x: torch.Tensor, reduce: str, group: str, size: int) -> torch.Tensor:
    process_group = _group(group, size)
    if reduce == "avg" or dist.get_backend(process_group) == "gloo":
        total = all_reduce(x, reduce, group, size)
        return total.chunk(size)[dist.get_rank(process_group)].clone()
    return functional.wait_tensor(
        functional.reduce_scatter_tensor(x.contiguous(), reduce, size, group))


class ProcessGroupRanks:
    """The interpreter's communicator (``graph_interpreter.Communicator``) in a real
    multi-process run: numpy values through the functions above."""

    def all_reduce(self, x: np.ndarray, reduce: str, group: str, size: int) -> np.ndarray:
        return all_reduce(torch.from_numpy(np.array(x)), reduce, group, size).numpy()

    def all_gather(self, x: np.ndarray, group: str, size: int) -> np.ndarray:
        return all_gather(torch.from_numpy(np.array(x)), group, size).numpy()

    def reduce_scatter(self, x: np.ndarray, reduce: str, group: str, size: int
                       ) -> np.ndarray:
        return reduce_scatter(torch.from_numpy(np.array(x)), reduce, group, size).numpy()
