"""What each graph op means, written once: one table keyed by op class.

Per op: its numpy reference (the meaning every level is checked against), its torch
spelling (the cpu executor's code), its Triton spelling and MN-Core ALU instruction
(elementwise primitives), its FLOPs per output element, and a ``decompose()`` into
simpler graph ops where it has one. Targets and lowerings look ops up here instead of
keeping their own math; a native kernel (a fused Triton softmax, torch's own layer
norm) is an optimisation tested against the reference and the decomposition.

A new elementwise op is one entry here (plus its IRDL class and importer mapping).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import graph_semantics_decompose as dec
from mncore_ir.dialects import graph_semantics_numpy as ref
from mncore_ir.dialects import graph_semantics_transcendental as tr
from mncore_ir.dialects import graph_semantics_windows as win
from mncore_ir.dialects.graph_semantics_decompose import Decomposition

#: (op, *operands as arrays) -> the result, or a tuple of results (any dtype: the
#: interpreter casts them to the op's result types).
Reference = Callable[..., Any]
#: FLOPs per output element: a number, or a function of the op.
Flops = float | Callable[[Operation], float]


@dataclass(frozen=True)
class OpSemantics:
    """The meaning of one graph op class at every level.

    ``torch`` is a format string of the generated torch code: ``{0}``, ``{1}``, ... are
    the operands, ``{name}`` a property as a Python literal, ``{shape}`` the result
    shape and ``{dtype}`` the result's torch dtype; ``aten.<op>.<overload>(...)`` calls
    a bound ``torch.ops.aten`` overload. ``triton`` is a format string over the operands
    (elementwise ops only). ``alu`` names the MN-Core ALU instruction of an elementwise
    primitive (``alu_swapped``: with its two operands swapped). Where ``triton`` or
    ``alu`` is None, a target without a native kernel uses ``decompose``. ``composite``
    ops are expanded by ``graph-decompose``; ``convolution`` ops (as matrix products)
    by ``graph-decompose{convolutions=true}``, for a target whose fast path is its
    matrix unit, and ``lookup`` ops (embedding, accumulating index_put: one-hot matrix
    products) by ``graph-decompose{lookups=true}``; the other decompositions are the
    recipes of targets that lack an instruction. A decomposition may return None: not
    for this op's types or attributes (the op stays).
    """

    reference: Reference | None
    torch: str | None = None
    triton: str | None = None
    alu: str | None = None
    alu_swapped: bool = False
    flops: Flops = 1.0
    decompose: Decomposition | None = None
    composite: bool = False
    convolution: bool = False
    lookup: bool = False


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Reference:
    return lambda op, x: fn(x)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Reference:
    return lambda op, a, b: fn(a, b)


def _elements(value: Any) -> int:
    return math.prod(g.shape_of(value))


def gathers_per_output(op: Operation) -> float:
    """Elements read per output element of an op that picks one element of its first
    operand (a table) per output element by index: that element and the others."""
    out = sum(_elements(r) for r in op.results)
    return (out + sum(_elements(o) for o in op.operands[1:])) / out if out else 0.0


def reads_per_output(op: Operation) -> float:
    """Elements read per output element (one operation each): reductions, data
    movement, indexing and windows."""
    out = sum(_elements(r) for r in op.results)
    return sum(_elements(o) for o in op.operands) / out if out else 0.0


def _matmul_flops(op: Operation) -> float:
    """A multiply and an add per element of the contracted dimension."""
    return 2.0 * g.shape_of(op.operands[0])[-1]


_OPERATOR = "{0} %s {1}"


def _pointwise(torch: str, triton: str | None, alu: str | None = None, *,
               reference: Reference, decompose: Decomposition | None = None,
               alu_swapped: bool = False) -> OpSemantics:
    return OpSemantics(reference, torch, triton, alu, alu_swapped, 1.0, decompose)


SEMANTICS: dict[type[Operation], OpSemantics] = {
    # --- elementwise primitives
    g.NegOp: _pointwise("torch.neg({0})", "-{0}", "fneg", reference=_unary(np.negative)),
    g.AbsOp: _pointwise("torch.abs({0})", "tl.abs({0})", reference=_unary(np.abs),
                        decompose=dec.abs_),
    g.ReluOp: _pointwise("torch.relu({0})",
                         "tl.maximum({0}, 0.0, propagate_nan=tl.PropagateNan.ALL)",
                         reference=_unary(ref.relu), decompose=dec.relu),
    g.ExpOp: _pointwise("torch.exp({0})", "tl.exp({0})", "fexp", reference=_unary(np.exp)),
    g.LogOp: _pointwise("torch.log({0})", "tl.log({0})", "flog", reference=_unary(np.log)),
    g.Log1pOp: _pointwise("torch.log1p({0})", None, reference=_unary(np.log1p),
                          decompose=dec.log1p),
    g.FloorOp: _pointwise("torch.floor({0})", "tl.floor({0})", reference=_unary(np.floor),
                          decompose=dec.floor),
    g.SqrtOp: _pointwise("torch.sqrt({0})", "tl.sqrt({0})", reference=_unary(np.sqrt),
                         decompose=dec.sqrt),
    g.RsqrtOp: _pointwise("torch.rsqrt({0})", "1.0 / tl.sqrt({0})", "frsqrt",
                          reference=_unary(ref.rsqrt)),
    g.ReciprocalOp: _pointwise("torch.reciprocal({0})", "1.0 / {0}", "frecip",
                               reference=_unary(ref.reciprocal)),
    g.TanhOp: _pointwise("torch.tanh({0})", "_tanh({0})", reference=_unary(np.tanh),
                         decompose=dec.tanh),
    g.SigmoidOp: _pointwise("torch.sigmoid({0})", "1.0 / (1.0 + tl.exp(-{0}))",
                            reference=_unary(ref.sigmoid), decompose=dec.sigmoid),
    g.ErfOp: _pointwise("torch.erf({0})", "tl.math.erf({0})", reference=_unary(ref.erf),
                        decompose=dec.erf),
    # transcendental: Triton's tl has sin and cos; the rest are decomposed
    g.SinOp: _pointwise("torch.sin({0})", "tl.sin({0})", reference=_unary(np.sin),
                        decompose=tr.sin),
    g.CosOp: _pointwise("torch.cos({0})", "tl.cos({0})", reference=_unary(np.cos),
                        decompose=tr.cos),
    g.TanOp: _pointwise("torch.tan({0})", None, reference=_unary(np.tan), decompose=tr.tan),
    g.AsinOp: _pointwise("torch.asin({0})", None, reference=_unary(np.arcsin),
                         decompose=tr.asin),
    g.AcosOp: _pointwise("torch.acos({0})", None, reference=_unary(np.arccos),
                         decompose=tr.acos),
    g.AtanOp: _pointwise("torch.atan({0})", None, reference=_unary(np.arctan),
                         decompose=tr.atan),
    g.SinhOp: _pointwise("torch.sinh({0})", None, reference=_unary(np.sinh),
                         decompose=tr.sinh),
    g.CoshOp: _pointwise("torch.cosh({0})", None, reference=_unary(np.cosh),
                         decompose=tr.cosh),
    g.AsinhOp: _pointwise("torch.asinh({0})", None, reference=_unary(np.arcsinh),
                          decompose=tr.asinh),
    g.AcoshOp: _pointwise("torch.acosh({0})", None, reference=_unary(np.arccosh),
                          decompose=tr.acosh),
    g.AtanhOp: _pointwise("torch.atanh({0})", None, reference=_unary(np.arctanh),
                          decompose=tr.atanh),
    g.Expm1Op: _pointwise("torch.expm1({0})", None, reference=_unary(np.expm1),
                          decompose=tr.expm1),
    g.ErfcOp: _pointwise("torch.erfc({0})", None, reference=_unary(ref.erfc),
                         decompose=tr.erfc),
    g.ErfcxOp: _pointwise("torch.special.erfcx({0})", None, reference=_unary(ref.erfcx),
                          decompose=tr.erfcx),
    g.ErfinvOp: _pointwise("torch.erfinv({0})", None, reference=_unary(ref.erfinv),
                           decompose=tr.erfinv),
    g.LgammaOp: _pointwise("torch.lgamma({0})", None, reference=_unary(ref.lgamma),
                           decompose=tr.lgamma),
    g.DigammaOp: _pointwise("torch.digamma({0})", None, reference=_unary(ref.digamma),
                            decompose=tr.digamma),
    g.NotOp: _pointwise("torch.logical_not({0})", "{0} == 0",
                        reference=_unary(np.logical_not), decompose=dec.not_),
    g.AddOp: _pointwise(_OPERATOR % "+", "{0} + {1}", "fadd", reference=_binary(np.add)),
    g.SubOp: _pointwise(_OPERATOR % "-", "{0} - {1}", "fsub",
                        reference=_binary(np.subtract)),
    g.MulOp: _pointwise(_OPERATOR % "*", "{0} * {1}", "fmul",
                        reference=_binary(np.multiply)),
    g.DivOp: _pointwise(_OPERATOR % "/", "{0} / {1}", reference=_binary(np.divide),
                        decompose=dec.div),
    # pow: no ALU instruction and no decomposition exact enough; lowered by each target
    g.PowOp: _pointwise(_OPERATOR % "**", "_pow({0}, {1})", reference=_binary(np.power)),
    g.Atan2Op: _pointwise("torch.atan2({0}, {1})", None, reference=_binary(np.arctan2),
                          decompose=tr.atan2),
    # Triton's % is C's fmod on floats and signed integers (frem, srem); MN-Core's
    # recipe is exact without an FMA, which a GPU compiler would contract into it
    g.FmodOp: _pointwise("torch.fmod({0}, {1})", "{0} % {1}", reference=ref.fmod,
                         decompose=tr.fmod),
    g.MaximumOp: _pointwise("torch.maximum({0}, {1})",
                            "tl.maximum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
                            "fmax", reference=_binary(np.maximum)),
    g.MinimumOp: _pointwise("torch.minimum({0}, {1})",
                            "tl.minimum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
                            "fmin", reference=_binary(np.minimum)),
    # and/or of truth values (a lowering makes non-boolean operands 0 or 1 first)
    g.AndOp: _pointwise("torch.logical_and({0}, {1})", "({0} != 0) & ({1} != 0)", "fmul",
                        reference=_binary(np.logical_and)),
    g.OrOp: _pointwise("torch.logical_or({0}, {1})", "({0} != 0) | ({1} != 0)", "fmax",
                       reference=_binary(np.logical_or)),
    g.EqOp: _pointwise(_OPERATOR % "==", "{0} == {1}", "fcmpeq", reference=_binary(np.equal)),
    g.NeOp: _pointwise(_OPERATOR % "!=", "{0} != {1}", "fcmpne",
                       reference=_binary(np.not_equal)),
    g.LtOp: _pointwise(_OPERATOR % "<", "{0} < {1}", "fcmplt", reference=_binary(np.less)),
    g.LeOp: _pointwise(_OPERATOR % "<=", "{0} <= {1}", "fcmple",
                       reference=_binary(np.less_equal)),
    g.GtOp: _pointwise(_OPERATOR % ">", "{0} > {1}", "fcmplt", alu_swapped=True,
                       reference=_binary(np.greater)),
    g.GeOp: _pointwise(_OPERATOR % ">=", "{0} >= {1}", "fcmple", alu_swapped=True,
                       reference=_binary(np.greater_equal)),
    g.WhereOp: _pointwise("torch.where({0}, {1}, {2})", "tl.where({0} != 0, {1}, {2})",
                          "fsel", reference=ref.where),
    # convert: the cast to the result type; its ALU form depends on the types
    g.ConvertOp: _pointwise("{0}.to({dtype})", "{0}.to({dtype})", reference=ref.convert),
    # --- elementwise composites (the Triton target has native kernels for GELU)
    g.GeluOp: OpSemantics(ref.gelu, "F.gelu({0}, approximate={approximate})",
                          decompose=dec.gelu, composite=True),
    g.GeluBackwardOp: OpSemantics(
        ref.gelu_backward, "aten.gelu_backward.default({0}, {1}, approximate={approximate})",
        decompose=dec.gelu_backward, composite=True),
    g.ConstantOp: OpSemantics(ref.constant, flops=0.0),
    # --- reductions and linear algebra
    g.SumOp: OpSemantics(ref.sum_, "torch.sum({0}, {dims}, keepdim={keepdim})",
                         flops=reads_per_output),
    g.MeanOp: OpSemantics(ref.mean, "torch.mean({0}, {dims}, keepdim={keepdim})",
                          flops=reads_per_output),
    g.AmaxOp: OpSemantics(ref.amax, "torch.amax({0}, {dims}, keepdim={keepdim})",
                          flops=reads_per_output),
    g.MatmulOp: OpSemantics(ref.matmul, "{0} @ {1}", flops=_matmul_flops),
    g.MatmulPermutedOp: OpSemantics(ref.matmul_permuted, "{0} @ {1}.permute({rhs_perm})",
                                    flops=_matmul_flops, decompose=dec.matmul_permuted),
    # --- shapes (views)
    g.ReshapeOp: OpSemantics(ref.reshape, "{0}.reshape({shape})", flops=reads_per_output),
    g.ExpandOp: OpSemantics(ref.expand, "{0}.expand({shape})", flops=reads_per_output),
    g.PermuteOp: OpSemantics(ref.permute, "{0}.permute({perm})", flops=reads_per_output),
    g.SliceOp: OpSemantics(ref.slice_, "{0}[{index}]", flops=reads_per_output),
    g.ConcatOp: OpSemantics(ref.concat, "torch.cat({inputs}, {dim})", flops=reads_per_output),
    # --- indexing
    g.EmbeddingOp: OpSemantics(ref.embedding, "torch.embedding({0}, {1})",
                               flops=gathers_per_output, decompose=dec.embedding,
                               lookup=True),
    g.IndexPutOp: OpSemantics(ref.index_put, "torch.index_put({0}, ({1},), {2}, {accumulate})",
                              flops=reads_per_output, decompose=dec.index_put, lookup=True),
    g.GatherOp: OpSemantics(ref.gather, "torch.gather({0}, {dim}, {1})",
                            flops=gathers_per_output),
    g.ScatterOp: OpSemantics(ref.scatter, "torch.scatter({0}, {dim}, {1}, {2})",
                             flops=reads_per_output),
    # --- rows
    g.SoftmaxOp: OpSemantics(ref.softmax, "torch.softmax({0}, {dim})", flops=5.0,
                             decompose=dec.softmax, composite=True),
    g.LogSoftmaxOp: OpSemantics(ref.log_softmax, "torch.log_softmax({0}, {dim})", flops=5.0,
                                decompose=dec.log_softmax, composite=True),
    g.SoftmaxBackwardOp: OpSemantics(
        ref.softmax_backward, "torch._softmax_backward_data({0}, {1}, {dim}, {dtype})",
        flops=4.0, decompose=dec.softmax_backward, composite=True),
    g.LogSoftmaxBackwardOp: OpSemantics(
        ref.log_softmax_backward,
        "torch._log_softmax_backward_data({0}, {1}, {dim}, {dtype})",
        flops=4.0, decompose=dec.log_softmax_backward, composite=True),
    g.LayerNormOp: OpSemantics(
        ref.layer_norm, "torch.native_layer_norm({0}, {normalized_shape}, {1}, {2}, {eps})",
        flops=8.0, decompose=dec.layer_norm, composite=True),
    # torch computes the bias gradient only for a defined bias; its values do not
    # matter, so the weight (of the same shape) stands in.
    g.LayerNormBackwardOp: OpSemantics(
        ref.layer_norm_backward,
        "aten.native_layer_norm_backward.default({0}, {1}, {normalized_shape}, {2}, {3}, "
        "{4}, {4}, {mask})",
        flops=reads_per_output, decompose=dec.layer_norm_backward, composite=True),
    # --- windows
    g.Conv2dOp: OpSemantics(
        ref.conv2d, "torch.conv2d({0}, {1}, {2}, {stride}, {padding}, {dilation}, {groups})",
        flops=reads_per_output, decompose=win.conv2d, convolution=True),
    g.Conv2dBackwardOp: OpSemantics(
        ref.conv2d_backward,
        "aten.convolution_backward.default({0}, {1}, {2}, [{out_channels}], {stride}, "
        "{padding}, {dilation}, False, (0, 0), {groups}, {mask})",
        flops=reads_per_output, decompose=win.conv2d_backward, convolution=True),
    # torch's indices are the interpreter's: the flat h * W + w position in the
    # unpadded input plane.
    g.MaxPool2dOp: OpSemantics(
        ref.max_pool2d,
        "aten.max_pool2d_with_indices.default({0}, {kernel}, {stride}, {padding}, "
        "{dilation}, False)", flops=reads_per_output),
    g.MaxPool2dBackwardOp: OpSemantics(
        ref.max_pool2d_backward,
        "aten.max_pool2d_with_indices_backward.default({0}, {1}, {kernel}, {stride}, "
        "{padding}, {dilation}, False, {2})", flops=reads_per_output),
    # --- structure: a fused op means its body, a yield passes values on
    g.FusedOp: OpSemantics(None, flops=0.0),
    g.YieldOp: OpSemantics(None, flops=0.0),
}


def semantics(op_type: type[Operation]) -> OpSemantics:
    """The table entry of a graph op class."""
    try:
        return SEMANTICS[op_type]
    except KeyError:
        raise KeyError(f"{getattr(op_type, 'name', op_type)} has no semantics entry") from None


def flops_per_element(op: Operation) -> float:
    """FLOPs per element of ``op``'s results."""
    flops = semantics(type(op)).flops
    return flops(op) if callable(flops) else flops


def op_flops(op: Operation) -> float:
    """FLOPs of the whole op."""
    return flops_per_element(op) * sum(_elements(r) for r in op.results)


def decomposed(op: Operation) -> tuple[Block, list[SSAValue]] | None:
    """``op``'s decomposition built on a scratch block whose arguments stand for its
    operands (``op``'s own IR is left as it was): the block holds the simpler ops, and
    the values that replace its results. ``None`` where the
    table has no decomposition. Code generators without an instruction for an op
    compile these ops instead."""
    entry = SEMANTICS.get(type(op))
    if entry is None or entry.decompose is None:
        return None
    scratch = Block(arg_types=[o.type for o in op.operands])
    copy = op.clone(value_mapper=dict(zip(op.operands, scratch.args, strict=True)))
    scratch.add_op(copy)
    results = entry.decompose(Builder(InsertPoint.before(copy)), copy)
    if results is None:  # not for this op's types
        return None
    scratch.erase_op(copy)
    return scratch, results
