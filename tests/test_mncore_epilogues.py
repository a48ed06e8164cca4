"""convert-task-to-mncore's matmul epilogues (``matmul_epilogue.py``): a matmul's cheap
pointwise consumer computed on the stationary kernel's accumulators, C never stored.
Bit for bit against the same program without them (``epilogues=false``, one matmul
kernel for both: ``auto`` may pick another kernel once an epilogue saves a round trip,
and that kernel sums in another order), against eager, and which consumers are taken
(C's words are not stored) and which are not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import assert_all_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import MNCORE_GRAPH_PIPELINE, MNCORE_TASKS, apply_pipeline
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.testing.model_zoo import mlp_sgd

#: The task level as the mncore device makes it (buffers not reused).
TASKS = f"canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task{{{MNCORE_TASKS}}}"


def lowered(fn: Callable[..., Any], inputs: list[torch.Tensor], machine: str,
            epilogues: bool, kernel: str = "auto", schedule: bool = True) -> m.ProgramOp:
    module = import_captured(capture(fn, *inputs))
    passes = (",mncore-forward-stores,mncore-schedule" if schedule else "")
    apply_pipeline(module, f"{TASKS},convert-task-to-mncore{{machine={machine} "
                           f"matmul_kernel={kernel} epilogues={str(epilogues).lower()}}}"
                           f"{passes}")
    return find_program(module)


def stored_words(prog: m.ProgramOp) -> int:
    """Words the program's DMAs store (before mncore-forward-stores drops any)."""
    return sum(op.count for _, op, *_ in prog.issues()
               if isinstance(op, m.DmaOp) and op.kind.data == "store")


def check(fn: Callable[..., Any], inputs: list[torch.Tensor], machine: str,
          kernel: str = "auto") -> None:
    """With and without epilogues: both equal to eager, and to each other bit for bit
    when the kernel is fixed."""
    with torch.no_grad():
        eager = [r.numpy() for r in fn(*inputs)]
    arrays = [x.numpy() for x in inputs]
    ours, _ = simulate(lowered(fn, inputs, machine, True, kernel), arrays)  # no hazard
    theirs, _ = simulate(lowered(fn, inputs, machine, False, kernel), arrays)
    assert_all_close(ours, eager)
    assert_all_close(theirs, eager)
    if kernel != "auto":
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)


def saved_words(fn: Callable[..., Any], inputs: list[torch.Tensor], machine: str,
                kernel: str = "auto") -> int:
    """The words fewer stored with epilogues: C's, for each matmul that takes one."""
    with_, without = (stored_words(lowered(fn, inputs, machine, e, kernel, schedule=False))
                      for e in (True, False))
    return without - with_


def linear_relu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor]:
    return (F.relu(F.linear(x, w, b)),)


def linear_inputs(rows: int, depth: int, cols: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(rows, depth, generator=g), torch.randn(cols, depth, generator=g),
            torch.randn(cols, generator=g)]


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
@pytest.mark.parametrize("kernel", ["stationary", "swapped"])
def test_a_bias_and_relu_run_on_the_accumulators(machine: str, kernel: str) -> None:
    """F.linear then ReLU: C (6 x 8) is never stored, and the numbers are the unfused
    program's bit for bit."""
    inputs = linear_inputs(6, 16, 8)
    check(linear_relu, inputs, machine, kernel)
    assert saved_words(linear_relu, inputs, machine, kernel) == 6 * 8


def test_an_epilogue_that_would_run_more_often_than_the_lane_kernel_is_not_taken() -> None:
    """On tiny, C of 8 x 12 is two units of 4 accumulator columns each (8 runs of the
    body) against one wave of the lane kernel: the consumer stays a task."""
    inputs = linear_inputs(8, 16, 12)
    check(linear_relu, inputs, "tiny", "stationary")
    assert saved_words(linear_relu, inputs, "tiny", "stationary") == 0
    assert saved_words(linear_relu, inputs, "mncore2", "stationary") == 8 * 12


def sgd_of_a_gradient(x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, buf: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """A weight gradient's momentum SGD update: two results, C-shaped operands."""
    grad = dy.t() @ x
    buf = buf * 0.9 + grad
    return w - 0.1 * buf, buf


def test_an_update_of_a_weight_gradient_with_two_results() -> None:
    g = torch.Generator().manual_seed(1)
    inputs = [torch.randn(8, 32, generator=g), torch.randn(8, 16, generator=g),
              torch.randn(16, 32, generator=g), torch.randn(16, 32, generator=g)]
    for kernel in ("stationary", "swapped"):
        check(sgd_of_a_gradient, inputs, "mncore2", kernel)
        assert saved_words(sgd_of_a_gradient, inputs, "mncore2", kernel) == 16 * 32


def read_twice(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    y = x @ w.t()
    return F.relu(y + b), y.sum(dim=0)


def costly(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (torch.tanh(x @ w.t() + b),)  # tanh: many ALU instructions per column


def written_between(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor
                    ) -> tuple[torch.Tensor, ...]:
    y = x @ w.t()
    z = torch.exp(b) * 2.0  # computed after the product, read by its consumer
    return (y + z,)


@pytest.mark.parametrize("fn", [read_twice, costly, written_between])
def test_consumers_that_do_not_run_as_epilogues(fn: Callable[..., Any]) -> None:
    """C read by a second task, a costly body, an operand written after the product:
    C is stored as before, and the numbers are right."""
    inputs = linear_inputs(8, 16, 12)
    check(fn, inputs, "mncore2", "stationary")
    assert saved_words(fn, inputs, "mncore2", "stationary") == 0


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_a_split_product_stores_c_for_its_consumer(machine: str) -> None:
    """K split over the L1Bs is added up by the L2 ``reduce`` on the way out, in L2BM:
    no accumulator holds C, so its consumer is lowered on its own."""
    inputs = linear_inputs(8, 64, 12)
    check(linear_relu, inputs, machine, "split")
    assert saved_words(linear_relu, inputs, machine, "split") == 0


def moved_past_other_tasks(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor]:
    """The product's consumer (a negation) comes after the tasks computing a constant
    and its exponential: it moves next to the product, and so must the life of its
    result's DRAM words (intermediates share DRAM by liveness; placed where it was, its
    result took the dead constant's words, which the constant's task then wrote over:
    found by a probe of nn.GRU training)."""
    mm = x @ w
    a = torch.exp(torch.full((5, 12), 1.5))
    a1 = -mm
    return (a1[:, 0:4] + a[:, 0:4],)


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_a_consumer_moved_next_to_its_product_lives_from_there(machine: str) -> None:
    g = torch.Generator().manual_seed(3)
    inputs = [torch.randn(5, 8, generator=g), torch.randn(8, 12, generator=g)]
    for kernel in ("auto", "stationary", "swapped"):
        check(moved_past_other_tasks, inputs, machine, kernel)
    assert saved_words(moved_past_other_tasks, inputs, "mncore2", "stationary") == 5 * 12


BODIES: dict[str, Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]] = {
    "bias row": lambda c, row, col, y: c + row,
    "bias column and relu": lambda c, row, col, y: F.relu(c + col),
    "leaky": lambda c, row, col, y: torch.where(c > 0, c, c * 0.1),
    "product and sum": lambda c, row, col, y: c * y + row,
    "two results": lambda c, row, col, y: (c - y, torch.maximum(c, y) * 2.0),
    "mask": lambda c, row, col, y: torch.where(y <= 0, 0.0, c),
}


@st.composite
def products(draw: st.DrawFn) -> dict[str, Any]:
    return {"rows": draw(st.integers(1, 40)), "depth": draw(st.integers(1, 70)),
            "cols": draw(st.integers(1, 40)), "permuted": draw(st.booleans()),
            "body": draw(st.sampled_from(sorted(BODIES))),
            "kernel": draw(st.sampled_from(["stationary", "swapped", "auto", "auto"])),
            "between": draw(st.booleans()),
            "machine": draw(st.sampled_from(["tiny", "mncore2"])),
            "seed": draw(st.integers(0, 99))}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=products())
def test_random_products_and_consumers(case: dict[str, Any]) -> None:
    """Products of any shape (rows and columns past the accumulators' 4 words, K past
    a chunk of LM on tiny), either operand layout, any kernel, and a consumer with
    broadcast rows and columns, a C-shaped operand, one or two results, perhaps after
    tasks it must move past (or, where they compute what it reads, stay after)."""
    rows, depth, cols = case["rows"], case["depth"], case["cols"]
    g = torch.Generator().manual_seed(case["seed"])
    a = torch.randn(rows, depth, generator=g)
    b = torch.randn(cols, depth, generator=g) if case["permuted"] else torch.randn(
        depth, cols, generator=g)
    row, col, y = (torch.randn(cols, generator=g), torch.randn(rows, 1, generator=g),
                   torch.randn(rows, cols, generator=g))
    body = BODIES[case["body"]]

    def fn(a: torch.Tensor, b: torch.Tensor, row: torch.Tensor, col: torch.Tensor,
           y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        c = a @ b.t() if case["permuted"] else a @ b
        if case["between"]:  # tasks between the product and its consumer, read after it
            z = torch.tanh(y) * 2.0
            y = torch.exp(-y)
        out = body(c, row, col, y)
        out = out if isinstance(out, tuple) else (out,)
        return (*out, z) if case["between"] else out

    check(fn, [a, b, row, col, y], case["machine"], case["kernel"])
    assert saved_words(fn, [a, b, row, col, y], case["machine"], case["kernel"]) in (
        0, rows * cols)


def test_the_mlp_step_as_the_device_compiles_it() -> None:
    """The MLP training step through the mncore device's own pipeline on mncore2:
    equal to the step without epilogues within f32 rounding (``auto`` may pick another
    kernel), and C stored for none of its forward layers' products (bias and ReLU,
    bias: 8 x 32, 8 x 32 and 8 x 10) nor its first hidden layer's weight gradient
    (an SGD update: 32 x 16)."""
    step = mlp_sgd()
    captured = capture(step, *step.example_inputs())
    arrays = [x.numpy() for x in captured.example_inputs]
    programs = []
    for epilogues in ("true", "false"):
        module = import_captured(captured)
        apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}},"
                               f"convert-task-to-mncore{{machine=mncore2 epilogues={epilogues}}}")
        programs.append(find_program(module))
    assert stored_words(programs[1]) - stored_words(programs[0]) >= 8 * 32 * 2 + 8 * 10 + 32 * 16
    ours, theirs = (simulate(p, arrays)[0] for p in programs)
    assert_all_close(ours, theirs)


def many_values(x: torch.Tensor, w: torch.Tensor, y1: torch.Tensor, y2: torch.Tensor,
                y3: torch.Tensor) -> tuple[torch.Tensor]:
    c = x @ w
    return ((c + y1) * y2 + y3 * c - y1 + y2 * y3,)


def test_an_epilogue_whose_values_overflow_the_grfs_is_not_taken() -> None:
    """Three C-shaped operands and seven ops, a slot per column for each: more than
    tiny's GRFs hold beside the accumulators (an LSTM's gate sums failed to compile on
    tiny, and parts of its step ran on the host); mncore2's hold them."""
    g = torch.Generator().manual_seed(4)
    inputs = [torch.randn(4, 8, generator=g), torch.randn(8, 8, generator=g),
              *(torch.randn(4, 8, generator=g) for _ in range(3))]
    check(many_values, inputs, "tiny", "stationary")
    assert saved_words(many_values, inputs, "tiny", "stationary") == 0
    assert saved_words(many_values, inputs, "mncore2", "stationary") == 4 * 8
