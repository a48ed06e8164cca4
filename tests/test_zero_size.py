"""Every graph op on zero-size tensors, against eager PyTorch.

The cases are generated: each op of ``lit_tests/dialects/graph/ops.mlir`` (which holds
every op of the graph dialect, as a test below checks) becomes a one-op function, and
each size in its types is set to 0 in turn, as the mutation fuzzer does. For every
variant, the graph level must do what eager PyTorch (the cpu executor's torch code)
does: where torch computes a value, the verifier accepts the op and the reference
interpreter returns that value; where torch raises because of the shapes, the verifier
refuses the op at its position; where torch raises because an index has no valid
value (an index into an empty dimension), the interpreter refuses it at run time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import ParseError, VerifyException

from mncore_ir.dialects import graph as g
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import make_context
from mncore_ir.targets.graph_interpreter import InterpretationError, numpy_dtype, run_function
from mncore_ir.targets.graph_torch import GraphTorchError, compile_function

OPS_MLIR = Path(__file__).parents[1] / "lit_tests" / "dialects" / "graph" / "ops.mlir"
CTX = make_context()
RTOL, ATOL = 1e-5, 1e-6
#: What torch says about an index with no valid value.
TORCH_INDEX_ERROR = re.compile(r"out of (range|bounds)")
#: Refusals of ops that the torch code here computes, each with the reason: (op,
#: message part).
KNOWN_REFUSALS = {
    # torch does not check the statistics' shapes: it reads past them
    ("graph.layer_norm_backward", "statistics must have type"),
    # the bias gradient of a convolution without input channels comes back as zeros,
    # not the sum of the output gradient (and the forward op is misshapen)
    ("graph.conv2d_backward", "at least one input and one output channel"),
    # torch's max_pool2d_with_indices_backward refuses empty planes; the cpu executor
    # spells the op with scatter_add when its indices come from an argument
    ("graph.max_pool2d_backward", "zero-size channel or spatial dimension"),
}


def sample_ops() -> list[Operation]:
    """The graph ops of ops.mlir (graph.yield only inside a graph.fused; the collectives
    need their ranks: ``tests/test_distributed.py`` runs them empty)."""
    module = parse_module(CTX, OPS_MLIR.read_text(), str(OPS_MLIR))
    return [op for op in module.walk()
            if op.name.startswith("graph.") and not isinstance(op.parent_op(), g.FusedOp)
            and not isinstance(op, g.CollectiveOp)]


def _shaped(op: Operation) -> list[TensorType]:
    types = [v.type for v in (*op.operands, *op.results)]
    types += [v.type for inner in op.walk() for v in inner.results]
    return [t for t in types if isinstance(t, TensorType)]


def zeroed(typ: Attribute, size: int) -> Attribute:
    """``typ`` with every dimension of ``size`` set to 0."""
    if not isinstance(typ, TensorType):
        return typ
    return TensorType(typ.element_type, [0 if d == size else d for d in typ.get_shape()])


def _result_types(op: Operation, operands: Sequence[SSAValue], size: int) -> list[Attribute]:
    """What the op's shape rule gives for the new operands; the old result types with
    ``size`` zeroed where it has no rule or refuses them (the verifier then says why)."""
    if isinstance(op, g.GraphOp):
        try:
            return list(type(op).infer([o.type for o in operands], op.properties))  # type: ignore[arg-type]
        except (NotImplementedError, VerifyException):
            pass
    return [zeroed(r.type, size) for r in op.results]


def _rebuild(op: Operation, values: dict[SSAValue, SSAValue], size: int) -> Operation:
    """A copy of ``op`` (and its body) on the mapped operands, with ``size`` zeroed."""
    operands = [values[o] for o in op.operands]
    properties = dict(op.properties)
    if isinstance(op, g.ConstantOp):
        typ = zeroed(op.value.type, size)
        if typ != op.value.type:
            properties["value"] = DenseIntOrFPElementsAttr(typ, BytesAttr(b""))  # type: ignore[arg-type]
    regions = []
    for region in op.regions:
        block = Block(arg_types=[zeroed(a.type, size) for a in region.block.args])
        inner = dict(zip(region.block.args, block.args, strict=True))
        for nested in region.block.ops:
            block.add_op(_rebuild(nested, inner, size))
        regions.append(Region(block))
    new = type(op).create(operands=operands, result_types=_result_types(op, operands, size),
                          properties=properties, attributes=dict(op.attributes),
                          regions=regions)
    values.update(zip(op.results, new.results, strict=True))
    return new


def one_op_function(op: Operation, size: int) -> FuncOp:
    """``op`` alone in a function of its operands that returns its results."""
    block = Block(arg_types=[zeroed(o.type, size) for o in op.operands])
    new = _rebuild(op, dict(zip(op.operands, block.args, strict=True)), size)
    block.add_ops([new, ReturnOp(*new.results)])
    return FuncOp("main", ([a.type for a in block.args], [r.type for r in new.results]),
                  Region(block))


def variants() -> list[tuple[str, Operation, int]]:
    """(id, op, size) for each op of ops.mlir and each size in its types."""
    out = []
    for index, op in enumerate(sample_ops()):
        sizes = sorted({d for t in _shaped(op) for d in t.get_shape() if d > 0})
        out += [(f"{op.name}@{index}:{size}->0", op, size) for size in sizes]
    return out


VARIANTS = variants()


def test_every_graph_op_has_zero_size_variants() -> None:
    tested = {op.name for _, op, _ in VARIANTS}
    untested = {op.name for op in (g.YieldOp, *g.COLLECTIVES)}
    assert {op.name for op in g.Graph.operations} - untested <= tested


def inputs_for(func: FuncOp, seed: int) -> list[np.ndarray]:
    """Normal floats, fair booleans, integers in [0, 2) (in range for every index
    operand of ops.mlir unless its dimension is empty)."""
    rng = np.random.default_rng(seed)
    out = []
    for typ in func.function_type.inputs.data:
        shape, dtype = g.shape_of(typ), numpy_dtype(typ.element_type)
        if dtype.kind == "f":
            out.append(rng.standard_normal(shape, dtype=dtype))
        else:
            out.append(rng.integers(0, 2, shape, dtype=dtype))
    return out


class NotThisType(Exception):
    """Torch computes values of other types than the op declares (it clamps a slice,
    misshapes a convolution without input channels): it has no value of the op's type."""


def eager(func: FuncOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray] | Exception:
    """The results of the op in eager PyTorch, or what torch raised."""
    try:
        program = compile_function(func)
        outputs = [t.numpy() for t in program(*(torch.from_numpy(a.copy()) for a in inputs))]
    except (RuntimeError, IndexError, ValueError, GraphTorchError) as error:
        return error
    got = [(o.shape, o.dtype) for o in outputs]
    declared = [(g.shape_of(t), numpy_dtype(t.element_type))
                for t in func.function_type.outputs.data]
    return outputs if got == declared else NotThisType(f"torch returns {got}")


@pytest.mark.parametrize(("op", "size"), [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS])
def test_zero_size_variant_matches_eager(op: Operation, size: int) -> None:
    func = one_op_function(op, size)
    inputs = inputs_for(func, seed=size)
    expected = eager(func, inputs)
    text = str(ModuleOp([func]))
    try:
        module = parse_module(CTX, text, "zero.mlir")
    except ParseError as refusal:
        known = any(op.name == name and part in refusal.msg for name, part in KNOWN_REFUSALS)
        assert isinstance(expected, Exception) or known, (
            f"the verifier refuses what torch computes:\n{refusal}\n{text}")
        assert re.match(r"zero.mlir:\d+:\d+\n", str(refusal)), str(refusal)
        assert refusal.msg.startswith("graph."), str(refusal)  # it names the op
        return
    if isinstance(expected, Exception):
        assert TORCH_INDEX_ERROR.search(str(expected)), (
            f"the verifier accepts what torch refuses for its shapes: {expected}\n{text}")
        with pytest.raises(InterpretationError, match=rf"^{op.name}: index .* out of range"):
            run_function(module, inputs)
        return
    outputs = run_function(module, inputs)
    assert len(outputs) == len(expected)
    for i, (ours, theirs) in enumerate(zip(outputs, expected, strict=True)):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (i, ours, theirs)
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, equal_nan=True,
                                   err_msg=f"result {i}")
