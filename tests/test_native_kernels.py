"""Native kernels are optimisations of the semantics table's decompositions: each is
tested against the decomposition it replaces.

The mncore lowering compiles erf, tanh, sigmoid, division and square roots with its own
in-place ALU sequences (they reuse scratch registers the decomposition would not); the
Triton megakernel calls its own GELU helpers. Each must give what the op's table
decomposition gives (``graph-decompose{primitives=true}`` first, then the same
lowering) and what the reference interpreter gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_all_close

from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets import triton_device_functions
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.mncore_simulator import find_program
from mncore_ir.targets.mncore_simulator import simulate as simulate_program
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.triton_megakernel import generate, load

TO_TASK = "graph-fuse-elementwise,convert-graph-to-task{elementwise_tile=16}"
TO_TINY = f"{TO_TASK},convert-task-to-mncore{{machine=tiny}},mncore-schedule"
DECOMPOSE = "graph-decompose{primitives=true},canonicalize,cse"

SHAPE = "tensor<5x7xf32>"


def unary(op: str, suffix: str = "") -> str:
    return f"""
    func.func @main(%x: {SHAPE}) -> {SHAPE} {{
      %y = graph.{op} %x{suffix} : {SHAPE}
      func.return %y : {SHAPE}
    }}"""


def binary(op: str, suffix: str = "") -> str:
    return f"""
    func.func @main(%x: {SHAPE}, %z: {SHAPE}) -> {SHAPE} {{
      %y = graph.{op} %x, %z{suffix} : {SHAPE}, {SHAPE} -> {SHAPE}
      func.return %y : {SHAPE}
    }}"""


def gelu_backward(approximate: str) -> str:
    return f"""
    func.func @main(%g: {SHAPE}, %x: {SHAPE}) -> {SHAPE} {{
      %y = graph.gelu_backward %g, %x approximate "{approximate}" : {SHAPE}
      func.return %y : {SHAPE}
    }}"""


def inputs(n: int, positive: bool = False) -> list[np.ndarray]:
    rng = np.random.default_rng(12)
    arrays = [rng.uniform(-3, 3, (5, 7)).astype(np.float32) for _ in range(n)]
    return [np.abs(a) + 0.25 for a in arrays] if positive else arrays


def lowered(source: str, pipeline: str, decompose: bool) -> object:
    module = parse_module(make_context(), source, "native.mlir")
    if decompose:
        apply_pipeline(module, DECOMPOSE)
    apply_pipeline(module, pipeline)
    return module


MNCORE_CASES = {
    "erf": (unary("erf"), 1, False),
    "tanh": (unary("tanh"), 1, False),
    "sigmoid": (unary("sigmoid"), 1, False),
    "sqrt": (unary("sqrt"), 1, True),
    "div": (binary("div"), 2, True),
    "abs": (unary("abs"), 1, False),
    "relu": (unary("relu"), 1, False),
}


@pytest.mark.parametrize("name", sorted(MNCORE_CASES))
def test_mncore_native_sequence_matches_the_decomposition(name: str) -> None:
    source, n, positive = MNCORE_CASES[name]
    args = inputs(n, positive)
    reference = run_function(parse_module(make_context(), source, "ref.mlir"), args)[0]
    native = simulate_program(find_program(lowered(source, TO_TINY, False)), args)[0][0]
    decomposed = simulate_program(find_program(lowered(source, TO_TINY, True)), args)[0][0]
    np.testing.assert_allclose(native, decomposed, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(native, reference, rtol=2e-6, atol=2e-6)


def test_mncore_native_not_matches_the_decomposition() -> None:
    source = """
    func.func @main(%b: tensor<5x7xi1>) -> tensor<5x7xi1> {
      %y = graph.not %b : tensor<5x7xi1>
      func.return %y : tensor<5x7xi1>
    }"""
    args = [np.random.default_rng(5).random((5, 7)) < 0.5]
    native = simulate_program(find_program(lowered(source, TO_TINY, False)), args)[0][0]
    decomposed = simulate_program(find_program(lowered(source, TO_TINY, True)), args)[0][0]
    np.testing.assert_array_equal(native, decomposed)
    np.testing.assert_array_equal(native, ~args[0])


@pytest.mark.parametrize("source", [unary("gelu", ' approximate "none"'),
                                    unary("gelu", ' approximate "tanh"'),
                                    gelu_backward("none"), gelu_backward("tanh")],
                         ids=["gelu", "gelu_tanh", "gelu_backward", "gelu_backward_tanh"])
def test_triton_native_gelu_matches_the_decomposition(source: str, tmp_path: object,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    args = inputs(2 if "%g" in source else 1)
    reference = run_function(parse_module(make_context(), source, "ref.mlir"), args)[0]
    tensors = [torch.from_numpy(a) for a in args]
    native = load(generate(find_kernel(lowered(source, TO_TASK, False))), str(tmp_path))
    monkeypatch.setattr(triton_device_functions, "_NATIVE", {})
    kernel = find_kernel(lowered(source, TO_TASK, False))
    through_table = load(generate(kernel), str(tmp_path))
    native_out = native.run(*tensors)[0].numpy()
    table_out = through_table.run(*tensors)[0].numpy()
    np.testing.assert_allclose(native_out, table_out, rtol=1e-5, atol=1e-6)
    assert_all_close([native_out], [reference])


R3 = "tensor<4x3x8xf32>"
STATS = "tensor<4x3x1xf32>"
NORM = f"{R3}, tensor<8xf32>, tensor<8xf32> -> {R3}, {STATS}, {STATS}"

#: Row ops: Triton runs them as native fused row kernels; graph-decompose expands them.
ROW_CASES = {
    "softmax": (f"""
    func.func @main(%x: {R3}) -> {R3} {{
      %y = graph.softmax %x dim -1 : {R3}
      func.return %y : {R3}
    }}""", 1),
    "log_softmax": (f"""
    func.func @main(%x: {R3}) -> {R3} {{
      %y = graph.log_softmax %x dim 1 : {R3}
      func.return %y : {R3}
    }}""", 1),
    "softmax_backward": (f"""
    func.func @main(%g: {R3}, %x: {R3}) -> {R3} {{
      %s = graph.softmax %x dim -1 : {R3}
      %y = graph.softmax_backward %g, %s dim -1 : {R3}
      func.return %y : {R3}
    }}""", 2),
    "layer_norm": (f"""
    func.func @main(%x: {R3}, %w: tensor<8xf32>, %b: tensor<8xf32>) -> {R3} {{
      %y, %m, %r = graph.layer_norm %x, %w, %b dims 1 eps 1.0e-05 : {NORM}
      func.return %y : {R3}
    }}""", 3),
}


@pytest.mark.parametrize("name", sorted(ROW_CASES))
def test_triton_row_kernels_match_the_decomposition(name: str, tmp_path: object) -> None:
    import torch

    source, n = ROW_CASES[name]
    rng = np.random.default_rng(3)
    module = parse_module(make_context(), source, "row.mlir")
    types = module.ops.first.function_type.inputs.data  # type: ignore[union-attr]
    args = [rng.uniform(-2, 2, tuple(t.get_shape())).astype(np.float32) for t in types[:n]]
    reference = run_function(parse_module(make_context(), source, "ref.mlir"), args)[0]
    tensors = [torch.from_numpy(a) for a in args]
    native = load(generate(find_kernel(lowered(source, TO_TASK, False))), str(tmp_path))
    expanded = load(generate(find_kernel(lowered(source, TO_TASK, True))), str(tmp_path))
    native_out = native.run(*tensors)[0].numpy()
    np.testing.assert_allclose(native_out, expanded.run(*tensors)[0].numpy(), rtol=1e-5,
                               atol=1e-6)
    assert_all_close([native_out], [reference])
