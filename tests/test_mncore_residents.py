"""convert-task-to-mncore's waves kept in LM (``residents.py``): a later task that reads
the words an earlier wave loaded or stored, in the same lanes, reads them in LM. Random
dataflow graphs (values read again long after they were made, intermediates sharing
DRAM by liveness with matmuls' and tree sums' results, transposed reads) against eager
PyTorch and bit for bit against the same program read through DRAM
(``resident=false``); what invalidates a wave, one instruction at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from conftest import assert_all_close
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.transforms.convert_task_to_mncore.residents import Residents

Graph = dict[str, Any]
UNARY = ("neg", "relu", "tanh", "twice", "transpose", "row_sum", "column_sum")
BINARY = ("add", "mul", "sub", "max", "matmul")


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    """Ops on square matrices, each reading any earlier value (as plain data)."""
    n = draw(st.sampled_from([3, 8, 20, 40]))
    ops = []
    for i in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(UNARY + BINARY))
        reads = [draw(st.integers(0, i + 1)) for _ in range(2 if kind in BINARY else 1)]
        ops.append((kind, reads))
    outputs = sorted(set(draw(st.lists(st.integers(2, len(ops) + 1), min_size=1, max_size=2))))
    return {"n": n, "ops": ops, "outputs": outputs, "seed": draw(st.integers(0, 99))}


OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "neg": lambda a, b: -a, "relu": lambda a, b: torch.relu(a),
    "tanh": lambda a, b: torch.tanh(a), "twice": lambda a, b: a * 2.0,
    "transpose": lambda a, b: a.t().contiguous(),
    "row_sum": lambda a, b: a + a.sum(dim=1, keepdim=True),
    "column_sum": lambda a, b: a - a.mean(dim=0, keepdim=True),  # a tree's sums
    "matmul": lambda a, b: a @ b / a.shape[0],  # stores in the matmul's own layout
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
    "max": lambda a, b: torch.maximum(a, b)}


def graph_function(graph: Graph) -> Callable[..., tuple[torch.Tensor, ...]]:
    def fn(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = [x, y]
        for kind, reads in graph["ops"]:
            operands = [values[r] for r in reads]
            values.append(OPS[kind](operands[0], operands[-1]))
        return tuple(values[i] for i in graph["outputs"])

    return fn


def program(fn: Callable[..., Any], inputs: list[torch.Tensor], machine: str,
            resident: bool, scheduled: bool = True) -> m.ProgramOp:
    module = import_captured(capture(fn, *inputs))
    passes = ("canonicalize,cse,dce,convert-graph-to-task{target=mncore},"
              f"convert-task-to-mncore{{machine={machine} resident={str(resident).lower()}}}")
    if scheduled:
        passes += ",mncore-forward-stores,mncore-schedule"
    apply_pipeline(module, passes)
    return find_program(module)


def intermediate_loads(prog: m.ProgramOp) -> int:
    """DMA loads of words of intermediate buffers (not inputs, constants or the pool)."""
    spans = [(op.at.address.data, op.at.address.data + op.words.value.data)
             for op in prog.body.block.ops if isinstance(op, m.BufferOp)]
    return sum(any(lo <= int(op.dram_words()[0]) < hi for lo, hi in spans)
               for op in prog.units() if isinstance(op, m.DmaOp) and op.kind.data == "load")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), machine=st.sampled_from(["tiny", "mncore2"]))
def test_random_graphs_match_eager_and_reads_through_dram(graph: Graph, machine: str) -> None:
    g = torch.Generator().manual_seed(graph["seed"])
    inputs = [torch.rand(graph["n"], graph["n"], generator=g) - 0.5 for _ in range(2)]
    fn = graph_function(graph)
    with torch.no_grad():
        eager = [r.numpy() for r in fn(*inputs)]
    arrays = [x.numpy() for x in inputs]
    kept = program(fn, inputs, machine, True)
    ours, _ = simulate(kept, arrays)  # raises on any hazard
    through_dram, _ = simulate(program(fn, inputs, machine, False), arrays)
    event(f"intermediate loads left: {min(intermediate_loads(kept), 3)}")
    assert_all_close(ours, eager)
    for a, b in zip(ours, through_dram, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_chain_reads_each_value_from_lm() -> None:
    """Each task of ``tanh(exp(x) * y + x)`` reads its operands in the lanes the last
    wave left them: no intermediate is loaded from DRAM (through DRAM: all 3 are),
    and the result equals eager's."""
    def fn(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor]:
        return (torch.tanh(torch.exp(x) * y + x),)

    inputs = [torch.rand(16, 24) - 0.5, torch.rand(16, 24) - 0.5]
    for machine in ("tiny", "mncore2"):
        assert intermediate_loads(program(fn, inputs, machine, True, scheduled=False)) == 0
        assert intermediate_loads(program(fn, inputs, machine, False, scheduled=False)) >= 3
        outputs, _ = simulate(program(fn, inputs, machine, True), [x.numpy() for x in inputs])
        with torch.no_grad():
            assert_all_close(outputs, [fn(*inputs)[0].numpy()])


def residents() -> Residents:
    machine = MACHINES["tiny"]
    half = machine.lm_words // 2
    return Residents(machine, half // 2, half, ring_loads=half // 2)


WORDS = np.arange(100, 108)


def test_a_loaded_wave_is_found_until_its_slot_is_written() -> None:
    r = residents()
    r.loaded(4, WORDS, ("lm1", 200), taken_at=1)
    assert r.find(4, WORDS, loads=2) == ("lm1", 200)
    assert r.find(8, WORDS, loads=2) is None  # other lanes
    assert r.find(4, WORDS[::-1], loads=2) is None
    r.written(m.AluOp(0, "fadd", [m.ref("lm0", 0), m.ref("grf0", 0)], m.ref("lm1", 202)))
    assert r.find(4, WORDS, loads=2) is None


def test_a_ring_slot_is_not_found_once_it_may_be_reused_in_the_wave() -> None:
    r = residents()
    r.loaded(4, WORDS, ("lm1", 200), taken_at=1)
    assert r.find(4, WORDS, loads=1 + r.ring_loads // 2) is not None
    assert r.find(4, WORDS, loads=2 + r.ring_loads // 2) is None


def test_a_store_to_one_of_its_words_ends_a_wave() -> None:
    r = residents()
    r.loaded(4, WORDS, ("lm1", 200), taken_at=1)
    for store in (m.DmaOp(0, "store", [m.ref("l2bm", 0)], m.ref("dram", 96), 4, 1),
                  m.DmaOp(0, "store", [m.ref("l2bm", 0)], m.ref("dram", 90), 4, 1, 1, 13)):
        first = store.dram.address.data
        assert m.dram_extent(4, store.run and store.run.value.data,
                             store.stride and store.stride.value.data, None, None) == \
            store.dram_extent()
        r.stored_over(first, store.dram_extent(), store.dram_words)
        if first == 96:  # words 96..99: none of the wave's
            assert r.find(4, WORDS, loads=2) is not None
    assert r.find(4, WORDS, loads=2) is None  # word 103 of 90, 103, 116, 129


def test_a_wave_stored_from_grf_is_copied_and_the_copy_dropped_if_unread() -> None:
    r = residents()
    copy = r.stored(4, WORDS, ("grf0", 8), taken_at=None)
    assert copy is not None and copy.srcs.data[0] == m.ref("grf0", 8)
    r.copied()
    home = copy.destination()
    assert home.space.data in ("lm0", "lm1") and r.first <= home.address.data < r.top
    assert r.unused_copies() == {id(copy)}
    assert r.find(4, WORDS, loads=0) == (home.space.data, home.address.data)
    assert r.unused_copies() == set()


def test_constants_take_back_resident_slots_not_in_use() -> None:
    r = residents()
    copy = r.stored(4, WORDS, ("grf0", 8), taken_at=None)
    assert copy is not None
    r.copied()
    space, at = copy.destination().space.data, copy.destination().address.data
    assert r.find(4, WORDS, loads=0) is not None
    assert not r.yield_to(space, at + 4)  # the current wave reads it
    r.new_wave()
    assert r.yield_to(space, at + 4)
    assert r.find(4, WORDS, loads=0) is None
    for _ in range((r.top - r.first) // 2):  # its slot is never handed out again
        slot = r.stored(4, WORDS + 8, ("grf0", 8), taken_at=None)
        assert slot is None or (slot.destination().space.data, slot.destination().address.data
                                ) != (space, at)
        if slot is not None:
            r.copied()
        r.new_wave()


def test_a_resident_slot_the_current_wave_reads_is_not_handed_out() -> None:
    """A wave stored again from a resident slot it was found in (a copy's result) shares
    the slot: while the current wave reads that second wave, the slot is neither evicted
    for a new copy nor given to constants."""
    r = residents()
    copy = r.stored(4, WORDS, ("grf0", 8), taken_at=None)
    assert copy is not None
    r.copied()
    home = (copy.destination().space.data, copy.destination().address.data)
    r.new_wave()
    assert r.find(4, WORDS, loads=0) == home
    assert r.stored(4, WORDS + 100, home, taken_at=None) is None  # recorded in place
    r.new_wave()
    assert r.find(4, WORDS + 100, loads=0) == home  # the current wave reads it
    homes = []
    while (more := r.stored(4, WORDS + 1000 + 8 * len(homes), ("grf0", 8), None)) is not None:
        r.copied()
        homes.append((more.destination().space.data, more.destination().address.data))
    assert home not in homes and len(homes) == (r.top - r.first) // 2 - 1
    assert not r.yield_to(home[0], home[1] + 4)


def test_a_repeated_group_ends_the_waves_its_iterations_write() -> None:
    """An L1 scatter repeated with a stride of 4 words writes lm1[192], [196], ...: the
    wave at lm1[200] ends with the third iteration, not before."""
    for count, found in ((2, True), (3, False)):
        r = residents()
        r.loaded(4, WORDS, ("lm1", 200), taken_at=1)
        body = m.L1Op(0, "scatter", [m.ref("l1bm", 0)], m.ref("lm1", 192), strides=[0, 4])
        r.written(m.RepeatOp(0, count, 4, [body]))
        assert (r.find(4, WORDS, loads=2) is not None) == found
