"""The host fallback at compile time: what a device cannot take (an op the importer
lacks, a form of one it refuses, a dtype the device lacks, a node its pipeline blames)
runs eagerly on the host in its part of the step; the rest stays compiled. Numbers
match eager on every device; fallbacks are counted per op and explained."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch

import torch_mncore
from mncore_ir.frontends import lazy_runtime
from mncore_ir.transforms import convert_graph_to_task


@pytest.fixture(autouse=True)
def cpu_device() -> None:
    torch_mncore.init("cpu", implicit_sync="silent")

DEVICES = ["cpu", "interp", "task", "triton", "mncore"]


@pytest.fixture
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    torch_mncore.init(request.param, implicit_sync="silent")
    yield request.param
    torch_mncore.init("cpu")


def fallbacks() -> dict[str, int]:
    return {k: v for k, v in torch_mncore.counters().items() if k.startswith("CpuFallback::")}


def last_ir() -> str:
    return lazy_runtime.runtime().last[1].ir


def refused_block(x: torch.Tensor) -> torch.Tensor:
    h = x.abs() * 2 + 1
    y = torch.polygamma(2, h)  # order 2: the importer takes only order 0 (digamma)
    return torch.tanh(y * 4).sum(dim=1)


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_a_refused_op_runs_on_the_host_between_device_parts(device: str) -> None:
    x = torch.randn(2, 3, 4)
    expected = refused_block(x)
    for step in range(2):  # compiled, then from the cache: counted at every run
        out = refused_block(x.mncore())
        torch_mncore.sync()
        assert torch.allclose(out.cpu(), expected, atol=1e-5)
        assert fallbacks() == {"CpuFallback::aten.polygamma.default": step + 1}
    ir = last_ir()
    assert "// on the host: aten.polygamma.default at " in ir
    assert "polygamma of order 2 is not supported" in ir
    assert ir.count("// device_part_") == 2, ir  # before and after the polygamma


def test_mncore_device_runs_f64_on_the_host_and_f32_on_the_machine() -> None:
    torch_mncore.init("mncore", implicit_sync="silent")
    a, b = torch.randn(4), torch.randn(4, dtype=torch.float64)
    y = (a.mncore() * 3).exp()
    z = (b.mncore() * 2).sum()
    torch_mncore.sync()
    assert torch.allclose(y.cpu(), (a * 3).exp())
    assert z.cpu().dtype == torch.float64 and torch.allclose(z.cpu(), (b * 2).sum())
    assert fallbacks() == {"CpuFallback::aten.mul.Tensor": 1,
                           "CpuFallback::aten.sum.dim_IntList": 1}
    assert torch_mncore.counter_value("MNCoreRuns") == 1
    assert "the device holds no torch.float64" in last_ir()
    torch_mncore.init("cpu")


def test_mncore_debug_lists_the_host_ops_with_why_and_line(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNCORE_DEBUG", "1")
    torch_mncore.init("cpu", implicit_sync="silent")
    out = refused_block(torch.randn(1, 3, 3).mncore())
    torch_mncore.sync()
    del out
    err = capfd.readouterr().err
    assert ("[mncore] on the host: aten.polygamma.default at "
            f"{__file__}:") in err, err
    assert "y = torch.polygamma(2, h)  # order 2" in err
    assert ": polygamma of order 2 is not supported (only 0)" in err
    torch_mncore.init("cpu")


def test_a_node_the_pipeline_blames_runs_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """convert-graph-to-task made to refuse graph.tanh (as a lowering refuses a form it
    lacks, blaming the op): that node goes to the host, its neighbours stay compiled."""
    lower = convert_graph_to_task.KernelBuilder.lower

    def refuse_tanh(self: Any, op: Any) -> None:
        tanh = next((o for o in op.walk() if o.name == "graph.tanh"), None)  # maybe fused
        if tanh is not None:
            raise convert_graph_to_task.TaskConversionError("no tanh today", tanh)
        lower(self, op)

    monkeypatch.setattr(convert_graph_to_task.KernelBuilder, "lower", refuse_tanh)
    torch_mncore.init("task", implicit_sync="silent")
    x = torch.randn(5, 3)
    out = (torch.tanh(x.mncore() * 2) + 1).sum(dim=0)
    torch_mncore.sync()
    assert torch.allclose(out.cpu(), (torch.tanh(x * 2) + 1).sum(dim=0), atol=1e-5)
    assert fallbacks() == {"CpuFallback::aten.tanh.default": 1}
    assert "no tanh today" in last_ir()
    torch_mncore.init("cpu")


def test_without_host_fallback_the_refused_op_is_an_error_at_its_line() -> None:
    torch_mncore.init("cpu", implicit_sync="silent", host_fallback=False)
    out = refused_block(torch.randn(1, 3, 3).mncore())
    with pytest.raises(torch_mncore.LazyError,
                       match=r"the cpu device cannot compile this step: "
                             r"aten.polygamma.default: polygamma of order 2 is not "
                             r"supported \(only 0\) at .*"
                             r"test_lazy_host_fallback.py:\d+: y = torch.polygamma\(2, h\)"):
        torch_mncore.sync()
    del out
    torch_mncore.init("cpu")


def test_a_step_that_cannot_compile_at_all_runs_on_the_host_with_a_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    compiler = lazy_runtime.runtime().compiler

    def refuse(module: Any) -> Any:
        raise ValueError("no executable today")

    from dataclasses import replace
    monkeypatch.setattr(compiler, "device", replace(compiler.device, executable=refuse))
    x = torch.randn(3)
    y = x.mncore() * 5
    with pytest.warns(UserWarning, match=r"the cpu device cannot compile this step: "
                      r"ValueError: no executable today .*; the step runs on the host"):
        torch_mncore.sync()
    assert torch.equal(y.cpu(), x * 5)
    assert fallbacks() == {"CpuFallback::aten.mul.Tensor": 1}


def test_a_host_op_returning_a_nested_tensor_is_an_error_at_its_line() -> None:
    """nn.TransformerEncoder in eval mode with a key padding mask converts its input to
    a nested tensor on the host, which the device cannot hold: one clear error naming
    the way out, not an internal error of torch's."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 1).eval().mncore()
    mask = torch.zeros(2, 3, dtype=torch.bool)
    mask[1, 2] = True
    with torch.no_grad(), pytest.raises(
            torch_mncore.LazyError, match=r"returns a nested tensor, which the device does "
                                          r"not hold .*enable_nested_tensor=False.* at .*"
                                          r"test_lazy_host_fallback.py:\d+: model\("):
        model(torch.randn(2, 3, 8).mncore(), src_key_padding_mask=mask.mncore())


@pytest.mark.parametrize("device", ["cpu", "interp"], indirect=True)
def test_a_packed_sequence_keeps_its_batch_sizes_on_the_host(device: str) -> None:
    """``pack_padded_sequence`` of a device tensor: PyTorch requires a PackedSequence's
    batch sizes on the host (the device's copy was refused); an LSTM over it and its
    backward match eager."""
    torch.manual_seed(0)
    ours, theirs = torch.nn.LSTM(4, 3, batch_first=True), torch.nn.LSTM(4, 3, batch_first=True)
    theirs.load_state_dict(ours.state_dict())
    ours.mncore()
    x, lengths = torch.randn(2, 5, 4), torch.tensor([5, 3])

    def run(model: torch.nn.LSTM, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
        assert packed.batch_sizes.device.type == "cpu"
        out, (h, _) = model(packed)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        (y.square().sum() + h.sum()).backward()
        return y, h

    got, expected = run(ours, x.mncore()), run(theirs, x)
    torch_mncore.sync()
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a.grad.cpu(), b.grad, rtol=1e-4, atol=1e-5)


def test_python_integers_past_a_word_are_baked_and_refused_when_compiling() -> None:
    """A Python int from 2**24 on stays in the graph (not a hoisted input), so the mncore
    lowering refuses it when it compiles: by default that part runs on the host, equal
    to eager (as an input it failed when the program ran, naming no line)."""
    torch_mncore.init("mncore", implicit_sync="silent")
    try:
        x = torch.tensor([0, 1, 5, 7, 2**20])
        got = [x.mncore() == 2**24, x.mncore() * 3 + 2**25, x.mncore() + 7]
        torch_mncore.sync()
        for ours, theirs in zip(got, [x == 2**24, x * 3 + 2**25, x + 7], strict=True):
            assert torch.equal(ours.cpu(), theirs)
        assert any(k.startswith("CpuFallback") for k in torch_mncore.counters())
    finally:
        torch_mncore.init("cpu")
