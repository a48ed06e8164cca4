"""Sums and means through the tree (``lanes.sum_trees``): many sums at once, each on its
own L1B or L2B, against eager PyTorch on both machines, random (hypothesis) and chosen
shapes (a wave of sums past one L2B, more sums than L1Bs, few sums of many elements,
strided outputs), and the convolution's bias gradient, which sums through
the tree too."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from conftest import assert_all_close
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import MNCORE_TASKS, apply_pipeline
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.transforms.convert_task_to_mncore.emitter import Emitter
from mncore_ir.transforms.convert_task_to_mncore.lanes import TreePlan, tree_plan


def lowered(fn: Callable[..., torch.Tensor], inputs: list[torch.Tensor], machine: str
            ) -> tuple[m.ProgramOp, list[np.ndarray]]:
    """``fn`` lowered for ``machine`` as the mncore device lowers it, and its eager
    result."""
    module = import_captured(capture(lambda *xs: (fn(*xs),), *inputs))
    apply_pipeline(module, f"canonicalize,cse,dce,convert-graph-to-task{{{MNCORE_TASKS}}},"
                           f"convert-task-to-mncore{{machine={machine}}},"
                           "mncore-forward-stores,mncore-schedule")
    with torch.no_grad():
        return find_program(module), [fn(*inputs).numpy()]


def trees(program: m.ProgramOp) -> int:
    """The tree passes in ``program``: each gathers one word per L1B (its sums)."""
    return sum(isinstance(op, m.L2Op) and op.kind.data == "gather" and op.count == 1
               for op in program.instructions())


#: (shape, dims, keepdim, op, machines whose lowering takes the tree)
CASES = {
    "batch norm's sums (16 of 256)": ((4, 16, 8, 8), (0, 2, 3), False, "sum", "both"),
    "means of 1024, keepdim": ((4, 8, 16, 16), (0, 2, 3), True, "mean", "both"),
    "70 sums: 9 waves of 8 on mncore2": ((70, 300), (1,), False, "sum", "both"),
    "128 sums: 2 waves of 64 on mncore2": ((128, 256), (1,), False, "sum", "mncore2"),
    "64 sums of 512: 2 passes on mncore2": ((64, 512), (1,), False, "mean", "both"),
    "3 sums of 5000: one per L2B": ((3, 5000), (1,), False, "sum", "both"),
    "a strided output": ((3, 600, 5), (1,), False, "mean", "both"),
    "short sums: a narrow pass": ((8, 10), (1,), True, "sum", "mncore2"),
}


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
@pytest.mark.parametrize("case", CASES)
def test_tree_sums_match_eager(case: str, machine: str) -> None:
    shape, dims, keepdim, kind, tree = CASES[case]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    op = torch.sum if kind == "sum" else torch.mean
    program, eager = lowered(lambda x: op(x, dims, keepdim=keepdim), [x], machine)
    if tree in ("both", machine):
        assert trees(program) >= 1, "the reduction did not go through the tree"
    outputs, _ = simulate(program, [x.numpy()])  # raises on any hazard
    assert_all_close(outputs, eager)


def test_the_plan_puts_a_sum_on_each_l1b_or_each_l2b() -> None:
    """Many short sums take one L1B each (64 at once on mncore2); a few long ones a
    whole L2B each, which moves fewer words (every lane of a used L1B is loaded); a
    one-pass sum loads only its words of each L1B."""
    e = Emitter(MACHINES["mncore2"])
    assert tree_plan(e, 16, 256) == TreePlan(span=1, per=8, passes=1, width=256)
    assert tree_plan(e, 8, 10) == TreePlan(span=1, per=8, passes=1, width=12)
    assert tree_plan(e, 128, 256) == TreePlan(span=1, per=8, passes=1, width=256)  # 2 waves
    assert tree_plan(e, 64, 512) == TreePlan(span=1, per=8, passes=2, width=256)
    assert tree_plan(e, 70, 300) == TreePlan(span=8, per=1, passes=1, width=40)  # 9 waves
    assert tree_plan(e, 3, 5000) == TreePlan(span=8, per=1, passes=3, width=256)
    assert tree_plan(e, 1, 100) == TreePlan(span=8, per=1, passes=1, width=16)
    assert tree_plan(e, 1, 0) == TreePlan(span=1, per=8, passes=1, width=4)


def test_many_sums_share_a_tree_pass() -> None:
    """Batch norm's 16 sums of 256 elements: one pass of loads and one tree for all of
    them (each sum waited for the last one's store before)."""
    x = torch.randn(4, 16, 8, 8)
    program, eager = lowered(lambda x: x.sum((0, 2, 3)), [x], "mncore2")
    assert trees(program) == 1
    assert sum(isinstance(op, m.L1Op) and op.kind.data == "reduce"
               for op in program.instructions()) == 1
    outputs, _ = simulate(program, [x.numpy()])
    assert_all_close(outputs, eager)


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_the_convolution_bias_gradient_sums_through_the_tree(machine: str) -> None:
    """``conv2d_backward``'s bias gradient: a sum per output channel, all at once."""
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    w = torch.randn(5, 3, 3, 3, requires_grad=True)
    b = torch.randn(5, requires_grad=True)

    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, dy: torch.Tensor
           ) -> tuple[torch.Tensor, ...]:
        return torch.ops.aten.convolution_backward(
            dy, x, w, [5], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])

    dy = torch.randn(2, 5, 6, 6)
    module = import_captured(capture(fn, x.detach(), w.detach(), b.detach(), dy))
    apply_pipeline(module, "canonicalize,cse,dce,convert-graph-to-task{target=mncore},"
                           f"convert-task-to-mncore{{machine={machine}}},mncore-schedule")
    program = find_program(module)
    arrays = [t.detach().numpy() for t in (x, w, b, dy)]
    outputs, _ = simulate(program, arrays)
    with torch.no_grad():
        eager = [t.numpy() for t in fn(x.detach(), w.detach(), b.detach(), dy)]
    assert trees(program) >= 1
    assert_all_close(outputs, eager)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=3),
       data=st.data(), machine=st.sampled_from(["tiny", "mncore2"]),
       mean=st.booleans(), keepdim=st.booleans())
def test_random_sums_match_eager(shape: list[int], data: st.DataObject, machine: str,
                                 mean: bool, keepdim: bool) -> None:
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    x = torch.randn(shape, generator=torch.Generator().manual_seed(len(shape)))
    op = torch.mean if mean else torch.sum
    program, eager = lowered(lambda x: op(x, dims, keepdim=keepdim), [x], machine)
    event(f"tree: {bool(trees(program))}")
    outputs, _ = simulate(program, [x.numpy()])
    assert_all_close(outputs, eager)


@pytest.mark.parametrize(("shape", "maxed"), [((40, 33), 4), ((40, 7), 3)])
def test_lane_reductions_take_turns_with_accumulators(shape: tuple[int, int],
                                                      maxed: int) -> None:
    """A lane reduction (amax never goes through the tree) accumulates into up to 4
    GRF words in turn, combined at the end: each chain of dependent ``fmax``es is a
    quarter as long. Of 7 elements, the fourth accumulator only takes its first (a
    copy), so 3 accumulators see an ``fmax``."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    program, eager = lowered(lambda x: x.amax(1), [x], "tiny")
    written = {str(op.destination()) for op in program.instructions()
               if isinstance(op, m.AluOp) and op.kind.data == "fmax"}
    assert len(written) == maxed  # the combine writes the first one again
    outputs, _ = simulate(program, [x.numpy()])
    assert_all_close(outputs, eager)
