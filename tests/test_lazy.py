"""torch_mncore: training loops against eager PyTorch, views and in-place ops, the
implicit-sync policies, recompiles, buffer lifetimes and execution errors."""

from __future__ import annotations

import copy
import gc
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore
from mncore_ir.frontends.lazy_tensor import DeviceData
from mncore_ir.testing.model_zoo import CNN, GPT

Batches = list[tuple[torch.Tensor, torch.Tensor]]


@pytest.fixture(params=["cpu", "interp"])
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    torch_mncore.init(request.param, implicit_sync="error")
    yield request.param
    torch_mncore.wait_device_ops()


def train(model: nn.Module, make_optimizer: Callable[[Any], torch.optim.Optimizer],
          batches: Batches, loss_fn: Callable[..., torch.Tensor], lazy: bool
          ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The seed's loop, written as a user would: losses and final state on the host."""
    if lazy:
        model = model.mncore()
    optimizer = make_optimizer(model.parameters())
    losses = []
    for x, y in batches:
        if lazy:
            x, y = x.mncore(), y.mncore()
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if lazy:
            torch_mncore.sync()
        losses.append(loss.detach())
    state = [t.detach() for t in [*model.parameters(), *model.buffers()]]
    return torch.stack([loss.cpu() for loss in losses]), [t.cpu() for t in state]


def compare(base: nn.Module, make_optimizer: Callable[[Any], torch.optim.Optimizer],
            batches: Batches, loss_fn: Callable[..., torch.Tensor],
            skip: Callable[[str, torch.Tensor], torch.Tensor] | None = None) -> None:
    eager_losses, eager_state = train(copy.deepcopy(base), make_optimizer, batches, loss_fn,
                                      lazy=False)
    torch_mncore.reset_metrics()
    lazy_losses, lazy_state = train(copy.deepcopy(base), make_optimizer, batches, loss_fn,
                                    lazy=True)
    torch.testing.assert_close(lazy_losses, eager_losses, rtol=1e-5, atol=1e-6)
    names = [n for n, _ in base.named_parameters()] + [n for n, _ in base.named_buffers()]
    buffers = {n for n, _ in base.named_buffers()}
    for name, ours, theirs in zip(names, lazy_state, eager_state, strict=True):
        if skip is not None:
            ours, theirs = skip(name, ours), skip(name, theirs)
        # batch-norm running statistics accumulate every step's rounding: rtol 1e-4
        rtol = 1e-4 if name in buffers else 1e-5
        torch.testing.assert_close(ours, theirs, rtol=rtol, atol=1e-5, msg=name)
    compiles = torch_mncore.counters().get("UncachedCompile", 0)
    assert compiles <= 2, torch_mncore.metrics_report()


def mlp_batches(steps: int = 50) -> Batches:
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g))
            for _ in range(steps)]


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_seed_mlp_loop_matches_eager(device: str, optimizer: str) -> None:
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            "adam": lambda p: torch.optim.Adam(p, lr=1e-3)}[optimizer]
    compare(mlp(), make, mlp_batches(), F.cross_entropy)


def test_transformer_adamw_matches_eager(device: str) -> None:
    torch.manual_seed(0)
    model = GPT(layers=2)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randint(0, 64, (2, 16), generator=g),
                torch.randint(0, 64, (2, 16), generator=g)) for _ in range(50 if device ==
                                                                          "cpu" else 10)]

    def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    def without_key_bias(name: str, t: torch.Tensor) -> torch.Tensor:
        # Softmax is shift-invariant, so the attention key bias has an exactly-zero
        # gradient; AdamW turns its rounding noise into updates no two implementations
        # share. Every other element is compared.
        if name.endswith("qkv.bias"):
            d = t.shape[0] // 3
            return torch.cat([t[:d], t[2 * d:]])
        return t

    compare(model, lambda p: torch.optim.AdamW(p, lr=1e-3), batches, loss, without_key_bias)


def test_cnn_sgd_momentum_matches_eager(device: str) -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 3, 16, 16, generator=g), torch.randint(0, 10, (4,), generator=g))
               for _ in range(50 if device == "cpu" else 10)]
    compare(CNN(), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), batches,
            F.cross_entropy)


def test_mncore_moves_a_host_tensor_as_a_copy(device: str) -> None:
    """``.mncore()`` of a plain host tensor (one copy, not ``.to()``'s zeroed tensor and
    recorded copy) holds its values: later writes on either side do not show on the
    other, a transposed source comes out with its values, integers keep their dtype; a
    tensor that requires grad still gets ``.to()``'s autograd edge."""
    torch_mncore.set_implicit_sync("silent")
    x = torch.arange(12.0).reshape(3, 4)
    on_device = x.mncore()
    assert on_device.device.type == "mncore" and not on_device.requires_grad
    x.add_(1)
    on_device.mul_(2)
    assert torch.equal(on_device.cpu(), torch.arange(12.0).reshape(3, 4) * 2)
    assert torch.equal(x, torch.arange(12.0).reshape(3, 4) + 1)
    assert torch.equal(x.t().mncore().cpu(), x.t())
    labels = torch.tensor([3, 1, 2])
    assert labels.mncore().dtype == torch.int64
    assert torch.equal(labels.mncore().cpu(), labels)
    w = torch.randn(3, requires_grad=True)
    moved = w.mncore()
    assert moved.requires_grad and type(moved.grad_fn).__name__ == "ToCopyBackward0"


def test_views_and_in_place(device: str) -> None:
    torch_mncore.set_implicit_sync("silent")
    x = torch.arange(12.0).reshape(3, 4)
    lx = x.mncore()
    x[0].add_(1)
    lx[0].add_(1)  # v = x[0]; v.add_(1) changes x
    assert torch.equal(lx.cpu(), x)
    x.t()[1].mul_(2)
    lx.t()[1].mul_(2)
    x[:, 1:3].zero_()
    lx[:, 1:3].zero_()
    view = lx.view(2, 6)
    torch_mncore.sync()
    assert torch.equal(lx.cpu(), x)
    assert torch.equal(view.cpu(), x.view(2, 6))
    view.add_(1)  # writes through a view made before the sync
    x.view(2, 6).add_(1)
    assert torch.equal(lx.cpu(), x)
    detached = lx.detach()
    detached.sub_(3)
    x.sub_(3)
    assert torch.equal(lx.cpu(), x)


def test_in_place_on_parameters_and_no_grad(device: str) -> None:
    torch_mncore.set_implicit_sync("silent")
    layer = nn.Linear(3, 2)
    lazy = copy.deepcopy(layer).mncore()
    with torch.no_grad():
        layer.weight.mul_(2)
        lazy.weight.mul_(2)
    assert lazy.weight.requires_grad and lazy.weight.device.type == "mncore"
    torch.testing.assert_close(lazy.weight.cpu(), layer.weight.detach())
    zeros = torch.zeros(2, 3, device="mncore")
    assert zeros.device.type == "mncore"
    assert torch.equal(zeros.cpu(), torch.zeros(2, 3))


def test_implicit_sync_policies(device: str) -> None:
    x = torch.ones(3).mncore() * 2
    with pytest.raises(torch_mncore.ImplicitSyncError, match=r"test_lazy.py:\d+"):
        x.cpu()
    torch_mncore.set_implicit_sync("warn")
    with pytest.warns(UserWarning, match="implicit sync"):
        assert x.sum().item() == 6
    torch_mncore.set_implicit_sync("silent")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (x + 1).tolist() == [3.0, 3.0, 3.0]
    assert torch_mncore.counters()["ImplicitSyncs"] >= 2


def test_implicit_sync_policy_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_IMPLICIT_SYNC", "silent")
    torch_mncore.init("interp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (torch.ones(2).mncore() + 1).cpu().tolist() == [2.0, 2.0]
    with pytest.raises(torch_mncore.LazyError, match="policy"):
        torch_mncore.set_implicit_sync("sometimes")


def test_learning_rate_schedule_does_not_recompile(device: str) -> None:
    model = mlp().mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    torch_mncore.reset_metrics()
    for x, y in mlp_batches(8):
        optimizer.zero_grad()
        F.cross_entropy(model(x.mncore()), y.mncore()).backward()
        optimizer.step()
        schedule.step()
        torch_mncore.sync()
    counters = torch_mncore.counters()
    assert counters["UncachedCompile"] == 2, counters  # step 0 creates the momentum buffers
    assert counters["CachedCompile"] == 6


def test_live_buffers_stay_flat(device: str) -> None:
    if device == "interp":
        pytest.skip("the long loop runs on the fast device")
    model = mlp().mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = mlp_batches(1)[0]
    counts = []
    for step in range(1000):
        optimizer.zero_grad()
        F.cross_entropy(model(x.mncore()), y.mncore()).backward()
        optimizer.step()
        torch_mncore.sync()
        if step in (100, 999):
            torch_mncore.wait_device_ops()
            gc.collect()
            counts.append(len(DeviceData.live))
    assert counts[0] == counts[1], counts


def test_execution_error_names_the_source_line(device: str) -> None:
    torch_mncore.set_implicit_sync("silent")
    table = nn.Embedding(4, 2).mncore()
    bad = torch.tensor([1, 7]).mncore()
    out = table(bad)  # index 7 is out of range: found when the graph runs
    torch_mncore.sync()
    with pytest.raises(torch_mncore.LazyError, match="graph execution failed") as info:
        out.cpu()
    assert "test_lazy.py" in str(info.value)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_task_device_trains_the_seed_mlp(optimizer: str) -> None:
    """The megakernel simulator as a device: losses and weights match eager."""
    torch_mncore.init("task", implicit_sync="error")
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            "adam": lambda p: torch.optim.Adam(p, lr=1e-3)}[optimizer]
    compare(mlp(), make, mlp_batches(20), F.cross_entropy)
    torch_mncore.init("cpu")


def test_triton_device_trains_the_seed_mlp() -> None:
    """The Triton megakernel as a device (Triton's interpreter here)."""
    torch_mncore.init("triton", implicit_sync="error")
    compare(mlp(), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), mlp_batches(4),
            F.cross_entropy)
    torch_mncore.init("cpu")


def test_task_device_trains_transformer_and_cnn() -> None:
    torch_mncore.init("task", implicit_sync="error")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    tokens = [(torch.randint(0, 64, (2, 16), generator=g),
               torch.randint(0, 64, (2, 16), generator=g)) for _ in range(3)]

    def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    compare(GPT(layers=1), lambda p: torch.optim.SGD(p, lr=0.1), tokens, loss)
    images = [(torch.randn(4, 3, 16, 16, generator=g), torch.randint(0, 10, (4,), generator=g))
              for _ in range(3)]
    compare(CNN(), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), images,
            F.cross_entropy)
    torch_mncore.init("cpu")


def test_mncore_device_trains_cnn_fully_compiled() -> None:
    """Three SGD-momentum steps of the small CNN on the tiny MN-Core (convolutions as
    matrix products on the MAU), no op on the host."""
    torch_mncore.init("mncore", implicit_sync="error", host_fallback=False)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    images = [(torch.randn(2, 3, 8, 8, generator=g), torch.randint(0, 10, (2,), generator=g))
              for _ in range(3)]
    compare(CNN(), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), images,
            F.cross_entropy)
    assert not [c for c in torch_mncore.counters() if c.startswith("CpuFallback")]
    assert torch_mncore.counters()["MNCoreRuns"] == 3
    torch_mncore.init("cpu")


def test_unknown_devices_and_machines_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(torch_mncore.LazyError, match="unknown device 'tpu'; devices: cpu, "
                       "interp, task, triton, mncore"):
        torch_mncore.init("tpu")
    monkeypatch.setenv("MNCORE_MACHINE", "big")
    with pytest.raises(torch_mncore.LazyError, match="MNCORE_MACHINE='big' is not a machine; "
                       "machines: mncore2, tiny"):
        torch_mncore.init("mncore")
    torch_mncore.init("cpu")


def test_mncore_device_names_the_line_it_cannot_compile() -> None:
    torch_mncore.init("mncore", implicit_sync="silent", host_fallback=False)
    x = torch.randn(4, dtype=torch.float64).mncore()
    out = x * 2  # a word holds one f32 value: f64 has no word form
    with pytest.raises(torch_mncore.LazyError, match=r"the mncore device cannot compile this "
                       r"step: the device holds no torch.float64 .* \(first at .*test_lazy.py:"
                       r"\d+: out = x \* 2"):
        torch_mncore.sync()
    del out
    torch_mncore.init("cpu")


def test_mncore_device_trains_the_seed_mlp() -> None:
    """The cycle simulator of the tiny machine as a device: losses and weights match
    eager over SGD steps (forward, backward and update all run as one program)."""
    torch_mncore.init("mncore", implicit_sync="error")
    compare(mlp(), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), mlp_batches(5),
            F.cross_entropy)
    torch_mncore.init("cpu")


def test_interp_and_cpu_give_the_same_losses() -> None:
    results = []
    for name in ("cpu", "interp"):
        torch_mncore.init(name, implicit_sync="error")
        losses, _ = train(mlp(), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                          mlp_batches(10), F.cross_entropy, lazy=True)
        results.append(losses)
    torch.testing.assert_close(results[0], results[1], rtol=1e-6, atol=1e-6)


def test_cpu_fallback_is_counted(device: str) -> None:
    x = torch.tensor([3.0, 1.0, 2.0])
    lazy = x.mncore()
    # nextafter (no level has it) syncs its input even under the "error" policy
    out = torch.nextafter(lazy * 2, torch.zeros(3).mncore())
    torch_mncore.sync()
    assert torch.equal(out.cpu(), torch.nextafter(x * 2, torch.zeros(3)))
    counters = torch_mncore.counters()
    assert counters["CpuFallback::aten.nextafter.default"] == 1
    assert counters["FallbackSyncs"] == 1


def test_exit_right_after_sync_is_clean() -> None:
    """The worker may still be running a graph when the program ends."""
    import subprocess
    import sys

    code = ("import torch, torch_mncore\ntorch_mncore.init('cpu')\n"
            "m = torch.nn.Linear(300, 200).mncore()\n"
            "m(torch.randn(400, 300).mncore()).sum().backward()\ntorch_mncore.sync()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_error_inside_backward_is_raised_at_the_next_sync(device: str) -> None:
    """Autograd runs the device's backward on a C++ thread where an exception would
    abort the process; the runtime keeps the error for the main thread instead."""
    leaf = torch.ones(3, requires_grad=True)
    (leaf.mncore() * 2).sum().backward()  # its grad goes back to the host: a read
    with pytest.raises(torch_mncore.ImplicitSyncError):
        torch_mncore.sync()
    torch_mncore.set_implicit_sync("silent")
    (leaf.mncore() * 2).sum().backward()
    torch_mncore.sync()
    assert leaf.grad is not None and leaf.grad.tolist() == [2.0, 2.0, 2.0]


def test_dumps_debug_and_disk_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.setenv("MNCORE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MNCORE_DEBUG", "1")
    torch_mncore.init("cpu", implicit_sync="error")

    def step(n: int) -> torch.Tensor:
        y = torch.ones(n).mncore() * 3
        torch_mncore.sync()
        return y

    assert step(4).cpu().tolist() == [3.0] * 4
    dumps = list((tmp_path / "dump").glob("*.graph.mlir"))
    assert len(dumps) == 1 and "graph.mul" in dumps[0].read_text()
    err = capsys.readouterr().err
    assert "[mncore] compile" in err and "test_lazy.py" in err  # cause: the sync() line
    with pytest.warns(UserWarning, match="compiled 3 different graphs"):
        step(5)
        step(6)
    torch_mncore.init("cpu", implicit_sync="error")  # a new process would do the same
    step(4).cpu()
    assert torch_mncore.counters()["DiskCachedCompile"] == 1
