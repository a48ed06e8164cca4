"""How the tracer computes mixed dtypes as eager does, where splitting an op into
graph ops would not: ``add``/``sub`` with an ``alpha`` and ``addcmul``/``addcdiv`` with
a ``value`` promote their operands to the common dtype before the product, and the
calls eager's kernels refuse (and its meta kernels let through) are refused with its
messages. Checked in ``tests/test_lazy_promotion.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from mncore_ir.frontends.lazy_ops import NARROW_FLOATS, check_cast
from mncore_ir.frontends.lazy_tensor import LazyTensor

aten = torch.ops.aten


def scaled_sum(dispatch: Callable[..., Any], func: torch._ops.OpOverload,
               args: tuple[Any, ...], alpha: Any) -> Any:
    """``a + alpha * b`` (``add``/``sub`` and their in-place forms) as eager computes it:
    both tensors first in their common dtype (``f32 + alpha * bf16`` widens the bf16
    operand rather than rounding the product to bf16), in f32 for f16 and bf16 with
    alpha rounded to their type and the sum rounded once (split into a product and a
    sum of their type, it rounded twice: one unit in the last place off in about 1
    element in 10). ``dispatch`` records."""
    common = result_type(args[0], args[1])
    compute = torch.float32 if common in NARROW_FLOATS else common
    if common in NARROW_FLOATS:
        alpha = float(torch.tensor(alpha, dtype=common))

    def widened(t: Any) -> Any:
        for dtype in (common, compute):
            if isinstance(t, torch.Tensor) and t.dtype != dtype:
                t = dispatch(aten._to_copy.default, (t,), {"dtype": dtype})
        return t

    scaled = dispatch(aten.mul.Tensor, (widened(args[1]), alpha), {})
    total = dispatch(aten.add.Tensor if func.overloadpacket in (aten.add, aten.add_)
                     else aten.sub.Tensor, (widened(args[0]), scaled), {})
    if total.dtype != common:
        total = dispatch(aten._to_copy.default, (total,), {"dtype": common})
    if func._schema.is_mutable:
        check_cast(common, args[0].dtype)  # ``int_tensor.add_(floats, alpha=2)``
        return dispatch(aten.copy_.default, (args[0], total), {})
    return total


def addc_operands(dispatch: Callable[..., Any], func: torch._ops.OpOverload,
                  args: tuple[Any, ...]) -> tuple[tuple[Any, ...], torch.dtype]:
    """``addcmul``/``addcdiv``'s arguments with the factors in the common dtype, as
    eager's kernel reads them (an f32 accumulator's bf16 factors are not multiplied in
    bf16), and that dtype; integer division refused, as eager refuses it."""
    x, t1, t2 = args[:3]
    if "addcdiv" in func.__name__ and not any(isinstance(t, torch.Tensor) and (
            t.is_floating_point() or t.is_complex()) for t in (t1, t2)):
        raise RuntimeError(_ADDCDIV_INTEGERS)
    common = elementwise_dtypes(*(t.meta() if isinstance(t, LazyTensor) else t
                                  for t in (x, t1, t2)),
                                type_promotion_kind=_DEFAULT_PROMOTION)[1]
    t1, t2 = (dispatch(aten._to_copy.default, (t,), {"dtype": common})
              if isinstance(t, torch.Tensor) and t.dtype != common else t for t in (t1, t2))
    return (x, t1, t2, *args[3:]), common


_DEFAULT_PROMOTION = ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
_ADDCDIV_INTEGERS = (
    "Integer division with addcdiv is no longer supported, and in a future  release "
    "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
    "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
    "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
    "float inputs. The future addcdiv behavior is just the latter implementation: "
    "(input + value * tensor1 / tensor2), for all dtypes.")


def result_type(a: Any, b: Any) -> torch.dtype:
    """``torch.result_type`` of two operands, lazy tensors read by their metadata (on
    a lazy tensor itself it is an op dispatched through Python, about 50 µs)."""
    return torch.result_type(a.meta() if isinstance(a, LazyTensor) else a,
                             b.meta() if isinstance(b, LazyTensor) else b)


def check_alpha(args: tuple[Any, ...], alpha: Any) -> torch.dtype:
    """The common dtype of ``add``/``sub``'s operands, refusing the alphas eager's
    kernels refuse (and its meta kernels let through)."""
    common = result_type(args[0], args[1])
    if isinstance(alpha, float) and not (common.is_floating_point or common.is_complex):
        raise RuntimeError("For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    if type(alpha) is bool and common != torch.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    return common
