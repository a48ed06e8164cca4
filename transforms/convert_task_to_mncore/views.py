"""Copies as views: a buffer that only holds a reshape, a slice or a permutation of
another is laid out *on* the other's DRAM words, with strides of its own, and its copy
tasks emit nothing.

A buffer's DRAM layout is its first word and a stride per dimension (row-major for
every buffer that is no view). A slice ``[start:end:step]`` along ``dim`` of a buffer
laid out as ``(base, strides)`` is ``(base + start strides[dim], strides with
strides[dim] step)``, a permutation permutes the strides, and a reshape of a row-major
layout is row-major: so every such copy is an affine view of its source, and readers
address it through its strides (``Emitter.address``, the matmul kernels' strides, the
DMA descriptors' strided runs and rows). A copy task is a DRAM round trip (a load, the
chip, a store, a wait) on the step's critical path; as a view it costs nothing, and
its readers depend directly on whoever wrote the source. Safe when the view's words
stay the source's: every task writing the view computes the same copy of one source,
together covering the view, and no other task writes the source from the first of
those copies to the view's last reader (the source then lives as long as the view).
A reshape of a strided view is one where the dimensions it merges are laid out one
after another (as numpy's reshape without a copy); else it stays a copy.

The other way round, a buffer that a concatenation copies whole into a slab of another
(``graph.concat``'s tasks: pointwise copies, as a convolution's zero padding makes
them) is laid out *in* that slab (:func:`find_in_place`): its writers write the
destination's words, and the copies emit nothing. Safe when every writer of the
buffer comes before its copies and is pointwise (its words addressed through the
strides), every copy is the same shift into one destination, and no other task writes
that slab.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.graph_semantics import semantics
from mncore_ir.transforms.convert_task_to_mncore.common import element, shape, strides_of


@dataclass(frozen=True)
class View:
    """A buffer laid out on ``root``'s words: from word ``offset`` of it, ``strides``
    words apart along each of the view's dimensions."""

    root: SSAValue
    offset: int
    strides: tuple[int, ...]


def dense(sizes: Sequence[int]) -> tuple[int, ...]:
    """The row-major strides of ``sizes``."""
    return tuple(int(s) for s in strides_of(sizes))


def is_dense(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether ``strides`` lay ``sizes`` out row-major (a unit dimension's stride
    never matters)."""
    return all(s == d for n, s, d in zip(sizes, strides, dense(sizes), strict=True) if n != 1)


def view_layout(op: t.BodyOp | g.GraphOp, source: tuple[int, ...], offset: int,
                strides: tuple[int, ...], result: tuple[int, ...]
                ) -> tuple[int, tuple[int, ...]] | None:
    """The layout (first word, strides) of the view that ``op`` makes of a whole input
    buffer of shape ``source`` laid out as ``(offset, strides)``, or ``None``: not a
    view. ``result`` is the shape of the op's whole output buffer."""
    if isinstance(op, g.ReshapeOp):
        return _reshaped(offset, source, strides, result)
    if isinstance(op, g.SliceOp):
        (dim,) = g.normalize_dims([op.dim.value.data], len(source))
        step = op.step.value.data
        out = list(strides)
        out[dim] = strides[dim] * step
        return offset + op.start.value.data * strides[dim], tuple(out)
    if isinstance(op, g.PermuteOp):
        return offset, tuple(strides[p] for p in op.perm.get_values())
    return None


def _reshaped(offset: int, source: tuple[int, ...], strides: tuple[int, ...],
              result: tuple[int, ...]) -> tuple[int, tuple[int, ...]] | None:
    """A reshape as a view, where one exists (numpy's no-copy reshape decides: merged
    dimensions must be one stride apart; asked of a one-byte array seen through the
    strides, never read, so its strides in bytes are words)."""
    if is_dense(source, strides):
        return offset, dense(result)
    stand_in = as_strided(np.empty(1, np.int8), source, strides)
    try:
        return offset, tuple(int(s) for s in np.reshape(stand_in, result, copy=False).strides)
    except ValueError:
        return None


def is_copy(op: t.BodyOp | g.GraphOp) -> bool:
    """Whether ``op`` is a pointwise body that yields its only argument."""
    if not isinstance(op, t.BodyOp) or not op.is_pointwise():
        return False
    block = op.body.block
    last = block.first_op
    return (len(block.args) == 1 and isinstance(last, t.YieldOp)
            and list(last.values) == [block.args[0]])


def find_in_place(tasks: Sequence[t.TaskOp], computed: Sequence[t.BodyOp | g.GraphOp],
                  buffers: Sequence[SSAValue]) -> tuple[dict[SSAValue, View], set[int]]:
    """The intermediate buffers laid out in the slab of another that copies take them
    to (each with its root, a buffer in no other, and its layout on the root's words),
    and the indices of those copy tasks, which emit nothing."""
    intermediate = set(buffers)
    writers: dict[SSAValue, list[int]] = {}
    copies: dict[SSAValue, list[int]] = {}
    for i, (task, op) in enumerate(zip(tasks, computed, strict=True)):
        for v in task.outs:
            writers.setdefault(v, []).append(i)
        if len(task.ins) == 1 and len(task.outs) == 1 and is_copy(op) \
                and task.ins[0] != task.outs[0]:
            copies.setdefault(task.ins[0], []).append(i)
    hosts: dict[SSAValue, tuple[SSAValue, tuple[int, ...]]] = {}
    skipped: set[int] = set()
    for x, found in copies.items():
        destinations = {tasks[i].outs[0] for i in found}
        wrote = writers.get(x, [])
        if (x not in intermediate or len(destinations) != 1 or not wrote
                or max(wrote) > min(found)
                or not all(isinstance(computed[i], t.BodyOp) for i in wrote)):
            continue
        (d,) = destinations
        shift = _one_shift(tasks, found, shape(x))
        if d not in intermediate or element(d) != element(x) or shift is None:
            continue
        slab = tuple(slice(o, o + n) for o, n in zip(shift, shape(x), strict=True))
        if any(_meets(tile.slices(), slab) for i in writers[d] if i not in found
               for v, tile in tasks[i].writes() if v == d):
            continue
        hosts[x] = (d, shift)
        skipped.update(found)
    views: dict[SSAValue, View] = {}

    def layout(v: SSAValue) -> View:
        if v not in hosts:
            return View(v, 0, dense(shape(v)))
        if v not in views:
            d, shift = hosts[v]
            outer = layout(d)
            views[v] = View(outer.root, outer.offset + int(np.dot(shift, outer.strides)),
                            outer.strides)
        return views[v]

    for x in hosts:
        layout(x)
    return views, skipped


def _one_shift(tasks: Sequence[t.TaskOp], found: Sequence[int], sizes: tuple[int, ...]
               ) -> tuple[int, ...] | None:
    """The one offset by which the copies ``found`` move their source's words, when
    together they read all of it, each region as large as the one it writes."""
    shifts = set()
    covered = np.zeros(sizes, bool)
    for i in found:
        ((_, read),) = tasks[i].reads()
        ((_, wrote),) = tasks[i].writes()
        if read.sizes != wrote.sizes:
            return None
        shifts.add(tuple(w - r for w, r in zip(wrote.offsets, read.offsets, strict=True)))
        covered[read.slices()] = True
    return shifts.pop() if len(shifts) == 1 and covered.all() else None


def _meets(a: tuple[slice, ...], b: tuple[slice, ...]) -> bool:
    return all(x.start < y.stop and y.start < x.stop for x, y in zip(a, b, strict=True))


def _tiles_agree(tasks: Sequence[t.TaskOp], computed: Sequence[t.BodyOp | g.GraphOp],
                 written_by: Sequence[int], src: SSAValue, op: g.GraphOp,
                 dst: SSAValue) -> bool:
    """Whether every copy task writes its output region with the words the view puts
    there: its tile op (the numpy reference) applied to its input region of the
    source's word indices gives the view's indices of its output region. Tasks from
    convert-graph-to-task always agree; a task graph written otherwise (a slice tiled
    along its sliced dimension, regions handed to the wrong tiles) stays copied."""
    sizes = shape(src)
    offset, strides = view_layout(op, sizes, 0, dense(sizes), shape(dst))  # type: ignore[misc]
    words = np.arange(math.prod(sizes)).reshape(sizes)
    placed = np.full(shape(dst), offset, np.int64)  # the source word at each view index
    for c, stride in zip(np.indices(shape(dst)), strides, strict=True):
        placed += c * stride
    for i in written_by:
        ((_, read),) = tasks[i].reads()
        ((_, wrote),) = tasks[i].writes()
        tile = computed[i]
        got = semantics(type(tile)).reference(tile, words[read.slices()])  # type: ignore[misc]
        if not np.array_equal(got, placed[wrote.slices()]):
            return False
    return True


def _copy_kind(op: t.BodyOp | g.GraphOp) -> t.BodyOp | g.GraphOp | str:
    """What tells one copy from another: a reshape's tiles are one reshape (its layout
    depends only on the whole buffers' shapes, and the tiles cover the destination),
    any other op only itself (a slice tile's start is its tile's)."""
    return "reshape" if isinstance(op, g.ReshapeOp) else op


def find_views(tasks: Sequence[t.TaskOp], computed: Sequence[t.BodyOp | g.GraphOp],
               buffers: Sequence[SSAValue], in_place: dict[SSAValue, View] | None = None
               ) -> dict[SSAValue, View]:
    """Each intermediate buffer that can be a view, with its root (a buffer that is no
    view) and its layout on the root's words; ``in_place`` (from :func:`find_in_place`)
    among them, whose writers write their roots' words."""
    in_place = in_place or {}
    intermediate = set(buffers)
    writers: dict[SSAValue, list[int]] = {}
    last_use: dict[SSAValue, int] = {}
    for i, task in enumerate(tasks):
        for v in task.outs:
            writers.setdefault(v, []).append(i)
            if v in in_place:
                writers.setdefault(in_place[v].root, []).append(i)
        for v in (*task.ins, *task.outs):
            last_use[v] = i
    hosts = {view.root for view in in_place.values()}
    views: dict[SSAValue, View] = dict(in_place)
    for dst, written_by in writers.items():
        if dst not in intermediate or dst in views or dst in hosts:
            continue
        found = {(tasks[i].ins[0], _copy_kind(computed[i])) if len(tasks[i].ins) == 1
                 and len(tasks[i].outs) == 1 else (None, None) for i in written_by}
        if len(found) != 1:
            continue
        ((src, _),) = found
        op = computed[written_by[0]]
        if src is None or element(src) != element(dst):
            continue
        if sum(math.prod(region.sizes) for i in written_by
               for _, region in tasks[i].writes()) != math.prod(shape(dst)):
            continue
        outer = views.get(src, View(src, 0, dense(shape(src))))
        layout = view_layout(op, shape(src), outer.offset, outer.strides, shape(dst))
        if layout is None or not _tiles_agree(tasks, computed, written_by, src, op, dst):
            continue
        first, last = written_by[0], last_use[dst]
        if not any(first <= i <= last for i in writers.get(outer.root, ())):
            views[dst] = View(outer.root, *layout)
    return views
