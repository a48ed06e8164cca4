"""The DMAs a lane load or store is cut into (``convert_task_to_mncore.common.
descriptors``): for any per-lane DRAM addresses, the DMAs' words (``DmaOp.dram_words``,
what the simulator moves), in lane order, are the addresses; a store's DMAs write no
word twice; and windows' and transposes' rows become one DMA each (rows and pitch)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mncore_ir.dialects import mncore as m
from mncore_ir.transforms.convert_task_to_mncore.common import descriptors


def _dmas(addresses: np.ndarray, load: bool) -> list[m.DmaOp]:
    kind = "load" if load else "store"
    out = []
    for first, address, words, run, stride, rows, pitch in descriptors(addresses, load):
        dram, l2bm = m.ref("dram", address), m.ref("l2bm", first)
        op = m.DmaOp(0, kind, [dram if load else l2bm], l2bm if load else dram, words, 1,
                     run, stride, rows=rows, pitch=pitch)
        op.verify()
        out.append(op)
    return out


def _covered(addresses: np.ndarray, load: bool) -> np.ndarray:
    ops = _dmas(addresses, load)
    lanes = np.concatenate([np.arange(op.destination().address.data if load else
                                      op.srcs.data[0].address.data,
                                      (op.destination().address.data if load else
                                       op.srcs.data[0].address.data) + op.count)
                            for op in ops])
    assert (lanes == np.arange(len(addresses))).all()  # each lane once, in order
    return np.concatenate([op.dram_words() for op in ops])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=40), st.booleans())
def test_the_dmas_move_exactly_the_lanes_words(addresses: list[int], load: bool) -> None:
    words = np.array(addresses if load else sorted(set(addresses)), np.int64)
    got = _covered(words, load)
    assert (got == words).all()
    if not load:
        assert len(set(got.tolist())) == len(got)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 3), st.integers(0, 50),
       st.booleans())
def test_windows_and_transposes_are_one_dma(rows: int, cols: int, step: int, base: int,
                                            transposed: bool) -> None:
    """A pooling window's rows (``step`` apart along a row of 32, never reaching the
    next row's first word, which would join them into one run) or a transposed block:
    one DMA whatever the rows, its words in lane order."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    addresses = (base + (c * 16 + r if transposed else r * 32 + c * step)).reshape(-1)
    assert len(_dmas(addresses, load=True)) == 1
    assert (_covered(addresses, load=True) == addresses).all()


def test_a_load_repeating_each_word_is_one_dma() -> None:
    """Lanes reading each word many times (a channel's scale over its plane) are rows
    of one word read again (stride 0), not a DMA per change of word; consecutive words
    stay one run."""
    addresses = np.repeat(np.arange(7, 11), 64)
    assert descriptors(addresses, load=True) == [(0, 7, 256, 1, 0, 4, 1)]
    assert (_covered(addresses, load=True) == addresses).all()
    assert descriptors(np.arange(7, 263), load=True) == [(0, 7, 256, None, None, None, None)]
