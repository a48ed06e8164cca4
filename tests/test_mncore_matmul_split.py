"""The stationary matmul kernel with K shared out among the L1Bs of each L2B
(``matmul_kernel=split`` / ``swapped-split``; ``auto`` picks it by estimate): every L1B
multiplies its share of K for the same columns, and the L2 ``reduce`` adds the parts.
Against the exact product on both machines, for A or B^T stationary, through a
transpose or not, with rows split over L2Bs, partial row blocks and single columns;
the refusal of a K it cannot split; and the convolution weight gradient's product
(8 x 1024 by 1024 x 27), which it makes several times faster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.transforms.convert_task_to_mncore import MNCoreConversionError


def product(rows: int, depth: int, cols: int, permuted: bool, kernel: str, machine: str,
            seed: int = 0) -> tuple[m.ProgramOp, np.ndarray, np.ndarray, int]:
    """``A @ B`` (``permuted``: ``A @ B^T`` with B stored as its transpose) lowered with
    ``kernel``; the program, its result, the exact product and the simulated cycles."""
    b_type = f"tensor<{cols}x{depth}xf32>" if permuted else f"tensor<{depth}x{cols}xf32>"
    op = ("graph.matmul_permuted %a, %b rhs_perm = array<i64: 1, 0>" if permuted
          else "graph.matmul %a, %b")
    text = (f"func.func @main(%a: tensor<{rows}x{depth}xf32>, %b: {b_type}) -> "
            f"tensor<{rows}x{cols}xf32> {{\n"
            f"  %c = {op} : tensor<{rows}x{depth}xf32>, {b_type} -> tensor<{rows}x{cols}xf32>\n"
            f"  func.return %c : tensor<{rows}x{cols}xf32>\n}}")
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (rows, depth)).astype(np.float32)
    b = rng.uniform(-1, 1, (cols, depth) if permuted else (depth, cols)).astype(np.float32)
    module = parse_module(make_context(), text, "m.mlir")
    apply_pipeline(module, "convert-graph-to-task{target=mncore matmul_tile=1024,512},"
                           f"convert-task-to-mncore{{machine={machine} matmul_kernel={kernel}}},"
                           "mncore-schedule")
    program = find_program(module)
    (out,), report = simulate(program, [a, b])  # raises on any hazard
    exact = a.astype(np.float64) @ (b.T if permuted else b).astype(np.float64)
    return program, out, exact, report.cycles


def reduces(program: m.ProgramOp) -> int:
    return sum(isinstance(op, m.L2Op) and op.kind.data == "reduce"
               for op in program.instructions())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 70), steps=st.integers(1, 8), cols=st.integers(1, 20),
       permuted=st.booleans(), kernel=st.sampled_from(["split", "swapped-split"]))
def test_split_kernels_on_tiny_match_the_product(rows: int, steps: int, cols: int,
                                                 permuted: bool, kernel: str) -> None:
    """tiny has 2 L1Bs per L2B: K a multiple of 8 up to 64, each L1B half of it."""
    depth = 8 * steps
    program, out, exact, _ = product(rows, depth, cols, permuted, kernel, "tiny")
    assert reduces(program) >= 1
    np.testing.assert_allclose(out, exact, rtol=1e-5, atol=2e-7 * depth)


@pytest.mark.parametrize(("rows", "depth", "cols"), [
    (8, 1024, 27),  # a convolution's weight gradient: long K, few rows and columns
    (32, 128, 32),  # an attention block's weight gradient
    (600, 32, 40),  # rows split over 3 L2Bs
    (5, 64, 300),  # wide: C^T's 300 rows swapped
    (3, 32, 1),  # one column
])
@pytest.mark.parametrize("kernel", ["split", "swapped-split"])
@pytest.mark.parametrize("permuted", [False, True])
def test_split_kernels_on_mncore2_match_the_product(rows: int, depth: int, cols: int,
                                                    kernel: str, permuted: bool) -> None:
    program, out, exact, _ = product(rows, depth, cols, permuted, kernel, "mncore2")
    assert reduces(program) >= 1
    np.testing.assert_allclose(out, exact, rtol=1e-5, atol=2e-7 * depth)


@pytest.mark.parametrize(("depth", "why"), [(36, "a multiple of 8"), (136, "at most 64")])
def test_a_k_the_l1bs_cannot_share_is_refused(depth: int, why: str) -> None:
    with pytest.raises(MNCoreConversionError, match=f"splits K \\({depth}\\) over the 2 "
                                                    f"L1Bs of an L2B: K must be .*{why}"):
        product(4, depth, 4, False, "split", "tiny")


def test_auto_splits_the_convolution_weight_gradient() -> None:
    """``grad_out (8 x 1024) @ im2col^T (1024 x 27)``: with K unsplit, 4 of 64 L1Bs'
    PEs hold the stationary rows and every 4 rows of K take their own L1 transfers;
    shared out among the L1Bs, each takes 1/8 of them, and the same result comes out
    in under half the cycles."""
    _, out, exact, unsplit = product(8, 1024, 27, True, "swapped", "mncore2")
    program, auto, _, cycles = product(8, 1024, 27, True, "auto", "mncore2")
    assert reduces(program) >= 1
    np.testing.assert_allclose(auto, exact, rtol=1e-5, atol=2e-4)
    np.testing.assert_allclose(out, exact, rtol=1e-5, atol=2e-4)
    assert 2 * cycles < unsplit
