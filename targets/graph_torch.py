"""The cpu executor: a graph-level ``func.func`` as generated straight-line torch code.

:func:`compile_function` writes one line of Python per graph op (``graph.fused`` bodies
are inlined, line by line), compiles the source once and returns a
:class:`TorchProgram`. All op properties (dims, shapes, permutations, window sizes,
dtypes) are resolved at code generation time and written as literals, so a call runs
only torch ops: it is the fast default device of the lazy-tensor runtime.

Meaning is that of :mod:`mncore_ir.targets.graph_interpreter`, the level's reference:
results have the IR's result types (a cast is written wherever torch would promote
differently), and index conventions are the interpreter's.

Rules of a call:

* no autograd graph is built (the body runs under ``torch.no_grad()``);
* the arguments are never written to;
* each result owns its memory: a result that is an argument, a constant or another
  result, or a view of one, is returned as a clone (and a broadcast view is made
  contiguous), so the caller may write to any result in place without changing its
  inputs, the program's constants or the other results.

Constants (``graph.constant``) become module-level tensors of the generated code,
created once at compile time; 0-d constants are written as Python literals where an
operator or ``torch.where`` takes a scalar with the same result dtype. Arguments are
taken as given: they must already have the function's argument types.
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import math
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.values import constant_value, find_function

__all__ = ["GraphTorchError", "TorchProgram", "compile_function", "compile_module"]


class GraphTorchError(Exception):
    """An op (or a form of one) this target has no torch code for."""


@dataclass(frozen=True)
class TorchProgram:
    """A compiled function: ``fn(*args)`` takes the function's arguments as torch
    tensors and returns its results as a tuple; ``source`` is the generated code."""

    source: str
    fn: Callable[..., tuple[torch.Tensor, ...]]

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.fn(*args)


_TORCH_DTYPES: dict[Attribute, str] = {typ: f"torch.{name}"
                                       for name, typ in g.ELEMENT_TYPES.items()}


def torch_dtype(element_type: Attribute) -> str:
    """The source text of the torch dtype of a graph element type."""
    try:
        return _TORCH_DTYPES[element_type]
    except KeyError:
        raise GraphTorchError(f"element type {element_type} has no torch dtype") from None


def _tuple(values: Sequence[object]) -> str:
    """A tuple literal (``(3,)`` for one value)."""
    return f"({values[0]},)" if len(values) == 1 else f"({', '.join(map(str, values))})"


def _scalar_literal(array: np.ndarray) -> str | None:
    """A Python literal that torch turns back into exactly this 0-d value in its own
    dtype, or None (bools, and values a literal cannot spell)."""
    if array.dtype == np.bool_:
        return None
    if array.dtype.kind in "iu":
        return str(int(array))
    value = float(array)
    if math.isnan(value):
        return "_nan"
    if math.isinf(value):
        return "_inf" if value > 0 else "(-_inf)"
    text = repr(value)
    if array.dtype == np.float32:
        short = str(array.astype(np.float32)[()])  # the shortest text of the f32 value
        if np.float32(float(short)) == array:
            text = short
    return f"({text})" if text.startswith("-") else text


@dataclass(eq=False)
class _Value:
    """How the generated code refers to one SSA value.

    ``expr`` is a local or global name (None for a constant not yet needed as a
    tensor); ``literal`` the scalar literal of a 0-d constant; ``root`` the value whose
    memory this one may share; ``external`` whether that memory belongs to the caller
    or the program (arguments, constants); ``overlap`` whether elements may share
    memory (a broadcast view).
    """

    expr: str | None
    local: bool
    literal: str | None = None
    root: _Value | None = None
    external: bool = False
    overlap: bool = False
    constant: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.root is None:
            self.root = self


@dataclass
class _Line:
    text: str
    reads: list[str]
    defines: list[str]


_GLOBALS_HEADER = {"torch": torch, "F": torch.nn.functional, "_no_grad": torch.no_grad,
                   "_inf": math.inf, "_nan": math.nan}


@dataclass
class _Generator:
    """Writes the body of one function, op by op."""

    func: FuncOp
    globals: dict[str, Any] = field(default_factory=lambda: dict(_GLOBALS_HEADER))
    prelude: list[str] = field(default_factory=list)
    lines: list[_Line] = field(default_factory=list)
    values: dict[SSAValue, _Value] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    constants: dict[tuple[Attribute, bytes], _Value] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    fn_name: str = ""
    _reads: list[str] = field(default_factory=list)
    _constant_count: int = 0
    _counter: itertools.count = field(default_factory=itertools.count)

    # ------------------------------------------------------------------ names

    def fresh(self, hint: str | None) -> str:
        """A new local name from ``hint`` (an identifier that no global can be)."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint or "") or f"t{next(self._counter)}"
        if not base[0].isalpha():
            base = "v" + base
        name, n = base, 1
        while name in self.names or keyword.iskeyword(name) or name in self.globals:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        return name

    def global_op(self, path: str) -> str:
        """A module-level name bound to ``torch.ops.aten.<path>`` (bound once, so a call
        does no attribute walk)."""
        name = "_aten_" + path.split(".")[0]
        if name not in self.globals:
            self.globals[name] = None  # reserved; the prelude line binds it
            self.prelude.append(f"{name} = torch.ops.aten.{path}")
        return name

    # ------------------------------------------------------------------ values

    def t(self, value: SSAValue) -> str:
        """The value as a tensor expression."""
        v = self.values[value]
        if v.expr is None:  # a constant first used as a tensor
            assert v.constant is not None
            v.expr = f"_c{self._constant_count}"
            self._constant_count += 1
            self.globals[v.expr] = torch.from_numpy(v.constant)
            self.comments.append(f"# {v.expr}: constant {value.type}")
        if v.local:
            self._reads.append(v.expr)
        return v.expr

    def s(self, value: SSAValue) -> str:
        """The value as a scalar literal when it has one, else as a tensor."""
        literal = self.values[value].literal
        return literal if literal is not None else self.t(value)

    def is_literal(self, value: SSAValue) -> bool:
        return self.values[value].literal is not None

    def alias(self, result: SSAValue, source: SSAValue) -> None:
        """``result`` is ``source`` itself (no line)."""
        self.values[result] = self.values[source]

    def emit(self, results: Sequence[SSAValue], expr: str,
             view_of: SSAValue | None = None, overlap: bool = False) -> None:
        """One line: ``results = expr`` (unused results of several become ``_``; a
        single used one of several is picked by index). ``view_of``: the results may
        share memory with that value."""
        used = [i for i, r in enumerate(results) if r.uses]
        if len(results) > 1 and len(used) == 1:
            expr, results = f"{expr}[{used[0]}]", [results[used[0]]]
        targets = []
        for r in results:
            if len(results) > 1 and not r.uses:
                targets.append("_")
                continue
            name = self.fresh(r.name_hint)
            src = self.values[view_of] if view_of is not None else None
            self.values[r] = _Value(
                name, True,
                root=src.root if src else None,
                external=src.external if src else False,
                overlap=(src.overlap if src else False) or overlap,
            )
            targets.append(name)
        defines = [n for n in targets if n != "_"]
        self.lines.append(_Line(f"{', '.join(targets)} = {expr}", self._reads, defines))
        self._reads = []

    # ------------------------------------------------------------------ ops

    def constant(self, op: g.ConstantOp) -> None:
        attr = op.value
        assert isinstance(attr, DenseIntOrFPElementsAttr)
        key = (attr.type, bytes(attr.data.data))
        if key not in self.constants:
            array = constant_value(attr)
            self.constants[key] = _Value(None, False, external=True, constant=array,
                                         literal=_scalar_literal(array)
                                         if array.ndim == 0 else None)
        self.values[op.result] = self.constants[key]

    def op(self, op: Operation) -> None:
        emitter = _EMITTERS.get(type(op))
        if emitter is None:
            raise GraphTorchError(
                f"no torch code for op '{op.name}' in @{self.func.sym_name.data}"
                " (the cpu executor runs graph-level functions)")
        emitter(self, op)

    def fused(self, op: g.FusedOp) -> None:
        block = op.body.block
        for arg, operand in zip(block.args, op.inputs, strict=True):
            self.alias(arg, operand)
        for inner in block.ops:
            if isinstance(inner, g.YieldOp):
                for result, value in zip(op.outputs, inner.values, strict=True):
                    self.alias(result, value)
            else:
                self.op(inner)

    # ------------------------------------------------------------------ function

    def run(self) -> str:
        """The module source of the function; sets :attr:`fn_name`."""
        block = self.func.body.block
        params = []
        for arg in block.args:
            name = self.fresh(arg.name_hint or "arg")
            self.values[arg] = _Value(name, True, external=True)
            params.append(name)
        name = self.func.sym_name.data
        self.fn_name = self.fresh(name)
        for op in block.ops:
            if isinstance(op, ReturnOp):
                self.ret(op.arguments)
            else:
                self.op(op)
        header = [f"# @{name}, generated by mncore_ir.targets.graph_torch", *self.comments,
                  *self.prelude, "", f"def {self.fn_name}({', '.join(params)}):",
                  "    with _no_grad():"]
        return "\n".join([*header, *self.body(set(params))]) + "\n"

    def ret(self, values: Sequence[SSAValue]) -> None:
        """The return line, cloning results that would share memory with an argument, a
        constant or an earlier result, and making broadcast views contiguous."""
        seen: set[int] = set()
        out = []
        for value in values:
            expr = self.t(value)
            v = self.values[value]
            if v.external or id(v.root) in seen:
                expr += ".clone()"
            elif v.overlap:
                expr += ".contiguous()"
            seen.add(id(v.root))
            out.append(expr)
        self.lines.append(_Line(f"return {_tuple(out) if out else '()'}", self._reads, []))
        self._reads = []

    def body(self, params: set[str]) -> list[str]:
        """The body lines; each intermediate is deleted after its last use, so that its
        memory can be reused by later ops."""
        last: dict[str, int] = {}
        for i, line in enumerate(self.lines):
            for name in (*line.defines, *line.reads):
                last[name] = i
        out = []
        for i, line in enumerate(self.lines):
            dead = [] if line.text.startswith("return") else [
                n for n in dict.fromkeys((*line.reads, *line.defines))
                if last[n] == i and n not in params]
            out.append(f"        {line.text}" + (f"; del {', '.join(dead)}" if dead else ""))
        return out or ["        return ()"]


# --------------------------------------------------------------------------- emitters

Emitter = Callable[[_Generator, Any], None]
_EMITTERS: dict[type[Operation], Emitter] = {}


def _emits(*op_types: type[Operation]) -> Callable[[Emitter], Emitter]:
    def register(fn: Emitter) -> Emitter:
        for t in op_types:
            _EMITTERS[t] = fn
        return fn

    return register


def _rank(value: SSAValue) -> int:
    return len(g.shape_of(value))


def _cast_to(expr: str, result: SSAValue) -> str:
    return f"{expr}.to({torch_dtype(g.element_type_of(result))})"


_UNARY_FUNCS: dict[type[Operation], str] = {
    g.NegOp: "torch.neg", g.AbsOp: "torch.abs", g.ReluOp: "torch.relu",
    g.ExpOp: "torch.exp", g.LogOp: "torch.log", g.SqrtOp: "torch.sqrt",
    g.RsqrtOp: "torch.rsqrt", g.ReciprocalOp: "torch.reciprocal", g.TanhOp: "torch.tanh",
    g.SigmoidOp: "torch.sigmoid", g.ErfOp: "torch.erf", g.NotOp: "torch.logical_not",
}


@_emits(*_UNARY_FUNCS)
def _unary(gen: _Generator, op: g.UnaryOp) -> None:
    if isinstance(op, g.AbsOp | g.ReluOp) and g.element_type_of(op.input) == g.i1:
        gen.alias(op.result, op.input)  # |b| and max(b, false) of a bool are b
        return
    gen.emit(op.results, f"{_UNARY_FUNCS[type(op)]}({gen.t(op.input)})")


#: Binary ops written as Python operators; the right operand may be a literal.
_OPERATORS: dict[type[Operation], str] = {
    g.AddOp: "+", g.SubOp: "-", g.MulOp: "*", g.DivOp: "/", g.PowOp: "**",
    g.EqOp: "==", g.NeOp: "!=", g.LtOp: "<", g.LeOp: "<=", g.GtOp: ">", g.GeOp: ">=",
}


@_emits(*_OPERATORS)
def _operator(gen: _Generator, op: g.BinaryOp) -> None:
    gen.emit(op.results, f"{gen.t(op.lhs)} {_OPERATORS[type(op)]} {gen.s(op.rhs)}")


@_emits(g.MaximumOp, g.MinimumOp)
def _min_max(gen: _Generator, op: g.BinaryOp) -> None:
    fn = "torch.maximum" if isinstance(op, g.MaximumOp) else "torch.minimum"
    gen.emit(op.results, f"{fn}({gen.t(op.lhs)}, {gen.t(op.rhs)})")


@_emits(g.AndOp, g.OrOp)
def _logical(gen: _Generator, op: g.BinaryOp) -> None:
    a, b = gen.t(op.lhs), gen.t(op.rhs)
    if g.element_type_of(op.result) == g.i1:
        gen.emit(op.results, f"{a} {'&' if isinstance(op, g.AndOp) else '|'} {b}")
        return
    fn = "torch.logical_and" if isinstance(op, g.AndOp) else "torch.logical_or"
    gen.emit(op.results, _cast_to(f"{fn}({a}, {b})", op.result))


@_emits(g.WhereOp)
def _where(gen: _Generator, op: g.WhereOp) -> None:
    cond = gen.t(op.cond)
    a = gen.t(op.lhs) if gen.is_literal(op.lhs) and gen.is_literal(op.rhs) else gen.s(op.lhs)
    gen.emit(op.results, f"torch.where({cond}, {a}, {gen.s(op.rhs)})")


@_emits(g.ConvertOp)
def _convert(gen: _Generator, op: g.ConvertOp) -> None:
    if op.input.type == op.result.type:
        gen.alias(op.result, op.input)
        return
    gen.emit(op.results, _cast_to(gen.t(op.input), op.result))


@_emits(g.GeluOp)
def _gelu(gen: _Generator, op: g.GeluOp) -> None:
    approximate = op.approximate.data
    extra = f", approximate={approximate!r}" if approximate != "none" else ""
    gen.emit(op.results, f"F.gelu({gen.t(op.input)}{extra})")


@_emits(g.GeluBackwardOp)
def _gelu_backward(gen: _Generator, op: g.GeluBackwardOp) -> None:
    fn = gen.global_op("gelu_backward.default")
    gen.emit(op.results, f"{fn}({gen.t(op.grad)}, {gen.t(op.input)}, "
                         f"approximate={op.approximate.data!r})")


@_emits(g.ConstantOp)
def _constant(gen: _Generator, op: g.ConstantOp) -> None:
    gen.constant(op)


@_emits(g.FusedOp)
def _fused(gen: _Generator, op: g.FusedOp) -> None:
    gen.fused(op)


# --------------------------------------------------------------------------- reductions


@_emits(g.SumOp, g.MeanOp, g.AmaxOp)
def _reduce(gen: _Generator, op: g.ReduceOp) -> None:
    p = op.props()
    dims = tuple(p["dims"])  # type: ignore[arg-type]
    if not dims:  # reduces nothing (torch would read ``()`` as every dimension)
        gen.alias(op.result, op.input)
        return
    x = gen.t(op.input)
    element = g.element_type_of(op.input)
    keep = ", keepdim=True" if p.get("keepdim") else ""
    fn = {g.SumOp: "torch.sum", g.MeanOp: "torch.mean", g.AmaxOp: "torch.amax"}[type(op)]
    if isinstance(op, g.MeanOp) and not g.is_float(element):
        # numpy's mean of integers is a float64 mean, cast back (torch refuses).
        gen.emit(op.results, _cast_to(f"torch.mean({x}.to(torch.float64), {_tuple(dims)}"
                                      f"{keep})", op.result))
        return
    expr = f"{fn}({x}, {_tuple(dims)}{keep})"
    if isinstance(op, g.SumOp) and not g.is_float(element) and element != g.i64:
        expr = _cast_to(expr, op.result)  # torch sums integers and bools as int64
    gen.emit(op.results, expr)


@_emits(g.MatmulOp)
def _matmul(gen: _Generator, op: g.MatmulOp) -> None:
    gen.emit(op.results, f"{gen.t(op.lhs)} @ {gen.t(op.rhs)}")


# --------------------------------------------------------------------------- shapes


@_emits(g.ReshapeOp)
def _reshape(gen: _Generator, op: g.ReshapeOp) -> None:
    if op.input.type == op.result.type:
        gen.alias(op.result, op.input)
        return
    gen.emit(op.results, f"{gen.t(op.input)}.reshape({_tuple(g.shape_of(op.result))})",
             view_of=op.input)


@_emits(g.ExpandOp)
def _expand(gen: _Generator, op: g.ExpandOp) -> None:
    if op.input.type == op.result.type:
        gen.alias(op.result, op.input)
        return
    gen.emit(op.results, f"{gen.t(op.input)}.expand({_tuple(g.shape_of(op.result))})",
             view_of=op.input, overlap=True)


@_emits(g.PermuteOp)
def _permute(gen: _Generator, op: g.PermuteOp) -> None:
    perm = tuple(op.props()["perm"])  # type: ignore[arg-type]
    if perm == tuple(range(len(perm))):
        gen.alias(op.result, op.input)
        return
    gen.emit(op.results, f"{gen.t(op.input)}.permute({_tuple(perm)})", view_of=op.input)


@_emits(g.SliceOp)
def _slice(gen: _Generator, op: g.SliceOp) -> None:
    p = op.props()
    (dim,) = g.normalize_dims([p["dim"]], _rank(op.input))  # type: ignore[list-item]
    step = p.get("step", 1)
    index = f"{p['start']}:{p['end']}" + (f":{step}" if step != 1 else "")
    gen.emit(op.results, f"{gen.t(op.input)}[{':, ' * dim}{index}]", view_of=op.input)


@_emits(g.ConcatOp)
def _concat(gen: _Generator, op: g.ConcatOp) -> None:
    inputs = [gen.t(v) for v in op.inputs]
    gen.emit(op.results, f"torch.cat({_tuple(inputs)}, {op.props()['dim']})")


# --------------------------------------------------------------------------- indexing


@_emits(g.EmbeddingOp)
def _embedding(gen: _Generator, op: g.EmbeddingOp) -> None:
    gen.emit(op.results, f"torch.embedding({gen.t(op.weight)}, {gen.t(op.indices)})")


@_emits(g.IndexPutOp)
def _index_put(gen: _Generator, op: g.IndexPutOp) -> None:
    accumulate = bool(op.props().get("accumulate"))
    gen.emit(op.results, f"torch.index_put({gen.t(op.input)}, ({gen.t(op.indices)},), "
                         f"{gen.t(op.values)}, {accumulate})")


@_emits(g.GatherOp)
def _gather(gen: _Generator, op: g.GatherOp) -> None:
    gen.emit(op.results, f"torch.gather({gen.t(op.input)}, {op.props()['dim']}, "
                         f"{gen.t(op.index)})")


@_emits(g.ScatterOp)
def _scatter(gen: _Generator, op: g.ScatterOp) -> None:
    x, dim, index = gen.t(op.input), op.props()["dim"], gen.t(op.index)
    if gen.is_literal(op.value):
        value = gen.s(op.value)
    else:  # a 0-d tensor: scattered as a broadcast source of the index's shape
        value = f"{gen.t(op.value)}.expand({_tuple(g.shape_of(op.index))})"
    gen.emit(op.results, f"torch.scatter({x}, {dim}, {index}, {value})")


# --------------------------------------------------------------------------- composites


@_emits(g.SoftmaxOp, g.LogSoftmaxOp)
def _softmax(gen: _Generator, op: g.RowOp) -> None:
    fn = "torch.softmax" if isinstance(op, g.SoftmaxOp) else "torch.log_softmax"
    gen.emit(op.results, f"{fn}({gen.t(op.input)}, {op.props()['dim']})")


@_emits(g.SoftmaxBackwardOp, g.LogSoftmaxBackwardOp)
def _softmax_backward(gen: _Generator, op: g.RowBackwardOp) -> None:
    fn = ("torch._softmax_backward_data" if isinstance(op, g.SoftmaxBackwardOp)
          else "torch._log_softmax_backward_data")
    dtype = torch_dtype(g.element_type_of(op.output))
    gen.emit(op.results, f"{fn}({gen.t(op.grad)}, {gen.t(op.output)}, "
                         f"{op.props()['dim']}, {dtype})")


def _output_mask(op: Operation) -> str:
    """Which results to compute: the used ones (all when none is)."""
    mask = [bool(r.uses) for r in op.results]
    return repr(mask if any(mask) else [True] * len(mask))


@_emits(g.LayerNormOp)
def _layer_norm(gen: _Generator, op: g.LayerNormOp) -> None:
    p = op.props()
    shape = g.shape_of(op.input)[-p["normalized_dims"]:]  # type: ignore[operator]
    gen.emit(op.results, f"torch.native_layer_norm({gen.t(op.input)}, {_tuple(shape)}, "
                         f"{gen.t(op.weight)}, {gen.t(op.bias)}, {float(p['eps'])!r})")  # type: ignore[arg-type]


@_emits(g.LayerNormBackwardOp)
def _layer_norm_backward(gen: _Generator, op: g.LayerNormBackwardOp) -> None:
    shape = g.shape_of(op.input)[-op.props()["normalized_dims"]:]  # type: ignore[operator]
    fn = gen.global_op("native_layer_norm_backward.default")
    # torch computes the bias gradient only for a defined bias; its values do not
    # matter, so the weight (of the same shape) stands in.
    weight = gen.t(op.weight)
    gen.emit(op.results, f"{fn}({gen.t(op.grad)}, {gen.t(op.input)}, {_tuple(shape)}, "
                         f"{gen.t(op.mean)}, {gen.t(op.rstd)}, {weight}, {weight}, "
                         f"{_output_mask(op)})")


def _window(op: g.WindowOp) -> str:
    p = op.props()
    return ", ".join(_tuple(p[n]) for n in ("stride", "padding", "dilation"))  # type: ignore[arg-type]


@_emits(g.Conv2dOp)
def _conv2d(gen: _Generator, op: g.Conv2dOp) -> None:
    gen.emit(op.results, f"torch.conv2d({gen.t(op.input)}, {gen.t(op.weight)}, "
                         f"{gen.t(op.bias)}, {_window(op)}, {op.props().get('groups', 1)})")


@_emits(g.Conv2dBackwardOp)
def _conv2d_backward(gen: _Generator, op: g.Conv2dBackwardOp) -> None:
    fn = gen.global_op("convolution_backward.default")
    out_channels = g.shape_of(op.weight)[0]
    gen.emit(op.results, f"{fn}({gen.t(op.grad)}, {gen.t(op.input)}, {gen.t(op.weight)}, "
                         f"[{out_channels}], {_window(op)}, False, (0, 0), "
                         f"{op.props().get('groups', 1)}, {_output_mask(op)})")


def _pool_args(op: g.MaxPool2dOp) -> str:
    kernel = op.props()["kernel"]
    padding = op.props()["padding"]
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):  # type: ignore[arg-type]
        raise GraphTorchError(f"graph.max_pool2d: padding {list(padding)} exceeds half the "  # type: ignore[arg-type]
                              f"kernel {list(kernel)} (torch's max_pool2d refuses it)")  # type: ignore[arg-type]
    return f"{_tuple(kernel)}, {_window(op)}, False"  # type: ignore[arg-type]


@_emits(g.MaxPool2dOp)
def _max_pool2d(gen: _Generator, op: g.MaxPool2dOp) -> None:
    # torch's indices are the interpreter's: the flat h * W + w position in the
    # unpadded input plane.
    fn = gen.global_op("max_pool2d_with_indices.default")
    gen.emit(op.results, f"{fn}({gen.t(op.input)}, {_pool_args(op)})")


@_emits(g.MaxPool2dBackwardOp)
def _max_pool2d_backward(gen: _Generator, op: g.MaxPool2dBackwardOp) -> None:
    pool = op.indices.owner
    grad, x, indices = gen.t(op.grad), gen.t(op.input), gen.t(op.indices)
    if g.element_type_of(op.grad) != g.element_type_of(op.result):
        grad = _cast_to(grad, op.result)
    if isinstance(pool, g.MaxPool2dOp) and g.shape_of(pool.input) == g.shape_of(op.input):
        fn = gen.global_op("max_pool2d_with_indices_backward.default")
        gen.emit(op.results, f"{fn}({grad}, {x}, {_pool_args(pool)}, {indices})")
        return
    # Indices of unknown origin: add each gradient at its index, as the interpreter does.
    n, c, h, w = g.shape_of(op.input)
    planes = _tuple((n * c, math.prod(g.shape_of(op.indices)[2:])))  # not -1: n may be 0
    dtype = torch_dtype(g.element_type_of(op.result))
    gen.emit(op.results, f"torch.zeros(({n * c}, {h * w}), dtype={dtype}).scatter_add_(1, "
                         f"{indices}.reshape({planes}), {grad}.reshape({planes}))"
                         f".reshape({_tuple((n, c, h, w))})")


# --------------------------------------------------------------------------- entry points

_program_ids = itertools.count()


def compile_function(func: FuncOp) -> TorchProgram:
    """Generate, compile and load the torch code of a graph-level function.

    The program never writes to its arguments, and each result it returns owns its
    memory (results that would alias an argument, a constant or another result are
    cloned), so callers may update results in place. Raises :class:`GraphTorchError`
    naming the first op it has no code for.
    """
    if not func.body.blocks:
        raise GraphTorchError(f"@{func.sym_name.data} is a declaration: it has no body")
    gen = _Generator(func)
    source = gen.run()
    filename = f"<graph_torch @{func.sym_name.data} #{next(_program_ids)}>"
    namespace = {k: v for k, v in gen.globals.items() if v is not None}
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[gen.fn_name]
    # Tracebacks through the generated code show its lines, while the code lives.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(fn, linecache.cache.pop, filename, None)
    return TorchProgram(source, fn)


def compile_module(module: ModuleOp, name: str | None = None) -> TorchProgram:
    """:func:`compile_function` of the function ``name`` (or the module's entry)."""
    return compile_function(find_function(module, name))

