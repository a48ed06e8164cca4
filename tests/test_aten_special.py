"""torch.special's Bessel functions, ndtri, log_ndtr and erfcx through torch_mncore
against eager: one step computes all of them, compiled whole, on each device. The
expansions are published approximations (A&S 9.4, 9.8; Giles; A&S 26.2.23 with Newton
steps), so the bound is 1e-5 relative plus 1e-6 absolute, over both signs, the
switch points of the approximations, zero, the far tail and large arguments."""

from __future__ import annotations

import warnings

import pytest
import torch

import torch_mncore

X = torch.cat([torch.linspace(-20, 20, 161),
               torch.tensor([0.0, -0.0, 1e-6, 3.75, -3.75, 2.0, 3.0, 50.0, 80.0])])
P = torch.cat([torch.linspace(0.001, 0.999, 41),
               torch.tensor([0.0, 1.0, 1e-10, 1 - 1e-7, 0.5, 1e-30, 1e-38])])

FUNCTIONS = {
    "i0": torch.i0, "i0e": torch.special.i0e, "i1": torch.special.i1,
    "i1e": torch.special.i1e, "modified_bessel_i0": torch.special.modified_bessel_i0,
    "modified_bessel_i1": torch.special.modified_bessel_i1,
    "modified_bessel_k0": torch.special.modified_bessel_k0,
    "modified_bessel_k1": torch.special.modified_bessel_k1,
    "scaled_modified_bessel_k0": torch.special.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": torch.special.scaled_modified_bessel_k1,
    "bessel_j0": torch.special.bessel_j0, "bessel_j1": torch.special.bessel_j1,
    "bessel_y0": torch.special.bessel_y0, "bessel_y1": torch.special.bessel_y1,
    "spherical_bessel_j0": torch.special.spherical_bessel_j0,
    "log_ndtr": torch.special.log_ndtr, "erfcx": torch.special.erfcx,
}


CASES = [(name, fn, X) for name, fn in FUNCTIONS.items()] + [("ndtri", torch.special.ndtri,
                                                               P)]


@pytest.mark.parametrize("device", ["cpu", "interp", "task", "mncore"])
def test_special_functions_equal_eager(device: str) -> None:
    """Each function a step of its own (the tiny machine's LM holds one function's
    constants at a time), every op compiled."""
    torch_mncore.init(device, implicit_sync="error")
    got = []
    try:
        torch_mncore.reset_metrics()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _, fn, x in CASES:
                out = fn(x.mncore())
                torch_mncore.sync()
                got.append(out.cpu())
        counters = torch_mncore.counters()
    finally:
        torch_mncore.init("cpu")
    assert not [k for k in counters if k.startswith("CpuFallback")], counters
    for (name, fn, x), g in zip(CASES, got, strict=True):
        torch.testing.assert_close(g, fn(x), rtol=1e-5, atol=1e-6, equal_nan=True,
                                   msg=name)


@pytest.mark.parametrize("device", ["cpu", "interp", "mncore"])
def test_sign_of_nan_and_negative_zero_is_eagers(device: str) -> None:
    """Eager's sign is ``(0 < x) - (x < 0)``: 0 for NaN, +0.0 for -0.0 (the device gave
    NaN and -0.0, as numpy's sign does)."""
    torch_mncore.init(device, implicit_sync="silent")
    try:
        x = torch.tensor([float("nan"), -0.0, 0.0, -2.5, 3.0, float("inf"), -float("inf")])
        got = [torch.sign(x.mncore()), torch.sgn(x.mncore())]
        torch_mncore.sync()
        for ours in got:
            expected = torch.sign(x)
            assert torch.equal(ours.cpu(), expected)
            assert torch.equal(torch.signbit(ours.cpu()), torch.signbit(expected))
    finally:
        torch_mncore.init("cpu")
