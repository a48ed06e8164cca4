"""The task dialect (``dialects/task.py``) through its Python API.

Kernels built op by op with the constructors, printed and parsed back (custom and
generic form), the ``Tile`` helpers, the accessors of ``KernelOp`` and ``TaskOp``, the
verifier's rejections with their messages, and a kernel of 20,000 tasks.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.dialects.func import ReturnOp as FuncReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.task import (
    BodyOp,
    BufferOp,
    EventOp,
    EventType,
    KernelOp,
    ReturnOp,
    TaskOp,
    Tile,
    YieldOp,
)
from mncore_ir.dialects.task_regions import element_type
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import make_context

M8x16 = MemRefType(f32, [8, 16])
Body = Callable[[Sequence[SSAValue], Sequence[SSAValue]], list[Operation]]


def pointwise_bodies(ops: Sequence[Operation]) -> list[BodyOp]:
    """A pointwise body for each body the tasks in ``ops`` name and ``ops`` do not
    hold: it yields, for each output, its first argument (or a zero) of that type."""
    names = {op.sym_name.data for op in ops if isinstance(op, BodyOp)}
    made: list[BodyOp] = []
    for op in ops:
        if not isinstance(op, TaskOp) or op.body_name in names:
            continue
        names.add(op.body_name)
        groups = op.operand_groups()
        ins, outs = ([TensorType(element_type(v), []) for v in values]
                     for values in (groups.ins, groups.outs))
        block = Block(arg_types=ins)
        values: list[SSAValue] = []
        for typ in outs:
            if ins and ins[0] == typ:
                values.append(block.args[0])
            else:
                zero = g.ConstantOp(DenseIntOrFPElementsAttr.from_list(typ, [0]))
                block.add_op(zero)
                values.append(zero.result)
        block.add_op(YieldOp.build(operands=[values]))
        made.append(BodyOp(op.body_name, Region(block)))
    return made


def make_kernel(name: str, inputs: Sequence[MemRefType], outputs: Sequence[MemRefType],
                body: Body, terminate: bool = True) -> KernelOp:
    """A kernel whose block holds ``body(inputs, outputs)`` (after a pointwise body for
    each body its tasks name and it lacks) then a task.return."""
    block = Block(arg_types=[*inputs, *outputs])
    ins, outs = block.args[: len(inputs)], block.args[len(inputs):]
    ops = body(ins, outs)
    block.add_ops([*pointwise_bodies(ops), *ops])
    if terminate:
        block.add_op(ReturnOp())
    return KernelOp(name, inputs, outputs, Region(block))


def one_op_body(name: str, op_type: type[g.GraphOp], typ: TensorType) -> BodyOp:
    """A body of one unary graph op on ``typ``."""
    block = Block(arg_types=[typ])
    op = op_type.create(operands=[block.args[0]], result_types=[typ])
    block.add_ops([op, YieldOp.build(operands=[[op.results[0]]])])
    return BodyOp(name, Region(block))


def doc_body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
    """The example of the dialect's docstring: a tile body and a pointwise body."""
    (x,), (y,) = ins, outs
    t = BufferOp(result_types=[M8x16])
    e = EventOp(2)
    top, bottom, whole = Tile((0, 0), (4, 16)), Tile((4, 0), (4, 16)), Tile((0, 0), (8, 16))
    return [
        one_op_body("exp", g.ExpOp, TensorType(f32, [4, 16])),
        one_op_body("neg", g.NegOp, TensorType(f32, [])),
        t, e,
        TaskOp("exp", [(x, top)], [(t.result, top)], signal=e.result),
        TaskOp("exp", [(x, bottom)], [(t.result, bottom)], signal=e.result),
        TaskOp("neg", [(t.result, whole)], [(y, whole)], waits=[e.result]),
    ]


DOC_TEXT = """\
builtin.module {
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
}"""


def generic(op: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(op)
    return stream.getvalue()


def parse(text: str) -> ModuleOp:
    return parse_module(make_context(), text, "test.mlir")




# --- building, printing, parsing ----------------------------------------------------


def test_build_verify_and_print() -> None:
    kernel = make_kernel("k", [M8x16], [M8x16], doc_body)
    kernel.verify()
    # name the values as the docstring does
    x, y = kernel.body.block.args
    x.name_hint, y.name_hint = "x", "y"
    ops = list(kernel.body.block.ops)
    for body in ops[:2]:
        assert isinstance(body, BodyOp)
        body.body.block.args[0].name_hint = "a"
        body.body.block.first_op.results[0].name_hint = "r"
    ops[2].results[0].name_hint, ops[3].results[0].name_hint = "t", "e"
    module = ModuleOp([kernel])
    module.verify()
    assert str(module) == DOC_TEXT


def test_round_trip_custom_and_generic() -> None:
    module = parse(DOC_TEXT)
    assert str(module) == DOC_TEXT
    again = parse(generic(module))
    assert str(again) == DOC_TEXT
    assert again.is_structurally_equivalent(module)


def test_round_trip_of_a_built_kernel() -> None:
    kernel = make_kernel("k", [M8x16], [M8x16], doc_body)
    module = ModuleOp([kernel])
    text = str(module)
    assert str(parse(text)) == text
    assert str(parse(generic(module))) == text


def test_round_trip_every_form() -> None:
    text = """\
builtin.module {
  task.kernel @many(%a: memref<4x6xf32>, %c: memref<f32>) -> (%o: memref<4x6xf32>, %p: memref<f32>) attributes {workers = 4 : i64} {
    task.body @cast(%x: tensor<f32>) {
      %i = graph.convert %x : tensor<f32> to tensor<i32>
      task.yield %i : tensor<i32>
    }
    task.body @fill() {
      %z = graph.constant dense<0.000000e+00> : tensor<f32>
      task.yield %z : tensor<f32>
    }
    task.body @combine(%x: tensor<f32>, %i: tensor<i32>, %k: tensor<f32>) {
      %f = graph.convert %i : tensor<i32> to tensor<f32>
      %m = graph.mul %x, %k : tensor<f32>, tensor<f32> -> tensor<f32>
      %n = graph.add %m, %f : tensor<f32>, tensor<f32> -> tensor<f32>
      task.yield %n : tensor<f32>
    }
    %u = task.buffer : memref<1x6xi32>
    %none = task.event triggers 0
    %e = task.event triggers 1
    task.task @cast ins(%a[0:1, 0:6]) outs(%u[0:1, 0:6]) signal(%e) {to = i32}
    task.task @fill outs(%p[]) waits(%none)
    task.task @combine ins(%a[0:4, 0:6], %u[0:1, 0:6], %c[]) outs(%o[0:4, 0:6]) waits(%e, %none)
    task.return
  }
  task.kernel @none() -> () {
    task.return
  }
}"""  # noqa: E501
    module = parse(text)
    assert str(module) == text
    assert str(parse(generic(module))) == text


def test_parse_warns_nothing() -> None:
    """Parsing uses no deprecated xDSL API (pytest turns DeprecationWarning into errors)."""
    parse(DOC_TEXT)


# --- Tile ---------------------------------------------------------------------------


def test_tile_helpers() -> None:
    tile = Tile((1, 2), (3, 4))
    attr = tile.attr()
    assert isinstance(attr, DenseArrayBase)
    assert tuple(attr.get_values()) == (1, 2, 3, 4)
    assert Tile.of(attr) == tile
    assert tile.slices() == (slice(1, 4), slice(2, 6))
    assert str(tile) == "1:4, 2:6"
    array = np.zeros((8, 8), dtype=np.int32)
    array[tile.slices()] += 1
    assert int(array.sum()) == 12 and array[1, 2] == 1 and array[3, 5] == 1


def test_tile_rank_0_and_1() -> None:
    scalar = Tile((), ())
    assert Tile.of(scalar.attr()) == scalar
    assert scalar.slices() == ()
    assert str(scalar) == ""
    line = Tile((5,), (1,))
    assert Tile.of(line.attr()) == line and str(line) == "5:6"


def test_tile_is_hashable_and_frozen() -> None:
    assert len({Tile((0,), (2,)), Tile((0,), (2,)), Tile((1,), (2,))}) == 2
    with pytest.raises(AttributeError):
        Tile((0,), (2,)).offsets = (1,)  # type: ignore[misc]


# --- accessors ----------------------------------------------------------------------


def test_kernel_accessors() -> None:
    """(The second task names a body of its own: ``acc`` takes two inputs.)"""
    a, b, out = MemRefType(f32, [4]), MemRefType(f32, [2, 2]), MemRefType(f32, [2, 2])

    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        e = EventOp(1)
        second = TaskOp("copy", [(ins[0], Tile((2,), (2,)))], [(outs[0], Tile((1, 0), (1, 2)))],
                        waits=[e.result])
        second.attributes["alpha"] = IntegerAttr(3, i64)
        return [e,
                TaskOp("acc", [(ins[0], Tile((0,), (2,))), (ins[1], Tile((0, 0), (1, 2)))],
                       [(outs[0], Tile((0, 0), (1, 2)))], signal=e.result),
                second]

    kernel = make_kernel("acc", [a, b], [out], body)
    kernel.verify()
    block = kernel.body.block
    assert list(kernel.inputs) == list(block.args[:2])
    assert list(kernel.outputs) == [block.args[2]]
    assert [arg.type for arg in kernel.inputs] == [a, b]
    tasks = kernel.tasks()
    assert len(tasks) == 2 and all(isinstance(t, TaskOp) for t in tasks)
    first, second = tasks
    assert first.body == SymbolRefAttr("acc") and first.body_name == "acc"
    assert sorted(kernel.bodies()) == ["acc", "copy"]
    assert first.reads() == [(block.args[0], Tile((0,), (2,))),
                             (block.args[1], Tile((0, 0), (1, 2)))]
    assert first.writes() == [(block.args[2], Tile((0, 0), (1, 2)))]
    assert first.accesses() == (first.reads(), first.writes())
    assert first.signal is not None and isinstance(first.signal.type, EventType)
    assert list(first.waits) == [] and first.attributes == {}
    assert second.signal is None and list(second.waits) == [first.signal]
    assert second.attributes == {"alpha": IntegerAttr(3, i64)}
    assert kernel.sym_name.data == "acc"
    assert list(kernel.function_type.inputs.data) == [a, b]
    assert list(kernel.function_type.outputs.data) == [out]


def test_kernel_without_inputs_or_outputs() -> None:
    kernel = make_kernel("empty", [], [], lambda ins, outs: [])
    kernel.verify()
    assert list(kernel.inputs) == [] and list(kernel.outputs) == [] and kernel.tasks() == []


def test_event_triggers() -> None:
    event = EventOp(7)
    assert event.triggers.value.data == 7 and event.result.type == EventType()


# --- verifier -----------------------------------------------------------------------


def one_task(ins_tile: Tile, outs_tile: Tile) -> Body:
    return lambda ins, outs: [TaskOp("t", [(ins[0], ins_tile)], [(outs[0], outs_tile)])]


WHOLE = Tile((0, 0), (8, 16))


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(one_task(Tile((-1, 0), (4, 16)), WHOLE),
                 r"task\.task input 0: region \[-1:3, 0:16\] is out of bounds in "
                 r"dimension 0 \(size 8\)", id="input-negative-offset"),
    pytest.param(one_task(Tile((3, 0), (0, 16)), WHOLE),
                 r"input 0: region \[3:3, 0:16\] is out of bounds in dimension 0",
                 id="input-size-0"),
    pytest.param(one_task(Tile((0, 8), (8, 9)), WHOLE),
                 r"input 0: region \[0:8, 8:17\] is out of bounds in dimension 1 \(size 16\)",
                 id="input-end-beyond"),
    pytest.param(one_task(Tile((0,), (8,)), WHOLE),
                 r"input 0: region \[0:8\] does not have rank 2", id="input-rank"),
    pytest.param(one_task(WHOLE, Tile((0, 0), (9, 16))),
                 r"output 0: region \[0:9, 0:16\] is out of bounds in dimension 0 \(size 8\)",
                 id="output-end-beyond"),
    pytest.param(one_task(WHOLE, Tile((0,), (8,))),
                 r"output 0: region \[0:8\] does not have rank 2", id="output-rank"),
])
def test_task_region_rejected(body: Body, message: str) -> None:
    kernel = make_kernel("k", [M8x16], [M8x16], body)
    with pytest.raises(VerifyException, match=message):
        kernel.verify()


def test_task_region_count_mismatch() -> None:
    x = Block(arg_types=[M8x16]).args[0]
    task = TaskOp("t", [(x, WHOLE)], [])
    task.in_tiles = type(task.in_tiles)([])
    with pytest.raises(VerifyException, match=r"task\.task has 1 inputs but 0 input regions"):
        task.verify()


def halves(signals: Sequence[int | None], waits: Sequence[Sequence[int]],
           triggers: Sequence[int]) -> Body:
    """Two tasks, writing the top and bottom halves of the output; events by index."""

    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        events = [EventOp(n) for n in triggers]
        ops: list[Operation] = list(events)
        for i, (signal, wait) in enumerate(zip(signals, waits, strict=True)):
            tile = Tile((4 * i, 0), (4, 16))
            ops.append(TaskOp(f"t{i}", [(ins[0], tile)], [(outs[0], tile)],
                              waits=[events[w].result for w in wait],
                              signal=events[signal].result if signal is not None else None))
        return ops

    return body


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(halves([0, 0], [[], []], [3]),
                 r"event has trigger count 3 but 2 tasks signal it", id="triggers-high"),
    pytest.param(halves([0, 0], [[], []], [1]),
                 r"event has trigger count 1 but 2 tasks signal it", id="triggers-low"),
    pytest.param(halves([None, None], [[0], []], [1]),
                 r"event has trigger count 1 but 0 tasks signal it", id="never-signalled"),
    pytest.param(halves([None, 0], [[0], []], [1]),
                 r"task 0 \(@t0\) waits on an event that task 1 signals: tasks must be in a "
                 r"topological order", id="wait-on-later"),
    pytest.param(halves([0, None], [[0], []], [1]),
                 r"task 0 \(@t0\) waits on an event that it signals itself", id="wait-on-self"),
    pytest.param(halves([0, 1], [[1], [0]], [1, 1]),
                 r"task 0 \(@t0\) waits on an event that task 1 signals", id="cycle"),
])
def test_event_rejected(body: Body, message: str) -> None:
    kernel = make_kernel("k", [M8x16], [M8x16], body)
    with pytest.raises(VerifyException, match=message):
        kernel.verify()


def test_events_accepted() -> None:
    make_kernel("k", [M8x16], [M8x16], halves([0, None], [[], [0]], [1])).verify()
    make_kernel("k", [M8x16], [M8x16], halves([None, None], [[0], [0]], [0])).verify()


def tiles_body(*tiles: Tile) -> Body:
    return lambda ins, outs: [TaskOp("t", [(ins[0], WHOLE)], [(outs[0], t)]) for t in tiles]


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(tiles_body(Tile((0, 0), (5, 16)), Tile((4, 0), (4, 16))),
                 r"output 0 of task\.kernel @k: element \[4, 0\] is written by 2 tasks, not "
                 r"exactly one", id="overlap"),
    pytest.param(tiles_body(Tile((0, 0), (8, 8)), Tile((0, 9), (8, 7))),
                 r"output 0 of task\.kernel @k: element \[0, 8\] is written by 0 tasks",
                 id="gap"),
    pytest.param(tiles_body(), r"element \[0, 0\] is written by 0 tasks", id="no-writer"),
    pytest.param(tiles_body(WHOLE, WHOLE), r"element \[0, 0\] is written by 2 tasks",
                 id="twice"),
])
def test_outputs_written_once_rejected(body: Body, message: str) -> None:
    kernel = make_kernel("k", [M8x16], [M8x16], body)
    with pytest.raises(VerifyException, match=message):
        kernel.verify()


def test_second_output_checked() -> None:
    small = MemRefType(f32, [2])

    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        return [TaskOp("t", [], [(outs[0], Tile((0,), (2,))), (outs[1], Tile((1,), (1,)))])]

    kernel = make_kernel("two", [], [small, small], body)
    with pytest.raises(VerifyException,
                       match=r"output 1 of task\.kernel @two: element \[0\] is written by 0"):
        kernel.verify()


def test_buffers_need_not_be_written_once() -> None:
    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        t, e = BufferOp(result_types=[M8x16]), EventOp(1)
        return [t, e, TaskOp("a", [(ins[0], WHOLE)], [(t.result, WHOLE)], signal=e.result),
                TaskOp("b", [(ins[0], WHOLE)], [(t.result, WHOLE), (outs[0], WHOLE)],
                       waits=[e.result])]

    make_kernel("k", [M8x16], [M8x16], body).verify()


TOP, BOTTOM = Tile((0, 0), (4, 16)), Tile((4, 0), (4, 16))


@pytest.mark.parametrize("case, message", [
    # b reads what a writes, no event between them
    ("read-after-write", r"task 1 \(@b\) reads buffer %t where task 0 \(@a\) writes"),
    # b overwrites what a reads (a buffer reused while still being read)
    ("write-after-read", r"task 1 \(@b\) writes input 0 where task 0 \(@a\) reads"),
    # a and b write overlapping rows of a buffer
    ("write-after-write", r"task 1 \(@b\) writes buffer %t where task 0 \(@a\) writes"),
    # the order is only through a chain that skips a: c waits on b, b on nothing
    ("ordered-elsewhere", r"task 2 \(@c\) reads buffer %t where task 0 \(@a\) writes"),
])
def test_unordered_conflicting_tasks_rejected(case: str, message: str) -> None:
    """A read or write of a region another task writes, with no chain of events between
    the two tasks: which value results would depend on the order tasks run in."""
    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        (x,), (y,) = ins, outs
        t, e = BufferOp(result_types=[M8x16]), EventOp(1)
        t.result.name_hint = "t"
        if case == "read-after-write":
            return [t, TaskOp("a", [(x, WHOLE)], [(t.result, WHOLE)]),
                    TaskOp("b", [(t.result, WHOLE)], [(y, WHOLE)])]
        if case == "write-after-read":
            return [t, TaskOp("a", [(x, WHOLE)], [(y, WHOLE)]),
                    TaskOp("b", [(x, BOTTOM)], [(x, TOP)])]
        if case == "write-after-write":
            return [t, e, TaskOp("a", [(x, WHOLE)], [(t.result, WHOLE)]),
                    TaskOp("b", [(x, TOP)], [(t.result, Tile((3, 0), (2, 16)))],
                           signal=e.result),
                    TaskOp("c", [(t.result, WHOLE)], [(y, WHOLE)], waits=[e.result])]
        return [t, e, TaskOp("a", [(x, TOP)], [(t.result, TOP)]),
                TaskOp("b", [(x, BOTTOM)], [(t.result, BOTTOM)], signal=e.result),
                TaskOp("c", [(t.result, WHOLE)], [(y, WHOLE)], waits=[e.result])]

    kernel = make_kernel("k", [M8x16], [M8x16], body)
    with pytest.raises(VerifyException, match=message + ", but waits on no event after it"):
        kernel.verify()


def test_conflicts_ordered_through_a_chain_accepted() -> None:
    """a -> b -> c by events: c may read what a wrote, and disjoint regions need no
    order at all."""
    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        (x,), (y,) = ins, outs
        t, e, f = BufferOp(result_types=[M8x16]), EventOp(1), EventOp(1)
        return [t, e, f,
                TaskOp("a", [(x, TOP)], [(t.result, TOP)], signal=e.result),
                TaskOp("a", [(x, BOTTOM)], [(t.result, BOTTOM)]),  # disjoint: unordered
                TaskOp("b", [(x, TOP)], [(y, TOP)], waits=[e.result], signal=f.result),
                TaskOp("c", [(t.result, TOP)], [(y, BOTTOM)], waits=[f.result])]

    make_kernel("k", [M8x16], [M8x16], body).verify()


def test_kernel_without_return_rejected() -> None:
    kernel = make_kernel("k", [], [], lambda ins, outs: [xdsl_test.TestTermOp()], terminate=False)
    with pytest.raises(VerifyException, match=r"task\.kernel must end with task\.return"):
        kernel.verify()
    # xDSL's own checks of the block come first (the nested ops are verified first)
    kernel = make_kernel("k", [], [], lambda ins, outs: [], terminate=False)
    with pytest.raises(VerifyException, match="empty block in single-block region"):
        kernel.verify()
    kernel = make_kernel("k", [M8x16], [M8x16], tiles_body(WHOLE), terminate=False)
    with pytest.raises(VerifyException, match=r"task\.task terminates block in single-block "
                                              r"region but is not a terminator"):
        kernel.verify()


def test_kernel_block_arguments_rejected() -> None:
    block = Block([ReturnOp()], arg_types=[M8x16])
    kernel = KernelOp("k", [M8x16], [M8x16], Region(block))
    with pytest.raises(VerifyException,
                       match=r"task\.kernel block arguments must be its inputs then its outputs"):
        kernel.verify()


@pytest.mark.parametrize("ops", [
    pytest.param(lambda: [BufferOp(result_types=[M8x16]), FuncReturnOp()], id="buffer"),
    pytest.param(lambda: [ReturnOp()], id="return"),
])
def test_parent_must_be_kernel(ops: Callable[[], list[Operation]]) -> None:
    func = FuncOp("f", ((), ()), Region(Block(ops())))
    with pytest.raises(VerifyException, match=r"expects parent op 'task\.kernel'"):
        func.verify()


# --- parsing errors, with positions -------------------------------------------------


def test_parse_error_positions() -> None:
    text = """\
task.kernel @k(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  task.task @t ins(%x[0:9]) outs(%y[0:8]) signal(%e)
  task.return
}"""
    with pytest.raises(ParseError, match=r"test\.mlir:3:3\n.*\n.*\n.*region \[0:9\] is out "
                                         r"of bounds in dimension 0 \(size 8\)"):
        parse(text)
    with pytest.raises(ParseError, match=r"test\.mlir:2:3\n.*\n.*\n.*event has trigger count 2"):
        parse(text.replace("[0:9]", "[0:8]").replace("triggers 1", "triggers 2"))
    with pytest.raises(ParseError, match=r"test\.mlir:1:1\n.*\n.*\n.*element \[4\] is written "
                                         "by 0 tasks"):
        parse(text.replace("[0:9]", "[0:8]").replace("%y[0:8]", "%y[0:4]"))


def test_parse_error_two_signals() -> None:
    text = """\
task.kernel @k(%x: memref<8xf32>) -> (%y: memref<8xf32>) {
  %e = task.event triggers 1
  task.task @t ins(%x[0:8]) outs(%y[0:8]) signal(%e, %e)
  task.return
}"""
    with pytest.raises(ParseError, match="a task signals at most one event"):
        parse(text)


# --- scale --------------------------------------------------------------------------


def test_twenty_thousand_tasks_verify() -> None:
    """A 200x100 output: 10,000 tasks fill a buffer two elements at a time, each row
    firing an event with 50 triggers, then 10,000 tasks each wait on their row's event
    and write two elements of the output."""
    rows, cols, width = 200, 100, 2
    shape = MemRefType(f32, [rows, cols])

    def body(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        buffer = BufferOp(result_types=[shape])
        events = [EventOp(cols // width) for _ in range(rows)]
        ops: list[Operation] = [buffer, *events]
        for r in range(rows):
            for c in range(0, cols, width):
                tile = Tile((r, c), (1, width))
                ops.append(TaskOp("exp", [(ins[0], tile)], [(buffer.result, tile)],
                                  signal=events[r].result))
        for r in range(rows):
            for c in range(0, cols, width):
                tile = Tile((r, c), (1, width))
                ops.append(TaskOp("neg", [(buffer.result, tile)], [(outs[0], tile)],
                                  waits=[events[r].result]))
        return ops

    start = time.perf_counter()
    kernel = make_kernel("big", [shape], [shape], body)
    built = time.perf_counter()
    assert len(kernel.tasks()) == 20_000
    kernel.verify()
    print(f"20,000 tasks: built in {built - start:.2f}s, "
          f"verified in {time.perf_counter() - built:.2f}s")
