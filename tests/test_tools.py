"""``mncore-opt`` and ``mncore-run`` as a user runs them: clean errors, right answers."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import ParseError

from mncore_ir import pipeline
from mncore_ir.dialects import graph as g
from mncore_ir.frontends.fx import CapturedGraph, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import (
    GRAPH_PIPELINE,
    InvalidIRError,
    PassError,
    apply_pipeline,
    make_context,
)
from mncore_ir.registry import get_all_passes
from mncore_ir.targets.graph_interpreter import find_function, run_function
from mncore_ir.testing.model_zoo import TrainingStep
from mncore_ir.tools.diagnostics import parse_expectations
from mncore_ir.tools.errors import cli_errors
from mncore_ir.tools.mncore_opt import MNCoreOptMain
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


# ------------------------------------------- mncore-opt: -o, checks after passes, diagnostics


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_opt_output_file_mode_follows_umask(umask: int, mode: int, tmp_path: Path) -> None:
    """``-o`` creates its file as ``open`` would (0666 less the umask), not 0600."""
    source, out = write(tmp_path, "good.mlir", GOOD), tmp_path / "out.mlir"
    assert run_opt_in_process(["-o", str(out), str(source)], umask=umask) == 0
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert "graph.add" in out.read_text()


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_opt_output_file_keeps_mode_and_link(umask: int, tmp_path: Path) -> None:
    """Replacing an existing ``-o`` file keeps its mode, and a symbolic link to it."""
    source, out = write(tmp_path, "good.mlir", GOOD), tmp_path / "out.mlir"
    out.write_text("old")
    out.chmod(0o664)
    link = tmp_path / "link.mlir"
    link.symlink_to(out)
    assert run_opt_in_process(["-o", str(link), str(source)], umask=umask) == 0
    assert link.is_symlink() and "graph.add" in out.read_text()
    assert stat.S_IMODE(out.stat().st_mode) == 0o664
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_opt_output_file_in_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "out.mlir"
    result = run_tool("mncore-opt", write(tmp_path, "good.mlir", GOOD), "-o", missing)
    assert_clean_error(result, "mncore-opt", contains=f"cannot write {missing}")


def test_opt_output_that_is_a_folder(tmp_path: Path) -> None:
    """``-o`` naming a folder: one message, not the errno of the temporary file's rename
    (found by a probe), and nothing left beside it."""
    folder = tmp_path / "out"
    folder.mkdir()
    result = run_tool("mncore-opt", write(tmp_path, "good.mlir", GOOD), "-o", folder)
    assert_clean_error(result, "mncore-opt", contains=f"cannot write {folder}: it is a directory")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


TWO_NEGS = """\
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.neg %a : tensor<2xf32>
  %1 = graph.neg %0 : tensor<2xf32>
  func.return %1 : tensor<2xf32>
}
"""


@dataclass(frozen=True)
class UseBeforeDefPass(ModulePass):
    """A broken pass: moves each function's first op to just before its return, after
    the op that uses its result."""

    name = "test-use-before-def"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.walk():
            if isinstance(func, FuncOp):
                block = func.body.block
                first = block.first_op
                assert first is not None and block.last_op is not None
                first.detach()
                block.insert_op_before(first, block.last_op)


@dataclass(frozen=True)
class WrongTypePass(ModulePass):
    """A broken pass: gives the last graph.neg a result type its verifier rejects."""

    name = "test-wrong-type"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        neg = [o for o in op.walk() if isinstance(o, g.NegOp)][-1]
        Rewriter.replace_value_with_new_type(neg.results[0], TensorType(f32, [3]))


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """A pass with a bug (not a diagnosis of its input)."""

    name = "test-crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise KeyError("boom")


@dataclass(frozen=True)
class WarnPass(ModulePass):
    """A pass that warns."""

    name = "test-warn"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warnings.warn("this pass is only a test", stacklevel=1)


TEST_PASSES: list[type[ModulePass]] = [UseBeforeDefPass, WrongTypePass, CrashPass, WarnPass]


class OptWithTestPasses(MNCoreOptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        for cls in TEST_PASSES:
            self.register_pass(cls.name, lambda cls=cls: cls)


def run_opt_in_process(argv: list[str], umask: int | None = None) -> int | str | None:
    """``mncore-opt argv`` (with the test passes) in this process: its exit status."""
    old = os.umask(umask) if umask is not None else None
    try:
        with cli_errors("mncore-opt"):
            OptWithTestPasses("test", argv).run()
    except SystemExit as exit_:
        return exit_.code
    finally:
        if old is not None:
            os.umask(old)
    return 0


def test_apply_pipeline_checks_dominance_after_each_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "get_all_passes", lambda: {
        **get_all_passes(), UseBeforeDefPass.name: lambda: UseBeforeDefPass})
    module = parse_module(make_context(), TWO_NEGS)
    with pytest.raises(InvalidIRError, match=r"^the IR after pass 'test-use-before-def' is "
                                             r"invalid: operand 0 of graph\.neg .*before "
                                             r"definition") as info:
        apply_pipeline(module, "cse,test-use-before-def,dce")
    assert info.value.pass_name == "test-use-before-def"


def test_apply_pipeline_names_the_pass_of_an_internal_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "get_all_passes", lambda: {
        **get_all_passes(), CrashPass.name: lambda: CrashPass})
    with pytest.raises(PassError, match=r"^internal error in pass 'test-crash': "
                                        r"KeyError: 'boom'$") as info:
        apply_pipeline(parse_module(make_context(), TWO_NEGS), "cse,test-crash")
    assert isinstance(info.value.__cause__, KeyError)


@pytest.mark.parametrize(("pass_name", "position", "message"), [
    ("test-use-before-def", ":3:3", r"the IR after pass 'test-use-before-def' is invalid: "
                                    r"operand 0 of graph\.neg"),
    ("test-wrong-type", ":3:3", r"the IR after pass 'test-wrong-type' is invalid: "
                                r".*tensor<3xf32>"),
], ids=["dominance", "verifier"])
def test_opt_invalid_ir_after_a_pass(pass_name: str, position: str, message: str,
                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    """Invalid IR after a pass names the pass, at the parsed op it blames."""
    path = write(tmp_path, "f.mlir", TWO_NEGS)
    assert run_opt_in_process(["-p", f"cse,{pass_name}", str(path)]) == 1
    err = capsys.readouterr().err
    assert re.match(rf"mncore-opt: {re.escape(str(path))}{position}: error: {message}",
                    err, re.S), err
    assert err.count("mncore-opt:") == 1 and TWO_NEGS.splitlines()[2] in err.splitlines()


def test_opt_internal_error_names_the_pass(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "f.mlir", TWO_NEGS)
    assert run_opt_in_process(["-p", "cse,test-crash", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == "mncore-opt: internal error in pass 'test-crash': KeyError: 'boom'\n"


def test_opt_internal_error_traceback_on_request(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_TRACEBACK", "1")
    with pytest.raises(PassError) as info:
        run_opt_in_process(["-p", "test-crash", str(write(tmp_path, "f.mlir", TWO_NEGS))])
    assert isinstance(info.value.__cause__, KeyError)


def test_opt_internal_error_is_not_a_diagnostic(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """--verify-diagnostics does not match an internal error: it stops the run."""
    text = "// expected-error@unknown {{boom}}\n" + TWO_NEGS
    path = write(tmp_path, "f.mlir", text)
    assert run_opt_in_process(["-p", "test-crash", "--verify-diagnostics", str(path)]) == 1
    assert capsys.readouterr().err.startswith("mncore-opt: internal error in pass 'test-crash'")


def test_verify_diagnostics_pass_errors_at_their_ops(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """Errors raised after passes, at the parsed op they blame, in the second chunk
    (line numbers of the whole file), and warnings of passes, are matched."""
    chunk = TWO_NEGS.replace("  %1 = graph.neg",
                             "  // expected-error@+1 {{after pass 'test-wrong-type'}}\n"
                             "  %1 = graph.neg")
    text = f"{TWO_NEGS}// -----\n{chunk}"
    path = write(tmp_path, "f.mlir", text)
    argv = ["--split-input-file", "--verify-diagnostics", str(path)]
    # the first chunk's error is unexpected: reported at line 3 of the file
    assert run_opt_in_process(["-p", "test-wrong-type", *argv]) == 1
    err = capsys.readouterr().err
    assert re.findall(r"^mncore-opt: \S+:(\d+):\d+: error: (\w+ \w+)", err, re.M) == [
        ("3", "unexpected error")], err
    # the second chunk's directive is met, and a warning is expected in each chunk
    (tmp_path / "f.mlir").write_text(
        text.replace("-> tensor<2xf32> {", "-> tensor<2xf32> { "
                     "// expected-warning@unknown {{this pass is only a test}}")
        .replace("%1 = graph.neg %0 : tensor<2xf32>\n  func.return",
                 "%1 = graph.neg %0 : tensor<2xf32>\n  // expected-error@-1 "
                 "{{after pass 'test-wrong-type'}}\n  func.return", 1))
    assert run_opt_in_process(["-p", "test-warn,test-wrong-type", *argv]) == 0, \
        capsys.readouterr().err


@pytest.mark.parametrize(("directive", "error"), [
    ("// expected-error@+x {{m}}", "malformed directive"),
    ("// expected-error@+1 {{m}", "malformed directive"),
    ("// expected-error@-9 {{m}}", "points before the first line"),
    ("// expected-error-re {{a{{(}}b}}", "invalid regular expression"),
    ("// expected-error@below {{m}}", "has no line below it"),
])
def test_malformed_directives(directive: str, error: str) -> None:
    with pytest.raises(ParseError, match=re.escape(error)):
        parse_expectations(f"// line 1\n{directive}", "f.mlir")


def test_directives_in_prose_are_not_directives() -> None:
    assert parse_expectations("// every chunk has its expected-error directive\n", "f") == []


def test_expectation_lines() -> None:
    """Each designator's line, in file lines (the chunk starts after line 10)."""
    text = "\n".join([
        "op // expected-error {{same}}",            # line 11
        "// expected-error@+2 {{plus}}",            # line 12
        "// expected-note@below {{below}}",         # line 13
        "op",                                       # line 14
        "// expected-warning@above {{above}}",      # line 15
        "// expected-remark@-4 {{minus}}",          # line 16
        "// expected-error@unknown {{unknown}}",    # line 17
        "// expected-error-re {{a{{[0-9]+}}.b}}",   # line 18
    ])
    found = parse_expectations(text, "f.mlir", line_offset=10)
    assert [(e.severity, e.text, e.line) for e in found] == [
        ("error", "same", 11), ("error", "plus", 14), ("note", "below", 14),
        ("warning", "above", 14), ("remark", "minus", 12), ("error", "unknown", None),
        ("error", "a{{[0-9]+}}.b", 18)]
    regex = found[-1].pattern
    assert regex.search("xa12.b") and not regex.search("a12xb") and not regex.search("a.b")


def test_split_input_file_cuts_only_at_separator_lines(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """``// -----`` inside a line (here a comment) does not cut the input, as in mlir-opt;
    a separator line does, and positions stay those of the whole file."""
    text = GOOD.replace("  func.return", "  // parts are cut at '// -----' lines\n"
                        "  func.return") + "// -----\n" + FAILS_VERIFICATION
    path = write(tmp_path, "f.mlir", text)
    assert run_opt_in_process(["--split-input-file", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out.count("func.func @f") == 1 and "parts are cut" not in out
    assert err.startswith(f"mncore-opt: {path}:8:3: error: "), err
