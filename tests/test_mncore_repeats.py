"""``mncore.repeat``: the compact form of repeated instruction groups.

Random programs (hypothesis) mix plain instructions with groups of ALU, MAU and L1
instructions whose references advance per iteration. Spaced out (every instruction,
every iteration's too, far from the last: their meaning), they run without a hazard;
``mncore-schedule`` then packs each group as a unit with a modulo schedule, and the
packed program must end with every memory as the spaced one, and so must its expansion
by ``mncore-expand-repeats``."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mncore import SPACING, instruction, run

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import make_context
from mncore_ir.targets.mncore_simulator import find_program
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
    expected, spaced_steps = run(find_program(parse_module(ctx, text, "spaced.mlir")), x)
    module = parse_module(ctx, text, "packed.mlir")
    program = find_program(module)
    steps = schedule(program)
    module.verify()
    got, packed_steps = run(program, x)  # raises HazardError on any hazard
    assert packed_steps == steps
    if machine == "tiny":
        assert steps <= spaced_steps
    groups = sum(isinstance(op, m.RepeatOp) for op in program.units())
    assert groups == sum(isinstance(u, tuple) for u in units)  # packed as units
    expand_repeats(program)
    module.verify()
    assert not any(isinstance(op, m.RepeatOp) for op in program.units())
    flat, _ = run(program, x)
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
