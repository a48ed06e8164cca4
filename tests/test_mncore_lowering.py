"""convert-task-to-mncore on whole programs: lowered ``mncore.program``s, run by the cycle
simulator, give the results of the levels above.

* An MLP training step (forward, backward, SGD update; matmuls on the MAU) and a
  transformer block's forward (layer norm, attention with a causal mask, GELU through
  erf) lowered for ``tiny`` equal the graph interpreter's results (and eager PyTorch's).
* Random small lane programs (hypothesis): reductions over any dims with or without
  keepdim, gather and scatter with random in-range indices, and elementwise expressions
  of comparisons, boolean logic and ``torch.where`` (with bool and int64 outputs),
  tiled with random task options, equal the task-level simulator on the same task
  module and eager PyTorch; integer and boolean outputs come back exactly, as integers
  and booleans.
* An embedding lowered for ``mncore2`` equals ``nn.Embedding``.
* The simulator refuses integer inputs that a word (f32) cannot hold exactly.

Every simulation also checks the schedule: the simulator raises ``HazardError`` on any
read of a word before it is ready.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from torch import nn

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.frontends.fx import CapturedGraph, capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import (
    GRAPH_PIPELINE,
    MNCORE_GRAPH_PIPELINE,
    MNCORE_TASKS,
    apply_pipeline,
    make_context,
)
from mncore_ir.targets.graph_interpreter import InterpretationError, run_function
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.task_simulator import simulate as simulate_kernel
from mncore_ir.testing.model_zoo import Block, TrainingStep, cnn_sgd, gpt_adamw, mlp_sgd
from mncore_ir.transforms.convert_task_to_mncore import MNCoreConversionError
from mncore_ir.transforms.convert_task_to_mncore.emitter import Emitter

TO_TINY = (GRAPH_PIPELINE + ",convert-graph-to-task{target=mncore},"
           "convert-task-to-mncore{machine=tiny},mncore-schedule")


def assert_same_results(outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                        rtol: float, atol: float, names: Sequence[str] | None = None) -> None:
    """Same count, shapes and dtypes; floats within tolerance, integers and booleans equal."""
    assert len(outputs) == len(expected)
    names = names or [f"output {i}" for i in range(len(outputs))]
    for name, out, exp in zip(names, outputs, expected, strict=True):
        out, exp = np.asarray(out), np.asarray(exp)
        assert out.shape == exp.shape, f"{name}: shape {out.shape} != {exp.shape}"
        assert out.dtype == exp.dtype, f"{name}: dtype {out.dtype} != {exp.dtype}"
        if exp.dtype.kind == "f":
            np.testing.assert_allclose(out, exp, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(out, exp, err_msg=name)


# --------------------------------------------------------------------------- models


def test_mlp_training_step_on_tiny_matches_the_graph_interpreter() -> None:
    step = mlp_sgd()
    captured = capture(step, *step.example_inputs())
    reference, lowered = import_captured(captured), import_captured(captured)
    arrays = [t.numpy() for t in captured.example_inputs]
    assert arrays[-1].dtype == np.int64  # the targets: an integer input
    expected = run_function(reference, arrays)
    apply_pipeline(lowered, TO_TINY)
    outputs, report = simulate(find_program(lowered), arrays)
    assert len(outputs) == len(captured.output_names) == 13  # the loss, 6 params, 6 buffers
    assert_same_results(outputs, expected, rtol=1e-5, atol=1e-6, names=captured.output_names)
    assert report.issued.get("mau", 0) > 0


def test_transformer_block_forward_on_tiny_matches_the_graph_interpreter() -> None:
    torch.manual_seed(0)
    model = Block(16, 2).eval()
    x = torch.randn(1, 8, 16)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def forward(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.func.functional_call(model, params, (x,))

    captured = capture(forward, params, x)
    reference, lowered = import_captured(captured), import_captured(captured)
    arrays = [t.numpy() for t in captured.example_inputs]
    expected = run_function(reference, arrays)
    apply_pipeline(lowered, TO_TINY)
    outputs, report = simulate(find_program(lowered), arrays)
    # erf is approximated on the ALU to 1.5e-7
    assert_same_results(outputs, expected, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        eager = model(x).numpy()
    assert_same_results(outputs, [eager], rtol=1e-5, atol=1e-5)
    assert report.issued.get("mau", 0) > 0


# --------------------------------------------------------------------------- lane programs

REDUCE = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax}
COMPARE: dict[str, Callable[[Any, Any], torch.Tensor]] = {
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge}
#: Operands of comparisons and values of ``where``: the inputs, expressions and constants.
TERMS: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "x": lambda x, y: x, "y": lambda x, y: y, "x-y": lambda x, y: x - y,
    "2x": lambda x, y: x * 2, "-y": lambda x, y: -y, "tanh(x)": lambda x, y: torch.tanh(x),
    "sigmoid(y)": lambda x, y: torch.sigmoid(y), "erf(x)": lambda x, y: torch.erf(x),
    "0.5": lambda x, y: 0.5, "0": lambda x, y: 0.0}
TENSOR_TERMS = [k for k in TERMS if k[0] not in "0123456789"]
LOGIC = ("and", "or", "and-not", "not")

Program = dict[str, Any]


@st.composite
def shapes(draw: st.DrawFn) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))


@st.composite
def lane_programs(draw: st.DrawFn) -> Program:
    """A random input shape and one lane operation on it (as plain data, for shrinking
    and printing)."""
    shape = draw(shapes())
    rank = len(shape)
    kind = draw(st.sampled_from(["reduce", "gather", "scatter", "elementwise"]))
    event(kind)
    program: Program = {"kind": kind, "shape": shape, "seed": draw(st.integers(0, 2**16))}
    if kind == "reduce":
        dims = draw(st.permutations(range(rank)))[:draw(st.integers(1, rank))]
        program |= {"op": draw(st.sampled_from(sorted(REDUCE))),
                    # some dims negative, as torch allows
                    "dims": [d - rank if draw(st.booleans()) else d for d in dims],
                    "keepdim": draw(st.booleans())}
    elif kind in ("gather", "scatter"):
        program |= {"dim": draw(st.integers(0, rank - 1)),
                    "index_shape": tuple(draw(st.integers(1, n)) for n in shape)}
        if kind == "scatter":  # torch scatters a 0-d value given as a number
            program["value"] = draw(st.sampled_from([-7.5, 0.0, 3.25]))
    else:
        # y broadcasts against x: the same shape, or trailing dims with some of size 1
        tail = shape[draw(st.integers(0, rank - 1)):]
        program["y_shape"] = tuple(n if draw(st.booleans()) else 1 for n in tail)
        conditions = []
        for _ in range(draw(st.integers(1, 3))):
            conditions.append((draw(st.sampled_from(sorted(COMPARE))),
                               draw(st.sampled_from(TENSOR_TERMS)),
                               draw(st.sampled_from(sorted(TERMS)))))
        program["conditions"] = conditions
        program["logic"] = [draw(st.sampled_from(LOGIC)) for _ in conditions[1:]]
        program["where"] = (draw(st.sampled_from(TENSOR_TERMS)),
                            draw(st.sampled_from(sorted(TERMS))))
    return program


def lane_inputs(program: Program) -> list[torch.Tensor]:
    rng = np.random.default_rng(program["seed"])
    shape = program["shape"]
    kind = program["kind"]
    if kind == "elementwise":  # halves: comparisons see ties
        return [torch.from_numpy((rng.integers(-4, 5, s) / 2).astype(np.float32))
                for s in (shape, program["y_shape"])]
    x = torch.from_numpy(rng.uniform(-2, 2, shape).astype(np.float32))
    if kind == "reduce":
        return [x]
    return [x, torch.from_numpy(rng.integers(0, shape[program["dim"]], program["index_shape"]))]


def lane_function(program: Program) -> Callable[..., tuple[torch.Tensor, ...]]:
    kind = program["kind"]
    if kind == "reduce":
        op = REDUCE[program["op"]]
        return lambda x: (op(x, dim=program["dims"], keepdim=program["keepdim"]),)
    if kind == "gather":
        return lambda x, index: (torch.gather(x, program["dim"], index),)
    if kind == "scatter":
        return lambda x, index: (torch.scatter(x, program["dim"], index, program["value"]),)

    def elementwise(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        conditions = [COMPARE[c](TERMS[a](x, y), TERMS[b](x, y))
                      for c, a, b in program["conditions"]]
        cond = conditions[0]
        for logic, other in zip(program["logic"], conditions[1:], strict=True):
            if logic == "and":
                cond = cond & other
            elif logic == "or":
                cond = cond | other
            elif logic == "and-not":
                cond = cond & ~other
            else:
                cond = ~(cond | other)
        a, b = program["where"]
        chosen = torch.where(cond, TERMS[a](x, y), TERMS[b](x, y))
        count = cond.to(torch.int64) + conditions[0].to(torch.int64) * 2
        return chosen, cond, count

    return elementwise


def eager_results(fn: Callable[..., tuple[torch.Tensor, ...]],
                  inputs: Sequence[torch.Tensor]) -> list[np.ndarray]:
    with torch.no_grad():
        return [np.asarray(r.numpy()) for r in fn(*inputs)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=lane_programs(), row_tile=st.integers(1, 8),
       elementwise_tile=st.integers(1, 40), fuse=st.booleans())
def test_lane_programs_on_tiny_match_the_task_level_and_eager(
        program: Program, row_tile: int, elementwise_tile: int, fuse: bool) -> None:
    inputs = lane_inputs(program)
    fn = lane_function(program)
    eager = eager_results(fn, inputs)
    module = import_captured(capture(fn, *inputs))
    prepare = "canonicalize,cse,dce" + (",graph-fuse-elementwise" if fuse else "")
    apply_pipeline(module, f"{prepare},convert-graph-to-task{{target=mncore row_tile={row_tile} "
                           f"elementwise_tile={elementwise_tile}}}")
    text = str(module)
    ctx = make_context()
    task_level = parse_module(ctx, text, "task.mlir")
    lowered = parse_module(ctx, text, "lowered.mlir")
    arrays = [t.numpy() for t in inputs]
    expected = simulate_kernel(find_kernel(task_level), arrays)
    apply_pipeline(lowered, "convert-task-to-mncore{machine=tiny},mncore-schedule")
    outputs, _ = simulate(find_program(lowered), arrays)  # raises on any hazard
    assert_same_results(expected, eager, rtol=1e-5, atol=1e-5)  # the reference is right
    assert_same_results(outputs, expected, rtol=1e-5, atol=1e-5)
    assert_same_results(outputs, eager, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- mncore2, words


def test_embedding_on_mncore2_matches_eager() -> None:
    torch.manual_seed(0)
    embedding = nn.Embedding(7, 5)
    ids = torch.tensor([[0, 6, 3], [6, 1, 0]], dtype=torch.int64)  # repeats, both ends
    params = {k: v.detach() for k, v in embedding.named_parameters()}

    def lookup(params: dict[str, torch.Tensor], ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.func.functional_call(embedding, params, (ids,))

    captured = capture(lookup, params, ids)
    module = import_captured(captured)
    apply_pipeline(module, GRAPH_PIPELINE + ",convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=mncore2},mncore-schedule")
    program = find_program(module)
    assert program.target.name == "mncore2"
    (out,), _ = simulate(program, [t.numpy() for t in captured.example_inputs])
    with torch.no_grad():
        expected = embedding(ids).numpy()
    assert out.shape == (2, 3, 5)
    np.testing.assert_array_equal(out, expected)  # a lookup is exact


EMBEDDING = """
func.func @main(%w: tensor<7x5xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x5xf32> {
  %e = graph.embedding %w[%ids] : tensor<7x5xf32>, tensor<2x3xi64> -> tensor<2x3x5xf32>
  func.return %e : tensor<2x3x5xf32>
}"""


@pytest.mark.parametrize("big", [2**24, -(2**24), 2**40, np.iinfo(np.int64).min])
def test_simulator_refuses_integers_a_word_cannot_hold(big: int) -> None:
    module = parse_module(make_context(), EMBEDDING, "embedding.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=tiny},mncore-schedule")
    program = find_program(module)
    w = np.arange(35, dtype=np.float32).reshape(7, 5)
    ids = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int64)
    (out,), _ = simulate(program, [w, ids])  # in range: fine
    np.testing.assert_array_equal(out, w[ids])
    ids[1, 2] = 2**24 - 1  # the largest accepted: out of the table, but a word holds it
    simulate(program, [w, ids])
    ids[1, 2] = big
    with pytest.raises(InterpretationError,
                       match=r"input @ids holds integers of magnitude 2\*\*24 or more"):
        simulate(program, [w, ids])


def test_logical_ops_on_integers_match_the_interpreter() -> None:
    """``graph.and``/``graph.or`` are logical on any type: non-zero integers are true."""
    text = """func.func @main(%a: tensor<4xi64>, %b: tensor<4xi64>)
        -> (tensor<4xi64>, tensor<4xi64>) {
      %c = graph.and %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
      %d = graph.or %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
      func.return %c, %d : tensor<4xi64>, tensor<4xi64>
    }"""
    a, b = np.array([1, 0, 3, 0]), np.array([3, 3, -2, 0])
    expected = run_function(parse_module(make_context(), text, "m.mlir"), [a, b])
    module = parse_module(make_context(), text, "m.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=tiny},mncore-schedule")
    outs, _ = simulate(find_program(module), [a, b])
    for ours, theirs in zip(outs, expected, strict=True):
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("make_step", [partial(gpt_adamw, layers=1),
                                       partial(cnn_sgd, batch=2, size=8)],
                         ids=["gpt2-adamw", "cnn-sgd"])
def test_training_steps_on_tiny_match_the_graph_interpreter(
        make_step: Callable[[], TrainingStep]) -> None:
    """Through the mncore device's pipeline, every output within the model tests'
    tolerance: a one-layer GPT-2 step (embeddings, attention, GELU, tied head,
    cross-entropy, backward with index_put, AdamW) and the small CNN's step (conv, batch
    norm, ReLU, max-pool, adaptive pool, linear, cross-entropy, backward, SGD with
    momentum; convolutions as matrix products on the MAU)."""
    step = make_step()
    captured = capture(step, *step.example_inputs())
    expected, outs, report = interpreted_and_simulated(captured)
    assert_same_results(outs, expected, rtol=1e-4, atol=1e-5, names=captured.output_names)
    assert report.issued["mau"] > 0


def interpreted_and_simulated(captured: CapturedGraph, machine: str = "tiny"
                              ) -> tuple[list[np.ndarray], list[np.ndarray], Any]:
    """A captured graph's outputs from the graph interpreter and from the simulated
    program the mncore device's pipeline makes of it for ``machine``, with the
    simulator's report."""
    inputs = [x.numpy() for x in captured.example_inputs]
    interpreted = run_function(import_captured(captured), inputs)
    module = import_captured(captured)
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}},"
                           f"convert-task-to-mncore{{machine={machine}}},mncore-schedule")
    outs, report = simulate(find_program(module), inputs)
    return interpreted, outs, report


@pytest.mark.parametrize("graph_pipeline", [GRAPH_PIPELINE, MNCORE_GRAPH_PIPELINE],
                         ids=["windows", "matrix-products"])
@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_conv_and_max_pool_with_their_gradients_match_eager(machine: str,
                                                            graph_pipeline: str) -> None:
    """Grouped, strided, padded conv2d and an overlapping, padded max-pool, forward and
    backward (input, weight and bias gradients; pool indices exactly), with the window
    kernels and with convolutions as matrix products."""
    torch.manual_seed(0)

    def step(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            leaves = [v.detach().requires_grad_(True) for v in (x, w, b)]
            y = F.conv2d(leaves[0], leaves[1], leaves[2], stride=2, padding=1, groups=2)
            z, index = F.max_pool2d(y, 2, stride=1, padding=1, return_indices=True)
            grads = torch.autograd.grad((z * z).sum(), leaves)
        return (y.detach(), z.detach(), index, *grads)

    args = (torch.randn(2, 4, 7, 6), torch.randn(6, 2, 3, 3), torch.randn(6))
    captured = capture(step, *args)
    module = import_captured(captured)
    apply_pipeline(module, f"{graph_pipeline},convert-graph-to-task{{target=mncore}},"
                           f"convert-task-to-mncore{{machine={machine}}},mncore-schedule")
    outs, _ = simulate(find_program(module), [a.numpy() for a in args])
    for ours, theirs in zip(outs, step(*args), strict=True):
        assert ours.dtype == theirs.numpy().dtype
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("shape", "kernel", "stride", "padding", "dilation", "ceil_mode"), [
    ((2, 3, 16, 16), 3, 2, 1, 1, False),  # overlapping windows: 2x2 candidates per lane
    ((1, 2, 17, 15), 2, 2, 0, 1, True),  # ceil mode: a last, partial window
    ((1, 2, 20, 20), 3, 1, 1, 2, False),  # dilated: 5x5 candidates
    ((1, 1, 15, 17), (2, 3), (1, 2), (1, 0), 1, True),  # rectangular
    ((1, 2, 8, 8), 3, 2, 1, 1, False),  # 4 candidates of 16 outputs: the plane pays
])
def test_max_pool_backward_looks_only_at_the_windows_that_hold_a_position(
        shape: tuple[int, ...], kernel: Any, stride: Any, padding: Any, dilation: Any,
        ceil_mode: bool) -> None:
    """The importer gives graph.max_pool2d_backward the forward's window; on tiny each
    lane then compares the indices of the outputs whose windows reach it (out-of-range
    candidates read an index of no position) and equals eager, ties included, with
    fewer instructions than the whole-plane search the op without a window gets
    (where the candidates are under a quarter of the plane, else the same program)."""
    x = torch.randn(shape)
    x[0, 0, 0, :3] = 1.0  # a tie: the first maximum takes the gradient

    def grad(x: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            leaf = x.detach().requires_grad_(True)
            y = F.max_pool2d(leaf, kernel, stride, padding, dilation, ceil_mode=ceil_mode)
            weights = torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape)
            return torch.autograd.grad((y * weights).sum(), leaf)[0]

    captured = capture(grad, x)
    sizes = []
    for window in (True, False):
        module = import_captured(captured)
        (back,) = [op for op in module.walk() if isinstance(op, g.MaxPool2dBackwardOp)]
        assert back.window() is not None
        if not window:
            for name in ("kernel", "stride", "padding", "dilation"):
                del back.properties[name]
        apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task"
                               f"{{{MNCORE_TASKS}}},convert-task-to-mncore{{machine=tiny}},"
                               "mncore-schedule")
        program = find_program(module)
        (out,), _ = simulate(program, [x.numpy()])
        np.testing.assert_array_equal(out, grad(x).numpy())
        sizes.append(len(program.instructions()))
    assert sizes[0] < sizes[1] if shape[-1] > 8 else sizes[0] == sizes[1]


def test_max_pool_backward_of_indices_from_elsewhere_keeps_the_whole_plane() -> None:
    """Indices no max_pool2d of the same window made (here every gradient routed to
    position 0 or 63, outside most windows) give the op no window: on tiny it routes
    them over the whole plane, as torch does."""
    grad, x = torch.randn(1, 2, 4, 4), torch.randn(1, 2, 8, 8)
    indices = torch.zeros(1, 2, 4, 4, dtype=torch.int64)
    indices[..., 1, 1] = 63

    def back(grad: torch.Tensor, x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.max_pool2d_with_indices_backward(
            grad, x, [2, 2], [2, 2], [0, 0], [1, 1], False, indices)

    module = import_captured(capture(back, grad, x, indices))
    (op,) = [o for o in module.walk() if isinstance(o, g.MaxPool2dBackwardOp)]
    assert op.window() is None
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}},"
                           "convert-task-to-mncore{machine=tiny},mncore-schedule")
    (out,), _ = simulate(find_program(module), [grad.numpy(), x.numpy(), indices.numpy()])
    np.testing.assert_allclose(out, back(grad, x, indices).numpy(), rtol=1e-6, atol=1e-6)


DIVISIONS = """func.func @main(%a: tensor<512xf32>, %b: tensor<512xf32>)
    -> (tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) {
  %0 = graph.div %a, %b : tensor<512xf32>, tensor<512xf32> -> tensor<512xf32>
  %c = graph.constant dense<41.0> : tensor<f32>
  %1 = graph.div %a, %c : tensor<512xf32>, tensor<f32> -> tensor<512xf32>
  %d = graph.constant dense<0.1> : tensor<f32>
  %2 = graph.div %a, %d : tensor<512xf32>, tensor<f32> -> tensor<512xf32>
  %h = graph.constant dense<-0.5> : tensor<f32>
  %3 = graph.div %a, %h : tensor<512xf32>, tensor<f32> -> tensor<512xf32>
  func.return %0, %1, %2, %3 : tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>
}"""


@pytest.mark.parametrize("seed", [0, 1])
def test_division_rounds_as_ieee_division(seed: int) -> None:
    """The ALU has a reciprocal, not a divider: ``x * (1 / y)`` was an ulp or two off
    (41 / 41 = 0.99999994, so ``(x / y).long()`` lost one). The quotient corrected by
    its exact remainder is IEEE's, bit for bit, over 30 decades of operands, exact
    integer quotients and constant divisors (a power of two, and others), with
    infinities, NaN and zeros as IEEE has them."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(512) * 10.0 ** rng.uniform(-15, 15, 512)).astype(np.float32)
    b = (rng.standard_normal(512) * 10.0 ** rng.uniform(-15, 15, 512)).astype(np.float32)
    a[:64], b[:64] = np.arange(-32, 32) * 41, 41  # exact integer quotients
    a[64:72] = [0, np.inf, -np.inf, np.nan, 1, 0, -2, 7]
    b[64:72] = [3, 2, np.inf, 1, 0, 0, np.inf, -0.0]
    module = parse_module(make_context(), DIVISIONS, "div.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=tiny},mncore-schedule")
    outputs, _ = simulate(find_program(module), [a, b])
    with np.errstate(all="ignore"):
        expected = [a / b, a / np.float32(41.0), a / np.float32(0.1), a / np.float32(-0.5)]
    for ours, theirs in zip(outputs, expected, strict=True):  # bits, or NaN for NaN
        same = (ours.view(np.int32) == theirs.view(np.int32)) | (np.isnan(ours)
                                                                 & np.isnan(theirs))
        assert same.all(), (a[~same][:4], b[~same][:4], ours[~same][:4], theirs[~same][:4])


def test_consecutive_waves_write_other_grf_words() -> None:
    """Each wave's GRF words start past the last wave's, round the GRF (word 0 of each
    stays the copy scratch): an independent task's first writes no longer wait for
    the last task's reads of the same words."""
    e = Emitter(MACHINES["tiny"])
    taken: list[set[tuple[str, int]]] = []
    for _ in range(12):
        e.new_wave()
        taken.append({e.fresh() for _ in range(3)})
    for before, after in itertools.pairwise(taken):
        assert not before & after
    words = {at for wave in taken for _, at in wave}
    assert min(words) == 4 and max(words) <= MACHINES["tiny"].grf_words - 4
    assert len(words) == (MACHINES["tiny"].grf_words - 4) // 4  # every slot, round


def test_a_wave_needing_more_values_than_the_grfs_hold_is_refused() -> None:
    machine = MACHINES["tiny"]
    e = Emitter(machine)
    e.new_wave()
    e.fresh()
    e.new_wave()  # from a rotated start, still the whole GRFs
    slots = {e.fresh() for _ in range(2 * (machine.grf_words - 4) // 4)}
    assert len(slots) == 2 * (machine.grf_words - 4) // 4
    with pytest.raises(MNCoreConversionError, match="more values at once than the GRFs hold"):
        e.fresh()


def test_consecutive_waves_copy_through_other_scratches() -> None:
    """The ALU's port rules copy a second source of one memory to a scratch first; on
    mncore2 each wave takes the next of 4 scratches in each GRF and LM, so independent
    tasks' copies no longer wait for one another (the GPT-2 step's optimizer updates
    were chained through word 0 of grf1)."""
    e = Emitter(MACHINES["mncore2"])
    written = []
    for _ in range(5):
        e.new_wave()
        a, b, c = e.fresh(), e.fresh(), e.fresh()  # grf0, grf1, grf0
        before = len(e.ops)
        e.alu("fadd", [a, c], b)  # both sources in grf0: c is copied to grf1's scratch
        copy = e.ops[before]
        assert copy.kind.data == "fpass" and copy.destination().space.data == "grf1"
        written.append(copy.destination().address.data)
        assert all(slot[1] >= e.grf_first for slot in (a, b, c))
    assert written == [4, 8, 12, 0, 4]


CHANNEL_SCALE = """func.func @main(%x: tensor<2x4x16x16xf32>, %s: tensor<1x4x1x1xf32>,
                   %b: tensor<16xf32>) -> tensor<2x4x16x16xf32> {
  %0 = graph.mul %x, %s : tensor<2x4x16x16xf32>, tensor<1x4x1x1xf32> -> tensor<2x4x16x16xf32>
  %1 = graph.add %0, %b : tensor<2x4x16x16xf32>, tensor<16xf32> -> tensor<2x4x16x16xf32>
  func.return %1 : tensor<2x4x16x16xf32>
}"""


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_loads_of_repeated_words_take_each_word_once(machine: str) -> None:
    """A channel's scale read over its plane, and a bias row read by every row, cross
    DMA once per distinct word (or once per L1B's row), and the L2/L1 broadcasts
    repeat them: before, every lane's word came from DRAM."""
    module = parse_module(make_context(), CHANNEL_SCALE, "scale.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           f"convert-task-to-mncore{{machine={machine}}},mncore-schedule")
    rng = np.random.default_rng(0)
    x, s, b = (rng.standard_normal(shape).astype(np.float32)
               for shape in [(2, 4, 16, 16), (1, 4, 1, 1), (16,)])
    (out,), _ = simulate(find_program(module), [x, s, b])
    np.testing.assert_array_equal(out, x * s + b)
    at = {op.sym_name.data: op.at.address.data for op in module.walk()
          if isinstance(op, mncore.TensorOp)}
    loaded = {"s": 0, "b": 0}
    for op in module.walk():
        if isinstance(op, mncore.DmaOp) and op.kind.data == "load":
            for name, (first, size) in {"s": (at["s"], 4), "b": (at["b"], 16)}.items():
                if first <= op.dram.address.data < first + size:
                    loaded[name] += op.count
    assert 0 < 16 * loaded["s"] <= x.size and 0 < 2 * loaded["b"] <= x.size, loaded


@st.composite
def broadcasts(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A shape of up to 4 dims and two operands broadcast against it (trailing dims,
    some of size 1): planes of up to 40x40, so lanes repeat words within and across
    L1Bs and L2Bs."""
    shape = tuple(draw(st.lists(st.integers(1, 40), min_size=1, max_size=4).filter(
        lambda dims: math.prod(dims) <= 12_000)))
    ys = []
    for _ in range(2):
        tail = shape[draw(st.integers(0, len(shape) - 1)):]
        ys.append(tuple(n if draw(st.booleans()) else 1 for n in tail))
    return shape, ys[0], ys[1]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=broadcasts(), machine=st.sampled_from(["tiny", "mncore2"]),
       seed=st.integers(0, 2**16))
def test_broadcast_operands_match_numpy(
        shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], machine: str,
        seed: int) -> None:
    """``x * y + z`` with y and z broadcast: whatever pattern their lanes repeat
    (one word per L1B, one row per L1B, runs, the same word everywhere), the DMAs that
    read each word fewer times give every lane its word."""
    shape, y_shape, z_shape = shapes
    rng = np.random.default_rng(seed)
    x, y, z = (rng.standard_normal(s).astype(np.float32) for s in (shape, y_shape, z_shape))
    text = (f"func.func @main(%x: {_tensor(shape)}, %y: {_tensor(y_shape)}, "
            f"%z: {_tensor(z_shape)}) -> {_tensor(shape)} {{\n"
            f"  %0 = graph.mul %x, %y : {_tensor(shape)}, {_tensor(y_shape)} -> "
            f"{_tensor(shape)}\n"
            f"  %1 = graph.add %0, %z : {_tensor(shape)}, {_tensor(z_shape)} -> "
            f"{_tensor(shape)}\n"
            f"  func.return %1 : {_tensor(shape)}\n}}")
    module = parse_module(make_context(), text, "broadcast.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           f"convert-task-to-mncore{{machine={machine}}},mncore-schedule")
    (out,), _ = simulate(find_program(module), [x, y, z])
    np.testing.assert_array_equal(out, x * y + z)


def _tensor(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"
