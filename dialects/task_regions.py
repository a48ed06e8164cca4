"""Regions of task-level buffers: a ``Tile`` (offset and size per dimension), its
``[start:end, ...]`` syntax, the checks that a region fits its buffer, and the geometry
of a set of regions (do they cover a buffer exactly once, and where not).

Kernels repeat few distinct regions many times: decoding and encoding are cached, and
coverage is computed on the grid the tiles' edges cut a buffer into, never per element.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    MemRefType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from mncore_ir.dialects.element_types import integer_range


@dataclass(frozen=True)
class Tile:
    """A region: offset and size per dimension."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]

    @staticmethod
    def of(attr: DenseArrayBase) -> Tile:
        return _tile_of(attr)

    def attr(self) -> DenseArrayBase:
        return _tile_attr(self)

    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + s) for o, s in zip(self.offsets, self.sizes, strict=True))

    def __str__(self) -> str:
        return ", ".join(f"{o}:{o + s}" for o, s in zip(self.offsets, self.sizes, strict=True))


Accesses = list[tuple[SSAValue, Tile]]
"""A task's (buffer, region) pairs, of its inputs or of its outputs."""

RegionTypes = tuple[tuple[Attribute, tuple[int, ...]], ...]
"""Element type and sizes of each region of a task's inputs or of its outputs."""


def buffer_shape(value: SSAValue) -> tuple[int, ...]:
    typ = value.type
    assert isinstance(typ, MemRefType)
    return tuple(typ.get_shape())


def element_type(value: SSAValue) -> Attribute:
    typ = value.type
    assert isinstance(typ, MemRefType)
    return typ.get_element_type()


@functools.lru_cache(maxsize=1 << 16)
def _tile_of(attr: DenseArrayBase) -> Tile:
    values = tuple(int(v) for v in attr.get_values())
    rank = len(values) // 2
    return Tile(values[:rank], values[rank:])


@functools.lru_cache(maxsize=1 << 16)
def _tile_attr(tile: Tile) -> DenseArrayBase:
    # Packed directly: ``from_list`` normalises every value first, which costs more
    # than the rest of a task; ``pack`` still refuses a value that is no i64.
    return DenseArrayBase(i64, BytesAttr(i64.pack((*tile.offsets, *tile.sizes))))


_I64_LOW, _I64_HIGH = integer_range(i64)


def _parse_i64(parser: Parser, what: str) -> tuple[int, int]:
    """An integer literal and where it starts; one that an i64 cannot hold is a parse
    error at it (a region is stored as an i64 array, which would raise a ValueError)."""
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False)
    if not _I64_LOW <= value < _I64_HIGH:
        _raise_at(parser, f"region {what} {value} is out of range for i64", start)
    return value, start


def _parse_range(parser: Parser) -> tuple[int, int]:
    """``start:end`` of one dimension of a region, as its offset and size."""
    begin, start = _parse_i64(parser, "start")
    parser.parse_punctuation(":")
    end, _ = _parse_i64(parser, "end")
    if not _I64_LOW <= end - begin < _I64_HIGH:
        _raise_at(parser, f"region size {end - begin} of {begin}:{end} is out of range for "
                          "i64", start)
    return begin, end - begin


def parse_accesses(parser: Parser, keyword: str) -> Accesses:
    """``keyword(%buffer[start:end, ...], ...)``, or nothing when ``keyword`` is absent.
    The buffers are defined earlier in the kernel, so their types are known."""

    def buffer() -> SSAValue:
        unresolved = parser.parse_unresolved_operand()
        defined = parser.ssa_values.get(unresolved.operand_name)
        if defined is None or unresolved.index >= len(defined):
            parser.raise_error("a task's buffers must be defined before the task",
                               unresolved.span)
        return parser.resolve_operand(unresolved, defined[unresolved.index].type)

    def access() -> tuple[SSAValue, Tile]:
        value = buffer()
        ranges = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: _parse_range(parser))
        return value, Tile(tuple(r[0] for r in ranges), tuple(r[1] for r in ranges))

    if parser.parse_optional_keyword(keyword) is None:
        return []
    return parser.parse_comma_separated_list(Parser.Delimiter.PAREN, access)


def parse_located_argument(parser: Parser) -> Parser.Argument:
    """A block argument with the location after it that ``--print-debuginfo`` writes
    (``%x: memref<4xf32> loc(unknown)``), as ``func.func`` reads them."""
    found = parser.parse_argument()
    found.location = parser.parse_optional_location()
    return found


def _raise_at(parser: Parser, message: str, start: int) -> None:
    """A parse error over the source from ``start`` to the last token read."""
    text = parser.lexer.input.content[start:parser.pos]
    parser.raise_error(message, start, start + len(text.rstrip()))


def checked_regions(what: str, values: Sequence[SSAValue],
                     tiles: ArrayAttr[DenseArrayBase]) -> Accesses:
    """Each buffer with its region, which has the buffer's rank and lies inside it."""
    if len(values) != len(tiles.data):
        raise VerifyException(f"task.task has {len(values)} {what}s but "
                              f"{len(tiles.data)} {what} regions")
    regions: Accesses = []
    for i, (value, attr) in enumerate(zip(values, tiles.data, strict=True)):
        typ = value.type
        assert isinstance(typ, MemRefType)
        shape = typ.get_shape()
        if DYNAMIC_INDEX in shape:
            raise VerifyException(f"task.task {what} {i}: buffers need static shapes")
        if len(attr) != 2 * len(shape):
            flat = attr.get_values()
            text = str(Tile.of(attr)) if len(flat) % 2 == 0 else list(flat)
            raise VerifyException(f"task.task {what} {i}: region [{text}] does not "
                                  f"have rank {len(shape)}")
        tile = Tile.of(attr)
        for d, (o, s, n) in enumerate(zip(tile.offsets, tile.sizes, shape, strict=True)):
            if o < 0 or s < 1 or o + s > n:
                raise VerifyException(f"task.task {what} {i}: region [{tile}] is out of "
                                      f"bounds in dimension {d} (size {n})")
        regions.append((value, tile))
    return regions

def covered_once(shape: Sequence[int], tiles: Sequence[Tile]) -> bool:
    """Whether ``tiles`` (inside ``shape``) cover each element exactly once: they are
    pairwise disjoint and their sizes add up to the buffer's. Memory and time go with
    the number of tiles, not of elements: the tiles of a tiling cut the buffer into
    about as many cells (a cell per combination of their edges), counted at once;
    scattered tiles that would cut it into many more are swept instead."""
    if sum(math.prod(t.sizes) for t in tiles) != math.prod(shape):
        return False
    if not shape or len(tiles) < 2:
        return True
    starts, ends = _boxes(tiles, len(shape))
    cuts = _cuts(shape, starts, ends)
    if math.prod(len(c) for c in cuts) <= _CELLS_PER_TILE * len(tiles):
        return bool((_cell_counts(cuts, starts, ends) == 1).all())
    return not _any_overlap(starts, ends)


_CELLS_PER_TILE = 8
"""Tiles whose edges cut a buffer into at most this many cells per tile are counted
cell by cell (vectorised); others are swept (a loop over the tiles)."""


def _boxes(tiles: Sequence[Tile], rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiles' first and one-past-last corners, one row per tile."""
    starts = np.array([t.offsets for t in tiles], np.int64).reshape(len(tiles), rank)
    return starts, starts + np.array([t.sizes for t in tiles], np.int64).reshape(len(tiles), rank)


def _cuts(shape: Sequence[int], starts: np.ndarray, ends: np.ndarray) -> list[np.ndarray]:
    """Per dimension, the sorted distinct edges of the tiles and of the buffer."""
    return [np.unique(np.concatenate(([0, n], starts[:, d], ends[:, d])))
            for d, n in enumerate(shape)]


def _cell_counts(cuts: Sequence[np.ndarray], starts: np.ndarray, ends: np.ndarray
                 ) -> np.ndarray:
    """How many tiles cover each cell of the grid that ``cuts`` make: each tile adds
    +-1 at the corners of its box in a difference array, whose prefix sums along every
    dimension are the counts."""
    dims = [len(c) for c in cuts]
    low = [np.searchsorted(c, starts[:, d]) for d, c in enumerate(cuts)]
    high = [np.searchsorted(c, ends[:, d]) for d, c in enumerate(cuts)]
    counts = np.zeros(math.prod(dims), np.int64)
    for corner in itertools.product((False, True), repeat=len(dims)):
        at = np.ravel_multi_index([high[d] if upper else low[d]
                                   for d, upper in enumerate(corner)], dims)
        counts += (-1) ** sum(corner) * np.bincount(at, minlength=counts.size)
    grid = counts.reshape(dims)
    for axis in range(len(dims)):
        grid = np.cumsum(grid, axis=axis)
    return grid[tuple(slice(0, n - 1) for n in dims)]


def _any_overlap(starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether two boxes ``[starts, ends)`` share an element: a sweep along the dimension
    where the boxes start at the most places, each box compared (all dimensions at once)
    with the boxes still open where it starts."""
    sweep = max(range(starts.shape[1]), key=lambda d: len(np.unique(starts[:, d])))
    open_ = np.empty(0, np.int64)
    for i in np.argsort(starts[:, sweep], kind="stable"):
        open_ = open_[ends[open_, sweep] > starts[i, sweep]]
        if ((starts[open_] < ends[i]) & (starts[i] < ends[open_])).all(axis=1).any():
            return True
        open_ = np.append(open_, i)
    return False


def first_miscounted(shape: Sequence[int], tiles: Sequence[Tile]
                     ) -> tuple[tuple[int, ...], int]:
    """The first element (row-major) not written exactly once and how many tiles write
    it, counted on the grid the tiles' edges cut the buffer into (an element's count is
    its cell's, and a cell's first element is the first of its count). Only for the
    diagnosis: the grid has a cell per combination of edges, not per element."""
    rank = len(shape)
    if not rank:
        return (), len(tiles)
    starts, ends = _boxes(tiles, rank)
    cuts = _cuts(shape, starts, ends)
    cells = _cell_counts(cuts, starts, ends)
    cell = tuple(int(x) for x in np.argwhere(cells != 1)[0])
    return tuple(int(c[x]) for c, x in zip(cuts, cell, strict=True)), int(cells[cell])

