"""Regressions of the mutation fuzzer's findings at the task and mncore levels: each
input once crashed a tool with a Python exception or ran past the fuzzer's time limit;
now it is a diagnosis, at its source position for IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.utils.exceptions import ParseError

from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import make_context
from mncore_ir.tools import mncore_opt
from tests.fuzz.mutate import seed_files
from tests.fuzz.run import MAX_INSTRUCTIONS, MAX_TASKS, mncore_pipeline, task_pipeline

ROOT = Path(__file__).resolve().parent.parent


def parse_error(text: str) -> tuple[str, int, int]:
    """The message, line and column of the parse error ``text`` gets."""
    with pytest.raises(ParseError) as info:
        parse_module(make_context(), text, "t.mlir")
    loc = info.value.span.get_location()
    assert loc.file == "t.mlir"
    return info.value.msg, loc.line, loc.col


def kernel(region: str = "0:4", attributes: str = "") -> str:
    """A one-task kernel copying ``%x[region]`` (its task on line 7), with the kernel's
    ``attributes``."""
    return ("builtin.module {\n"
            f"  task.kernel @main(%x: memref<4xf32>) -> (%y: memref<4xf32>){attributes} {{\n"
            "    task.body @permute(%a: tensor<4xf32>) {\n"
            "      %p = graph.permute %a perm = array<i64: 0> : tensor<4xf32> -> tensor<4xf32>\n"
            "      task.yield %p : tensor<4xf32>\n"
            "    }\n"
            f"    task.task @permute ins(%x[{region}]) outs(%y[0:4])\n"
            "    task.return\n"
            "  }\n"
            "}\n")


# ------------------------------------------------------- region literals outside i64


@pytest.mark.parametrize(("region", "message", "col"), [
    ("0:-9223372036854775809", "region end -9223372036854775809 is out of range for i64", 33),
    ("9223372036854775808:4", "region start 9223372036854775808 is out of range for i64", 31),
    ("-9223372036854775808:9223372036854775807",
     "region size 18446744073709551615 of -9223372036854775808:9223372036854775807 is out "
     "of range for i64", 31),
])
def test_a_region_bound_outside_i64_is_a_parse_error_at_it(region: str, message: str,
                                                           col: int) -> None:
    assert parse_error(kernel(region)) == (message, 7, col)


def test_a_region_inside_i64_but_out_of_bounds_is_still_the_verifiers() -> None:
    message, line, _ = parse_error(kernel("-1:4"))
    assert line == 7
    assert message == "task.task input 0: region [-1:4] is out of bounds in dimension 0 (size 4)"


# ----------------------------------------------- attributes of unsupported scalar types


@pytest.mark.parametrize("element", ["f80", "f128"])
def test_a_float_attribute_xdsl_cannot_print_is_a_parse_error_at_it(element: str) -> None:
    # bias_square_scale.mlir@task with every i64 -> f80: printing the diagnosis crashed
    text = kernel(attributes=f" attributes {{workers = 132 : {element}}}")
    assert parse_error(text) == (f"float attributes of type {element} are not supported",
                                 2, 85)


@pytest.mark.parametrize("element", ["i128", "f16", "bf16"])
def test_a_kernel_attribute_of_an_unsupported_type_is_refused(element: str) -> None:
    text = kernel(attributes=f" attributes {{workers = 132 : {element}}}")
    message, line, col = parse_error(text)
    assert (line, col) == (2, 3)
    assert message.startswith(f"task.kernel: element type {element} is not supported at the "
                              "task level")


def test_a_kernel_attribute_of_a_supported_type_parses() -> None:
    parse_module(make_context(), kernel(attributes=" attributes {workers = 132 : i64}"),
                 "t.mlir")


# ----------------------------------------------------------------- the compile budget

CHAIN = ROOT / "lit_tests" / "transforms" / "Inputs" / "chain.mlir"


def opt(capsys: pytest.CaptureFixture[str], path: Path, pipeline: str) -> tuple[int, str]:
    """Exit status and stderr of ``mncore-opt path -p pipeline``."""
    with pytest.raises(SystemExit) as info:
        mncore_opt.main([str(path), "-p", pipeline])
    return info.value.code, capsys.readouterr().err  # type: ignore[return-value]


def test_a_program_over_the_budget_is_refused_quickly(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    # the chain with every 8 -> 100000 ran for many seconds in convert-task-to-mncore
    path = tmp_path / "chain.mlir"
    path.write_text(CHAIN.read_text().replace("8", "100000"))
    code, err = opt(capsys, path, "graph-fuse-elementwise,convert-graph-to-task{target=mncore},"
                                  "convert-task-to-mncore{machine=tiny max_instructions=5000}")
    assert code != 0
    # at the op whose task went over it: the fused chain's first op (line 3)
    assert err.splitlines()[0] == (
        f"mncore-opt: {path}:3:3: error: convert-task-to-mncore: the program needs more than "
        "5,000 instructions; raise max_instructions or tile smaller")


def test_a_program_within_the_budget_compiles(capsys: pytest.CaptureFixture[str]) -> None:
    mncore_opt.main([str(CHAIN), "-p", "convert-graph-to-task{target=mncore},"
                     "convert-task-to-mncore{machine=tiny max_instructions=5000}"])
    assert "mncore.program" in capsys.readouterr().out


def test_max_instructions_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = opt(capsys, CHAIN, "convert-graph-to-task{target=mncore},"
                                   "convert-task-to-mncore{max_instructions=0}")
    assert code != 0
    assert "max_instructions must be at least 1, not 0" in err


def test_a_buffer_larger_than_dram_is_refused_before_any_analysis(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # a task buffer of 2**63 - 1 rows (a mutated size) reached the views' analysis,
    # which allocated an array of its shape: numpy's "array is too big"
    text = kernel().replace(
        "    task.task @permute ins(%x[0:4]) outs(%y[0:4])\n",
        "    %b = task.buffer : memref<9223372036854775807xf32>\n"
        "    %e = task.event triggers 1\n"
        "    task.task @permute ins(%x[0:4]) outs(%b[0:4]) signal(%e)\n"
        "    task.task @permute ins(%b[0:4]) outs(%y[0:4]) waits(%e)\n")
    path = tmp_path / "huge.mlir"
    path.write_text(text)
    code, err = opt(capsys, path, "convert-task-to-mncore{machine=tiny}")
    assert code != 0
    assert "huge.mlir:7:5: error: convert-task-to-mncore: buffer %b (9223372036854775807 " \
        "words) does not fit in dram (1048576 words on tiny)" in err


# --------------------------------------------------------------------------- the fuzzer


def test_the_fuzzers_mncore_pipeline_has_a_small_budget() -> None:
    assert mncore_pipeline().endswith(
        f'convert-task-to-mncore{{machine="tiny" max_instructions={MAX_INSTRUCTIONS}}},'
        'mncore-forward-stores,mncore-schedule')


def test_seeds_ignore_lits_output_folders(tmp_path: Path) -> None:
    for rel in ("lit_tests/a.mlir", "lit_tests/x/Output/a.mlir.tmp.mlir",
                "lit_tests/Inputs/b.mlir", "examples/c.mlir", "examples/Output/d.mlir"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert [p.relative_to(tmp_path).as_posix() for p in seed_files(tmp_path)] == [
        "examples/c.mlir", "lit_tests/Inputs/b.mlir", "lit_tests/a.mlir"]


# ----------------------------------------------- results computed from zero-size regions

LAYER_NORM_OF_NOTHING = """\
func.func @f(%x: tensor<2x4x0xf32>, %w: tensor<0xf32>) -> tensor<2x4x1xf32> {
  %y, %mean, %rstd = graph.layer_norm %x, %w, %w dims 1 eps 1.0e-05
      : tensor<2x4x0xf32>, tensor<0xf32>, tensor<0xf32>
      -> tensor<2x4x0xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>
  func.return %mean : tensor<2x4x1xf32>
}
"""

GRADIENTS_OF_NO_ROWS = """\
func.func @f(%dy: tensor<0x4x8xf32>, %x: tensor<0x4x8xf32>, %m: tensor<0x4x1xf32>,
             %w: tensor<8xf32>) -> tensor<8xf32> {
  %dx, %dw, %db = graph.layer_norm_backward %dy, %x, %m, %m, %w dims 1
      : tensor<0x4x8xf32>, tensor<0x4x1xf32>, tensor<8xf32>
      -> tensor<0x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  func.return %dw : tensor<8xf32>
}
"""


@pytest.mark.parametrize(("source", "message"), [
    (LAYER_NORM_OF_NOTHING, "graph.layer_norm: result 1 would be computed from zero-size "
                            "regions only, which the task level cannot express"),
    (GRADIENTS_OF_NO_ROWS, "graph.layer_norm_backward: result 1 would be computed from "
                           "zero-size regions only, which the task level cannot express"),
])
def test_a_result_read_from_zero_size_regions_only_is_refused_at_its_op(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str, message: str) -> None:
    # graph-decompose.mlir with every size 2 -> 0 (or 8 -> 0): the kernel failed the
    # written-once check after convert-graph-to-task, as no task wrote these results
    path = tmp_path / "norms.mlir"
    path.write_text(source)
    code, err = opt(capsys, path, "convert-graph-to-task")
    assert code != 0
    line = 2 if source is LAYER_NORM_OF_NOTHING else 3
    assert f"norms.mlir:{line}:3: error: {message}" in err


def test_the_differential_gives_executors_read_only_views_of_the_inputs() -> None:
    from tests.fuzz.worker import read_only

    x = np.arange(4.0)
    [view] = read_only([x])
    assert np.shares_memory(view, x)  # no copy of a large input
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 1.0
    assert x.flags.writeable


def test_the_differentials_task_level_has_the_task_budget() -> None:
    assert task_pipeline() == f"convert-graph-to-task{{max_tasks={MAX_TASKS}}}"


def test_a_matmul_permuted_of_the_input_is_tiled_per_matrix() -> None:
    """``graph.matmul_permuted`` written in the input (not made from a permute by
    convert-graph-to-task) with batch dimensions was one task over whole tensors, which
    the task verifier refuses (a matmul task reads one matrix); now it is tiled as a
    matmul is, and the task level matches the graph level."""
    from mncore_ir.pipeline import apply_pipeline
    from mncore_ir.targets.graph_interpreter import run_function
    from mncore_ir.targets.task_simulator import find_kernel, simulate

    text = ("func.func @main(%q: tensor<1x2x3x4xf32>, %k: tensor<7x1x2x4xf32>) -> "
            "tensor<1x2x3x7xf32> {\n"
            "  %s = graph.matmul_permuted %q, %k rhs_perm = array<i64: 1, 2, 3, 0> : "
            "tensor<1x2x3x4xf32>, tensor<7x1x2x4xf32> -> tensor<1x2x3x7xf32>\n"
            "  func.return %s : tensor<1x2x3x7xf32>\n}")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 2, 3, 4)).astype(np.float32),
              rng.standard_normal((7, 1, 2, 4)).astype(np.float32)]
    module = parse_module(make_context(), text, "t.mlir")
    (expected,) = run_function(module, inputs)
    apply_pipeline(module, "convert-graph-to-task{matmul_tile=2,4}")
    assert len(find_kernel(module).tasks()) == 2 * 2 * 2  # 2 matrices x 2 x 2 tiles
    (got,) = simulate(find_kernel(module), inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
