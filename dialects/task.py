"""The ``task`` dialect: a megakernel task graph (the idea of MPK).

A ``task.kernel`` holds buffers, events and tasks. A task computes one tile of one
operator: it names the operator kind, the region (offset and size per dimension) it
reads from each input and writes to each output, the events it waits on and the event
it signals. An event fires once its trigger count of tasks have signalled it.

A task of kind ``"elementwise"`` carries a region: the scalar computation (graph ops
on 0-d tensors, ending in ``task.yield``) applied at every point of its output tiles,
as ``linalg.generic`` does (written after the keyword ``body``); other kinds name a
graph operator and carry its properties.
Constant tensors live in ``task.constant`` buffers.

Tasks are kept in a topological order and a task waits only on events whose signallers
all come before it: this is what makes in-order worker queues and a ticket-queue
megakernel deadlock-free, and the kernel's verifier checks it, with the other
invariants the later levels rely on.

    task.kernel @k(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
      %t = task.buffer : memref<8x16xf32>
      %e = task.event triggers 2
      task.task "exp" ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
      task.task "exp" ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
      task.task "neg" ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
      task.return
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_operand_def,
    opt_region_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa


class OpVerifyException(VerifyException):
    """A kernel-level check that failed because of one op inside the kernel: tools
    report it at that op's position."""

    def __init__(self, op: IRDLOperation, message: str) -> None:
        super().__init__(message)
        self.op = op


@irdl_attr_definition
class EventType(ParametrizedAttribute, TypeAttribute):
    """An event: a counter that tasks signal and wait on."""

    name = "task.event"


@dataclass(frozen=True)
class Tile:
    """A region: offset and size per dimension."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]

    @staticmethod
    def of(attr: DenseArrayBase) -> Tile:
        values = tuple(attr.get_values())
        rank = len(values) // 2
        return Tile(values[:rank], values[rank:])

    def attr(self) -> DenseArrayBase:
        return DenseArrayBase.from_list(i64, [*self.offsets, *self.sizes])

    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + s) for o, s in zip(self.offsets, self.sizes, strict=True))

    def __str__(self) -> str:
        return ", ".join(f"{o}:{o + s}" for o, s in zip(self.offsets, self.sizes, strict=True))


@irdl_op_definition
class BufferOp(IRDLOperation):
    """Storage for an intermediate tensor inside a kernel."""

    name = "task.buffer"
    result = result_def(MemRefType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    assembly_format = "attr-dict `:` type($result)"


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A buffer holding known values: ``%c = task.constant dense<...> : tensor<...>``
    gives a memref of the literal's shape and element type."""

    name = "task.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(MemRefType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        typ = value.get_type()
        super().__init__(properties={"value": value},
                         result_types=[MemRefType(typ.element_type, typ.get_shape())])

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("task.constant expects a dense literal", pos, parser.pos)
        op = cls(value)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        typ = self.value.get_type()
        assert isa(self.result.type, MemRefType)
        if (tuple(typ.get_shape()) != tuple(self.result.type.get_shape())
                or typ.element_type != self.result.type.element_type):
            raise VerifyException(f"task.constant of type {typ} cannot fill "
                                  f"{self.result.type}")


@irdl_op_definition
class EventOp(IRDLOperation):
    """An event that fires after ``triggers`` signals."""

    name = "task.event"
    triggers = prop_def(IntegerAttr[I64])
    result = result_def(EventType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    assembly_format = "`triggers` $triggers attr-dict"

    def __init__(self, triggers: int) -> None:
        super().__init__(properties={"triggers": IntegerAttr(triggers, i64)},
                         result_types=[EventType()])


@irdl_op_definition
class TaskOp(IRDLOperation):
    """One tile of one operator: what it reads and writes, when it may start, and the
    event it signals when done."""

    name = "task.task"
    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    waits = var_operand_def(EventType)
    signal = opt_operand_def(EventType)
    kind = prop_def(StringAttr)
    in_tiles = prop_def(ArrayAttr[DenseArrayBase])
    out_tiles = prop_def(ArrayAttr[DenseArrayBase])
    attrs = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    body = opt_region_def("single_block")
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, kind: str, ins: Sequence[tuple[SSAValue, Tile]],
                 outs: Sequence[tuple[SSAValue, Tile]], waits: Sequence[SSAValue] = (),
                 signal: SSAValue | None = None,
                 attrs: dict[str, Attribute] | None = None,
                 body: Region | None = None) -> None:
        super().__init__(
            regions=[[body] if body is not None else []],
            operands=[[v for v, _ in ins], [v for v, _ in outs], list(waits),
                      [signal] if signal is not None else []],
            properties={
                "kind": StringAttr(kind),
                "in_tiles": ArrayAttr([t.attr() for _, t in ins]),
                "out_tiles": ArrayAttr([t.attr() for _, t in outs]),
                "attrs": DictionaryAttr(attrs or {}),
            })

    def reads(self) -> list[tuple[SSAValue, Tile]]:
        return [(v, Tile.of(a)) for v, a in zip(self.ins, self.in_tiles.data, strict=True)]

    def writes(self) -> list[tuple[SSAValue, Tile]]:
        return [(v, Tile.of(a)) for v, a in zip(self.outs, self.out_tiles.data, strict=True)]

    def verify_(self) -> None:
        for what, values, tiles in (("input", self.ins, self.in_tiles),
                                    ("output", self.outs, self.out_tiles)):
            if len(values) != len(tiles.data):
                raise VerifyException(f"task.task has {len(values)} {what}s but "
                                      f"{len(tiles.data)} {what} regions")
            for i, (value, attr) in enumerate(zip(values, tiles.data, strict=True)):
                assert isa(value.type, MemRefType)
                if not value.type.has_static_shape():
                    raise VerifyException(f"task.task {what} {i}: buffers need static shapes")
                shape = tuple(value.type.get_shape())
                flat = attr.get_values()
                if len(flat) != 2 * len(shape):
                    text = str(Tile.of(attr)) if len(flat) % 2 == 0 else list(flat)
                    raise VerifyException(f"task.task {what} {i}: region [{text}] does not "
                                          f"have rank {len(shape)}")
                tile = Tile.of(attr)
                for d, (o, s, n) in enumerate(zip(tile.offsets, tile.sizes, shape,
                                                  strict=True)):
                    if o < 0 or s < 1 or o + s > n:
                        raise VerifyException(
                            f"task.task {what} {i}: region [{tile}] is out of bounds in "
                            f"dimension {d} (size {n})")
        if self.body is not None:
            self._verify_body()

    def _verify_body(self) -> None:
        """The scalar body: one 0-d tensor argument per input, one yielded value per
        output, with the buffers' element types."""
        assert self.body is not None
        block = self.body.block
        wanted = [TensorType(v.type.element_type, []) for v in self.ins]  # type: ignore[attr-defined]
        if [a.type for a in block.args] != wanted:
            raise VerifyException("task.task body arguments must be 0-d tensors of its "
                                  f"inputs' element types: ({', '.join(map(str, wanted))})")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("task.task body must end with task.yield")
        yielded = [v.type for v in last.values]
        expected = [TensorType(v.type.element_type, []) for v in self.outs]  # type: ignore[attr-defined]
        if yielded != expected:
            raise VerifyException("task.task body must yield 0-d tensors of its outputs' "
                                  f"element types: ({', '.join(map(str, expected))})")

    @classmethod
    def parse(cls, parser: Parser) -> TaskOp:
        kind = parser.parse_str_literal("the operator kind of a task")

        def buffer() -> SSAValue:
            """A buffer operand: defined earlier in the kernel, so its type is known."""
            unresolved = parser.parse_unresolved_operand()
            defined = parser.ssa_values.get(unresolved.operand_name)
            if defined is None or unresolved.index >= len(defined):
                parser.raise_error("a task's buffers must be defined before the task",
                                   unresolved.span)
            return parser.resolve_operand(unresolved, defined[unresolved.index].type)

        def event() -> SSAValue:
            return parser.parse_operand(EventType())

        def tiled() -> tuple[SSAValue, Tile]:
            value = buffer()
            ranges = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE,
                lambda: (parser.parse_integer(), parser.parse_punctuation(":"),
                         parser.parse_integer()))
            offsets = tuple(r[0] for r in ranges)
            return value, Tile(offsets, tuple(end - start for start, _, end in ranges))

        def group(keyword: str, item: object) -> list[object]:
            if parser.parse_optional_keyword(keyword) is None:
                return []
            return parser.parse_comma_separated_list(Parser.Delimiter.PAREN, item)  # type: ignore[arg-type]

        ins = group("ins", tiled)
        outs = group("outs", tiled)
        waits = group("waits", event)
        signal = group("signal", event)
        if len(signal) > 1:
            parser.raise_error("a task signals at most one event")
        attrs = parser.parse_optional_attr_dict_with_keyword()
        discardable = parser.parse_optional_attr_dict()
        body = parser.parse_region() if parser.parse_optional_keyword("body") else None
        op = cls(kind, ins, outs, waits, signal[0] if signal else None,  # type: ignore[arg-type]
                 dict(attrs.data) if attrs else None, body)
        op.attributes.update(discardable)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.kind.data)
        for keyword, pairs in (("ins", self.reads()), ("outs", self.writes())):
            if pairs:
                printer.print_string(f" {keyword}(")
                printer.print_list(pairs, lambda p: (printer.print_operand(p[0]),
                                                     printer.print_string(f"[{p[1]}]")))
                printer.print_string(")")
        if self.waits:
            printer.print_string(" waits(")
            printer.print_list(self.waits, printer.print_operand)
            printer.print_string(")")
        if self.signal is not None:
            printer.print_string(" signal(")
            printer.print_operand(self.signal)
            printer.print_string(")")
        if self.attrs.data:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attrs.data)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        if self.body is not None:
            printer.print_string(" body ")
            printer.print_region(self.body)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a task body with the values of one point of each output."""

    name = "task.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(TaskOp)))
    assembly_format = "$values attr-dict `:` type($values)"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "task.return"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(KernelOp)))
    assembly_format = "attr-dict"


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A megakernel: arguments are its inputs then its outputs (written in place)."""

    name = "task.kernel"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(self, name: str, inputs: Sequence[MemRefType], outputs: Sequence[MemRefType],
                 body: Region) -> None:
        super().__init__(properties={
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(list(inputs), list(outputs)),
        }, regions=[body])

    @property
    def inputs(self) -> Sequence[SSAValue]:
        return self.body.block.args[: len(self.function_type.inputs.data)]

    @property
    def outputs(self) -> Sequence[SSAValue]:
        return self.body.block.args[len(self.function_type.inputs.data):]

    def tasks(self) -> list[TaskOp]:
        return [op for op in self.body.block.ops if isinstance(op, TaskOp)]

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        ins = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        parser.parse_punctuation("->")
        outs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([*ins, *outs])
        op = cls(name, [a.type for a in ins], [a.type for a in outs], body)  # type: ignore[misc]
        if attrs:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data}(")
        printer.print_list(self.inputs, printer.print_block_argument)
        printer.print_string(") -> (")
        printer.print_list(self.outputs, printer.print_block_argument)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_(self) -> None:
        block = self.body.block
        types = [*self.function_type.inputs.data, *self.function_type.outputs.data]
        if [a.type for a in block.args] != types:
            raise VerifyException("task.kernel block arguments must be its inputs then its "
                                  "outputs")
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException("task.kernel must end with task.return")
        for task in self.tasks():  # the kernel is verified before its tasks: check them first
            try:
                task.verify_()
            except VerifyException as error:
                raise OpVerifyException(task, str(error)) from None
        self._verify_events()
        self._verify_outputs_written_once()

    def _verify_events(self) -> None:
        """Trigger counts equal signal counts; waits follow every signaller."""
        signals: dict[SSAValue, int] = {}
        last_signaller: dict[SSAValue, int] = {}
        tasks = self.tasks()
        for index, task in enumerate(tasks):
            if task.signal is not None:
                signals[task.signal] = signals.get(task.signal, 0) + 1
                last_signaller[task.signal] = index
        for op in self.body.block.ops:
            if isinstance(op, EventOp):
                want, got = op.triggers.value.data, signals.get(op.result, 0)
                if want != got:
                    raise OpVerifyException(op, f"event has trigger count {want} but {got} "
                                                "tasks signal it")
        for index, task in enumerate(tasks):
            for event in task.waits:
                last = last_signaller.get(event)
                if last is not None and last >= index:
                    who = "it signals itself" if last == index else f"task {last} signals"
                    raise OpVerifyException(
                        task, f"task {index} ({task.kind.data}) waits on an event that {who}: "
                        "tasks must be in a topological order")

    def _verify_outputs_written_once(self) -> None:
        """Every element of every kernel output is written by exactly one task."""
        counts = {out: np.zeros(out.type.get_shape(), dtype=np.int32)  # type: ignore[attr-defined]
                  for out in self.outputs}
        for task in self.tasks():
            for value, tile in task.writes():
                if value in counts:
                    counts[value][tile.slices()] += 1
        for i, count in enumerate(counts.values()):
            bad = np.argwhere(count != 1)
            if len(bad):
                where = tuple(int(x) for x in bad[0])
                raise VerifyException(
                    f"output {i} of task.kernel @{self.sym_name.data}: element {list(where)} "
                    f"is written by {int(count[where])} tasks, not exactly one")


Task = Dialect("task", [KernelOp, BufferOp, ConstantOp, EventOp, TaskOp, YieldOp, ReturnOp],
               [EventType])
