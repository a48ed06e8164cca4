"""The task level end to end: ``convert-graph-to-task`` checked with the simulator.

* The model zoo's training steps, fused (and fully decomposed then fused), converted
  with default and with small tiles: the simulated kernel computes what the graph
  interpreter computes on the module before conversion, in program order and in a
  random topological order of the kernel's events.
* Random programs (``test_random_graphs.programs``) with random tile options, buffer
  reuse on or off and random execution orders.
* Dropped dependencies: removing any one wait of a converted kernel makes some legal
  schedule compute a wrong result (the simulator poisons fresh buffers with NaN), while
  the intact kernel agrees in every schedule tried. This is what gives the comparisons
  above their power: a converter that forgot an edge would be caught.
* Structural invariants of converted kernels: they verify, waits follow their
  signallers, the wait edges are transitively reduced, every pair of conflicting
  accesses is ordered by the events, and buffer reuse saves buffers.
* The kernel verifier's rejections, by message, on kernels parsed from text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest
import torch
from conftest import ATOL, RTOL, assert_all_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_random_graphs import Program, Step, build, make_inputs, programs
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i32
from xdsl.irdl import AttrSizedOperandSegments
from xdsl.utils.exceptions import VerifyException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.frontends.fx import CapturedGraph, capture, import_captured
from mncore_ir.parsing import LocatingParser
from mncore_ir.pipeline import GRAPH_PIPELINE, apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import InterpretationError, run_function
from mncore_ir.targets.task_simulator import find_kernel, predecessors, simulate
from mncore_ir.testing.model_zoo import TRAINING_STEPS, TrainingStep

GetStep = Callable[[str], tuple[TrainingStep, CapturedGraph]]

#: Simplify and fuse: the graph pipeline without decomposing composites.
FUSE = "canonicalize,cse,dce,graph-fuse-elementwise"
#: Pass options giving many small tiles (a GPT step becomes about 4,300 tasks).
SMALL = "{matmul_tile=8,16 elementwise_tile=64 row_tile=2}"
#: A random topological order used for every model.
SEED = 7
SEGMENTS = AttrSizedOperandSegments.attribute_name


# --------------------------------------------------------------------------- helpers


def numpy_inputs(captured: CapturedGraph) -> list[np.ndarray]:
    return [x.numpy().copy() for x in captured.example_inputs]


def to_kernel(module: ModuleOp, options: str = "") -> t.KernelOp:
    """Convert in place (verifying) and return the module's kernel."""
    apply_pipeline(module, "convert-graph-to-task" + options)
    return find_kernel(module)


Converted = tuple[t.KernelOp, list[np.ndarray], list[np.ndarray]]
_CONVERTED: dict[tuple[str, str, str], Converted] = {}


def converted_step(get: GetStep, name: str, pipeline: str, options: str) -> Converted:
    """The step's kernel after ``pipeline`` and conversion with ``options``, its inputs
    and the graph interpreter's outputs before conversion (cached: do not modify)."""
    key = (name, pipeline, options)
    if key not in _CONVERTED:
        _, captured = get(name)
        module = import_captured(captured)
        apply_pipeline(module, pipeline)
        inputs = numpy_inputs(captured)
        expected = run_function(module, inputs)
        _CONVERTED[key] = to_kernel(module, options), inputs, expected
    return _CONVERTED[key]


def agrees(outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> bool:
    """Within RTOL/ATOL everywhere (a NaN never agrees)."""
    return all(o.shape == e.shape and o.dtype == e.dtype
               and np.allclose(o, e, rtol=RTOL, atol=ATOL) for o, e in zip(outputs, expected,
                                                                           strict=True))


def runs_right(kernel: t.KernelOp, inputs: Sequence[np.ndarray],
               expected: Sequence[np.ndarray], seed: int | None) -> bool:
    """Whether simulating in the order of ``seed`` gives the expected outputs (a task
    that fails on poisoned data, say an index out of range, counts as wrong)."""
    try:
        with np.errstate(all="ignore"):  # poisoned values may divide by zero
            outputs = simulate(kernel, inputs, order_seed=seed)
    except InterpretationError:
        return False
    return agrees(outputs, expected)


def ancestors(preds: Sequence[Sequence[int]]) -> list[int]:
    """For each task, the bitset of the tasks it transitively waits for."""
    result: list[int] = []
    for ps in preds:
        bits = 0
        for p in ps:
            bits |= result[p] | 1 << p
        result.append(bits)
    return result


def signallers(kernel: t.KernelOp) -> dict[object, list[int]]:
    found: dict[object, list[int]] = {}
    for index, task in enumerate(kernel.tasks()):
        if task.signal is not None:
            found.setdefault(task.signal, []).append(index)
    return found


def set_waits(task: t.TaskOp, waits: Sequence[object]) -> None:
    """Replace the events ``task`` waits on, keeping everything else."""
    signal = [] if task.signal is None else [task.signal]
    task.operands = [*task.ins, *task.outs, *waits, *signal]  # type: ignore[list-item]
    task.properties[SEGMENTS] = DenseArrayBase.from_list(
        i32, [len(task.ins), len(task.outs), len(waits), len(signal)])


@contextlib.contextmanager
def without_wait(kernel: t.KernelOp, index: int, wait: int) -> Iterator[t.TaskOp]:
    """The kernel with task ``index`` no longer waiting on its ``wait``-th event (the
    task is modified in place and restored afterwards). The verifier refuses the
    result as a race at that task, and finds nothing else wrong with it."""
    task = kernel.tasks()[index]
    waits = list(task.waits)
    set_waits(task, waits[:wait] + waits[wait + 1:])
    try:
        with pytest.raises(VerifyException, match=rf"^task {index} \(@\w+\) "
                           r"(reads|writes) .* but waits on no event after it"):
            kernel.verify()
        yield task
    finally:
        set_waits(task, waits)


@contextlib.contextmanager
def reordered(kernel: t.KernelOp, order: Sequence[int]) -> Iterator[None]:
    """The kernel with its tasks in ``order`` (in place, restored afterwards)."""
    block = kernel.body.block
    tasks = kernel.tasks()
    ret = block.last_op
    assert ret is not None
    original = list(block.ops)
    try:
        for task in tasks:
            task.detach()
        for index in order:
            block.insert_op_before(tasks[index], ret)
        yield
    finally:
        for op in list(block.ops):
            op.detach()
        block.add_ops(original)


def earliest_first(preds: Sequence[Sequence[int]], index: int) -> list[int]:
    """A topological order that runs task ``index`` as soon as its (remaining) waits
    allow: its ancestors in program order, the task, then everything else."""
    before = ancestors(preds)[index]
    first = [i for i in range(len(preds)) if before >> i & 1]
    return [*first, index, *(i for i in range(len(preds)) if i != index and not before >> i & 1)]


# --------------------------------------------------------------------------- 1. models

MODEL_CASES = [
    pytest.param(name, FUSE, options, id=f"{name}-fused-{label}")
    for name in TRAINING_STEPS for label, options in (("default", ""), ("small", SMALL))
] + [
    pytest.param(name, GRAPH_PIPELINE, SMALL if name != "gpt_adamw" else "",
                 id=f"{name}-graph-pipeline-{'small' if name != 'gpt_adamw' else 'default'}")
    for name in TRAINING_STEPS
]


@pytest.mark.parametrize(("name", "pipeline", "options"), MODEL_CASES)
def test_training_step_kernel_matches_graph(name: str, pipeline: str, options: str,
                                           captured_steps: GetStep) -> None:
    kernel, inputs, expected = converted_step(captured_steps, name, pipeline, options)
    for seed in (None, SEED):
        assert_all_close(simulate(kernel, inputs, order_seed=seed), expected)


# --------------------------------------------------------------------------- 2. random programs

GRAPH_PIPELINES = ["", "canonicalize,cse,dce", FUSE, GRAPH_PIPELINE]


@st.composite
def task_options(draw: st.DrawFn) -> str:
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return (f"{{matmul_tile={rows},{cols} elementwise_tile={draw(st.integers(1, 24))} "
            f"row_tile={draw(st.integers(1, 3))} "
            f"reuse_buffers={str(draw(st.booleans())).lower()} "
            # few workers and short slabs: split-K (with epilogues) and split reductions
            f"workers={draw(st.sampled_from([4, 132]))} "
            f"split_k={draw(st.sampled_from([0, 1, 3, 64]))}}}")


def check_random_program(program: Program, pipeline: str, options: str,
                         seeds: Sequence[int | None]) -> None:
    fn = build(program)
    inputs = [x.numpy() for x in make_inputs(program)]
    module = import_captured(capture(fn, *make_inputs(program)))
    if pipeline:
        apply_pipeline(module, pipeline)
    expected = run_function(module, inputs)
    kernel = to_kernel(module, options)
    for seed in seeds:
        assert_all_close(simulate(kernel, inputs, order_seed=seed), expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), pipeline=st.sampled_from(GRAPH_PIPELINES), options=task_options(),
       seeds=st.lists(st.integers(0, 2**16), min_size=1, max_size=3))
def test_random_program_kernel_matches_graph(program: Program, pipeline: str, options: str,
                                              seeds: list[int]) -> None:
    check_random_program(program, pipeline, options, [None, *seeds])


#: A program whose small-tile kernel has broadcasts (one operand read whole by every
#: tile), a keepdim reduction, a batched matmul, a permute and internal intermediates
#: (the clamps of ``exp``).
SMALL_PROGRAM = Program((
    Step("input", "", (), (2, 3, 4)), Step("input", "", (), (4,)),
    Step("binary", "mul", (0, 1)), Step("unary", "tanh", (2,)),
    Step("reduce", "sum", (3,), ((-1,), True)), Step("binary", "sub", (3, 4)),
    Step("input", "", (), (2, 4, 3)), Step("matmul", "", (5, 6)),
    Step("permute", "", (7,), (2, 0, 1)), Step("unary", "exp", (8,)),
    Step("unary", "neg", (9,)), Step("unary", "sigmoid", (10,)),
), seed=3)
SMALL_OPTIONS = "{matmul_tile=2,2 elementwise_tile=4 row_tile=1}"


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "no-reuse"])
def test_small_program_kernel_matches_graph(reuse: bool) -> None:
    """A fixed program, so the harness runs even where hypothesis would not."""
    options = SMALL_OPTIONS[:-1] + f" reuse_buffers={str(reuse).lower()}}}"
    check_random_program(SMALL_PROGRAM, "", options, [None, 0, 1, 2])


# --------------------------------------------------------------------------- 3. dropped edges

#: How many random orders may be tried before a dropped wait must have shown.
SEED_BOUND = 100
#: For each wait (task, position): the seed that showed it dropped, or "earliest", or None.
Findings = dict[tuple[int, int], int | str | None]


def dropped_wait_findings(kernel: t.KernelOp, inputs: Sequence[np.ndarray],
                          expected: Sequence[np.ndarray]
                          ) -> Findings:
    """For every wait (task, position) of ``kernel``, which the verifier must then
    refuse as a race at that task: the first seed below SEED_BOUND
    whose order gives a wrong result with that wait dropped, else ``"earliest"`` when
    running the task as early as its other waits allow does, else None.

    The intact kernel must agree in every order tried (checked lazily, once a seed)."""
    intact: dict[int, bool] = {}

    def intact_ok(seed: int) -> bool:
        if seed not in intact:
            intact[seed] = runs_right(kernel, inputs, expected, seed)
        return intact[seed]

    assert runs_right(kernel, inputs, expected, None)
    findings: Findings = {}
    for index, task in enumerate(kernel.tasks()):
        for wait in range(len(task.waits)):
            found: int | str | None = None
            with without_wait(kernel, index, wait):
                for seed in range(SEED_BOUND):
                    if not runs_right(kernel, inputs, expected, seed):
                        found = seed
                        break
                if found is None:
                    order = earliest_first(predecessors(kernel), index)
                    with reordered(kernel, order):
                        # a legal schedule of the broken kernel: the race is all that
                        # is wrong with it
                        with pytest.raises(VerifyException, match="no event after it"):
                            kernel.verify()
                        if not runs_right(kernel, inputs, expected, None):
                            found = "earliest"
            if isinstance(found, int):
                for seed in range(found + 1):
                    assert intact_ok(seed), f"the intact kernel is wrong with seed {seed}"
            findings[index, wait] = found
    return findings


def mlp_step(get: GetStep, name: str) -> tuple[ModuleOp, list[np.ndarray], list[np.ndarray]]:
    """An MLP step fused and converted with default tiles, with one target set to the
    ignore index -100. Without it, ``target != -100`` is all true, like a poisoned
    boolean buffer, and ``where(target != -100, target, 0)`` equals ``target``, so
    reading the one for the other could not show."""
    _, captured = get(name)
    module = import_captured(captured)
    apply_pipeline(module, FUSE)
    inputs = numpy_inputs(captured)
    inputs[captured.input_names.index("target")][0] = -100
    expected = run_function(module, inputs)
    to_kernel(module)
    return module, inputs, expected


def reuse_chain(_get: GetStep) -> tuple[ModuleOp, list[np.ndarray], list[np.ndarray]]:
    """A chain of 4x4 elementwise ops and a transpose, unfused, in one-row tiles: the
    intermediates share three buffers, so about a quarter of the edges are
    write-after-read ones (and the transpose makes each row tile wait on column tiles).
    Only injective ops: a relu would clip a stale value to the same zero and hide a
    dropped edge."""

    def fn(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor]:
        a = torch.tanh(x)
        b = torch.sigmoid(a.transpose(0, 1))
        e = torch.tanh(-(b * y) + a)
        return (e.sum(-1),)

    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-2, 2, (4, 4)).astype(np.float32) for _ in range(2)]
    module = import_captured(capture(fn, *(torch.from_numpy(a.copy()) for a in inputs)))
    apply_pipeline(module, "canonicalize,cse,dce")
    expected = run_function(module, inputs)
    to_kernel(module, "{elementwise_tile=4 row_tile=1}")
    return module, inputs, expected


DROP_CASES: dict[str, Callable[[GetStep], tuple[ModuleOp, list[np.ndarray],
                                                list[np.ndarray]]]] = {
    "mlp_sgd": lambda get: mlp_step(get, "mlp_sgd"),
    "mlp_adam": lambda get: mlp_step(get, "mlp_adam"),
    "reuse_chain": reuse_chain,
}
_FINDINGS: dict[str, tuple[t.KernelOp, Findings]] = {}


def drop_case(get: GetStep, name: str) -> tuple[t.KernelOp, Findings]:
    """The case's kernel and what dropping each of its waits gives (cached)."""
    if name not in _FINDINGS:
        module, inputs, expected = DROP_CASES[name](get)
        kernel = find_kernel(module)
        _FINDINGS[name] = kernel, dropped_wait_findings(kernel, inputs, expected)
    return _FINDINGS[name]


def reads_from(consumer: t.TaskOp, producer: t.TaskOp) -> bool:
    """Whether ``consumer`` reads something ``producer`` writes (else the edge between
    them orders a write after a read or a write)."""
    return any(v == w and all(a < b + m and b < a + s for a, s, b, m in
                              zip(x.offsets, x.sizes, y.offsets, y.sizes, strict=True))
               for v, x in consumer.reads() for w, y in producer.writes())


@pytest.mark.parametrize("name", DROP_CASES)
def test_every_dropped_wait_shows(name: str, captured_steps: GetStep) -> None:
    """Each wait of the kernel, dropped alone, gives a wrong result in some legal
    schedule: a random order, or running the task as early as its other waits allow."""
    kernel, findings = drop_case(captured_steps, name)
    assert len(findings) >= 40
    undetected = [edge for edge, found in findings.items() if found is None]
    assert not undetected, f"dropped waits (task, position) never shown: {undetected}"
    tasks, preds = kernel.tasks(), predecessors(kernel)
    reuse_edges = sum(not reads_from(tasks[i], tasks[p]) for i, ps in enumerate(preds)
                      for p in ps)
    assert reuse_edges >= (10 if name == "reuse_chain" else 1)


@pytest.mark.parametrize("name", [
    "mlp_sgd",
    "mlp_adam",
    "reuse_chain",
])
def test_random_orders_show_every_dropped_wait(name: str, captured_steps: GetStep) -> None:
    """Random orders alone (seeds below SEED_BOUND) find every dropped wait."""
    _, findings = drop_case(captured_steps, name)
    missed = [edge for edge, found in findings.items() if not isinstance(found, int)]
    assert not missed, f"no seed below {SEED_BOUND} shows these dropped waits: {missed}"


# --------------------------------------------------------------------------- 4. invariants


def check_waits(kernel: t.KernelOp) -> None:
    """Waits are on events signalled by at least one task, all of them earlier; no
    event is waited on twice by one task; events with the same waiters are one event."""
    found = signallers(kernel)
    waiters: dict[object, list[int]] = {}
    for index, task in enumerate(kernel.tasks()):
        assert len(set(task.waits)) == len(task.waits), f"task {index} waits twice"
        for event in task.waits:
            who = found.get(event, [])
            assert who, f"task {index} waits on an event nobody signals"
            assert max(who) < index, f"task {index} waits on task {max(who)}"
            waiters.setdefault(event, []).append(index)
    sets = [tuple(w) for w in waiters.values()]
    assert len(set(sets)) == len(sets), "two events have the same waiters"


def check_reduced(kernel: t.KernelOp) -> None:
    """No task waits for a task that another task it waits for already waits for."""
    preds = predecessors(kernel)
    anc = ancestors(preds)
    for index, ps in enumerate(preds):
        for p in ps:
            implied = [q for q in ps if q != p and anc[q] >> p & 1]
            assert not implied, (f"task {index}: the edge from task {p} is implied by "
                                 f"task {implied[0]}")


def check_ordered_conflicts(kernel: t.KernelOp) -> None:
    """Every two tasks touching overlapping regions of a memref, at least one writing,
    are ordered by the events; and no task writes a kernel input or a constant."""
    tasks = kernel.tasks()
    anc = ancestors(predecessors(kernel))
    read_only = {*kernel.inputs, *(op.result for op in kernel.body.block.ops
                                   if isinstance(op, t.ConstantOp))}
    accesses: dict[object, list[tuple[int, t.Tile, bool]]] = {}
    for index, task in enumerate(tasks):
        for writes, pairs in ((False, task.reads()), (True, task.writes())):
            for value, tile in pairs:
                assert not (writes and value in read_only), f"task {index} writes an input"
                accesses.setdefault(value, []).append((index, tile, writes))
    for value, items in accesses.items():
        if not any(w for _, _, w in items):
            continue
        index = np.array([i for i, _, _ in items])
        lo = np.array([tile.offsets for _, tile, _ in items]).reshape(len(items), -1)
        hi = lo + np.array([tile.sizes for _, tile, _ in items]).reshape(len(items), -1)
        writes = np.array([w for _, _, w in items])
        for a, (i, _, w) in enumerate(items):
            overlap = np.all((lo < hi[a]) & (lo[a] < hi), axis=1)
            conflict = overlap & (writes | w) & (index > i)
            for j in set(index[conflict].tolist()):
                assert anc[j] >> i & 1, (f"tasks {i} (@{t.task_label(tasks[i])}) and {j} "
                                         f"(@{t.task_label(tasks[j])}) race on "
                                         f"%{value.name_hint}")


@pytest.mark.parametrize(("name", "options"), [
    pytest.param(name, options, id=f"{name}-{label}")
    for name in TRAINING_STEPS for label, options in (("default", ""), ("small", SMALL))
])
def test_model_kernel_invariants(name: str, options: str, captured_steps: GetStep) -> None:
    kernel, _, _ = converted_step(captured_steps, name, FUSE, options)
    kernel.verify()
    check_waits(kernel)
    check_reduced(kernel)
    check_ordered_conflicts(kernel)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), options=task_options())
def test_random_program_kernel_invariants(program: Program, options: str) -> None:
    module = import_captured(capture(build(program), *make_inputs(program)))
    apply_pipeline(module, FUSE)
    kernel = to_kernel(module, options)
    check_waits(kernel)
    check_reduced(kernel)
    check_ordered_conflicts(kernel)


def count_buffers(kernel: t.KernelOp) -> int:
    return sum(isinstance(op, t.BufferOp) for op in kernel.body.block.ops)


def test_buffer_reuse_saves_buffers(captured_steps: GetStep) -> None:
    reused, _, _ = converted_step(captured_steps, "gpt_adamw", FUSE, "")
    fresh, inputs, expected = converted_step(captured_steps, "gpt_adamw", FUSE,
                                             "{reuse_buffers=false}")
    assert count_buffers(reused) < count_buffers(fresh)
    assert_all_close(simulate(fresh, inputs, order_seed=SEED), expected)


def test_reduction_keeps_a_small_kernel_exact() -> None:
    """In a hand-checkable kernel, the edges are exactly the needed ones."""
    program = Program((Step("input", "", (), (4, 4)), Step("unary", "tanh", (0,)),
                       Step("binary", "add", (1, 0)), Step("unary", "neg", (2,)),
                       Step("reduce", "sum", (3,), ((-1,), False))), seed=0)
    module = import_captured(capture(build(program), *make_inputs(program)))
    apply_pipeline(module, "canonicalize,cse,dce")
    kernel = to_kernel(module, "{elementwise_tile=8 row_tile=2}")
    bodies = kernel.bodies()
    kinds = [op.name.removeprefix("graph.") if isinstance(op, g.GraphOp) else "elementwise"
             for op in (t.computation(task, bodies) for task in kernel.tasks())]
    # tanh, add, neg as two row bands each (the last two write outputs), then the sum:
    # each band only waits for the band it reads.
    assert kinds == ["elementwise"] * 6 + ["sum"] * 2, kinds
    assert predecessors(kernel) == [[], [], [0], [1], [2], [3], [4], [5]]


# --------------------------------------------------------------------------- 5. verifier


def parse(text: str) -> ModuleOp:
    """Parsed but not verified: the tests below call the verifier themselves."""
    return LocatingParser(make_context(), text).parse_module()


def kernel_text(tasks: str, events: str = "%e = task.event triggers 1") -> str:
    return f"""
    task.kernel @k(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {{
      task.body @exp(%a: tensor<f32>) {{
        %r = graph.exp %a : tensor<f32>
        task.yield %r : tensor<f32>
      }}
      task.body @neg(%a: tensor<f32>) {{
        %r = graph.neg %a : tensor<f32>
        task.yield %r : tensor<f32>
      }}
      %t = task.buffer : memref<8x16xf32>
      {events}
      {tasks}
      task.return
    }}"""


GOOD = """
      task.task @exp ins(%x[0:8, 0:16]) outs(%t[0:8, 0:16]) signal(%e)
      task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)"""

REJECTED = {
    "trigger-count": (
        GOOD, "%e = task.event triggers 2",
        r"event has trigger count 2 but 1 tasks signal it"),
    "unsignalled-event": (
        GOOD + '\n task.task @exp ins(%x[0:8, 0:16]) outs(%t[0:8, 0:16]) waits(%f)',
        "%e = task.event triggers 1\n %f = task.event triggers 1",
        r"event has trigger count 1 but 0 tasks signal it"),
    "wait-on-later-task": (
        """
        task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
        task.task @exp ins(%x[0:8, 0:16]) outs(%t[0:8, 0:16]) signal(%e)""",
        "%e = task.event triggers 1",
        r"task 0 \(@neg\) waits on an event that task 1 signals: tasks must be in a "
        r"topological order"),
    "wait-on-itself": (
        """
        task.task @exp ins(%x[0:8, 0:16]) outs(%t[0:8, 0:16]) waits(%e) signal(%e)
        task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16])""",
        "%e = task.event triggers 1",
        r"task 0 \(@exp\) waits on an event that it signals itself"),
    "wait-on-one-later-signaller": (
        """
        task.task @exp ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
        task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
        task.task @exp ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)""",
        "%e = task.event triggers 2",
        r"task 1 \(@neg\) waits on an event that task 2 signals"),
    "output-written-twice": (
        GOOD + '\n task.task @neg ins(%x[0:2, 0:2]) outs(%y[1:3, 5:7])',
        "%e = task.event triggers 1",
        r"output 0 of task\.kernel @k: element \[1, 5\] is written by 2 tasks, not "
        r"exactly one"),
    "output-never-written": (
        """
        task.task @exp ins(%x[0:8, 0:16]) outs(%t[0:8, 0:16]) signal(%e)
        task.task @neg ins(%t[0:8, 0:15]) outs(%y[0:8, 0:15]) waits(%e)""",
        "%e = task.event triggers 1",
        r"output 0 of task\.kernel @k: element \[0, 15\] is written by 0 tasks"),
    "input-region-out-of-bounds": (
        """
        task.task @exp ins(%x[0:8, 8:24]) outs(%t[0:8, 0:16]) signal(%e)
        task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)""",
        "%e = task.event triggers 1",
        r"task\.task input 0: region \[0:8, 8:24\] is out of bounds in dimension 1 "
        r"\(size 16\)"),
    "output-region-out-of-bounds": (
        """
        task.task @exp ins(%x[0:8, 0:16]) outs(%t[0:8, 0:16]) signal(%e)
        task.task @neg ins(%t[0:8, 0:16]) outs(%y[1:9, 0:16]) waits(%e)""",
        "%e = task.event triggers 1",
        r"task\.task output 0: region \[1:9, 0:16\] is out of bounds in dimension 0 "
        r"\(size 8\)"),
    "region-of-wrong-rank": (
        """
        task.task @exp ins(%x[0:8]) outs(%t[0:8, 0:16]) signal(%e)
        task.task @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)""",
        "%e = task.event triggers 1",
        r"task\.task input 0: region \[0:8\] does not have rank 2"),
}


def test_good_kernel_verifies() -> None:
    module = parse(kernel_text(GOOD))
    module.verify()
    kernel = find_kernel(module)
    x = np.arange(128, dtype=np.float32).reshape(8, 16) / 100
    for seed in (None, 0):
        assert_all_close(simulate(kernel, [x], order_seed=seed), [-np.exp(x)])


@pytest.mark.parametrize("case", REJECTED)
def test_verifier_rejects(case: str) -> None:
    tasks, events, message = REJECTED[case]
    module = parse(kernel_text(tasks, events))
    with pytest.raises(VerifyException, match=message):
        module.verify()
