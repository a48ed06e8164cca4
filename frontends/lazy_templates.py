"""Decompositions traced once per signature and replayed as one node: the first call of
a decomposed op with given input signatures runs torch's decomposition on placeholder
tensors and keeps the nodes it records as a :class:`Template`; every call then records
one node whose op is the template, with no Python decomposition, dispatch or shape
inference. A compile expands the template into its nodes (core ATen, shapes known), as
an eager replay of the step runs them. A training step thus records what the importer
takes at the cost of recording the composite ops whole.

A template stands for the decomposition only where that is exact: a decomposition that
reads a value, draws random numbers, runs an op on the host, writes into an input or
returns a view of one is not kept, and runs again at every call."""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_ops import importable
from mncore_ir.frontends.lazy_tensor import (
    DeviceData,
    Item,
    LazyStorage,
    LazyTensor,
    Node,
    Placeholder,
    Scalar,
    Value,
)
from mncore_ir.frontends.lazy_where import user_location

#: Templates kept at most (each holds a decomposition's nodes): past it, decompositions
#: run at every call, as they do with no template.
LIMIT = 20_000


class NotPure(Exception):
    """Raised inside a capture by what a template cannot stand for (a read of a value,
    a random factory, a host op): the decomposition then runs on the real inputs."""


class Recorder(Protocol):
    """What a capture needs of the tracer (``lazy_trace.Tracer``)."""

    pending: list[weakref.ref[LazyStorage]]
    capturing: int


class _Ref:
    """The template's value number ``index``: an argument of its node, or a step."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"%{self.index}"


class _ItemRef:
    """Output ``item`` of the multi-output value numbered ``index``."""

    __slots__ = ("index", "item")

    def __init__(self, index: int, item: int) -> None:
        self.index, self.item = index, item

    def __repr__(self) -> str:
        return f"%{self.index}#{self.item}"


def _build(arg: Any, env: list[Any], item: Callable[[Any, int], Any]) -> Any:
    kind = type(arg)
    if kind is _Ref:
        return env[arg.index]
    if kind is _ItemRef:
        return item(env[arg.index], arg.item)
    if kind is list or kind is tuple:
        return kind(_build(a, env, item) for a in arg)
    return arg


Step = tuple[Any, tuple[Any, ...], dict[str, Any], Any]
"""``(op, args, kwargs, meta)``; ``op`` is an ATen op or a nested :class:`Template`."""


@dataclass(eq=False)
class Template:
    """The nodes a decomposition records, over numbered values: the node's arguments
    first (the inputs, by their keys, then a hoisted scalar per slot, then device
    buffers a factory made), then the steps in topological order. ``results`` are the values of the
    node's outputs; the node's meta is their metadata (a tuple when there are several).
    ``key`` names the template's structure in graph keys: templates that differ only
    in the values of hoisted scalars share it, as their graphs do."""

    op: Any  # the ATen op decomposed, or the name of an assume_pure function
    inputs: tuple[Any, ...]
    scalars: tuple[Scalar, ...]
    constants: tuple[DeviceData, ...]
    steps: tuple[Step, ...]
    results: tuple[Any, ...]
    meta: Any
    outputs: tuple[Any, ...]
    spec: pytree.TreeSpec
    key: Any = field(init=False)
    importable: bool = field(init=False)

    def __post_init__(self) -> None:
        structure = repr((self.inputs, [s.dtype for s in self.scalars],
                          [(c.shape, c.dtype) for c in self.constants],
                          [(lt.node_key(op, (), k) if not isinstance(op, Template) else op.key,
                            args, meta_repr(m)) for op, args, k, m in self.steps],
                          self.results))
        self.key = ("template", self.op,
                    hashlib.blake2b(structure.encode(), digest_size=16).hexdigest())
        self.importable = all(step[0].importable if isinstance(step[0], Template)
                              else importable(step[0]) for step in self.steps)

    def __repr__(self) -> str:
        return f"<template of {self.op} ({len(self.steps)} ops)>"

    @property
    def __name__(self) -> str:  # what FX and messages print for a node's op
        return f"template_{getattr(self.op, '__name__', self.op)}"

    def record(self, recorder: Recorder, values: Sequence[Value]) -> Any:
        """The decomposition's outputs for inputs holding ``values``: one node at the
        user's current line."""
        args = (*values, *[Scalar(s.value, s.dtype) for s in self.scalars], *self.constants)
        node = Node(self, args, {}, self.meta, user_location(), self.key)
        several = len(self.results) > 1
        storages: list[LazyStorage] = []
        leaves = []
        for out in self.outputs:
            if type(out) is not _Output:
                leaves.append(out)
                continue
            if out.result == len(storages):
                value = Item(node, out.result, self.meta[out.result]) if several else node
                storages.append(LazyStorage(value))
                recorder.pending.append(weakref.ref(storages[-1]))
            leaves.append(LazyTensor(storages[out.result], (), out.meta))
        if self.spec.is_leaf():
            return leaves[0]
        return pytree.tree_unflatten(leaves, self.spec)

    def expand(self, args: Sequence[Any], call: Callable[[Step, tuple[Any, ...]], Any],
               item: Callable[[Any, int], Any]) -> Any:
        """Run the steps on ``args`` (whatever stands for the node's arguments):
        ``call(step, step_args)`` for each ATen op, nested templates expanded alike.
        Returns the result, or a tuple of them."""
        env = list(args)
        for step in self.steps:
            op, step_args = step[0], tuple(_build(a, env, item) for a in step[1])
            env.append(op.expand(step_args, call, item) if type(op) is Template
                       else call(step, step_args))
        results = tuple(_build(r, env, item) for r in self.results)
        return results if len(results) > 1 else results[0]

    def __call__(self, *args: Any) -> Any:
        """The decomposition run eagerly (the worker's replay that finds a failing op)."""
        return self.expand(args, lambda step, a: step[0](*a, **step[2]),
                           lambda value, i: value[i])


def meta_repr(meta: Any) -> Any:
    """A step's output metadata as part of a template's structure."""
    if isinstance(meta, torch.Tensor):
        return (tuple(meta.shape), meta.stride(), meta.dtype)
    if isinstance(meta, list | tuple):
        return tuple(meta_repr(m) for m in meta)
    return meta


@dataclass(frozen=True, slots=True)
class _Output:
    """A tensor output: which of the node's results it holds (outputs that were one
    tensor in the capture stay one tensor) and its metadata."""

    result: int
    meta: torch.Tensor


# ---------------------------------------------------------------------- signatures


class _Uncacheable(Exception):
    """An argument no template may stand for (a host tensor: its contents are data)."""


def signature(args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> tuple[tuple[Any, ...], list[Value]] | None:
    """The key of a call's template and its inputs' values (each distinct value once),
    or None when no template may stand for the call. A tensor is keyed by its
    signature, which distinct value it holds (so ``x * x`` differs from ``x * y``) and
    whether that value is a device buffer (nodes key their inputs' kinds)."""
    keys: list[Any] = []
    values: list[Value] = []
    seen: dict[int, int] = {}
    try:
        for a in args:
            _walk(a, keys, values, seen)
        for name, a in kwargs.items():
            keys.append(name)
            _walk(a, keys, values, seen)
    except _Uncacheable:
        return None
    return tuple(keys), values


def _walk(x: Any, keys: list[Any], values: list[Value], seen: dict[int, int]) -> None:
    kind = type(x)
    if kind is LazyTensor:
        value = x.value() if x._views else x._storage_.value
        index = seen.get(id(value))
        if index is None:
            index = seen[id(value)] = len(values)
            values.append(value)
        keys.append((x._sig, index, _is_data(value)))
    elif kind is list or kind is tuple:
        keys.append((kind, len(x)))
        for y in x:
            _walk(y, keys, values, seen)
    elif isinstance(x, torch.Tensor):
        raise _Uncacheable
    else:
        keys.append(lt.meta_key(x))


def _is_data(value: Value) -> bool:
    kind = type(value)
    return kind is DeviceData or (kind is Placeholder and value.data)


# ---------------------------------------------------------------------- capture


def capture(recorder: Recorder, op: Any, decomposition: Callable[..., Any],
            args: tuple[Any, ...], kwargs: dict[str, Any], values: Sequence[Value]
            ) -> Template | None:
    """Run ``decomposition`` on placeholders standing for ``values`` and keep what it
    records, or None where a template would not be exact (see the module's docstring)."""
    holders = [Placeholder(lt.value_key(v), _meta_of(v), _is_data(v)) for v in values]
    by_value = {id(v): holder for v, holder in zip(values, holders, strict=True)}
    storages: dict[int, LazyStorage] = {}

    def stand_in(x: Any) -> Any:
        if type(x) is not LazyTensor:
            return x
        holder = by_value[id(x.value() if x._views else x._storage_.value)]
        storage = storages.get(id(holder))
        if storage is None:
            storage = storages[id(holder)] = LazyStorage(holder)
        return LazyTensor(storage, (), x.meta())

    stand_ins = pytree.tree_map(stand_in, (args, kwargs))
    first_input = lt.created()
    pending = len(recorder.pending)
    recorder.capturing += 1
    try:
        out = decomposition(*stand_ins[0], **stand_ins[1])
    except Exception:
        return None
    finally:
        recorder.capturing -= 1
        del recorder.pending[pending:]  # the stand-ins' storages: never graph outputs
    if any(s.version or type(s.value) is not Placeholder for s in storages.values()):
        return None  # the decomposition wrote into an input
    inputs = {id(s) for s in storages.values()}
    leaves, spec = pytree.tree_flatten(out)
    tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    if any(type(t) is not LazyTensor or id(t._storage_) in inputs for t in tensors):
        return None  # a host tensor, or an alias of an input
    viewed = [t for t in tensors if t._views]
    if len({id(t._storage_) for t in tensors}) < len(tensors) and viewed:
        return None  # outputs that alias each other through a view
    # a view of the decomposition's own value (a gradient made by a transpose) is
    # private to it: the output is a new tensor holding the view's value
    leaves = [lt.wrap(leaf.value(), leaf.meta()) if type(leaf) is LazyTensor and leaf._views
              else leaf for leaf in leaves]
    return _compile(op, holders, leaves, spec, first_input)


def _meta_of(value: Value) -> torch.Tensor:
    if isinstance(value, DeviceData):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    return value.meta


def _compile(op: Any, holders: list[Placeholder], leaves: list[Any],
             spec: pytree.TreeSpec, first_input: int) -> Template | None:
    """The nodes the outputs depend on, in topological order (iteratively:
    decompositions can be long), numbered after the node's arguments. A graph input
    older than the capture (``serial < first_input``: a parameter an ``assume_pure``
    function reads from outside, its value now) would be frozen into the template:
    none is kept then."""
    nodes: list[Node] = []
    scalars: dict[int, Scalar] = {}
    constants: dict[int, DeviceData] = {}
    seen: set[int] = {id(h) for h in holders}
    roots = [leaf._storage_.value for leaf in leaves if type(leaf) is LazyTensor]
    stack: list[tuple[Any, bool]] = [(v, False) for v in roots]
    while stack:
        x, done = stack.pop()
        kind = type(x)
        if kind is Item:
            x, kind = x.node, Node
        elif kind is list or kind is tuple:
            stack.extend((y, False) for y in x)
            continue
        if (kind is Scalar or kind is DeviceData) and x.serial < first_input:
            return None  # state read from outside the arguments
        if kind is Scalar:
            scalars.setdefault(id(x), x)
        elif kind is DeviceData:
            constants.setdefault(id(x), x)
        elif kind is Placeholder and id(x) not in seen:
            return None  # another capture's stand-in: cannot happen, but never keep it
        if kind is not Node or id(x) in seen:
            continue
        if done:
            if any(isinstance(v, Node | Item | Placeholder | Scalar | DeviceData | torch.Tensor)
                   for v in x.kwargs.values()):
                return None  # a tensor as keyword argument: not numbered
            seen.add(id(x))
            nodes.append(x)
        else:
            stack.append((x, True))
            stack.extend((a, False) for a in x.args)
    index: dict[int, int] = {}
    for value in (*holders, *scalars.values(), *constants.values(), *nodes):
        index[id(value)] = len(index)

    def ref(v: Any) -> Any:
        kind = type(v)
        if kind is Item:
            return _ItemRef(index[id(v.node)], v.index)
        if kind is Node or kind is Placeholder or kind is Scalar or kind is DeviceData:
            return _Ref(index[id(v)])
        if kind is list or kind is tuple:
            return kind(ref(a) for a in v)
        return v  # a constant argument

    steps = tuple((n.op, tuple(ref(a) for a in n.args), n.kwargs, n.meta) for n in nodes)
    results: list[Any] = []
    groups: dict[int, int] = {}
    outputs: list[Any] = []
    metas: list[Any] = []
    for leaf in leaves:
        if type(leaf) is not LazyTensor:
            outputs.append(leaf)
            continue
        group = groups.get(id(leaf._storage_))
        if group is None:
            group = groups[id(leaf._storage_)] = len(results)
            value = leaf._storage_.value
            results.append(ref(value))
            metas.append(value.meta if type(value) is not DeviceData else leaf.meta())
        outputs.append(_Output(group, leaf.meta()))
    if not results:
        return None  # no tensor out: nothing to record
    return Template(op, tuple(h.key for h in holders), tuple(scalars.values()),
                    tuple(constants.values()), steps, tuple(results),
                    tuple(metas) if len(metas) > 1 else metas[0], tuple(outputs), spec)
