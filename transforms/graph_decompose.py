"""``graph-decompose``: composite ops become elementwise ops and reductions.

Softmax, log-softmax, layer norm, GELU and their backward ops are expanded with the
same formulas the reference interpreter uses, so a later level that has no dedicated
kernel for a composite can still run it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mncore_ir.dialects import graph as g


class Emitter:
    """Builds ops before the op being rewritten and returns their results."""

    def __init__(self, like: SSAValue) -> None:
        self.ops: list[Operation] = []
        self.element_type = g.element_type_of(like)

    def __call__(self, op_type: type[g.GraphOp], *operands: SSAValue, **props: object
                 ) -> SSAValue:
        op = g.build(op_type, operands, **props)
        self.ops.append(op)
        return op.results[0]

    def scalar(self, value: float) -> SSAValue:
        typ = g.tensor((), self.element_type)
        op = g.ConstantOp(DenseIntOrFPElementsAttr.from_list(typ, [value]))
        self.ops.append(op)
        return op.result


def _replace(rewriter: PatternRewriter, op: Operation, emit: Emitter,
             results: Sequence[SSAValue]) -> None:
    rewriter.replace(op, emit.ops, list(results))


def _erf_gelu_cdf(e: Emitter, x: SSAValue) -> SSAValue:
    """0.5 * (1 + erf(x / sqrt(2)))"""
    erf = e(g.ErfOp, e(g.MulOp, x, e.scalar(1 / math.sqrt(2))))
    return e(g.MulOp, e(g.AddOp, erf, e.scalar(1.0)), e.scalar(0.5))


def _tanh_inner(e: Emitter, x: SSAValue) -> SSAValue:
    """tanh(sqrt(2/pi) * (x + 0.044715 x^3))"""
    cube = e(g.MulOp, e(g.MulOp, x, x), x)
    inner = e(g.AddOp, x, e(g.MulOp, cube, e.scalar(0.044715)))
    return e(g.TanhOp, e(g.MulOp, inner, e.scalar(math.sqrt(2 / math.pi))))


class DecomposeGelu(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GeluOp, rewriter: PatternRewriter) -> None:
        e, x = Emitter(op.input), op.input
        if op.approximate.data == "tanh":
            half = e(g.MulOp, e(g.AddOp, _tanh_inner(e, x), e.scalar(1.0)), e.scalar(0.5))
        else:
            half = _erf_gelu_cdf(e, x)
        _replace(rewriter, op, e, [e(g.MulOp, x, half)])


class DecomposeGeluBackward(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GeluBackwardOp, rewriter: PatternRewriter) -> None:
        e, x, grad = Emitter(op.input), op.input, op.grad
        if op.approximate.data == "tanh":
            beta, kappa = math.sqrt(2 / math.pi), 0.044715
            t = _tanh_inner(e, x)
            left = e(g.MulOp, e(g.AddOp, t, e.scalar(1.0)), e.scalar(0.5))
            sech2 = e(g.SubOp, e.scalar(1.0), e(g.MulOp, t, t))
            poly = e(g.AddOp, e(g.MulOp, e(g.MulOp, x, x), e.scalar(3 * kappa * beta)),
                     e.scalar(beta))
            right = e(g.MulOp, e(g.MulOp, e(g.MulOp, x, e.scalar(0.5)), sech2), poly)
            slope = e(g.AddOp, left, right)
        else:
            pdf = e(g.MulOp, e(g.ExpOp, e(g.MulOp, e(g.MulOp, x, x), e.scalar(-0.5))),
                    e.scalar(1 / math.sqrt(2 * math.pi)))
            slope = e(g.AddOp, _erf_gelu_cdf(e, x), e(g.MulOp, x, pdf))
        _replace(rewriter, op, e, [e(g.MulOp, grad, slope)])


class DecomposeSoftmax(RewritePattern):
    """softmax: exp(x - max) / sum; log-softmax: (x - max) - log(sum(exp(x - max)))."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.SoftmaxOp | g.LogSoftmaxOp):
            return
        e, dim = Emitter(op.input), [op.props()["dim"]]
        shifted = e(g.SubOp, op.input, e(g.AmaxOp, op.input, dims=dim, keepdim=True))
        exp = e(g.ExpOp, shifted)
        total = e(g.SumOp, exp, dims=dim, keepdim=True)
        if isinstance(op, g.SoftmaxOp):
            out = e(g.DivOp, exp, total)
        else:
            out = e(g.SubOp, shifted, e(g.LogOp, total))
        _replace(rewriter, op, e, [out])


class DecomposeSoftmaxBackward(RewritePattern):
    """softmax: y * (dy - sum(dy * y)); log-softmax: dy - exp(y) * sum(dy)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.SoftmaxBackwardOp | g.LogSoftmaxBackwardOp):
            return
        e, dim = Emitter(op.grad), [op.props()["dim"]]
        grad, out = op.grad, op.output
        if isinstance(op, g.SoftmaxBackwardOp):
            dot = e(g.SumOp, e(g.MulOp, grad, out), dims=dim, keepdim=True)
            result = e(g.MulOp, out, e(g.SubOp, grad, dot))
        else:
            total = e(g.SumOp, grad, dims=dim, keepdim=True)
            result = e(g.SubOp, grad, e(g.MulOp, e(g.ExpOp, out), total))
        _replace(rewriter, op, e, [result])


def _axes(value: SSAValue, normalized: int) -> tuple[list[int], list[int]]:
    rank = len(g.shape_of(value))
    return list(range(rank - normalized, rank)), list(range(rank - normalized))


class DecomposeLayerNorm(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.LayerNormOp, rewriter: PatternRewriter) -> None:
        p = op.props()
        e, x = Emitter(op.input), op.input
        axes, _ = _axes(x, p["normalized_dims"])  # type: ignore[arg-type]
        mean = e(g.MeanOp, x, dims=axes, keepdim=True)
        centered = e(g.SubOp, x, mean)
        var = e(g.MeanOp, e(g.MulOp, centered, centered), dims=axes, keepdim=True)
        rstd = e(g.RsqrtOp, e(g.AddOp, var, e.scalar(p["eps"])))  # type: ignore[arg-type]
        out = e(g.AddOp, e(g.MulOp, e(g.MulOp, centered, rstd), op.weight), op.bias)
        _replace(rewriter, op, e, [out, mean, rstd])


class DecomposeLayerNormBackward(RewritePattern):
    """dx = rstd/N * (N*g - sum(g) - x̂ * sum(g * x̂)) with g = dy * w."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.LayerNormBackwardOp, rewriter: PatternRewriter) -> None:
        k = op.props()["normalized_dims"]
        e, x, grad = Emitter(op.input), op.input, op.grad
        axes, lead = _axes(x, k)  # type: ignore[arg-type]
        count = float(math.prod(g.shape_of(x)[-k:]))  # type: ignore[operator]
        xhat = e(g.MulOp, e(g.SubOp, x, op.mean), op.rstd)
        gw = e(g.MulOp, grad, op.weight)
        sum_g = e(g.SumOp, gw, dims=axes, keepdim=True)
        sum_gx = e(g.SumOp, e(g.MulOp, gw, xhat), dims=axes, keepdim=True)
        inner = e(g.SubOp, e(g.SubOp, e(g.MulOp, gw, e.scalar(count)), sum_g),
                  e(g.MulOp, xhat, sum_gx))
        grad_input = e(g.MulOp, e(g.DivOp, op.rstd, e.scalar(count)), inner)
        grad_weight = e(g.SumOp, e(g.MulOp, grad, xhat), dims=lead)
        grad_bias = e(g.SumOp, grad, dims=lead)
        _replace(rewriter, op, e, [grad_input, grad_weight, grad_bias])


@dataclass(frozen=True)
class GraphDecomposePass(ModulePass):
    """Expand composite graph ops into elementwise ops and reductions."""

    name = "graph-decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([
                DecomposeGelu(), DecomposeGeluBackward(), DecomposeSoftmax(),
                DecomposeSoftmaxBackward(), DecomposeLayerNorm(), DecomposeLayerNormBackward(),
            ]),
            apply_recursively=False,
        ).rewrite_module(op)
