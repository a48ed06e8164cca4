"""The Triton megakernel target, run in Triton's interpreter (``TRITON_INTERPRET=1``,
set by conftest before anything imports Triton).

Forward passes of the three models match eager PyTorch; the MLP (SGD, Adam), GPT-2
(AdamW) and CNN (SGD) training steps match the graph interpreter; both launch modes agree; a dropped
wait shows up as a wrong result through the NaN-poisoned arena when tasks run level by
level; an event that never fires is an error after the spin bound instead of a hang.
Every kernel generated here is also compiled for ``GPUTarget("cuda", 90, 32)`` — in one
subprocess at the end of the session, because Triton compiles only outside interpreter
mode."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_all_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_random_graphs import Program, build, make_inputs, programs
from test_task_level import task_options
from torch.func import functional_call

from mncore_ir.dialects import task as t
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import GRAPH_PIPELINE, apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.triton_megakernel import TritonTargetError, generate
from mncore_ir.testing.model_zoo import CNN, GPT, MLP

FUSE = "canonicalize,cse,dce,graph-fuse-elementwise"
CONVERT = "convert-graph-to-task{matmul_tile=16,32 elementwise_tile=512 row_tile=8}"

def inference_capture(model: torch.nn.Module, x: torch.Tensor) -> Any:
    state = {k: v.detach().clone() for k, v in [*model.named_parameters(),
                                                *model.named_buffers()]}

    def forward(state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return functional_call(model, state, (x,))

    return capture(forward, state, x)


def lower(captured: Any, pipeline: str = FUSE, convert: str = CONVERT) -> Any:
    module = import_captured(captured)
    apply_pipeline(module, f"{pipeline},{convert}")
    return module


FORWARD = {
    "mlp": lambda: (MLP(), torch.randn(4, 16)),
    "gpt": lambda: (GPT(layers=1), torch.randint(0, 64, (2, 16))),
    "cnn": lambda: (CNN(), torch.randn(2, 3, 16, 16)),
}


@pytest.mark.parametrize("name", list(FORWARD))
def test_forward_pass_matches_eager(name: str, megakernel: Callable[..., Any]) -> None:
    torch.manual_seed(0)
    model, x = FORWARD[name]()
    model.eval()
    with torch.no_grad():
        expected = model(x)
    captured = inference_capture(model, x)
    kernel = megakernel(find_kernel(lower(captured)))
    for mode in ("megakernel", "levels"):
        (out,) = kernel.run(*captured.example_inputs, mode=mode)
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5, msg=mode)


@pytest.mark.parametrize("name", ["mlp_sgd", "mlp_adam", "gpt_adamw",
                                  pytest.param("cnn_sgd", marks=pytest.mark.slow)])
def test_training_step_matches_graph_level(name: str, captured_steps: Callable[..., Any],
                                           megakernel: Callable[..., Any]) -> None:
    _, captured = captured_steps(name)
    graph = import_captured(captured)
    apply_pipeline(graph, FUSE)
    inputs = [x.numpy() for x in captured.example_inputs]
    expected = run_function(graph, inputs)
    apply_pipeline(graph, CONVERT)
    kernel = megakernel(find_kernel(graph))
    modes = ("megakernel", "levels") if name.startswith("mlp") else ("megakernel",)
    for mode in modes:
        outs = kernel.run(*captured.example_inputs, mode=mode)
        assert_all_close([o.numpy() for o in outs], expected)


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(program=programs(), pipeline=st.sampled_from([FUSE, GRAPH_PIPELINE]),
       options=task_options(), mode=st.sampled_from(["megakernel", "levels"]))
def test_random_program_megakernel_matches_graph(program: Program, pipeline: str, options: str,
                                                 mode: str,
                                                 megakernel: Callable[..., Any]) -> None:
    """Random graphs x tilings x launch modes: the megakernel equals the graph level."""
    inputs = make_inputs(program)
    module = import_captured(capture(build(program), *[x.clone() for x in inputs]))
    apply_pipeline(module, pipeline)
    expected = run_function(module, [x.numpy() for x in inputs])
    apply_pipeline(module, f"convert-graph-to-task{options}")
    outs = megakernel(find_kernel(module)).run(*inputs, mode=mode)
    assert_all_close([o.numpy() for o in outs], expected)


def test_unknown_task_kind_is_refused() -> None:
    """A body whose graph op has no device function (a kind that is no graph op cannot
    be written: a task names a body)."""
    module = parse_module(make_context(), """
    task.kernel @k(%x: memref<4xf32>) -> (%y: memref<2x4xf32>) {
      task.body @frobnicate(%a: tensor<4xf32>) {
        %e = graph.expand %a : tensor<4xf32> -> tensor<2x4xf32>
        task.yield %e : tensor<2x4xf32>
      }
      task.task @frobnicate ins(%x[0:4]) outs(%y[0:2, 0:4])
      task.return
    }""", "k.mlir")
    with pytest.raises(TritonTargetError, match=r"no device function for task kinds: "
                                                r"frobnicate \(graph\.expand\)"):
        generate(find_kernel(module))


def small_chain() -> tuple[Any, list[np.ndarray]]:
    """x -> matmul -> relu -> softmax: a kernel with a few levels."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Softmax(dim=-1))
    captured = inference_capture(model, torch.randn(4, 8))
    return captured, [x.numpy() for x in captured.example_inputs]


def test_dropped_wait_reads_the_poisoned_arena(megakernel: Callable[..., Any]) -> None:
    """With a consumer's wait removed, per-level launches put it beside its producer,
    before the data exists: it reads NaN poison. One launch in ticket order still works
    (the interpreter runs programs one at a time), which is why the table and the
    poison are what tests check."""
    captured, inputs = small_chain()
    module = lower(captured, convert="convert-graph-to-task{elementwise_tile=16 row_tile=2}")
    kernel = find_kernel(module)
    expected = run_function(lower(captured, convert="canonicalize"), inputs)
    last = kernel.tasks()[-1]
    assert last.waits, "the last task should wait on its producers"
    mk = megakernel(kernel)
    (good,) = mk.run(*captured.example_inputs, mode="levels")
    np.testing.assert_allclose(good.numpy(), expected[0], rtol=1e-5, atol=1e-6)
    index = len(kernel.tasks()) - 1
    row = mk.TASKS[index * 5: index * 5 + 5]
    mk.TASKS[index * 5 + 3] = 0  # the last task waits on nothing now
    launches, order = mk.LEVELS, mk.LEVEL_ORDER
    mk.LEVELS = [(0, len(order))]  # one level: the consumer is in the same launch
    mk.LEVEL_ORDER = [index, *[i for i in order if i != index]]  # and runs first
    try:
        (bad,) = mk.run(*captured.example_inputs, mode="levels")
    finally:
        mk.TASKS[index * 5: index * 5 + 5] = row
        mk.LEVELS, mk.LEVEL_ORDER = launches, order
    assert np.isnan(bad.numpy()).any(), "the consumer should have read NaN poison"


def test_event_that_never_fires_is_an_error_not_a_hang(megakernel: Callable[..., Any]) -> None:
    captured, _ = small_chain()
    kernel = find_kernel(lower(captured, convert="convert-graph-to-task{row_tile=2}"))
    mk = megakernel(kernel)
    waiting = next(i for i in range(mk.NUM_TASKS) if mk.TASKS[i * 5 + 3] > 0)
    event = mk.WAITS[mk.TASKS[waiting * 5 + 2]]
    mk.TARGETS[event] += 1  # one more signal than any task sends
    try:
        with pytest.raises(mk.MegakernelError, match=f"task {waiting} waited more than 50"):
            mk.run(*captured.example_inputs, spin_bound=50)
    finally:
        mk.TARGETS[event] -= 1


def test_bad_inputs_are_reported(megakernel: Callable[..., Any]) -> None:
    captured, _ = small_chain()
    mk = megakernel(find_kernel(lower(captured)))
    with pytest.raises(TypeError, match="takes 3 inputs, got 1"):
        mk.run(torch.zeros(4, 8))
    with pytest.raises(TypeError, match=r"expected torch.float32 of shape \(4, 8\)"):
        mk.run(*captured.example_inputs[:-1], torch.zeros(4, 9))


def _addresses(desc: Any) -> list[list[int]]:
    """Each operand's element address at every point of the space, in flat order."""
    points = np.indices(desc.sizes).reshape(len(desc.sizes), -1).T if desc.sizes else [[]]
    return [[int(np.dot(p, op.strides)) for p in points] for op in desc.operands]


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=0, max_size=5),
       kinds=st.lists(st.sampled_from(["dense", "permuted", "broadcast", "strided"]),
                      min_size=1, max_size=3),
       data=st.data())
def test_coalesced_descriptors_address_the_same_points(sizes: list[int], kinds: list[str],
                                                        data: st.DataObject) -> None:
    """Merging dimensions keeps every operand's address at every flat index; a space
    that all operands hold contiguously becomes one dimension."""
    from mncore_ir.targets.triton_descriptors import Descriptor, Operand, strides_of

    dense = strides_of(sizes)
    operands = []
    for kind in kinds:
        if kind == "dense":
            strides = dense
        elif kind == "permuted":
            order = data.draw(st.permutations(range(len(sizes))))
            inner = strides_of([sizes[d] for d in order])
            strides = [inner[order.index(d)] for d in range(len(sizes))]
        elif kind == "broadcast":
            strides = [0 if data.draw(st.booleans()) else s for s in dense]
        else:
            strides = [s * data.draw(st.integers(1, 3)) for s in strides_of(
                [n + data.draw(st.integers(0, 2)) for n in sizes])]
        operands.append(Operand(0, list(strides), np.dtype("float32")))
    desc = Descriptor(list(sizes), operands)
    merged = desc.coalesced()
    assert int(np.prod(merged.sizes)) == int(np.prod(sizes))
    assert _addresses(merged) == _addresses(desc)
    if set(kinds) == {"dense"}:
        assert len(merged.sizes) == min(len(sizes), 1)


@pytest.mark.parametrize("accumulate", ["true", "false"])
def test_index_put_counts_negative_rows_from_the_end(megakernel: Callable[..., Any],
                                                     accumulate: str) -> None:
    """``x[rows] (+)= v`` with rows -1 and -5 of 5: the last and the first, as eager and
    the other levels; the megakernel wrote outside the tensor (found by a probe)."""
    typ = "tensor<5x3xf32>, tensor<3xi64>, tensor<3x3xf32> -> tensor<5x3xf32>"
    module = parse_module(make_context(), f"""
    func.func @main(%x: tensor<5x3xf32>, %rows: tensor<3xi64>, %v: tensor<3x3xf32>)
        -> tensor<5x3xf32> {{
      %y = graph.index_put %x[%rows], %v accumulate = {accumulate} : {typ}
      func.return %y : tensor<5x3xf32>
    }}""", "p.mlir")
    apply_pipeline(module, "convert-graph-to-task")
    x, rows, v = torch.zeros(5, 3), torch.tensor([-1, 2, -5]), torch.arange(9.0).reshape(3, 3)
    (got,) = megakernel(find_kernel(module)).run(x, rows, v)
    assert torch.equal(got, x.index_put((rows,), v, accumulate=accumulate == "true"))


def _one_op(text: str) -> t.KernelOp:
    module = parse_module(make_context(), text, "p.mlir")
    apply_pipeline(module, "convert-graph-to-task")
    return find_kernel(module)


def test_booleans_add_as_or(megakernel: Callable[..., Any]) -> None:
    """True + True is True (eager, numpy): the 1-bit sum wrapped to False (a probe's
    find)."""
    typ = "tensor<4xi1>"
    kernel = _one_op(f"""
    func.func @main(%a: {typ}, %b: {typ}) -> {typ} {{
      %c = graph.add %a, %b : {typ}, {typ} -> {typ}
      func.return %c : {typ}
    }}""")
    a, b = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
    (got,) = megakernel(kernel).run(a, b)
    assert torch.equal(got, a + b)


@pytest.mark.parametrize("dtype", ["i64", "i32"])
def test_integer_powers_and_products_are_exact(megakernel: Callable[..., Any],
                                               dtype: str) -> None:
    """Integer pow by squaring (wrapping as eager; a negative power of a base other than
    +-1 is 0) and integer matmuls, which ``_pow``'s logarithms and ``tl.dot`` refused
    inside Triton (a probe's find)."""
    vec, a_t, b_t, c_t = (f"tensor<{s}x{dtype}>" for s in ("8", "3x4", "4x2", "3x2"))
    kernel = _one_op(f"""
    func.func @main(%x: {vec}, %e: {vec}, %a: {a_t}, %b: {b_t}) -> ({vec}, {c_t}) {{
      %p = graph.pow %x, %e : {vec}, {vec} -> {vec}
      %c = graph.matmul %a, %b : {a_t}, {b_t} -> {c_t}
      func.return %p, %c : {vec}, {c_t}
    }}""")
    torch_type = {"i64": torch.int64, "i32": torch.int32}[dtype]
    x = torch.tensor([3, -3, 7, 2, -1, -1, 1, 0], dtype=torch_type)
    e = torch.tensor([40, 41, 19, -1, -3, -2, -7, 5], dtype=torch_type)
    a = torch.arange(12, dtype=torch_type).reshape(3, 4) * 1000003
    b = torch.arange(8, dtype=torch_type).reshape(4, 2) - 3
    power, product = megakernel(kernel).run(x, e, a, b)
    assert torch.equal(power, x ** e)
    assert torch.equal(product, a @ b)


def test_narrow_integers_are_not_accumulated_atomically() -> None:
    """Triton adds atomically only 16-bit words and wider: an accumulating index_put of
    uint8 is refused at the op (the runtime runs it on the host), not inside Triton."""
    typ = "tensor<5xui8>, tensor<3xi64>, tensor<3xui8> -> tensor<5xui8>"
    kernel = _one_op(f"""
    func.func @main(%x: tensor<5xui8>, %rows: tensor<3xi64>, %v: tensor<3xui8>)
        -> tensor<5xui8> {{
      %y = graph.index_put %x[%rows], %v accumulate = true : {typ}
      func.return %y : tensor<5xui8>
    }}""")
    with pytest.raises(TritonTargetError, match=r"graph\.index_put: Triton has no atomic add "
                                                 r"of uint8") as error:
        generate(kernel)
    assert error.value.op is not None
