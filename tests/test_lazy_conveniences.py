"""torch_xla's conveniences on torch_mncore: the metrics API (percentiles, the short
report, metric_data), optimizer_step, DeviceLoader and profile()."""

from __future__ import annotations

import copy
import gc
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore
from mncore_ir.frontends import lazy_profile
from mncore_ir.frontends import lazy_runtime as rt
from mncore_ir.frontends.lazy_tensor import LazyTensor
from mncore_ir.frontends.lazy_worker import Metrics, percentile

Batches = list[tuple[torch.Tensor, torch.Tensor]]


@pytest.fixture(params=["cpu", "interp"])
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    torch_mncore.init(request.param, implicit_sync="error")
    yield request.param
    torch_mncore.wait_device_ops()


@pytest.fixture
def cpu() -> Iterator[None]:
    torch_mncore.init("cpu", implicit_sync="error")
    yield
    torch_mncore.wait_device_ops()


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


def batches(steps: int = 3) -> Batches:
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g))
            for _ in range(steps)]


def lazy_steps(model: nn.Module, data: Any,
               optimizer: torch.optim.Optimizer | None = None) -> list[torch.Tensor]:
    """The loop as a torch_xla user writes it: DeviceLoader and optimizer_step with a
    barrier, no explicit sync; the losses, still on the device."""
    if optimizer is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in torch_mncore.DeviceLoader(data):
        assert isinstance(x, LazyTensor) and isinstance(y, LazyTensor)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch_mncore.optimizer_step(optimizer, barrier=True)
        losses.append(loss.detach())
    return losses


# ---------------------------------------------------------------------- metrics


def test_percentiles_match_numpy() -> None:
    samples = [0.5, 3.0, 1.0, 7.5, 2.0, 9.0, 4.0]
    for q in (0, 10, 50, 90, 99, 100):
        assert percentile(samples, q) == pytest.approx(np.percentile(samples, q))
    assert percentile([2.5], 99) == 2.5


def test_report_shows_count_total_mean_and_percentiles() -> None:
    metrics = Metrics()
    for ms in (1, 2, 3, 4):
        metrics.time("CompileTime", ms / 1e3)
    line = next(x for x in metrics.report().splitlines() if "CompileTime" in x)
    assert line == ("  CompileTime: count 4, total 0.0100 s, mean 2.500 ms, p50 2.500 ms, "
                    "p90 3.700 ms, p99 3.970 ms")


def test_metric_data_counter_value_and_names(cpu: None) -> None:
    model = mlp().mncore()
    torch_mncore.reset_metrics()
    lazy_steps(model, batches())
    torch_mncore.wait_device_ops()  # no execution adds a sample after the reset
    before = time.time()
    torch_mncore.reset_metrics()
    rt.runtime().metrics.time("CompileTime", 0.25)
    rt.runtime().metrics.time("CompileTime", 0.5)
    count, total, samples = torch_mncore.metric_data("CompileTime")
    assert (count, total) == (2, 0.75)
    assert [v for _, v in samples] == [0.25, 0.5]
    assert all(before <= stamp <= time.time() for stamp, _ in samples)
    assert torch_mncore.metric_names() == ["CompileTime"]
    with pytest.raises(torch_mncore.LazyError,
                       match=r"no metric named 'Compiletime'.*: CompileTime \(counters"):
        torch_mncore.metric_data("Compiletime")
    assert torch_mncore.counter_value("Executions") is None  # reset: not counted
    lazy_steps(model, batches(2))
    assert torch_mncore.counter_value("Executions") == 2
    assert torch_mncore.counter_value("NoSuchCounter") is None
    names = torch_mncore.counter_names()
    assert names == sorted(torch_mncore.counters()) and "Executions" in names
    assert "TransferToDeviceTime" in torch_mncore.metric_names()


def test_short_metrics_report(cpu: None) -> None:
    torch_mncore.reset_metrics()
    x = torch.randn(4, 8)
    zero = torch.zeros(4, 8)
    y = torch.nextafter(x.mncore() * 2, zero.mncore())  # on the host: a fallback
    torch_mncore.sync()
    torch.testing.assert_close(y.cpu(), torch.nextafter(x * 2, zero))
    counts = torch_mncore.counters()
    lines = torch_mncore.short_metrics_report().splitlines()
    assert lines[:5] == [f"TracedOps: {counts['TracedOps']}",
                         f"CachedCompile: {counts.get('CachedCompile', 0)}",
                         f"UncachedCompile: {counts['UncachedCompile']}",
                         f"Executions: {counts['Executions']}", "ImplicitSyncs: 0"]
    assert "CpuFallback::aten.nextafter.default: 1" in lines
    assert any(re.fullmatch(r"CompileTime: count 1, total [\d.]+ s, .*p99 [\d.]+ ms", x)
               for x in lines)
    chosen = torch_mncore.short_metrics_report(["Executions", "Nope"], ["SyncTime", "Nah"])
    assert re.fullmatch(r"Executions: \d+\nNope: 0\nSyncTime: count \d+, .* ms\nNah: no samples",
                        chosen)


# ---------------------------------------------------------------------- optimizer_step


def test_optimizer_step_barrier_syncs_and_returns_the_loss(cpu: None) -> None:
    model = mlp().mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = (t.mncore() for t in batches(1)[0])

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    with pytest.raises(torch_mncore.ImplicitSyncError):  # no barrier: nothing ran
        torch_mncore.optimizer_step(optimizer, optimizer_args={"closure": closure}).item()
    torch_mncore.sync()
    executions = torch_mncore.counters()["Executions"]
    loss = torch_mncore.optimizer_step(optimizer, barrier=True,
                                       optimizer_args={"closure": closure})
    assert torch_mncore.counters()["Executions"] == executions + 1
    assert isinstance(loss, LazyTensor) and loss.item() > 0  # computed: no implicit sync


# ---------------------------------------------------------------------- DeviceLoader


def test_training_loop_with_device_loader_matches_eager(device: str) -> None:
    data = batches()
    model = mlp()
    eager = copy.deepcopy(model)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    expected = []
    for x, y in data:
        optimizer.zero_grad()
        loss = F.cross_entropy(eager(x), y)
        loss.backward()
        optimizer.step()
        expected.append(loss.detach())
    torch_mncore.reset_metrics()
    losses = lazy_steps(model.mncore(), data)
    torch.testing.assert_close(torch.stack([loss.cpu() for loss in losses]),
                               torch.stack(expected), rtol=1e-5, atol=1e-6)
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.detach().cpu(), theirs.detach(), rtol=1e-5, atol=1e-5)
    # momentum's first step creates its buffers: a second graph, then the cache
    assert torch_mncore.counters()["UncachedCompile"] == 2
    assert "ImplicitSyncs" not in torch_mncore.counters()


def test_loader_batches_compile_as_mncore_batches(cpu: None) -> None:
    """A batch the loader's thread moves is the same graph input as ``.mncore()``'s."""
    model = mlp().mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch_mncore.reset_metrics()
    losses = []
    for x, y in batches(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x.mncore()), y.mncore())
        loss.backward()
        optimizer.step()
        torch_mncore.sync()
        losses.append(loss.detach())  # a graph output, as in lazy_steps
    lazy_steps(model, batches(2), optimizer)
    assert torch_mncore.counters()["UncachedCompile"] == 1


def test_device_loader_moves_nested_batches_and_has_len(cpu: None) -> None:
    g = torch.Generator().manual_seed(2)
    data = [{"x": [torch.randn(2, 3, generator=g), torch.arange(4)], "id": i, "name": "b"}
            for i in range(3)]
    loader = torch_mncore.DeviceLoader(data, prefetch=1)
    assert len(loader) == 3
    got = list(loader)
    assert [b["id"] for b in got] == [0, 1, 2] and all(b["name"] == "b" for b in got)
    for ours, theirs in zip(got, data, strict=True):
        for a, b in zip(ours["x"], theirs["x"], strict=True):
            assert isinstance(a, LazyTensor)
            torch.testing.assert_close(a.cpu(), b)
    with pytest.raises(TypeError, match="generator"):
        len(torch_mncore.DeviceLoader(b for b in data))
    with pytest.raises(torch_mncore.LazyError, match="prefetch at least 1"):
        torch_mncore.DeviceLoader(data, prefetch=0)


def test_device_loader_moves_a_tensor_needing_grad_in_the_caller(cpu: None) -> None:
    torch_mncore.set_implicit_sync("silent")  # backward reads the device's gradient
    w = torch.randn(3, requires_grad=True)
    (moved,) = list(torch_mncore.DeviceLoader([w]))
    assert isinstance(moved, LazyTensor) and moved.requires_grad
    (moved * 2).sum().backward()
    torch_mncore.sync()
    torch.testing.assert_close(w.grad, torch.full((3,), 2.0))


def test_device_loader_syncs_each_batch_as_mpdeviceloader(cpu: None) -> None:
    torch_mncore.reset_metrics()
    out = []
    for (x,) in torch_mncore.DeviceLoader([(torch.ones(2),)] * 3):
        out.append(x + 1)  # traced; run when the next batch is taken
    assert torch_mncore.counters()["Executions"] == 3
    assert [t.cpu().tolist() for t in out] == [[2.0, 2.0]] * 3


def test_loader_errors_are_raised_in_the_caller(cpu: None) -> None:
    def failing() -> Iterator[torch.Tensor]:
        yield torch.zeros(2)
        yield torch.ones(2)
        raise ValueError("bad record 2")

    it = iter(torch_mncore.DeviceLoader(failing()))
    assert next(it).cpu().tolist() == [0.0, 0.0]
    assert next(it).cpu().tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="bad record 2") as raised:
        next(it)
    assert any("DeviceLoader" in note for note in raised.value.__notes__)
    with pytest.raises(StopIteration):
        next(it)


def _loader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mncore-device-loader"]


def test_stopping_early_does_not_leak_the_thread(cpu: None) -> None:
    closed = threading.Event()

    def endless() -> Iterator[torch.Tensor]:
        try:
            while True:
                yield torch.zeros(4)
        finally:
            closed.set()

    for t in _loader_threads():
        t.join(timeout=10)
    it = iter(torch_mncore.DeviceLoader(endless(), prefetch=2))
    next(it)
    thread = it._thread
    time.sleep(0.2)  # the thread fills the queue and blocks on it
    assert thread.is_alive()
    del it
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive() and closed.is_set()
    it = iter(torch_mncore.DeviceLoader(endless()))
    for _ in range(3):
        next(it)
    it.close()
    assert not it._thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)


# ---------------------------------------------------------------------- profile


def _events(path: Path) -> tuple[list[dict[str, Any]], dict[int, str]]:
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    return [e for e in events if e["ph"] == "X"], names


def _within(inner: dict[str, Any], outer: dict[str, Any]) -> bool:
    return (inner["tid"] == outer["tid"] and outer["ts"] <= inner["ts"]
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3)


def test_profile_writes_a_chrome_trace(cpu: None, tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    model = mlp().mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # one graph for every step
    with torch_mncore.profile(path):
        losses = lazy_steps(model, batches(), optimizer)
        last = losses[-1].item()  # may wait for the last execution
    assert lazy_profile.ACTIVE is None and last > 0
    events, threads = _events(path)
    for e in events:
        assert {"name", "cat", "ts", "dur", "pid", "tid"} <= e.keys() and e["dur"] >= 0
    by_name: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_name.setdefault(e["name"], []).append(e)
    main, worker = threading.get_native_id(), rt.runtime().worker._thread.native_id
    assert threads[main] == "MainThread" and threads[worker] == "mncore-worker"
    syncs, compiles = by_name["sync"], by_name["compile"]
    assert len(syncs) == len(compiles) == len(by_name["trace"]) == 3
    assert [c["args"]["cached"] for c in compiles] == [False, True, True]
    assert not any(c["args"]["disk_cached"] for c in compiles)
    assert all(t["args"]["ops"] > 10 for t in by_name["trace"])  # each step's traced ops
    assert all(re.fullmatch(r"[0-9a-f]{32}", c["args"]["graph"]) and c["args"]["ops"] > 10
               for c in compiles)
    for sync, compile_ in zip(syncs, compiles, strict=True):
        assert sync["tid"] == main and _within(compile_, sync)
        assert sync["args"]["graph"] == compile_["args"]["graph"]
    executes = by_name["execute"]
    assert len(executes) == 3 and all(e["tid"] == worker for e in executes)
    for e in executes:
        assert any(_within(run, e) for run in by_name["run"])
    assert all(g["tid"] == main for g in by_name["gate"])
    assert threads[by_name["transfer_to_device"][0]["tid"]] == "mncore-device-loader"
    # steps follow one another: each trace ends where its sync begins
    for trace, sync in zip(by_name["trace"], syncs, strict=True):
        assert trace["ts"] + trace["dur"] == pytest.approx(sync["ts"], abs=1e-2)


def test_profile_records_waits_and_is_written_on_an_exception(cpu: None,
                                                              tmp_path: Path) -> None:
    path = tmp_path / "failed.json"
    with pytest.raises(KeyError, match="inside"), torch_mncore.profile(path):
        y = torch.randn(256, 256).mncore() @ torch.randn(256, 256).mncore()
        torch_mncore.sync(wait=True)
        z = y @ y
        torch_mncore.sync()
        z.cpu()
        raise KeyError("inside")
    events, _ = _events(path)
    names = [e["name"] for e in events]
    assert "wait_device_ops" in names and names.count("execute") == 2
    wait = next(e for e in events if e["name"] == "wait_device_ops")
    assert _within(wait, next(e for e in events if e["name"] == "sync"))
    assert lazy_profile.ACTIVE is None


def test_profile_records_a_failed_execution(cpu: None, tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    table = nn.Embedding(4, 2).mncore()
    with torch_mncore.profile(path):
        out = table(torch.tensor([1, 7]).mncore())  # index 7: fails when the graph runs
        torch_mncore.sync()
    with pytest.raises(torch_mncore.LazyError, match="graph execution failed"):
        out.cpu()
    events, _ = _events(path)
    (execute,) = [e for e in events if e["name"] == "execute"]
    assert "index" in execute["args"]["error"] and execute["args"]["ops"] >= 1
    assert not [e for e in events if e["name"] == "run" and not _within(e, execute)]


def test_profile_refuses_nesting_and_missing_folders(cpu: None, tmp_path: Path) -> None:
    nested = pytest.raises(torch_mncore.LazyError, match="profiles do not nest")
    with torch_mncore.profile(tmp_path / "outer.json"), nested, torch_mncore.profile(
            tmp_path / "inner.json"):
        pass
    assert json.loads((tmp_path / "outer.json").read_text())["traceEvents"]
    assert not (tmp_path / "inner.json").exists()
    missing = pytest.raises(torch_mncore.LazyError, match="does not exist")
    with missing, torch_mncore.profile(tmp_path / "missing" / "trace.json"):
        pass
    with pytest.raises(torch_mncore.LazyError, match="is a folder"), torch_mncore.profile(
            tmp_path):
        pass
