"""The FX importer: builds one ``func.func`` of the graph dialect from a core-ATen FX
graph with xDSL's ``Builder``, one node at a time through a table of handlers (ATen op
-> graph ops, in :mod:`mncore_ir.frontends.aten_handlers`). Every op it inserts is
located at the user's source line of its node, so a later error that blames the op
names that line."""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Collection, Mapping, Sequence
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
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import source_location


class _ElementTypes(dict[torch.dtype, Attribute]):
    """torch dtype -> graph element type; a dtype without one is an error that names it
    (a bare KeyError read ``torch.int8`` in the fallback's warning)."""

    def __missing__(self, dtype: torch.dtype) -> Attribute:
        raise TypeError(f"{dtype} has no graph element type (the graph dialect has "
                        f"{', '.join(str(d) for d in self)})")


TORCH_TO_ELEMENT = _ElementTypes({getattr(torch, name): typ
                                  for name, typ in g.ELEMENT_TYPES.items()})


class FxImportError(Exception):
    """Base of import failures."""


class UnsupportedOpError(FxImportError):
    """An ATen op (or a form of one) the importer has no mapping for."""


def unsupported(node: fx.Node, what: str) -> UnsupportedOpError:
    """``what`` at the user's source line of ``node``, named after its op unless
    ``what`` names it."""
    op = str(node.target)
    if node.op == "call_function" and op.rsplit(".", 1)[0] not in what:
        what = f"{op}: {what}"
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


source_position = source_location
"""Where the user wrote an op (its location, or that of an op nested in it)."""


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


class Unavailable:
    """What a value is to a tolerant import when the device cannot hold it (a node
    that failed with a result of a dtype the device lacks, or such an input)."""

    def __init__(self, why: str) -> None:
        self.why = why


class FxImporter:
    """Builds one ``func.func`` from an FX graph, node by node. A bare ``fx.Graph``
    will do (its nodes' ``meta["val"]`` give shapes): the lazy runtime builds one
    straight from its trace, with no ``GraphModule`` code generation."""

    def __init__(self, gm: fx.GraphModule | fx.Graph, example_inputs: Sequence[torch.Tensor],
                 func_name: str, arg_names: Sequence[str] | None,
                 handlers: Mapping[Any, Handler], tolerant: bool = False,
                 element_types: Collection[Attribute] | None = None) -> None:
        self.graph = gm if isinstance(gm, fx.Graph) else gm.graph
        #: Where ``get_attr`` nodes (a graph's constant tensors) are read from.
        self.module = gm if isinstance(gm, fx.GraphModule) else gm.owning_module
        self.handlers = handlers
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise FxImportError(f"the graph has {len(placeholders)} inputs but "
                               f"{len(example_inputs)} example inputs were given")
        names = list(arg_names or [n.name for n in placeholders])
        #: With ``tolerant``, a node that cannot be imported is a failure, not an error:
        #: its results become new arguments of the function (or :class:`Unavailable`)
        #: and the import goes on, so one pass finds every node the device cannot take.
        self.tolerant = tolerant
        #: The element types the device holds (None: all): a node reading or making
        #: another is a failure of a tolerant import.
        self.element_types = element_types
        self.failures: dict[fx.Node, Exception] = {}
        #: The node each inserted op was imported from (by name), so that a later error
        #: blaming an op can be traced to the nodes that made it.
        self.origins: dict[Operation, str] = {}
        types = []
        for node, t, name in zip(placeholders, example_inputs, names, strict=True):
            try:
                typ = _input_type(t, name)
                self._check_types(node, [t])
                types.append(typ)
            except FxImportError as error:
                if not tolerant:
                    raise
                self.failures[node] = error
                types.append(g.tensor(getattr(t, "shape", ()), g.ELEMENT_TYPES["float32"]))
        self.block = Block(arg_types=types)
        # every op inserted is located at the user's line of the node being imported
        self.builder = Builder(InsertPoint.at_end(self.block),
                               operation_insertion_handler=[self._locate])
        self.location: LocationAttr = UnknownLoc()
        self._locations: dict[str, LocationAttr] = {}
        self.env: dict[fx.Node, Any] = {}
        for node, arg, name in zip(placeholders, self.block.args, names, strict=True):
            arg.name_hint = sanitize(name)
            self.env[node] = (Unavailable(str(self.failures[node])) if node in self.failures
                              else arg)
        self.func_name = func_name
        self.node: fx.Node | None = None

    def run(self) -> FuncOp:
        outputs: list[SSAValue] = []
        for node in self.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "output":
                # a tolerant import that failed somewhere is thrown away (the step is
                # split): only then may outputs the device lacks be left out
                outputs = [self.value(v) for v in pytree.tree_leaves(node.args[0])
                           if not self.failures or isinstance(self.env.get(v), SSAValue)]
                continue
            try:
                self.env[node] = self._import(node)
            except Exception as error:
                if not self.tolerant:
                    raise
                self.failures[node] = error
                self.env[node] = self._stand_in(node.meta.get("val"), str(error))
        self.builder.insert(ReturnOp(*outputs))
        ftype = FunctionType.from_lists([a.type for a in self.block.args],
                                        [o.type for o in outputs])
        return FuncOp(self.func_name, ftype, Region(self.block))

    def _import(self, node: fx.Node) -> Any:
        if node.op == "get_attr" and self.module is not None:
            return self._constant_attribute(node)
        if node.op != "call_function":
            raise unsupported(node, f"FX node kind {node.op!r} ({node.name}) is not supported")
        self.location = self._location_of(node)
        handler = self.handlers.get(node.target)
        if handler is None:
            raise unsupported(node, f"unsupported ATen op {node.target}")
        if self.element_types is not None:
            self._check_types(node, [node.meta.get("val"), *node.all_input_nodes])
        return handler(self, node)

    def _constant_attribute(self, node: fx.Node) -> SSAValue:
        """A constant tensor the graph module holds (``torch.compile`` lifts a
        ``torch.tensor(...)`` written in the function into one) as a dense literal."""
        self.location = self._location_of(node)
        value = self.module
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor) or value.dtype not in TORCH_TO_ELEMENT:
            raise unsupported(node, f"constant {node.target} of type "
                                    f"{getattr(value, 'dtype', type(value).__name__)}")
        self._check_types(node, [value])
        array = value.detach().cpu()
        if array.dtype in (torch.bfloat16, torch.float16):
            array = array.float()
        return self.constant(array.numpy(), TORCH_TO_ELEMENT[value.dtype], tuple(value.shape))

    def _check_types(self, node: fx.Node, values: Sequence[Any]) -> None:
        """Refuse ``node`` when one of ``values`` (tensors or nodes) has an element
        type the device does not hold."""
        if self.element_types is None:
            return
        for value in pytree.tree_leaves([v.meta.get("val") if isinstance(v, fx.Node) else v
                                         for v in values]):
            if isinstance(value, torch.Tensor) and (
                    TORCH_TO_ELEMENT.get(value.dtype) not in self.element_types):
                raise unsupported(node, f"the device holds no {value.dtype}")

    def _stand_in(self, meta: Any, why: str) -> Any:
        """A new function argument of ``meta``'s type (per tensor of a tuple), or
        :class:`Unavailable` where the device has no such type."""
        if isinstance(meta, list | tuple):
            return tuple(self._stand_in(m, why) for m in meta)
        if not isinstance(meta, torch.Tensor):
            return None
        if meta.dtype not in TORCH_TO_ELEMENT:
            return Unavailable(why)
        return self.block.insert_arg(g.tensor(meta.shape, TORCH_TO_ELEMENT[meta.dtype]),
                                     len(self.block.args))

    # ------------------------------------------------------------------ helpers

    def value(self, arg: Any) -> SSAValue:
        if not isinstance(arg, fx.Node):
            raise FxImportError(f"expected a tensor, got {arg!r} in {self.node}")
        v = self.env[arg]
        if isinstance(v, Unavailable):
            raise FxImportError(f"{arg.name} is not on the device: {v.why}")
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
        if self.node is not None:
            self.origins[op] = self.node.name

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
        convert = float if g.is_float(element_type) else int
        attr = DenseIntOrFPElementsAttr.from_list(typ, [convert(v) for v in arr.ravel()])
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
