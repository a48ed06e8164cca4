"""torch.distributed's functional collectives (``torch.ops._c10d_functional``: what
``make_fx``, DTensor and ``torch.distributed._functional_collectives`` produce) as the
graph level's collectives. A collective's value is ready when the graph op is done,
so ``wait_tensor`` is the identity. The group keeps its torch.distributed name, and its
size is read from the group when the op does not carry it."""

from __future__ import annotations

from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.frontends.aten_handlers import handles
from mncore_ir.frontends.fx_importer import FxImporter, unsupported

functional = torch.ops._c10d_functional


def _group_name(node: fx.Node, group: Any) -> str:
    if not isinstance(group, str):
        raise unsupported(node, f"a process group given as {type(group).__name__}, not "
                                "by name, is not supported")
    return group


def _group_size(node: fx.Node, name: str) -> int:
    import torch.distributed as dist

    try:
        return dist.distributed_c10d._resolve_process_group(name).size()
    except Exception as error:  # no such group in this process
        raise unsupported(node, f"process group {name!r} is unknown here ({error}): "
                                "initialise torch.distributed before importing") from None


def _reduction(node: fx.Node, reduce: Any) -> str:
    reduce = str(reduce).lower()
    if reduce not in g.COLLECTIVE_REDUCTIONS:
        raise unsupported(node, f"reduction {reduce!r} is not supported; reductions: "
                                f"{', '.join(g.COLLECTIVE_REDUCTIONS)}")
    return reduce


@handles(functional.all_reduce.default)
def _all_reduce(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, reduce, group = node.args[:3]
    name = _group_name(node, group)
    return imp.insert(g.AllReduceOp(imp.value(x), reduce=_reduction(node, reduce), group=name,
                                    group_size=_group_size(node, name)))


@handles(functional.all_gather_into_tensor.default)
def _all_gather(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, size, group = node.args[:3]
    return imp.insert(g.AllGatherOp(imp.value(x), group=_group_name(node, group),
                                    group_size=int(size)))


@handles(functional.reduce_scatter_tensor.default)
def _reduce_scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, reduce, size, group = node.args[:4]
    return imp.insert(g.ReduceScatterOp(imp.value(x), reduce=_reduction(node, reduce),
                                        group=_group_name(node, group), group_size=int(size)))


@handles(functional.wait_tensor.default)
def _wait(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.value(node.args[0])
