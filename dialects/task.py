"""The ``task`` dialect: a megakernel task graph (the idea of MPK).

A ``task.kernel`` holds bodies, buffers, events and tasks. A task computes one tile of
one operator: it names the ``task.body`` it runs, the region (offset and size per
dimension) it reads from each input and writes to each output, the events it waits on
and the event it signals, which fires once its trigger count of tasks have signalled it.
Bodies are typed, so no level reads a kind string: a *pointwise* body works on 0-d
tensors through elementwise graph ops, applied at every point of the task's output
tiles (input regions broadcast onto them, as in ``linalg.generic``); a *tile* body is
one graph op on arguments typed as the task's input regions, yielding the output
regions (tasks whose regions have the same shapes share one). The verifier checks that
a task's regions are what its body takes and yields, laid out as the targets read them
(``task_layouts``). Constant tensors live in ``task.constant`` buffers.

Tasks are kept in a topological order and a task waits only on events whose signallers
all come before it: this is what makes in-order worker queues and a ticket-queue
megakernel deadlock-free, and the kernel's verifier checks it, with the other
invariants the later levels rely on.

    task.kernel @k(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
      task.body @exp(%a: tensor<4x16xf32>) {
        %r = graph.exp %a : tensor<4x16xf32>
        task.yield %r : tensor<4x16xf32>
      }
      task.body @neg(%a: tensor<f32>) {
        %r = graph.neg %a : tensor<f32>
        task.yield %r : tensor<f32>
      }
      %t = task.buffer : memref<8x16xf32>
      %e = task.event triggers 2
      task.task @exp ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
      task.task @exp ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
      task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
      task.return
    }
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_operand_def,
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

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import OpVerifyException as OpVerifyException
from mncore_ir.dialects.element_types import (
    TASK_ELEMENT_TYPES,
    DenseLiteralFormat,
    SupportedElementTypes,
)
from mncore_ir.dialects.task_graph import EventGraph as EventGraph
from mncore_ir.dialects.task_graph import TaskOperands as TaskOperands
from mncore_ir.dialects.task_graph import event_graph as event_graph
from mncore_ir.dialects.task_graph import first_race
from mncore_ir.dialects.task_graph import predecessors as predecessors
from mncore_ir.dialects.task_layouts import verify_task_bodies
from mncore_ir.dialects.task_regions import Accesses as Accesses
from mncore_ir.dialects.task_regions import Tile as Tile
from mncore_ir.dialects.task_regions import (
    buffer_shape,
    checked_regions,
    parse_accesses,
    parse_located_argument,
)
from mncore_ir.dialects.task_regions import covered_once as covered_once
from mncore_ir.dialects.task_regions import first_miscounted as first_miscounted
from mncore_ir.dialects.values import find_function, paused_gc

#: The task level runs on the megakernel simulator and Triton: the graph's element types.
TASK_TYPES = SupportedElementTypes("task", TASK_ELEMENT_TYPES, static_shapes=True)


@irdl_attr_definition
class EventType(ParametrizedAttribute, TypeAttribute):
    """An event: a counter that tasks signal and wait on."""

    name = "task.event"


@functools.lru_cache(maxsize=64)
def _segment_sizes(ins: int, outs: int, waits: int, signals: int) -> DenseArrayBase:
    """A task's ``operandSegmentSizes``: kernels repeat few combinations."""
    return DenseArrayBase.from_list(i32, [ins, outs, waits, signals])


@functools.lru_cache(maxsize=1 << 12)
def _body_attr(body: str) -> SymbolRefAttr:
    return SymbolRefAttr(body)


@irdl_op_definition
class BufferOp(IRDLOperation):
    """Storage for an intermediate tensor inside a kernel."""

    name = "task.buffer"
    result = result_def(MemRefType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp), TASK_TYPES))
    assembly_format = "attr-dict `:` type($result)"


@irdl_op_definition
class ConstantOp(DenseLiteralFormat, IRDLOperation):
    """A buffer holding known values: ``%c = task.constant dense<...> : tensor<...>``
    gives a memref of the literal's shape and element type."""

    name = "task.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(MemRefType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp), TASK_TYPES))

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        typ = value.get_type()
        super().__init__(properties={"value": value},
                         result_types=[MemRefType(typ.element_type, typ.get_shape())])


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


@functools.lru_cache(maxsize=256)
def _segment_ends(sizes: DenseArrayBase) -> tuple[int, ...]:
    return tuple(itertools.accumulate(int(n) for n in sizes.get_values()))


@irdl_op_definition
class TaskOp(IRDLOperation):
    """One tile of one operator: the body it runs, what it reads and writes, when it may
    start, and the event it signals when done."""

    name = "task.task"
    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    waits = var_operand_def(EventType)
    signal = opt_operand_def(EventType)
    body = prop_def(SymbolRefAttr)
    in_tiles = prop_def(ArrayAttr[DenseArrayBase])
    out_tiles = prop_def(ArrayAttr[DenseArrayBase])
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, body: str, ins: Sequence[tuple[SSAValue, Tile]],
                 outs: Sequence[tuple[SSAValue, Tile]], waits: Sequence[SSAValue] = (),
                 signal: SSAValue | None = None) -> None:
        # Operation.__init__, not IRDL's builder, and attributes shared between tasks:
        # kernels have tens of thousands of tasks, and the builder's normalisation of
        # each argument costs more than the rest of a task; the verifier checks what it
        # would (operand types and segment sizes).
        signals = [signal] if signal is not None else []
        properties: dict[str, Attribute] = {
            "body": _body_attr(body),
            "in_tiles": ArrayAttr([t.attr() for _, t in ins]),
            "out_tiles": ArrayAttr([t.attr() for _, t in outs]),
            AttrSizedOperandSegments.attribute_name: _segment_sizes(
                len(ins), len(outs), len(waits), len(signals)),
        }
        Operation.__init__(self, operands=[*(v for v, _ in ins), *(v for v, _ in outs),
                                           *waits, *signals], properties=properties)

    @property
    def body_name(self) -> str:
        return self.body.root_reference.data

    def operand_groups(self) -> TaskOperands:
        """``ins``, ``outs``, ``waits`` and ``signal`` at once. Each of xDSL's accessors
        decodes the segment sizes again, which is most of a verifier's time per task;
        these are decoded once per distinct sizes."""
        sizes = self.properties[AttrSizedOperandSegments.attribute_name]
        assert isinstance(sizes, DenseArrayBase)
        ends = _segment_ends(sizes)
        operands = tuple(self.operands)
        signals = operands[ends[2]:ends[3]]
        return TaskOperands(operands[:ends[0]], operands[ends[0]:ends[1]],
                            operands[ends[1]:ends[2]], signals[0] if signals else None)

    def accesses(self, groups: TaskOperands | None = None) -> tuple[Accesses, Accesses]:
        """``reads()`` and ``writes()`` at once, from ``groups`` when known."""
        groups = groups or self.operand_groups()
        return (list(zip(groups.ins, map(Tile.of, self.in_tiles.data), strict=True)),
                list(zip(groups.outs, map(Tile.of, self.out_tiles.data), strict=True)))

    def reads(self) -> Accesses:
        return self.accesses()[0]

    def writes(self) -> Accesses:
        return self.accesses()[1]

    def verify_(self) -> None:
        # IRDL's generated verify_ has checked the segment sizes before this runs; the
        # kernel checks the regions against the body (it knows the bodies).
        groups = self.operand_groups()
        checked_regions("input", groups.ins, self.in_tiles)
        checked_regions("output", groups.outs, self.out_tiles)

    @classmethod
    def parse(cls, parser: Parser) -> TaskOp:
        body = parser.parse_symbol_name().data

        def events(keyword: str) -> list[SSAValue]:
            if parser.parse_optional_keyword(keyword) is None:
                return []
            return parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: parser.parse_operand(EventType()))

        ins, outs = parse_accesses(parser, "ins"), parse_accesses(parser, "outs")
        waits, signal = events("waits"), events("signal")
        if len(signal) > 1:
            parser.raise_error("a task signals at most one event")
        op = cls(body, ins, outs, waits, signal[0] if signal else None)
        op.attributes.update(parser.parse_optional_attr_dict())  # discardable ones
        return op

    def print(self, printer: Printer) -> None:
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
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)


@irdl_op_definition
class BodyOp(IRDLOperation):
    """What tasks compute: ``task.body @name(%a: tensor<...>, ...) { graph ops;
    task.yield ... }``, pointwise (0-d tensors through elementwise ops) or a tile body
    (one graph op on its arguments, yielding its results)."""

    name = "task.body"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (SymbolOpInterface(), IsolatedFromAbove(),
                                      HasParent(KernelOp), TASK_TYPES))

    def __init__(self, name: str, body: Region) -> None:
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @property
    def arg_types(self) -> list[Attribute]:
        return [a.type for a in self.body.block.args]

    @property
    def yield_types(self) -> list[Attribute]:
        last = self.body.block.last_op
        return [v.type for v in last.values] if isinstance(last, YieldOp) else []

    def is_pointwise(self) -> bool:
        """Whether this body is applied at every point of its tasks' output tiles."""
        return (all(isinstance(typ, TensorType) and not typ.get_shape()
                    for typ in (*self.arg_types, *self.yield_types))
                and all(isinstance(op, YieldOp | g.ConstantOp) or op.has_trait(g.Elementwise)
                        for op in self.body.block.ops))

    def tile_op(self) -> g.GraphOp | None:
        """The graph op of a tile body (``None`` for a pointwise or malformed body)."""
        op = self.body.block.first_op
        if (not isinstance(op, g.GraphOp) or not isinstance(op.next_op, YieldOp)
                or self.is_pointwise()):
            return None
        return op

    @classmethod
    def parse(cls, parser: Parser) -> BodyOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, functools.partial(parse_located_argument, parser))
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, parser.parse_region(args))
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
        block = self.body.block
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException(f"task.body @{self.sym_name.data} must end with task.yield")
        if self.is_pointwise():
            return
        op = block.first_op
        if (not isinstance(op, g.GraphOp) or isinstance(op, g.FusedOp)
                or op.next_op is not block.last_op or tuple(op.operands) != block.args
                or tuple(block.last_op.values) != tuple(op.results)):
            raise VerifyException(
                f"task.body @{self.sym_name.data} is neither pointwise (0-d tensors through "
                "elementwise ops) nor a tile body (one graph op on its arguments in order, "
                "yielding its results)")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a task body with its results: of one point of each output (pointwise), or
    of the whole output regions (a tile body)."""

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
    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove(), TASK_TYPES)

    def __init__(self, name: str, inputs: Sequence[Attribute], outputs: Sequence[Attribute],
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
        argument = functools.partial(parse_located_argument, parser)
        ins = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, argument)
        parser.parse_punctuation("->")
        outs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([*ins, *outs])
        op = cls(name, [a.type for a in ins], [a.type for a in outs], body)
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

    @paused_gc()  # what it decodes per task is no garbage until it returns
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
            _verify_body(body)
        tasks = self.tasks()
        try:
            # Each task's operands and regions are decoded once for all the checks.
            groups = [task.operand_groups() for task in tasks]
            accesses = [task.accesses(group) for task, group in zip(tasks, groups, strict=True)]
            graph = event_graph(groups)
            self._verify_events(tasks, graph)
            self._verify_outputs_written_once([r for r, _ in accesses], [w for _, w in accesses])
            self._verify_ordered(tasks, accesses, graph)
            verify_task_bodies(tasks, accesses, bodies)
        except Exception:
            # These checks read the tasks' regions and events, which each task verifies
            # on its own (xDSL verifies the ops in a kernel before it; the parser, in
            # source order, after it): verifying every task here too would double the
            # cost of a valid kernel, so an invalid task is looked for only now, and its
            # own error, at its position, explains the failure best.
            self._verify_tasks(tasks)
            raise

    @staticmethod
    def _verify_tasks(tasks: Sequence[TaskOp]) -> None:
        for task in tasks:
            try:
                task.verify_()
            except VerifyException as error:
                raise OpVerifyException(task, str(error)) from None

    def _verify_events(self, tasks: Sequence[TaskOp], graph: EventGraph) -> None:
        """Trigger counts equal signal counts; waits follow every signaller."""
        for op in self.body.block.ops:
            if isinstance(op, EventOp):
                want, got = op.triggers.value.data, len(graph.signallers.get(op.result, ()))
                if want != got:
                    raise OpVerifyException(op, f"event has trigger count {want} but {got} "
                                                "tasks signal it")
        for index, (task, waits) in enumerate(zip(tasks, graph.waits, strict=True)):
            for event in waits:
                signallers = graph.signallers.get(event)
                if signallers and signallers[-1] >= index:
                    last = signallers[-1]
                    who = "it signals itself" if last == index else f"task {last} signals"
                    raise OpVerifyException(
                        task, f"task {index} (@{task.body_name}) waits on an event that {who}: "
                        "tasks must be in a topological order")

    def _verify_ordered(self, tasks: Sequence[TaskOp],
                        accesses: Sequence[tuple[Accesses, Accesses]], graph: EventGraph) -> None:
        """Tasks that write a region another reads or writes are ordered by events."""
        race = first_race(accesses, graph)
        if race is not None:
            first, second = tasks[race.first], tasks[race.second]
            what = {(True, False): "reads", (False, True): "writes", (True, True): "writes"}
            raise OpVerifyException(
                second, f"task {race.second} (@{second.body_name}) "
                f"{what[race.first_writes, race.second_writes]} {self._describe(race.buffer)} "
                f"where task {race.first} (@{first.body_name}) "
                f"{'writes' if race.first_writes else 'reads'}, but waits on no event after "
                "it: the result would depend on the order the tasks run in")

    def _describe(self, value: SSAValue) -> str:
        args = self.body.block.args
        if value in args:
            index = args.index(value)
            inputs = len(self.function_type.inputs.data)
            return f"input {index}" if index < inputs else f"output {index - inputs}"
        return f"buffer %{value.name_hint}" if value.name_hint else "a task.buffer"

    def _verify_outputs_written_once(self, reads: Sequence[Accesses],
                                     writes: Sequence[Accesses]) -> None:
        """Every kernel output element is written by one task, bar in-place updates
        (a task reading the region it writes, e.g. convert-graph-to-task's index_put)."""
        tiles: dict[SSAValue, list[Tile]] = {out: [] for out in self.outputs}
        for read, accesses in zip(reads, writes, strict=True):
            for value, tile in accesses:
                if value in tiles and (value, tile) not in read:
                    tiles[value].append(tile)
        for i, (out, written) in enumerate(tiles.items()):
            shape = buffer_shape(out)
            if not covered_once(shape, written):
                where, count = first_miscounted(shape, written)
                raise VerifyException(
                    f"output {i} of task.kernel @{self.sym_name.data}: element {list(where)} "
                    f"is written by {count} tasks, not exactly one")


def _verify_body(body: BodyOp) -> None:
    """A body and the ops in it, blaming the op that fails: the kernel is verified before
    the ops it holds, and its tasks' checks read the bodies' ops."""
    def check(op: Operation) -> None:
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as error:
            raise OpVerifyException(op, str(error)) from None

    blocks = list(body.body.blocks)
    if len(blocks) == 1 and isinstance(blocks[0].last_op, YieldOp):
        for op in blocks[0].ops:  # first: the body's checks read them
            check(op)
    check(body)


Task = Dialect("task", [KernelOp, BodyOp, BufferOp, ConstantOp, EventOp, TaskOp, YieldOp,
                       ReturnOp], [EventType])


def find_kernel(module: ModuleOp, name: str | None = None) -> KernelOp:
    """The kernel ``name``, or the module's only (or ``main``) one."""
    return find_function(module, name, KernelOp)


def computation(task: TaskOp, bodies: Mapping[str, BodyOp]) -> g.GraphOp | BodyOp | None:
    """What ``task`` computes, typed: its pointwise ``BodyOp`` (applied at every point of
    its output tiles), or its tile body's graph op (operands typed as its input regions,
    results as its output regions; shared by the tasks of one operator and not to be
    modified), or ``None`` when the task names no body of ``bodies``. Targets dispatch
    on this, never on a name."""
    body = bodies.get(task.body_name)
    return None if body is None else body.tile_op() or body


def task_label(task: TaskOp) -> str:
    """A short name for traces, graphs and messages (never compared): its body's."""
    return task.body_name


def computation_label(op: g.GraphOp | BodyOp | type[g.GraphOp] | None) -> str:
    """What a task computes, for messages and traces (never compared): the graph op's
    name without its dialect, ``elementwise`` for a pointwise body."""
    if op is None or isinstance(op, BodyOp):
        return "unknown" if op is None else "elementwise"
    return op.name.removeprefix("graph.")
