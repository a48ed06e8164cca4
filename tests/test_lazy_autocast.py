"""``torch.autocast("mncore", dtype=torch.bfloat16)`` behaves as ``torch.autocast("cpu")``:
the CPU's policy (matmuls in bf16, losses in f32, promotions), kernels registered for
the device's autocast dispatch key (``frontends/lazy_autocast.py``). On ``cpu`` and
``interp`` the bf16 ops compile (the graph level holds bf16, rounding after each op as
torch's CPU kernels do); the other devices hold no bf16 and run those ops on the host."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_mncore

DEVICES = ["cpu", "interp", "task", "triton", "mncore"]
COMPILES_BF16 = {"cpu", "interp"}


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Linear(12, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.hidden = torch.nn.Linear(32, 32)
        self.out = torch.nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(torch.relu(self.embed(x)))
        return self.out(h + torch.tanh(self.hidden(h)))


def train(device: str | None, steps: int = 3) -> tuple[list[float], list[torch.Tensor],
                                                        list[torch.dtype]]:
    torch.manual_seed(0)
    model = Net()
    if device:
        model = model.mncore()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(16, 12), torch.randint(0, 5, (16,))
    losses, dtypes = [], []
    for _ in range(steps):
        opt.zero_grad()
        xs, ys = (x.mncore(), y.mncore()) if device else (x, y)
        with torch.autocast("mncore" if device else "cpu", dtype=torch.bfloat16):
            logits = model(xs)
            loss = F.cross_entropy(logits, ys)
        dtypes = [logits.dtype, loss.dtype]
        loss.backward()
        opt.step()
        if device:
            torch_mncore.sync()
        losses.append(float(loss))
    return losses, [p.detach().cpu() for p in model.parameters()], dtypes


@pytest.mark.parametrize("device", DEVICES)
def test_an_autocast_training_step_matches_eager(device: str) -> None:
    torch_mncore.init(device, implicit_sync="silent")
    try:
        before = dict(torch_mncore.counters())
        losses, params, dtypes = train(device)
        host = {k for k, v in torch_mncore.counters().items()
                if k.startswith("CpuFallback") and v != before.get(k, 0)}
    finally:
        torch_mncore.init("cpu")
    expected_losses, expected_params, expected_dtypes = train(None)
    assert dtypes == expected_dtypes == [torch.bfloat16, torch.float32]
    if device in COMPILES_BF16:
        assert host == set()
    else:
        assert any("mm" in k for k in host), host  # the bf16 matmuls ran on the host
    # bf16 has 8 bits of mantissa: a product rounded after the matmul and again after
    # the bias add (eager's fused addmm rounds once) differs by an ulp
    assert losses == pytest.approx(expected_losses, rel=2e-2)
    torch.testing.assert_close(params, expected_params, atol=1e-2, rtol=2e-2)


def test_autocast_casts_as_the_cpu_policy() -> None:
    """Lower precision for a matmul, f32 for a loss, promotion for cat; f64 untouched."""
    torch_mncore.init("cpu", implicit_sync="silent")
    try:
        a, b = torch.randn(3, 4).mncore(), torch.randn(4, 2).mncore()
        with torch.autocast("mncore", dtype=torch.bfloat16):
            product = a @ b
            loss = F.mse_loss(product, torch.zeros(3, 2).mncore())
            joined = torch.cat([product, torch.ones(1, 2).mncore()])
            wide = a.double() @ b.double()
        assert product.dtype == torch.bfloat16
        assert loss.dtype == torch.float32
        assert joined.dtype == torch.float32
        assert wide.dtype == torch.float64
        torch.testing.assert_close(product.cpu().float(), (a.cpu() @ b.cpu()),
                                   atol=2e-2, rtol=2e-2)
    finally:
        torch_mncore.init("cpu")
