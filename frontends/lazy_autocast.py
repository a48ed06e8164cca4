"""``torch.autocast("mncore", dtype=torch.bfloat16)``: mixed precision on the device, with
the CPU's policy, so a step under autocast computes what it computes under
``torch.autocast("cpu")``.

Torch has autocast kernels for its own backends only: a PrivateUse1 backend gets the
``AutocastPrivateUse1`` dispatch key, no fallthrough and no kernels. This module
registers both: a fallthrough for every op, and for the ops of each of the CPU's
policies (``aten/src/ATen/autocast_mode.cpp``, ``AutocastCPU``) a kernel that casts the
floating-point tensor arguments as that policy does and runs the op below autocast.
Policies: *lower precision* (matmuls, convolutions, attention) casts f32 arguments to
the autocast dtype; *fp32* (losses, reductions prone to overflow, linear algebra, FFT)
casts narrow floats to f32; *promote* casts every floating argument to the widest of
them. f64 is never cast (as on the CPU).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

_KEY = "AutocastPrivateUse1"
_NARROW = (torch.bfloat16, torch.float16)

#: The CPU's lower-precision policy: ``op`` or ``op.overload``.
LOWER_PRECISION = (
    "conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d", "conv3d.padding",
    "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "_addmm_activation", "addbmm",
    "linear", "_convolution.deprecated", "matmul", "conv_tbc", "mkldnn_rnn_layer",
    "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "prelu",
    "scaled_dot_product_attention", "_native_multi_head_attention",
)
#: The CPU's fp32 policy.
FP32 = (
    "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "prod.dim_int",
    "quantile", "quantile.scalar", "nanquantile", "nanquantile.scalar", "stft",
    "stft.center", "cdist", "grid_sampler_2d", "_grid_sampler_2d_cpu_fallback",
    "grid_sampler_3d", "trace", "view_as_complex", "cholesky", "cholesky_inverse",
    "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
    "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d",
    "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
    "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss",
    "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss",
    "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "ctc_loss.IntList", "ctc_loss.Tensor", "kl_div", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2",
    "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn",
    "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond", "linalg_cond.p_str",
    "linalg_matrix_rank", "linalg_matrix_rank.tol_tensor",
    "linalg_matrix_rank.atol_rtol_tensor", "linalg_matrix_rank.atol_rtol_float",
    "linalg_solve", "linalg_cholesky", "linalg_svdvals", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv",
    "linalg_tensorsolve", "fake_quantize_per_tensor_affine", "geqrf", "_lu_with_info", "qr",
    "svd", "triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d",
    "adaptive_max_pool3d", "multilabel_margin_loss_forward", "linalg_qr",
    "linalg_cholesky_ex", "linalg_svd", "linalg_eig", "linalg_eigh", "linalg_lstsq",
    "linalg_inv_ex",
)
#: The CPU's promote policy.
PROMOTE = ("stack", "cat", "index_copy")

_LIBRARIES: list[torch.library.Library] = []


def _floats(args: Any) -> list[torch.Tensor]:
    return [a for a in pytree.tree_leaves(args)
            if isinstance(a, torch.Tensor) and a.is_floating_point()]


def _cast_to(dtype: torch.dtype, eligible: Callable[[torch.Tensor], bool]
             ) -> Callable[[Any], Any]:
    def cast(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and eligible(x):
            return x.to(dtype)
        return x

    return cast


def _lower_precision(args: Any) -> Any:
    dtype = torch.get_autocast_dtype("mncore")
    return pytree.tree_map(_cast_to(dtype, lambda x: x.dtype != torch.float64), args)


def _fp32(args: Any) -> Any:
    return pytree.tree_map(_cast_to(torch.float32, lambda x: x.dtype in _NARROW), args)


def _promote(args: Any) -> Any:
    floats = _floats(args)
    if not floats:
        return args
    widest = floats[0].dtype
    for x in floats[1:]:
        widest = torch.promote_types(widest, x.dtype)
    return pytree.tree_map(_cast_to(widest, lambda x: x.dtype != widest), args)


def _kernel(op: torch._ops.OpOverload, policy: Callable[[Any], Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        excluded = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            args, kwargs = policy((args, kwargs))
            return op(*args, **kwargs)

    return run


def _overload(name: str) -> torch._ops.OpOverload | None:
    """``aten.<name>`` (``op`` is its default overload); None where this torch has none."""
    packet_name, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, packet_name, None)
    if packet is None:
        return None
    return getattr(packet, overload or "default", None)


def register(device_module: Any) -> None:
    """Make ``torch.autocast("mncore")`` work: the device module's supported dtypes,
    the fallthrough and the policies' kernels (once per process)."""
    device_module.get_amp_supported_dtype = lambda: [torch.bfloat16, torch.float16]
    if _LIBRARIES:
        return
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, _KEY)
    kernels = torch.library.Library("aten", "IMPL")
    for names, policy in ((LOWER_PRECISION, _lower_precision), (FP32, _fp32),
                          (PROMOTE, _promote)):
        for name in names:
            op = _overload(name)
            if op is not None:
                kernels.impl(op._schema.name.split("::")[1] + (
                    f".{op._overloadname}" if op._overloadname != "default" else ""),
                    _kernel(op, policy), _KEY)
    _LIBRARIES.extend([fallthrough, kernels])
