"""Canonicalization patterns of the ``graph`` dialect, found through the
``GraphCanonicalization`` trait by xDSL's ``canonicalize`` pass.

Every pattern keeps types exactly: an op is only replaced by a value of its own
result type.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mncore_ir.dialects import graph as g


def splat_value(value: SSAValue) -> float | int | None:
    """The single value of a splat ``graph.constant``, else None."""
    op = value.owner
    if not isinstance(op, g.ConstantOp):
        return None
    attr = op.value
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    if len(attr) == 0 or not attr.is_splat():
        return None
    return attr.get_values()[0]


def _replace_by(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace ``op`` by ``value`` when the types agree exactly."""
    if value.type == op.results[0].type:
        rewriter.replace(op, [], [value])


class FoldIdentityReshape(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ReshapeOp, rewriter: PatternRewriter) -> None:
        source = op.input
        if isinstance(source.owner, g.ReshapeOp):
            source = source.owner.input
        if source.type == op.result.type:
            _replace_by(rewriter, op, source)
        elif source is not op.input:
            rewriter.replace(op, g.ReshapeOp(source, g.shape_of(op.result)))


class FoldIdentityExpand(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ExpandOp, rewriter: PatternRewriter) -> None:
        _replace_by(rewriter, op, op.input)


class FoldIdentityConvert(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ConvertOp, rewriter: PatternRewriter) -> None:
        _replace_by(rewriter, op, op.input)


class ComposePermutes(RewritePattern):
    """``permute(permute(x, p), q)`` is ``permute(x, p∘q)``; the identity folds away."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.PermuteOp, rewriter: PatternRewriter) -> None:
        perm = g.ints_prop(op.properties, "perm")
        source = op.input
        if isinstance(source.owner, g.PermuteOp):
            inner = g.ints_prop(source.owner.properties, "perm")
            perm = tuple(inner[p] for p in perm)
            source = source.owner.input
        if list(perm) == list(range(len(perm))):
            _replace_by(rewriter, op, source)
        elif source is not op.input:
            rewriter.replace(op, g.PermuteOp(source, perm=perm))


class UnflattenBatchMatmul(RewritePattern):
    """A batched matmul with an operand that is a reshape merging the leading
    dimensions of a tensor into one (ATen's ``matmul`` of 4-d tensors is a ``bmm`` of
    such views) multiplies in the unmerged batch dimensions instead:
    ``reshape(matmul(reshape(lhs), reshape(rhs)))``, where the inner reshapes undo (or
    compose with) the operands' own. The operand is then not copied into the merged
    shape, and a permute under it can be read in place (``graph.matmul_permuted``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MatmulOp, rewriter: PatternRewriter) -> None:
        a, b = g.shape_of(op.lhs), g.shape_of(op.rhs)
        if len(a) != 3:
            return
        lead = next((tuple(g.shape_of(v.owner.input)[:-2]) for v in (op.rhs, op.lhs)
                     if isinstance(v.owner, g.ReshapeOp) and len(g.shape_of(v.owner.input)) > 3
                     and g.shape_of(v.owner.input)[-2:] == g.shape_of(v)[-2:]
                     and math.prod(g.shape_of(v.owner.input)[:-2]) == a[0]), None)
        if lead is None:
            return
        lhs = g.ReshapeOp(op.lhs, (*lead, *a[1:]))
        rhs = g.ReshapeOp(op.rhs, (*lead, *b[1:]))
        matmul = g.MatmulOp(lhs.result, rhs.result)
        rewriter.replace(op, [lhs, rhs, matmul, g.ReshapeOp(matmul.result, g.shape_of(op.result))])


class DoubleNegation(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.NegOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.input.owner, g.NegOp):
            _replace_by(rewriter, op, op.input.owner.input)


class ArithmeticIdentity(RewritePattern):
    """``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1`` when the result
    has ``x``'s type (a broadcasting constant may not be dropped).

    For floats the additive identity is signed: ``x + (-0.0)`` and ``x - 0.0`` are ``x``
    for every ``x``, but ``(-0.0) + 0.0`` is ``+0.0``, so ``x + 0.0`` and ``x - (-0.0)``
    are kept."""

    #: op → (identity, the sign its zero must have: -1.0, 1.0, or None for "any")
    RIGHT = {g.AddOp: (0, -1.0), g.SubOp: (0, 1.0), g.MulOp: (1, None), g.DivOp: (1, None)}
    LEFT = {g.AddOp: (0, -1.0), g.MulOp: (1, None)}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.BinaryOp):
            return
        kind = type(op)
        if kind in self.RIGHT and _is_identity(op.rhs, *self.RIGHT[kind]):
            _replace_by(rewriter, op, op.lhs)
        elif kind in self.LEFT and _is_identity(op.lhs, *self.LEFT[kind]):
            _replace_by(rewriter, op, op.rhs)


class ScalarReduction(RewritePattern):
    """A sum, mean or max of a 0-d tensor (PyTorch lets it name dimension 0) is the
    tensor itself, when the result keeps its type."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, g.ReduceOp) and g.shape_of(op.input) == ():
            _replace_by(rewriter, op, op.input)


def _is_identity(value: SSAValue, identity: int, zero_sign: float | None) -> bool:
    """Whether ``value`` is a splat of ``identity``; a float zero must have ``zero_sign``."""
    splat = splat_value(value)
    if splat is None or splat != identity:
        return False
    return zero_sign is None or not isinstance(splat, float) or (
        math.copysign(1.0, splat) == zero_sign)


PATTERNS: dict[type[Operation], tuple[RewritePattern, ...]] = {
    g.ReshapeOp: (FoldIdentityReshape(),),
    g.ExpandOp: (FoldIdentityExpand(),),
    g.ConvertOp: (FoldIdentityConvert(),),
    g.PermuteOp: (ComposePermutes(),),
    g.MatmulOp: (UnflattenBatchMatmul(),),
    g.NegOp: (DoubleNegation(),),
    **{op: (ScalarReduction(),) for op in (g.SumOp, g.MeanOp, g.AmaxOp)},
    **{op: (ArithmeticIdentity(),) for op in (g.AddOp, g.SubOp, g.MulOp, g.DivOp)},
}
