"""The mutation fuzzer: a fixed slice of its inputs must give no traceback, no internal
error, no hang, no memory blow-up, no crash and no mismatch between levels; and the
harness must tell those apart from diagnoses."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from mncore_ir import pipeline
from mncore_ir.parsing import parse_module
from mncore_ir.tools import errors, mncore_opt
from mncore_ir.tools.errors import cli_errors
from tests.fuzz.mutate import load_seeds, mutate, seed_files
from tests.fuzz.run import fuzz, mncore_pipeline, report, run_cases
from tests.fuzz.worker import (
    DIAGNOSED,
    FAILURES,
    HANG,
    INTERNAL,
    MEMORY,
    MISMATCH,
    ROOT,
    TRACEBACK,
    UNLOCATED,
    Case,
    compare,
    error_info,
    install_describe_hook,
    run_tool,
)

#: The slice run on every test run (make fuzz runs 10,000 inputs).
COUNT, SEED = 300, 2024


def test_fuzz_slice(tmp_path: Path) -> None:
    summary = fuzz(COUNT, SEED, differential=True, jobs=2, out=tmp_path)
    assert len(summary.results) == COUNT
    assert summary.failures() == 0, report(summary, tmp_path, show=20)


def test_mutants_depend_only_on_seed_and_index() -> None:
    import random

    seeds = load_seeds(ROOT, seed_files(ROOT))
    chosen = seeds["lit_tests/transforms/Inputs/lanes.mlir"][0]
    first = [mutate(random.Random(f"7/{i}"), chosen) for i in range(20)]
    again = [mutate(random.Random(f"7/{i}"), chosen) for i in range(20)]
    assert first == again
    assert len({m.text for m in first}) > 15
    assert all(1 <= len(m.mutations) <= 4 and m.text != chosen.text for m in first)


@pytest.fixture
def describe_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's recording ``describe``, undone after the test."""
    monkeypatch.setattr(errors, "describe", errors.describe)
    install_describe_hook()


def raises_in_tool(error: BaseException) -> None:
    with cli_errors("tool"):
        raise error


@pytest.mark.usefixtures("describe_hook")
def test_internal_exception_message_is_internal() -> None:
    result, _ = run_tool("opt", lambda argv: raises_in_tool(KeyError("dim")), [])
    assert result.outcome == INTERNAL
    assert result.exit_code == 1
    assert result.message == "tool: error: 'dim'"
    assert result.error is not None
    assert result.error.label().startswith("KeyError at tests/test_fuzz.py:")


@pytest.mark.usefixtures("describe_hook")
def test_parse_error_is_diagnosed(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  graph.nope\n}\n")
    result, _ = run_tool("opt", mncore_opt.main, [str(path)])
    assert result.outcome == DIAGNOSED, result.message
    assert f"{path}:" in result.message and "graph.nope is not registered" in result.message


def test_exception_escaping_main_is_traceback() -> None:
    def main(argv: list[str]) -> None:
        raise ValueError("escaped")

    result, _ = run_tool("opt", main, [])
    assert result.outcome == TRACEBACK
    assert result.last_line() == "ValueError: escaped"


@dataclass(frozen=True)
class DropReturns(ModulePass):
    """Leaves functions without their terminator: IR that does not verify."""

    name = "drop-returns"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ret in [o for o in op.walk() if isinstance(o, ReturnOp)]:
            ret.detach()
            ret.erase()


def test_invalid_ir_between_passes_blames_the_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    passes = pipeline.get_all_passes()
    monkeypatch.setattr(pipeline, "get_all_passes",
                        lambda: {**passes, "drop-returns": lambda: DropReturns})
    text = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}"
    module = parse_module(pipeline.make_context(), text)
    with pytest.raises(VerifyException) as after_pass:
        pipeline.apply_pipeline(module, "drop-returns")
    info = error_info(after_pass.value)
    assert (info.after_pass, info.outcome()) == ("drop-returns", INTERNAL)
    with pytest.raises(VerifyException) as before_any:  # the input itself is invalid now
        pipeline.apply_pipeline(module, "cse")
    info = error_info(before_any.value)
    assert (info.after_pass, info.outcome()) == ("", UNLOCATED)


def busy(argv: list[str]) -> None:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass


def hog(argv: list[str]) -> None:
    block = np.ones(250 * 2**20 // 8)  # touched: 250 MB resident
    time.sleep(10)
    del block


@pytest.mark.parametrize(("main", "outcome", "where"), [(busy, HANG, "busy"),
                                                        (hog, MEMORY, "hog")])
def test_hang_and_memory_stop_the_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         main: object, outcome: str, where: str) -> None:
    monkeypatch.setattr(mncore_opt, "main", main)  # the forked worker inherits it
    start = time.monotonic()
    [result] = run_cases([Case(0, b"", "")], jobs=1, timeout=1.0, memory_mb=100,
                         workdir=tmp_path)
    assert time.monotonic() - start < 8
    assert result.outcome == outcome
    [stage] = result.stages
    assert stage.stage == "opt"
    assert "tests/test_fuzz.py" in stage.where and f"({where})" in stage.where


def test_differential_reports_a_level_that_disagrees(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    from mncore_ir.targets import task_simulator

    simulate = task_simulator.simulate

    def off_by_one(*args: object, **kwargs: object) -> list[np.ndarray]:
        return [out + 1 for out in simulate(*args, **kwargs)]

    monkeypatch.setattr(task_simulator, "simulate", off_by_one)  # inherited by the worker
    chain = (ROOT / "lit_tests/transforms/Inputs/chain.mlir").read_bytes()
    [result] = run_cases([Case(0, chain, "", (1, 2), True, mncore_pipeline())], jobs=1,
                         timeout=30, memory_mb=1024, workdir=tmp_path)
    outcomes = {(stage.stage, stage.outcome) for stage in result.stages}
    assert outcomes == {("opt", "ok"), ("run", "ok"), ("diff:graph", "ok"),
                        ("diff:task-run", MISMATCH), ("diff:mncore-run", "ok")}
    assert result.outcome == MISMATCH
    assert "@main at task (order 1): result0: 32 of 32 elements differ" in \
        result.failure().message


def test_compare_tolerance_nan_and_integers() -> None:
    x = np.array([1.0, np.nan, np.inf], dtype=np.float32)
    assert compare([x], [x + np.float32(5e-5)]) is None
    assert "1 of 3 elements differ; at (0,)" in compare([x], [x + np.float32(1e-2)])
    assert compare([x], [np.array([1.0, 0.0, np.inf], dtype=np.float32)]) is not None
    ints = np.array([1, 2], dtype=np.int64)
    assert compare([ints], [ints + 1]) is not None
    assert "dtype" in compare([ints], [ints.astype(np.int32)])
    assert "shape" in compare([ints], [ints[:1]])
    assert set(FAILURES) >= {TRACEBACK, INTERNAL, HANG, MEMORY}
