"""The OpInfo entries (``name@dtype``) known to fail on the lazy ``cpu`` and ``interp``
devices, each with why. ``tests/test_opinfo.py`` fails when one of them passes."""

_SPARSE = ("sparse layouts cannot move to the device (a LazyError says so: it holds "
           "dense tensors)")
_BF16_NORM = ("torch's decomposition (run as the op is recorded) rounds to bf16 between "
              "its ops, eager's CPU kernel once: errors of several bf16 ulps")

EXPECTED_FAILURES: dict[str, str] = {
    "sparse.sampled_addmm@float32": _SPARSE,
    "sparse.mm.reduce@float32": _SPARSE,
    "sparse.mm.reduce@bfloat16": _SPARSE,
    "to_sparse@float32": _SPARSE,
    "to_sparse@bfloat16": _SPARSE,
    "native_layer_norm@bfloat16": "torch's decomposition returns f32 mean and rstd for bf16 "
                                  "input where the CPU kernel returns bf16 (as CUDA's does)",
    "nn.functional.batch_norm@bfloat16": _BF16_NORM,
    "_batch_norm_with_update@bfloat16": _BF16_NORM,
    "nn.functional.instance_norm@bfloat16": _BF16_NORM,
}
