"""The geometry of convert-graph-to-task: how an op's output is cut into tiles, which
region of an operand a tile reads, and the dependencies between the tiles' tasks.

One op's accesses to a buffer are indexed as a grid when they are uniform, so finding
the earlier tiles a region overlaps is arithmetic per dimension; other accesses fall
back to interval intersection. The dependency edges are then reduced transitively.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from mncore_ir.dialects.task import Tile

Shape = tuple[int, ...]


def tile_sizes(shape: Shape, budget: int, fixed: dict[int, int] | None = None) -> Shape:
    """Per-dimension tile sizes: ``fixed`` dimensions as given, the others filled from
    the innermost outwards until a tile holds about ``budget`` of their points."""
    fixed = fixed or {}
    sizes = [0] * len(shape)
    room = max(budget, 1)
    for d in reversed(range(len(shape))):
        if d in fixed:
            sizes[d] = max(1, min(fixed[d], shape[d]))  # 1 in an empty dimension: no tiles
            continue
        sizes[d] = max(1, min(shape[d], room))
        room = max(1, room // max(shape[d], 1))
    return tuple(sizes)


def grid(shape: Shape, sizes: Shape) -> Iterator[Tile]:
    """The tiles of ``sizes`` covering ``shape`` in row-major order (edges clipped); a
    zero-size tensor has none."""
    if 0 in shape:
        return
    ranges = [range(0, n, s) for n, s in zip(shape, sizes, strict=True)]
    for offsets in itertools.product(*ranges):
        yield Tile(offsets, tuple(min(s, n - o)
                                  for o, s, n in zip(offsets, sizes, shape, strict=True)))


def broadcast_region(tile: Tile, shape: Shape) -> Tile:
    """The region of an operand of ``shape`` that broadcasts onto ``tile``."""
    lead = len(tile.offsets) - len(shape)
    offsets, sizes = [], []
    for d, n in enumerate(shape):
        o, s = tile.offsets[lead + d], tile.sizes[lead + d]
        offsets.append(0 if n == 1 else o)
        sizes.append(1 if n == 1 else s)
    return Tile(tuple(offsets), tuple(sizes))


def whole(shape: Shape) -> Tile:
    return Tile((0,) * len(shape), tuple(shape))


def permuted_back(tile: Tile, perm: Sequence[int]) -> Tile:
    """The region of a permute's input that its output ``tile`` reads."""
    offsets, sizes = [0] * len(perm), [0] * len(perm)
    for i, p in enumerate(perm):
        offsets[p], sizes[p] = tile.offsets[i], tile.sizes[i]
    return Tile(tuple(offsets), tuple(sizes))


def k_slabs(k: int, tiles: int, workers: int, slab: int) -> list[tuple[int, int]]:
    """(offset, size) of the slabs a matmul's contracted dimension ``k`` is cut into:
    one slab, unless its ``tiles`` output tiles would leave more than half of the
    ``workers`` idle (a matrix-vector product at batch 1); then as many slabs as fill
    the workers, each at least ``slab`` long (``slab`` = 0: never cut)."""
    count = min(workers // max(tiles, 1), k // slab) if slab and 2 * tiles <= workers else 1
    if count < 2:
        return [(0, k)]
    size = -(-k // count)
    return [(start, min(size, k - start)) for start in range(0, k, size)]


# --------------------------------------------------------------------------- accesses


@dataclass
class AccessGroup:
    """The regions that one op's tasks access in one buffer, indexed for overlap queries:
    a grid (one cell per aligned tile) when the regions are uniform, else a list."""

    shape: Shape
    entries: list[tuple[Tile, int]] = field(default_factory=list)
    cell: Shape = ()
    cells: dict[Shape, list[int]] | None = None

    def finish(self) -> None:
        if not self.entries:
            return
        rank = len(self.shape)
        # A cell is at least 1 wide: an empty region (of a zero-size dimension) overlaps
        # no cell, as it overlaps no access.
        cell = tuple(max(1, *(tile.sizes[d] for tile, _ in self.entries))
                     for d in range(rank))
        cells: dict[Shape, list[int]] = {}
        for tile, task in self.entries:
            for o, s, c, n in zip(tile.offsets, tile.sizes, cell, self.shape, strict=True):
                if o % c or s != min(c, n - o):
                    return  # not a uniform grid: keep the list
            cells.setdefault(tuple(o // c for o, c in zip(tile.offsets, cell, strict=True)),
                             []).append(task)
        self.cell, self.cells = cell, cells

    def overlapping(self, region: Tile) -> Iterator[int]:
        if self.cells is not None:
            spans = [range(o // c, (o + s - 1) // c + 1)
                     for o, s, c in zip(region.offsets, region.sizes, self.cell, strict=True)]
            for index in itertools.product(*spans):
                yield from self.cells.get(index, ())
            return
        for tile, task in self.entries:
            if all(a < b + m and b < a + s for a, s, b, m in
                   zip(region.offsets, region.sizes, tile.offsets, tile.sizes, strict=True)):
                yield task


def transitive_reduction(deps: Sequence[set[int]]) -> list[list[int]]:
    """The predecessors of each task that no other predecessor already implies. Tasks
    are in topological order; ancestor sets are bitsets (Python integers)."""
    ancestors: list[int] = []
    reduced: list[list[int]] = []
    for ds in deps:
        covered = 0
        kept: list[int] = []
        for p in sorted(ds, reverse=True):  # a redundant edge's source is an ancestor of
            if not covered >> p & 1:         # a later predecessor: check those first
                kept.append(p)
                covered |= ancestors[p] | 1 << p
        ancestors.append(covered)
        reduced.append(sorted(kept))
    return reduced
