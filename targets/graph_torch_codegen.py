"""The cpu executor's code generator (:mod:`mncore_ir.targets.graph_torch`): how the
generated code names values and tensors, which memory each line may share with
another, and the body as lines with deletions after last uses and in-place writes into
operands that die (and arguments the caller donates). The per-op emitters, in
``graph_torch``, register themselves in :data:`EMITTERS`."""

from __future__ import annotations

import itertools
import keyword
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.values import constant_value


class GraphTorchError(Exception):
    """An op (or a form of one) this target has no torch code for."""


TORCH_DTYPES: dict[Attribute, str] = {typ: f"torch.{name}"
                                       for name, typ in g.ELEMENT_TYPES.items()}


def torch_dtype(element_type: Attribute) -> str:
    """The source text of the torch dtype of a graph element type."""
    try:
        return TORCH_DTYPES[element_type]
    except KeyError:
        raise GraphTorchError(f"element type {element_type} has no torch dtype") from None


def literal_tuple(values: Sequence[object]) -> str:
    """A tuple literal (``(3,)`` for one value)."""
    return f"({values[0]},)" if len(values) == 1 else f"({', '.join(map(str, values))})"


def scalar_literal(array: np.ndarray) -> str | None:
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
        if np.float32(float(short)) == array and abs(float(short)) <= F32_MAX:
            text = short
    return f"({text})" if text.startswith("-") else text


F32_MAX = float(np.finfo(np.float32).max)


@dataclass(eq=False)
class Value:
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
    root: Value | None = None
    external: bool = False
    overlap: bool = False
    constant: np.ndarray | None = None
    fresh: bool = False
    """Memory of its own that nothing else reads: an op's new result, not a view."""

    def __post_init__(self) -> None:
        if self.root is None:
            self.root = self


@dataclass
class Line:
    text: str
    reads: list[str]
    defines: list[str]
    roots: dict[str, str] = field(default_factory=dict)
    """The fresh local each defined name shares memory with (itself if fresh)."""
    inplace: list[tuple[str, str]] = field(default_factory=list)
    """(operand, text): the line written into that operand's memory, where it may be."""


GLOBALS_HEADER = {"torch": torch, "F": torch.nn.functional, "_no_grad": torch.no_grad,
                   "_inf": math.inf, "_nan": math.nan}


@dataclass
class Generator:
    """Writes the body of one function, op by op."""

    func: FuncOp
    globals: dict[str, Any] = field(default_factory=lambda: dict(GLOBALS_HEADER))
    prelude: list[str] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    values: dict[SSAValue, Value] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    constants: dict[tuple[Attribute, bytes], Value] = field(default_factory=dict)
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
            self.values[r] = Value(
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
        self.lines.append(Line(f"{', '.join(targets)} = {expr}", self._reads, defines,
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
            self.constants[key] = Value(None, False, external=True, constant=array,
                                         literal=scalar_literal(array)
                                         if array.ndim == 0 else None)
        self.values[op.result] = self.constants[key]

    def op(self, op: Operation) -> None:
        emitter = EMITTERS.get(type(op))
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
            self.values[arg] = Value(name, True, external=not given, fresh=given)
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
        self.lines.append(Line(f"return {literal_tuple(out) if out else '()'}", self._reads, []))
        self._reads = []

    def body(self, params: set[str], donated: Sequence[str] = ()) -> list[str]:
        """The body lines; each intermediate is deleted after its last use, so that its
        memory can be reused by later ops, and an elementwise op whose operand dies
        with it writes its result into that operand (no new tensor, whose fresh
        memory costs more than the op on it) where no other name reads that memory
        later."""
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


Emitter = Callable[[Generator, Any], None]
EMITTERS: dict[type[Operation], Emitter] = {}
"""The code of each op type, registered by ``graph_torch``."""
