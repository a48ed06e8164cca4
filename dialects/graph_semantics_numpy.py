"""The numpy reference of every graph op: what the op means, as plain numpy.

Each function takes the op (for its properties) and its operands as arrays and returns
its result, or a tuple of results; the caller (the reference interpreter) casts every
result to the op's IR type, since numpy promotes 0-d operands differently than torch.
Every other level is checked against these, so they favour obviously right numpy over
speed. ``graph_semantics`` binds them to op classes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.ir import Attribute, Operation

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import InterpretationError
from mncore_ir.dialects.element_types import NARROW_FLOATS
from mncore_ir.dialects.values import as_element_type, constant_value, numpy_dtype


def check_indices(op: Operation, index: np.ndarray, size: int, axis: str = "dimension 0",
                  negative: bool = False) -> None:
    """Refuse an index outside ``[0, size)`` (``[-size, size)`` when ``negative``: the
    ops where torch counts negative indices from the end), as torch does; numpy would
    wrap a negative index silently and name no op for the others."""
    low = -size if negative else 0
    bad = index[(index < low) | (index >= size)]
    if bad.size == 0:
        return
    valid = (f"valid indices are {low} to {size - 1}" if size else
             "it is empty, so no index is valid")
    raise InterpretationError(f"{op.name}: index {bad.flat[0]} is out of range for {axis} "
                              f"of size {size} ({valid})", op)


# --------------------------------------------------------------------------- elementwise

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    """The exact error function (``math.erf``), in ``x``'s dtype."""
    return _erf(x).astype(x.dtype)


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def erfc(x: np.ndarray) -> np.ndarray:
    return _erfc(x).astype(x.dtype)


def _erfcx_scalar(v: float) -> float:
    """exp(v^2) erfc(v) in f64; past 25 its asymptotic series (erfc underflows)."""
    if v < 25:
        return math.exp(v * v) * math.erfc(v) if v > -26 else math.inf
    inv2 = 1 / (v * v)
    return (1 - inv2 / 2 + 3 * inv2 * inv2 / 4) / (v * math.sqrt(math.pi))


_erfcx = np.vectorize(_erfcx_scalar, otypes=[np.float64])


def erfcx(x: np.ndarray) -> np.ndarray:
    return _erfcx(x).astype(x.dtype)


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole: 0 or a negative integer
        return math.inf


_lgamma = np.vectorize(_lgamma_scalar, otypes=[np.float64])


def lgamma(x: np.ndarray) -> np.ndarray:
    """``math.lgamma``; +inf at the poles, as torch."""
    return _lgamma(x).astype(x.dtype)


#: Bernoulli numbers' terms of digamma's asymptotic series: B_2k / (2k), k = 1..5.
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132)


def digamma(x: np.ndarray) -> np.ndarray:
    """In f64: the recurrence up to 10, then the asymptotic series (error below 1e-13);
    below 0.5 the reflection ``ψ(1 - x) - π / tan(πx)``; at 0, -inf with the zero's
    sign flipped and NaN at the negative integers, as torch."""
    v = np.asarray(x, np.float64)
    reflect = v < 0.5
    z = np.where(reflect, 1 - v, v)
    acc = np.zeros_like(z)
    with np.errstate(all="ignore"):
        for _ in range(10):
            small = z < 10
            acc -= np.where(small, 1 / z, 0)
            z = np.where(small, z + 1, z)
        inv2 = 1 / (z * z)
        series = sum(c * inv2 ** (k + 1) for k, c in enumerate(_DIGAMMA_SERIES))
        out = acc + np.log(z) - 0.5 / z - series
        out = np.where(reflect, out - np.pi / np.tan(np.pi * v), out)
        out = np.where((v <= 0) & (v == np.floor(v)), np.nan, out)
        out = np.where(v == 0, np.where(np.signbit(v), np.inf, -np.inf), out)
        out = np.where(v == np.inf, np.inf, out)
    return out.astype(x.dtype)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def erfinv(x: np.ndarray) -> np.ndarray:
    """Newton's method on ``math.erf`` in f64 from a logarithmic first guess; ±inf at
    ±1 and NaN outside [-1, 1], as torch."""
    v = np.asarray(x, np.float64)
    inside = np.abs(v) < 1
    a = np.where(inside, v, 0.0)
    with np.errstate(all="ignore"):
        w = -np.log((1 - a) * (1 + a))
        y = np.sign(a) * np.sqrt(np.maximum(w - np.log(np.maximum(w, 1e-300)) / 2, 0.0))
        y = np.where(np.abs(a) < 0.5, a * np.sqrt(np.pi) / 2, y)
        for _ in range(60):
            y = y - (_erf64(y) - a) / (2 / np.sqrt(np.pi) * np.exp(-y * y))
        out = np.where(inside, y, np.where(np.abs(v) == 1, np.copysign(np.inf, v), np.nan))
    return out.astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def fmod(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's fmod; an integer divisor of 0 is refused as torch refuses it (numpy would
    give 0, and integer quotients built on it a garbage value)."""
    if np.issubdtype(b.dtype, np.integer) and not np.all(b):
        raise InterpretationError(f"{op.name}: integer division by zero (torch raises "
                                  "ZeroDivisionError)", op)
    return np.fmod(a, b)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


def rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


def reciprocal(x: np.ndarray) -> np.ndarray:
    return 1 / x


def gelu(op: g.GeluOp, x: np.ndarray) -> np.ndarray:
    if op.approximate.data == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_backward(op: g.GeluBackwardOp, grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    if op.approximate.data == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(beta * (x + kappa * x**3))
        left = 0.5 * (1 + t)
        right = 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x)
        return grad * (left + right)
    cdf = 0.5 * (1 + erf(x / math.sqrt(2)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return grad * (cdf + x * pdf)


def constant(op: g.ConstantOp) -> np.ndarray:
    return constant_value(op.value)


def convert(op: g.ConvertOp, x: np.ndarray) -> np.ndarray:
    return x  # the cast to the result type is the conversion


def where(op: g.WhereOp, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(cond, a, b)


# --------------------------------------------------------------------------- reductions


def _dims(op: g.ReduceOp, x: np.ndarray) -> tuple[int, ...]:
    """The reduced axes; none of a 0-d array (PyTorch lets it name dimension 0 or -1)."""
    return tuple(int(d) for d in op.dims.get_values()) if x.ndim else ()


def _keep(op: g.ReduceOp) -> bool:
    return bool(op.keepdim.value.data)


def sum_(op: g.SumOp, x: np.ndarray) -> np.ndarray:
    return np.sum(x, axis=_dims(op, x), keepdims=_keep(op))


def mean(op: g.MeanOp, x: np.ndarray) -> np.ndarray:
    if x.ndim and not math.prod(x.shape[d] for d in _dims(op, x)):
        # the mean of no elements is nan, as in torch (numpy warns)
        return np.full(g.shape_of(op.result), np.nan, numpy_dtype(g.element_type_of(op.result)))
    return np.mean(x, axis=_dims(op, x), keepdims=_keep(op))


def amax(op: g.AmaxOp, x: np.ndarray) -> np.ndarray:
    return np.max(x, axis=_dims(op, x), keepdims=_keep(op))


def matmul(op: g.MatmulOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


def matmul_permuted(op: g.MatmulPermutedOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, np.transpose(b, op.rhs_perm.get_values()))


# --------------------------------------------------------------------------- shapes


def reshape(op: g.ReshapeOp, x: np.ndarray) -> np.ndarray:
    return np.reshape(x, g.shape_of(op.result))


def expand(op: g.ExpandOp, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, g.shape_of(op.result))


def permute(op: g.PermuteOp, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, tuple(int(p) for p in op.perm.get_values()))


def slice_(op: g.SliceOp, x: np.ndarray) -> np.ndarray:
    index: list[slice] = [slice(None)] * x.ndim
    index[op.dim.value.data] = slice(op.start.value.data, op.end.value.data,
                                     op.step.value.data)
    return x[tuple(index)]


def concat(op: g.ConcatOp, *inputs: np.ndarray) -> np.ndarray:
    return np.concatenate(inputs, axis=op.dim.value.data)


# --------------------------------------------------------------------------- indexing


def embedding(op: g.EmbeddingOp, weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    check_indices(op, indices, weight.shape[0])
    return weight[indices]


def index_put(op: g.IndexPutOp, x: np.ndarray, indices: np.ndarray, values: np.ndarray
              ) -> np.ndarray:
    check_indices(op, indices, x.shape[0], negative=True)
    out = np.array(x, copy=True)
    values = np.broadcast_to(values, (*indices.shape, *x.shape[1:]))
    typ = g.element_type_of(op.result)
    if op.accumulate.value.data and typ in NARROW_FLOATS:
        _add_rounding_each(out, indices, values, typ)
    elif op.accumulate.value.data:
        np.add.at(out, indices, values)
    else:
        out[indices] = values
    return out


def _add_rounding_each(out: np.ndarray, indices: np.ndarray, values: np.ndarray,
                       typ: Attribute) -> None:
    """``np.add.at`` rounding to ``typ`` after each addition, in order, as torch's CPU
    kernel adds a narrow float's duplicates one at a time: each round adds one
    occurrence of every index."""
    rows = (indices.ravel() % max(out.shape[0], 1)).astype(np.int64)
    values = values.reshape(rows.size, *out.shape[1:])
    order = np.argsort(rows, kind="stable")
    ranked = rows[order]
    starts = np.searchsorted(ranked, ranked, side="left")
    occurrence = np.empty_like(rows)
    occurrence[order] = np.arange(rows.size) - starts
    for k in range(int(occurrence.max(initial=-1)) + 1):
        chosen = occurrence == k
        at = rows[chosen]
        out[at] = as_element_type(out[at] + values[chosen], typ)


def _index_window(index: np.ndarray, dim: int) -> tuple[slice, ...]:
    """torch.gather/scatter read only the leading ``index.shape[d]`` entries of each
    other dimension ``d``; numpy's ``*_along_axis`` want equal shapes there."""
    dim %= max(index.ndim, 1)
    return tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))


def _checked_dim(op: g.GatherOp | g.ScatterOp, x: np.ndarray, index: np.ndarray) -> int:
    """The dimension ``op`` indexes, after checking ``index`` against it as torch does
    (no negative indices; a 0-d input has one position)."""
    dim = op.dim.value.data % max(x.ndim, 1)
    check_indices(op, index, x.shape[dim] if x.ndim else 1, f"dimension {dim}")
    return dim


def gather(op: g.GatherOp, x: np.ndarray, index: np.ndarray) -> np.ndarray:
    dim = _checked_dim(op, x, index)
    if not index.size:  # torch checks no extents then, so the window may not fit
        return np.empty(index.shape, x.dtype)
    return np.take_along_axis(x[_index_window(index, dim)], index, axis=dim)


def scatter(op: g.ScatterOp, x: np.ndarray, index: np.ndarray, value: np.ndarray
            ) -> np.ndarray:
    dim = _checked_dim(op, x, index)
    out = np.array(x, copy=True)
    if not index.size:  # torch checks no extents then, so the window may not fit
        return out
    np.put_along_axis(out[_index_window(index, dim)], index, value, axis=dim)
    return out


# --------------------------------------------------------------------------- rows


def _row_max(x: np.ndarray, dim: int) -> np.ndarray:
    """The maximum along ``dim``, kept as a dimension; ``-inf`` (the identity of max) for
    an empty row, whose softmax is empty as in torch."""
    return x.max(axis=dim, keepdims=True, initial=-np.inf)


def softmax(op: g.SoftmaxOp, x: np.ndarray) -> np.ndarray:
    dim = op.dim.value.data
    e = np.exp(x - _row_max(x, dim))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(op: g.LogSoftmaxOp, x: np.ndarray) -> np.ndarray:
    dim = op.dim.value.data
    shifted = x - _row_max(x, dim)
    with np.errstate(divide="ignore"):  # the sum is 0 only for an empty row
        return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def softmax_backward(op: g.SoftmaxBackwardOp, grad: np.ndarray, out: np.ndarray
                     ) -> np.ndarray:
    return out * (grad - (grad * out).sum(axis=op.dim.value.data, keepdims=True))


def log_softmax_backward(op: g.LogSoftmaxBackwardOp, grad: np.ndarray, out: np.ndarray
                         ) -> np.ndarray:
    return grad - np.exp(out) * grad.sum(axis=op.dim.value.data, keepdims=True)


def _norm_axes(x: np.ndarray, k: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - k, x.ndim))


def layer_norm(op: g.LayerNormOp, x: np.ndarray, w: np.ndarray, b: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k, eps = op.normalized_dims.value.data, op.eps.value.data
    axes = _norm_axes(x, k)
    if math.prod(x.shape[-k:]):
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    else:  # torch's running moments of no elements: the mean stays 0, the variance is 0/0
        stats = (*x.shape[:-k], *[1] * k)
        mean, var = np.zeros(stats, x.dtype), np.full(stats, np.nan, x.dtype)
    rstd = (1 / np.sqrt(var + eps)).astype(x.dtype)
    return (x - mean) * rstd * w + b, mean, rstd


def layer_norm_backward(op: g.LayerNormBackwardOp, grad: np.ndarray, x: np.ndarray,
                        mean: np.ndarray, rstd: np.ndarray, w: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = op.normalized_dims.value.data
    axes = _norm_axes(x, k)
    lead = tuple(range(x.ndim - k))
    count = math.prod(x.shape[-k:])
    xhat = (x - mean) * rstd
    gx = grad * w
    with np.errstate(divide="ignore", invalid="ignore"):  # count is 0 only if x is empty
        grad_input = rstd / count * (count * gx - gx.sum(axis=axes, keepdims=True)
                                     - xhat * (gx * xhat).sum(axis=axes, keepdims=True))
    return grad_input, (grad * xhat).sum(axis=lead), grad.sum(axis=lead)


# --------------------------------------------------------------------------- windows


def window_props(op: g.WindowOp) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(stride, padding, dilation) of a windowed op."""
    p = op.properties
    return g.ints_prop(p, "stride"), g.ints_prop(p, "padding"), g.ints_prop(p, "dilation")


def _windows(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
             padding: Sequence[int], dilation: Sequence[int], fill: float = 0) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) views of the padded input under each window."""
    (ph, pw), (dh, dw), (sh, sw) = padding, dilation, stride
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    span = ((kernel[0] - 1) * dh + 1, (kernel[1] - 1) * dw + 1)
    win = sliding_window_view(xp, span, axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw]


def conv2d(op: g.Conv2dOp, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    stride, padding, dilation = window_props(op)
    groups = op.groups.value.data
    n, c = x.shape[:2]
    o, _, kh, kw = w.shape
    win = _windows(x, (kh, kw), stride, padding, dilation)
    oh, ow = win.shape[2:4]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.reshape(groups, o // groups, c // groups, kh, kw)
    out = np.einsum("ngcijkl,gockl->ngoij", win, wg, optimize=True).reshape(n, o, oh, ow)
    return out + b.reshape(1, o, 1, 1)


def conv2d_backward(op: g.Conv2dBackwardOp, grad: np.ndarray, x: np.ndarray, w: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    stride, padding, dilation = window_props(op)
    groups = op.groups.value.data
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (ph, pw), (dh, dw), (sh, sw) = padding, dilation, stride
    oh, ow = grad.shape[2:]
    gg = grad.reshape(n, groups, o // groups, oh, ow)
    wg = w.reshape(groups, o // groups, c // groups, kh, kw)
    win = _windows(x, (kh, kw), stride, padding, dilation).reshape(
        n, groups, c // groups, oh, ow, kh, kw)
    grad_w = np.einsum("ngcijkl,ngoij->gockl", win, gg, optimize=True).reshape(w.shape)
    gxp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=x.dtype)
    for k in range(kh):
        for m in range(kw):
            part = np.einsum("ngoij,goc->ngcij", gg, wg[:, :, :, k, m]).reshape(n, c, oh, ow)
            gxp[:, :, k * dh: k * dh + sh * (oh - 1) + 1: sh,
                m * dw: m * dw + sw * (ow - 1) + 1: sw] += part
    return gxp[:, :, ph: ph + h, pw: pw + wd], grad_w, grad.sum(axis=(0, 2, 3))


def max_pool2d(op: g.MaxPool2dOp, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    stride, padding, dilation = window_props(op)
    kernel = tuple(int(k) for k in op.kernel.get_values())
    n, c, _, w = x.shape
    win = _windows(x, kernel, stride, padding, dilation, fill=-np.inf)
    oh, ow = win.shape[2:4]
    flat = win.reshape(n, c, oh, ow, kernel[0] * kernel[1])  # not -1: n may be 0
    arg = flat.argmax(axis=-1)
    out = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    rows = np.arange(oh)[:, None] * stride[0] - padding[0] + (arg // kernel[1]) * dilation[0]
    cols = np.arange(ow)[None, :] * stride[1] - padding[1] + (arg % kernel[1]) * dilation[1]
    return out.astype(x.dtype), (rows * w + cols).astype(np.int64)


def max_pool2d_backward(op: g.MaxPool2dBackwardOp, grad: np.ndarray, x: np.ndarray,
                        indices: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    check_indices(op, indices, h * w, "an input plane (h * W + w)")
    out = np.zeros((n * c, h * w), dtype=grad.dtype)
    rows = np.arange(n * c)[:, None]
    planes = (n * c, math.prod(indices.shape[2:]))  # not -1: n may be 0
    np.add.at(out, (rows, indices.reshape(planes)), grad.reshape(planes))
    return out.reshape(x.shape)
