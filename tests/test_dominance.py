"""The SSA dominance check: accepts real IR, rejects uses that their definitions do
not dominate, and stays linear."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.builder import Builder
from xdsl.dialects import test as xtest
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mncore_ir.dialects import graph as g
from mncore_ir.dominance import DominanceError, check_dominance
from mncore_ir.frontends.fx import CapturedGraph, import_captured
from mncore_ir.pipeline import GRAPH_PIPELINE, apply_pipeline
from mncore_ir.testing.model_zoo import TRAINING_STEPS, TrainingStep

GetStep = Callable[[str], tuple[TrainingStep, CapturedGraph]]
T = g.tensor((4,))


def make_func(name: str, body: Callable[[Builder, tuple[SSAValue, ...]], list[SSAValue]],
              n_args: int = 2) -> FuncOp:
    """``func.func @name`` over ``n_args`` ``tensor<4xf32>``s; ``body`` builds the ops."""
    block = Block(arg_types=[T] * n_args)
    builder = Builder(InsertPoint.at_end(block))
    results = body(builder, block.args)
    builder.insert(ReturnOp(*results))
    ftype = FunctionType.from_lists([T] * n_args, [r.type for r in results])
    return FuncOp(name, ftype, Region(block))


def add(builder: Builder, a: SSAValue, b: SSAValue, hint: str | None = None) -> SSAValue:
    op = builder.insert(g.AddOp(a, b))
    op.result.name_hint = hint
    return op.result


def fused(builder: Builder, inputs: list[SSAValue],
          body: Callable[[Builder, tuple[SSAValue, ...]], list[SSAValue]]) -> g.FusedOp:
    """A ``graph.fused`` op over ``inputs`` whose body ``body`` builds."""
    block = Block(arg_types=[v.type for v in inputs])
    inner = Builder(InsertPoint.at_end(block))
    results = body(inner, block.args)
    inner.insert(g.YieldOp.build(operands=[results]))
    op = g.FusedOp.build(operands=[inputs], result_types=[[r.type for r in results]],
                         regions=[Region(block)])
    return builder.insert(op)


def chain(builder: Builder, args: tuple[SSAValue, ...]) -> list[SSAValue]:
    x = add(builder, args[0], args[1], "x")
    y = add(builder, x, args[1], "y")
    return [add(builder, y, x, "z")]


def ops_of(func: FuncOp) -> list[Operation]:
    return list(func.body.block.ops)


# ------------------------------------------------------------------------ accepted


@pytest.mark.parametrize("pipeline", ["", GRAPH_PIPELINE], ids=["imported", "graph-pipeline"])
@pytest.mark.parametrize("name", TRAINING_STEPS)
def test_accepts_imported_models(name: str, pipeline: str, captured_steps: GetStep) -> None:
    _step, captured = captured_steps(name)
    module = import_captured(captured)
    if pipeline:
        apply_pipeline(module, pipeline)
    check_dominance(module)
    for func in module.ops:
        check_dominance(func)


def region_op(builder: Builder, inputs: list[SSAValue],
              body: Callable[[Builder, tuple[SSAValue, ...]], list[SSAValue]]) -> xtest.TestOp:
    """xDSL's trait-free ``test.op`` with one block (not IsolatedFromAbove)."""
    block = Block(arg_types=[v.type for v in inputs])
    inner = Builder(InsertPoint.at_end(block))
    results = body(inner, block.args)
    inner.insert(xtest.TestTermOp(results))
    return builder.insert(xtest.TestOp(inputs, [r.type for r in results], regions=[Region(block)]))


def test_accepts_region_using_block_args_and_outer_values() -> None:
    """A region that is not IsolatedFromAbove may use values defined earlier in the
    enclosing blocks, at any depth."""

    def body(b: Builder, args: tuple[SSAValue, ...]) -> list[SSAValue]:
        outer = add(b, args[0], args[1], "outer")

        def level1(b1: Builder, inner: tuple[SSAValue, ...]) -> list[SSAValue]:
            mid = add(b1, inner[0], outer, "mid")
            op = region_op(b1, [mid], lambda b2, deep: [add(b2, deep[0], add(b2, mid, outer))])
            return [add(b1, op.results[0], inner[0])]

        return [region_op(b, [args[0]], level1).results[0]]

    module = ModuleOp([make_func("f", body)])
    module.verify()
    check_dominance(module)


def test_accepts_values_from_outside_a_non_isolated_root() -> None:
    """Checking only an op that is not IsolatedFromAbove cannot see the block around
    it: values defined outside it are taken as visible."""
    holder: list[xtest.TestOp] = []

    def body(b: Builder, args: tuple[SSAValue, ...]) -> list[SSAValue]:
        outer = add(b, args[0], args[1], "outer")
        holder.append(region_op(b, [args[0]], lambda bb, inner: [add(bb, inner[0], outer)]))
        return [holder[0].results[0]]

    make_func("f", body)
    check_dominance(holder[0])


# ------------------------------------------------------------------------ rejected


def test_rejects_use_before_definition() -> None:
    func = make_func("f", chain)
    module = ModuleOp([func])
    check_dominance(module)
    # Move the op defining %y (which uses %x) to the top of the block.
    y_op = ops_of(func)[1]
    y_op.detach()
    block = func.body.block
    assert block.first_op is not None
    block.insert_op_before(y_op, block.first_op)
    with pytest.raises(DominanceError) as info:
        check_dominance(module)
    message = str(info.value)
    assert "graph.add (defining %y)" in message
    assert "operand 0" in message and "%x" in message
    assert "before definition" in message


def test_rejects_use_of_a_later_value_in_the_same_block_only_at_the_use() -> None:
    """The error names the first bad use, the return of a value defined after it."""
    func = make_func("f", chain)
    block = func.body.block
    ret = block.last_op
    assert ret is not None
    ret.detach()
    assert block.first_op is not None
    block.insert_op_before(ret, block.first_op)
    with pytest.raises(DominanceError, match=r"operand 0 of func\.return is %z"):
        check_dominance(ModuleOp([func]))


def test_rejects_value_from_inside_another_ops_region() -> None:
    def body(b: Builder, args: tuple[SSAValue, ...]) -> list[SSAValue]:
        op = fused(b, [args[0]], lambda bb, inner: [add(bb, inner[0], inner[0], "hidden")])
        inner_value = op.body.block.first_op
        assert isinstance(inner_value, g.AddOp)
        return [add(b, inner_value.result, args[1], "leak")]

    module = ModuleOp([make_func("f", body)])
    with pytest.raises(DominanceError) as info:
        check_dominance(module)
    message = str(info.value)
    assert "graph.add (defining %leak)" in message
    assert "%hidden" in message
    assert "inside a region of graph.fused" in message


def test_rejects_region_using_an_outer_value_defined_later() -> None:
    late: list[SSAValue] = []

    def body(b: Builder, args: tuple[SSAValue, ...]) -> list[SSAValue]:
        op = region_op(b, [args[0]], lambda bb, inner: [add(bb, inner[0], inner[0], "in")])
        late.append(add(b, args[0], args[1], "late"))
        return [op.results[0], late[0]]

    func = make_func("f", body)
    holder = ops_of(func)[0]
    inner = holder.regions[0].block.first_op
    assert inner is not None
    inner.operands = [inner.operands[0], late[0]]
    with pytest.raises(DominanceError, match=r"%late .*defined later in an enclosing block"):
        check_dominance(ModuleOp([func]))


def test_rejects_isolated_region_using_an_outer_value() -> None:
    """A function body is IsolatedFromAbove: even an earlier value is invisible."""
    const = g.ConstantOp(_dense_zeros())
    const.result.name_hint = "c"
    func = make_func("f", lambda b, args: [add(b, args[0], const.result, "uses_c")])
    module = ModuleOp([const, func])
    with pytest.raises(DominanceError, match=r"%c .*outside the IsolatedFromAbove op func\.func"):
        check_dominance(module)
    # Checking the function alone is just as strict: it is isolated.
    with pytest.raises(DominanceError):
        check_dominance(func)


def test_rejects_value_of_another_function() -> None:
    """Functions are IsolatedFromAbove: a value of one is invisible in another."""
    first = make_func("first", chain)
    x = ops_of(first)[0].results[0]
    second = make_func("second", lambda b, args: [add(b, args[0], x, "uses_x")])
    with pytest.raises(DominanceError, match=r"%uses_x.*%x.*inside a region of func\.func"):
        check_dominance(ModuleOp([first, second]))


def test_rejects_an_op_using_its_own_result() -> None:
    func = make_func("f", chain)
    op = ops_of(func)[0]
    op.operands = [op.results[0], op.operands[1]]
    with pytest.raises(DominanceError, match="its own result"):
        check_dominance(ModuleOp([func]))


def test_dominance_error_is_a_value_error() -> None:
    assert issubclass(DominanceError, ValueError)


def _dense_zeros() -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr.from_list(T, [0.0] * 4)


# ------------------------------------------------------------------------ scaling


def test_scales_to_a_20k_op_function() -> None:
    """Runs on 20,000 ops (no timing assertion: a quadratic check would take minutes)."""
    n = 20_000

    def body(b: Builder, args: tuple[SSAValue, ...]) -> list[SSAValue]:
        values = list(args)
        for i in range(n):
            values.append(add(b, values[-1], values[i // 2]))
        return [values[-1]]

    func = make_func("big", body)
    module = ModuleOp([func])
    check_dominance(module)
    # Break it at the very end: the last add moves before its operands.
    block = func.body.block
    ret = block.last_op
    assert ret is not None
    last = ret.prev_op
    assert isinstance(last, g.AddOp)
    last.detach()
    assert block.first_op is not None
    block.insert_op_before(last, block.first_op)
    with pytest.raises(DominanceError, match="before definition"):
        check_dominance(module)
