"""Window ops the graph dialect has no op for, expanded into ones it has: average
pooling, adaptive average pooling and their backward ops as products with constant
pooling matrices, one per spatial dimension (the windows are separable, so ceil_mode,
padding counted or not and a divisor override are all just the matrix's entries); and
transposed convolutions as the input gradient of the convolution they transpose (the
two are one linear map), with their backward ops from the same pair. Checked against
eager on every device in ``tests/test_aten_expansions.py``."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.frontends.aten_conv3d import (
    convolution_3d,
    convolution_3d_backward,
    cropped,
    uncropped,
)
from mncore_ir.frontends.aten_expansions import (
    along,
    extreme,
    first_index,
    put,
    zeros_when_empty,
)
from mncore_ir.frontends.aten_handlers import (
    as_2d,
    convolution,
    convolution_backward,
    handles,
    narrowed,
    pairs,
    reduce,
    widened,
    windows_of,
)
from mncore_ir.frontends.fx_importer import TORCH_TO_ELEMENT, FxImporter, unsupported

aten = torch.ops.aten


def _separable(imp: FxImporter, x: SSAValue, matrices: Sequence[np.ndarray],
               transpose: bool = False) -> SSAValue:
    """One pooling matrix per trailing spatial dimension (transposed: the backward),
    in f32 for a narrow float, rounded once."""
    typ = g.element_type_of(x)
    x = widened(imp, x)
    first = len(g.shape_of(x)) - len(matrices)
    for i, matrix in enumerate(matrices):
        x = along(imp, x, first + i, matrix.T if transpose else matrix)
    return narrowed(imp, x, typ)


def average_matrix(size: int, out: int, kernel: int, stride: int, padding: int,
                   count_include_pad: bool) -> np.ndarray:
    """torch's average pooling along one dimension as an (out, size) matrix: window
    ``o`` starts at ``o * stride - padding``, ends at most ``padding`` past the input,
    and divides by its length including padding, or by its elements inside the input."""
    matrix = np.zeros((out, size))
    for o in range(out):
        start = o * stride - padding
        end = min(start + kernel, size + padding)
        lo, hi = max(start, 0), min(end, size)
        divisor = (end - start) if count_include_pad else (hi - lo)
        if hi > lo:
            matrix[o, lo:hi] = 1.0 / divisor
    return matrix


def adaptive_matrix(size: int, out: int) -> np.ndarray:
    """Adaptive average pooling along one dimension: window ``o`` is
    ``[floor(o * size / out), ceil((o + 1) * size / out))``."""
    matrix = np.zeros((out, size))
    for o in range(out):
        lo, hi = (o * size) // out, -(-((o + 1) * size) // out)
        matrix[o, lo:hi] = 1.0 / (hi - lo)
    return matrix


def _avg_pool_matrices(imp: FxImporter, node: fx.Node, x: fx.Node, args: Sequence[Any],
                       out_shape: Sequence[int]) -> list[np.ndarray]:
    spatial = len(args[0]) if isinstance(args[0], list | tuple) and len(args[0]) > 1 else None
    shape = imp.meta(x).shape
    rank = spatial or (3 if node.target in _AVG_3D else 2)
    kernel, stride, padding, _ceil, include, divisor = args
    kernel = _fill(kernel, rank, [1])
    stride = _fill(stride, rank, kernel)
    padding = _fill(padding, rank, [0])
    sizes, outs = shape[-rank:], out_shape[-rank:]
    matrices = [average_matrix(sizes[i], outs[i], kernel[i], stride[i], padding[i], include)
                for i in range(rank)]
    if divisor:
        ones = [np.where(m > 0, 1.0, 0.0) for m in matrices]
        ones[0] = ones[0] / divisor
        matrices = ones
    return matrices


def _fill(v: Any, rank: int, default: Sequence[int]) -> list[int]:
    v = list(v) if isinstance(v, list | tuple) else [v]
    v = v or list(default)
    return v * rank if len(v) == 1 else v


_AVG_3D = (aten.avg_pool3d.default, aten.avg_pool3d_backward.default)


@handles(aten.avg_pool2d.default, aten.avg_pool3d.default)
@zeros_when_empty
def _avg_pool(imp: FxImporter, node: fx.Node) -> SSAValue:
    args = [*node.args[1:], *[[], 0, False, True, None][len(node.args) - 2:]]
    matrices = _avg_pool_matrices(imp, node, node.args[0], args[:6], imp.meta(node).shape)
    return _separable(imp, imp.value(node.args[0]), matrices)


@handles(aten.avg_pool2d_backward.default, aten.avg_pool3d_backward.default)
@zeros_when_empty
def _avg_pool_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    grad, x = node.args[:2]
    matrices = _avg_pool_matrices(imp, node, x, node.args[2:8], imp.meta(grad).shape)
    return _separable(imp, imp.value(grad), matrices, transpose=True)


@handles(aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default,
         aten.adaptive_avg_pool1d.default)
@zeros_when_empty
def _adaptive_avg_pool(imp: FxImporter, node: fx.Node) -> SSAValue:
    x = node.args[0]
    outs = list(node.args[1])
    sizes = imp.meta(x).shape[-len(outs):]
    matrices = [adaptive_matrix(s, o) for s, o in zip(sizes, outs, strict=True)]
    return _separable(imp, imp.value(x), matrices)


@handles(aten._adaptive_avg_pool2d_backward.default,
         aten._adaptive_avg_pool3d_backward.default)
@zeros_when_empty
def _adaptive_avg_pool_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    grad, x = node.args[:2]
    outs = imp.meta(grad).shape
    rank = 3 if node.target == aten._adaptive_avg_pool3d_backward.default else 2
    sizes = imp.meta(x).shape[-rank:]
    matrices = [adaptive_matrix(s, o) for s, o in zip(sizes, outs[-rank:], strict=True)]
    return _separable(imp, imp.value(grad), matrices, transpose=True)


# ------------------------------------------------------------------ convolutions


def _full_extent(x2d: SSAValue, w2d: SSAValue, windows: dict[str, list[int]]) -> list[int]:
    """Unpadded, a transposed convolution covers (in - 1) s + d (k - 1) + 1 elements per
    spatial dimension; padding p crops p of them from the front, and output padding
    past their end holds only the bias."""
    return [(g.shape_of(x2d)[2 + i] - 1) * windows["stride"][i] + windows["dilation"][i]
            * (g.shape_of(w2d)[2 + i] - 1) + 1 for i in range(2)]


def _zeros(imp: FxImporter, typ: Any, shape: Sequence[int]) -> SSAValue:
    return imp.insert(g.ExpandOp(imp.constant(0, typ), tuple(shape)), hint=False)


@handles(aten.convolution.default)
def _convolution(imp: FxImporter, node: fx.Node) -> SSAValue:
    """A transposed convolution ``y = conv_transpose(x, w)`` is the input gradient of
    the convolution of a ``y``-shaped input by ``w`` at the gradient ``x``."""
    x, w, b, stride, padding, dilation, transposed, _out_pad, groups = node.args
    if len(imp.meta(x).shape) == 5:
        return convolution_3d(imp, node)
    if not transposed:
        return convolution(imp, node)
    out = imp.meta(node)
    windows = windows_of(node, stride, padding, dilation, len(out.shape))
    shape = out.shape if len(out.shape) == 4 else (*out.shape[:2], 1, *out.shape[2:])
    x2d, w2d = as_2d(imp, x), as_2d(imp, w)
    full = _full_extent(x2d, w2d, windows)
    typ = g.element_type_of(imp.value(x))
    like = imp.insert(g.ExpandOp(imp.constant(0, typ), (*shape[:2], *full)), hint=False)
    y = imp.insert(g.Conv2dBackwardOp(x2d, like, w2d, stride=windows["stride"],
                                      padding=[0, 0], dilation=windows["dilation"],
                                      groups=groups), hint=False)[0]
    y = cropped(imp, y, windows["padding"], shape[2:], full)
    if b is not None:
        bias = imp.reshape(imp.value(b), (1, out.shape[1], 1, 1))
        y = imp.insert(g.AddOp(y, bias), hint=False)
    return imp.reshape(y, out.shape)


@handles(aten.convolution_backward.default)
def _convolution_backward(imp: FxImporter, node: fx.Node) -> tuple[Any, ...]:
    """A transposed convolution's gradients: for its input, the convolution of the
    output gradient by ``w``; for ``w``, the weight gradient of that convolution with
    the roles of ``x`` and the output gradient exchanged; for the bias, a sum."""
    grad, x, w, _bias, stride, padding, dilation, transposed, _op, groups, mask = node.args
    if len(imp.meta(x).shape) == 5:
        return convolution_3d_backward(imp, node)
    if not transposed:
        return convolution_backward(imp, node)
    windows = windows_of(node, stride, padding, dilation, len(imp.meta(x).shape))
    x2d, w2d = as_2d(imp, x), as_2d(imp, w)
    typ = g.element_type_of(x2d)
    full = _full_extent(x2d, w2d, windows)
    # in the unpadded output's coordinates (see _convolution)
    grad2d = uncropped(imp, as_2d(imp, grad), windows["padding"], full)
    unpadded = {**windows, "padding": [0, 0]}
    grad_x = grad_w = grad_b = None
    if mask[0]:
        zeros = _zeros(imp, typ, [imp.meta(w).shape[0]])
        conv = imp.insert(g.Conv2dOp(grad2d, w2d, zeros, **unpadded, groups=groups),
                          hint=False)
        grad_x = imp.reshape(conv, imp.meta(x).shape)
    if mask[1]:
        weights = imp.insert(g.Conv2dBackwardOp(x2d, grad2d, w2d, **unpadded,
                                                groups=groups), hint=False)[1]
        grad_w = imp.reshape(weights, imp.meta(w).shape)
    if mask[2]:
        dims = [0, *range(2, len(imp.meta(grad).shape))]
        grad_b = reduce(imp, g.SumOp, imp.value(grad), dims, False)
    return grad_x, grad_w, grad_b


@handles(aten.max_pool2d_with_indices.default)
def _max_pool(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """graph.max_pool2d. ``ceil_mode``'s extra windows pool an input padded at its end
    with -inf (no window starts in that padding: torch's rule), and their flat indices
    ``h * (W + e) + w`` are brought back to ``h * W + w``, the row ``h`` counted by
    comparisons."""
    args = list(node.args) + [[], 0, 1, False][len(node.args) - 2:]
    x, kernel, stride, padding, dilation, ceil_mode = args[:6]
    kernel = pairs(kernel, [1])
    stride, padding, dilation = pairs(stride, kernel), pairs(padding, [0]), pairs(dilation, [1])
    v = _batched(imp, imp.value(x))
    shape = g.shape_of(v)
    extra = [0, 0]
    if ceil_mode:
        for i in range(2):
            n, k, s, p, d = shape[-2 + i], kernel[i], stride[i], padding[i], dilation[i]
            span = n + 2 * p - d * (k - 1) - 1
            out = -(-span // s) + 1
            if (out - 1) * s >= n + p:
                out -= 1
            extra[i] = max(0, (out - 1) * s + d * (k - 1) + 1 - (n + 2 * p))
    if any(extra) and not g.is_float(g.element_type_of(v)):
        raise unsupported(node, "max_pool2d with ceil_mode of integers")
    for i, e in enumerate(extra):
        if e:
            dim = len(g.shape_of(v)) - 2 + i
            pad = [*g.shape_of(v)]
            pad[dim] = e
            low = imp.insert(g.ExpandOp(imp.constant(-math.inf, g.element_type_of(v)),
                                        tuple(pad)), hint=False)
            v = imp.insert(g.ConcatOp(v, low, dim=dim), hint=False)
    values, indices = imp.insert(g.MaxPool2dOp(v, kernel=kernel, stride=stride,
                                               padding=padding, dilation=dilation))
    if extra[1]:
        height, width = g.shape_of(v)[-2:]
        rank = len(g.shape_of(indices))
        starts = imp.constant(np.arange(1, height).reshape((1,) * rank + (-1,)) * width,
                              g.i64, (1,) * rank + (height - 1,))
        column = imp.reshape(indices, (*g.shape_of(indices), 1))
        below = imp.insert(g.LeOp(starts, column), hint=False)
        rows = reduce(imp, g.SumOp, imp.insert(g.ConvertOp(below, g.i64), hint=False),
                      [rank], False, hint=False)
        shift = imp.insert(g.MulOp(rows, imp.constant(extra[1], g.i64)), hint=False)
        indices = imp.insert(g.SubOp(indices, shift), hint=False)
    out = imp.meta(node)[0].shape
    return imp.reshape(values, out), imp.reshape(indices, out)


def _batched(imp: FxImporter, x: SSAValue) -> SSAValue:
    """An unbatched (C, H, W) input as a batch of one."""
    shape = g.shape_of(x)
    return imp.reshape(x, (1, *shape)) if len(shape) == 3 else x


def _pool_window(args: Sequence[Any]) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, padding, dilation, (ceil_mode,)) of a max-pool node's arguments
    after its input: torch's defaults filled in, pairs spelled out."""
    kernel, stride, padding, dilation, ceil_mode = (
        list(args) + [[], 0, 1, False][len(args) - 1:])[:5]
    kernel = pairs(kernel, [1])
    return (tuple(kernel), tuple(pairs(stride, kernel)), tuple(pairs(padding, [0])),
            tuple(pairs(dilation, [1])), (int(bool(ceil_mode)),))


@handles(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    """graph.max_pool2d_backward, with the window where the indices are those of a
    max_pool2d_with_indices of the same window (then each index lies in its output's
    window, and a kernel may look only at the outputs whose windows hold a position);
    indices from anywhere else keep the op's whole-plane meaning, as in torch."""
    grad, x, *geometry = node.args[:7]
    indices = node.args[7]
    window = _pool_window(geometry)
    forward = indices.args[0] if isinstance(indices, fx.Node) and (
        indices.target is operator.getitem and indices.args[1] == 1) else None
    same = isinstance(forward, fx.Node) and (
        forward.target is aten.max_pool2d_with_indices.default
        and _pool_window(forward.args[1:]) == window)
    dx = imp.insert(g.MaxPool2dBackwardOp(*(_batched(imp, imp.value(v))
                                            for v in (grad, x, indices)),
                                          window=window[:4] if same else None), hint=False)
    return imp.reshape(dx, imp.meta(node).shape)


#: Window memberships times plane elements an adaptive max pool may compare.
ADAPTIVE_MAX = 1 << 24


def _membership(size: int, out: int) -> np.ndarray:
    """(out, size): whether input position p is in adaptive window i, [floor(i size /
    out), ceil((i + 1) size / out))."""
    starts = (np.arange(out) * size) // out
    ends = -((-(np.arange(out) + 1) * size) // out)
    p = np.arange(size)
    return (p[None, :] >= starts[:, None]) & (p[None, :] < ends[:, None])


@handles(aten.adaptive_max_pool2d.default)
def _adaptive_max_pool(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """Each output cell's maximum over its window (the plane masked to -inf outside it)
    and the flat index ``h * W + w`` of its first maximum in scan order, NaN counting
    as the maximum, as torch's kernel picks them."""
    x = widened(imp, imp.value(node.args[0]))
    typ = TORCH_TO_ELEMENT[imp.meta(node)[0].dtype]
    oh, ow = node.args[1]
    shape = g.shape_of(x)
    lead, (h, w) = shape[:-2], shape[-2:]
    if math.prod(shape) * oh * ow > ADAPTIVE_MAX:
        raise unsupported(node, f"adaptive max pool of {h}x{w} to {oh}x{ow} "
                                f"(more than {ADAPTIVE_MAX} comparisons)")
    inside = (_membership(h, oh)[:, None, :, None] & _membership(w, ow)[None, :, None, :])
    inside = inside.reshape(oh, ow, h * w)
    rank = len(lead) + 3
    mask = imp.constant(inside.reshape((1,) * len(lead) + inside.shape), g.i1,
                        (1,) * len(lead) + inside.shape)
    plane = imp.reshape(x, (*lead, 1, 1, h * w))
    low = imp.constant(-math.inf, g.element_type_of(x))
    masked = imp.insert(g.WhereOp(mask, plane, low), hint=False)
    best = extreme(imp, masked, [rank - 1], True, True)
    index = first_index(imp, masked, best, rank - 1, False)
    values = imp.reshape(best, (*lead, oh, ow))
    return narrowed(imp, values, typ), index


@handles(aten.adaptive_max_pool2d_backward.default)
def _adaptive_max_pool_backward(imp: FxImporter, node: fx.Node) -> SSAValue:
    """Each output's gradient added at its maximum's flat index of the plane."""
    grad, _, indices = node.args[:3]
    shape = tuple(imp.meta(node).shape)
    lead, plane = shape[:-2], shape[-2] * shape[-1]
    dtype = imp.meta(node).dtype
    rows = math.prod(lead)
    out = math.prod(imp.meta(indices).shape[-2:])
    base = imp.insert(g.ExpandOp(imp.constant(0, TORCH_TO_ELEMENT[dtype]), (rows, plane)),
                      hint=False)
    flat_index = imp.reshape(imp.value(indices), (rows, out))
    row_ids = imp.constant(np.arange(rows).reshape(rows, 1), g.i64, (rows, 1))
    row_ids = imp.insert(g.ExpandOp(row_ids, (rows, out)), hint=False)
    written = put(imp, base, [row_ids, flat_index],
                  imp.reshape(imp.as_type(grad, dtype), (rows, out)), True)
    return imp.reshape(written, shape)
