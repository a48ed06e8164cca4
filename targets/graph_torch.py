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
import linecache
import math
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics import SEMANTICS, semantics
from mncore_ir.dialects.values import find_function
from mncore_ir.targets.graph_torch_codegen import (
    EMITTERS,
    Emitter,
    Generator,
    GraphTorchError,
    literal_tuple,
    torch_dtype,
)

__all__ = ["GraphTorchError", "TorchProgram", "compile_function", "compile_module"]


@dataclass(frozen=True)
class TorchProgram:
    """A compiled function: ``fn(*args)`` takes the function's arguments as torch
    tensors and returns its results as a tuple; ``source`` is the generated code."""

    source: str
    fn: Callable[..., tuple[torch.Tensor, ...]]

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.fn(*args)


# --------------------------------------------------------------------------- emitters
#
# Every op is written as its torch spelling from ``graph_semantics``; the emitters here
# add only what code generation needs: aliases for ops that change nothing, scalar
# literals, casts where torch's result dtype differs from the IR's, and the derived
# arguments (shapes, masks) a spelling names.

def _emits(*op_types: type[Operation]) -> Callable[[Emitter], Emitter]:
    def register(fn: Emitter) -> Emitter:
        for t in op_types:
            EMITTERS[t] = fn
        return fn

    return register


def _rank(value: SSAValue) -> int:
    return len(g.shape_of(value))


def _cast_to(expr: str, result: SSAValue) -> str:
    return f"{expr}.to({torch_dtype(g.element_type_of(result))})"


def _literal(attr: Attribute) -> str:
    """A property as a Python literal."""
    if isinstance(attr, DenseArrayBase):
        return literal_tuple([int(v) for v in attr.get_values()])
    if isinstance(attr, IntegerAttr):
        return repr(bool(attr.value.data)) if attr.type == g.i1 else str(attr.value.data)
    if isinstance(attr, FloatAttr):
        return repr(float(attr.value.data))
    if isinstance(attr, StringAttr):
        return repr(attr.data)
    raise GraphTorchError(f"no Python literal for the property {attr}")


def _spell(gen: Generator, op: Operation, operands: Sequence[str], **extra: object) -> str:
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
    fields["shape"] = literal_tuple(g.shape_of(result))
    fields.update((k, str(v)) for k, v in extra.items())
    return spelling.format(*operands, **fields)


def _generic(gen: Generator, op: Operation) -> None:
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
def _magnitude(gen: Generator, op: g.UnaryOp) -> None:
    if g.element_type_of(op.input) == g.i1:
        gen.alias(op.result, op.input)  # |b| and max(b, false) of a bool are b
        return
    _generic(gen, op)


#: Binary ops written as Python operators: the right operand may be a literal.
_OPERATORS = tuple(op for op in g.ELEMENTWISE_BINARY
                   if (semantics(op).torch or "").startswith("{0} "))


@_emits(*_OPERATORS, g.MatmulOp, g.MatmulPermutedOp)
def _operator(gen: Generator, op: g.BinaryOp | g.MatmulOp | g.MatmulPermutedOp) -> None:
    if _scaling(gen, op) or _scaled_sum(gen, op):
        return
    lhs = gen.t(op.lhs)
    rhs = gen.s(op.rhs) if isinstance(op, g.BinaryOp) else gen.t(op.rhs)
    expr = _spell(gen, op, [lhs, rhs])
    inplace = [(op.lhs, _into(expr, lhs))] if isinstance(op, g.BinaryOp) else []
    if isinstance(op, g.BinaryOp) and not gen.is_literal(op.rhs):
        inplace.append((op.rhs, _into(expr, rhs)))
    gen.emit(op.results, expr, fresh=True, inplace=inplace)  # type: ignore[arg-type]


def _scaling(gen: Generator, op: Operation) -> bool:
    """``x * s`` (``s`` a 0-d tensor or a literal, f32/f64) whose one use is an add or
    a subtraction of the same type: no line; the sum is written as one ``addcmul``, or
    ``add`` with ``alpha`` for a literal (an optimizer's ``p - lr * g``, which would
    otherwise make a temporary of the parameter's size; eager's optimizers write
    ``add_(g, alpha=-lr)``)."""
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
        if x.type == typ and g.shape_of(scale) == () and (
                g.element_type_of(scale) == g.element_type_of(op.result)):
            gen.scaled[op.result] = (x, scale)
            return True
    return False


def _scaled_sum(gen: Generator, op: Operation) -> bool:
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
    names = [gen.t(a), gen.t(x)]
    if gen.is_literal(scale):
        alpha = f"-{gen.s(scale)}" if isinstance(op, g.SubOp) else gen.s(scale)
        expr = f"torch.add({', '.join(names)}, alpha={alpha})"
    else:
        value = ", value=-1" if isinstance(op, g.SubOp) else ""
        expr = f"torch.addcmul({', '.join([*names, gen.t(scale)])}{value})"
    gen.emit(op.results, expr, fresh=True,
             inplace=[(v, f"{expr[:-1]}, out={name})")
                      for v, name in zip((a, x), names, strict=False)])
    return True


@_emits(g.AndOp, g.OrOp)
def _logical(gen: Generator, op: g.BinaryOp) -> None:
    expr = _spell(gen, op, [gen.t(op.lhs), gen.t(op.rhs)])
    gen.emit(op.results, expr if g.element_type_of(op.result) == g.i1
             else _cast_to(expr, op.result))


@_emits(g.WhereOp)
def _where(gen: Generator, op: g.WhereOp) -> None:
    cond = gen.t(op.cond)
    a = gen.t(op.lhs) if gen.is_literal(op.lhs) and gen.is_literal(op.rhs) else gen.s(op.lhs)
    b = gen.s(op.rhs)
    expr = _spell(gen, op, [cond, a, b])
    # a new tensor, or written into a branch of the result's type that dies with it
    # (relu's gradient): where's out= takes tensors only, masked_fill_ a number
    inplace: list[tuple[SSAValue, str]] = []
    if not gen.is_literal(op.lhs) and not gen.is_literal(op.rhs):
        inplace = [(op.lhs, f"{expr[:-1]}, out={a})"), (op.rhs, f"{expr[:-1]}, out={b})")]
    elif (not gen.is_literal(op.rhs) and op.cond is not op.rhs
          and g.element_type_of(op.lhs) == g.element_type_of(op.result)
          and isinstance(g.element_type_of(op.result), Float32Type | Float64Type)):
        # a number of the result's own type (masked_fill_ refuses one it would round
        # to infinity, where where() rounds it)
        inplace = [(op.rhs, f"{b}.masked_fill_({cond}, {a})")]
    gen.emit(op.results, expr, fresh=True, inplace=inplace)


@_emits(g.ConvertOp)
def _convert(gen: Generator, op: g.ConvertOp) -> None:
    if op.input.type == op.result.type:
        gen.alias(op.result, op.input)
        return
    _generic(gen, op)


@_emits(g.ConstantOp)
def _constant(gen: Generator, op: g.ConstantOp) -> None:
    gen.constant(op)


@_emits(g.FusedOp)
def _fused(gen: Generator, op: g.FusedOp) -> None:
    gen.fused(op)


@_emits(g.SumOp, g.MeanOp, g.AmaxOp)
def _reduce(gen: Generator, op: g.ReduceOp) -> None:
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
def _view(gen: Generator, op: g.ReshapeOp | g.ExpandOp | g.PermuteOp) -> None:
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
def _slice(gen: Generator, op: g.SliceOp) -> None:
    (dim,) = g.normalize_dims([op.dim.value.data], _rank(op.input))
    step = op.step.value.data
    index = f"{op.start.value.data}:{op.end.value.data}" + (f":{step}" if step != 1 else "")
    gen.emit(op.results, _spell(gen, op, [gen.t(op.input)], index=f"{':, ' * dim}{index}"),
             view_of=op.input)


@_emits(g.ConcatOp)
def _concat(gen: Generator, op: g.ConcatOp) -> None:
    gen.emit(op.results, _spell(gen, op, [], inputs=literal_tuple([gen.t(v) for v in op.inputs])))


@_emits(g.ScatterOp)
def _scatter(gen: Generator, op: g.ScatterOp) -> None:
    x, index = gen.t(op.input), gen.t(op.index)
    if gen.is_literal(op.value):
        value = gen.s(op.value)
    else:  # a 0-d tensor: scattered as a broadcast source of the index's shape
        value = f"{gen.t(op.value)}.expand({literal_tuple(g.shape_of(op.index))})"
    gen.emit(op.results, _spell(gen, op, [x, index, value]))


def _output_mask(op: Operation) -> str:
    """Which results to compute: the used ones (all when none is)."""
    mask = [bool(r.uses) for r in op.results]
    return repr(mask if any(mask) else [True] * len(mask))


@_emits(g.LayerNormOp, g.LayerNormBackwardOp)
def _layer_norm(gen: Generator, op: g.LayerNormOp | g.LayerNormBackwardOp) -> None:
    shape = g.shape_of(op.input)[-op.normalized_dims.value.data:]
    gen.emit(op.results, _spell(gen, op, [gen.t(o) for o in op.operands],
                                normalized_shape=literal_tuple(shape), mask=_output_mask(op)))


@_emits(g.Conv2dBackwardOp)
def _conv2d_backward(gen: Generator, op: g.Conv2dBackwardOp) -> None:
    gen.emit(op.results, _spell(gen, op, [gen.t(o) for o in op.operands],
                                out_channels=g.shape_of(op.weight)[0], mask=_output_mask(op)))


def _check_pool(op: g.MaxPool2dOp) -> None:
    kernel, padding = op.kernel.get_values(), op.padding.get_values()
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        raise GraphTorchError(f"graph.max_pool2d: padding {list(padding)} exceeds half the "
                              f"kernel {list(kernel)} (torch's max_pool2d refuses it)")


@_emits(g.MaxPool2dOp)
def _max_pool2d(gen: Generator, op: g.MaxPool2dOp) -> None:
    _check_pool(op)
    _generic(gen, op)


@_emits(g.MaxPool2dBackwardOp)
def _max_pool2d_backward(gen: Generator, op: g.MaxPool2dBackwardOp) -> None:
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
    planes = literal_tuple((n * c, math.prod(g.shape_of(op.indices)[2:])))  # not -1: n may be 0
    dtype = torch_dtype(g.element_type_of(op.result))
    gen.emit(op.results, f"torch.zeros(({n * c}, {h * w}), dtype={dtype}).scatter_add_(1, "
                         f"{indices}.reshape({planes}), {grad}.reshape({planes}))"
                         f".reshape({literal_tuple((n, c, h, w))})")


@_emits(*g.COLLECTIVES)
def _collective(gen: Generator, op: g.CollectiveOp) -> None:
    from mncore_ir.targets import torch_distributed  # (imported where a graph needs it)
    gen.globals["_dist"] = torch_distributed
    reduce = [repr(op.reduce.data)] if isinstance(op, g.ReducingCollectiveOp) else []
    args = [gen.t(op.input), *reduce, repr(op.group.data), str(op.group_size.value.data)]
    gen.emit(op.results, f"_dist.{op.name.removeprefix('graph.')}({', '.join(args)})")


for _op_type, _entry in SEMANTICS.items():  # every other op: its spelling as it stands
    if _entry.torch is not None and _op_type not in EMITTERS:
        EMITTERS[_op_type] = _generic


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
    gen = Generator(func, donated=donated)
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

