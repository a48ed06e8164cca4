"""The ``task`` dialect: a megakernel task graph (the idea of MPK).

A ``task.kernel`` holds buffers, events and tasks. A task computes one tile of one
operator: it names the operator kind, the region (offset and size per dimension) it
reads from each input and writes to each output, the events it waits on and the event
it signals. An event fires once its trigger count of tasks have signalled it.

A task of kind ``"elementwise"`` names a ``task.body``: the scalar computation (graph
ops on 0-d tensors, ending in ``task.yield``) applied at every point of its output
tiles, as ``linalg.generic``'s region is; the tiles of one operator share one body.
Other kinds name a graph operator and carry its properties. Constant tensors live in
``task.constant`` buffers.

Tasks are kept in a topological order and a task waits only on events whose signallers
all come before it: this is what makes in-order worker queues and a ticket-queue
megakernel deadlock-free, and the kernel's verifier checks it, with the other
invariants the later levels rely on.

    task.kernel @k(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
      task.body @neg(%a: tensor<f32>) {
        %r = graph.neg %a : tensor<f32>
        task.yield %r : tensor<f32>
      }
      %t = task.buffer : memref<8x16xf32>
      %e = task.event triggers 2
      task.task "exp" ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
      task.task "exp" ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
      task.task "elementwise" @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
      task.return
    }
"""

from __future__ import annotations

import functools
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
    SymbolRefAttr,
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
    opt_prop_def,
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
    SymbolTable,
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
        return _tile_of(attr)

    def attr(self) -> DenseArrayBase:
        return _tile_attr(self)

    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + s) for o, s in zip(self.offsets, self.sizes, strict=True))

    def __str__(self) -> str:
        return ", ".join(f"{o}:{o + s}" for o, s in zip(self.offsets, self.sizes, strict=True))


# Kernels repeat few distinct regions many times: decoding and encoding are cached.
@functools.lru_cache(maxsize=1 << 16)
def _tile_of(attr: DenseArrayBase) -> Tile:
    values = tuple(attr.get_values())
    rank = len(values) // 2
    return Tile(values[:rank], values[rank:])  # type: ignore[arg-type]


@functools.lru_cache(maxsize=1 << 16)
def _tile_attr(tile: Tile) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [*tile.offsets, *tile.sizes])


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
    body = opt_prop_def(SymbolRefAttr)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, kind: str, ins: Sequence[tuple[SSAValue, Tile]],
                 outs: Sequence[tuple[SSAValue, Tile]], waits: Sequence[SSAValue] = (),
                 signal: SSAValue | None = None,
                 attrs: dict[str, Attribute] | None = None,
                 body: str | None = None) -> None:
        super().__init__(
            operands=[[v for v, _ in ins], [v for v, _ in outs], list(waits),
                      [signal] if signal is not None else []],
            properties={
                "kind": StringAttr(kind),
                "in_tiles": ArrayAttr([t.attr() for _, t in ins]),
                "out_tiles": ArrayAttr([t.attr() for _, t in outs]),
                "attrs": DictionaryAttr(attrs or {}),
                **({"body": SymbolRefAttr(body)} if body is not None else {}),
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

    @classmethod
    def parse(cls, parser: Parser) -> TaskOp:
        kind = parser.parse_str_literal("the operator kind of a task")
        body = parser.parse_optional_symbol_name()

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
        op = cls(kind, ins, outs, waits, signal[0] if signal else None,  # type: ignore[arg-type]
                 dict(attrs.data) if attrs else None, body.data if body else None)
        op.attributes.update(parser.parse_optional_attr_dict())  # discardable ones
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.kind.data)
        if self.body is not None:
            printer.print_string(" ")
            printer.print_attribute(self.body)
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


@irdl_op_definition
class BodyOp(IRDLOperation):
    """The scalar computation of elementwise tasks: ``task.body @name(%a: tensor<f32>,
    ...) { graph ops on 0-d tensors; task.yield ... }``."""

    name = "task.body"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (SymbolOpInterface(), IsolatedFromAbove(),
                                      HasParent(KernelOp)))

    def __init__(self, name: str, body: Region) -> None:
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @property
    def arg_types(self) -> list[Attribute]:
        return [a.type for a in self.body.block.args]

    @property
    def yield_types(self) -> list[Attribute]:
        last = self.body.block.last_op
        return [v.type for v in last.values] if isinstance(last, YieldOp) else []

    @classmethod
    def parse(cls, parser: Parser) -> BodyOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, parser.parse_region(args))  # type: ignore[arg-type]
        if attrs:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data}(")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_(self) -> None:
        for typ in [*self.arg_types, *self.yield_types]:
            if not isinstance(typ, TensorType) or typ.get_shape():
                raise VerifyException(f"task.body @{self.sym_name.data} works on 0-d tensors, "
                                      f"not {typ}")
        if not isinstance(self.body.block.last_op, YieldOp):
            raise VerifyException(f"task.body @{self.sym_name.data} must end with task.yield")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a task body with the values of one point of each output."""

    name = "task.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(BodyOp)))
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
    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove())

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

    def bodies(self) -> dict[str, BodyOp]:
        return {op.sym_name.data: op for op in self.body.block.ops if isinstance(op, BodyOp)}

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
        bodies = self.bodies()
        for body in bodies.values():  # before the tasks that use them
            try:
                body.verify_()
            except VerifyException as error:
                raise OpVerifyException(body, str(error)) from None
        for task in self.tasks():  # the kernel is verified before its tasks: check them first
            try:
                task.verify_()
                if task.body is not None:
                    self._verify_body_use(task, bodies)
            except VerifyException as error:
                raise OpVerifyException(task, str(error)) from None
        self._verify_events()
        self._verify_outputs_written_once()

    @staticmethod
    def _verify_body_use(task: TaskOp, bodies: dict[str, BodyOp]) -> None:
        """A task's body takes one 0-d tensor per input and yields one per output, of
        the buffers' element types."""
        assert task.body is not None
        name = task.body.root_reference.data
        body = bodies.get(name)
        if body is None:
            raise VerifyException(f"task.task refers to @{name}, which is no task.body of "
                                  "this kernel")
        for what, values, types in (("takes", task.ins, body.arg_types),
                                    ("yields", task.outs, body.yield_types)):
            wanted = [TensorType(v.type.element_type, []) for v in values]  # type: ignore[attr-defined]
            if list(types) != wanted:
                raise VerifyException(
                    f"task.body @{name} {what} ({', '.join(map(str, types))}) but the task "
                    f"needs ({', '.join(map(str, wanted))})")

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


Task = Dialect("task", [KernelOp, BodyOp, BufferOp, ConstantOp, EventOp, TaskOp, YieldOp,
                       ReturnOp], [EventType])
