"""Which words of L2BM an L2 instruction reads to any effect, for ``mncore-forward-stores``.

A word matters only if what is computed from it can still reach DRAM: data leaves the
chip by stores alone, and every other instruction acts within one L2B (an L2 transfer
between its L2BM copy and its L1Bs) or one L1B (an L1 transfer, the ALU and the MAU on
its PEs). One backward sweep over the program's issues keeps, per memory word and per
L1B (L2BM: per L2B's copy), whether its current value is still read on a path to a
store (the PEs of an L1B together, which only over-approximates). An L2 broadcast or
scatter from L2BM then *demands* a source word of a copy when a word it writes there is
live after it: a matmul's operand scattered to every L1B of every L2B, of which only the
L1Bs of one L2B hold rows, demands only their words. The forwarder checks only demanded
words (the rest may hold anything: no store ever sees them).
"""

from __future__ import annotations

import numpy as np

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.mncore_machines import PE_SPACES


def demanded_reads(program: m.ProgramOp) -> dict[m.L2Op, np.ndarray]:
    """For each L2 ``bcast`` or ``scatter``: its source words (per word of a copy's
    read, per L2B) whose values can reach a store. Empty when the program reads
    ``fwd`` (scheduled: the sweep knows no adjacency)."""
    machine = program.target
    l1bs, l2bs, per = machine.l1bs, machine.l2bs, machine.l1b_per_l2b
    units = {**{space: l1bs for space in (*PE_SPACES, "l1bm")}, "l2bm": l2bs}
    live = {space: np.zeros((machine.size(space), n), bool) for space, n in units.items()}
    demanded: dict[m.L2Op, np.ndarray] = {}
    for _, op, _, reads, writes in reversed(program.issues()):
        if isinstance(op, m.DmaOp):
            copies = slice(None) if op.block is None else op.block
            if op.kind.data == "store":
                ((_, first, n, _),) = [r for r in reads if r[0] == "l2bm"]
                live["l2bm"][first:first + n, op.block or 0] = True
            else:
                ((_, first, n, _),) = [w for w in writes if w[0] == "l2bm"]
                live["l2bm"][first:first + n, copies] = False
            continue
        if any(space == "fwd" for space, *_ in reads):
            return {}
        if isinstance(op, m.L2Op):
            _l2(op, reads, writes, live, per, l2bs, demanded)
            continue
        need = np.zeros(l1bs, bool)  # per L1B: does any word it writes matter after it?
        for space, first, n, _ in writes:
            need |= live[space][first:first + n].any(axis=0)
        if not (isinstance(op, m.AluOp) and op.mask is not None):  # a mask keeps words
            for space, first, n, _ in writes:
                live[space][first:first + n] = False
        for space, first, n, _ in reads:
            live[space][first:first + n] |= need
    return demanded


def _l2(op: m.L2Op, reads: list, writes: list, live: dict[str, np.ndarray], per: int,
        l2bs: int, demanded: dict[m.L2Op, np.ndarray]) -> None:
    """One L2 instruction of the backward sweep (L1B ``k per + j`` is L1B ``j`` of L2B
    ``k``)."""
    ((_, src, src_n, _),) = reads
    ((_, dst, dst_n, _),) = writes
    n, kind = op.count, op.kind.data
    if kind in ("bcast", "scatter"):  # L2BM -> each L1BM
        after = live["l1bm"][dst:dst + n].any(axis=0).reshape(l2bs, per)  # [L2B, L1B]
        demand = (np.broadcast_to(after.any(axis=1), (src_n, l2bs)) if kind == "bcast"
                  else np.repeat(after.T, n, axis=0))  # word j n + i: L1B j's
        demanded[op] = np.ascontiguousarray(demand)
        live["l1bm"][dst:dst + n] = False
        live["l2bm"][src:src + src_n] |= demand
        return
    after = live["l2bm"][dst:dst + dst_n]  # gather: L1B j's words at j n; reduce: all
    need = (after.reshape(per, n, l2bs).any(axis=1).T if kind == "gather"
            else np.repeat(after.any(axis=0)[:, None], per, axis=1))  # [L2B, L1B]
    live["l2bm"][dst:dst + dst_n] = False
    live["l1bm"][src:src + src_n] |= need.reshape(-1)
