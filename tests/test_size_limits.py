"""Sizes the tools refuse with a clear diagnostic instead of running out of memory, and
zero-size tensors lowered correctly."""

from __future__ import annotations

import numpy as np
import pytest

from mncore_ir.tools import mncore_opt, mncore_run

CHAIN = """func.func @main(%x: tensor<{n}x8xf32>) -> tensor<{n}x8xf32> {{
  %a = graph.exp %x : tensor<{n}x8xf32>
  %b = graph.neg %a : tensor<{n}x8xf32>
  return %b : tensor<{n}x8xf32>
}}
"""


def run_tool(main, argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
        raise SystemExit(0)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def write(tmp_path, text: str, name: str = "in.mlir") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("n", [2**31, 2**63 - 1])
def test_run_refuses_huge_tensor(tmp_path, capsys, n):
    code, _, err = run_tool(mncore_run.main, [write(tmp_path, CHAIN.format(n=n)),
                                              "--random-inputs", "0"], capsys)
    assert code != 0 and "Traceback" not in err
    assert f"a value of type tensor<{n}x8xf32> takes" in err
    assert "more than the limit of 1,073,741,824 bytes for one tensor" in err


def test_run_max_bytes_option(tmp_path, capsys):
    path = write(tmp_path, CHAIN.format(n=64))
    code, _, err = run_tool(mncore_run.main, [path, "--random-inputs", "0",
                                              "--max-bytes", "1000"], capsys)
    assert code != 0
    assert "tensor<64x8xf32> takes 2,048 bytes, more than the limit of 1,000" in err
    code, out, _ = run_tool(mncore_run.main, [path, "--random-inputs", "0"], capsys)
    assert code == 0 and out.startswith("result0 = tensor<64x8xf32>")


def test_run_refuses_huge_literal_at_its_position(tmp_path, capsys):
    code, _, err = run_tool(mncore_run.main, [
        write(tmp_path, CHAIN.format(n=4)), "--args",
        "dense<1.0> : tensor<2147483648x100xf32>"], capsys)
    assert code != 0
    assert ("--args[0]:1:14: error: a dense literal of type tensor<2147483648x100xf32> "
            "takes more than 1,073,741,824 bytes") in err


def test_run_refuses_huge_task_buffer(tmp_path, capsys):
    kernel = """task.kernel @main(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  task.body @ew0(%1: tensor<f32>) {
    %2 = graph.neg %1 : tensor<f32>
    task.yield %2 : tensor<f32>
  }
  %big = task.buffer : memref<1073741824xf32>
  task.task @ew0 ins(%x[0:4]) outs(%y[0:4])
  task.return
}
"""
    code, _, err = run_tool(mncore_run.main, [write(tmp_path, kernel), "--random-inputs",
                                              "0"], capsys)
    assert code != 0
    assert "task.buffer: a value of type memref<1073741824xf32> takes" in err


def test_graph_rejects_dynamic_sizes_at_parse(tmp_path, capsys):
    text = """func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
"""
    path = write(tmp_path, text)
    code, _, err = run_tool(mncore_opt.main, [path], capsys)
    assert code != 0
    assert (f"{path}:1:1: error: func.func: tensor<?x4xf32> has a dynamic size; the "
            "graph level needs static shapes") in err


@pytest.mark.parametrize("text, position, message", [
    ("""task.kernel @main(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  task.body @ew0(%1: tensor<f32>) {
    %2 = graph.neg %1 : tensor<f32>
    task.yield %2 : tensor<f32>
  }
  %b = task.buffer : memref<?xf32>
  task.task @ew0 ins(%x[0:4]) outs(%y[0:4])
  task.return
}
""", "6:3", "task.buffer: memref<?xf32> has a dynamic size; the task level needs static"),
    ("""mncore.program @p machine "tiny" {
  mncore.tensor @x input dram[0] : tensor<5x?xf32>
}
""", "2:3", "mncore.tensor: tensor<5x?xf32> has a dynamic size; the mncore level needs"),
])
def test_lower_levels_reject_dynamic_sizes_at_parse(tmp_path, capsys, text: str,
                                                    position: str, message: str) -> None:
    """mncore-run would draw inputs of a negative size from them."""
    path = write(tmp_path, text)
    code, _, err = run_tool(mncore_opt.main, [path], capsys)
    assert code != 0
    assert f"{path}:{position}: error: {message}" in err


def test_task_conversion_refuses_unaddressable_tensor(tmp_path, capsys):
    path = write(tmp_path, CHAIN.format(n=2**63 - 1))
    code, _, err = run_tool(mncore_opt.main, [path, "-p", "convert-graph-to-task"], capsys)
    assert code != 0 and "Traceback" not in err
    assert (f"{path}:1:1: error: func.func: tensor<9223372036854775807x8xf32> has "
            "73,786,976,294,838,206,456 elements, more than the 2,147,483,647 a task-level "
            "buffer can address") in err


def test_task_conversion_counts_tasks_first(tmp_path, capsys):
    path = write(tmp_path, CHAIN.format(n=4096))
    code, _, err = run_tool(mncore_opt.main, [
        path, "-p", "convert-graph-to-task{max_tasks=10}"], capsys)
    assert code != 0
    assert (f"{path}:3:3: error: graph.neg: lowering it would make 16 tasks in @main, "
            "more than max_tasks=10") in err


def test_zero_size_tensors_lower_to_no_tasks(tmp_path, capsys):
    text = """func.func @main(%x: tensor<0x8xf32>, %b: tensor<8xf32>) -> tensor<0x8xf32> {
  %a = graph.add %x, %b : tensor<0x8xf32>, tensor<8xf32> -> tensor<0x8xf32>
  %r = graph.relu %a : tensor<0x8xf32>
  return %r : tensor<0x8xf32>
}
"""
    path = write(tmp_path, text)
    code, out, err = run_tool(mncore_opt.main, [path, "-p", "convert-graph-to-task"], capsys)
    assert code == 0, err
    lowered = write(tmp_path, out, "task.mlir")
    args = ["--args", "dense<> : tensor<0x8xf32>", "dense<1.0> : tensor<8xf32>"]
    results = []
    for source in (path, lowered):
        out_file = str(tmp_path / f"{len(results)}.npz")
        code, _, err = run_tool(mncore_run.main, [source, *args, "--save-outputs", out_file],
                                capsys)
        assert code == 0, err
        results.append(np.load(out_file)["result0"])
    assert results[0].shape == results[1].shape == (0, 8)


@pytest.mark.parametrize("lhs, rhs, out", [
    ("0x3", "3x4", "0x4"), ("2x3", "3x0", "2x0"), ("0x0", "0x4", "0x4"), ("2x0", "0x0", "2x0"),
    ("0x2x3", "0x3x4", "0x2x4")])
def test_zero_size_matmuls_lower_to_no_tasks(tmp_path, capsys, lhs, rhs, out):
    """An empty product needs no task (its tile sizes were 0, a division by zero in the
    pass); the task level runs it."""
    text = f"""func.func @main(%a: tensor<{lhs}xf32>, %b: tensor<{rhs}xf32>) -> tensor<{out}xf32> {{
  %c = graph.matmul %a, %b : tensor<{lhs}xf32>, tensor<{rhs}xf32> -> tensor<{out}xf32>
  return %c : tensor<{out}xf32>
}}
"""
    path = write(tmp_path, text)
    code, lowered, err = run_tool(mncore_opt.main, [path, "-p", "convert-graph-to-task"],
                                  capsys)
    assert code == 0, err
    assert "task.task" not in lowered
    out_file = str(tmp_path / "out.npz")
    code, _, err = run_tool(mncore_run.main, [
        write(tmp_path, lowered, "task.mlir"), "--args",
        *(f"dense<{'' if '0' in t.split('x') else '1.0'}> : tensor<{t}xf32>" for t in (lhs, rhs)),
        "--save-outputs", out_file], capsys)
    assert code == 0, err
    assert np.load(out_file)["result0"].shape == tuple(int(n) for n in out.split("x"))


def test_zero_size_reduction_is_refused_clearly(tmp_path, capsys):
    text = """func.func @main(%x: tensor<0x8xf32>) -> tensor<8xf32> {
  %s = graph.sum %x dims = array<i64: 0> : tensor<0x8xf32> -> tensor<8xf32>
  return %s : tensor<8xf32>
}
"""
    path = write(tmp_path, text)
    code, _, err = run_tool(mncore_opt.main, [path, "-p", "convert-graph-to-task"], capsys)
    assert code != 0
    assert (f"{path}:2:3: error: graph.sum: a task would read a zero-size region to make a "
            "non-empty result") in err
