"""``graph-decompose``: composite ops become elementwise ops and reductions.

Softmax, log-softmax, layer norm, GELU and their backward ops are expanded by their
one ``decompose()`` in ``graph_semantics``, so a later level that has no dedicated
kernel for a composite can still run it. With ``primitives=true`` the elementwise
primitives that have a decomposition (erf, tanh, sigmoid, division, sqrt, ...) are
expanded too, down to what every target has an instruction for. With
``convolutions=true`` convolutions and their backward ops become matrix products of
their windows (``im2col``), for a target whose matrix unit is its fast path (the
``mncore`` device's and the ``triton`` device's pipelines). With ``lookups=true``
embeddings and accumulating ``index_put`` (an embedding's gradient) become products
with one-hot matrices: a SIMD machine has no data-dependent addressing, and comparing
each output's index with every row is a wave of instructions per row (GPT-2's 50,257
rows: millions), where a matrix product is the MAU's fast path. With
``composites=false`` only what the other options name is expanded (the ``triton``
device keeps its fused softmax and layer-norm kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from mncore_ir.dialects.graph_semantics import SEMANTICS


@dataclass(frozen=True)
class Decompose(RewritePattern):
    """Replaces an op by its decomposition: with ``composites`` the composites, with
    ``convolutions`` the convolutions, with ``lookups`` the lookups, and with
    ``primitives`` every op that has one."""

    primitives: bool = False
    convolutions: bool = False
    composites: bool = True
    lookups: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        entry = SEMANTICS.get(type(op))
        if entry is None or entry.decompose is None or not (
                (self.composites and entry.composite) or self.primitives
                or (self.convolutions and entry.convolution)
                or (self.lookups and entry.lookup)):
            return
        values = entry.decompose(rewriter, op)
        if values is not None:  # None: not for this op's types (nothing was inserted)
            rewriter.replace(op, [], values)


@dataclass(frozen=True)
class GraphDecomposePass(ModulePass):
    """Expand composite graph ops into elementwise ops and reductions."""

    name = "graph-decompose"

    primitives: bool = False
    """Also expand elementwise primitives that have a decomposition."""

    convolutions: bool = False
    """Also express convolutions as matrix products (``im2col``)."""

    composites: bool = True
    """Expand composite ops (softmax, layer norm, GELU and their backward ops)."""

    lookups: bool = False
    """Also express embeddings and accumulating index_put as one-hot matrix products."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(Decompose(self.primitives, self.convolutions, self.composites,
                                       self.lookups),
                             apply_recursively=self.primitives).rewrite_module(op)
