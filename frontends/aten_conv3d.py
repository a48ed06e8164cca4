"""3-D convolutions as 2-D ones, so every device that runs ``graph.conv2d`` runs them.

Output depth ``od`` of a 3-D convolution sums, over the kernel's depth ``kd``, the 2-D
convolutions of input depth ``od * sd + kd * dd - pd`` by the filters' slice ``kd``.
So for each ``kd`` the input depths it reads (a strided slice of the depth-padded
input) are folded into the batch (``[N * Do, C, H, W]``) and convolved once in 2-D; the
``KD`` results add up. The backward op runs each 2-D convolution's backward: the weight
gradients stack along the depth, the input gradients go back to the depths they read
(spread by the stride, shifted by ``kd * dd``) and add up, the padding cropped.
A transposed 3-D convolution is the input gradient of the convolution it transposes,
as in 2-D (``aten_windows``). Narrow floats compute in f32 and round once, as torch's
CPU kernels do."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.frontends.aten_handlers import narrowed, widened
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
    """A 3-D convolution's depth arithmetic and its 2-D window properties, from its
    input's and filters' shapes."""

    def __init__(self, node: fx.Node, x: Sequence[int], w: Sequence[int], stride: Any,
                 padding: Any, dilation: Any, groups: int) -> None:
        self.stride, self.padding = _triples(node, stride, 1), _triples(node, padding, 0)
        self.dilation = _triples(node, dilation, 1)
        self.n, self.c, self.depth, self.h, self.w = x
        self.o, _, self.kd = w[:3]
        sd, pd, dd = self.stride[0], self.padding[0], self.dilation[0]
        self.padded = self.depth + 2 * pd
        self.out_depth = (self.padded - dd * (self.kd - 1) - 1) // sd + 1
        if self.out_depth <= 0:
            raise unsupported(node, "a 3-D convolution with no output depth")
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


def conv3d(imp: FxImporter, geo: Geometry, x: SSAValue, w: SSAValue) -> SSAValue:
    """The convolution of ``x`` by ``w`` (no bias): [N, O, Do, Ho, Wo]."""
    padded = _pad_depth(imp, x, geo.padding[0], geo.padding[0])
    zeros = _zeros(imp, x, [geo.o])
    total = None
    for k in range(geo.kd):
        y = imp.insert(g.Conv2dOp(geo.input_slice(imp, padded, k), geo.filters(imp, w, k),
                                  zeros, **geo.windows), hint=False)
        total = y if total is None else imp.insert(g.AddOp(total, y), hint=False)
    assert total is not None
    _, o, ho, wo = g.shape_of(total)
    return _permute(imp, imp.reshape(total, (geo.n, geo.out_depth, o, ho, wo)))


def conv3d_backward(imp: FxImporter, geo: Geometry, grad: SSAValue, x: SSAValue,
                    w: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The input and weight gradients of :func:`conv3d` at the output gradient ``grad``."""
    padded = _pad_depth(imp, x, geo.padding[0], geo.padding[0])
    g_shape = g.shape_of(grad)
    grad2d = imp.reshape(_permute(imp, grad), (g_shape[0] * g_shape[2], g_shape[1],
                                               *g_shape[3:]))
    inputs, weights = [], []
    for k in range(geo.kd):
        dx, dw, _ = imp.insert(g.Conv2dBackwardOp(
            grad2d, geo.input_slice(imp, padded, k), geo.filters(imp, w, k),
            **geo.windows), hint=False)
        inputs.append(_placed(imp, geo, dx, k))
        shape = g.shape_of(dw)
        weights.append(imp.reshape(dw, (*shape[:2], 1, *shape[2:])))
    total = inputs[0]
    for part in inputs[1:]:
        total = imp.insert(g.AddOp(total, part), hint=False)
    pd = geo.padding[0]
    grad_x = imp.insert(g.SliceOp(total, dim=2, start=pd, end=pd + geo.depth),
                        hint=False) if pd else total
    return grad_x, _concat(imp, weights, 2)


def _bias_gradient(imp: FxImporter, grad: SSAValue) -> SSAValue:
    """The sum of ``grad`` [N, C, ...] per channel, as one row sum of a [C, rest] matrix."""
    shape = g.shape_of(grad)
    perm = [1, 0, *range(2, len(shape))]
    rows = imp.reshape(imp.insert(g.PermuteOp(grad, perm=perm), hint=False),
                       (shape[1], math.prod(shape) // max(shape[1], 1)))
    return imp.insert(g.SumOp(rows, dims=[1], keepdim=False), hint=False)


def convolution_3d(imp: FxImporter, node: fx.Node) -> SSAValue:
    x, w, b, stride, padding, dilation, transposed, _out_pad, groups = node.args
    if transposed:
        return _transposed(imp, node)
    geo = Geometry(node, imp.meta(x).shape, imp.meta(w).shape, stride, padding, dilation,
                   groups)
    y = conv3d(imp, geo, widened(imp, imp.value(x)), widened(imp, imp.value(w)))
    return _biased(imp, y, b, imp.value(x))


def _biased(imp: FxImporter, y: SSAValue, b: Any, like: SSAValue) -> SSAValue:
    """``y`` plus the bias ``b`` (if any) per channel, in ``like``'s element type."""
    if b is not None:
        bias = imp.reshape(widened(imp, imp.value(b)), (1, g.shape_of(y)[1], 1, 1, 1))
        y = imp.insert(g.AddOp(y, bias), hint=False)
    return narrowed(imp, y, g.element_type_of(like))


def convolution_3d_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    grad, x, w, _bias, stride, padding, dilation, transposed, _op, groups, mask = node.args
    if transposed:
        return _transposed_backward(imp, node)
    geo = Geometry(node, imp.meta(x).shape, imp.meta(w).shape, stride, padding, dilation,
                   groups)
    xv, wv, gv = imp.value(x), imp.value(w), imp.value(grad)
    grad_x, grad_w = conv3d_backward(imp, geo, widened(imp, gv), widened(imp, xv),
                                     widened(imp, wv))
    return _gradients(imp, mask, (grad_x, xv), (grad_w, wv), gv)


def _gradients(imp: FxImporter, mask: Sequence[bool],
               grad_x: tuple[SSAValue | None, SSAValue],
               grad_w: tuple[SSAValue | None, SSAValue], grad: SSAValue) -> tuple[Any, ...]:
    """The gradients ``mask`` asks for, each (value, like) in ``like``'s element type; the
    bias gradient from the output gradient ``grad``."""
    return (*(narrowed(imp, v, g.element_type_of(like)) if m and v is not None else None
              for m, (v, like) in zip(mask[:2], (grad_x, grad_w), strict=True)),
            narrowed(imp, _bias_gradient(imp, widened(imp, grad)), g.element_type_of(grad))
            if mask[2] else None)


def _full(geo_args: tuple[Any, ...], x: Sequence[int], w: Sequence[int], node: fx.Node
          ) -> list[int]:
    """A transposed convolution's unpadded output extent per spatial dimension."""
    stride, dilation = _triples(node, geo_args[0], 1), _triples(node, geo_args[1], 1)
    return [(x[2 + i] - 1) * stride[i] + dilation[i] * (w[2 + i] - 1) + 1 for i in range(3)]


def cropped(imp: FxImporter, y: SSAValue, pads: Sequence[int], sizes: Sequence[int],
            full: Sequence[int]) -> SSAValue:
    """A transposed convolution's unpadded output ``y`` (``full`` per spatial dimension,
    from dimension 2 on) cropped by ``pads`` in front to ``sizes``, zeros past ``full``
    (the output padding) included."""
    for i, (start, size) in enumerate(zip(pads, sizes, strict=True)):
        end = min(full[i], start + size)
        if (start, end) != (0, full[i]):
            y = imp.insert(g.SliceOp(y, dim=2 + i, start=start, end=end), hint=False)
        if end - start < size:
            shape = [*g.shape_of(y)]
            shape[2 + i] = size - (end - start)
            y = _concat(imp, [y, _zeros(imp, y, shape)], 2 + i)
    return y


def uncropped(imp: FxImporter, grad: SSAValue, pads: Sequence[int], full: Sequence[int]
              ) -> SSAValue:
    """The gradient of :func:`cropped`'s result brought back to the unpadded extent
    ``full``: zeros where the crop cut, the output padding's entries dropped."""
    for i, front in enumerate(pads):
        size = g.shape_of(grad)[2 + i]
        shape = [*g.shape_of(grad)]
        shape[2 + i] = front
        grad = _concat(imp, [_zeros(imp, grad, shape), grad], 2 + i)
        if front + size > full[i]:
            grad = imp.insert(g.SliceOp(grad, dim=2 + i, start=0, end=full[i]), hint=False)
        elif front + size < full[i]:
            shape[2 + i] = full[i] - front - size
            grad = _concat(imp, [grad, _zeros(imp, grad, shape)], 2 + i)
    return grad


def _transposed(imp: FxImporter, node: fx.Node) -> SSAValue:
    """``conv_transpose3d(x, w)``: the input gradient of the convolution of an unpadded,
    output-shaped input by ``w`` at the gradient ``x``, then cropped by the padding (and
    extended by the output padding), as the 2-D one."""
    x, w, b, stride, padding, dilation, _transposed, _out_pad, groups = node.args
    xs, ws, out = imp.meta(x).shape, imp.meta(w).shape, imp.meta(node).shape
    full = _full((stride, dilation), xs, ws, node)
    given = imp.value(x)
    xv = widened(imp, given)
    like = _zeros(imp, xv, (out[0], out[1], *full))
    geo = Geometry(node, g.shape_of(like), ws, stride, 0, dilation, groups)
    y, _ = conv3d_backward(imp, geo, xv, like, widened(imp, imp.value(w)))
    y = cropped(imp, y, _triples(node, padding, 0), out[2:], full)
    return _biased(imp, y, b, given)


def _transposed_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    """A transposed convolution's gradients: for its input, the convolution of the
    (uncropped) output gradient by ``w``; for ``w``, that convolution's weight gradient
    at the transposed convolution's input; for the bias, a sum."""
    grad, x, w, _bias, stride, padding, dilation, _transposed, _op, groups, mask = node.args
    xs, ws = imp.meta(x).shape, imp.meta(w).shape
    full = _full((stride, dilation), xs, ws, node)
    given, xg, wg = imp.value(grad), imp.value(x), imp.value(w)
    gv, xv, wv = widened(imp, given), widened(imp, xg), widened(imp, wg)
    extended = uncropped(imp, gv, _triples(node, padding, 0), full)
    geo = Geometry(node, g.shape_of(extended), ws, stride, 0, dilation, groups)
    grad_x = conv3d(imp, geo, extended, wv) if mask[0] else None
    grad_w = conv3d_backward(imp, geo, xv, extended, wv)[1] if mask[1] else None
    return _gradients(imp, mask, (grad_x, xg), (grad_w, wg), given)


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
