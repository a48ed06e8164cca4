"""The stationary matmul kernel's columns of C between the PEs' accumulators and DRAM
(``columns_of_c``): gathered through L1BM and L2BM and stored, or loaded back for a
later chunk of K to add to."""

from __future__ import annotations

from mncore_ir.dialects import mncore as m
from mncore_ir.transforms.convert_task_to_mncore.emitter import JC, Emitter


def up4(n: int) -> int:
    return -(-n // 4) * 4


def one_l2b(pb: Emitter, n: int) -> int | None:
    """``l2b n`` where the machine has several L2Bs (with one, the default says it)."""
    return n if pb.machine.l2bs > 1 else None


def columns_of_c(pb: Emitter, parts: list[tuple[int | None, int, int]], span: int, c0: int,
                 cols: int, o: tuple[int, int, int], by_rows: bool,
                 accs: list[tuple[str, int]], live: list[int], store: bool,
                 split: int = 1) -> None:
    """The accumulators of a unit's columns of O (``o``: its first word, its strides
    between rows and between columns) to DRAM (``store``: gathered through L1BM and
    L2BM, stored by a DMA per column: a run where O is C^T; where a part has fewer rows
    than an L1B's column holds, a DMA per L1B's columns, :func:`_columns_by_l1b`), or
    back from DRAM by the inverse path. PE ``p`` of L1B ``g`` holds
    ``O[first + 4p + i, c0 + g JC + jl]`` in word ``i`` of ``accs[jl]``; with K split
    over the L1Bs, its part of
    ``O[first + 4p + i, c0 + jl]``, which the L2 ``reduce`` adds up."""
    blocks = pb.machine.l1b_per_l2b if split == 1 else 1
    assert store or split == 1, "a split K is one chunk: nothing to add to"
    if split == 1 and up4(parts[0][2]) < pb.chunk:
        _columns_by_l1b(pb, parts, c0, cols, o, by_rows, accs, live, store)
        return
    base_o, o_row, o_col = o
    out = pb.stage.take(pb.machine.l1b_per_l2b * JC * pb.chunk)
    if store:
        for jl in live:
            pb.emit(m.L1Op(0, "gather", [m.ref(*accs[jl])],
                           m.ref("l1bm", pb.l1_out + jl * pb.chunk)))
        pb.emit(m.L2Op(0, "gather" if split == 1 else "reduce", [m.ref("l1bm", pb.l1_out)],
                       m.ref(*out), JC * pb.chunk))
    with pb.transfers():
        for index in range(span):
            if c0 + index >= cols:
                continue
            n, local = divmod(index, blocks * JC)
            for block_l2b, first, block in (parts if by_rows else [
                    (one_l2b(pb, n), parts[0][1], parts[0][2])]):
                dram = m.ref("dram", base_o + first * o_row + (c0 + index) * o_col)
                staged = m.ref(out[0], out[1] + local * pb.chunk)
                pb.dma("store" if store else "load", staged if store else dram,
                       dram if store else staged, block,
                       *((None, None) if o_row == 1 else (1, o_row)), block_l2b)
    if not store:
        pb.emit(m.L2Op(0, "scatter", [m.ref(*out)], m.ref("l1bm", pb.l1_out), JC * pb.chunk))
        for jl in live:
            pb.emit(m.L1Op(0, "scatter", [m.ref("l1bm", pb.l1_out + jl * pb.chunk)],
                           m.ref(*accs[jl])))


def _columns_by_l1b(pb: Emitter, parts: list[tuple[int | None, int, int]], c0: int,
                    cols: int, o: tuple[int, int, int], by_rows: bool,
                    accs: list[tuple[str, int]], live: list[int], store: bool) -> None:
    """:func:`columns_of_c` where each L1B has columns of its own: column ``jl`` of
    every L1B goes through L2BM by one L2 move of the part's rows (``rw`` words an
    L1B), so the L1Bs' columns ``jl`` follow one another there and one DMA of a row per
    L1B moves them all (their DRAM columns ``JC`` apart), where a part has that many
    rows (a shorter last part: a DMA per column)."""
    blocks, base_o, (o_row, o_col) = pb.machine.l1b_per_l2b, o[0], o[1:]
    rw = up4(parts[0][2])  # words of a column each L1B moves: the first part's rows
    out = pb.stage.take(JC * blocks * rw)
    runs = (None, None) if o_row == 1 else (1, o_row)
    if store:
        for jl in live:
            pb.emit(m.L1Op(0, "gather", [m.ref(*accs[jl])],
                           m.ref("l1bm", pb.l1_out + jl * pb.chunk)))
            pb.emit(m.L2Op(0, "gather", [m.ref("l1bm", pb.l1_out + jl * pb.chunk)],
                           m.ref(out[0], out[1] + jl * blocks * rw), rw))
    with pb.transfers():
        for jl in live:
            for n in range(1 if by_rows else pb.machine.l2bs):
                column = c0 + n * blocks * JC + jl  # of L1B 0
                count = min(blocks, max(0, -(-(cols - column) // JC)))
                for block_l2b, first, block in (parts if by_rows else [
                        (one_l2b(pb, n), parts[0][1], parts[0][2])]):
                    dram = base_o + first * o_row + column * o_col
                    staged = out[1] + jl * blocks * rw
                    pieces = [(count, 0)] if block == rw and count else [
                        (1, g) for g in range(count)]
                    for rows, g in pieces:
                        at_l2bm = m.ref(out[0], staged + g * rw)
                        at_dram = m.ref("dram", dram + g * JC * o_col)
                        pb.dma("store" if store else "load", at_l2bm if store else at_dram,
                               at_dram if store else at_l2bm, rows * block, *runs, block_l2b,
                               *((rows, JC * o_col) if rows > 1 else (None, None)))
    if not store:
        for jl in live:
            pb.emit(m.L2Op(0, "scatter", [m.ref(out[0], out[1] + jl * blocks * rw)],
                           m.ref("l1bm", pb.l1_out + jl * pb.chunk), rw))
            pb.emit(m.L1Op(0, "scatter", [m.ref("l1bm", pb.l1_out + jl * pb.chunk)],
                           m.ref(*accs[jl])))
