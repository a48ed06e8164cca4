"""The cpu executor: a graph-level ``func.func`` as generated straight-line torch code.

:func:`compile_function` writes one line of Python per graph op (``graph.fused`` bodies
are inlined, line by line), compiles the source once and returns a
:class:`TorchProgram`. All op properties (dims, shapes, permutations, window sizes,
dtypes) are resolved at code generation time and written as literals, so a call runs
only torch ops: it is the fast default device of the lazy-tensor runtime.

Each op is written as its torch spelling in ``dialects/graph_semantics`` (collectives:
calls into ``torch.distributed``); meaning is that of the table's numpy references
(the interpreter): results have the IR's result types (a cast is written wherever torch
would promote differently), and index conventions are the references'.

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
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics import SEMANTICS, semantics
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
        # torch refuses a Python float past the f32 range: the shortest text of the
        # largest f32 (3.4028235e+38) is past it, as a double
        if np.float32(float(short)) == array and abs(float(short)) <= _F32_MAX:
            text = short
    return f"({text})" if text.startswith("-") else text


_F32_MAX = float(np.finfo(np.float32).max)


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
    fresh: bool = False
    """Memory of its own that nothing else reads: an op's new result, not a view."""

    def __post_init__(self) -> None:
        if self.root is None:
            self.root = self


@dataclass
class _Line:
    text: str
    reads: list[str]
    defines: list[str]
    roots: dict[str, str] = field(default_factory=dict)
    """The fresh local each defined name shares memory with (itself if fresh)."""
    inplace: list[tuple[str, str]] = field(default_factory=list)
    """(operand, text): the line written into that operand's memory, where it may be."""


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
    donated: frozenset[int] = frozenset()
    """Arguments the caller gives up: the code may write into them."""
    scaled: dict[SSAValue, tuple[SSAValue, SSAValue]] = field(default_factory=dict)
    """Products ``x * s`` written where their one use, a sum, is (see ``_scaling``)."""
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
            # in the element type's dtype: a narrow float's values are held in f32
            self.globals[v.expr] = torch.from_numpy(v.constant).to(
                getattr(torch, torch_dtype(value.type.element_type)[len("torch."):]))
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
             view_of: SSAValue | None = None, overlap: bool = False, fresh: bool = False,
             inplace: Sequence[tuple[SSAValue, str]] = ()) -> None:
        """One line: ``results = expr`` (unused results of several become ``_``; a
        single used one of several is picked by index). ``view_of``: the results may
        share memory with that value; ``fresh``: they are new tensors of their own;
        ``inplace``: (operand, expression) the line may instead be, writing into that
        operand where :meth:`body` finds it dead (see :meth:`reusable`)."""
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
                fresh=fresh and src is None,
            )
            targets.append(name)
        defines = [n for n in targets if n != "_"]
        roots = {n: root.expr for n, r in zip(targets, results, strict=False) if n != "_"
                 and (root := self.values[r].root) is not None and root.fresh and root.expr}
        options = [(self.values[operand].expr or "", f"{targets[0]} = {text}")
                   for operand, text in inplace
                   if len(targets) == 1 and self.reusable(operand, results[0])]
        self.lines.append(_Line(f"{', '.join(targets)} = {expr}", self._reads, defines,
                                roots, options))
        self._reads = []

    def reusable(self, operand: SSAValue, result: SSAValue) -> bool:
        """Whether ``result`` may be written into ``operand``'s memory, as far as types
        tell: a fresh local of the result's shape and element type (liveness is for
        :meth:`body`)."""
        v = self.values[operand]
        return (v.fresh and v.local and not v.external and v.root is v
                and operand.type == result.type)

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
        for i, arg in enumerate(block.args):
            name = self.fresh(arg.name_hint or "arg")
            given = i in self.donated
            self.values[arg] = _Value(name, True, external=not given, fresh=given)
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
        donated = [params[i] for i in sorted(self.donated)]
        return "\n".join([*header, *self.body(set(params), donated)]) + "\n"

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

    def body(self, params: set[str], donated: Sequence[str] = ()) -> list[str]:
        """The body lines; each intermediate is deleted after its last use, so that its
        memory can be reused by later ops, and an elementwise op whose operand dies
        with it writes its result into that operand (no new tensor: a 4 MB result
        costs an allocation, page faults and a cold write) where no other name reads
        that memory later."""
        last: dict[str, int] = {}
        for i, line in enumerate(self.lines):
            for name in (*line.defines, *line.reads):
                last[name] = i
        # a fresh local or donated argument: the names on its memory
        sharing: dict[str, list[str]] = {name: [name] for name in donated}
        out = []
        for i, line in enumerate(self.lines):
            text = line.text
            for operand, inplace in line.inplace:
                if operand in sharing and last[operand] == i and all(
                        last[n] < i for n in sharing[operand] if n != operand):
                    text = inplace
                    line.roots = dict.fromkeys(line.defines, line.defines[0])
                    break
            for name, root in line.roots.items():
                sharing.setdefault(root, []).append(name)
            dead = [] if text.startswith("return") else [
                n for n in dict.fromkeys((*line.reads, *line.defines))
                if last[n] == i and n not in params]
            out.append(f"        {text}" + (f"; del {', '.join(dead)}" if dead else ""))
        return out or ["        return ()"]


# --------------------------------------------------------------------------- emitters
#
# Every op is written as its torch spelling from ``graph_semantics``; the emitters here
# add only what code generation needs: aliases for ops that change nothing, scalar
# literals, casts where torch's result dtype differs from the IR's, and the derived
# arguments (shapes, masks) a spelling names.

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


def _literal(attr: Attribute) -> str:
    """A property as a Python literal."""
    if isinstance(attr, DenseArrayBase):
        return _tuple([int(v) for v in attr.get_values()])
    if isinstance(attr, IntegerAttr):
        return repr(bool(attr.value.data)) if attr.type == g.i1 else str(attr.value.data)
    if isinstance(attr, FloatAttr):
        return repr(float(attr.value.data))
    if isinstance(attr, StringAttr):
        return repr(attr.data)
    raise GraphTorchError(f"no Python literal for the property {attr}")


def _spell(gen: _Generator, op: Operation, operands: Sequence[str], **extra: object) -> str:
    """``op``'s torch spelling from the semantics table, on operand expressions, with
    its properties (and ``extra`` fields) as literals."""
    spelling = semantics(type(op)).torch
    if spelling is None:
        raise GraphTorchError(f"{op.name} has no torch spelling")
    if spelling.startswith("aten."):
        path, call = spelling[len("aten."):].split("(", 1)
        spelling = f"{gen.global_op(path)}({call}"
    fields = {name: _literal(attr) for name, attr in op.properties.items()}
    result = op.results[0]
    fields["dtype"] = torch_dtype(g.element_type_of(result))
    fields["shape"] = _tuple(g.shape_of(result))
    fields.update((k, str(v)) for k, v in extra.items())
    return spelling.format(*operands, **fields)


def _generic(gen: _Generator, op: Operation) -> None:
    operands = [gen.t(o) for o in op.operands]
    expr = _spell(gen, op, operands)
    if not isinstance(op, _ELEMENTWISE):
        gen.emit(op.results, expr)
        return
    inplace = [(o, text) for o, name in zip(op.operands, operands, strict=True)
               if (text := _into(expr, name)) is not None]
    gen.emit(op.results, expr, fresh=True, inplace=inplace)


_ELEMENTWISE = (*g.ELEMENTWISE_UNARY, *g.ELEMENTWISE_BINARY)

#: Python operators as the torch functions that take ``out=``.
_OPERATOR_FUNCTIONS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow",
                       "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _into(expr: str, target: str) -> str | None:
    """An elementwise op's expression (``torch.f(a, b)`` or ``a op b``) writing its
    result into ``target`` (one of its operands): the same kernel, no new tensor.
    None for another form of expression."""
    if expr == f"torch.relu({target})":  # relu has no out= variant
        return f"torch.relu_({target})"
    lhs, operator, rhs = [*expr.split(" ", 2), "", ""][:3]
    if operator in _OPERATOR_FUNCTIONS:
        return f"torch.{_OPERATOR_FUNCTIONS[operator]}({lhs}, {rhs}, out={target})"
    if re.fullmatch(r"torch\.[\w.]+\([^()]*\)", expr):
        return f"{expr[:-1]}, out={target})"
    return None


@_emits(g.AbsOp, g.ReluOp)
def _magnitude(gen: _Generator, op: g.UnaryOp) -> None:
    if g.element_type_of(op.input) == g.i1:
        gen.alias(op.result, op.input)  # |b| and max(b, false) of a bool are b
        return
    _generic(gen, op)


#: Binary ops written as Python operators: the right operand may be a literal.
_OPERATORS = tuple(op for op in g.ELEMENTWISE_BINARY
                   if (semantics(op).torch or "").startswith("{0} "))


@_emits(*_OPERATORS, g.MatmulOp, g.MatmulPermutedOp)
def _operator(gen: _Generator, op: g.BinaryOp | g.MatmulOp | g.MatmulPermutedOp) -> None:
    if _scaling(gen, op) or _scaled_sum(gen, op):
        return
    lhs = gen.t(op.lhs)
    rhs = gen.s(op.rhs) if isinstance(op, g.BinaryOp) else gen.t(op.rhs)
    expr = _spell(gen, op, [lhs, rhs])
    inplace = [(op.lhs, _into(expr, lhs))] if isinstance(op, g.BinaryOp) else []
    if isinstance(op, g.BinaryOp) and not gen.is_literal(op.rhs):
        inplace.append((op.rhs, _into(expr, rhs)))
    gen.emit(op.results, expr, fresh=True, inplace=inplace)  # type: ignore[arg-type]


def _scaling(gen: _Generator, op: Operation) -> bool:
    """``x * s`` (``s`` a 0-d tensor, f32/f64) whose one use is an add or a subtraction
    of the same type: no line; the sum is written as one ``addcmul`` (an optimizer's
    ``p - lr * g``, which would otherwise make a temporary of the parameter's size)."""
    use = op.result.get_unique_use() if isinstance(op, g.MulOp) else None
    if use is None:
        return False
    user, typ = use.operation, op.result.type
    if (not isinstance(g.element_type_of(op.result), Float32Type | Float64Type)
            or not isinstance(user, g.AddOp | g.SubOp)
            or (isinstance(user, g.SubOp) and use.index != 1)
            or user.lhs.type != typ or user.rhs.type != typ):
        return False
    for x, scale in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if x.type == typ and g.shape_of(scale) == () and not gen.is_literal(scale) and (
                g.element_type_of(scale) == g.element_type_of(op.result)):
            gen.scaled[op.result] = (x, scale)
            return True
    return False


def _scaled_sum(gen: _Generator, op: Operation) -> bool:
    """``a + x * s`` or ``a - x * s`` of a product :func:`_scaling` held back."""
    if not isinstance(op, g.AddOp | g.SubOp):
        return False
    if op.rhs in gen.scaled:
        a, product = op.lhs, op.rhs
    elif isinstance(op, g.AddOp) and op.lhs in gen.scaled:
        a, product = op.rhs, op.lhs
    else:
        return False
    x, scale = gen.scaled.pop(product)
    if a in gen.scaled:  # x * s + y * t: the other product is written on its own
        y, other = gen.scaled.pop(a)
        gen.emit([a], f"{gen.t(y)} * {gen.t(other)}", fresh=True)
    names = [gen.t(a), gen.t(x), gen.t(scale)]
    value = ", value=-1" if isinstance(op, g.SubOp) else ""
    expr = f"torch.addcmul({', '.join(names)}{value})"
    gen.emit(op.results, expr, fresh=True,
             inplace=[(v, f"{expr[:-1]}, out={name})")
                      for v, name in zip((a, x), names, strict=False)])
    return True


@_emits(g.AndOp, g.OrOp)
def _logical(gen: _Generator, op: g.BinaryOp) -> None:
    expr = _spell(gen, op, [gen.t(op.lhs), gen.t(op.rhs)])
    gen.emit(op.results, expr if g.element_type_of(op.result) == g.i1
             else _cast_to(expr, op.result))


@_emits(g.WhereOp)
def _where(gen: _Generator, op: g.WhereOp) -> None:
    cond = gen.t(op.cond)
    a = gen.t(op.lhs) if gen.is_literal(op.lhs) and gen.is_literal(op.rhs) else gen.s(op.lhs)
    gen.emit(op.results, _spell(gen, op, [cond, a, gen.s(op.rhs)]))


@_emits(g.ConvertOp)
def _convert(gen: _Generator, op: g.ConvertOp) -> None:
    if op.input.type == op.result.type:
        gen.alias(op.result, op.input)
        return
    _generic(gen, op)


@_emits(g.ConstantOp)
def _constant(gen: _Generator, op: g.ConstantOp) -> None:
    gen.constant(op)


@_emits(g.FusedOp)
def _fused(gen: _Generator, op: g.FusedOp) -> None:
    gen.fused(op)


@_emits(g.SumOp, g.MeanOp, g.AmaxOp)
def _reduce(gen: _Generator, op: g.ReduceOp) -> None:
    if not op.dims.get_values():  # reduces nothing (torch would read ``()`` as every dimension)
        gen.alias(op.result, op.input)
        return
    x = gen.t(op.input)
    element = g.element_type_of(op.input)
    if isinstance(op, g.MeanOp) and not g.is_float(element):
        # numpy's mean of integers is a float64 mean, cast back (torch refuses).
        gen.emit(op.results, _cast_to(_spell(gen, op, [f"{x}.to(torch.float64)"]), op.result))
        return
    expr = _spell(gen, op, [x])
    if isinstance(op, g.SumOp) and not g.is_float(element) and element != g.i64:
        expr = _cast_to(expr, op.result)  # torch sums integers and bools as int64
    gen.emit(op.results, expr)


@_emits(g.ReshapeOp, g.ExpandOp, g.PermuteOp)
def _view(gen: _Generator, op: g.ReshapeOp | g.ExpandOp | g.PermuteOp) -> None:
    """Views: no line where the view is the input itself."""
    if isinstance(op, g.PermuteOp):
        perm = list(op.perm.get_values())
        identity = perm == sorted(perm)
    else:
        identity = op.input.type == op.result.type
    if identity:
        gen.alias(op.result, op.input)
        return
    gen.emit(op.results, _spell(gen, op, [gen.t(op.input)]), view_of=op.input,
             overlap=isinstance(op, g.ExpandOp))


@_emits(g.SliceOp)
def _slice(gen: _Generator, op: g.SliceOp) -> None:
    (dim,) = g.normalize_dims([op.dim.value.data], _rank(op.input))
    step = op.step.value.data
    index = f"{op.start.value.data}:{op.end.value.data}" + (f":{step}" if step != 1 else "")
    gen.emit(op.results, _spell(gen, op, [gen.t(op.input)], index=f"{':, ' * dim}{index}"),
             view_of=op.input)


@_emits(g.ConcatOp)
def _concat(gen: _Generator, op: g.ConcatOp) -> None:
    gen.emit(op.results, _spell(gen, op, [], inputs=_tuple([gen.t(v) for v in op.inputs])))


@_emits(g.ScatterOp)
def _scatter(gen: _Generator, op: g.ScatterOp) -> None:
    x, index = gen.t(op.input), gen.t(op.index)
    if gen.is_literal(op.value):
        value = gen.s(op.value)
    else:  # a 0-d tensor: scattered as a broadcast source of the index's shape
        value = f"{gen.t(op.value)}.expand({_tuple(g.shape_of(op.index))})"
    gen.emit(op.results, _spell(gen, op, [x, index, value]))


def _output_mask(op: Operation) -> str:
    """Which results to compute: the used ones (all when none is)."""
    mask = [bool(r.uses) for r in op.results]
    return repr(mask if any(mask) else [True] * len(mask))


@_emits(g.LayerNormOp, g.LayerNormBackwardOp)
def _layer_norm(gen: _Generator, op: g.LayerNormOp | g.LayerNormBackwardOp) -> None:
    shape = g.shape_of(op.input)[-op.normalized_dims.value.data:]
    gen.emit(op.results, _spell(gen, op, [gen.t(o) for o in op.operands],
                                normalized_shape=_tuple(shape), mask=_output_mask(op)))


@_emits(g.Conv2dBackwardOp)
def _conv2d_backward(gen: _Generator, op: g.Conv2dBackwardOp) -> None:
    gen.emit(op.results, _spell(gen, op, [gen.t(o) for o in op.operands],
                                out_channels=g.shape_of(op.weight)[0], mask=_output_mask(op)))


def _check_pool(op: g.MaxPool2dOp) -> None:
    kernel, padding = op.kernel.get_values(), op.padding.get_values()
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        raise GraphTorchError(f"graph.max_pool2d: padding {list(padding)} exceeds half the "
                              f"kernel {list(kernel)} (torch's max_pool2d refuses it)")


@_emits(g.MaxPool2dOp)
def _max_pool2d(gen: _Generator, op: g.MaxPool2dOp) -> None:
    _check_pool(op)
    _generic(gen, op)


@_emits(g.MaxPool2dBackwardOp)
def _max_pool2d_backward(gen: _Generator, op: g.MaxPool2dBackwardOp) -> None:
    pool = op.indices.owner
    grad, x, indices = gen.t(op.grad), gen.t(op.input), gen.t(op.indices)
    if g.element_type_of(op.grad) != g.element_type_of(op.result):
        grad = _cast_to(grad, op.result)
    if isinstance(pool, g.MaxPool2dOp) and g.shape_of(pool.input) == g.shape_of(op.input):
        _check_pool(pool)
        window = {name: _literal(attr) for name, attr in pool.properties.items()}
        gen.emit(op.results, _spell(gen, op, [grad, x, indices], **window))
        return
    # Indices of unknown origin: add each gradient at its index, as the reference does.
    n, c, h, w = g.shape_of(op.input)
    planes = _tuple((n * c, math.prod(g.shape_of(op.indices)[2:])))  # not -1: n may be 0
    dtype = torch_dtype(g.element_type_of(op.result))
    gen.emit(op.results, f"torch.zeros(({n * c}, {h * w}), dtype={dtype}).scatter_add_(1, "
                         f"{indices}.reshape({planes}), {grad}.reshape({planes}))"
                         f".reshape({_tuple((n, c, h, w))})")


@_emits(*g.COLLECTIVES)
def _collective(gen: _Generator, op: g.CollectiveOp) -> None:
    from mncore_ir.targets import torch_distributed  # (imported where a graph needs it)
    gen.globals["_dist"] = torch_distributed
    reduce = [repr(op.reduce.data)] if isinstance(op, g.ReducingCollectiveOp) else []
    args = [gen.t(op.input), *reduce, repr(op.group.data), str(op.group_size.value.data)]
    gen.emit(op.results, f"_dist.{op.name.removeprefix('graph.')}({', '.join(args)})")


for _op_type, _entry in SEMANTICS.items():  # every other op: its spelling as it stands
    if _entry.torch is not None and _op_type not in _EMITTERS:
        _EMITTERS[_op_type] = _generic


# --------------------------------------------------------------------------- entry points

_program_ids = itertools.count()


def compile_function(func: FuncOp, donated: frozenset[int] = frozenset()) -> TorchProgram:
    """Generate, compile and load the torch code of a graph-level function.

    The program never writes to its arguments, except those at the indices
    ``donated`` (buffers the caller gives up, as XLA's donated buffers: an elementwise
    op may write its result into one once nothing reads it later, and one may be
    returned as a result), and each result it returns owns its memory (results that
    would alias an argument, a constant or another result are cloned), so callers
    may update results in place. Raises :class:`GraphTorchError` naming the first op
    it has no code for.
    """
    if not func.body.blocks:
        raise GraphTorchError(f"@{func.sym_name.data} is a declaration: it has no body")
    gen = _Generator(func, donated=donated)
    source = gen.run()
    filename = f"<graph_torch @{func.sym_name.data} #{next(_program_ids)}>"
    namespace = {k: v for k, v in gen.globals.items() if v is not None}
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[gen.fn_name]
    # Tracebacks through the generated code show its lines, while the code lives.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(fn, linecache.cache.pop, filename, None)
    return TorchProgram(source, fn)


def compile_module(module: ModuleOp, name: str | None = None,
                   donated: frozenset[int] = frozenset()) -> TorchProgram:
    """:func:`compile_function` of the function ``name`` (or the module's entry)."""
    return compile_function(find_function(module, name), donated)

