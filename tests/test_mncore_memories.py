"""The cycle simulator's memory layout (``targets/mncore_memories.py``): memories held
word-major with unit-major columns, reused from run to run. What a program computes and
what ``memories=`` reports are in the machine's order whatever the columns are."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import make_context
from mncore_ir.targets.mncore_simulator import Simulator, find_program


def simulator(machine: str, lines: list[str]) -> Simulator:
    body = "\n".join(f"  {line.format(8 * i)}" for i, line in enumerate(lines))
    text = (f'mncore.program @p machine "{machine}" {{\n'
            "  mncore.tensor @x input dram[0] : tensor<32xf32>\n"
            "  mncore.tensor @y output dram[64] : tensor<32xf32>\n"
            f"{body}\n}}\n")
    return Simulator(find_program(parse_module(make_context(), text, "p.mlir")))


#: x to every L2B's L2BM, scattered to the L1Bs (4 words each) and broadcast to their
#: PEs; x to the last L2B's alone ({B}), scattered to its L1Bs and from each L1B to its
#: PEs (4 words a PE: only PE 0 gets loaded words), summed over each L1B's PEs,
#: gathered and stored from that L2B.
LINES = ['mncore.dma {} "load" dram[0] -> l2bm[0] words 32 tag 1',
         'mncore.wait {} tag 1',
         'mncore.l2 {} "scatter" l2bm[0] -> l1bm[0] words 4',
         'mncore.l1 {} "bcast" l1bm[0] -> lm0[0]',
         'mncore.dma {} "load" dram[0] -> l2bm[64] words 32 l2b {B} tag 2',
         'mncore.wait {} tag 2',
         'mncore.l2 {} "scatter" l2bm[64] -> l1bm[64] words 4',
         'mncore.l1 {} "scatter" l1bm[64] -> lm1[0]',
         'mncore.l1 {} "reduce" lm1[0] -> l1bm[512]',
         'mncore.l2 {} "gather" l1bm[512] -> l2bm[256] words 4',
         'mncore.dma {} "store" l2bm[256] -> dram[64] words 32 l2b {B} tag 3',
         'mncore.wait {} tag 3']


@pytest.mark.parametrize("name", ["tiny", "mncore2"])
def test_tree_transfers_land_in_the_machines_order(name: str) -> None:
    """PE ``p`` of L1B ``l`` of L2B ``b`` is row ``(b L + l) P + p`` of ``memories``:
    a scatter gives L1B ``l`` words ``4l..4l+3`` of its L2B's, a broadcast gives every
    PE of an L1B its 4 words, an L1 scatter gives PE ``p`` words ``4p..4p+3`` of its
    L1B's (zeros past what was loaded), a reduce sums an L1B's PEs, a gather takes the
    L1Bs in order; the L2B that one-L2B DMAs name is the only one that changes."""
    machine = MACHINES[name]
    last = machine.l2bs - 1
    sim = simulator(name, [line.replace("{B}", str(last)) for line in LINES])
    x = np.arange(1, 33, dtype=np.float32)
    for _ in range(2):  # the checked run, then values only (on reused memories)
        memories: dict[str, np.ndarray] = {}
        (y,), _ = sim.run([x], memories=memories)
        blocks, per = machine.l1b_per_l2b, machine.pes_per_l1b
        lm0 = memories["lm0"].reshape(machine.l2bs, blocks, per, -1)[..., :4]
        expected = x[:4 * blocks].reshape(1, blocks, 1, 4)  # every L2B, every PE
        np.testing.assert_array_equal(lm0, np.broadcast_to(expected, lm0.shape))
        lm1 = memories["lm1"].reshape(machine.l2bs, blocks, per, -1)[..., :4]
        np.testing.assert_array_equal(lm1[:last], 0.0)  # only L2B ``last`` loaded it
        words = np.zeros(per * 4, np.float32)  # L1B b holds x[4b:4b+4]: PE 0 gets them
        for b in range(blocks):
            words[:4] = x[4 * b:4 * b + 4]
            np.testing.assert_array_equal(lm1[last, b].reshape(-1), words)
        l1bm = memories["l1bm"].reshape(machine.l2bs, blocks, -1)
        np.testing.assert_array_equal(l1bm[last, :, 512:516], x[:4 * blocks].reshape(blocks, 4))
        sums = x[:4 * blocks]  # each L1B's sum over its PEs: only PE 0 holds words
        np.testing.assert_array_equal(y[:4 * blocks], sums)
        np.testing.assert_array_equal(y[4 * blocks:], 0.0)


def test_a_later_run_starts_from_zeroed_memories() -> None:
    """Reused memories are zeroed where the last run wrote: a program that reads a word
    before writing it sees 0 every run, whatever the run before left there, and so
    does another program of the same machine run in between."""
    reads_then_writes = ['mncore.l1 {} "gather" lm0[0] -> l1bm[0]',
                         'mncore.l2 {} "gather" l1bm[0] -> l2bm[0] words 4',
                         'mncore.dma {} "store" l2bm[0] -> dram[64] words 32 tag 1',
                         'mncore.wait {} tag 1',
                         'mncore.dma {} "load" dram[0] -> l2bm[0] words 32 tag 2',
                         'mncore.wait {} tag 2',
                         'mncore.l2 {} "scatter" l2bm[0] -> l1bm[0] words 4',
                         'mncore.l1 {} "bcast" l1bm[0] -> lm0[0]']
    first, other = simulator("tiny", reads_then_writes), simulator("tiny", LINES[:4])
    x = np.arange(1, 33, dtype=np.float32)
    for sim in (first, other, first, first):
        (y,), _ = sim.run([x])
        if sim is first:
            np.testing.assert_array_equal(y, 0.0)


def test_runs_in_several_threads_use_their_own_memories() -> None:
    """Threads running programs of one machine at once (the lazy device's worker and
    another runtime's) each borrow their own memories: every run gives the serial
    result."""
    machine_lines = [line.replace("{B}", "1") for line in LINES]
    sims = [simulator("mncore2", machine_lines) for _ in range(3)]
    x = np.arange(1, 33, dtype=np.float32)
    (expected,), _ = sims[0].run([x])
    for sim in sims[1:]:
        sim.run([x])  # checked once
    found: list[np.ndarray] = []

    def runs(sim: Simulator) -> None:
        for _ in range(4):
            found.append(sim.run([x])[0][0])

    threads = [threading.Thread(target=runs, args=(sim,)) for sim in sims]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 12
    for y in found:
        np.testing.assert_array_equal(y, expected)
