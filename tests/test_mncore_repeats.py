"""``mncore.repeat``: the compact form of repeated instruction groups.

Random programs (hypothesis) mix plain instructions with groups of ALU, MAU and L1
instructions whose references advance per iteration. Spaced out (every instruction,
every iteration's too, far from the last: their meaning), they run without a hazard;
``mncore-schedule`` then packs each group as a unit with a modulo schedule, and the
packed program must end with every memory as the spaced one, and so must its expansion
by ``mncore-expand-repeats``."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mncore import SPACING, instruction, matmul_module, run

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.transforms.convert_task_to_mncore import matmul
from mncore_ir.transforms.mncore_expand_repeats import expand_repeats
from mncore_ir.transforms.mncore_schedule import schedule

Unit = list[str] | tuple[int, list[str]]  # an instruction (a DMA with its wait), or a group


@st.composite
def body_instruction(draw: st.DrawFn) -> str:
    """An ALU, MAU or L1 instruction whose references may advance per iteration (at
    most 4 iterations: 8 words a pass stays inside tiny's GRF)."""
    lines = draw(instruction(0).filter(
        lambda lines: lines[0].split()[0] in ("mncore.alu", "mncore.mau", "mncore.l1")))
    strides = st.sampled_from([0, 0, 1, 4, 8])
    return re.sub(r"\b(lm0|lm1|grf0|grf1|l1bm)\[(\d+)\]",
                  lambda ref: f"{ref[1]}[{ref[2]} + {draw(strides)} * i]", lines[0])


@st.composite
def programs_with_groups(draw: st.DrawFn, l2bs: int = 1) -> list[Unit]:
    units: list[Unit] = []
    for tag in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            units.append((draw(st.integers(1, 4)),
                          draw(st.lists(body_instruction(), min_size=1, max_size=5))))
        else:
            units.append(draw(instruction(tag, l2bs)))
    return units


def spaced_text(units: list[Unit], machine: str) -> str:
    """Every issue ``SPACING`` steps after the last: a group's body ``SPACING`` apart
    and its iterations one body apart."""
    lines, step = [], 0
    for unit in units:
        if isinstance(unit, tuple):
            count, body = unit
            lines.append(f"mncore.repeat {step} count {count} period {SPACING * len(body)} {{")
            lines += ["  " + line.format(SPACING * k) for k, line in enumerate(body)]
            lines.append("}")
            step += SPACING * len(body) * count
            continue
        for line in unit:
            lines.append(line.format(step))
            step += SPACING
    return (f'mncore.program @p machine "{machine}" {{\n'
            "  mncore.tensor @x input dram[0] : tensor<32xf32>\n"
            "  mncore.tensor @y output dram[64] : tensor<32xf32>\n"
            + "".join(f"  {line}\n" for line in lines) + "}\n")


def check_packed(units: list[Unit], machine: str) -> None:
    ctx = make_context()
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    text = spaced_text(units, machine)
    expected, spaced_steps, _ = run(find_program(parse_module(ctx, text, "spaced.mlir")), x)
    module = parse_module(ctx, text, "packed.mlir")
    program = find_program(module)
    steps = schedule(program)
    module.verify()
    got, packed_steps, stalls = run(program, x)  # raises HazardError on any hazard
    assert (packed_steps, stalls) == (steps, 0)
    if machine == "tiny":
        assert steps <= spaced_steps
    groups = sum(isinstance(op, m.RepeatOp) for op in program.units())
    assert groups == sum(isinstance(u, tuple) for u in units)  # packed as units
    expand_repeats(program)
    module.verify()
    assert not any(isinstance(op, m.RepeatOp) for op in program.units())
    flat, _, _ = run(program, x)
    for space in expected:
        np.testing.assert_array_equal(got[space], expected[space], err_msg=space)
        np.testing.assert_array_equal(flat[space], expected[space], err_msg=space)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=programs_with_groups())
def test_packed_groups_keep_their_meaning(units: list[Unit]) -> None:
    check_packed(units, "tiny")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=programs_with_groups(MACHINES["mncore2"].l2bs))
def test_packed_groups_on_mncore2_keep_their_meaning(units: list[Unit]) -> None:
    check_packed(units, "mncore2")


@pytest.mark.parametrize(("machine", "rows", "depth", "cols", "kernel", "min_pairs"), [
    ("tiny", 40, 68, 30, "stationary", 1),  # groups of every length on tiny's small units
    ("tiny", 20, 60, 70, "swapped", 1),  # vmm on B^T's matrices
    ("tiny", 70, 36, 9, "stationary", 2),  # a unit that starts on an odd row of 4 of K
    ("mncore2", 40, 1030, 300, "stationary", 8),  # the default: K in chunks, 6 past 1024
])
def test_matmul_groups_compute_what_plain_instructions_do(
        monkeypatch: pytest.MonkeyPatch, machine: str, rows: int, depth: int, cols: int,
        kernel: str, min_pairs: int) -> None:
    """The stationary kernel's inner loop as repeated groups: the same instructions
    issued (a group expands to the plain ones), bit-identical outputs, numpy's product
    within f32 rounding."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (1, rows, depth)).astype(np.float32)
    b = rng.uniform(-2, 2, (1, depth, cols)).astype(np.float32)
    found = {}
    for grouped in (True, False):
        monkeypatch.setattr(matmul, "MIN_PAIRS", min_pairs if grouped else 10**9)
        module = matmul_module(1, rows, depth, cols)
        apply_pipeline(module, "convert-graph-to-task{target=mncore matmul_tile=256,1024},"
                               f"convert-task-to-mncore{{machine={machine} "
                               f"matmul_kernel={kernel}}}")
        program = find_program(module)
        issued = Counter((op.name, op.kind.data) for op in program.instructions())
        groups = sum(isinstance(op, m.RepeatOp) for op in program.units())
        schedule(program)
        (out,), _ = simulate(program, [a, b])
        found[grouped] = (issued, groups, out)
    assert found[True][1] > 0 and found[False][1] == 0
    assert found[True][0] == found[False][0]
    np.testing.assert_array_equal(found[True][2], found[False][2])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(found[True][2], exact, rtol=1e-5, atol=2e-7 * depth)


def test_a_group_issuing_after_later_instructions_runs_in_issue_order() -> None:
    """A group of one iteration of one instruction, issued after an instruction written
    after it: the simulator runs issues by step (the fpass at 3 reads grf0[0] before
    the group's fneg at 6 writes it, and the gather at 9 sees the fneg's result)."""
    program = find_program(parse_module(make_context(), """
    mncore.program @p machine "tiny" {
      mncore.tensor @y output dram[0] : tensor<2x64xf32>
      mncore.alu 0 "fzero" -> grf0[0]
      mncore.repeat 1 count 1 period 1 {
        mncore.alu 5 "fneg" lm0[0] -> grf0[0]
      }
      mncore.alu 3 "fpass" grf0[0] -> grf1[0]
      mncore.l1 9 "gather" grf0[0] -> l1bm[0]
      mncore.l2 12 "gather" l1bm[0] -> l2bm[0] words 64
      mncore.dma 16 "store" l2bm[0] -> dram[0] words 128 tag 1
      mncore.wait 17 tag 1
    }""", "t.mlir"))
    memories: dict[str, np.ndarray] = {}
    (y,), report = simulate(program, [], memories=memories)
    assert report.steps == 18
    np.testing.assert_array_equal(y, np.zeros((2, 64), np.float32))  # -0.0 == 0.0
    assert np.signbit(y).all()  # the fneg's -0.0, not the fzero's +0.0
    np.testing.assert_array_equal(memories["grf1"][:, :4], 0.0)
