"""In-place view ops (``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``) change the
lazy tensor's own shape and strides, as eager's do. They used to write the view's value
into the storage and keep the old shape: ``torch.stft`` of a 1-d signal (its composite
kernel ends in ``squeeze_(0)``) came back with an extra dimension, without an error."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torch_mncore


@pytest.fixture(autouse=True)
def cpu_device() -> None:
    torch_mncore.init("cpu", implicit_sync="silent")

CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "squeeze_": lambda t: t.squeeze_(0),
    "unsqueeze_": lambda t: t.unsqueeze_(1),
    "transpose_": lambda t: t.transpose_(0, 2),
    "t_ after squeeze_": lambda t: t.squeeze_(0).t_().mul_(2),
}


@pytest.mark.parametrize("name", CASES)
def test_inplace_view_ops_change_the_tensor_itself(name: str) -> None:
    x = torch.randn(1, 3, 4)
    expected, device = x.clone(), x.clone().mncore()
    assert CASES[name](device) is device
    CASES[name](expected)
    torch_mncore.sync()
    assert (device.shape, device.stride()) == (expected.shape, expected.stride())
    assert torch.equal(device.cpu(), expected)


def test_stft_of_a_1d_signal_has_eagers_shape() -> None:
    signal = torch.randn(100)
    expected = torch.stft(signal, 10, return_complex=False)
    got = torch.stft(signal.mncore(), 10, return_complex=False)
    torch_mncore.sync()
    assert got.shape == expected.shape == (6, 51, 2)
    assert torch.allclose(got.cpu(), expected, atol=1e-4)
