"""3-D convolutions as 2-D ones, so every device that runs ``graph.conv2d`` runs them.

Output depth ``od`` of a 3-D convolution sums, over the kernel's depth ``kd``, the 2-D
convolutions of input depth ``od * sd + kd * dd - pd`` by the filters' slice ``kd``.
So for each ``kd`` the input depths it reads (a strided slice of the depth-padded
input) are folded into the batch (``[N * Do, C, H, W]``) and convolved once in 2-D; the
``KD`` results add up. The backward op runs each 2-D convolution's backward: the weight
gradients stack along the depth, the input gradients go back to the depths they read
(spread by the stride, shifted by ``kd * dd``) and add up, the padding cropped.
Transposed 3-D convolutions are not taken (they run on the host)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.frontends.fx_importer import FxImporter, unsupported

DEPTH_FIRST = [0, 2, 1, 3, 4]  # [N, C, D, H, W] <-> [N, D, C, H, W]


def _triples(node: fx.Node, v: Any, default: int) -> list[int]:
    v = list(v) if isinstance(v, list | tuple) else [v]
    v = v or [default]
    v = v * 3 if len(v) == 1 else v
    if len(v) != 3:
        raise unsupported(node, f"a 3-D convolution with window property {v}")
    return [int(x) for x in v]


def _zeros(imp: FxImporter, like: SSAValue, shape: Sequence[int]) -> SSAValue:
    zero = imp.constant(0, g.element_type_of(like))
    return imp.insert(g.ExpandOp(zero, tuple(shape)), hint=False)


def _concat(imp: FxImporter, parts: Sequence[SSAValue], dim: int) -> SSAValue:
    parts = [p for p in parts if g.shape_of(p)[dim] > 0]
    return parts[0] if len(parts) == 1 else imp.insert(g.ConcatOp(*parts, dim=dim), hint=False)


def _pad_depth(imp: FxImporter, x: SSAValue, before: int, after: int) -> SSAValue:
    shape = list(g.shape_of(x))
    return _concat(imp, [_zeros(imp, x, [*shape[:2], before, *shape[3:]]), x,
                         _zeros(imp, x, [*shape[:2], after, *shape[3:]])], 2)


def _permute(imp: FxImporter, x: SSAValue) -> SSAValue:
    return imp.insert(g.PermuteOp(x, perm=DEPTH_FIRST), hint=False)


class Geometry:
    """A 3-D convolution's depth arithmetic and its 2-D window properties."""

    def __init__(self, node: fx.Node, x: Any, w: Any, stride: Any, padding: Any,
                 dilation: Any, groups: int) -> None:
        self.stride, self.padding = _triples(node, stride, 1), _triples(node, padding, 0)
        self.dilation = _triples(node, dilation, 1)
        self.n, self.c, self.depth, self.h, self.w = x.shape
        self.o, _, self.kd = w.shape[:3]
        sd, pd, dd = self.stride[0], self.padding[0], self.dilation[0]
        self.padded = self.depth + 2 * pd
        self.out_depth = (self.padded - dd * (self.kd - 1) - 1) // sd + 1
        self.windows = {"stride": self.stride[1:], "padding": self.padding[1:],
                        "dilation": self.dilation[1:], "groups": groups}

    def start(self, k: int) -> int:
        return k * self.dilation[0]

    def end(self, k: int) -> int:
        return self.start(k) + self.stride[0] * (self.out_depth - 1) + 1

    def input_slice(self, imp: FxImporter, padded: SSAValue, k: int) -> SSAValue:
        """The depths filter slice ``k`` reads, folded into the batch: [N*Do, C, H, W]."""
        part = imp.insert(g.SliceOp(padded, dim=2, start=self.start(k), end=self.end(k),
                                    step=self.stride[0]), hint=False)
        return imp.reshape(_permute(imp, part), (self.n * self.out_depth, self.c, self.h,
                                                 self.w))

    def filters(self, imp: FxImporter, w: SSAValue, k: int) -> SSAValue:
        part = imp.insert(g.SliceOp(w, dim=2, start=k, end=k + 1), hint=False)
        shape = g.shape_of(w)
        return imp.reshape(part, (*shape[:2], *shape[3:]))


def convolution_3d(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, w, b, stride, padding, dilation, _transposed, _out_pad, groups = node.args
    geo = Geometry(node, imp.meta(x), imp.meta(w), stride, padding, dilation, groups)
    if geo.out_depth <= 0:
        raise unsupported(node, "a 3-D convolution with no output depth")
    xv, wv = imp.value(x), imp.value(w)
    padded = _pad_depth(imp, xv, geo.padding[0], geo.padding[0])
    zeros = _zeros(imp, xv, [geo.o])
    total = None
    for k in range(geo.kd):
        y = imp.insert(g.Conv2dOp(geo.input_slice(imp, padded, k), geo.filters(imp, wv, k),
                                  zeros, **geo.windows), hint=False)
        total = y if total is None else imp.insert(g.AddOp(total, y), hint=False)
    assert total is not None
    out = imp.meta(node).shape
    y = _permute(imp, imp.reshape(total, (out[0], out[2], out[1], *out[3:])))
    if b is not None:
        bias = imp.reshape(imp.value(b), (1, geo.o, 1, 1, 1))
        y = imp.insert(g.AddOp(y, bias), hint=False)
    return y


def convolution_3d_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    grad, x, w, _bias, stride, padding, dilation, _transposed, _op, groups, mask = node.args
    geo = Geometry(node, imp.meta(x), imp.meta(w), stride, padding, dilation, groups)
    xv, wv, gv = imp.value(x), imp.value(w), imp.value(grad)
    padded = _pad_depth(imp, xv, geo.padding[0], geo.padding[0])
    g_shape = g.shape_of(gv)
    grad2d = imp.reshape(_permute(imp, gv), (g_shape[0] * g_shape[2], g_shape[1],
                                             *g_shape[3:]))
    inputs, weights, biases = [], [], []
    for k in range(geo.kd):
        dx, dw, db = imp.insert(g.Conv2dBackwardOp(
            grad2d, geo.input_slice(imp, padded, k), geo.filters(imp, wv, k),
            **geo.windows), hint=False)
        inputs.append(_placed(imp, geo, dx, k))
        shape = g.shape_of(dw)
        weights.append(imp.reshape(dw, (*shape[:2], 1, *shape[2:])))
        biases.append(db)  # each the sum of the whole output gradient
    grad_x = grad_w = grad_b = None
    if mask[0]:
        total = inputs[0]
        for part in inputs[1:]:
            total = imp.insert(g.AddOp(total, part), hint=False)
        pd = geo.padding[0]
        grad_x = imp.insert(g.SliceOp(total, dim=2, start=pd, end=pd + geo.depth),
                            hint=False) if pd else total
    if mask[1]:
        grad_w = _concat(imp, weights, 2)
    if mask[2]:
        grad_b = biases[0]
    return grad_x, grad_w, grad_b


def _placed(imp: FxImporter, geo: Geometry, dx: SSAValue, k: int) -> SSAValue:
    """An input gradient [N*Do, C, H, W] of filter slice ``k`` at the padded input's
    depths it read: [N, C, Dp, H, W], zero elsewhere."""
    n, do, sd = geo.n, geo.out_depth, geo.stride[0]
    spread = _permute(imp, imp.reshape(dx, (n, do, geo.c, geo.h, geo.w)))  # [N,C,Do,H,W]
    if sd > 1:
        rows = imp.reshape(spread, (n, geo.c, do, 1, geo.h * geo.w))
        rows = _concat(imp, [rows, _zeros(imp, dx, [n, geo.c, do, sd - 1, geo.h * geo.w])], 3)
        spread = imp.reshape(rows, (n, geo.c, do * sd, geo.h, geo.w))
        spread = imp.insert(g.SliceOp(spread, dim=2, start=0, end=sd * (do - 1) + 1),
                            hint=False)
    return _pad_depth(imp, spread, geo.start(k), geo.padded - geo.end(k))
