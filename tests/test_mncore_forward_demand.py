"""``mncore-forward-stores`` checks only the L2BM words an L2 instruction reads to any
effect (``transforms/mncore_forward_stores_demand.py``): what one L2B's copy holds
matters only if a later store takes something computed from it."""

from __future__ import annotations

import numpy as np
import pytest
from test_mncore import parse_program, program_text

from mncore_ir.dialects import mncore as m
from mncore_ir.targets.mncore_simulator import simulate
from mncore_ir.transforms.mncore_forward_stores import forward_stores
from mncore_ir.transforms.mncore_forward_stores_demand import demanded_reads
from mncore_ir.transforms.mncore_schedule import schedule

#: A round trip to L2B 0's copy, scattered to the L1Bs of every L2B (as a matmul's
#: operand whose rows one L2B holds), added to another word on the PEs and gathered back; then a
#: store from L2B 0's copy into the output, and a store from ``{copy}``'s (none, or
#: L2B 3's into the output too).
ROUND_TRIP = [
    'mncore.dma {} "store" l2bm[0] -> dram[64] words 16 tag 1', "mncore.wait {} tag 1",
    'mncore.dma {} "load" dram[64] -> l2bm[32] words 16 l2b 0 tag 2', "mncore.wait {} tag 2",
    'mncore.l2 {} "scatter" l2bm[32] -> l1bm[0] words 2',
    'mncore.l1 {} "scatter" l1bm[0] -> lm0[0]',
    'mncore.alu {} "fadd" lm0[0], lm1[0] -> grf0[0]',
    'mncore.l1 {} "gather" grf0[0] -> l1bm[512]',
    'mncore.l2 {} "gather" l1bm[512] -> l2bm[128] words 2',
    'mncore.dma {} "store" l2bm[128] -> dram[64] words 16 tag 3', "mncore.wait {} tag 3"]
LATER_STORE = ['mncore.dma {} "store" l2bm[128] -> dram[80] words 16 l2b 3 tag 4',
               "mncore.wait {} tag 4"]


def loads(program: m.ProgramOp) -> int:
    return sum(isinstance(op, m.DmaOp) and op.kind.data == "load" for op in program.units())


@pytest.mark.parametrize(("later_store", "kept_loads"), [(False, 0), (True, 1)])
def test_a_load_read_to_effect_by_one_l2b_only_is_forwarded(later_store: bool,
                                                             kept_loads: int) -> None:
    """The scatter reads every L2B's copy of the loaded words, but only L2B 0's reach a
    store: the load goes and the scatter reads the stored words in place. Once L2B 3's
    results are stored too, its copy matters, and it was never loaded: the load stays.
    Either way the output is the program's own, bit for bit, and scheduled."""
    lines = ROUND_TRIP + (LATER_STORE if later_store else [])
    text = program_text(lines).replace('machine "tiny"', 'machine "mncore2"')
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    (expected,), _ = simulate(parse_program(text), [x])
    program = parse_program(text)
    scatter = next(op for op in program.units()
                   if isinstance(op, m.L2Op) and op.kind.data == "scatter")
    demand = demanded_reads(program)[scatter]
    assert demand.shape == (16, 8)
    assert demand[:, 0].all() and demand[:, 3].all() == later_store
    assert not demand[:, [1, 2, 4, 5, 6, 7]].any()
    forward_stores(program)
    assert loads(program) == kept_loads
    (got,), _ = simulate(program, [x])
    np.testing.assert_array_equal(got, expected)
    schedule(program)
    (scheduled,), _ = simulate(program, [x])
    np.testing.assert_array_equal(scheduled, expected)


def test_a_word_read_before_a_store_of_another_copy_is_demanded_there() -> None:
    """Demand is per L2B's copy and per word: the L2 gather of L2B 3's L1B 5 lands in
    words 10-11 of the result, so a store of only those words from L2B 3's copy
    demands only L1B 5's share of the scatter (words 10-11) in that copy."""
    lines = [*ROUND_TRIP[:-2],
             'mncore.dma {} "store" l2bm[138] -> dram[80] words 2 l2b 3 tag 4',
             "mncore.wait {} tag 4"]
    program = parse_program(program_text(lines).replace('machine "tiny"',
                                                        'machine "mncore2"'))
    scatter = next(op for op in program.units()
                   if isinstance(op, m.L2Op) and op.kind.data == "scatter")
    demand = demanded_reads(program)[scatter]
    assert np.flatnonzero(demand[:, 3]).tolist() == [10, 11]
    assert not np.delete(demand, 3, axis=1).any()


def test_a_forward_whose_shifted_read_would_pass_l2bm_keeps_its_load() -> None:
    """A round trip from L2BM's last 32 words into its first: the scatter reads 64
    words (2 L1Bs' 32), of which only the loaded 32 carry data, and read in place they
    would run past L2BM's end (an internal numpy error in the pass, found by a probe:
    index_fill then argmax of a 3x3000 tensor on tiny). The load stays; the output is
    the program's own."""
    lines = ['mncore.dma {} "load" dram[0] -> l2bm[4064] words 32 tag 1',
             "mncore.wait {} tag 1",
             'mncore.dma {} "store" l2bm[4064] -> dram[200] words 32 tag 2',
             "mncore.wait {} tag 2",
             'mncore.dma {} "load" dram[200] -> l2bm[0] words 32 tag 3',
             "mncore.wait {} tag 3",
             'mncore.l2 {} "scatter" l2bm[0] -> l1bm[0] words 32 lanes 32',
             'mncore.l1 {} "scatter" l1bm[0] -> lm0[0]',
             'mncore.alu {} "fpass" lm0[0] -> grf0[0]',
             'mncore.l1 {} "gather" grf0[0] -> l1bm[512]',
             'mncore.l2 {} "gather" l1bm[512] -> l2bm[128] words 32',
             'mncore.dma {} "store" l2bm[128] -> dram[64] words 32 tag 4',
             "mncore.wait {} tag 4"]
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    program = parse_program(program_text(lines))
    forward_stores(program)
    assert loads(program) == 2
    (got,), _ = simulate(program, [x])
    np.testing.assert_array_equal(got, x)
