"""FX importer: core-ATen FX graphs become ``graph`` dialect functions.

``capture(fn, *args)`` turns a Python training step into a functional core-ATen FX
graph with ``make_fx``; ``import_fx(gm, example_inputs)`` turns such a graph into IR,
one node to one op or a short fixed expansion. An ATen op without a mapping is an
:class:`UnsupportedOpError` naming the op and the user's source line.
"""

from __future__ import annotations

import inspect
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.fx.traceback as fx_traceback
from torch import fx
from torch._decomp import core_aten_decompositions, get_decompositions
from torch.func import functionalize
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree
from xdsl.builder import Builder
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FunctionType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mncore_ir.dialects import graph as g

aten = torch.ops.aten

#: Composite ops kept whole at capture time: ``graph-decompose`` expands them later,
#: and later levels may give them dedicated kernels.
KEPT_COMPOSITES = (
    aten._softmax_backward_data.default,
    aten._log_softmax_backward_data.default,
    aten.gelu_backward.default,
    aten.native_layer_norm_backward.default,
)

#: The decomposition table used by :func:`capture`: torch's core-ATen decompositions
#: without :data:`KEPT_COMPOSITES`. Batch norm is decomposed before functionalization
#: (torch's ``native_batch_norm`` schema hides its running-stat mutation).
DECOMPOSITIONS = {k: v for k, v in core_aten_decompositions().items()
                  if k not in KEPT_COMPOSITES}
HIDDEN_MUTATION_DECOMPOSITIONS = get_decompositions(
    [aten.native_batch_norm, aten._native_batch_norm_legit])

TORCH_TO_ELEMENT = {getattr(torch, name): typ for name, typ in g.ELEMENT_TYPES.items()}


class FxImportError(Exception):
    """Base of import failures."""


class UnsupportedOpError(FxImportError):
    """An ATen op (or a form of one) the importer has no mapping for."""


def unsupported(node: fx.Node, what: str) -> UnsupportedOpError:
    """``what`` at the user's source line of ``node``."""
    return UnsupportedOpError(f"{what} at {user_frame(node.meta.get('stack_trace'))}")


def user_frame(stack_trace: str | None) -> str:
    """The last frame of ``stack_trace`` outside torch: where the user's code called."""
    if not stack_trace:
        return "<unknown source line>"
    frames = re.findall(r'File "([^"]+)", line (\d+), in \S+\n\s*(.*)', stack_trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    if not user:
        return "<unknown source line>"
    path, line, code = user[-1]
    return f"{path}:{line}: {code.strip()}"


@dataclass
class CapturedGraph:
    """A functional core-ATen graph of a Python callable, with the names of its
    flat inputs and outputs. Outputs are the callable's result followed by the new
    values of every input tensor the callable mutated."""

    gm: fx.GraphModule
    example_inputs: list[torch.Tensor]
    input_names: list[str]
    output_names: list[str]
    mutated_inputs: list[int] = field(default_factory=list)


def _names(tree: Any, prefix: str) -> list[str]:
    leaves, _ = pytree.tree_flatten_with_path(tree)
    return [prefix + pytree.keystr(path) for path, _ in leaves]


def capture(fn: Callable[..., Any], *args: Any,
            arg_names: Sequence[str] | None = None) -> CapturedGraph:
    """Trace ``fn(*args)`` (which may use autograd and mutate its tensor arguments)
    into a functional core-ATen FX graph over the flattened tensors of ``args``.

    Two passes: ``make_fx`` records autograd and in-place ops as ATen; retracing that
    graph under ``functionalize`` with :data:`DECOMPOSITIONS` gives core ATen with no
    mutation. Nodes keep the user's stack trace for error messages.
    """
    flat, spec = pytree.tree_flatten(args)
    result_count = [0]
    _anchor_user_code(fn)

    def step(*flat_args: torch.Tensor) -> tuple[Any, ...]:
        copies = [a.clone() for a in flat_args]
        out = pytree.tree_leaves(fn(*pytree.tree_unflatten(copies, spec)))
        result_count[0] = len(out)
        return (*out, *copies)

    first = make_fx(step, decomposition_table=HIDDEN_MUTATION_DECOMPOSITIONS, tracing_mode="fake",
                    record_stack_traces=True)(*flat)

    def replay(*flat_args: torch.Tensor) -> Any:
        with fx_traceback.preserve_node_meta():
            return fx.Interpreter(first).run(*flat_args)

    gm = make_fx(functionalize(replay, remove="mutations_and_views"),
                 decomposition_table=DECOMPOSITIONS, tracing_mode="fake")(*flat)
    mutated = _keep_mutated_outputs(gm, result_count[0])
    if arg_names is None:
        params = list(inspect.signature(fn).parameters)
        arg_names = params if len(params) == len(args) else [f"arg{i}" for i in range(len(args))]
    input_names = [re.sub(r"[\[\]'.]+", ".", name).strip(".")
                   for i, arg in enumerate(args) for name in _names(arg, arg_names[i])]
    n = result_count[0]
    out_names = [f"result{i}" if n > 1 else "result" for i in range(n)]
    out_names += [f"new.{input_names[i]}" for i in mutated]
    return CapturedGraph(gm, list(flat), input_names, out_names, list(mutated))


def _anchor_user_code(fn: Callable[..., Any]) -> None:
    """Make ``make_fx`` keep stack frames of ``fn`` and of the functions defined beside
    it: with ``record_stack_traces`` it keeps only frames named ``forward`` and
    registered anchors, so a plain function's ops would have no source line."""
    register = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    code = getattr(target, "__code__", None)
    if register is None or code is None:
        return
    register(target)
    for value in getattr(target, "__globals__", {}).values():
        candidates = [value, *vars(value).values()] if inspect.isclass(value) else [value]
        for c in candidates:
            if inspect.isfunction(c) and c.__code__.co_filename == code.co_filename:
                register(c)


_IDENTITY_OPS = (aten.clone.default, aten.detach_copy.default, aten.detach.default,
                 aten.alias.default, aten.alias_copy.default)


def _keep_mutated_outputs(gm: fx.GraphModule, result_count: int) -> list[int]:
    """Drop the outputs that return an input unchanged; the indices of the others."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = gm.graph.output_node()
    outs = pytree.tree_leaves(output.args[0])

    def root(node: Any) -> Any:
        while isinstance(node, fx.Node) and node.target in _IDENTITY_OPS:
            node = node.args[0]
        return node

    mutated = [i for i, o in enumerate(outs[result_count:]) if root(o) is not placeholders[i]]
    output.args = (tuple(outs[:result_count] + [outs[result_count + i] for i in mutated]),)
    gm.graph._codegen = fx.graph.CodeGen()  # flat outputs now: drop make_fx's pytree codegen
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return mutated


def _sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.$-]", "_", name)
    return name if re.match(r"[A-Za-z_]", name) else f"v{name}"


def _input_type(t: Any, name: str) -> TensorType:
    if not isinstance(t, torch.Tensor):
        raise FxImportError(f"input {name} is not a tensor: {t!r}")
    if t.dtype not in TORCH_TO_ELEMENT:
        raise UnsupportedOpError(f"input {name}: dtype {t.dtype} is not supported")
    return g.tensor(t.shape, TORCH_TO_ELEMENT[t.dtype])


Handler = Callable[["FxImporter", fx.Node], Any]
HANDLERS: dict[Any, Handler] = {}


def handles(*targets: Any) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for t in targets:
            HANDLERS[t] = fn
        return fn

    return register


class FxImporter:
    """Builds one ``func.func`` from an FX graph, node by node."""

    def __init__(self, gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor],
                 func_name: str, arg_names: Sequence[str] | None) -> None:
        self.gm = gm
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise FxImportError(f"the graph has {len(placeholders)} inputs but "
                               f"{len(example_inputs)} example inputs were given")
        names = list(arg_names or [n.name for n in placeholders])
        types = [_input_type(t, name) for t, name in zip(example_inputs, names, strict=True)]
        self.block = Block(arg_types=types)
        self.builder = Builder(InsertPoint.at_end(self.block))
        self.env: dict[fx.Node, Any] = {}
        for node, arg, name in zip(placeholders, self.block.args, names, strict=True):
            arg.name_hint = _sanitize(name)
            self.env[node] = arg
        self.func_name = func_name
        self.node: fx.Node | None = None

    def run(self) -> FuncOp:
        outputs: list[SSAValue] = []
        for node in self.gm.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs = [self.value(v) for v in pytree.tree_leaves(node.args[0])]
                continue
            if node.op != "call_function":
                raise unsupported(node, f"FX node kind {node.op!r} ({node.name}) is not supported")
            handler = HANDLERS.get(node.target)
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

    def emit(self, op: g.IRDLOperation, hint: bool = True) -> Any:
        self.builder.insert(op)
        if hint and len(op.results) == 1 and self.node is not None:
            op.results[0].name_hint = _sanitize(self.node.name)
        return op.results[0] if len(op.results) == 1 else tuple(op.results)

    def build(self, op_type: type[g.GraphOp], operands: Sequence[SSAValue], **props: Any) -> Any:
        return self.emit(g.build(op_type, operands, **props))

    def constant(self, value: Any, element_type: Any, shape: Sequence[int] = ()) -> SSAValue:
        typ = g.tensor(shape, element_type)
        arr = np.asarray(value)
        if g.is_float(element_type):
            attr = DenseIntOrFPElementsAttr.from_list(typ, [float(v) for v in arr.ravel()]
                                                      if arr.size > 1 else [float(arr)])
        else:
            attr = DenseIntOrFPElementsAttr.from_list(typ, [int(v) for v in arr.ravel()]
                                                      if arr.size > 1 else [int(arr)])
        return self.emit(g.ConstantOp(attr), hint=False)

    def as_type(self, arg: Any, dtype: torch.dtype) -> SSAValue:
        """A node or Python scalar as a tensor of ``dtype`` (scalars become 0-d constants)."""
        element = TORCH_TO_ELEMENT[dtype]
        if not isinstance(arg, fx.Node):
            return self.constant(arg, element)
        v = self.value(arg)
        if g.element_type_of(v) == element:
            return v
        return self.emit(g.ConvertOp.build(operands=[v], result_types=[
            g.tensor(g.shape_of(v), element)]), hint=False)

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        if g.shape_of(v) == tuple(shape):
            return v
        return self.emit(g.ReshapeOp.build(operands=[v], result_types=[
            g.tensor(shape, g.element_type_of(v))]))

    def dims(self, dims: Any, rank: int) -> list[int]:
        if dims is None or (isinstance(dims, list | tuple) and len(dims) == 0):
            return list(range(rank))
        dims = [dims] if isinstance(dims, int) else list(dims)
        return [d % max(rank, 1) for d in dims]


def import_fx(gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor],
              func_name: str = "main", arg_names: Sequence[str] | None = None) -> ModuleOp:
    """Import ``gm`` (functional core ATen) as ``func.func @func_name`` in a new module."""
    func = FxImporter(gm, example_inputs, func_name, arg_names).run()
    return ModuleOp([func])


def import_captured(captured: CapturedGraph, func_name: str = "main") -> ModuleOp:
    return import_fx(captured.gm, captured.example_inputs, func_name, captured.input_names)


# ---------------------------------------------------------------------- handlers

_BINARY = {
    aten.add.Tensor: g.AddOp, aten.sub.Tensor: g.SubOp, aten.mul.Tensor: g.MulOp,
    aten.div.Tensor: g.DivOp, aten.pow.Tensor_Tensor: g.PowOp, aten.pow.Tensor_Scalar: g.PowOp,
    aten.pow.Scalar: g.PowOp, aten.maximum.default: g.MaximumOp,
    aten.minimum.default: g.MinimumOp, aten.add.Scalar: g.AddOp, aten.sub.Scalar: g.SubOp,
    aten.mul.Scalar: g.MulOp, aten.div.Scalar: g.DivOp,
    aten.bitwise_and.Tensor: g.AndOp, aten.bitwise_or.Tensor: g.OrOp,
    aten.logical_and.default: g.AndOp, aten.logical_or.default: g.OrOp,
}
_COMPARE = {
    **{getattr(aten, n).Tensor: getattr(g, f"{n.capitalize()}Op")
       for n in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{getattr(aten, n).Scalar: getattr(g, f"{n.capitalize()}Op")
       for n in ("eq", "ne", "lt", "le", "gt", "ge")},
}
_UNARY = {
    aten.neg.default: g.NegOp, aten.abs.default: g.AbsOp, aten.relu.default: g.ReluOp,
    aten.exp.default: g.ExpOp, aten.log.default: g.LogOp, aten.sqrt.default: g.SqrtOp,
    aten.rsqrt.default: g.RsqrtOp, aten.reciprocal.default: g.ReciprocalOp,
    aten.tanh.default: g.TanhOp, aten.sigmoid.default: g.SigmoidOp, aten.erf.default: g.ErfOp,
    aten.bitwise_not.default: g.NotOp, aten.logical_not.default: g.NotOp,
}


def _binary(imp: FxImporter, node: fx.Node) -> SSAValue:
    a, b = node.args[:2]
    if node.kwargs.get("alpha", 1) != 1:
        b_val = imp.build(g.MulOp, [imp.as_type(b, imp.meta(node).dtype),
                                     imp.as_type(node.kwargs["alpha"], imp.meta(node).dtype)])
        return imp.build(_BINARY[node.target], [imp.as_type(a, imp.meta(node).dtype), b_val])
    op = _BINARY[node.target]
    dtype = imp.meta(node).dtype
    if op in (g.AndOp, g.OrOp) and dtype != torch.bool:
        raise unsupported(node, f"bitwise ops on {dtype} are not supported")
    if node.target in (aten.logical_and.default, aten.logical_or.default):
        a, b = (imp.build(g.NeOp, [imp.value(x), imp.as_type(0, imp.meta(x).dtype)])
                if imp.meta(x).dtype != torch.bool else imp.value(x) for x in (a, b))
        return imp.build(op, [a, b])
    return imp.build(op, [imp.as_type(a, dtype), imp.as_type(b, dtype)])


def _compare(imp: FxImporter, node: fx.Node) -> SSAValue:
    a, b = node.args[:2]
    common = torch.result_type(imp.meta(a), imp.meta(b))
    return imp.build(_COMPARE[node.target], [imp.as_type(a, common), imp.as_type(b, common)])


def _unary(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.build(_UNARY[node.target], [imp.value(node.args[0])])


for _t in _BINARY:
    HANDLERS[_t] = _binary
for _t in _COMPARE:
    HANDLERS[_t] = _compare
for _t in _UNARY:
    HANDLERS[_t] = _unary


@handles(aten.where.self)
def _where(imp: FxImporter, node: fx.Node) -> SSAValue:
    c, a, b = node.args
    dtype = imp.meta(node).dtype
    return imp.build(g.WhereOp, [imp.as_type(c, torch.bool), imp.as_type(a, dtype),
                                  imp.as_type(b, dtype)])


@handles(aten.clamp.default)
def _clamp(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, lo, hi = [*node.args, None, None][:3]
    dtype = imp.meta(node).dtype
    v = imp.as_type(x, dtype)
    if lo is not None:
        v = imp.build(g.MaximumOp, [v, imp.as_type(lo, dtype)])
    if hi is not None:
        v = imp.build(g.MinimumOp, [v, imp.as_type(hi, dtype)])
    return v


@handles(aten.gelu.default)
def _gelu(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.build(g.GeluOp, [imp.value(node.args[0])],
                     approximate=node.kwargs.get("approximate", "none"))


@handles(aten.gelu_backward.default)
def _gelu_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.build(g.GeluBackwardOp, [imp.value(node.args[0]), imp.value(node.args[1])],
                     approximate=node.kwargs.get("approximate", "none"))


@handles(aten._to_copy.default, aten.copy.default)
def _to_copy(imp: FxImporter, node: fx.Node) -> SSAValue:
    src = node.args[1] if node.target == aten.copy.default else node.args[0]
    out = imp.meta(node)
    v = imp.as_type(src, out.dtype)
    if g.shape_of(v) != tuple(out.shape):
        v = imp.emit(g.ExpandOp.build(operands=[v], result_types=[imp.result_type()]))
    return v


@handles(aten.clone.default, aten.detach_copy.default, aten.detach.default,
         aten.alias.default, aten.alias_copy.default, aten.lift_fresh_copy.default)
def _identity(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.value(node.args[0])


@handles(aten.view.default, aten.view_copy.default, aten._unsafe_view.default,
         aten.reshape.default, aten.squeeze.dims, aten.squeeze.dim, aten.squeeze.default,
         aten.unsqueeze.default, aten.unsqueeze_copy.default, aten.squeeze_copy.dims)
def _reshape(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.reshape(imp.value(node.args[0]), imp.meta(node).shape)


@handles(aten.expand.default, aten.expand_copy.default)
def _expand(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    out = tuple(imp.meta(node).shape)
    if g.shape_of(v) == out:
        return v
    return imp.emit(g.ExpandOp.build(operands=[v], result_types=[imp.result_type()]))


@handles(aten.permute.default, aten.permute_copy.default)
def _permute(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    return imp.build(g.PermuteOp, [v], perm=imp.dims(node.args[1], len(g.shape_of(v))))


@handles(aten.t.default, aten.transpose.int, aten.t_copy.default, aten.transpose_copy.int)
def _transpose(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    rank = len(g.shape_of(v))
    d0, d1 = (node.args[1:3] if len(node.args) > 1 else (0, 1))
    perm = list(range(rank))
    if rank >= 2:
        d0, d1 = d0 % rank, d1 % rank
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return imp.build(g.PermuteOp, [v], perm=perm)


@handles(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    shape = g.shape_of(v)
    dim, start, end, step = (list(node.args[1:]) + [0, None, None, 1][len(node.args) - 1:])[:4]
    dim = dim % len(shape)
    start, end, step = slice(start, end, step).indices(shape[dim])
    return imp.build(g.SliceOp, [v], dim=dim, start=start, end=max(end, start), step=step)


@handles(aten.select.int, aten.select_copy.int)
def _select(imp: FxImporter, node: fx.Node) -> SSAValue:
    v = imp.value(node.args[0])
    shape = g.shape_of(v)
    dim = node.args[1] % len(shape)
    index = node.args[2] % shape[dim]
    piece = imp.emit(g.build(g.SliceOp, [v], dim=dim, start=index, end=index + 1), hint=False)
    return imp.reshape(piece, imp.meta(node).shape)


@handles(aten.slice_scatter.default)
def _slice_scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``base`` with ``base[start:end:step]`` along ``dim`` replaced: slices and a concat
    for step 1."""
    base, src = imp.value(node.args[0]), imp.value(node.args[1])
    shape = g.shape_of(base)
    dim, start, end, step = [*node.args[2:], *[0, None, None, 1][len(node.args) - 2:]]
    dim = dim % len(shape)
    start, end, step = slice(start, end, step).indices(shape[dim])
    if step != 1:
        raise unsupported(node, "slice_scatter with a step other than 1")
    pieces = []
    if start > 0:
        pieces.append(imp.emit(g.build(g.SliceOp, [base], dim=dim, start=0, end=start),
                               hint=False))
    pieces.append(src)
    if end < shape[dim]:
        pieces.append(imp.emit(g.build(g.SliceOp, [base], dim=dim, start=end, end=shape[dim]),
                               hint=False))
    return pieces[0] if len(pieces) == 1 else imp.build(g.ConcatOp, pieces, dim=dim)


@handles(aten.split.Tensor, aten.split_copy.Tensor, aten.split_with_sizes.default,
         aten.split_with_sizes_copy.default)
def _split(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    v = imp.value(node.args[0])
    dim = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(g.shape_of(v))
    outs, start = [], 0
    for piece in imp.meta(node):
        size = piece.shape[dim]
        outs.append(imp.emit(g.build(g.SliceOp, [v], dim=dim, start=start, end=start + size),
                             hint=False))
        start += size
    return tuple(outs)


@handles(operator.getitem)
def _getitem(imp: FxImporter, node: fx.Node) -> SSAValue:
    value = imp.env[node.args[0]][node.args[1]]
    if value is None and not node.users:
        return None
    if value is None:
        raise FxImportError(f"{node.name} reads an output that was not computed")
    value.name_hint = _sanitize(node.name)
    return value


@handles(aten.cat.default)
def _cat(imp: FxImporter, node: fx.Node) -> SSAValue:
    dtype = imp.meta(node).dtype
    inputs = [imp.as_type(x, dtype) for x in node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    return imp.build(g.ConcatOp, inputs, dim=dim % len(g.shape_of(inputs[0])))


def _splat(imp: FxImporter, node: fx.Node, value: Any) -> SSAValue:
    out = imp.meta(node)
    v = imp.constant(value, TORCH_TO_ELEMENT[out.dtype])
    if out.dim() == 0:
        return v
    return imp.emit(g.ExpandOp.build(operands=[v], result_types=[imp.result_type()]))


@handles(aten.full.default, aten.full_like.default, aten.scalar_tensor.default,
         aten.new_full.default)
def _full(imp: FxImporter, node: fx.Node) -> SSAValue:
    value = node.args[0] if node.target == aten.scalar_tensor.default else node.args[1]
    return _splat(imp, node, value)


@handles(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default,
         aten.empty.memory_format, aten.empty_like.default, aten.new_empty.default,
         aten.empty_strided.default)
def _zeros(imp: FxImporter, node: fx.Node) -> SSAValue:
    # Empty tensors have unspecified contents: zeros are a valid choice.
    return _splat(imp, node, 0)


@handles(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def _ones(imp: FxImporter, node: fx.Node) -> SSAValue:
    return _splat(imp, node, 1)


@handles(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(imp: FxImporter, node: fx.Node) -> SSAValue:
    out = imp.meta(node)
    args = list(node.args)
    start, end, step = (0, args[0], 1) if len(args) == 1 else [*args, 1][:3]
    values = np.arange(start, end, step)
    return imp.constant(values, TORCH_TO_ELEMENT[out.dtype], tuple(out.shape))


def _reduce(op_type: type[g.ReduceOp]) -> Handler:
    def handler(imp: FxImporter, node: fx.Node) -> SSAValue:
        x = node.args[0]
        out = imp.meta(node)
        v = imp.as_type(x, out.dtype)
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        return imp.build(op_type, [v], dims=imp.dims(dims, len(g.shape_of(v))), keepdim=keep)

    return handler


HANDLERS[aten.sum.dim_IntList] = _reduce(g.SumOp)
HANDLERS[aten.sum.default] = _reduce(g.SumOp)
HANDLERS[aten.mean.dim] = _reduce(g.MeanOp)
HANDLERS[aten.mean.default] = _reduce(g.MeanOp)
HANDLERS[aten.amax.default] = _reduce(g.AmaxOp)


@handles(aten.var_mean.correction)
def _var_mean(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """``mean(x)`` and ``sum((x - mean)^2) / (n - correction)``."""
    x = imp.value(node.args[0])
    shape = g.shape_of(x)
    dims = imp.dims(node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"), len(shape))
    correction = node.kwargs.get("correction", 1)
    keep = node.kwargs.get("keepdim", False)
    count = math.prod(shape[d] for d in dims)
    mean = imp.build(g.MeanOp, [x], dims=dims, keepdim=True)
    centered = imp.build(g.SubOp, [x, mean])
    squares = imp.build(g.MulOp, [centered, centered])
    total = imp.build(g.SumOp, [squares], dims=dims, keepdim=keep)
    var = imp.build(g.DivOp, [total, imp.constant(count - correction, g.element_type_of(x))])
    return var, imp.reshape(mean, g.shape_of(var))


@handles(aten.mm.default, aten.bmm.default)
def _mm(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.build(g.MatmulOp, [imp.value(node.args[0]), imp.value(node.args[1])])


@handles(aten.addmm.default)
def _addmm(imp: FxImporter, node: fx.Node) -> SSAValue:
    bias, a, b = node.args[:3]
    if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
        raise unsupported(node, "addmm with beta/alpha other than 1")
    prod = imp.emit(g.build(g.MatmulOp, [imp.value(a), imp.value(b)]), hint=False)
    return imp.build(g.AddOp, [prod, imp.value(bias)])


@handles(aten._softmax.default, aten._log_softmax.default)
def _softmax(imp: FxImporter, node: fx.Node) -> SSAValue:
    op = g.SoftmaxOp if node.target == aten._softmax.default else g.LogSoftmaxOp
    v = imp.value(node.args[0])
    return imp.build(op, [v], dim=node.args[1] % len(g.shape_of(v)))


@handles(aten._softmax_backward_data.default, aten._log_softmax_backward_data.default)
def _softmax_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    op = (g.SoftmaxBackwardOp if node.target == aten._softmax_backward_data.default
          else g.LogSoftmaxBackwardOp)
    grad, out = imp.value(node.args[0]), imp.value(node.args[1])
    return imp.build(op, [grad, out], dim=node.args[2] % len(g.shape_of(grad)))


def _optional(imp: FxImporter, arg: Any, value: float, shape: Sequence[int]) -> SSAValue:
    if arg is not None:
        return imp.value(arg)
    if shape:
        return imp.constant(np.full(shape, value), g.f32, shape)
    return imp.constant(value, g.f32)


@handles(aten.native_layer_norm.default)
def _layer_norm(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    x, normalized, w, b, eps = node.args
    shape = tuple(normalized)
    return imp.build(g.LayerNormOp, [imp.value(x), _optional(imp, w, 1.0, shape),
                                     _optional(imp, b, 0.0, shape)],
                     normalized_dims=len(shape), eps=float(eps))


@handles(aten.native_layer_norm_backward.default)
def _layer_norm_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    grad, x, normalized, mean, rstd, w, _b, mask = node.args
    shape = tuple(normalized)
    outs = imp.build(g.LayerNormBackwardOp, [imp.value(grad), imp.value(x), imp.value(mean),
                                             imp.value(rstd), _optional(imp, w, 1.0, shape)],
                     normalized_dims=len(shape))
    return tuple(o if m else None for o, m in zip(outs, mask, strict=True))


@handles(aten.embedding.default)
def _embedding(imp: FxImporter, node: fx.Node) -> SSAValue:
    return imp.build(g.EmbeddingOp, [imp.value(node.args[0]), imp.value(node.args[1])])


@handles(aten.index_put.default)
def _index_put(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    if len(indices) != 1 or indices[0] is None:
        raise unsupported(node, f"index_put with {len(indices)} index tensors")
    dtype = imp.meta(node).dtype
    return imp.build(g.IndexPutOp, [imp.value(x), imp.value(indices[0]),
                                    imp.as_type(values, dtype)], accumulate=bool(accumulate))


@handles(aten.gather.default)
def _gather(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, dim, index = node.args[:3]
    v = imp.value(x)
    return imp.build(g.GatherOp, [v, imp.value(index)], dim=dim % len(g.shape_of(v)))


@handles(aten.scatter.value, aten.scatter.src)
def _scatter(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, dim, index, value = node.args[:4]
    v = imp.value(x)
    if isinstance(value, fx.Node) and imp.meta(value).dim() != 0:
        raise unsupported(node, "scatter of a non-scalar source")
    return imp.build(g.ScatterOp, [v, imp.value(index), imp.as_type(value, imp.meta(node).dtype)],
                     dim=dim % len(g.shape_of(v)))


def _pairs(v: Any, default: Sequence[int]) -> list[int]:
    v = list(v) if isinstance(v, list | tuple) else [v]
    if not v:
        v = list(default)
    return v * 2 if len(v) == 1 else v


@handles(aten.convolution.default)
def _convolution(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, w, b, stride, padding, dilation, transposed, _out_pad, groups = node.args
    if transposed or len(imp.meta(x).shape) != 4:
        raise unsupported(node, "only 2-D, non-transposed convolutions are supported")
    out_channels = imp.meta(w).shape[0]
    bias = imp.value(b) if b is not None else imp.constant(np.zeros(out_channels), g.f32,
                                                           (out_channels,))
    return imp.build(g.Conv2dOp, [imp.value(x), imp.value(w), bias], stride=_pairs(stride, [1]),
                     padding=_pairs(padding, [0]), dilation=_pairs(dilation, [1]),
                     groups=groups)


@handles(aten.convolution_backward.default)
def _convolution_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    grad, x, w, _bias_sizes, stride, padding, dilation, transposed, _op, groups, mask = node.args
    if transposed:
        raise unsupported(node, "transposed convolution")
    outs = imp.build(g.Conv2dBackwardOp, [imp.value(grad), imp.value(x), imp.value(w)],
                     stride=_pairs(stride, [1]), padding=_pairs(padding, [0]),
                     dilation=_pairs(dilation, [1]), groups=groups)
    return tuple(o if m else None for o, m in zip(outs, mask, strict=True))


@handles(aten.max_pool2d_with_indices.default)
def _max_pool(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    args = list(node.args) + [[], 0, 1, False][len(node.args) - 2:]
    x, kernel, stride, padding, dilation, ceil_mode = args[:6]
    if ceil_mode:
        raise unsupported(node, "max_pool2d with ceil_mode")
    kernel = _pairs(kernel, [1])
    return imp.build(g.MaxPool2dOp, [imp.value(x)], kernel=kernel,
                     stride=_pairs(stride, kernel), padding=_pairs(padding, [0]),
                     dilation=_pairs(dilation, [1]))


@handles(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    grad, x = node.args[:2]
    indices = node.args[7]
    return imp.build(g.MaxPool2dBackwardOp, [imp.value(grad), imp.value(x), imp.value(indices)])
