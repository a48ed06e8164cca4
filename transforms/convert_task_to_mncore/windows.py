"""Lane kernels of convert-task-to-mncore for the 2-D window ops: conv2d, max-pool and
their backward ops (NCHW, OIHW weights, groups).

Each output element is a lane (see ``lanes``); a lane walks its window
(or, backwards, the windows that contain it) with loads whose addresses differ per
lane; max-pool's backward matches indices, one-hot, as gather does. A position outside
the input reads a constant word instead (zero for sums, -inf for the max), so the
instruction stream stays the same for every lane (SIMD).
"""

from __future__ import annotations

import math

import numpy as np

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.transforms.convert_task_to_mncore.common import Slot, shape
from mncore_ir.transforms.convert_task_to_mncore.emitter import Emitter
from mncore_ir.transforms.convert_task_to_mncore.lanes import lanes_over, sum_trees


def geometry(op: g.WindowOp) -> tuple[list[int], list[int], list[int], int]:
    """stride, padding, dilation and groups of a window op."""
    stride, padding, dilation = (list(a.get_values())
                                 for a in (op.stride, op.padding, op.dilation))
    groups = op.groups.value.data if isinstance(op, g.Conv2dOp | g.Conv2dBackwardOp) else 1
    return stride, padding, dilation, groups


def forward(out: np.ndarray, k: int, stride: int, pad: int, dil: int, size: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Input positions of window element ``k`` of outputs ``out``, and which are inside."""
    at = out * stride - pad + k * dil
    return np.clip(at, 0, size - 1), (at >= 0) & (at < size)


def backward(at: np.ndarray, k: int, stride: int, pad: int, dil: int, size: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Outputs whose window element ``k`` is input position ``at``, and which exist."""
    top = at + pad - k * dil
    out = top // stride
    return np.clip(out, 0, size - 1), (top % stride == 0) & (out >= 0) & (out < size)


def conv2d(b: Emitter, task: t.TaskOp, op: g.Conv2dOp, c: list[np.ndarray]) -> list[Slot]:
    """``y[n, o, i, j] = bias[o] + sum x[n, g C' + ci, ...] w[o, ci, ky, kx]``."""
    (x, _), (w, _), (bias, _) = task.reads()
    stride, pad, dil, groups = geometry(op)
    _, _, height, width = shape(x)
    outs, per_group, kh, kw = shape(w)
    n, o, i, j = c
    zero = b.pooled([0.0])
    acc = b.fresh()
    b.alu("fpass", [b.load(b.address(bias, [o]))], acc)
    first = (o // (outs // groups)) * per_group
    for ci in range(per_group):
        for ky in range(kh):
            rows, inside_y = forward(i, ky, stride[0], pad[0], dil[0], height)
            for kx in range(kw):
                cols, inside_x = forward(j, kx, stride[1], pad[1], dil[1], width)
                here = b.address(x, [n, first + ci, rows, cols])
                value = b.load(np.where(inside_y & inside_x, here, zero))
                weight = b.load(b.address(w, [o, np.full_like(o, ci), np.full_like(o, ky),
                                              np.full_like(o, kx)]))
                b.alu("fmadd", [value, weight, acc], acc)
    return [acc]


def conv2d_grad_input(b: Emitter, task: t.TaskOp, op: g.Conv2dBackwardOp,
                      c: list[np.ndarray]) -> list[Slot]:
    """``dx[n, ch, h, v] = sum dy[n, o, i, j] w[o, ch - g C', ky, kx]`` over the outputs
    ``(i, j)`` whose window element ``(ky, kx)`` is ``(h, v)``."""
    (grad, _), _, (w, _) = task.reads()
    stride, pad, dil, groups = geometry(op)
    outs, per_group, kh, kw = shape(w)
    _, _, out_h, out_w = shape(grad)
    n, ch, h, v = c
    zero = b.pooled([0.0])
    acc = b.fresh()
    b.alu("fzero", [], acc)
    group, within = ch // per_group, ch % per_group
    per_out = outs // groups
    for oi in range(per_out):
        o = group * per_out + oi
        for ky in range(kh):
            i, has_i = backward(h, ky, stride[0], pad[0], dil[0], out_h)
            for kx in range(kw):
                j, has_j = backward(v, kx, stride[1], pad[1], dil[1], out_w)
                dy = b.load(np.where(has_i & has_j, b.address(grad, [n, o, i, j]), zero))
                weight = b.load(b.address(w, [o, within, np.full_like(o, ky),
                                              np.full_like(o, kx)]))
                b.alu("fmadd", [dy, weight, acc], acc)
    return [acc]


def conv2d_grad_weight(b: Emitter, task: t.TaskOp, op: g.Conv2dBackwardOp, c: list[np.ndarray]
                       ) -> list[Slot]:
    """``dw[o, ci, ky, kx] = sum dy[n, o, i, j] x[n, g C' + ci, ...]`` over ``n, i, j``."""
    (grad, _), (x, _), (w, _) = task.reads()
    stride, pad, dil, groups = geometry(op)
    batch, _, height, width = shape(x)
    outs, per_group, _, _ = shape(w)
    _, _, out_h, out_w = shape(grad)
    o, ci, ky, kx = c
    zero = b.pooled([0.0])
    acc = b.fresh()
    b.alu("fzero", [], acc)
    channel = (o // (outs // groups)) * per_group + ci
    for n in range(batch):
        for i in range(out_h):
            rows, inside_y = forward(np.full_like(ky, i), ky, stride[0], pad[0], dil[0], height)
            for j in range(out_w):
                cols, inside_x = forward(np.full_like(kx, j), kx, stride[1], pad[1], dil[1],
                                         width)
                dy = b.load(b.address(grad, [np.full_like(o, n), o, np.full_like(o, i),
                                             np.full_like(o, j)]))
                here = b.address(x, [np.full_like(o, n), channel, rows, cols])
                value = b.load(np.where(inside_y & inside_x, here, zero))
                b.alu("fmadd", [dy, value, acc], acc)
    return [acc]


def lower_conv2d_backward(b: Emitter, task: t.TaskOp, op: g.Conv2dBackwardOp) -> None:
    """Three lane passes: the input's and the weight's gradients, and the bias's as
    sums of the output gradient over ``n, i, j`` (through the tree)."""
    (grad, _), _, _ = task.reads()
    (dx, dx_tile), (dw, dw_tile), (db, _) = task.writes()
    lanes_over(b, dx_tile, [(dx, dx_tile)], lambda c: conv2d_grad_input(b, task, op, c))
    lanes_over(b, dw_tile, [(dw, dw_tile)], lambda c: conv2d_grad_weight(b, task, op, c))
    batch, outs, out_h, out_w = shape(grad)
    n, i, j = (a.reshape(-1) for a in np.indices((batch, out_h, out_w)))
    sum_trees(b, np.stack([b.address(grad, [n, np.full_like(n, o), i, j])
                           for o in range(outs)]), b.dram[db] + np.arange(outs), 1.0)


def max_pool2d(b: Emitter, task: t.TaskOp, op: g.MaxPool2dOp, c: list[np.ndarray]
               ) -> list[Slot]:
    """The window's maximum and the flat ``h W + v`` index of its first occurrence."""
    ((x, _),) = task.reads()
    stride, pad, dil, _ = geometry(op)
    kh, kw = (int(v) for v in op.kernel.get_values())
    _, _, height, width = shape(x)
    n, ch, i, j = c
    lowest = b.pooled([-math.inf])
    best, index, better = b.fresh(), b.fresh(), b.fresh()
    b.alu("fpass", [b.constant(-math.inf)], best)
    b.alu("fzero", [], index)
    origin = b.keep(b.load(b.table(((i * stride[0] - pad[0]) * width
                                    + j * stride[1] - pad[1]).astype(np.float32))))
    for ky in range(kh):
        rows, inside_y = forward(i, ky, stride[0], pad[0], dil[0], height)
        for kx in range(kw):
            cols, inside_x = forward(j, kx, stride[1], pad[1], dil[1], width)
            value = b.load(np.where(inside_y & inside_x, b.address(x, [n, ch, rows, cols]),
                                    lowest))
            b.alu("fcmplt", [best, value], better)
            b.alu("fpass", [value], best, mask=better)
            offset = b.constant(float(ky * dil[0] * width + kx * dil[1]))
            b.alu("fadd", [origin, offset], index, mask=better)
    return [best, index]


def max_pool2d_backward(b: Emitter, task: t.TaskOp, op: g.MaxPool2dBackwardOp,
                        c: list[np.ndarray]) -> list[Slot]:
    """``dx[n, ch, h, v]``: the sum of the gradients of the outputs whose maximum index
    is ``h W + v``. With the op's window, each lane may look only at the outputs whose
    windows can hold its position (``((k - 1) d) // s + 1`` per axis: the index decides
    among them); else, or where that saves too little, at every output of its plane."""
    (grad, _), (x, _), (indices, _) = task.reads()
    _, _, _, width = shape(x)
    _, _, out_h, out_w = shape(grad)
    n, ch, h, v = c
    mine = b.keep(b.load(b.table((h * width + v).astype(np.float32))))
    acc, match = b.fresh(), b.fresh()
    b.alu("fzero", [], acc)
    nowhere = b.pooled([-1.0])  # the index of no position; its gradient is never added
    for i, j in _candidates(op, h, v, out_h, out_w):
        valid = (i >= 0) & (i < out_h) & (j >= 0) & (j < out_w)
        at = [n, ch, np.clip(i, 0, out_h - 1), np.clip(j, 0, out_w - 1)]
        index = b.load(np.where(valid, b.address(indices, at), nowhere))
        dy = b.load(np.where(valid, b.address(grad, at), nowhere))
        b.alu("fcmpeq", [index, mine], match)
        b.alu("fadd", [acc, dy], acc, mask=match)
    return [acc]


def _candidates(op: g.MaxPool2dBackwardOp, h: np.ndarray, v: np.ndarray, out_h: int,
                out_w: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per lane, the output rows and columns that may have chosen its position (some
    out of range): those whose windows reach it where they are under a quarter of the
    plane's outputs (each of their loads gathers words one lane apart, many DMAs; the
    plane's are one word per plane), else every output."""
    window = op.window()
    plane = [(np.full_like(h, i), np.full_like(v, j)) for i in range(out_h)
             for j in range(out_w)]
    if window is None:
        return plane
    kernel, stride, padding, dilation = window
    axes = []
    for pos, k, s, p, d in zip((h, v), kernel, stride, padding, dilation, strict=True):
        last = (pos + p) // s  # the last window starting at or before the position
        axes.append([last - a for a in range((k - 1) * d // s + 1)])
    if 4 * len(axes[0]) * len(axes[1]) >= out_h * out_w:
        return plane
    return [(i, j) for i in axes[0] for j in axes[1]]
