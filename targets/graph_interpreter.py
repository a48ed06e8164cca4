"""Reference interpreter for the graph level: every op as a few lines of numpy.

It is the level's definition of meaning: later levels are checked against it, so it
favours plain, obviously-right numpy over speed. Values are ``numpy.ndarray``s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute, Operation

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import InterpretationError as InterpretationError
from mncore_ir.dialects.values import constant_value as constant_value
from mncore_ir.dialects.values import find_function as find_function
from mncore_ir.dialects.values import has_numpy_dtype
from mncore_ir.dialects.values import nbytes as nbytes
from mncore_ir.dialects.values import numpy_dtype as numpy_dtype


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


#: The most bytes one tensor or buffer, and all inputs together, may take by default:
#: the interpreters hold every value in host memory at once.
DEFAULT_MAX_BYTES = 1 << 30


def _shaped_types(op: Operation) -> list[Attribute]:
    """The static-shape tensors and memrefs ``op`` defines or names (results, entry block
    arguments, signatures, literals and type properties)."""
    types: list[Attribute] = [r.type for r in op.results]
    types += [a.type for region in op.regions for block in region.blocks for a in block.args]
    for prop in op.properties.values():
        if isinstance(prop, FunctionType):
            types += [*prop.inputs.data, *prop.outputs.data]
        elif isinstance(prop, DenseIntOrFPElementsAttr):
            types.append(prop.get_type())
        else:
            types.append(prop)
    return [typ for typ in types if isinstance(typ, TensorType | MemRefType)
            and has_numpy_dtype(typ.get_element_type()) and min(typ.get_shape(), default=0) >= 0]


def check_sizes(root: Operation, input_types: Sequence[Attribute],
                max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Refuse, before anything is allocated, to run ``root`` (a function, kernel or
    program) when one of its tensors or buffers, or all its inputs together, would take
    more than ``max_bytes``: numpy would fail deep inside (or allocate terabytes)."""
    for op in root.walk():
        for typ in _shaped_types(op):
            if nbytes(typ) > max_bytes:
                raise InterpretationError(
                    f"{op.name}: a value of type {typ} takes {nbytes(typ):,} bytes, more "
                    f"than the limit of {max_bytes:,} bytes for one tensor")
    total = sum(nbytes(typ) for typ in input_types)
    if total > max_bytes:
        raise InterpretationError(
            f"the inputs of @{root.sym_name.data} take {total:,} bytes, more than the "  # type: ignore[attr-defined]
            f"limit of {max_bytes:,} bytes for all inputs")


_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    return _erf(x).astype(x.dtype)


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_backward(grad: np.ndarray, x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(beta * (x + kappa * x**3))
        left = 0.5 * (1 + t)
        right = 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x)
        return grad * (left + right)
    cdf = 0.5 * (1 + erf(x / math.sqrt(2)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return grad * (cdf + x * pdf)


#: numpy semantics of the one-input elementwise ops.
UNARY: dict[type[g.GraphOp], Callable[[np.ndarray], np.ndarray]] = {
    g.NegOp: np.negative,
    g.AbsOp: np.abs,
    g.ReluOp: lambda x: np.maximum(x, np.zeros((), x.dtype)),
    g.ExpOp: np.exp,
    g.LogOp: np.log,
    g.SqrtOp: np.sqrt,
    g.RsqrtOp: lambda x: 1 / np.sqrt(x),
    g.ReciprocalOp: lambda x: 1 / x,
    g.TanhOp: np.tanh,
    g.SigmoidOp: lambda x: 1 / (1 + np.exp(-x)),
    g.ErfOp: erf,
    g.NotOp: np.logical_not,
}

#: numpy semantics of the two-input elementwise ops.
BINARY: dict[type[g.GraphOp], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    g.AddOp: np.add,
    g.SubOp: np.subtract,
    g.MulOp: np.multiply,
    g.DivOp: np.divide,
    g.PowOp: np.power,
    g.MaximumOp: np.maximum,
    g.MinimumOp: np.minimum,
    g.AndOp: np.logical_and,
    g.OrOp: np.logical_or,
    g.EqOp: np.equal,
    g.NeOp: np.not_equal,
    g.LtOp: np.less,
    g.LeOp: np.less_equal,
    g.GtOp: np.greater,
    g.GeOp: np.greater_equal,
}


def _cast(value: Any, result_type: Any) -> np.ndarray:
    """Keep the IR's element type: numpy promotes 0-d operands differently than torch."""
    return np.asarray(value).astype(numpy_dtype(result_type.element_type), copy=False)


def _windows(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
             padding: Sequence[int], dilation: Sequence[int], fill: float = 0) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) views of the padded input under each window."""
    (ph, pw), (dh, dw), (sh, sw) = padding, dilation, stride
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    span = ((kernel[0] - 1) * dh + 1, (kernel[1] - 1) * dw + 1)
    win = sliding_window_view(xp, span, axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw]


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], groups: int) -> np.ndarray:
    n, c = x.shape[:2]
    o, _, kh, kw = w.shape
    win = _windows(x, (kh, kw), stride, padding, dilation)
    oh, ow = win.shape[2:4]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.reshape(groups, o // groups, c // groups, kh, kw)
    out = np.einsum("ngcijkl,gockl->ngoij", win, wg, optimize=True).reshape(n, o, oh, ow)
    return out + b.reshape(1, o, 1, 1)


def conv2d_backward(grad: np.ndarray, x: np.ndarray, w: np.ndarray, stride: Sequence[int],
                    padding: Sequence[int], dilation: Sequence[int], groups: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def max_pool2d(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    n, c, _, w = x.shape
    win = _windows(x, kernel, stride, padding, dilation, fill=-np.inf)
    oh, ow = win.shape[2:4]
    flat = win.reshape(n, c, oh, ow, kernel[0] * kernel[1])  # not -1: n may be 0
    arg = flat.argmax(axis=-1)
    out = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    rows = np.arange(oh)[:, None] * stride[0] - padding[0] + (arg // kernel[1]) * dilation[0]
    cols = np.arange(ow)[None, :] * stride[1] - padding[1] + (arg % kernel[1]) * dilation[1]
    return out.astype(x.dtype), (rows * w + cols).astype(np.int64)


def max_pool2d_backward(grad: np.ndarray, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n * c, h * w), dtype=grad.dtype)
    rows = np.arange(n * c)[:, None]
    planes = (n * c, math.prod(indices.shape[2:]))  # not -1: n may be 0
    np.add.at(out, (rows, indices.reshape(planes)), grad.reshape(planes))
    return out.reshape(x.shape)


def _norm_axes(x: np.ndarray, k: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - k, x.ndim))


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, k: int, eps: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    axes = _norm_axes(x, k)
    if math.prod(x.shape[-k:]):
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    else:  # torch's running moments of no elements: the mean stays 0, the variance is 0/0
        stats = (*x.shape[:-k], *[1] * k)
        mean, var = np.zeros(stats, x.dtype), np.full(stats, np.nan, x.dtype)
    rstd = (1 / np.sqrt(var + eps)).astype(x.dtype)
    return (x - mean) * rstd * w + b, mean, rstd


def layer_norm_backward(grad: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    axes = _norm_axes(x, k)
    lead = tuple(range(x.ndim - k))
    count = math.prod(x.shape[-k:])
    xhat = (x - mean) * rstd
    gx = grad * w
    with np.errstate(divide="ignore", invalid="ignore"):  # count is 0 only if x is empty
        grad_input = rstd / count * (count * gx - gx.sum(axis=axes, keepdims=True)
                                     - xhat * (gx * xhat).sum(axis=axes, keepdims=True))
    return grad_input, (grad * xhat).sum(axis=lead), grad.sum(axis=lead)


def _row_max(x: np.ndarray, dim: int) -> np.ndarray:
    """The maximum along ``dim``, kept as a dimension; ``-inf`` (the identity of max) for
    an empty row, whose softmax is empty as in torch."""
    return x.max(axis=dim, keepdims=True, initial=-np.inf)


def softmax(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - _row_max(x, dim))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    shifted = x - _row_max(x, dim)
    with np.errstate(divide="ignore"):  # the sum is 0 only for an empty row
        return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def _index_window(index: np.ndarray, dim: int) -> tuple[slice, ...]:
    """torch.gather/scatter read only the leading ``index.shape[d]`` entries of each
    other dimension ``d``; numpy's ``*_along_axis`` want equal shapes there."""
    dim %= max(index.ndim, 1)
    return tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))


def _checked_dim(op: g.GatherOp | g.ScatterOp, x: np.ndarray, index: np.ndarray) -> int:
    """The dimension ``op`` indexes, after checking ``index`` against it as torch does
    (no negative indices; a 0-d input has one position)."""
    dim = op.props()["dim"] % max(x.ndim, 1)  # type: ignore[operator]
    check_indices(op, index, x.shape[dim] if x.ndim else 1, f"dimension {dim}")
    return dim


def _one(value: Any) -> PythonValues:
    return (value,)


@register_impls
class GraphFunctions(InterpreterFunctions):
    """numpy implementations of the graph dialect's ops."""

    @impl(g.ConstantOp)
    def run_constant(self, interp: Interpreter, op: g.ConstantOp, args: PythonValues):
        return _one(constant_value(op.value))

    @impl(g.ConvertOp)
    def run_convert(self, interp: Interpreter, op: g.ConvertOp, args: PythonValues):
        return _one(_cast(args[0], op.result.type))

    @impl(g.WhereOp)
    def run_where(self, interp: Interpreter, op: g.WhereOp, args: PythonValues):
        return _one(_cast(np.where(*args), op.result.type))

    @impl(g.GeluOp)
    def run_gelu(self, interp: Interpreter, op: g.GeluOp, args: PythonValues):
        return _one(_cast(gelu(args[0], op.approximate.data), op.result.type))

    @impl(g.GeluBackwardOp)
    def run_gelu_backward(self, interp: Interpreter, op: g.GeluBackwardOp, args: PythonValues):
        return _one(_cast(gelu_backward(*args, op.approximate.data), op.result.type))

    @impl(g.SumOp)
    def run_sum(self, interp: Interpreter, op: g.SumOp, args: PythonValues):
        p = op.props()
        return _one(_cast(np.sum(args[0], axis=p["dims"], keepdims=bool(p["keepdim"])),
                          op.result.type))

    @impl(g.MeanOp)
    def run_mean(self, interp: Interpreter, op: g.MeanOp, args: PythonValues):
        p = op.props()
        x = args[0]
        if x.ndim and not math.prod(x.shape[d] for d in p["dims"]):  # type: ignore[union-attr]
            # the mean of no elements is nan, as in torch (numpy warns)
            return _one(np.full(g.shape_of(op.result), np.nan,
                                numpy_dtype(op.result.type.element_type)))
        return _one(_cast(np.mean(args[0], axis=p["dims"], keepdims=bool(p["keepdim"])),
                          op.result.type))

    @impl(g.AmaxOp)
    def run_amax(self, interp: Interpreter, op: g.AmaxOp, args: PythonValues):
        p = op.props()
        return _one(_cast(np.max(args[0], axis=p["dims"], keepdims=bool(p["keepdim"])),
                          op.result.type))

    @impl(g.MatmulOp)
    def run_matmul(self, interp: Interpreter, op: g.MatmulOp, args: PythonValues):
        return _one(_cast(np.matmul(*args), op.result.type))

    @impl(g.ReshapeOp)
    def run_reshape(self, interp: Interpreter, op: g.ReshapeOp, args: PythonValues):
        return _one(np.reshape(args[0], g.shape_of(op.result)))

    @impl(g.ExpandOp)
    def run_expand(self, interp: Interpreter, op: g.ExpandOp, args: PythonValues):
        return _one(np.broadcast_to(args[0], g.shape_of(op.result)))

    @impl(g.PermuteOp)
    def run_permute(self, interp: Interpreter, op: g.PermuteOp, args: PythonValues):
        return _one(np.transpose(args[0], op.props()["perm"]))

    @impl(g.SliceOp)
    def run_slice(self, interp: Interpreter, op: g.SliceOp, args: PythonValues):
        p = op.props()
        index = [slice(None)] * args[0].ndim
        index[p["dim"]] = slice(p["start"], p["end"], p.get("step", 1))
        return _one(args[0][tuple(index)])

    @impl(g.ConcatOp)
    def run_concat(self, interp: Interpreter, op: g.ConcatOp, args: PythonValues):
        return _one(np.concatenate(args, axis=op.props()["dim"]))

    @impl(g.EmbeddingOp)
    def run_embedding(self, interp: Interpreter, op: g.EmbeddingOp, args: PythonValues):
        weight, indices = args
        check_indices(op, indices, weight.shape[0])
        return _one(weight[indices])

    @impl(g.IndexPutOp)
    def run_index_put(self, interp: Interpreter, op: g.IndexPutOp, args: PythonValues):
        x, indices, values = args
        check_indices(op, indices, x.shape[0], negative=True)
        out = np.array(x, copy=True)
        values = np.broadcast_to(values, (*indices.shape, *x.shape[1:]))
        if op.props().get("accumulate"):
            np.add.at(out, indices, values)
        else:
            out[indices] = values
        return _one(out)

    @impl(g.GatherOp)
    def run_gather(self, interp: Interpreter, op: g.GatherOp, args: PythonValues):
        x, index = args
        dim = _checked_dim(op, x, index)
        if not index.size:  # torch checks no extents then, so the window may not fit
            return _one(np.empty(index.shape, x.dtype))
        return _one(np.take_along_axis(x[_index_window(index, dim)], index, axis=dim))

    @impl(g.ScatterOp)
    def run_scatter(self, interp: Interpreter, op: g.ScatterOp, args: PythonValues):
        x, index, value = args
        dim = _checked_dim(op, x, index)
        out = np.array(x, copy=True)
        if not index.size:  # torch checks no extents then, so the window may not fit
            return _one(out)
        np.put_along_axis(out[_index_window(index, dim)], index, value, axis=dim)
        return _one(out)

    @impl(g.SoftmaxOp)
    def run_softmax(self, interp: Interpreter, op: g.SoftmaxOp, args: PythonValues):
        return _one(_cast(softmax(args[0], op.props()["dim"]), op.result.type))

    @impl(g.LogSoftmaxOp)
    def run_log_softmax(self, interp: Interpreter, op: g.LogSoftmaxOp, args: PythonValues):
        return _one(_cast(log_softmax(args[0], op.props()["dim"]), op.result.type))

    @impl(g.SoftmaxBackwardOp)
    def run_softmax_backward(self, interp: Interpreter, op: g.SoftmaxBackwardOp,
                             args: PythonValues):
        grad, out = args
        dim = op.props()["dim"]
        return _one(_cast(out * (grad - (grad * out).sum(axis=dim, keepdims=True)),
                          op.result.type))

    @impl(g.LogSoftmaxBackwardOp)
    def run_log_softmax_backward(self, interp: Interpreter, op: g.LogSoftmaxBackwardOp,
                                 args: PythonValues):
        grad, out = args
        dim = op.props()["dim"]
        return _one(_cast(grad - np.exp(out) * grad.sum(axis=dim, keepdims=True),
                          op.result.type))

    @impl(g.LayerNormOp)
    def run_layer_norm(self, interp: Interpreter, op: g.LayerNormOp, args: PythonValues):
        p = op.props()
        outs = layer_norm(*args, p["normalized_dims"], p["eps"])
        return tuple(_cast(v, r.type) for v, r in zip(outs, op.results, strict=True))

    @impl(g.LayerNormBackwardOp)
    def run_layer_norm_backward(self, interp: Interpreter, op: g.LayerNormBackwardOp,
                                args: PythonValues):
        outs = layer_norm_backward(*args, op.props()["normalized_dims"])
        return tuple(_cast(v, r.type) for v, r in zip(outs, op.results, strict=True))

    @impl(g.Conv2dOp)
    def run_conv2d(self, interp: Interpreter, op: g.Conv2dOp, args: PythonValues):
        p = op.props()
        out = conv2d(*args, p["stride"], p["padding"], p["dilation"], p.get("groups", 1))
        return _one(_cast(out, op.result.type))

    @impl(g.Conv2dBackwardOp)
    def run_conv2d_backward(self, interp: Interpreter, op: g.Conv2dBackwardOp,
                            args: PythonValues):
        p = op.props()
        outs = conv2d_backward(*args, p["stride"], p["padding"], p["dilation"],
                               p.get("groups", 1))
        return tuple(_cast(v, r.type) for v, r in zip(outs, op.results, strict=True))

    @impl(g.MaxPool2dOp)
    def run_max_pool2d(self, interp: Interpreter, op: g.MaxPool2dOp, args: PythonValues):
        p = op.props()
        return max_pool2d(args[0], p["kernel"], p["stride"], p["padding"], p["dilation"])

    @impl(g.MaxPool2dBackwardOp)
    def run_max_pool2d_backward(self, interp: Interpreter, op: g.MaxPool2dBackwardOp,
                                args: PythonValues):
        grad, x, indices = args
        check_indices(op, indices, x.shape[2] * x.shape[3], "an input plane (h * W + w)")
        return _one(max_pool2d_backward(grad, x, indices))

    @impl(g.FusedOp)
    def run_fused(self, interp: Interpreter, op: g.FusedOp, args: PythonValues):
        return interp.run_ssacfg_region(op.body, args, "graph.fused")

    @impl_terminator(g.YieldOp)
    def run_yield(self, interp: Interpreter, op: g.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()


def _unary_impl(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., PythonValues]:
    def run(self: GraphFunctions, interp: Interpreter, op: g.UnaryOp, args: PythonValues):
        return _one(_cast(fn(args[0]), op.result.type))

    return run


def _binary_impl(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
                 ) -> Callable[..., PythonValues]:
    def run(self: GraphFunctions, interp: Interpreter, op: g.BinaryOp, args: PythonValues):
        return _one(_cast(fn(*args), op.result.type))

    return run


for _op, _fn in UNARY.items():
    setattr(GraphFunctions, f"run_{_op.name[6:]}", impl(_op)(_unary_impl(_fn)))
for _op, _fn in BINARY.items():
    setattr(GraphFunctions, f"run_{_op.name[6:]}", impl(_op)(_binary_impl(_fn)))
register_impls(GraphFunctions)


def check_inputs(func: Any, inputs: Sequence[Any]) -> list[np.ndarray]:
    """The inputs as arrays of the argument types of ``func`` (a function or kernel:
    tensor or memref arguments), or a clear error."""
    types = func.function_type.inputs.data
    if len(inputs) != len(types):
        raise InterpretationError(f"@{func.sym_name.data} takes {len(types)} arguments, "
                                  f"got {len(inputs)}")
    out = []
    for i, (value, typ) in enumerate(zip(inputs, types, strict=True)):
        arr = np.asarray(value)
        expected = tuple(typ.get_shape())
        if arr.shape != expected:
            raise InterpretationError(f"argument {i} of @{func.sym_name.data} has shape "
                                      f"{arr.shape}, expected {expected} ({typ})")
        out.append(arr.astype(numpy_dtype(typ.element_type), copy=False))
    return out


def run_function(module: ModuleOp, inputs: Sequence[Any], name: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> list[np.ndarray]:
    """Run a graph-level function on numpy inputs; returns its outputs."""
    func = find_function(module, name)
    check_sizes(func, func.function_type.inputs.data, max_bytes)
    args = check_inputs(func, inputs)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    return [np.asarray(v) for v in interpreter.call_op(func, tuple(args))]
