"""Random torch programs, captured, imported and interpreted, against eager PyTorch.

A program is data: a tuple of :class:`Step`s drawn with hypothesis, each reading
earlier values by index. :func:`build` turns it into a torch function of its input
tensors, so a failure shrinks to a short program that prints readably. Every program
is compared with eager PyTorch as imported and after each pipeline, with the module
verified and its dominance checked.

Magnitudes are kept small on purpose: each value carries a static bound, and ops that
can grow values (or cancel them: add, sub, mul, sums, matmuls) only take operands
bounded by :data:`LIMIT`; larger values can only pass through tanh or sigmoid. So the
absolute rounding error stays well under the test's ``atol``, and a mismatch means a
wrong result rather than float32 noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
from conftest import PIPELINES, assert_all_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mncore_ir.dominance import check_dominance
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import GRAPH_PIPELINE, apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function

Shape = tuple[int, ...]
#: Largest magnitude an input of a growing op may have (inputs are in [-2, 2]).
LIMIT = 4.0
INPUT_BOUND = 2.0

UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "neg": torch.neg,
    "exp": lambda x: torch.exp(x.clamp(-1.0, 1.0)),
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "abs": torch.abs,
    "sqrt": lambda x: torch.sqrt(x.abs() + 1),
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": lambda x, y: x / (y.abs() + 1),
    "maximum": torch.maximum,
}
REDUCTIONS: dict[str, Callable[..., torch.Tensor]] = {
    "sum": torch.sum,
    "mean": torch.mean,
    "amax": torch.amax,
}


class Step(NamedTuple):
    """One op of a program: ``kind`` (and ``fn``) applied to earlier values ``args``.

    Kinds: ``input`` (a new input of shape ``param``), ``unary``, ``binary``,
    ``where`` (``where(a > b, c, d)``), ``reduce`` (``param`` = (dims, keepdim)),
    ``reshape`` (``param`` = shape), ``permute`` (``param`` = perm), ``transpose``
    (``param`` = (d0, d1)), ``matmul`` (``a @ b / k``) and ``gram`` (``a @ a.mT / k``).
    """

    kind: str
    fn: str
    args: tuple[int, ...]
    param: Any = None


class Program(NamedTuple):
    steps: tuple[Step, ...]
    seed: int

    def input_shapes(self) -> list[Shape]:
        return [s.param for s in self.steps if s.kind == "input"]


def build(program: Program) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The torch function of ``program``: its inputs in order, every computed value out."""

    def fn(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values: list[torch.Tensor] = []
        outputs: list[torch.Tensor] = []
        feed = iter(inputs)
        for step in program.steps:
            a = [values[i] for i in step.args]
            if step.kind == "input":
                values.append(next(feed))
                continue
            if step.kind == "unary":
                v = UNARY[step.fn](a[0])
            elif step.kind == "binary":
                v = BINARY[step.fn](a[0], a[1])
            elif step.kind == "where":
                v = torch.where(a[0] > a[1], a[2], a[3])
            elif step.kind == "reduce":
                dims, keepdim = step.param
                v = REDUCTIONS[step.fn](a[0], dim=dims, keepdim=keepdim)
            elif step.kind == "reshape":
                v = a[0].reshape(step.param)
            elif step.kind == "permute":
                v = a[0].permute(step.param)
            elif step.kind == "transpose":
                v = a[0].transpose(*step.param)
            elif step.kind == "matmul":
                v = torch.matmul(a[0], a[1]) / a[0].shape[-1]
            elif step.kind == "gram":
                v = (a[0] @ a[0].transpose(-2, -1)) / a[0].shape[-1]
            else:
                raise AssertionError(step.kind)
            values.append(v)
            outputs.append(v)
        return tuple(outputs)

    return fn


def broadcast(*shapes: Shape) -> Shape | None:
    """The broadcast shape, or None when the shapes do not broadcast."""
    try:
        return tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        return None


#: The operand ranks each kind accepts (others accept any rank).
RANKS: dict[str, Callable[[int], bool]] = {
    "reduce": lambda r: r >= 1,
    "permute": lambda r: r >= 2,
    "transpose": lambda r: r >= 2,
    "matmul": lambda r: r in (2, 3),
    "gram": lambda r: r in (2, 3),
}


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 7) -> Program:
    """Small shapes (rank 0 to 3, sizes 1 to 4), one to three inputs broadcasting
    against a common shape, then up to ``max_steps`` ops."""
    base = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3)))]
    steps: list[Step] = []
    shapes: list[Shape] = []
    bounds: list[float] = []

    def add(step: Step, shape: Shape, bound: float) -> None:
        steps.append(step)
        shapes.append(shape)
        bounds.append(bound)

    def new_input(shape: Shape) -> int:
        add(Step("input", "", (), shape), shape, INPUT_BOUND)
        return len(shapes) - 1

    for _ in range(draw(st.integers(1, 3))):
        # A broadcast variant of base: some sizes set to 1, some leading dims dropped.
        ones = draw(st.lists(st.booleans(), min_size=len(base), max_size=len(base)))
        shape = tuple(1 if one else s for s, one in zip(base, ones, strict=True))
        drop = draw(st.integers(0, len(shape))) if draw(st.booleans()) else 0
        new_input(shape[drop:])

    def pick(ok: Callable[[int], bool] = lambda i: True) -> int | None:
        """An earlier value within LIMIT that satisfies ``ok``."""
        choices = [i for i in range(len(shapes)) if bounds[i] <= LIMIT and ok(i)]
        return draw(st.sampled_from(choices)) if choices else None

    def pick_with(*others: int) -> int:
        """A bounded value that broadcasts with ``others`` (the first one always does)."""
        j = pick(lambda i: broadcast(shapes[i], *(shapes[o] for o in others)) is not None)
        return others[0] if j is None else j

    kinds = ["unary", "binary", "where", "reduce", "reshape", "permute", "transpose",
             "matmul", "gram"]
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(kinds))
        fits = RANKS.get(kind, lambda r: True)
        i = pick(lambda i, fits=fits: fits(len(shapes[i])))
        if i is None:  # no operand fits the kind: a unary op instead
            kind = "unary"
            i = pick()
        assert i is not None  # the inputs are always within LIMIT
        shape, rank = shapes[i], len(shapes[i])
        if kind == "binary":
            j = pick_with(i)
            fn = draw(st.sampled_from(sorted(BINARY)))
            bound = {"add": bounds[i] + bounds[j], "sub": bounds[i] + bounds[j],
                     "mul": bounds[i] * bounds[j], "div": bounds[i],
                     "maximum": max(bounds[i], bounds[j])}[fn]
            add(Step(kind, fn, (i, j)), broadcast(shapes[i], shapes[j]), bound)  # type: ignore[arg-type]
        elif kind == "where":
            j = pick_with(i)
            k = pick_with(i, j)
            m = pick_with(i, j, k)
            add(Step(kind, "", (i, j, k, m)),
                broadcast(shapes[i], shapes[j], shapes[k], shapes[m]),  # type: ignore[arg-type]
                max(bounds[k], bounds[m]))
        elif kind == "reduce" and rank > 0:
            dims = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank,
                                 unique=True))
            dims = [d - rank if draw(st.booleans()) else d for d in dims]
            keepdim = draw(st.booleans())
            fn = draw(st.sampled_from(sorted(REDUCTIONS)))
            reduced = {d % rank for d in dims}
            out = tuple(1 if d in reduced else s for d, s in enumerate(shape)) if keepdim \
                else tuple(s for d, s in enumerate(shape) if d not in reduced)
            count = math.prod(shape[d] for d in reduced)
            add(Step(kind, fn, (i,), (tuple(dims), keepdim)), out,
                bounds[i] * count if fn == "sum" else bounds[i])
        elif kind == "reshape":
            remaining, out = math.prod(shape), []
            for _ in range(draw(st.integers(0, 2))):
                d = draw(st.sampled_from(divisors(remaining)))
                out.append(d)
                remaining //= d
            out.append(remaining)
            add(Step(kind, "", (i,), tuple(out)), tuple(out), bounds[i])
        elif kind == "permute" and rank >= 2:
            perm = tuple(draw(st.permutations(range(rank))))
            add(Step(kind, "", (i,), perm), tuple(shape[p] for p in perm), bounds[i])
        elif kind == "transpose" and rank >= 2:
            d0, d1 = draw(st.lists(st.integers(-rank, rank - 1), min_size=2, max_size=2)
                          .filter(lambda ds, r=rank: ds[0] % r != ds[1] % r))
            out = list(shape)
            out[d0], out[d1] = out[d1], out[d0]
            add(Step(kind, "", (i,), (d0, d1)), tuple(out), bounds[i])
        elif kind == "matmul" and rank in (2, 3):
            n = draw(st.integers(1, 4))
            # The right operand: [k, n], or batched [b, k, n] for a 3-D left operand.
            batch = shape[:-2] if rank == 3 and draw(st.booleans()) else ()
            w = new_input((*batch, shape[-1], n))
            add(Step(kind, "", (i, w)), (*shape[:-1], n), bounds[i] * INPUT_BOUND)
        elif kind == "gram" and rank in (2, 3):
            add(Step(kind, "", (i,)), (*shape[:-1], shape[-2]), bounds[i] ** 2)
        else:
            # Unary ops, and the fallback when the drawn kind does not fit the operand:
            # contracting ops may take any value.
            fn = draw(st.sampled_from(sorted(UNARY)))
            if fn in ("tanh", "sigmoid"):
                i = draw(st.integers(0, len(shapes) - 1))
            bound = {"exp": math.e, "tanh": 1.0, "sigmoid": 1.0,
                     "sqrt": math.sqrt(bounds[i] + 1)}.get(fn, bounds[i])
            add(Step("unary", fn, (i,)), shapes[i], bound)
    return Program(tuple(steps), draw(st.integers(0, 2**16)))


def make_inputs(program: Program) -> list[torch.Tensor]:
    rng = np.random.default_rng(program.seed)
    return [torch.from_numpy(rng.uniform(-INPUT_BOUND, INPUT_BOUND, s).astype(np.float32))
            for s in program.input_shapes()]


def check(program: Program, pipeline: str) -> None:
    fn = build(program)
    inputs = make_inputs(program)
    expected = [t.numpy() for t in fn(*[t.clone() for t in inputs])]
    module = import_captured(capture(fn, *inputs))
    if pipeline:
        apply_pipeline(module, pipeline)
    module.verify()
    check_dominance(module)
    outputs = run_function(module, [t.numpy() for t in inputs])
    assert_all_close(outputs, expected)


@pytest.mark.parametrize("pipeline", PIPELINES.values(), ids=PIPELINES.keys())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs())
def test_random_program_matches_eager(pipeline: str, program: Program) -> None:
    check(program, pipeline)


def test_generator_covers_every_kind() -> None:
    """The strategy can draw every op kind and function (a guard against a generator
    that silently stopped producing some ops)."""
    seen: set[tuple[str, str]] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(program=programs())
    def collect(program: Program) -> None:
        seen.update((s.kind, s.fn) for s in program.steps)

    collect()
    expected = ({("unary", f) for f in UNARY} | {("binary", f) for f in BINARY}
                | {("reduce", f) for f in REDUCTIONS}
                | {(k, "") for k in ("input", "where", "reshape", "permute", "transpose",
                                     "matmul", "gram")})
    assert expected <= seen, f"never drawn: {sorted(expected - seen)}"


@pytest.mark.parametrize("program", [
    Program((Step("input", "", (), (2, 3)), Step("input", "", (), (3,)),
             Step("binary", "mul", (0, 1)), Step("reduce", "sum", (2,), ((-1,), True)),
             Step("where", "", (2, 3, 0, 1))), seed=0),
    Program((Step("input", "", (), (2, 2, 3)), Step("input", "", (), (2, 3, 4)),
             Step("matmul", "", (0, 1)), Step("permute", "", (2,), (2, 0, 1)),
             Step("reshape", "", (3,), (4, 4)), Step("gram", "", (4,)),
             Step("unary", "exp", (5,))), seed=1),
], ids=["broadcast-reduce-where", "bmm-permute-reshape-gram"])
def test_fixed_programs(program: Program) -> None:
    """Two hand-written programs, so the harness runs even where hypothesis would not."""
    check(program, GRAPH_PIPELINE)
