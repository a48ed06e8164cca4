"""The cpu executor (``targets/graph_torch.py``) against the reference interpreter.

Every training step of the model zoo under every pipeline, random programs as imported
and after the graph pipeline (which creates ``graph.fused`` ops), and hand-built
functions for the ops and forms the zoo does not reach: each must give the
interpreter's results, with the IR's dtypes and shapes, without touching its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from conftest import PIPELINES, CapturedStep, assert_all_close
from hypothesis import HealthCheck, given, settings
from test_random_graphs import Program, build, make_inputs, programs
from torch.utils import _pytree as pytree
from xdsl.builder import Builder
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float64Type,
    FunctionType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.dialects.test import TestOp as UnknownOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mncore_ir.dialects import graph as g
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import GRAPH_PIPELINE, apply_pipeline
from mncore_ir.targets.graph_interpreter import find_function, run_function
from mncore_ir.targets.graph_torch import (
    GraphTorchError,
    TorchProgram,
    compile_function,
    compile_module,
)
from mncore_ir.testing.model_zoo import TRAINING_STEPS

#: The tolerance against the interpreter: both compute the same ops in the same
#: precision, so only the order of float operations differs.
RTOL, ATOL = 1e-5, 1e-6
GetStep = Callable[[str], CapturedStep]
f64 = Float64Type()
TORCH_DTYPES = {typ: getattr(torch, name) for name, typ in g.ELEMENT_TYPES.items()}


def check_program(module: ModuleOp, inputs: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """Run ``module``'s function compiled and interpreted: equal results of the IR's
    types, inputs unchanged, no autograd graph; and with every argument donated, the
    same results bit for bit. Returns the compiled results."""
    func = find_function(module)
    program = compile_function(func)
    before = [t.clone() for t in inputs]
    outputs = program(*inputs)
    for i, (old, new) in enumerate(zip(before, inputs, strict=True)):
        assert new.dtype == old.dtype and torch.equal(new, old), f"input {i} was modified"
    donating = compile_function(func, frozenset(range(len(inputs))))
    for i, (out, donated) in enumerate(zip(outputs, donating(*before), strict=True)):
        np.testing.assert_array_equal(donated.numpy(), out.numpy(),
                                      err_msg=f"output {i} with the arguments donated")
    expected = run_function(module, [t.numpy() for t in inputs])
    types = func.function_type.outputs.data
    assert isinstance(outputs, tuple) and len(outputs) == len(types) == len(expected)
    for i, (out, typ, exp) in enumerate(zip(outputs, types, expected, strict=True)):
        assert isinstance(out, torch.Tensor) and not out.requires_grad
        assert tuple(out.shape) == g.shape_of(typ), f"output {i}: shape {tuple(out.shape)}"
        assert out.dtype == TORCH_DTYPES[g.element_type_of(typ)], f"output {i}: {out.dtype}"
        if out.dtype.is_floating_point:
            np.testing.assert_allclose(out.numpy(), exp, rtol=RTOL, atol=ATOL,
                                       err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(out.numpy(), exp, err_msg=f"output {i}")
    return [o.numpy() for o in outputs]


# ------------------------------------------------------------- the model zoo

_EAGER: dict[str, list[np.ndarray]] = {}


def eager_outputs(name: str, captured_steps: GetStep) -> list[np.ndarray]:
    """The loss and every updated input after eager PyTorch runs the step (cached)."""
    if name not in _EAGER:
        step, captured = captured_steps(name)
        inputs = step.example_inputs()
        loss = step(*inputs)
        flat = pytree.tree_leaves(inputs)
        _EAGER[name] = [loss.numpy()] + [flat[i].numpy() for i in captured.mutated_inputs]
    return _EAGER[name]


@pytest.mark.parametrize("pipeline", PIPELINES.values(), ids=PIPELINES.keys())
@pytest.mark.parametrize("name", TRAINING_STEPS)
def test_training_step_matches_interpreter(name: str, pipeline: str,
                                           captured_steps: GetStep) -> None:
    _step, captured = captured_steps(name)
    module = import_captured(captured)
    if pipeline:
        apply_pipeline(module, pipeline)
    outputs = check_program(module, [t.clone() for t in captured.example_inputs])
    assert_all_close(outputs, eager_outputs(name, captured_steps), captured.output_names)


# ------------------------------------------------------------- random programs


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs())
def test_random_program_matches_interpreter(program: Program) -> None:
    inputs = make_inputs(program)
    captured = capture(build(program), *[t.clone() for t in inputs])
    for pipeline in ("", GRAPH_PIPELINE):
        module = import_captured(captured)
        if pipeline:
            apply_pipeline(module, pipeline)
        check_program(module, [t.clone() for t in inputs])


# ------------------------------------------------------------- hand-built functions


class FunctionBuilder:
    """Builds ``func.func @main`` op by op: ``op(...)`` inserts and returns results."""

    def __init__(self, *arg_types: Attribute) -> None:
        self.block = Block(arg_types=arg_types)
        self.builder = Builder(InsertPoint.at_end(self.block))

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return tuple(self.block.args)

    def op(self, op: Operation) -> SSAValue | tuple[SSAValue, ...]:
        self.builder.insert(op)
        return op.results[0] if len(op.results) == 1 else tuple(op.results)

    def typed(self, op_type: type[Operation], operand: SSAValue,
              result: TensorType) -> SSAValue:
        """An op whose result type is given (convert, reshape, expand)."""
        return self.op(op_type.build(operands=[operand], result_types=[result]))  # type: ignore[return-value]

    def constant(self, values: Sequence[float] | float, shape: Sequence[int] = (),
                 element: Attribute = g.f32) -> SSAValue:
        flat = list(values) if isinstance(values, Sequence) else [values]
        attr = DenseIntOrFPElementsAttr.from_list(g.tensor(shape, element), flat)
        return self.op(g.ConstantOp(attr))  # type: ignore[return-value]

    def module(self, *results: SSAValue) -> ModuleOp:
        self.builder.insert(ReturnOp(*results))
        ftype = FunctionType.from_lists([a.type for a in self.block.args],
                                        [r.type for r in results])
        module = ModuleOp([FuncOp("main", ftype, Region(self.block))])
        module.verify()
        return module


def rand(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed),
                      dtype=dtype) * 4 - 2


def randint(high: int, *shape: int, dtype: torch.dtype = torch.int64,
            seed: int = 0) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed),
                         dtype=dtype)


Case = Callable[[], tuple[ModuleOp, list[torch.Tensor]]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


@case
def integer_and_bool_reductions() -> tuple[ModuleOp, list[torch.Tensor]]:
    """Reductions of integers and bools keep the IR's type (torch sums them as int64
    and refuses integer means); an empty ``dims`` reduces nothing."""
    i32, i1 = g.i32, g.i1
    f = FunctionBuilder(g.tensor((3, 4), i32), g.tensor((3, 4), i1), g.tensor((3, 4), g.i64))
    a, b, c = f.args
    outs = [f.op(g.SumOp(a, dims=[1])), f.op(g.SumOp(b, dims=[0, 1])),
            f.op(g.MeanOp(c, dims=[0], keepdim=True)), f.op(g.AmaxOp(a, dims=[-1])),
            f.op(g.SumOp(c, dims=[0])), f.op(g.AmaxOp(b, dims=[1])),
            f.op(g.SumOp(a, dims=[]))]
    inputs = [randint(100, 3, 4, dtype=torch.int32) - 50, randint(2, 3, 4, seed=1).bool(),
              randint(9, 3, 4, seed=2)]
    return f.module(*outs), inputs  # type: ignore[arg-type]


@case
def logical_ops_and_conversions() -> tuple[ModuleOp, list[torch.Tensor]]:
    """``graph.and``/``or`` of floats yield floats; bool abs and relu are identities;
    literals in ``where`` and operators."""
    t = g.tensor((2, 5))
    f = FunctionBuilder(t, t)
    x, y = f.args
    zero = f.constant(0.0)
    mask = f.op(g.GtOp(x, zero))
    outs = [f.op(g.AndOp(x, y)), f.op(g.OrOp(x, zero)),
            f.op(g.NotOp(mask)), f.op(g.AbsOp(mask)), f.op(g.ReluOp(mask)),
            f.op(g.WhereOp(mask, f.constant(-1.5), x)),
            f.op(g.WhereOp(mask, f.constant(1.0), zero)),
            f.op(g.PowOp(f.op(g.AbsOp(x)), f.constant(0.5))),  # type: ignore[list-item]
            f.op(g.SubOp(f.constant(3.0), y)),
            f.typed(g.ConvertOp, x, g.tensor((2, 5), g.i32)),
            f.typed(g.ConvertOp, x, g.tensor((2, 5), g.i1)),
            f.typed(g.ConvertOp, x, g.tensor((2, 5), f64))]
    y_values = rand(2, 5, seed=1)
    y_values[0, :2] = 0
    return f.module(*outs), [rand(2, 5), y_values]  # type: ignore[arg-type]


@case
def indexing() -> tuple[ModuleOp, list[torch.Tensor]]:
    """Slices with steps, concat, embedding, index_put (both kinds), gather, scatter.

    (Index shapes equal the input's outside the indexed dimension: the interpreter's
    numpy ``take_along_axis`` does not take the smaller ones torch allows.)
    """
    f = FunctionBuilder(g.tensor((4, 6)), g.tensor((3, 2), g.i64), g.tensor((5,), g.i64),
                        g.tensor((3, 6), g.i64), g.tensor((4, 3), g.i64), g.tensor(()),
                        g.tensor((3,), g.i64))
    x, idx2, dup, rows, cols, scalar, unique = f.args
    outs = [f.op(g.SliceOp(x, dim=1, start=1, end=6, step=2)),
            f.op(g.SliceOp(x, dim=-2, start=1, end=3)),
            f.op(g.ConcatOp(x, x, dim=-1)),
            f.op(g.EmbeddingOp(x, idx2)),
            f.op(g.IndexPutOp(x, dup, f.constant([float(i) for i in range(6)], (6,)),
                    accumulate=True)),
            f.op(g.IndexPutOp(x, unique, scalar)),
            f.op(g.GatherOp(x, rows, dim=0)),
            f.op(g.GatherOp(x, cols, dim=-1)),
            f.op(g.ScatterOp(x, cols, scalar, dim=1)),
            f.op(g.ScatterOp(x, rows, f.constant(7.0), dim=0))]
    inputs = [rand(4, 6), randint(4, 3, 2), torch.tensor([0, 3, 0, 0, 2]),
              randint(4, 3, 6, seed=1), randint(6, 4, 3, seed=2), torch.tensor(2.5),
              torch.tensor([3, 0, 1])]
    return f.module(*outs), inputs  # type: ignore[arg-type]


@case
def row_ops_in_f64_and_gelu() -> tuple[ModuleOp, list[torch.Tensor]]:
    """Softmax and log-softmax with their backward (f64, dim 0), both GELUs."""
    t = g.tensor((3, 4), f64)
    f = FunctionBuilder(t, t, g.tensor((3, 4)), g.tensor((3, 4)))
    x, grad, y, gy = f.args
    sm = f.op(g.SoftmaxOp(x, dim=0))
    lsm = f.op(g.LogSoftmaxOp(x, dim=-1))
    outs = [sm, lsm, f.op(g.SoftmaxBackwardOp(grad, sm, dim=0)),
            f.op(g.LogSoftmaxBackwardOp(grad, lsm, dim=1))]
    for approximate in ("none", "tanh"):
        outs += [f.op(g.GeluOp(y, approximate=approximate)),
                 f.op(g.GeluBackwardOp(gy, y, approximate=approximate))]
    inputs = [rand(3, 4, dtype=torch.float64), rand(3, 4, dtype=torch.float64, seed=1),
              rand(3, 4, seed=2), rand(3, 4, seed=3)]
    return f.module(*outs), inputs  # type: ignore[arg-type]


@case
def layer_norm_over_two_dims() -> tuple[ModuleOp, list[torch.Tensor]]:
    """Statistics of shape (N, 1, 1); only some backward results used."""
    f = FunctionBuilder(g.tensor((2, 3, 4)), g.tensor((3, 4)), g.tensor((3, 4)),
                        g.tensor((2, 3, 4)))
    x, w, b, grad = f.args
    out, mean, rstd = f.op(g.LayerNormOp(x, w, b, normalized_dims=2, eps=1e-5))  # type: ignore[misc]
    gx, _gw, gb = f.op(g.LayerNormBackwardOp(grad, x, mean, rstd, w,  # type: ignore[misc]
                          normalized_dims=2))
    inputs = [rand(2, 3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2), rand(2, 3, 4, seed=3)]
    return f.module(out, mean, rstd, gx, gb), inputs


@case
def grouped_strided_convolution() -> tuple[ModuleOp, list[torch.Tensor]]:
    props = {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "groups": 2}
    f = FunctionBuilder(g.tensor((2, 4, 7, 6)), g.tensor((6, 2, 3, 2)), g.tensor((6,)))
    x, w, b = f.args
    y = f.op(g.Conv2dOp(x, w, b, **props))
    grad = f.op(g.TanhOp(y))  # type: ignore[list-item]
    gx, gw, gb = f.op(g.Conv2dBackwardOp(grad, x, w, **props))  # type: ignore[list-item, misc]
    _gx2, gw2, _gb2 = f.op(g.Conv2dBackwardOp(y, x, w, **props))  # type: ignore[list-item, misc]
    inputs = [rand(2, 4, 7, 6), rand(6, 2, 3, 2, seed=1), rand(6, seed=2)]
    return f.module(y, gx, gw, gb, gw2), inputs


@case
def max_pool_with_overlapping_windows() -> tuple[ModuleOp, list[torch.Tensor]]:
    """Padded, dilated, overlapping pools; the backward of the op's own indices and of
    indices passed in as an argument (added at their positions)."""
    props = {"kernel": [3, 2], "stride": [1, 2], "padding": [1, 1], "dilation": [2, 1]}
    f = FunctionBuilder(g.tensor((2, 3, 6, 5)), g.tensor((2, 3, 4, 3), g.i64))
    x, indices = f.args
    y, idx = f.op(g.MaxPool2dOp(x, **props))  # type: ignore[misc]
    back = f.op(g.MaxPool2dBackwardOp(y, x, idx))
    back_arg = f.op(g.MaxPool2dBackwardOp(f.op(g.ExpOp(y)), x, indices))  # type: ignore[list-item]
    x_value = rand(2, 3, 6, 5)
    _, torch_indices = torch.nn.functional.max_pool2d(
        x_value, (3, 2), (1, 2), (1, 1), (2, 1), return_indices=True)
    return f.module(y, idx, back, back_arg), [x_value, torch_indices]  # type: ignore[arg-type]


@pytest.mark.parametrize("name", CASES)
def test_hand_built_function_matches_interpreter(name: str) -> None:
    module, inputs = CASES[name]()
    check_program(module, inputs)


# ------------------------------------------------------------- calling conventions


def test_results_never_share_memory_with_inputs_constants_or_each_other() -> None:
    t = g.tensor((2, 3))
    f = FunctionBuilder(t)
    (x,) = f.args
    neg = f.op(g.NegOp(x))
    outs = [x, f.typed(g.ReshapeOp, x, g.tensor((3, 2))),
            f.op(g.PermuteOp(x, perm=[1, 0])),
            f.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3)),
            f.typed(g.ExpandOp, f.constant(2.0), t),
            f.op(g.SliceOp(x, dim=1, start=0, end=2)),
            neg, f.typed(g.ReshapeOp, neg, g.tensor((6,))),  # type: ignore[arg-type]
            f.typed(g.ExpandOp, f.op(g.SumOp(neg, dims=[0], keepdim=True)), t)]  # type: ignore[arg-type]
    program = compile_module(f.module(*outs))  # type: ignore[arg-type]
    x_value = rand(2, 3)
    first = program(x_value)
    assert first[0] is not x_value
    storages = [o.untyped_storage().data_ptr() for o in first]
    assert x_value.untyped_storage().data_ptr() not in storages
    assert len(set(storages)) == len(storages), "two results share memory"
    expected = [o.clone() for o in first]
    for o in first:
        o.add_(100)  # in place: legal on every result
    again = program(x_value)
    assert torch.equal(x_value, rand(2, 3))
    for a, b in zip(again, expected, strict=True):
        assert torch.equal(a, b)


def test_no_autograd_graph_is_built() -> None:
    f = FunctionBuilder(g.tensor((3,)))
    (x,) = f.args
    module = f.module(f.op(g.TanhOp(x)))  # type: ignore[arg-type]
    x_value = rand(3).requires_grad_(True)
    (out,) = compile_module(module)(x_value)
    assert not out.requires_grad and out.grad_fn is None


def body_lines(program: TorchProgram) -> list[str]:
    """The generated function's lines after ``with _no_grad():``."""
    lines = program.source.splitlines()
    start = next(i for i, line in enumerate(lines) if "with _no_grad():" in line)
    return [line.strip() for line in lines[start + 1:] if line.strip()]


def test_source_has_one_line_per_op() -> None:
    f = FunctionBuilder(g.tensor((2, 3)), g.tensor((3,)))
    x, y = f.args
    prod = f.op(g.MulOp(x, y))
    act = f.op(g.TanhOp(prod))  # type: ignore[list-item]
    shifted = f.op(g.AddOp(act, f.constant(0.5)))  # type: ignore[list-item]
    scaled = f.op(g.MulOp(shifted, f.constant([1.0, 2.0, 3.0], (3,))))  # type: ignore[list-item]
    total = f.op(g.SumOp(scaled, dims=[0]))  # type: ignore[list-item]
    module = f.module(total, act)  # type: ignore[arg-type]
    program = compile_module(module)
    lines = body_lines(program)
    assert len(lines) == 5 + 1  # five ops (constants are module-level), one return
    assert lines[-1].startswith("return (")
    assert program.source.count("torch.tanh(") == 1
    assert "+ 0.5" in program.source  # a 0-d constant is a literal
    assert "# _c0: constant tensor<3xf32>" in program.source
    assert "torch.sum(" in lines[4] and "(0,)" in lines[4]  # dims written as a literal
    check_program(module, [rand(2, 3), rand(3, seed=1)])

    # After fusion, the fused body's ops are inlined: still one line per op.
    apply_pipeline(module, "graph-fuse-elementwise")
    fused = [op for op in module.walk() if isinstance(op, g.FusedOp)]
    assert fused, "nothing was fused"
    fused_lines = body_lines(compile_module(module))
    assert len(fused_lines) == len(lines)
    check_program(module, [rand(2, 3), rand(3, seed=1)])


def test_an_elementwise_op_writes_into_an_operand_that_dies_with_it() -> None:
    """A dead intermediate's memory takes the next elementwise result (``out=``), but
    not while a view of it is still read; an argument only when donated, and then
    only once nothing else reads it."""
    t = g.tensor((2, 3))
    f = FunctionBuilder(t, t)
    x, y = f.args
    prod = f.op(g.MulOp(x, y))
    act = f.op(g.TanhOp(prod))  # type: ignore[list-item]  # prod dies here
    view = f.typed(g.ReshapeOp, act, g.tensor((6,)))  # type: ignore[arg-type]
    total = f.op(g.AddOp(act, x))  # type: ignore[list-item]  # act dies; its view is returned
    shifted = f.op(g.SubOp(x, total))  # type: ignore[list-item]  # total dies: rhs written
    module = f.module(shifted, view)  # type: ignore[arg-type]
    assert body_lines(compile_module(module)) == [
        "t0 = arg * arg_1",
        "t1 = torch.tanh(t0, out=t0); del t0",
        "t2 = t1.reshape((6,))",
        "t3 = t1 + arg; del t1",
        "t4 = torch.sub(arg, t3, out=t3); del t3",
        "return (t4, t2)"]
    check_program(module, [rand(2, 3), rand(2, 3, seed=1)])
    assert body_lines(compile_module(module, donated=frozenset({0, 1})))[::4] == [
        "t0 = torch.mul(arg, arg_1, out=arg_1)",  # arg is read later, arg_1 is not
        "t4 = torch.sub(arg, t3, out=arg); del t3"]


def test_a_where_writes_into_a_branch_that_dies_with_it() -> None:
    """``where(c, 0.0, x)`` with ``x`` dead after it (relu's gradient) is ``x``'s
    ``masked_fill_``; with two tensor branches, ``where``'s ``out=`` into a dead one
    (also when it is the mask: each element is read before it is written)."""
    t = g.tensor((2, 3))
    f = FunctionBuilder(t, t)
    x, y = f.args
    prod = f.op(g.MulOp(x, y))
    negative = f.op(g.LtOp(x, f.constant(0.0)))  # type: ignore[arg-type]
    masked = f.op(g.WhereOp(negative, f.constant(0.0), prod))  # type: ignore[arg-type]
    summed = f.op(g.AddOp(x, y))
    mixed = f.op(g.WhereOp(negative, masked, summed))  # type: ignore[arg-type]
    flags = f.op(g.GtOp(mixed, f.constant(0.5)))  # type: ignore[arg-type]
    kept = f.op(g.WhereOp(flags, f.constant(True, element=g.i1), flags))  # type: ignore[arg-type]
    module = f.module(mixed, kept)  # type: ignore[arg-type]
    lines = body_lines(compile_module(module))
    assert lines[2] == "t2 = t0.masked_fill_(t1, 0.0); del t0"
    assert lines[4] == "t4 = torch.where(t1, t2, t3, out=t2); del t1, t2, t3"
    assert lines[6] == "t6 = torch.where(t5, _c0, t5, out=t5); del t5"  # read as written
    check_program(module, [rand(2, 3), rand(2, 3, seed=1)])


def test_a_sum_with_a_scaled_product_is_one_addcmul() -> None:
    """``a - x * s``, ``x * s + a`` and ``x * s + y * t`` (``s``, ``t`` 0-d tensors: an
    optimizer's hoisted learning rate and momentum) make no temporary of ``x``'s size:
    one ``addcmul`` each, written into a dead operand; scaled by a literal (an
    optimizer's under ``torch.compile``), one ``add`` with ``alpha``, the literal
    negated for a subtraction; a product with another use stays a multiplication."""
    t, scalar = g.tensor((2, 3)), g.tensor(())
    f = FunctionBuilder(t, t, t, scalar, scalar)
    a, x, y, s, u = f.args
    down = f.op(g.SubOp(a, f.op(g.MulOp(x, s))))  # type: ignore[arg-type]
    up = f.op(g.AddOp(f.op(g.MulOp(s, down)), x))  # type: ignore[arg-type]
    both = f.op(g.AddOp(f.op(g.MulOp(up, u)), f.op(g.MulOp(y, s))))  # type: ignore[arg-type]
    kept = f.op(g.MulOp(both, s))
    literal = f.op(g.AddOp(f.op(g.MulOp(kept, f.constant(0.5))), kept))  # type: ignore[arg-type]
    negative = f.op(g.SubOp(y, f.op(g.MulOp(f.constant(-0.25), literal))))  # type: ignore[arg-type]
    module = f.module(negative, f.op(g.AddOp(kept, y)))  # type: ignore[arg-type]
    assert body_lines(compile_module(module)) == [
        "t0 = torch.addcmul(arg, arg_1, arg_3, value=-1)",
        "t1 = torch.addcmul(arg_1, t0, arg_3, out=t0); del t0",
        "t2 = t1 * arg_4; del t1",  # of two products, the first is written on its own
        "t3 = torch.addcmul(t2, arg_2, arg_3, out=t2); del t2",
        "t4 = torch.mul(t3, arg_3, out=t3); del t3",
        "t5 = torch.add(t4, t4, alpha=0.5)",
        "t6 = torch.add(arg_2, t5, alpha=-(-0.25), out=t5); del t5",
        "t7 = torch.add(t4, arg_2, out=t4); del t4",
        "return (t6, t7)"]
    inputs = [rand(2, 3), rand(2, 3, seed=1), rand(2, 3, seed=2), torch.tensor(0.25),
              torch.tensor(-1.5)]
    check_program(module, inputs)


def test_unknown_op_is_named() -> None:
    t = g.tensor((2,))
    f = FunctionBuilder(t)
    (x,) = f.args
    neg = f.op(g.NegOp(x))
    other = f.op(UnknownOp(operands=[neg], result_types=[t]))  # type: ignore[list-item]
    module = f.module(other)  # type: ignore[arg-type]
    with pytest.raises(GraphTorchError, match=r"'test\.op'"):
        compile_module(module)


def test_pool_padding_torch_refuses_is_a_compile_error() -> None:
    f = FunctionBuilder(g.tensor((1, 1, 6, 6)))
    (x,) = f.args
    y, _idx = f.op(g.MaxPool2dOp(x, kernel=[2, 2], stride=[1, 1], padding=[2, 2],  # type: ignore[misc]
                      dilation=[1, 1]))
    with pytest.raises(GraphTorchError, match="padding"):
        compile_module(f.module(y))
