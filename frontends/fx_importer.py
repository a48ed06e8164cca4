"""The FX importer: builds one ``func.func`` of the graph dialect from a core-ATen FX
graph with xDSL's ``Builder``, one node at a time through a table of handlers (ATen op
-> graph ops, in :mod:`mncore_ir.frontends.aten_handlers`). Every op it inserts is
located at the user's source line of its node, so a later error that blames the op
names that line."""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import fx
from torch.utils import _pytree as pytree
from xdsl.builder import Builder
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FunctionType,
    IntAttr,
    LocationAttr,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mncore_ir.dialects import graph as g

TORCH_TO_ELEMENT = {getattr(torch, name): typ for name, typ in g.ELEMENT_TYPES.items()}


class FxImportError(Exception):
    """Base of import failures."""


class UnsupportedOpError(FxImportError):
    """An ATen op (or a form of one) the importer has no mapping for."""


def unsupported(node: fx.Node, what: str) -> UnsupportedOpError:
    """``what`` at the user's source line of ``node``."""
    return UnsupportedOpError(f"{what} at {user_frame(node.meta.get('stack_trace'))}")


def _user_frame(stack_trace: str | None) -> tuple[str, str, str] | None:
    """The last frame of ``stack_trace`` outside torch (where the user's code called):
    path, line and code."""
    if not stack_trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+), in \S+\n\s*(.*)', stack_trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    return user[-1] if user else None


def user_frame(stack_trace: str | None) -> str:
    """``path:line: code`` of the last frame of ``stack_trace`` outside torch."""
    frame = _user_frame(stack_trace)
    if frame is None:
        return "<unknown source line>"
    path, line, code = frame
    return f"{path}:{line}: {code.strip()}"


def source_position(op: Operation) -> FileLineColLoc | None:
    """Where the user wrote ``op``: its location, else that of the first op nested in
    it that has one (a task's body), as the importer set them."""
    for inner in op.walk():
        if isinstance(inner.location, FileLineColLoc):
            return inner.location
    return None


def describe_position(position: FileLineColLoc) -> str:
    """``path:line: code`` of a source position, for error messages."""
    path, line = position.filename.data, position.line.data
    return f"{path}:{line}: {linecache.getline(path, line).strip()}"


def sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.$-]", "_", name)
    return name if re.match(r"[A-Za-z_]", name) else f"v{name}"


def _input_type(t: Any, name: str) -> TensorType:
    if not isinstance(t, torch.Tensor):
        raise FxImportError(f"input {name} is not a tensor: {t!r}")
    if t.dtype not in TORCH_TO_ELEMENT:
        raise UnsupportedOpError(f"input {name}: dtype {t.dtype} is not supported")
    return g.tensor(t.shape, TORCH_TO_ELEMENT[t.dtype])


Handler = Callable[["FxImporter", fx.Node], Any]


class FxImporter:
    """Builds one ``func.func`` from an FX graph, node by node. A bare ``fx.Graph``
    will do (its nodes' ``meta["val"]`` give shapes): the lazy runtime builds one
    straight from its trace, with no ``GraphModule`` code generation."""

    def __init__(self, gm: fx.GraphModule | fx.Graph, example_inputs: Sequence[torch.Tensor],
                 func_name: str, arg_names: Sequence[str] | None,
                 handlers: Mapping[Any, Handler]) -> None:
        self.graph = gm if isinstance(gm, fx.Graph) else gm.graph
        self.handlers = handlers
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise FxImportError(f"the graph has {len(placeholders)} inputs but "
                               f"{len(example_inputs)} example inputs were given")
        names = list(arg_names or [n.name for n in placeholders])
        types = [_input_type(t, name) for t, name in zip(example_inputs, names, strict=True)]
        self.block = Block(arg_types=types)
        # every op inserted is located at the user's line of the node being imported
        self.builder = Builder(InsertPoint.at_end(self.block),
                               operation_insertion_handler=[self._locate])
        self.location: LocationAttr = UnknownLoc()
        self._locations: dict[str, LocationAttr] = {}
        self.env: dict[fx.Node, Any] = {}
        for node, arg, name in zip(placeholders, self.block.args, names, strict=True):
            arg.name_hint = sanitize(name)
            self.env[node] = arg
        self.func_name = func_name
        self.node: fx.Node | None = None

    def run(self) -> FuncOp:
        outputs: list[SSAValue] = []
        for node in self.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs = [self.value(v) for v in pytree.tree_leaves(node.args[0])]
                continue
            if node.op != "call_function":
                raise unsupported(node, f"FX node kind {node.op!r} ({node.name}) is not supported")
            self.location = self._location_of(node)
            handler = self.handlers.get(node.target)
            if handler is None:
                raise unsupported(node, f"unsupported ATen op {node.target}")
            self.env[node] = handler(self, node)
        self.builder.insert(ReturnOp(*outputs))
        ftype = FunctionType.from_lists([a.type for a in self.block.args],
                                        [o.type for o in outputs])
        return FuncOp(self.func_name, ftype, Region(self.block))

    # ------------------------------------------------------------------ helpers

    def value(self, arg: Any) -> SSAValue:
        if not isinstance(arg, fx.Node):
            raise FxImportError(f"expected a tensor, got {arg!r} in {self.node}")
        v = self.env[arg]
        if not isinstance(v, SSAValue):
            raise FxImportError(f"{arg.name} is not a single tensor")
        return v

    def meta(self, arg: Any) -> Any:
        return arg.meta["val"] if isinstance(arg, fx.Node) else arg

    def result_type(self, node: fx.Node | None = None) -> TensorType:
        node = node or self.node
        assert node is not None
        t = node.meta["val"]
        if t.dtype not in TORCH_TO_ELEMENT:
            raise unsupported(node, f"dtype {t.dtype} is not supported")
        return g.tensor(t.shape, TORCH_TO_ELEMENT[t.dtype])

    def insert(self, op: Operation, hint: bool = True) -> Any:
        """Insert ``op`` with the builder; its result, or its results as a tuple.
        ``hint`` names a single result after the node."""
        self.builder.insert(op)
        if hint and len(op.results) == 1 and self.node is not None:
            op.results[0].name_hint = sanitize(self.node.name)
        return op.results[0] if len(op.results) == 1 else tuple(op.results)

    def _locate(self, op: Operation) -> None:
        op.location = self.location

    def _location_of(self, node: fx.Node) -> LocationAttr:
        """The node's user source position as a location (one per stack trace)."""
        trace = node.meta.get("stack_trace") or ""
        location = self._locations.get(trace)
        if location is None:
            frame = _user_frame(trace)
            location = self._locations[trace] = (
                FileLineColLoc(StringAttr(frame[0]), IntAttr(int(frame[1])), IntAttr(1))
                if frame else UnknownLoc())
        return location

    def constant(self, value: Any, element_type: Any, shape: Sequence[int] = ()) -> SSAValue:
        typ = g.tensor(shape, element_type)
        arr = np.asarray(value)
        if g.is_float(element_type):
            attr = DenseIntOrFPElementsAttr.from_list(typ, [float(v) for v in arr.ravel()]
                                                      if arr.size > 1 else [float(arr)])
        else:
            attr = DenseIntOrFPElementsAttr.from_list(typ, [int(v) for v in arr.ravel()]
                                                      if arr.size > 1 else [int(arr)])
        return self.insert(g.ConstantOp(attr), hint=False)

    def as_type(self, arg: Any, dtype: torch.dtype) -> SSAValue:
        """A node or Python scalar as a tensor of ``dtype`` (scalars become 0-d constants)."""
        element = TORCH_TO_ELEMENT[dtype]
        if not isinstance(arg, fx.Node):
            return self.constant(arg, element)
        v = self.value(arg)
        if g.element_type_of(v) == element:
            return v
        return self.insert(g.ConvertOp(v, element), hint=False)

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        if g.shape_of(v) == tuple(shape):
            return v
        return self.insert(g.ReshapeOp(v, shape))

    def dims(self, dims: Any, rank: int) -> list[int]:
        if dims is None or (isinstance(dims, list | tuple) and len(dims) == 0):
            return list(range(rank))
        dims = [dims] if isinstance(dims, int) else list(dims)
        return [d % max(rank, 1) for d in dims]
