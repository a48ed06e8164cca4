"""``mncore-opt`` and ``mncore-run`` as a user runs them: clean errors, right answers."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mncore_ir.frontends.fx import CapturedGraph, import_captured
from mncore_ir.model_zoo import TrainingStep
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import GRAPH_PIPELINE, make_context
from mncore_ir.targets.graph_interpreter import find_function, run_function
from mncore_ir.tools.mncore_run import random_inputs

GetStep = Callable[[str], tuple[TrainingStep, CapturedGraph]]
BIN = Path(sys.executable).parent
MODULES = {"mncore-opt": "mncore_ir.tools.mncore_opt", "mncore-run": "mncore_ir.tools.mncore_run"}

GOOD = """\
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""
UNPARSABLE = """\
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.add %a, %a : tensor<2xf32>,
"""
UNKNOWN_OP = """\
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.frobnicate %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""
FAILS_VERIFICATION = """\
func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  %0 = graph.add %a, %b : tensor<2xf32>, tensor<3xf32> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""


def tool_command(tool: str) -> list[str]:
    """The installed console script next to this Python, else ``python -m``."""
    script = BIN / tool
    return [str(script)] if script.exists() else [sys.executable, "-m", MODULES[tool]]


def run_tool(tool: str, *args: str | Path, cwd: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tool_command(tool), *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def assert_clean_error(result: subprocess.CompletedProcess[str], tool: str,
                       position: str | None = None, contains: str | None = None) -> str:
    """A non-zero exit and exactly one ``tool: ... error`` line on stderr (with
    ``file:line:col`` when ``position`` is given, a regex), no traceback; the line."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{tool}:")]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert "error" in line, line
    if position is not None:
        assert re.match(rf"{tool}: {position}: error: ", line), line
    if contains is not None:
        assert contains in line, line
    return line


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- mncore-opt


@pytest.mark.parametrize(("text", "line", "col", "contains"), [
    (UNPARSABLE, 3, "1", "type expected"),
    (UNKNOWN_OP, 2, r"\d+", "graph.frobnicate"),
    (FAILS_VERIFICATION, 2, "3", "do not broadcast"),
], ids=["unparsable", "unknown-op", "fails-verification"])
@pytest.mark.parametrize("tool", ["mncore-opt", "mncore-run"])
def test_bad_ir_reports_a_position(tool: str, text: str, line: int, col: str, contains: str,
                                   tmp_path: Path) -> None:
    path = write(tmp_path, "bad.mlir", text)
    extra = ["--random-inputs", "0"] if tool == "mncore-run" else []
    result = run_tool(tool, path, *extra)
    assert_clean_error(result, tool, rf"{re.escape(str(path))}:{line}:{col}", contains)
    # The offending source line is shown under the message.
    if text is not UNPARSABLE:
        assert text.splitlines()[line - 1] in result.stderr


@pytest.mark.parametrize(("args", "contains"), [
    (["-p", "no-such-pass"], "no-such-pass"),
    (["-p", "cse{bogus=1}"], "bogus"),
    (["-p", "canonicalize{"], None),
    (["-t", "no-such-target"], "no-such-target"),
], ids=["unknown-pass", "bad-pass-option", "malformed-pipeline", "unknown-target"])
def test_opt_bad_options(args: list[str], contains: str | None, tmp_path: Path) -> None:
    path = write(tmp_path, "good.mlir", GOOD)
    assert_clean_error(run_tool("mncore-opt", path, *args), "mncore-opt", contains=contains)


@pytest.mark.parametrize("tool", ["mncore-opt", "mncore-run"])
def test_missing_file(tool: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.mlir"
    assert_clean_error(run_tool(tool, missing), tool, contains=str(missing))


def test_opt_round_trips_good_input(tmp_path: Path) -> None:
    result = run_tool("mncore-opt", write(tmp_path, "good.mlir", GOOD), "-p",
                      "canonicalize,cse,dce")
    assert result.returncode == 0, result.stderr
    assert "graph.add" in result.stdout and result.stderr == ""


# ---------------------------------------------------------------------- mncore-run


@pytest.mark.parametrize(("args", "position", "pattern"), [
    (["--args", "dense<[1.0, 2.0, 3.0]> : tensor<3xf32>"], None,
     r"(3xf32|\(3,\)).*(2xf32|\(2,\))"),
    (["--args", "dense<[1.0, 2.0]> : tensor<2xf32>", "dense<1.0> : tensor<f32>"], None,
     r"\b1 argument.*\b2\b|\b2\b.*\b1 argument"),
    (["--args", "dense<[1.0, 2.0> : tensor<2xf32>"], r"--args\[0\]:1:\d+", None),
    ([], None, r"--random-inputs"),
    (["--random-inputs", "0", "--function", "nope"], None, "@nope"),
], ids=["wrong-shape", "wrong-count", "bad-literal", "no-inputs", "unknown-function"])
def test_run_bad_inputs(args: list[str], position: str | None, pattern: str | None,
                        tmp_path: Path) -> None:
    """``pattern`` (a regex) must occur in the error line."""
    result = run_tool("mncore-run", write(tmp_path, "good.mlir", GOOD), *args)
    line = assert_clean_error(result, "mncore-run", position)
    if pattern is not None:
        assert re.search(pattern, line), line


def test_run_good_input(tmp_path: Path) -> None:
    result = run_tool("mncore-run", write(tmp_path, "good.mlir", GOOD), "--args",
                      "dense<[1.5, -2.0]> : tensor<2xf32>")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "result0 = tensor<2xf32>: [ 3., -4.]"


def test_run_mlp_training_step_matches_run_function(tmp_path: Path,
                                                    captured_steps: GetStep) -> None:
    """The printed IR of a real training step, run by the tool on random inputs, gives
    what :func:`run_function` gives on the same inputs."""
    _step, captured = captured_steps("mlp_sgd")
    module = import_captured(captured)
    path = write(tmp_path, "mlp.mlir", str(module))
    out = tmp_path / "out.npz"
    result = run_tool("mncore-run", path, "--random-inputs", "0", "--save-outputs", out)
    assert result.returncode == 0, result.stderr
    types = list(find_function(module).function_type.inputs.data)
    expected = run_function(module, random_inputs(types, 0, 4))
    with np.load(out) as saved:
        assert sorted(saved.files) == sorted(f"result{i}" for i in range(len(expected)))
        for i, exp in enumerate(expected):
            got = saved[f"result{i}"]
            assert got.shape == exp.shape and got.dtype == exp.dtype, f"result{i}"
            np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-7, err_msg=f"result{i}")
    printed = [line for line in result.stdout.splitlines() if line.startswith("result")]
    assert len(printed) == len(expected)


def test_opt_pipeline_output_runs_the_same(tmp_path: Path, captured_steps: GetStep) -> None:
    """``mncore-opt -p GRAPH_PIPELINE`` prints IR that parses and computes the same."""
    _step, captured = captured_steps("mlp_sgd")
    module = import_captured(captured)
    result = run_tool("mncore-opt", write(tmp_path, "mlp.mlir", str(module)), "-p",
                      GRAPH_PIPELINE)
    assert result.returncode == 0, result.stderr
    optimized = parse_module(make_context(), result.stdout, "optimized.mlir")
    inputs = random_inputs(list(find_function(module).function_type.inputs.data), 1, 4)
    for got, exp in zip(run_function(optimized, inputs), run_function(module, inputs),
                        strict=True):
        np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-5)


def test_opt_dot_target(tmp_path: Path) -> None:
    result = run_tool("mncore-opt", write(tmp_path, "good.mlir", GOOD), "-t", "dot")
    assert result.returncode == 0, result.stderr
    assert "digraph" in result.stdout
