"""Convolutions as matrix products (``im2col``), each written once.

A machine whose fast path is a matrix unit (MN-Core's MAU) should not compute a
convolution as one lane per output walking its window: the decompositions here
express ``graph.conv2d`` and ``graph.conv2d_backward`` with copies (slices,
concatenations, reshapes, permutes), which move whole runs of words, and
``graph.matmul``, which the matrix unit runs. The channels go first (``[C, N, H, W]``)
so that a window's columns are one ``[C*kh*kw, N*Ho*Wo]`` matrix:

* forward: ``y = W[O, C*kh*kw] @ columns(x)``, then the bias;
* weight gradient: ``dW = dy[O, N*Ho*Wo] @ columns(x)^T``;
* input gradient: ``dcols = W^T @ dy``, each window element's rows placed back where
  it read (spread by the stride, shifted by its offset) and summed (``col2im``). The
  full correlation of ``dy`` with the flipped filters (at stride 1: one column matrix
  of ``dy``, one product) was tried: 1.6% fewer cycles on the small CNN's step, but
  15% more on torchvision's ResNet-18 (products with K = O * kh * kw for few columns)
  and 34% more instructions;
* groups: the same, per group, concatenated along the channels.

``graph-decompose{convolutions=true}`` expands them; each is tested against the ops'
numpy references.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_decompose import Insert

CHANNELS_FIRST = [1, 0, 2, 3]  # [N, C, H, W] <-> [C, N, H, W]


def _ints(attr: DenseArrayBase) -> list[int]:
    return [int(v) for v in attr.get_values()]


def _reshape(e: Insert, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    return x if list(g.shape_of(x)) == list(shape) else e(g.ReshapeOp(x, shape))


def _slice(e: Insert, x: SSAValue, dim: int, start: int, end: int, step: int = 1) -> SSAValue:
    if (start, end, step) == (0, g.shape_of(x)[dim], 1):
        return x
    return e(g.SliceOp(x, dim=dim, start=start, end=end, step=step))


def _concat(e: Insert, parts: Sequence[SSAValue], dim: int) -> SSAValue:
    return parts[0] if len(parts) == 1 else e(g.ConcatOp(*parts, dim=dim))


def _zeros(e: Insert, shape: Sequence[int]) -> SSAValue:
    return e(g.ExpandOp(e.scalar(0.0), shape))


def _pad(e: Insert, x: SSAValue, dim: int, before: int, after: int) -> SSAValue:
    """``x`` with ``before`` and ``after`` zeros along ``dim``."""
    parts = []
    for amount in (before, after):
        shape = list(g.shape_of(x))
        shape[dim] = amount
        parts.append(_zeros(e, shape) if amount else None)
    return _concat(e, [p for p in (parts[0], x, parts[1]) if p is not None], dim)


def _spread(e: Insert, x: SSAValue, dim: int, stride: int) -> SSAValue:
    """``stride - 1`` zeros between the elements of ``x`` along ``dim``."""
    if stride == 1:
        return x
    shape = list(g.shape_of(x))
    size = shape[dim]
    unit = _reshape(e, x, [*shape[:dim + 1], 1, *shape[dim + 1:]])
    gaps = _zeros(e, [*shape[:dim + 1], stride - 1, *shape[dim + 1:]])
    merged = _reshape(e, _concat(e, [unit, gaps], dim + 1),
                      [*shape[:dim], size * stride, *shape[dim + 1:]])
    return _slice(e, merged, dim, 0, (size - 1) * stride + 1)


class Window:
    """The geometry of one convolution: sizes, stride, padding, dilation, groups."""

    def __init__(self, op: g.Conv2dOp | g.Conv2dBackwardOp, x: SSAValue, w: SSAValue) -> None:
        self.stride, self.pad, self.dil = (_ints(a) for a in (op.stride, op.padding,
                                                              op.dilation))
        self.groups = op.groups.value.data
        self.batch, self.channels, *self.size = g.shape_of(x)
        self.outs, self.per_group, *self.kernel = g.shape_of(w)
        self.out = [(self.size[i] + 2 * self.pad[i] - self.dil[i] * (self.kernel[i] - 1) - 1)
                    // self.stride[i] + 1 for i in range(2)]
        self.taps = math.prod(self.kernel)
        self.columns_shape = [self.per_group * self.taps, self.batch * math.prod(self.out)]

    def offsets(self) -> list[tuple[int, int]]:
        """Where each window element starts in the padded input, row-major."""
        return [(ky * self.dil[0], kx * self.dil[1])
                for ky in range(self.kernel[0]) for kx in range(self.kernel[1])]

    def columns(self, e: Insert, x: SSAValue, group: int) -> SSAValue:
        """``[C'*kh*kw, N*Ho*Wo]``: row ``c kh kw + ky kw + kx`` holds channel ``c``'s
        inputs under window element ``(ky, kx)`` of every output."""
        first = group * self.per_group
        xc = e(g.PermuteOp(_slice(e, x, 1, first, first + self.per_group),
                           perm=CHANNELS_FIRST))
        for dim in (2, 3):
            xc = _pad(e, xc, dim, self.pad[dim - 2], self.pad[dim - 2])
        taps = []
        for y, x_ in self.offsets():
            tap = _slice(e, xc, 2, y, y + self.stride[0] * (self.out[0] - 1) + 1,
                         self.stride[0])
            tap = _slice(e, tap, 3, x_, x_ + self.stride[1] * (self.out[1] - 1) + 1,
                         self.stride[1])
            taps.append(_reshape(e, tap, [self.per_group, 1, self.batch, *self.out]))
        return _reshape(e, _concat(e, taps, 1), self.columns_shape)

    def weights(self, e: Insert, w: SSAValue, group: int) -> SSAValue:
        """``[O', C'*kh*kw]``: the group's filters as rows."""
        per = self.outs // self.groups
        return _reshape(e, _slice(e, w, 0, group * per, (group + 1) * per),
                        [per, self.columns_shape[0]])

    def placed(self, e: Insert, dcols: SSAValue) -> SSAValue:
        """``col2im``: ``[C', N, H, W]``, each input the sum of the rows of ``dcols``
        (``[C'*kh*kw, N*Ho*Wo]``) that read it."""
        rows = _reshape(e, dcols, [self.per_group, self.taps, self.batch, *self.out])
        padded = [self.size[i] + 2 * self.pad[i] for i in range(2)]
        total = None
        for k, (y, x_) in enumerate(self.offsets()):
            part = _reshape(e, _slice(e, rows, 1, k, k + 1),
                            [self.per_group, self.batch, *self.out])
            for dim, start in ((2, y), (3, x_)):
                part = _spread(e, part, dim, self.stride[dim - 2])
                part = _pad(e, part, dim, start,
                            padded[dim - 2] - start - g.shape_of(part)[dim])
            total = part if total is None else e(g.AddOp(total, part))
        assert total is not None
        for dim in (2, 3):
            total = _slice(e, total, dim, self.pad[dim - 2], self.pad[dim - 2]
                           + self.size[dim - 2])
        return total


def _to_nchw(e: Insert, rows: SSAValue, window: Window) -> SSAValue:
    """``[C, N*Ho*Wo]`` as ``[N, C, Ho, Wo]``."""
    shaped = _reshape(e, rows, [g.shape_of(rows)[0], window.batch, *window.out])
    return e(g.PermuteOp(shaped, perm=CHANNELS_FIRST))


def conv2d(b: Builder, op: g.Conv2dOp) -> list[SSAValue]:
    """``W @ columns(x) + bias``, per group."""
    e = Insert(b, op.input)
    window = Window(op, op.input, op.weight)
    parts = [e(g.MatmulOp(window.weights(e, op.weight, group),
                          window.columns(e, op.input, group)))
             for group in range(window.groups)]
    out = _to_nchw(e, _concat(e, parts, 0), window)
    return [e(g.AddOp(out, _reshape(e, op.bias, [1, window.outs, 1, 1])))]


def conv2d_backward(b: Builder, op: g.Conv2dBackwardOp) -> list[SSAValue]:
    """``dx = col2im(W^T @ dy)``, ``dW = dy @ columns(x)^T``, ``db = sum(dy)``."""
    e = Insert(b, op.grad)
    window = Window(op, op.input, op.weight)
    per = window.outs // window.groups
    dy = _reshape(e, e(g.PermuteOp(op.grad, perm=CHANNELS_FIRST)),
                  [window.outs, window.columns_shape[1]])
    grad_inputs, grad_weights = [], []
    for group in range(window.groups):
        dy_group = _slice(e, dy, 0, group * per, (group + 1) * per)
        weights = window.weights(e, op.weight, group)
        columns = window.columns(e, op.input, group)
        grad_weights.append(e(g.MatmulOp(dy_group, e(g.PermuteOp(columns, perm=[1, 0])))))
        dcols = e(g.MatmulOp(e(g.PermuteOp(weights, perm=[1, 0])), dy_group))
        grad_inputs.append(window.placed(e, dcols))
    grad_input = e(g.PermuteOp(_concat(e, grad_inputs, 0), perm=CHANNELS_FIRST))
    grad_weight = _reshape(e, _concat(e, grad_weights, 0), g.shape_of(op.weight))
    grad_bias = e(g.SumOp(op.grad, dims=[0, 2, 3]))
    return [grad_input, grad_weight, grad_bias]
