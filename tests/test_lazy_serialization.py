"""``torch.save``/``torch.load`` and ``copy.deepcopy`` of device tensors and modules,
as with any torch device: a checkpoint holds the values (pickled as torch pickles a
backend without host storage), loads back onto the device, or onto the host with
``map_location="cpu"``, and loads with ``weights_only=True`` (torch's default)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch import nn

import torch_mncore
from mncore_ir.frontends.lazy_tensor import LazyTensor


@pytest.fixture(autouse=True)
def cpu_device() -> None:
    torch_mncore.init("cpu", implicit_sync="silent")


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def test_a_state_dict_saved_from_the_device_loads_back_on_it(tmp_path: Path) -> None:
    m = model().mncore()
    m(torch.randn(5, 4).mncore()).sum().backward()  # running stats move; pending values
    path = tmp_path / "ckpt.pt"
    torch.save(m.state_dict(), path)
    loaded = torch.load(path)  # weights_only=True
    assert all(type(v) is LazyTensor for v in loaded.values())
    fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(),
                          nn.Linear(8, 2)).mncore()
    fresh.load_state_dict(loaded)
    torch_mncore.sync()
    for (name, a), b in zip(m.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a.cpu(), b.cpu()), name


def test_map_location_cpu_loads_host_tensors_equal_to_eager(tmp_path: Path) -> None:
    eager = model()
    eager(torch.randn(5, 4))
    device = model().mncore()
    device(torch.randn(5, 4).mncore())
    torch.save({"model": device.state_dict(), "step": 3}, tmp_path / "c.pt")
    loaded = torch.load(tmp_path / "c.pt", map_location="cpu")
    assert loaded["step"] == 3
    for name, value in eager.state_dict().items():
        got = loaded["model"][name]
        assert type(got) is torch.Tensor and got.device.type == "cpu"
        assert torch.allclose(got, value, atol=1e-6), name


def test_a_whole_module_and_a_tensor_round_trip(tmp_path: Path) -> None:
    m = model().mncore()
    t = torch.arange(6.0).mncore().reshape(2, 3) * 2
    torch.save((m, t), tmp_path / "all.pt")
    m2, t2 = torch.load(tmp_path / "all.pt", weights_only=False)
    assert isinstance(m2[0].weight, nn.Parameter) and m2[0].weight.requires_grad
    assert m2[0].weight.device.type == "mncore"
    assert torch.equal(t2.cpu(), torch.arange(6.0).reshape(2, 3) * 2)


def test_deepcopy_of_a_device_module_trains_as_its_original() -> None:
    m = model().mncore()
    twin = copy.deepcopy(m)
    assert twin[0].weight is not m[0].weight
    x = torch.randn(5, 4).mncore()
    for net in (m, twin):
        net(x).sum().backward()
    torch_mncore.sync()
    assert torch.equal(m[0].weight.grad.cpu(), twin[0].weight.grad.cpu())


def test_map_location_to_the_device_is_a_clear_error(tmp_path: Path) -> None:
    """torch maps storages, which the device does not hold: the error says what works."""
    path = tmp_path / "host.pt"
    torch.save(model().state_dict(), path)
    for location in ("mncore", "mncore:0", torch.device("mncore"), {"cpu": "mncore"}):
        with pytest.raises(torch_mncore.LazyError, match="map_location='cpu'"):
            torch.load(path, map_location=location)
    loaded = model().mncore()
    loaded.load_state_dict(torch.load(path, map_location="cpu"))
    torch.testing.assert_close(loaded[0].weight.cpu(), model()[0].weight)
