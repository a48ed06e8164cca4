"""Indices out of range at run time: the graph interpreter and the task simulator refuse
them as torch does, naming the op, the index and the valid range, and mncore-run points
at the op's source line; the negative indices torch accepts (index_put) count from the
end, the others (embedding, gather, scatter) are refused instead of wrapping silently."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from xdsl.utils.exceptions import ParseError

from mncore_ir.dialects import task as t
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import InterpretationError, run_function
from mncore_ir.targets.graph_torch import compile_module
from mncore_ir.targets.task_simulator import find_kernel, simulate
from mncore_ir.tools import mncore_run

CTX = make_context()

def function(params: str, result: str, *body: str) -> str:
    """``@main(params) -> result`` running ``body`` and returning ``%r``."""
    lines = "".join(f"  {line}\n" for line in body)
    return (f"func.func @main({params}) -> {result} {{\n{lines}"
            f"  func.return %r : {result}\n}}\n")


X53, X46 = "tensor<5x3xf32>", "tensor<4x6xf32>"
#: One function per index op, with the size of the dimension its index operand ``%i``
#: indexes, and that dimension.
CASES = {
    "embedding": (function(
        f"%w: {X53}, %i: tensor<2xi64>", "tensor<2x3xf32>",
        f"%r = graph.embedding %w[%i] : {X53}, tensor<2xi64> -> tensor<2x3xf32>"), 5, 0),
    "gather": (function(
        f"%x: {X46}, %i: tensor<4x2xi64>", "tensor<4x2xf32>",
        f"%r = graph.gather %x[%i] dim 1 : {X46}, tensor<4x2xi64> -> tensor<4x2xf32>"), 6, 1),
    "scatter": (function(
        f"%x: {X46}, %i: tensor<4x2xi64>", X46,
        "%v = graph.constant dense<2.5> : tensor<f32>",
        f"%r = graph.scatter %x[%i] dim -1, %v : {X46}, tensor<4x2xi64>, tensor<f32> -> {X46}"),
        6, 1),
    "index_put": (function(
        f"%x: {X53}, %i: tensor<2xi64>", X53,
        "%v = graph.constant dense<1.5> : tensor<f32>",
        f"%r = graph.index_put %x[%i], %v : {X53}, tensor<2xi64>, tensor<f32> -> {X53}"), 5, 0),
    "index_put_accumulate": (function(
        f"%x: {X53}, %i: tensor<2xi64>", X53,
        "%v = graph.constant dense<1.5> : tensor<f32>",
        f"%r = graph.index_put %x[%i], %v accumulate = true : {X53}, tensor<2xi64>, "
        f"tensor<f32> -> {X53}"), 5, 0),
}
#: The ops whose negative indices torch counts from the end.
WRAPS = {"index_put", "index_put_accumulate"}


def inputs(name: str, bad: int) -> list[np.ndarray]:
    """The op's data and an index operand holding ``bad`` (and a valid index)."""
    text, _, _ = CASES[name]
    module = parse_module(CTX, text)
    x_type, i_type = module.body.block.first_op.function_type.inputs.data  # type: ignore[union-attr]
    x = np.arange(np.prod(x_type.get_shape()), dtype=np.float32).reshape(x_type.get_shape())
    index = np.zeros(i_type.get_shape(), np.int64)
    index.flat[-1] = bad
    return [x, index]


def eager(name: str, args: list[np.ndarray]) -> list[np.ndarray] | Exception:
    try:
        program = compile_module(parse_module(CTX, CASES[name][0]))
        return [r.numpy() for r in program(*map(torch.from_numpy, args))]
    except (RuntimeError, IndexError) as error:
        return error


def bad_values(name: str) -> list[int]:
    size = CASES[name][1]
    return [size, size + 7, -size - 1, -1, -size]


@pytest.mark.parametrize(("name", "bad"), [(n, b) for n in CASES for b in bad_values(n)])
def test_index_is_checked_as_torch_does(name: str, bad: int) -> None:
    text, size, dim = CASES[name]
    module = parse_module(CTX, text)
    args = inputs(name, bad)
    expected = eager(name, args)
    low = -size if name in WRAPS else 0
    if low <= bad < size:
        assert not isinstance(expected, Exception), expected
        for ours, theirs in zip(run_function(module, args), expected, strict=True):
            np.testing.assert_array_equal(ours, theirs)
        return
    assert isinstance(expected, Exception), f"torch accepts index {bad}"
    op_name = "graph." + name.removesuffix("_accumulate")
    with pytest.raises(InterpretationError) as error:
        run_function(module, args)
    assert str(error.value) == (
        f"{op_name}: index {bad} is out of range for dimension {dim} of size {size} "
        f"(valid indices are {low} to {size - 1})")
    assert error.value.op is not None and error.value.op.name == op_name


def test_indices_into_an_empty_dimension_are_refused_by_the_verifier() -> None:
    """No index value is valid there: refused before running, at the op (torch raises
    when it runs); an empty index is fine."""
    text = """func.func @main(%x: tensor<0x3xf32>, %i: tensor<{n}xi64>) -> tensor<0x3xf32> {{
  %v = graph.constant dense<1.0> : tensor<f32>
  %r = graph.index_put %x[%i], %v : tensor<0x3xf32>, tensor<{n}xi64>, tensor<f32> -> tensor<0x3xf32>
  func.return %r : tensor<0x3xf32>
}}"""
    (out,) = run_function(parse_module(CTX, text.format(n=0)),
                          [np.zeros((0, 3), np.float32), np.zeros(0, np.int64)])
    assert out.shape == (0, 3)
    with pytest.raises(ParseError, match=re.escape(
            "graph.index_put: dimension 0 of the input (0, 3) is empty, so no index is "
            "valid, and the index has shape (2,)")) as error:
        parse_module(CTX, text.format(n=2), "in.mlir")
    assert str(error.value).startswith("in.mlir:3:3")


@pytest.mark.parametrize("op", ["gather", "scatter"])
def test_an_empty_index_may_exceed_the_input(op: str) -> None:
    """torch checks the index's extents against the input only when it is not empty."""
    x, index = torch.zeros(0, 4), torch.zeros(2, 0, dtype=torch.int64)
    if op == "gather":
        expected, result = torch.gather(x, 1, index), "tensor<2x0xf32>"
        line = f"%r = graph.gather %x[%i] dim 1 : tensor<0x4xf32>, tensor<2x0xi64> -> {result}"
    else:
        expected, result = torch.scatter(x, 1, index, 1.0), "tensor<0x4xf32>"
        line = (f"%r = graph.scatter %x[%i] dim 1, %v : tensor<0x4xf32>, tensor<2x0xi64>, "
                f"tensor<f32> -> {result}")
    text = function("%x: tensor<0x4xf32>, %i: tensor<2x0xi64>", result,
                    "%v = graph.constant dense<1.0> : tensor<f32>", line)
    (out,) = run_function(parse_module(CTX, text), [x.numpy(), index.numpy()])
    assert out.shape == tuple(expected.shape) and out.dtype == np.float32


POOL = function(
    "%g: tensor<1x1x2x2xf32>, %x: tensor<1x1x4x4xf32>, %i: tensor<1x1x2x2xi64>",
    "tensor<1x1x4x4xf32>",
    "%r = graph.max_pool2d_backward %g, %x, %i : tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>, "
    "tensor<1x1x4x4xf32>")


@pytest.mark.parametrize("bad", [16, -1])
def test_max_pool_backward_refuses_an_index_outside_the_plane(bad: int) -> None:
    """torch's kernel does not check (it writes past the plane); the interpreter must."""
    index = np.array([0, 5, 10, bad], np.int64).reshape(1, 1, 2, 2)
    args = [np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 4, 4), np.float32), index]
    with pytest.raises(InterpretationError, match=re.escape(
            f"graph.max_pool2d_backward: index {bad} is out of range for an input plane "
            "(h * W + w) of size 16 (valid indices are 0 to 15)")):
        run_function(parse_module(CTX, POOL), args)


def lowered(name: str):
    module = parse_module(CTX, CASES[name][0])
    apply_pipeline(module, "convert-graph-to-task", CTX)
    return module


@pytest.mark.parametrize("name", ["embedding", "gather"])
def test_task_simulator_refuses_out_of_range_index(name: str) -> None:
    kernel = find_kernel(lowered(name))
    size = CASES[name][1]
    with pytest.raises(InterpretationError, match=re.escape(
            f"graph.{name}: index -1 is out of range for dimension {CASES[name][2]} of size "
            f"{size} (valid indices are 0 to {size - 1})")) as error:
        simulate(kernel, inputs(name, -1))
    assert re.match(rf"task \d+ \({name}\): ", str(error.value))
    assert isinstance(error.value.op, t.TaskOp)


def run_tool(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        mncore_run.main(argv)
    return exit_info.value.code, capsys.readouterr().err


def test_mncore_run_points_at_the_op(tmp_path, capsys) -> None:
    """The fuzzer's case: index 3 into a one-row table, given with --args."""
    path = tmp_path / "emb.mlir"
    path.write_text(function(
        "%w: tensor<1x4xf32>, %ids: tensor<2x3xi64>", "tensor<2x3x4xf32>",
        "%r = graph.embedding %w[%ids] : tensor<1x4xf32>, tensor<2x3xi64> -> "
        "tensor<2x3x4xf32>"))
    code, err = run_tool([str(path), "--args", "dense<1.0> : tensor<1x4xf32>",
                          "dense<[[0, 3, 0], [0, 0, 0]]> : tensor<2x3xi64>"], capsys)
    assert code == 1 and "Traceback" not in err
    assert err.splitlines() == [
        f"mncore-run: {path}:2:3: error: graph.embedding: index 3 is out of range for "
        "dimension 0 of size 1 (valid indices are 0 to 0)",
        "  %r = graph.embedding %w[%ids] : tensor<1x4xf32>, tensor<2x3xi64> -> "
        "tensor<2x3x4xf32>",
        "  ^^"]


def test_mncore_run_points_at_the_task(tmp_path, capsys) -> None:
    path = tmp_path / "gather.task.mlir"
    path.write_text(str(lowered("gather")))
    x, index = inputs("gather", 6)
    code, err = run_tool([str(path), "--args",
                          f"dense<{x.tolist()}> : tensor<4x6xf32>",
                          f"dense<{index.tolist()}> : tensor<4x2xi64>"], capsys)
    assert code == 1 and "Traceback" not in err
    first, source = err.splitlines()[:2]
    assert re.fullmatch(rf"mncore-run: {re.escape(str(path))}:\d+:\d+: error: task \d+ "
                        r"\(gather\): graph.gather: index 6 is out of range for dimension 1 "
                        r"of size 6 \(valid indices are 0 to 5\)", first), first
    assert "task.task" in source
