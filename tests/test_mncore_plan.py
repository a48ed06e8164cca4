"""The cycle simulator's later runs by plan (``targets/mncore_plan.py``): bit for bit
what the checked run computes, in every memory, on the compiler's programs and on
bundles whose slots touch each other's words."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mncore_ir.dialects import mncore as m
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import (
    MNCORE_GRAPH_PIPELINE,
    MNCORE_TASKS,
    apply_pipeline,
    make_context,
)
from mncore_ir.targets.mncore_simulator import Simulator, find_program, simulate
from mncore_ir.testing.model_zoo import TrainingStep, cnn_sgd, gpt_adamw, mlp_sgd


def runs_agree(program: m.ProgramOp, inputs: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Run ``program`` on each of ``inputs`` with one simulator (the first run checked,
    the later ones by plan) and check every output and memory against a fresh checked
    simulation; the last run's outputs."""
    simulator = Simulator(program)
    got: list[np.ndarray] = []
    for run in inputs:
        expected_memories: dict[str, np.ndarray] = {}
        got_memories: dict[str, np.ndarray] = {}
        expected, _ = simulate(program, run, memories=expected_memories)
        got, _ = simulator.run(run, memories=got_memories)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
        assert sorted(got_memories) == sorted(expected_memories)
        for space, words in expected_memories.items():
            np.testing.assert_array_equal(got_memories[space], words, err_msg=space)
    return got


def perturbed(inputs: list[np.ndarray], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [x * rng.uniform(0.5, 1.5, x.shape).astype(x.dtype) if x.dtype == np.float32
            else x for x in inputs]


@pytest.mark.parametrize(("make", "machine"), [
    (mlp_sgd, "tiny"), (mlp_sgd, "mncore2"),
    (lambda: cnn_sgd(batch=2, size=8), "tiny"),
    pytest.param(lambda: gpt_adamw(batch=1, layers=1), "tiny", marks=pytest.mark.slow)],
    ids=["mlp-tiny", "mlp-mncore2", "cnn-tiny", "gpt-tiny"])
def test_later_runs_compute_what_the_checked_run_does(
        make: Callable[[], TrainingStep], machine: str) -> None:
    """Training steps as the device compiles them, run three times on other inputs:
    each later run by plan equals a fresh checked run in every word of every memory."""
    step = make()
    captured = capture(step, *step.example_inputs())
    module = import_captured(captured)
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}},"
                           f"convert-task-to-mncore{{machine={machine}}},"
                           "mncore-forward-stores,mncore-schedule")
    program = find_program(module)
    inputs = [x.numpy() for x in captured.example_inputs]
    simulator_runs = [inputs, perturbed(inputs, 1), perturbed(inputs, 2)]
    runs_agree(program, simulator_runs)


#: x through L2 and L1 into grf0; then, in one step, the L1 slot writes grf0 while the
#: ALU copies grf0 to lm0: the copy reads grf0 as the step began (x, not the constant).
ENTANGLED = """mncore.program @p machine "tiny" {{
  mncore.tensor @x input dram[0] : tensor<128xf32>
  mncore.tensor @c constant dram[128] = dense<7.0> : tensor<4xf32>
  mncore.tensor @y output dram[256] : tensor<128xf32>
  mncore.tensor @z output dram[384] : tensor<128xf32>
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 128 tag 1
  mncore.dma 1 "load" dram[128] -> l2bm[128] words 4 tag 2
  mncore.wait 40 tag 1
  mncore.wait 41 tag 2
  mncore.l2 42 "scatter" l2bm[0] -> l1bm[0] words 64
  mncore.l2 43 "bcast" l2bm[128] -> l1bm[64] words 4
  mncore.l1 50 "scatter" l1bm[0] -> grf0[0]
  mncore.l1 60 "bcast" l1bm[64] -> grf0[0]
  mncore.alu 60 "{copy}" grf0[0]{second} -> lm0[0]
  mncore.l1 70 "gather" lm0[0] -> l1bm[128]
  mncore.l1 71 "gather" grf0[0] -> l1bm[256]
  mncore.l2 80 "gather" l1bm[128] -> l2bm[256] words 64
  mncore.l2 81 "gather" l1bm[256] -> l2bm[512] words 64
  mncore.dma 90 "store" l2bm[256] -> dram[256] words 128 tag 3
  mncore.dma 91 "store" l2bm[512] -> dram[384] words 128 tag 4
  mncore.wait 140 tag 3
  mncore.wait 141 tag 4
}}"""


@pytest.mark.parametrize(("copy", "second", "expected"), [
    ("fpass", "", lambda x: x), ("fadd", ", grf1[0]", lambda x: x),
    ("fmax", ", lm1[0]", lambda x: np.maximum(x, 0))])
def test_a_slot_reads_its_step_s_state_before_another_writes_it(
        copy: str, second: str, expected: Callable[[np.ndarray], np.ndarray]) -> None:
    """A bundle whose L1 transfer writes what its ALU reads runs as the machine does
    (all reads, then all writes) in later runs too."""
    program = find_program(parse_module(make_context(), ENTANGLED.format(
        copy=copy, second=second), "t.mlir"))
    x = np.linspace(-3, 3, 128, dtype=np.float32)
    y, z = runs_agree(program, [[x], [x + 1], [-x]])
    np.testing.assert_array_equal(y, expected(-x))
    np.testing.assert_array_equal(z, np.full(128, 7.0, np.float32))


def test_a_program_reading_fwd_runs_without_a_plan() -> None:
    """``fwd`` hands an ALU result to the next step's slot: such a program's later
    runs take the generic path, and compute the same."""
    text = ENTANGLED.format(copy="fpass", second="").replace(
        'mncore.l1 60 "bcast" l1bm[64] -> grf0[0]\n  mncore.alu 60 "fpass" grf0[0] -> lm0[0]',
        'mncore.alu 59 "fadd" grf0[0], lm1[0] -> grf1[0]\n'
        '  mncore.l1 60 "bcast" l1bm[64] -> grf0[0]\n'
        '  mncore.alu 60 "fadd" fwd[0], fwd[0] -> lm0[0]')
    assert "fwd" in text
    program = find_program(parse_module(make_context(), text, "t.mlir"))
    x = np.linspace(-3, 3, 128, dtype=np.float32)
    simulator = Simulator(program)
    for run in ([x], [2 * x]):
        (y, _), _ = simulator.run(run)
        np.testing.assert_array_equal(y, 2 * run[0])  # x + 0 (lm1's zeros), doubled
    assert [plan for _, plan, _ in simulator._plans] == [None]
    runs_agree(program, [[x], [x - 1]])
