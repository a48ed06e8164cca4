"""convert-task-to-mncore's packing (``packing.py``): small tasks computing one
pointwise body on different tensors share waves. Against eager PyTorch, bit for bit
against the same program unpacked (``packed=false``), which tasks are grouped and
which must not be (one reads what another writes in between), and random dataflow
graphs of small updates, some reading others' results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from conftest import assert_all_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.testing.model_zoo import mlp_sgd
from mncore_ir.transforms.convert_task_to_mncore.packing import pack

TASKS = "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task{target=mncore}"


def lowered(fn: Callable[..., Any], inputs: list[torch.Tensor], machine: str, packed: bool
            ) -> m.ProgramOp:
    module = import_captured(capture(fn, *inputs))
    apply_pipeline(module, f"{TASKS},convert-task-to-mncore{{machine={machine} "
                           f"packed={str(packed).lower()}}},mncore-forward-stores,"
                           "mncore-schedule")
    return find_program(module)


def groups(fn: Callable[..., Any], inputs: list[torch.Tensor], lanes: int = 64
           ) -> list[list[str]]:
    """The groups ``pack`` finds at the task level, as the shapes each member writes."""
    module = import_captured(capture(fn, *inputs))
    apply_pipeline(module, TASKS)
    kernel = find_kernel(module)
    tasks = kernel.tasks()
    computed = [t.computation(task, kernel.bodies()) for task in tasks]
    _, found = pack(tasks, computed, lanes)
    return [[str(tasks[i].writes()[0][1]) for i in members] for members in found.values()]


def alu_issues(prog: m.ProgramOp) -> int:
    return sum(1 for _, op, *_ in prog.issues() if isinstance(op, m.AluOp))


def check(fn: Callable[..., Any], inputs: list[torch.Tensor], machine: str) -> tuple[int, int]:
    """Packed and unpacked programs: equal bit for bit, and to eager; their ALU issues."""
    with torch.no_grad():
        eager = [r.numpy() for r in fn(*inputs)]
    arrays = [x.numpy() for x in inputs]
    packed, unpacked = (lowered(fn, inputs, machine, p) for p in (True, False))
    ours, _ = simulate(packed, arrays)  # raises on any hazard
    theirs, _ = simulate(unpacked, arrays)
    assert_all_close(ours, eager)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
    return alu_issues(packed), alu_issues(unpacked)


def sgd(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Momentum SGD on three parameters of unlike shapes: one body, three tasks."""
    out = []
    for p, grad, buf in zip(tensors[0::3], tensors[1::3], tensors[2::3], strict=True):
        buf = buf * 0.9 + grad
        out += [p - 0.1 * buf, buf]
    return tuple(out)


SHAPES = [(3, 5), (7,), (4, 4)]


def sgd_inputs(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in SHAPES for _ in range(3)]


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_small_updates_share_waves(machine: str) -> None:
    """The three updates are one group; packed, they issue a third of the ALU
    instructions (or fewer), with the same results."""
    assert groups(sgd, sgd_inputs()) == [["0:3, 0:5", "0:7", "0:4, 0:4"]]
    packed, unpacked = check(sgd, sgd_inputs(), machine)
    assert 3 * packed <= unpacked


def test_tasks_larger_than_one_l1b_of_a_wave_are_not_packed() -> None:
    assert groups(sgd, sgd_inputs(), lanes=15) == [["0:3, 0:5", "0:7"]]
    assert groups(sgd, sgd_inputs(), lanes=6) == []


def chained(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``a`` and ``c`` compute one body, but ``b``, between them, reads ``a`` and
    ``c`` reads ``b``: ``a`` may not move past ``b``."""
    a = torch.tanh(x) * 0.5 + y
    b = a.sum(dim=0, keepdim=True) * z
    c = torch.tanh(b) * 0.5 + z
    return a, c


def overwritten(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``a`` and ``c`` share a body and read nothing the other writes: one group."""
    a = torch.tanh(x) * 0.5 + y
    b = z.sum(dim=0, keepdim=True)
    c = torch.tanh(z) * 0.5 + b
    return a, c


def test_a_member_read_in_between_stays_in_place() -> None:
    inputs = [torch.randn(3, 4), torch.randn(3, 4), torch.randn(1, 4)]
    assert groups(chained, inputs) == []
    check(chained, inputs, "tiny")
    assert groups(overwritten, inputs) == [["0:3, 0:4", "0:1, 0:4"]]
    packed, unpacked = check(overwritten, inputs, "tiny")
    assert packed < unpacked


def test_the_mlp_steps_bias_updates_are_packed() -> None:
    """The MLP step's SGD updates of its three biases are one group on mncore2 (at most
    256 lanes each); its weights' (320 to 1,024 lanes) stay tasks of their own."""
    step = mlp_sgd()
    module = import_captured(capture(step, *step.example_inputs()))
    apply_pipeline(module, TASKS)
    kernel = find_kernel(module)
    tasks = kernel.tasks()
    computed = [t.computation(task, kernel.bodies()) for task in tasks]
    _, found = pack(tasks, computed, 4 * 64)
    assert [[str(tasks[i].writes()[0][1]) for i in members] for members in found.values()
            ] == [["0:32", "0:32", "0:10"]]


@st.composite
def updates(draw: st.DrawFn) -> dict[str, Any]:
    """Updates ``p * 0.5 + q`` (one body) of small tensors, each reading inputs or
    earlier updates' results (those must not be packed with what they read)."""
    count = draw(st.integers(2, 6))
    shapes = [draw(st.sampled_from([(2, 3), (5,), (1, 3), (4, 4), (9,)])) for _ in range(count)]
    reads = []
    for i in range(count):
        same = [j for j in range(i) if shapes[j] == shapes[i]]  # earlier results of its shape
        reads.append([draw(st.sampled_from([None, *same])) for _ in range(2)])
    return {"shapes": shapes, "reads": reads, "seed": draw(st.integers(0, 99)),
            "machine": draw(st.sampled_from(["tiny", "mncore2"]))}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=updates())
def test_random_updates_match_eager_and_the_unpacked_program(graph: dict[str, Any]) -> None:
    g = torch.Generator().manual_seed(graph["seed"])
    shapes = graph["shapes"]
    inputs = [torch.randn(s, generator=g) for s in shapes for _ in range(2)]

    def fn(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        results: list[torch.Tensor] = []
        for i, (a, b) in enumerate(graph["reads"]):
            p = xs[2 * i] if a is None else results[a]
            q = xs[2 * i + 1] if b is None else results[b]
            results.append(p * 0.5 + q)
        return tuple(results)

    check(fn, inputs, graph["machine"])


def unlike_integers(x: torch.Tensor, n: torch.Tensor, y: torch.Tensor, k: torch.Tensor
                    ) -> tuple[torch.Tensor, ...]:
    """One body on integer arguments of unlike ranges (sums of clamped values, [0, 8]
    and [0, 16]): the ALU code is derived from its arguments' ranges, so the group is
    lowered task by task."""
    i = torch.clamp(n, 0, 4).sum(dim=0)
    j = torch.clamp(k, 0, 8).sum(dim=0)
    return x * 0.5 + i, y * 0.5 + j


def test_integer_arguments_of_unlike_ranges_are_lowered_one_by_one() -> None:
    inputs = [torch.randn(3), torch.randint(-20, 20, (2, 3)), torch.randn(3),
              torch.randint(-20, 20, (2, 3))]
    assert groups(unlike_integers, inputs) == [["0:3", "0:3"]]
    packed, unpacked = check(unlike_integers, inputs, "tiny")
    assert packed == unpacked
