"""convert-task-to-mncore's views (``views.py``): chains of permutations, strided slices
and reshapes of an intermediate, read by lane kernels, reductions and either operand
of a matmul, against eager PyTorch, and bit for bit against the same program with
every copy kept (``views=false``); the chains are random (hypothesis)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from conftest import assert_all_close
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.mncore_simulator import find_program, simulate

Chain = dict[str, Any]


@st.composite
def view_chains(draw: st.DrawFn) -> Chain:
    """An input shape, copies applied one after another to ``exp(x)``, and what reads
    the last one (as plain data, for shrinking and printing)."""
    shape = draw(st.lists(st.integers(1, 5), min_size=2, max_size=3))
    sizes, ops = list(shape), []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["permute", "slice", "reshape"]))
        if kind == "permute":
            perm = draw(st.permutations(range(len(sizes))))
            ops.append(("permute", perm))
            sizes = [sizes[p] for p in perm]
        elif kind == "slice":
            dim = draw(st.integers(0, len(sizes) - 1))
            start = draw(st.integers(0, sizes[dim] - 1))
            end = draw(st.integers(start + 1, sizes[dim]))
            step = draw(st.integers(1, 3))
            ops.append(("slice", dim, start, end, step))
            sizes[dim] = len(range(start, end, step))
        else:  # merge two neighbours, or split one in two
            if len(sizes) > 1 and draw(st.booleans()):
                d = draw(st.integers(0, len(sizes) - 2))
                sizes[d:d + 2] = [sizes[d] * sizes[d + 1]]
            else:
                d = draw(st.integers(0, len(sizes) - 1))
                sizes[d:d + 1] = [2, sizes[d] // 2] if sizes[d] % 2 == 0 else [1, sizes[d]]
            ops.append(("reshape", list(sizes)))
    reader = draw(st.sampled_from(["neg", "sum", "matmul", "matmul-rhs"]))
    event(reader)
    return {"shape": shape, "ops": ops, "reader": reader, "seed": draw(st.integers(0, 99))}


def chain_function(chain: Chain) -> Callable[..., tuple[torch.Tensor, ...]]:
    def fn(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        v = torch.exp(x)
        for op in chain["ops"]:
            if op[0] == "permute":
                v = v.permute(*op[1])
            elif op[0] == "slice":
                _, dim, start, end, step = op
                v = v[(slice(None),) * dim + (slice(start, end, step),)]
            else:
                v = v.reshape(op[1])
        reader = chain["reader"]
        if reader == "neg":
            return (-v * w.reshape(-1)[0],)
        if reader == "sum":
            return (v.sum(dim=0),)
        flat = v.reshape(v.shape[0], -1)
        if reader == "matmul":
            return (flat @ w[:flat.shape[1], :3],)
        return (w[:3, :flat.shape[0]] @ flat,)

    return fn


def chain_inputs(chain: Chain) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(chain["seed"])
    width = max(math.prod(chain["shape"]), 3)
    return [torch.rand(chain["shape"], generator=g) - 0.5,
            torch.rand(width, width, generator=g) - 0.5]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=view_chains(), machine=st.sampled_from(["tiny", "mncore2"]))
def test_view_chains_match_eager_and_the_copies(chain: Chain, machine: str) -> None:
    inputs = chain_inputs(chain)
    fn = chain_function(chain)
    with torch.no_grad():
        eager = [r.numpy() for r in fn(*inputs)]
    module = import_captured(capture(fn, *inputs))
    apply_pipeline(module, "canonicalize,cse,dce,convert-graph-to-task{target=mncore}")
    arrays = [x.numpy() for x in inputs]
    results, layouts = {}, 0
    for views in ("true", "false"):
        lowered = module.clone()
        apply_pipeline(lowered, f"convert-task-to-mncore{{machine={machine} views={views}}},"
                                "mncore-schedule")
        program = find_program(lowered)
        results[views], _ = simulate(program, arrays)  # raises on any hazard
        if views == "true":
            layouts = sum(isinstance(op, m.BufferOp) and op.strides is not None
                          for op in program.body.block.ops)
    event(f"strided layouts: {min(layouts, 2)}")
    assert_all_close(results["true"], eager)
    for ours, copied in zip(results["true"], results["false"], strict=True):
        np.testing.assert_array_equal(ours, copied)


def test_a_transpose_read_by_a_matmul_is_a_view() -> None:
    """``x.exp().t() @ w``: the transpose is laid out on exp's words (strides [1, 6]),
    no copy task, and the product equals eager's."""
    def fn(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor]:
        return (torch.exp(x).t() @ w,)

    x, w = torch.rand(6, 8) - 0.5, torch.rand(6, 5) - 0.5
    module = import_captured(capture(fn, x, w))
    apply_pipeline(module, "canonicalize,cse,dce,convert-graph-to-task{target=mncore},"
                           "convert-task-to-mncore{machine=mncore2},mncore-schedule")
    program = find_program(module)
    (layout,) = [(list(op.shape.get_values()), list(op.strides.get_values()))
                 for op in program.body.block.ops
                 if isinstance(op, m.BufferOp) and op.strides is not None]
    assert layout == ([8, 6], [1, 8])
    outputs, _ = simulate(program, [x.numpy(), w.numpy()])
    with torch.no_grad():
        assert_all_close(outputs, [fn(x, w)[0].numpy()])
