"""A step as a graph: the part of the trace its outputs need, cut in a topological
order with its structure (the compile cache's key), replayed node by node, and written
as an FX graph of ATen calls for the importer (no shapes inferred again)."""

from __future__ import annotations

import hashlib
import linecache
import operator
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from mncore_ir.frontends.lazy_disk_cache import COMPILER_VERSION
from mncore_ir.frontends.lazy_templates import Template
from mncore_ir.frontends.lazy_tensor import DeviceData, Item, Node, Scalar


@dataclass(eq=False)
class TraceGraph:
    """The part of the trace the outputs need, in a topological order. ``structure``
    is its cache key: ops, constants, shapes and dtypes, how values flow, and the kinds
    of inputs; never the values of data or hoisted scalars."""

    nodes: list[Node]
    inputs: list[DeviceData | Scalar]
    outputs: list[Node | Item]
    structure: tuple[Any, ...]

    @property
    def key(self) -> str:
        """A stable digest of ``structure`` (Python's ``hash`` is salted per process),
        for the on-disk cache and dumps."""
        text = repr(self.structure) + COMPILER_VERSION
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


_VALUES = (Node, DeviceData, Scalar)


def cut(outputs: Sequence[Any]) -> TraceGraph:
    """Collect the nodes ``outputs`` depend on, in topological order, and their
    structure (one pass, iterative: traces are long). Each node is walked through its
    ``operands``, collected when it was recorded: a step's sync walks every node."""
    index: dict[int, int] = {}
    nodes: list[Node] = []
    inputs: list[DeviceData | Scalar] = []
    parts: list[Any] = []

    def ref(v: Any) -> Any:
        if type(v) is Item:
            return (index[id(v.node)], v.index)
        return index[id(v)]

    values: list[Any] = []
    _flatten(outputs, values)
    stack: list[Any] = values[::-1]
    while stack:
        x = stack.pop()
        kind = type(x)
        if kind is tuple:  # (node,): its operands are done
            node = x[0]
            index[id(node)] = len(nodes)
            nodes.append(node)
            parts.append((node.key, tuple([ref(o) for o in node.operands])))
            continue
        if kind is Item:
            x = x.node
        if id(x) in index:
            continue
        if kind is DeviceData or kind is Scalar:
            index[id(x)] = -1 - len(inputs)
            inputs.append(x)
            parts.append((x.shape, x.dtype) if kind is DeviceData else x.dtype)
        else:
            stack.append((x,))
            stack.extend(x.operands[::-1])
    parts.append(tuple(ref(v) for v in values))
    return TraceGraph(nodes, inputs, list(outputs), tuple(parts))


def unshared_inputs(graph: TraceGraph) -> frozenset[int]:
    """The indices of the device buffers among ``graph``'s inputs that nothing but the
    graph holds: no tensor, view, template, later trace or other queued graph can read
    them again, so its execution may write into them (XLA's buffer donation). Exact,
    not a guess: a buffer's reference count must equal the references found in the
    graph (its inputs list, and each distinct container in its nodes' arguments), so
    anything else that holds it keeps it."""
    found = {id(x): 0 for x in graph.inputs if type(x) is DeviceData}
    if not found:
        return frozenset()
    seen: set[int] = set()

    def count(container: Any) -> None:
        if id(container) in seen:
            return
        seen.add(id(container))
        for v in container.values() if type(container) is dict else container:
            if type(v) is DeviceData:
                if id(v) in found:
                    found[id(v)] += 1
            elif type(v) is tuple or type(v) is list or type(v) is dict:
                count(v)

    for node in graph.nodes:  # operands are collected from args and kwargs: a node
        if any(type(v) is DeviceData for v in node.operands):  # without one has none
            count(node.args)
            count(node.kwargs)
            count(node.operands)
    inputs = graph.inputs
    count(inputs)
    # sys.getrefcount sees one more, its argument (no loop variable may hold the buffer)
    return frozenset(i for i in range(len(inputs)) if type(inputs[i]) is DeviceData
                     and sys.getrefcount(inputs[i]) - 1 == found[id(inputs[i])])


def _flatten(outputs: Any, into: list[Any]) -> None:
    for v in outputs:
        if isinstance(v, list | tuple):
            _flatten(v, into)
        elif isinstance(v, (*_VALUES, Item)):
            into.append(v)


def replay(graph: TraceGraph, leaves: Sequence[Any],
           apply: Callable[[Node, tuple[Any, ...], dict[str, Any]], Any],
           item: Callable[[Any, int], Any]) -> Callable[[Any], Any]:
    """Walk the trace in order: ``apply(node, args, kwargs)`` with the node's graph
    values replaced by what earlier calls returned (``leaves`` for the inputs, ``item``
    for an output of a multi-output node). Returns the mapping of graph values."""
    env: dict[int, Any] = {id(x): leaf for x, leaf in zip(graph.inputs, leaves, strict=True)}

    def arg(v: Any) -> Any:
        if isinstance(v, Item):
            return item(env[id(v.node)], v.index)
        if isinstance(v, _VALUES):
            return env[id(v)]
        if isinstance(v, list | tuple):
            return type(v)(arg(x) for x in v)
        return v

    for node in graph.nodes:
        env[id(node)] = apply(node, arg(node.args), {k: arg(v) for k, v in node.kwargs.items()})
    return arg


def fx_graph(graph: TraceGraph) -> fx.Graph:
    """The trace as an FX graph of ATen calls, node for node: each keeps its user source
    line and its record-time output metadata as ``meta["val"]``, what the importer's
    handlers read (no shapes are inferred again)."""
    g = fx.Graph()

    def call(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stack_trace = _stack_trace(node.where)
        if type(node.op) is Template:  # its nodes, each at the template node's line
            return node.op.expand(args, lambda step, a: aten_call(step[0], a, step[2],
                                                                  step[3], stack_trace), item)
        return aten_call(node.op, args, kwargs, node.meta, stack_trace)

    def aten_call(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: Any,
                  stack_trace: str) -> fx.Node:
        fx_node = g.call_function(op, args, kwargs)
        fx_node.meta["val"] = meta
        fx_node.meta["stack_trace"] = stack_trace
        return fx_node

    def item(multi: Any, index: int) -> fx.Node:
        if type(multi) is tuple:  # the results of an expanded template
            return multi[index]
        fx_node = g.call_function(operator.getitem, (multi, index))
        fx_node.meta["val"] = multi.meta["val"][index]
        return fx_node

    placeholders = []
    for i, meta in enumerate(input_metas(graph)):
        placeholder = g.placeholder(f"in{i}")
        placeholder.meta["val"] = meta
        placeholders.append(placeholder)
    arg = replay(graph, placeholders, call, item)
    g.output(tuple(arg(v) for v in graph.outputs))
    return g


def to_fx(graph: TraceGraph) -> fx.GraphModule:
    """:func:`fx_graph` as a module, for :func:`to_core_aten`'s re-trace."""
    return fx.GraphModule(torch.nn.Module(), fx_graph(graph))


def _stack_trace(where: str) -> str:
    m = re.match(r'File "([^"]+)", line (\d+)', where)
    if not m:
        return ""
    return f"{where}\n    {linecache.getline(m.group(1), int(m.group(2))).strip()}"


def example_inputs(graph: TraceGraph) -> list[torch.Tensor]:
    return [torch.zeros(x.shape, dtype=x.dtype) if isinstance(x, DeviceData)
            else torch.zeros((), dtype=x.dtype) for x in graph.inputs]


def input_metas(graph: TraceGraph) -> list[torch.Tensor]:
    """The inputs as meta tensors (a hoisted scalar is a 0-d tensor)."""
    return [torch.empty(x.shape if isinstance(x, DeviceData) else (), dtype=x.dtype,
                        device="meta") for x in graph.inputs]
