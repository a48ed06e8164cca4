"""The mncore level: machine descriptions, the cycle simulator, the list scheduler and
the first part of convert-task-to-mncore (elementwise kernels), against the task level.

Random straight-line programs (hypothesis) are given widely spaced steps (a schedule
with no hazard by construction: their meaning) and then scheduled by
``mncore-schedule``: the scheduled program verifies, runs without a hazard, ends with
every memory equal to the spaced program's, and is never longer."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as task_dialect
from mncore_ir.dialects.mncore_isa import MAU
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.mncore_simulator import HazardError, find_program, simulate
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.task_simulator import simulate as simulate_kernel
from mncore_ir.testing.model_zoo import MLP
from mncore_ir.transforms.convert_task_to_mncore import MNCoreConversionError
from mncore_ir.transforms.mncore_schedule import DmaQueue, ScheduleError, schedule

SPACING = 12  # steps between instructions of the reference: more than any latency

PE = ["lm0", "lm1", "grf0", "grf1"]
ALU = {"fadd": 2, "fsub": 2, "fmul": 2, "fmax": 2, "fmin": 2, "fmadd": 3, "fpass": 1,
       "fneg": 1, "fzero": 0}


def test_mncore2_is_the_public_topology() -> None:
    machine = MACHINES["mncore2"]
    assert (machine.pes, machine.l1bs, machine.l2bs) == (4096, 64, 8)
    assert (machine.lm_words, machine.grf_words, machine.l1bm_words, machine.l2bm_words) == (
        2048, 256, 8192, 32768)
    assert machine.pes_per_l1b == 64


@st.composite
def instruction(draw: st.DrawFn, tag: int, l2bs: int = 1) -> list[str]:
    """One instruction (a DMA comes with its wait) as text without its step. PE
    operands obey the port rules within the instruction: an LM once, a GRF read once
    and written once. With ``l2bs`` > 1, a DMA may touch one L2B's copy of L2BM."""
    used: list[tuple[str, str]] = []

    def pe(words: int = 4, direction: str = "read") -> str:
        allowed = [s for s in PE if not any(u == s and (s.startswith("lm") or d == direction)
                                            for u, d in used)]
        space = draw(st.sampled_from(allowed))
        used.append((space, direction))
        limit = 16 if space.startswith("grf") else 24
        return f"{space}[{draw(st.integers(0, limit - words))}]"

    what = draw(st.sampled_from(["alu", "alu", "alu", "mau", "l1", "l2", "dma"]))
    if what == "alu":
        kind = draw(st.sampled_from(sorted(ALU)))
        srcs = ", ".join(pe() for _ in range(ALU[kind]))
        return [f'mncore.alu {{}} "{kind}" {srcs} -> {pe(direction="write")}']
    if what == "mau":
        return [f'mncore.mau {{}} "mma" {pe(16)}, {pe()}, {pe()} -> {pe(direction="write")}']
    if what == "l1":
        kind = draw(st.sampled_from(["bcast", "scatter", "gather", "reduce"]))
        l1bm = f"l1bm[{draw(st.sampled_from([0, 4, 64, 128]))}]"
        if kind in ("bcast", "scatter"):
            return [f'mncore.l1 {{}} "{kind}" {l1bm} -> {pe(direction="write")}']
        return [f'mncore.l1 {{}} "{kind}" {pe()} -> {l1bm}']
    if what == "l2":
        kind = draw(st.sampled_from(["bcast", "scatter", "gather", "reduce"]))
        l1bm = f"l1bm[{draw(st.sampled_from([0, 8, 64]))}]"
        l2bm = f"l2bm[{draw(st.sampled_from([0, 8, 32]))}]"
        if kind in ("bcast", "scatter"):
            return [f'mncore.l2 {{}} "{kind}" {l2bm} -> {l1bm} words 8']
        return [f'mncore.l2 {{}} "{kind}" {l1bm} -> {l2bm} words 8']
    copy = f" l2b {draw(st.integers(0, l2bs - 1))}" if l2bs > 1 and draw(st.booleans()) else ""
    # whole runs, or every other word (a column's stride: interleaved stores touch
    # disjoint words of one range), or one word again and again (a load's stride 0)
    layout = draw(st.sampled_from(["words 16", "words 8 run 1 stride 2",
                                   "words 8 run 1 stride 0"]))
    if draw(st.booleans()):
        transfer = (f'mncore.dma {{}} "load" dram[{draw(st.sampled_from([0, 1, 16, 64, 65]))}] -> '
                    f"l2bm[{draw(st.sampled_from([0, 8, 32]))}] {layout}{copy} tag {tag}")
    else:
        layout = layout.replace("stride 0", "stride 2")  # a store writes each word once
        transfer = (f'mncore.dma {{}} "store" l2bm[{draw(st.sampled_from([0, 8, 32]))}] -> '
                    f"dram[{draw(st.sampled_from([64, 65, 80]))}] {layout}{copy} tag {tag}")
    return [transfer, f"mncore.wait {{}} tag {tag}"]


@st.composite
def programs(draw: st.DrawFn, l2bs: int = 1) -> list[str]:
    lines: list[str] = []
    for tag in range(draw(st.integers(1, 30))):
        lines += draw(instruction(tag, l2bs))
    return lines


def program_text(lines: list[str], name: str = "p", machine: str = "tiny") -> str:
    body = "\n".join("  " + line.format(SPACING * i) for i, line in enumerate(lines))
    return (f'mncore.program @{name} machine "{machine}" {{\n'
            "  mncore.tensor @x input dram[0] : tensor<32xf32>\n"
            "  mncore.tensor @y output dram[64] : tensor<32xf32>\n"
            f"{body}\n}}\n")


def run(program: m.ProgramOp, x: np.ndarray) -> tuple[dict[str, np.ndarray], int, int]:
    """The memories after ``program``, its steps and its cycles of DMA stalls."""
    memories: dict[str, np.ndarray] = {}
    _, report = simulate(program, [x], memories=memories)
    return memories, report.steps, report.stall_cycles


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=programs())
def test_scheduled_random_programs_keep_their_meaning(lines: list[str]) -> None:
    check_scheduled(lines, "tiny")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=programs(MACHINES["mncore2"].l2bs))
def test_scheduled_random_programs_on_mncore2_keep_their_meaning(lines: list[str]) -> None:
    """Its DMAs may touch one L2B's copy of L2BM each: what the other copies still hold
    keeps its dependencies (fewer examples: each simulates 4,096 PEs)."""
    check_scheduled(lines, "mncore2")


def check_scheduled(lines: list[str], machine: str) -> None:
    """The scheduled program runs without a hazard and without a stall (the scheduler's
    model of the DMA queue is the simulator's) and ends with every memory as the one
    spaced out step by step does."""
    ctx = make_context()
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    text = program_text(lines, machine=machine)
    reference = find_program(parse_module(ctx, text, "reference.mlir"))
    expected, spaced_steps, _ = run(reference, x)
    module = parse_module(ctx, text, "scheduled.mlir")
    program = find_program(module)
    steps = schedule(program)
    module.verify()
    got, scheduled_steps, stalls = run(program, x)  # raises HazardError on any hazard
    assert (scheduled_steps, stalls) == (steps, 0)
    if machine == "tiny":  # on mncore2 a wait lands after a DMA's 100 cycles of set-up,
        assert steps <= spaced_steps  # where the reference's stalls at its step
    assert sorted(got) == sorted(expected)
    for space in expected:
        np.testing.assert_array_equal(got[space], expected[space], err_msg=space)


def parse_program(text: str) -> m.ProgramOp:
    return find_program(parse_module(make_context(), text, "t.mlir"))


def test_scheduler_overlaps_independent_work() -> None:
    """Two independent chains interleave: the schedule is shorter than either placed
    one after the other."""
    lines = ['mncore.alu {} "fzero" -> grf0[0]', 'mncore.alu {} "fadd" grf0[0], lm1[0] -> lm0[0]',
             'mncore.l1 {} "gather" lm1[8] -> l1bm[0]', 'mncore.l1 {} "bcast" l1bm[64] -> grf1[0]']
    program = parse_program(program_text(lines))
    # The fadd waits 3 steps for grf0; the transfers fill the L1 slot at steps 0 and 1.
    assert schedule(program) == 4
    assert [(op.name, op.at) for op in program.instructions()] == [
        ("mncore.alu", 0), ("mncore.l1", 0), ("mncore.l1", 1), ("mncore.alu", 3)]


def test_a_dma_ready_early_goes_before_one_placed_earlier_but_waiting() -> None:
    """The store waits for a chain of ALU results and is placed first (it leads a
    longer path: a DRAM round trip); the independent load, ready at once, still issues
    first, in a gap of the engine's queue that delays nothing placed before it."""
    chain = ['mncore.alu {} "fzero" -> grf0[0]'] + [
        'mncore.alu {} "fadd" grf0[0], lm1[0] -> grf0[0]'] * 8
    lines = [*chain,
             'mncore.l1 {} "gather" grf0[0] -> l1bm[0]',
             'mncore.l2 {} "gather" l1bm[0] -> l2bm[0] words 8',
             'mncore.dma {} "store" l2bm[0] -> dram[64] words 16 tag 1', "mncore.wait {} tag 1",
             'mncore.dma {} "load" dram[64] -> l2bm[32] words 16 tag 2', "mncore.wait {} tag 2",
             'mncore.l2 {} "bcast" l2bm[32] -> l1bm[64] words 8',
             'mncore.dma {} "load" dram[0] -> l2bm[64] words 16 tag 3', "mncore.wait {} tag 3",
             'mncore.l2 {} "bcast" l2bm[64] -> l1bm[128] words 8']
    check_scheduled(lines, "mncore2")
    program = parse_program(program_text(lines, machine="mncore2"))
    schedule(program)
    dmas = [(op.kind.data, op.tag_number(), op.at) for op in program.instructions()
            if isinstance(op, m.DmaOp)]
    assert [d[:2] for d in dmas] == [("load", 3), ("store", 1), ("load", 2)], dmas
    assert dmas[0][2] == 0


def test_dma_queue_places_a_dma_only_where_it_delays_none() -> None:
    """mncore2: 100 cycles of set-up, 16 words a cycle, 4 cycles a step."""
    queue = DmaQueue(MACHINES["mncore2"])
    assert queue.place(10, 1600) == 40 + 100 + 100  # steps 10 to 60: the engine busy
    # 16 words at step 0 finish at cycle 101, before the first starts at 140
    assert queue.earliest(0, 16) == 0
    # 1,600 words would push it to cycle 200: placed after it instead, and queued behind
    assert queue.earliest(0, 1600) == 11
    assert queue.place(11, 1600) == 240 + 100
    assert queue.earliest(5, 16) == 5 and queue.place(5, 16) == 121
    assert queue.earliest(6, 16) == 6  # from cycle 124 to 125: the gap holds it
    assert queue.earliest(6, 400) == 12  # to 149, past the next start: after the last
    assert queue.finishes == [121, 240, 340]


def test_scheduler_refuses_dma_data_read_before_its_wait() -> None:
    lines = ['mncore.dma {} "load" dram[0] -> l2bm[0] words 4 tag 1',
             'mncore.l2 {} "bcast" l2bm[0] -> l1bm[0] words 4', "mncore.wait {} tag 1"]
    with pytest.raises(ScheduleError, match="reads the words of the DMA at step 0 before "
                                            "waiting for it"):
        schedule(parse_program(program_text(lines)))


def test_simulator_reports_a_read_before_ready() -> None:
    program = parse_program(program_text(['mncore.alu {} "fzero" -> grf0[0]',
                                          'mncore.alu {} "fpass" grf0[0] -> grf1[0]']).replace(
        "fpass\" grf0[0] -> grf1[0]", "fpass\" grf0[0] -> grf1[0]").replace(" 12 ", " 2 "))
    with pytest.raises(HazardError, match=r"step 2: mncore.alu 'fpass': reads grf0\[0\] "
                                          r"written at step 0, ready only at step 3"):
        simulate(program, [np.zeros(32, np.float32)])


# --------------------------------------------------------------------------- conversion

UNARY_TORCH = {"neg": torch.neg, "exp": torch.exp, "relu": torch.relu,
               "sigmoid": torch.sigmoid, "sqrt": lambda x: torch.sqrt(x.abs() + 1),
               "reciprocal": lambda x: torch.reciprocal(x.abs() + 1),
               # copies: permutes and reshapes around an elementwise op
               "transposed": lambda x: (x.t() * 2).t() if x.dim() == 2 else x * 2,
               "flattened": lambda x: (x.reshape(-1) * 3).reshape(x.shape)}
BINARY_TORCH = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
                "div": lambda x, y: x / (y.abs() + 1), "maximum": torch.maximum,
                "minimum": torch.minimum, "scale": lambda x, y: x * 0.5 + y}


@st.composite
def elementwise_programs(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], list[tuple[Any, ...]]]:
    """Input shapes (a full tensor, a row, a scalar...) and a chain of elementwise steps,
    each reading earlier values by index."""
    rows, cols = draw(st.integers(1, 7)), draw(st.integers(1, 40))
    extra = draw(st.lists(st.sampled_from([(cols,), (), (rows, 1)]), max_size=2))
    shapes = [(rows, cols), *extra]
    steps: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(1, 6))):
        count = len(shapes) + len(steps)
        if draw(st.booleans()):
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY_TORCH))),
                          draw(st.integers(0, count - 1))))
        else:
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY_TORCH))),
                          draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))))
    return shapes, steps


def elementwise_function(steps: list[tuple[Any, ...]]) -> Callable[..., torch.Tensor]:
    def fn(*inputs: torch.Tensor) -> torch.Tensor:
        values = list(inputs)
        for step in steps:
            if step[0] == "unary":
                values.append(UNARY_TORCH[step[1]](values[step[2]]))
            else:
                values.append(BINARY_TORCH[step[1]](values[step[2]], values[step[3]]))
        return values[-1] + values[0]  # the output has the full shape
    return fn


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=elementwise_programs(), tile=st.integers(1, 200), fuse=st.booleans())
def test_elementwise_kernels_on_tiny_match_the_task_level(
        program: tuple[list[tuple[int, ...]], list[tuple[Any, ...]]], tile: int,
        fuse: bool) -> None:
    shapes, steps = program
    rng = np.random.default_rng(0)
    inputs = [torch.from_numpy(rng.uniform(-2, 2, s).astype(np.float32)) for s in shapes]
    module = import_captured(capture(elementwise_function(steps), *inputs))
    prepare = "canonicalize,cse,dce" + (",graph-fuse-elementwise" if fuse else "")
    apply_pipeline(module, f"{prepare},convert-graph-to-task"
                           f"{{target=mncore elementwise_tile={tile}}}")
    arrays = [x.numpy() for x in inputs]
    expected = simulate_kernel(find_kernel(module), arrays)
    apply_pipeline(module, "convert-task-to-mncore{machine=tiny},mncore-schedule")
    outputs, _ = simulate(find_program(module), arrays)  # raises on any hazard
    for out, exp in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-6)


def test_conversion_names_the_kinds_it_cannot_lower() -> None:
    module = parse_module(make_context(), """
    func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %c = graph.softmax %a dim -1 : tensor<4x4xf32>
      func.return %c : tensor<4x4xf32>
    }""", "m.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore}")
    with pytest.raises(MNCoreConversionError, match="task kind 'softmax' is not lowered "
                       r"\(run graph-decompose before convert-graph-to-task"):
        apply_pipeline(module, "convert-task-to-mncore,mncore-schedule")


def test_values_named_alike_become_uniquely_named_tensors() -> None:
    """Kernel values can share a name hint (the lazy runtime names the copies of a
    step's parts alike); the program's tensors are symbols, so they are made unique as
    the printer makes SSA names, and the program verifies and runs."""
    module = parse_module(make_context(), """
    func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %buffer0: tensor<4xf32>)
        -> (tensor<4xf32>, tensor<4xf32>) {
      %c = graph.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %d = graph.mul %c, %buffer0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %e = graph.mul %d, %d : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      func.return %d, %e : tensor<4xf32>, tensor<4xf32>
    }""", "m.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore}")
    kernel = find_kernel(module)
    for v in (*kernel.inputs, *kernel.outputs):
        v.name_hint = "x" if v.name_hint != "buffer0" else v.name_hint
    apply_pipeline(module, "convert-task-to-mncore{machine=tiny},mncore-schedule")
    program = find_program(module)
    names = [op.sym_name.data for op in program.body.block.ops if isinstance(op, m.TensorOp)]
    assert names[:6] == ["x", "x_1", "buffer0_1", "x_2", "x_3"][:len(names[:6])], names
    assert len(set(names)) == len(names), names
    a, b, w = (np.arange(4, dtype=np.float32) + k for k in range(3))
    d, e = simulate(find_program(module), [a, b, w])[0]
    np.testing.assert_array_equal(d, (a + b) * w)
    np.testing.assert_array_equal(e, ((a + b) * w) ** 2)


def matmul_module(batch: int, rows: int, depth: int, cols: int) -> ModuleOp:
    return parse_module(make_context(), f"""
    func.func @main(%a: tensor<{batch}x{rows}x{depth}xf32>, %b: tensor<{batch}x{depth}x{cols}xf32>)
        -> tensor<{batch}x{rows}x{cols}xf32> {{
      %c = graph.matmul %a, %b : tensor<{batch}x{rows}x{depth}xf32>,
          tensor<{batch}x{depth}x{cols}xf32> -> tensor<{batch}x{rows}x{cols}xf32>
      func.return %c : tensor<{batch}x{rows}x{cols}xf32>
    }}""", "m.mlir")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 70), depth=st.sampled_from([1, 3, 4, 8, 10, 36, 64, 72, 136]),
       cols=st.integers(1, 20), batch=st.integers(1, 2),
       tile=st.tuples(st.integers(1, 70), st.integers(1, 20)),
       kernel=st.sampled_from(["auto", "stationary", "swapped", "streaming"]))
def test_matmul_kernels_on_tiny_match_numpy(rows: int, depth: int, cols: int, batch: int,
                                            tile: tuple[int, int], kernel: str) -> None:
    """Every kernel (auto picks A or B^T stationary: several row blocks of 64, several
    chunks of B's rows and column units here, K past the 64 whose matrices fit in tiny's
    LM in chunks that add to C, and K not a multiple of 4, padded with zeros)."""
    rng = np.random.default_rng(1)
    a = rng.uniform(-2, 2, (batch, rows, depth)).astype(np.float32)
    b = rng.uniform(-2, 2, (batch, depth, cols)).astype(np.float32)
    module = matmul_module(batch, rows, depth, cols)
    apply_pipeline(module, "convert-graph-to-task"
                           f"{{target=mncore matmul_tile={tile[0]},{tile[1]}}},"
                           f"convert-task-to-mncore{{machine=tiny matmul_kernel={kernel}}},"
                           "mncore-schedule")
    (out,), _ = simulate(find_program(module), [a, b])
    # against the exact product: f32 sums of K products up to 4 round by about
    # K * 4 * 2**-24 each step (numpy's own f32 product is 1.4e-5 off at K = 136)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, exact, rtol=1e-5, atol=2e-7 * depth)


@pytest.mark.parametrize(("rows", "depth", "cols", "kernel", "l2bs"), [
    (40, 68, 300, "stationary", set(range(8))),  # columns split: 2 units of 256 columns
    (600, 20, 40, "stationary", {0, 1, 2}),  # rows split: 3 blocks of 256 rows
    (40, 1028, 300, "stationary", set(range(8))),  # K in chunks of 512, 512 and 4
    (600, 1032, 40, "stationary", {0, 1, 2}),
    (40, 27, 300, "stationary", set(range(8))),  # K padded to 28
    (600, 1030, 40, "stationary", {0, 1, 2}),  # the last chunk of K 6, padded to 8
    (40, 68, 300, "swapped", {0, 1}),  # C^T's 300 rows split: 2 blocks of 256
    (600, 1030, 40, "swapped", set(range(8))),  # C^T's 600 columns split; K in chunks
    (40, 68, 300, "streaming", set()),
])
def test_matmul_on_mncore2_spreads_over_l2bs(rows: int, depth: int, cols: int, kernel: str,
                                             l2bs: set[int]) -> None:
    """On mncore2 the stationary kernel gives each L2B its own columns of C (wide C) or
    its own rows (tall C) through DMAs to one L2B (swapped, those of C^T); the streaming
    kernel repeats the work of L2B 0 on every L2B."""
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (1, rows, depth)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, depth, cols)).astype(np.float32)
    module = matmul_module(1, rows, depth, cols)
    apply_pipeline(module, "convert-graph-to-task{target=mncore matmul_tile=1024,512},"
                           f"convert-task-to-mncore{{machine=mncore2 matmul_kernel={kernel}}},"
                           "mncore-schedule")
    program = find_program(module)
    (out,), _ = simulate(program, [a, b])
    # sums of up to 1032 products under 1 in another order: rounding of a few 1e-5
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5 * max(1, depth // 200))
    blocks = {op.block for op in program.instructions() if isinstance(op, m.DmaOp)}
    assert blocks - {None} == l2bs


@pytest.mark.parametrize(("depth", "chunks"), [(68, 1), (1028, 3)])
def test_a_short_c_stores_the_l1bs_columns_by_one_dma(depth: int, chunks: int) -> None:
    """C of 40 rows, fewer than the 256 words of an L1B's column: column ``jl`` of an
    L2B's 8 L1Bs lies in L2BM one after another, so one DMA of 8 rows (their columns
    ``JC`` apart in DRAM) stores them: 300 columns in 40 stores per chunk of K (32 for
    the first unit's 256 columns, 8 for the last 44), not 300; a later chunk loads them
    back the same way and adds to them."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (1, 40, depth)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, depth, 300)).astype(np.float32)
    module = matmul_module(1, 40, depth, 300)
    apply_pipeline(module, "convert-graph-to-task{target=mncore matmul_tile=1024,512},"
                           "convert-task-to-mncore{machine=mncore2 matmul_kernel=stationary},"
                           "mncore-schedule")
    program = find_program(module)
    (out,), _ = simulate(program, [a, b])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5 * max(1, depth // 200))
    stores = [op for op in program.instructions()
              if isinstance(op, m.DmaOp) and op.kind.data == "store"]
    assert len(stores) == 40 * chunks
    assert {op.row_layout() for op in stores} == {(8, 4), (3, 4)}  # rows, pitch


@pytest.mark.parametrize("permuted", [False, True])
def test_wide_short_products_keep_b_stationary(permuted: bool) -> None:
    """C = A @ B with 8 rows and 1024 columns (a convolution's matrix product): ``auto``
    computes C^T = B^T A^T, B^T in the PEs (as it lies for matmul_permuted, by ``mma``;
    B's rows as the transposed matrices for matmul, by ``vmm``), A's rows streamed and C's
    rows stored as runs: the same result in far fewer DMAs than A stationary, and for
    matmul far fewer cycles. (For matmul_permuted, A stationary stores C's 8-row columns
    by a DMA per L1B's columns, ``matmul_columns``, and is the faster, 2,376 cycles
    against 2,636: auto's estimate counts a DMA per column of C.)"""
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (8, 27)).astype(np.float32)
    b = rng.uniform(-1, 1, (1024, 27) if permuted else (27, 1024)).astype(np.float32)
    btype = "tensor<1024x27xf32>" if permuted else "tensor<27x1024xf32>"
    product = ("graph.matmul_permuted %a, %b rhs_perm = array<i64: 1, 0>" if permuted
               else "graph.matmul %a, %b")
    text = f"""func.func @main(%a: tensor<8x27xf32>, %b: {btype}) -> tensor<8x1024xf32> {{
      %c = {product} : tensor<8x27xf32>, {btype} -> tensor<8x1024xf32>
      func.return %c : tensor<8x1024xf32>
    }}"""
    found = {}
    for kernel in ("stationary", "auto"):
        module = parse_module(make_context(), text, "m.mlir")
        apply_pipeline(module, "convert-graph-to-task{target=mncore matmul_tile=256,1024},"
                               f"convert-task-to-mncore{{machine=mncore2 matmul_kernel={kernel}}},"
                               "mncore-schedule")
        program = find_program(module)
        (out,), report = simulate(program, [a, b])
        np.testing.assert_allclose(out, a @ (b.T if permuted else b), rtol=1e-5, atol=1e-5)
        found[kernel] = (sum(isinstance(op, m.DmaOp) for op in program.instructions()),
                         report.cycles, {op.kind.data for op in program.instructions()
                                         if isinstance(op, m.MauOp)})
    (dmas, cycles, _), (fewer, faster, mau) = found["stationary"], found["auto"]
    assert mau == ({"mma"} if permuted else {"vmm"})
    assert 5 * fewer < 4 * dmas
    if not permuted:
        assert 4 * fewer < dmas and 5 * faster < 3 * cycles


def test_masked_alu_writes_only_where_the_mask_is_set() -> None:
    """ReLU by a write mask: copy x, then write 0 where x < 0; scheduled, it runs the same."""
    text = """mncore.program @p machine "tiny" {
      mncore.tensor @x input dram[0] : tensor<128xf32>
      mncore.tensor @zero constant dram[128] = dense<0.0> : tensor<4xf32>
      mncore.tensor @y output dram[256] : tensor<128xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 128 tag 1
      mncore.dma 1 "load" dram[128] -> l2bm[128] words 4 tag 2
      mncore.wait 40 tag 1
      mncore.wait 41 tag 2
      mncore.l2 42 "scatter" l2bm[0] -> l1bm[0] words 64
      mncore.l2 43 "bcast" l2bm[128] -> l1bm[64] words 4
      mncore.l1 50 "scatter" l1bm[0] -> lm0[0]
      mncore.l1 51 "bcast" l1bm[64] -> grf1[0]
      mncore.alu 60 "fcmplt" lm0[0], grf1[0] -> grf0[0]
      mncore.alu 61 "fpass" lm0[0] -> grf1[4]
      mncore.alu 70 "fpass" grf1[0] -> grf1[4] mask grf0[0]
      mncore.l1 80 "gather" grf1[4] -> l1bm[128]
      mncore.l2 90 "gather" l1bm[128] -> l2bm[256] words 64
      mncore.dma 100 "store" l2bm[256] -> dram[256] words 128 tag 3
      mncore.wait 140 tag 3
    }"""
    x = np.linspace(-2, 2, 128, dtype=np.float32)
    for scheduled in (False, True):
        program = parse_program(text)
        if scheduled:
            schedule(program)
        (y,), _ = simulate(program, [x])
        np.testing.assert_array_equal(y, np.maximum(x, 0))


@pytest.mark.parametrize("kernel", ["stationary", "swapped", "streaming"])
@pytest.mark.parametrize("depth", [3, 6, 7])
def test_matmul_ignores_the_words_past_k(kernel: str, depth: int) -> None:
    """K not a multiple of 4: each row's last piece of A is read 4 words wide, the rest
    from the next row or, for the last row, from B's buffer (infs here: A's next rows
    hold some too); the stationary kernel also reads B's last 4 rows from stale L1BM
    words. The selects zero them, so only B's own inf reaches the result (its first
    column), as in numpy."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (1, 16, depth)).astype(np.float32)  # B follows at once
    a[0, 1::3, 0] = np.inf  # read past K by rows 0, 3, ...
    b = rng.uniform(-1, 1, (1, depth, 5)).astype(np.float32)
    b[0, 0, 0] = np.inf
    module = matmul_module(1, 16, depth, 5)
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           f"convert-task-to-mncore{{machine=tiny matmul_kernel={kernel}}},"
                           "mncore-schedule")
    program = find_program(module)
    assert [t.at.address.data for t in program.tensors("input")] == [0, 16 * depth]
    (out,), _ = simulate(program, [a, b])
    expected = a @ b
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert (np.isfinite(out) == np.isfinite(expected)).all()


def test_dmas_to_different_l2bs_do_not_collide() -> None:
    """Two loads to the same L2BM words of different L2Bs are in flight together; a
    store from L2B 1 writes L2B 1's copy."""
    program = parse_program("""mncore.program @p machine "mncore2" {
      mncore.tensor @x input dram[0] : tensor<8xf32>
      mncore.tensor @y output dram[16] : tensor<4xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 l2b 1 tag 1
      mncore.dma 1 "load" dram[4] -> l2bm[0] words 4 l2b 2 tag 2
      mncore.wait 40 tag 1
      mncore.wait 41 tag 2
      mncore.dma 42 "store" l2bm[0] -> dram[16] words 4 l2b 1 tag 3
      mncore.wait 80 tag 3
    }""")
    (y,), _ = simulate(program, [np.arange(8, dtype=np.float32)])
    np.testing.assert_array_equal(y, [0, 1, 2, 3])
    scheduled = parse_program(str(program))
    schedule(scheduled)
    (y,), _ = simulate(scheduled, [np.arange(8, dtype=np.float32)])
    np.testing.assert_array_equal(y, [0, 1, 2, 3])
    with pytest.raises(Exception, match="l2b 8 is beyond the 8 L2Bs of mncore2"):
        parse_program("""mncore.program @p machine "mncore2" {
          mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 l2b 8 tag 1
          mncore.wait 40 tag 1
        }""")


def test_a_copy_not_rewritten_keeps_its_load() -> None:
    """A load to every L2B's copy, then one to L2B 0's copy of the same words: a store
    from L2B 1's copy still reads the first load, so it waits for it (the chain after
    the store puts it first in the scheduler's order)."""
    lines = ['mncore.dma {} "load" dram[0] -> l2bm[0] words 16 tag 0', "mncore.wait {} tag 0",
             'mncore.dma {} "load" dram[16] -> l2bm[0] words 16 l2b 0 tag 1',
             "mncore.wait {} tag 1",
             'mncore.dma {} "store" l2bm[0] -> dram[64] words 16 l2b 1 tag 2',
             "mncore.wait {} tag 2",
             'mncore.dma {} "load" dram[64] -> l2bm[32] words 16 tag 3', "mncore.wait {} tag 3",
             'mncore.dma {} "store" l2bm[32] -> dram[80] words 16 tag 4', "mncore.wait {} tag 4"]
    x = np.arange(32, dtype=np.float32)
    program = parse_program(program_text(lines, machine="mncore2"))
    schedule(program)
    (y,), _ = simulate(program, [x])
    np.testing.assert_array_equal(y, np.concatenate([x[:16], x[:16]]))


def test_mlp_forward_runs_on_tiny() -> None:
    """Weight transposes, matmuls on the MAU, bias and ReLU on the ALU: eager's logits."""
    torch.manual_seed(0)
    model = MLP((16, 24, 10)).eval()
    x = torch.randn(4, 16)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def forward(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.func.functional_call(model, params, (x,))

    captured = capture(forward, params, x)
    module = import_captured(captured)
    apply_pipeline(module, "canonicalize,cse,dce,graph-fuse-elementwise,"
                           "convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=tiny},mncore-schedule")
    (logits,), report = simulate(find_program(module),
                                 [t.numpy() for t in captured.example_inputs])
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    assert report.issued["mau"] > 0


def test_dmas_touch_dram_in_their_issue_order() -> None:
    """A store to DRAM words that a strided load still in flight reads, then a load of
    the words that store still writes, no wait between them: the engine moves DMAs'
    words in their issue order, so each sees the DRAM the DMAs before it left. An
    instruction that reads a DMA's L2BM words before its wait is still a hazard."""
    program = parse_program("""mncore.program @p machine "tiny" {
      mncore.tensor @x input dram[0] : tensor<32xf32>
      mncore.tensor @y output dram[32] : tensor<24xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 run 1 stride 2 tag 1
      mncore.dma 1 "store" l2bm[64] -> dram[5] words 4 run 1 stride 3 tag 2
      mncore.dma 2 "load" dram[0] -> l2bm[8] words 16 tag 3
      mncore.wait 3 tag 1
      mncore.wait 4 tag 2
      mncore.wait 5 tag 3
      mncore.dma 6 "store" l2bm[0] -> dram[32] words 24 tag 4
      mncore.wait 7 tag 4
    }""")
    x = np.arange(1, 33, dtype=np.float32)
    (y,), _ = simulate(program, [x])
    after = x[:16].copy()
    after[[5, 8, 11, 14]] = 0  # L2BM's words 64.. were never written: zeros
    np.testing.assert_array_equal(y, np.concatenate([x[0:16:2], after]))
    early = parse_program("""mncore.program @p machine "tiny" {
      mncore.tensor @x input dram[0] : tensor<32xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
      mncore.l2 1 "bcast" l2bm[4] -> l1bm[0] words 4
      mncore.wait 5 tag 1
    }""")
    with pytest.raises(HazardError, match=re.escape("reads l2bm[4] before the wait on DMA tag 1")):
        simulate(early, [x])


def test_the_scheduler_issues_a_load_of_stored_words_right_after_the_store() -> None:
    """A load of the DRAM words a store writes, or a store of the L2BM words a load
    writes, needs no wait on the earlier DMA (the engine's order keeps them apart): the
    scheduled DMA issues the step after it, every wait stays, and the output is what
    the program order says."""
    program = parse_program("""mncore.program @p machine "tiny" {
      mncore.tensor @x input dram[0] : tensor<8xf32>
      mncore.tensor @y output dram[16] : tensor<8xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 8 tag 1
      mncore.wait 1 tag 1
      mncore.dma 2 "store" l2bm[0] -> dram[8] words 8 tag 2
      mncore.wait 3 tag 2
      mncore.dma 4 "load" dram[8] -> l2bm[16] words 8 tag 3
      mncore.wait 5 tag 3
      mncore.dma 6 "store" l2bm[16] -> dram[16] words 8 tag 4
      mncore.wait 7 tag 4
    }""")
    schedule(program)
    steps = {(op.kind.data, op.tag_number()): op.at for op in program.instructions()
             if isinstance(op, m.DmaOp)}
    assert steps["store", 2] == steps["load", 1] + 1
    assert steps["load", 3] == steps["store", 2] + 1
    waits = [op.tag_number() for op in program.instructions() if isinstance(op, m.WaitOp)]
    assert sorted(waits) == [1, 2, 3, 4]
    x = np.arange(8, dtype=np.float32)
    (y,), _ = simulate(program, [x])
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("kernel", ["stationary", "streaming"])
@pytest.mark.parametrize(("batch", "rows", "depth", "cols"), [(1, 9, 6, 70), (2, 5, 12, 9)])
def test_matmul_reads_b_through_a_transpose(kernel: str, batch: int, rows: int, depth: int,
                                            cols: int) -> None:
    """``x @ w^T`` (F.linear's weight): convert-graph-to-task{target=mncore} makes
    graph.matmul_permuted tiles that read ``w`` where it lies, no permute task; both
    kernels equal numpy on tiny."""
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (batch, rows, depth)).astype(np.float32)
    w = rng.uniform(-1, 1, (batch, cols, depth)).astype(np.float32)
    module = parse_module(make_context(), f"""
    func.func @main(%x: tensor<{batch}x{rows}x{depth}xf32>, %w: tensor<{batch}x{cols}x{depth}xf32>)
        -> tensor<{batch}x{rows}x{cols}xf32> {{
      %t = graph.permute %w perm = array<i64: 0, 2, 1> : tensor<{batch}x{cols}x{depth}xf32>
          -> tensor<{batch}x{depth}x{cols}xf32>
      %y = graph.matmul %x, %t : tensor<{batch}x{rows}x{depth}xf32>,
          tensor<{batch}x{depth}x{cols}xf32> -> tensor<{batch}x{rows}x{cols}xf32>
      func.return %y : tensor<{batch}x{rows}x{cols}xf32>
    }}""", "linear.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore matmul_tile=8,32}")
    kernel_op = find_kernel(module)
    bodies = kernel_op.bodies()
    labels = {task_dialect.computation_label(task_dialect.computation(task, bodies))
              for task in kernel_op.tasks()}
    assert labels == {"matmul_permuted"}
    apply_pipeline(module, f"convert-task-to-mncore{{machine=tiny matmul_kernel={kernel}}},"
                           "mncore-schedule")
    (out,), _ = simulate(find_program(module), [x, w])
    np.testing.assert_allclose(out, x @ w.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


def test_matmul_through_another_permutation_is_refused() -> None:
    """The gpu tiling also reads through other permutations (a KV cache's keys); the
    mncore kernels read through transposes only, and say so."""
    module = parse_module(make_context(), """
    func.func @main(%q: tensor<2x2x4xf32>, %k: tensor<3x2x4xf32>) -> tensor<2x2x3xf32> {
      %t = graph.permute %k perm = array<i64: 1, 2, 0> : tensor<3x2x4xf32> -> tensor<2x4x3xf32>
      %y = graph.matmul %q, %t : tensor<2x2x4xf32>, tensor<2x4x3xf32> -> tensor<2x2x3xf32>
      func.return %y : tensor<2x2x3xf32>
    }""", "keys.mlir")
    apply_pipeline(module, "convert-graph-to-task")
    with pytest.raises(MNCoreConversionError, match=re.escape(
            "graph.matmul_permuted reads its right operand through a transpose of the last "
            "two dimensions only, not [1, 2, 0]")):
        apply_pipeline(module, "convert-task-to-mncore{machine=tiny}")


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
def test_a_store_takes_the_words_from_before_its_step(machine: str) -> None:
    """VLIW: a store reads L2BM before an l2 gather of the same step overwrites it
    (tiny has one L2B, so its L2BM is one column of words, as DRAM is)."""
    text = f"""mncore.program @p machine "{machine}" {{
      mncore.tensor @x input dram[0] : tensor<4xf32>
      mncore.tensor @y output dram[4] : tensor<4xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
      mncore.wait 1 tag 1
      mncore.l2 2 "gather" l1bm[0] -> l2bm[0] words 1
      mncore.dma 2 "store" l2bm[0] -> dram[4] words 4 tag 2
      mncore.wait 3 tag 2
    }}"""
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    (y,), _ = simulate(parse_program(text), [x])
    np.testing.assert_array_equal(y, x)


def test_a_decoded_program_runs_again_on_other_inputs() -> None:
    """The lazy device decodes a program once and runs it every step: each run starts
    from clean memories and DMA queues, as a fresh simulation does."""
    from mncore_ir.targets.mncore_simulator import Simulator

    module = parse_module(make_context(), """
    func.func @main(%a: tensor<6x5xf32>, %b: tensor<5x7xf32>) -> tensor<6x7xf32> {
      %c = graph.matmul %a, %b : tensor<6x5xf32>, tensor<5x7xf32> -> tensor<6x7xf32>
      %d = graph.exp %c : tensor<6x7xf32>
      func.return %d : tensor<6x7xf32>
    }""", "m.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=tiny},mncore-schedule")
    program = find_program(module)
    simulator = Simulator(program)
    rng = np.random.default_rng(0)
    for _ in range(3):
        a, b = rng.standard_normal((6, 5), np.float32), rng.standard_normal((5, 7), np.float32)
        (got,), report = simulator.run([a, b])
        (fresh,), fresh_report = simulate(program, [a, b])
        np.testing.assert_array_equal(got, fresh)
        np.testing.assert_allclose(got, np.exp(a @ b), rtol=1e-5)
        assert (report.cycles, report.issued) == (fresh_report.cycles, fresh_report.issued)


@pytest.mark.parametrize(("machine", "size"), [("tiny", 8), ("mncore2", 16)])
def test_forwarded_stores_compute_the_same_step(machine: str, size: int) -> None:
    """mncore-forward-stores on the CNN training step: tasks hand data over in L2BM
    where the layouts agree (loads and stores go), and the program's outputs are
    bit for bit those of the program without the pass, with no hazard, in fewer
    cycles."""
    from mncore_ir.frontends.fx import capture as capture_step
    from mncore_ir.pipeline import MNCORE_GRAPH_PIPELINE, MNCORE_TASKS
    from mncore_ir.testing.model_zoo import cnn_sgd

    step = cnn_sgd(batch=2, size=size)
    captured = capture_step(step, *step.example_inputs())
    module = import_captured(captured)
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}},"
                           f"convert-task-to-mncore{{machine={machine}}}")
    forwarded = module.clone()
    apply_pipeline(forwarded, "mncore-forward-stores")

    def dmas(program: m.ProgramOp, kind: str) -> int:
        return sum(isinstance(op, m.DmaOp) and op.kind.data == kind
                   for op in program.instructions())

    before, after = find_program(module), find_program(forwarded)
    assert dmas(after, "load") < dmas(before, "load")
    assert dmas(after, "store") <= dmas(before, "store")
    apply_pipeline(module, "mncore-schedule")
    apply_pipeline(forwarded, "mncore-schedule")
    inputs = [x.numpy() for x in captured.example_inputs]
    expected, slow = simulate(find_program(module), inputs)
    got, fast = simulate(find_program(forwarded), inputs)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert fast.cycles < slow.cycles


def test_views_compute_the_same_step() -> None:
    """convert-task-to-mncore{views}: on the MLP training step (six reshapes), buffers
    placed on their sources' words instead of copied: fewer instructions and cycles,
    the outputs bit for bit those of the program that copies."""
    from mncore_ir.frontends.fx import capture as capture_step
    from mncore_ir.pipeline import MNCORE_GRAPH_PIPELINE, MNCORE_TASKS
    from mncore_ir.testing.model_zoo import mlp_sgd

    step = mlp_sgd()
    captured = capture_step(step, *step.example_inputs())
    module = import_captured(captured)
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}}")
    inputs = [x.numpy() for x in captured.example_inputs]
    results = {}
    for views in ("false", "true"):
        lowered = module.clone()
        apply_pipeline(lowered, f"convert-task-to-mncore{{views={views}}},mncore-schedule")
        program = find_program(lowered)
        shared = Counter(op.at.address.data for op in program.body.block.ops
                         if isinstance(op, m.BufferOp))
        outputs, report = simulate(program, inputs)
        results[views] = (len(program.instructions()), report.cycles, outputs,
                          max(shared.values()))
    (copied, slow, expected, _), (viewed, fast, got, most) = results["false"], results["true"]
    assert most > 1  # some buffers lie on others' words
    assert viewed < copied and fast < slow
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


@st.composite
def forwarding_programs(draw: st.DrawFn, machine: str) -> list[str]:
    """Random programs whose DMAs also load back what they stored (to the output and to
    a scratch area), on ``machine`` (MN-Core 2's also to and from one L2B's copy, and
    back to the same copy or another)."""
    lines: list[str] = []
    for tag in range(draw(st.integers(1, 30))):
        if draw(st.integers(0, 2)):
            lines += draw(instruction(tag))
            continue
        l2b = draw(st.sampled_from([None, None, 0, 3])) if machine == "mncore2" else None
        at = f" l2b {l2b}" if l2b is not None else ""
        l2bm = f"l2bm[{draw(st.sampled_from([0, 8, 32]))}]"
        if draw(st.booleans()):  # a round trip through DRAM
            dram = f"dram[{draw(st.sampled_from([64, 128]))}]"
            back = f"l2bm[{draw(st.sampled_from([0, 8, 32]))}]"
            # back to every L2B, or to one (the store's, or another)
            to = draw(st.sampled_from(["", at, " l2b 0", " l2b 3"])) \
                if machine == "mncore2" else ""
            lines += [f'mncore.dma {{}} "store" {l2bm} -> {dram} words 16{at} tag {tag}',
                      f"mncore.wait {{}} tag {tag}",
                      f'mncore.dma {{}} "load" {dram} -> {back} words 16{to} tag {tag}',
                      f"mncore.wait {{}} tag {tag}"]
            continue
        if draw(st.booleans()):
            dram = f"dram[{draw(st.sampled_from([0, 16, 64, 72, 128, 136]))}]"
            lines.append(f'mncore.dma {{}} "load" {dram} -> {l2bm} words 16{at} tag {tag}')
        else:
            dram = f"dram[{draw(st.sampled_from([64, 80, 128, 136]))}]"
            lines.append(f'mncore.dma {{}} "store" {l2bm} -> {dram} words 16{at} tag {tag}')
        lines.append(f"mncore.wait {{}} tag {tag}")
    return lines


@pytest.mark.parametrize("machine", ["tiny", "mncore2"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_forwarded_random_programs_keep_their_outputs(machine: str, data: st.DataObject
                                                      ) -> None:
    """mncore-forward-stores keeps a program's outputs bit for bit, and the scheduled
    result runs without a hazard."""
    from mncore_ir.transforms.mncore_forward_stores import forward_stores

    lines = data.draw(forwarding_programs(machine))
    text = program_text(lines).replace('machine "tiny"', f'machine "{machine}"')
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    (expected,), _ = simulate(parse_program(text), [x])
    module = parse_module(make_context(), text, "forwarded.mlir")
    program = find_program(module)
    forward_stores(program)
    module.verify()
    (unscheduled,), _ = simulate(program, [x])
    schedule(program)
    module.verify()
    (scheduled,), _ = simulate(program, [x])
    np.testing.assert_array_equal(unscheduled, expected)
    np.testing.assert_array_equal(scheduled, expected)


def test_forwarding_stops_where_one_l2b_is_overwritten() -> None:
    """Found by the test above: a load forwarded to every L2B, then one L2B's copy
    overwritten by a single-L2B load, then read on another L2B: the forwarded load must
    stay (it was dropped, and the store read stale words)."""
    from mncore_ir.transforms.mncore_forward_stores import forward_stores
    lines = ['mncore.dma {} "load" dram[0] -> l2bm[0] words 16 tag 0', "mncore.wait {} tag 0",
             'mncore.dma {} "store" l2bm[0] -> dram[64] words 16 tag 1', "mncore.wait {} tag 1",
             'mncore.dma {} "store" l2bm[32] -> dram[64] words 16 tag 3', "mncore.wait {} tag 3",
             'mncore.dma {} "load" dram[64] -> l2bm[0] words 16 tag 3', "mncore.wait {} tag 3",
             'mncore.dma {} "load" dram[0] -> l2bm[0] words 16 l2b 3 tag 4',
             "mncore.wait {} tag 4",
             'mncore.dma {} "store" l2bm[0] -> dram[64] words 16 tag 5', "mncore.wait {} tag 5"]
    text = program_text(lines).replace('machine "tiny"', 'machine "mncore2"')
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    (expected,), _ = simulate(parse_program(text), [x])
    program = find_program(parse_module(make_context(), text, "forwarded.mlir"))
    forward_stores(program)
    (got,), _ = simulate(program, [x])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", ["mma", "vmm"])
def test_mau_sums_in_one_order_whatever_the_operands_layout(kind: str) -> None:
    """The MAU's 4 products are summed in one order (then the addend), so operands read
    as views of a word-major memory (``[word, PE]``, as the simulator holds it) and the
    same words laid out PE-major give the same bits (numpy's einsum does not: ~30% of
    the words differed in the last bit)."""
    rng = np.random.default_rng(0)
    memory = rng.standard_normal((24, 4096)).astype(np.float32)  # [word, PE]
    matrix, vector, addend = memory[0:16], memory[16:20], memory[20:24]
    semantics = MAU[kind].semantics
    strided = semantics(matrix, vector, addend)
    copied = semantics(*(np.asfortranarray(x) for x in (matrix, vector, addend)))
    np.testing.assert_array_equal(strided, copied)
    m = matrix.T.astype(np.float64).reshape(-1, 4, 4)
    v = vector.T.astype(np.float64)
    exact = (np.einsum("pij,pj->pi", m, v) if kind == "mma" else
             np.einsum("pi,pij->pj", v, m)).T + addend
    np.testing.assert_allclose(strided, exact, rtol=0, atol=4e-6)
