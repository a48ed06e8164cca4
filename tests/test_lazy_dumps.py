"""What a compile leaves to look at (``frontends/lazy_compile.py``, ``pipeline.py``):
``MNCORE_DUMP_DIR``'s IR after every pass, at the level its name says, with the user's
source lines as locations; graph inputs named by ``name_inputs`` (the cache key
unchanged); ``MNCORE_DEBUG``'s line saying what is compiled and why, before the compile;
and the phases of a compile that runs past two seconds, only then."""

from __future__ import annotations

import copy
import inspect
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.passes import PassPipeline

import torch_mncore
from mncore_ir import pipeline
from mncore_ir.frontends import lazy_runtime
from mncore_ir.frontends.lazy_names import name_inputs, note_named_buffers
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import device, ir_level, make_context
from mncore_ir.registry import get_all_passes

# Dynamo, tracing its frame, touches torch.jit (its warning, not this code's)
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def back_to_cpu() -> Iterator[None]:
    """Each test starts its runtime after setting the variables it reads; afterwards the
    next test gets a runtime that holds none of them."""
    yield
    torch_mncore.wait_device_ops()
    torch_mncore.init("cpu")


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def train_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One SGD step, as a user writes it; the loss (lazy: synced)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.mse_loss(model(x), y)  # the step's forward
    loss.backward()
    optimizer.step()
    if x.device.type == "mncore":
        torch_mncore.sync()
    return loss.detach()


def line_of(fn: Callable[..., Any], text: str) -> int:
    """The line number of the first line of ``fn``'s source that contains ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


FORWARD_LINE = line_of(train_step, "# the step's forward")


def _lazy_step(named: bool) -> tuple[nn.Module, torch.Tensor]:
    """The MLP's step on the current device and in eager; asserts they agree and
    returns the lazy model and loss."""
    x, y = torch.randn(3, 4), torch.randn(3, 2)
    eager = _mlp()
    lazy = copy.deepcopy(eager).mncore()
    if named:
        name_inputs((f"model.{name}", p) for name, p in lazy.named_parameters())
    loss = train_step(lazy, x.mncore(), y.mncore())
    torch.testing.assert_close(loss.cpu(), train_step(eager, x, y))
    for ours, theirs in zip(lazy.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.detach().cpu(), theirs.detach())
    return lazy, loss


def _expected_dumps(device_name: str) -> list[str]:
    """``NN-pass.level`` of each dump the device's pipeline leaves: graph IR until
    ``convert-graph-to-task``, task IR until ``convert-task-to-mncore``."""
    passes = PassPipeline.parse_spec(get_all_passes(), device(device_name).pipeline).passes
    names, level = ["00-input.graph"], "graph"
    for i, p in enumerate(passes, start=1):
        level = {"convert-graph-to-task": "task", "convert-task-to-mncore": "mncore"}.get(
            p.name, level)
        names.append(f"{i:02d}-{p.name}.{level}")
    return names


def _located_lines(module: ModuleOp) -> set[tuple[str, int]]:
    return {(op.location.filename.data, op.location.line.data) for op in module.walk()
            if isinstance(op.location, FileLineColLoc)}


@pytest.mark.parametrize("device_name", ["task", "mncore"])
def test_every_pass_is_dumped_at_its_level_with_the_users_lines(
        device_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("MNCORE_MACHINE", "tiny")
    torch_mncore.init(device_name, implicit_sync="error")
    _lazy_step(named=True)
    key = lazy_runtime.runtime().last[1].key
    dumps = sorted((tmp_path / "passes").iterdir())
    assert [p.name for p in dumps] == [f"{key}.{n}.mlir" for n in _expected_dumps(device_name)]
    here = (train_step.__code__.co_filename, FORWARD_LINE)
    for path in dumps:
        text = path.read_text()
        module = parse_module(make_context(), text, str(path))
        assert path.name.endswith(f".{ir_level(module)}.mlir")
        if ".graph." in path.name:  # the graph passes keep the importer's locations
            assert f'loc("{here[0]}":{here[1]}:' in text, path.name
            assert here in _located_lines(module), path.name
    first = dumps[0].read_text()
    assert "func.func @main(%model.0.weight: tensor<8x4xf32>" in first
    assert "%model.2.bias: tensor<2xf32>" in first
    # the final IR, as the compile cache holds it: names, and no locations
    final = (tmp_path / f"{key}.graph.mlir").read_text()
    assert "model.0.weight" in final and "loc(" not in final


def test_names_do_not_change_the_cache_key(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path))
    torch_mncore.init("cpu", implicit_sync="error")
    with monkeypatch.context() as patch:  # module.mncore() names parameters: not here
        patch.setattr(torch_mncore, "_name_module", lambda module: None)
        _lazy_step(named=False)
    unnamed_key = lazy_runtime.runtime().last[1].key
    assert "%in0: tensor<8x4xf32>" in (tmp_path / f"{unnamed_key}.graph.mlir").read_text()
    model, _ = _lazy_step(named=True)  # the same structure: a hit, named or not
    assert torch_mncore.counters()["CachedCompile"] == 1
    torch_mncore.init("cpu", implicit_sync="error")  # an empty in-memory cache
    _lazy_step(named=True)
    assert lazy_runtime.runtime().last[1].key == unnamed_key
    assert "%model.0.weight" in (tmp_path / f"{unnamed_key}.graph.mlir").read_text()
    with pytest.raises(torch_mncore.LazyError, match="'w' is on cpu, not the mncore device"):
        name_inputs([("w", torch.ones(2))])
    del model


def test_names_follow_parameters_to_their_new_buffers(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Adam's second step is another graph (its state is an input now), compiled while
    the parameters hold their updates: the buffers noted after the first sync are named."""
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path))
    torch_mncore.init("cpu", implicit_sync="error")
    model = nn.Linear(4, 3).mncore()
    name_inputs(model.named_parameters())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    for _ in range(2):
        model(torch.randn(2, 4).mncore()).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_mncore.sync()
        note_named_buffers()
    signatures = [p.read_text().splitlines()[1] for p in tmp_path.glob("*.graph.mlir")]
    assert len(signatures) == 2, signatures
    for signature in signatures:
        assert "%weight: tensor<3x4xf32>" in signature and "%bias: tensor<3xf32>" in signature


def test_a_disk_cached_compile_dumps_no_passes(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.setenv("MNCORE_CACHE_DIR", str(tmp_path / "cache"))
    torch_mncore.init("cpu", implicit_sync="error")
    _lazy_step(named=False)
    passes = tmp_path / "dump" / "passes"
    written = {p.name: p.stat().st_mtime_ns for p in passes.iterdir()}
    assert len(written) == len(_expected_dumps("cpu"))
    torch_mncore.init("cpu", implicit_sync="error")  # as a new process would
    _lazy_step(named=False)
    assert torch_mncore.counters()["DiskCachedCompile"] == 1
    assert {p.name: p.stat().st_mtime_ns for p in passes.iterdir()} == written


def test_no_dump_directory_no_dumps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNCORE_DUMP_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    written: list[str] = []
    monkeypatch.setattr(pipeline.PassDumps, "write",
                        lambda self, *args: written.append(self.prefix) or "")
    torch_mncore.init("cpu", implicit_sync="error")
    _lazy_step(named=False)
    assert written == [] and list(tmp_path.iterdir()) == []


def test_debug_says_what_is_compiled_and_why_before_compiling(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNCORE_DEBUG", "1")
    torch_mncore.init("cpu", implicit_sync="error")
    _lazy_step(named=False)
    key = lazy_runtime.runtime().last[1].key
    err = capsys.readouterr().err
    sync_line = line_of(train_step, "torch_mncore.sync()")
    before = (f"[mncore] compiling {key} because of sync() at "
              f"{train_step.__code__.co_filename}:{sync_line}: torch_mncore.sync(): ")
    assert before in err
    after = f"[mncore] compile {key}: "
    assert err.index(before) < err.index(after)
    graph = lazy_runtime.runtime().last[0]
    assert (f"{len(graph.nodes)} ops, {len(graph.inputs)} inputs, {len(graph.outputs)} "
            "outputs") in err[:err.index(after)]
    assert "phase" not in err  # a fast compile shows no progress


def _slow_pass(monkeypatch: pytest.MonkeyPatch, name: str, seconds: float) -> None:
    cls = get_all_passes()[name]()
    apply = cls.apply

    def slow_apply(self: Any, ctx: Any, module: ModuleOp) -> None:
        time.sleep(seconds)
        apply(self, ctx, module)

    monkeypatch.setattr(cls, "apply", slow_apply)


def _phases(err: str, key: str) -> list[str]:
    """The progress updates of the compile ``key`` (tqdm rewrites its line with ``\\r``)."""
    label = f"[mncore] compiling {key}: phase "
    return [part.strip()[len(label):] for part in err.replace("\n", "\r").split("\r")
            if part.startswith(label)]


def test_a_slow_compile_shows_its_phases_from_two_seconds_on(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    _slow_pass(monkeypatch, "cse", pipeline.PROGRESS_AFTER_S + 0.1)
    torch_mncore.init("cpu", implicit_sync="error")  # pipeline canonicalize,cse,dce
    _lazy_step(named=False)
    compiled = lazy_runtime.runtime().last[1]
    phases = [p.split(", ") for p in _phases(capfd.readouterr().err, compiled.key)]
    # nothing before the slow pass ends; then dce (pass 3 of 3), the build, the end
    assert [p[:2] for p in phases] == [["3/5", "pass dce"], ["4/5", "executable"],
                                       ["5/5", "done"]], phases
    assert all(float(p[3].removesuffix(" s")) >= 2 for p in phases)
    final_ops = sum(1 for _ in parse_module(make_context(), compiled.ir).walk()) - 1
    assert phases[-1][2] == f"{final_ops} ops"


def test_progress_can_be_silenced_and_a_fast_compile_shows_none(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    torch_mncore.init("cpu", implicit_sync="error")
    _lazy_step(named=False)
    assert "phase" not in capfd.readouterr().err
    monkeypatch.setattr(pipeline, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setenv("MNCORE_PROGRESS", "0")
    torch_mncore.init("cpu", implicit_sync="error")
    _lazy_step(named=False)
    assert "phase" not in capfd.readouterr().err
    monkeypatch.delenv("MNCORE_PROGRESS")
    torch_mncore.init("cpu", implicit_sync="error")
    _lazy_step(named=False)
    key = lazy_runtime.runtime().last[1].key
    assert _phases(capfd.readouterr().err, key)[0].startswith("0/?, import, ")


def test_torch_compile_graphs_are_dumped_and_explained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("MNCORE_DEBUG", "1")
    torch_mncore.init("task", implicit_sync="error")
    torch._dynamo.reset()

    def scaled_tanh(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * 3  # the compiled line

    x = torch.randn(5)
    torch.testing.assert_close(torch.compile(scaled_tanh, backend="mncore")(x),
                               scaled_tanh(x))
    torch._dynamo.reset()
    err = capsys.readouterr().err
    assert "because of torch.compile (dynamo_" in err and "cause: torch.compile" in err
    first = next((tmp_path / "passes").glob("*.00-input.graph.mlir")).read_text()
    line = line_of(scaled_tanh, "# the compiled line")
    assert f'"{scaled_tanh.__code__.co_filename}":{line}:' in first
    assert sorted(os.listdir(tmp_path / "passes"))[-1].endswith(
        ".05-convert-graph-to-task.task.mlir")


def test_module_mncore_names_its_parameters(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_DUMP_DIR", str(tmp_path))
    torch_mncore.init("cpu", implicit_sync="error")
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).mncore()
    model(torch.randn(5, 4).mncore()).sum().backward()
    torch_mncore.sync()
    (dump,) = tmp_path.glob("*.graph.mlir")
    signature = dump.read_text().splitlines()[1]
    for name in ("%model.0.weight", "%model.0.bias", "%model.1.running_mean"):
        assert name in signature, signature
