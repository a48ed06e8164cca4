"""The host fallback at compile time: a step whose graph holds nodes the device cannot
take (an op the importer has no mapping for, a form of one it refuses, a dtype the
device lacks, or a part its pipeline cannot lower) still runs. The largest subgraphs
the device takes are compiled; the other nodes run eagerly on the host with torch; values
cross between them as they must. torch.fx's ``CapabilityBasedPartitioner`` draws the
parts, so a device part never depends on a host node that depends on it."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from mncore_ir.frontends import lazy_collectives
from mncore_ir.frontends.fx_importer import user_frame

Run = Callable[[Sequence[torch.Tensor]], Sequence[torch.Tensor]]


@dataclass(frozen=True)
class HostOp:
    """A node that runs on the host, why, and the user's line that made it."""

    op: str
    why: str
    line: str

    def describe(self) -> str:
        return f"{self.op} at {self.line}: {self.why}"


def host_op(node: fx.Node, why: BaseException | str) -> HostOp:
    text = why if isinstance(why, str) else (str(why) or type(why).__name__)
    text = text.splitlines()[0] if text else ""
    line = user_frame(node.meta.get("stack_trace"))
    return HostOp(str(node.target), text.removesuffix(f" at {line}"), line)


class _Takes(OperatorSupportBase):
    """The device takes every call but the failed ones; a tuple's ``getitem`` goes
    where the tuple is made."""

    def __init__(self, failed: set[str]) -> None:
        self.failed = failed

    def is_node_supported(self, submodules: Any, node: fx.Node) -> bool:
        if node.op != "call_function" or node.name in self.failed:
            return False
        if node.target is operator.getitem:
            return self.is_node_supported(submodules, node.args[0])
        return True


@dataclass
class Parts:
    """The step as parts: ``module`` calls each device part as a submodule named in
    ``device`` and runs the rest eagerly; ``host`` are its host nodes."""

    module: fx.GraphModule
    device: list[str]
    host: list[HostOp] = field(default_factory=list)


def split(graph: fx.Graph, failures: dict[str, BaseException]) -> Parts:
    """Cut a copy of ``graph`` into the device's parts and host nodes, given the nodes
    (by name) the device cannot take, and why."""
    copy = fx.Graph()
    copy.output(copy.graph_copy(graph, {}))  # node names and meta are kept
    module = fx.GraphModule(torch.nn.Module(), copy)
    partitioner = CapabilityBasedPartitioner(module, _Takes(set(failures)),
                                             allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions(),
                                        prefix="device_part_")
    device = [n.target for n in fused.graph.nodes if n.op == "call_module"]
    host = [host_op(node, failures.get(node.name, "it reads a value the device lacks"))
            for node in fused.graph.nodes
            if node.op == "call_function" and node.target is not operator.getitem]
    return Parts(fused, device, host)


def _wait_for_collectives(graph: fx.Graph) -> bool:
    """Make the functional collectives of ``graph`` wait for their values; whether
    there were any."""
    found = False
    for node in graph.nodes:
        if node.op == "call_function" and getattr(node.target, "namespace", None) == \
                "_c10d_functional":
            node.target, found = _waiting(node.target), True
    return found


def _waiting(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """A functional collective run on the host, waited for before its value crosses to
    the device (which reads it at once)."""
    def run(*args: Any, **kwargs: Any) -> Any:
        return lazy_collectives.waited(op(*args, **kwargs))

    run.__name__ = f"waited_{op._opname}"
    return run


def blamed_nodes(error: BaseException, origins: dict[Any, str]) -> set[str]:
    """The nodes (by name) that made the IR op ``error`` (or an error it was raised
    from) blames: the op's own node, else every node that made an op of the same
    kind at the same source line (a pass may have cloned it), else none."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        op = getattr(cause, "op", None)
        if op is not None and hasattr(op, "walk"):
            if op in origins:
                return {origins[op]}
            kinds = {(inner.name, inner.location) for inner in op.walk()}
            found = {node for made, node in origins.items()
                     if (made.name, made.location) in kinds}
            if found:
                return found
        cause = getattr(cause, "cause", None) or cause.__cause__ or cause.__context__
    return set()


def placeholders(module: fx.GraphModule) -> list[fx.Node]:
    return [n for n in module.graph.nodes if n.op == "placeholder"]


def returns_one(module: fx.GraphModule) -> bool:
    """Whether the fused part returns its one value bare (not in a tuple)."""
    return not isinstance(module.graph.output_node().args[0], tuple | list)


class OnDevice(torch.nn.Module):
    """A device part in the host's module: its compiled executable on host tensors."""

    def __init__(self, run: Run, one: bool) -> None:
        super().__init__()
        self.run = run
        self.one = one

    def forward(self, *args: torch.Tensor) -> Any:
        outs = self.run([a.contiguous() for a in args])
        return outs[0] if self.one else tuple(outs)


class PartsRun:
    """Runs a step's parts in order; counts each host op per run as ``CpuFallback``
    (what the runtime's ``take_counts`` hook collects), with the device parts' own
    counts (a simulator's cycles)."""

    def __init__(self, module: fx.GraphModule, host_ops: Sequence[str],
                 device_runs: Sequence[Run]) -> None:
        for inner in module.modules():  # the step and the parts that run on the host
            if isinstance(inner, fx.GraphModule) and _wait_for_collectives(inner.graph):
                inner.recompile()
        self.module = module
        self.per_run = Counter(f"CpuFallback::{op}" for op in host_ops)
        self.device_runs = list(device_runs)
        self.counts: Counter[str] = Counter()

    def __call__(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outs = self.module(*args)
        self.counts.update(self.per_run)
        return list(outs)

    def take_counts(self) -> Counter[str]:
        counts, self.counts = self.counts, Counter()
        for run in self.device_runs:
            take = getattr(run, "take_counts", None)
            if take is not None:
                counts.update(take())
        return counts
