"""Reshapes and contiguous slices as views: a buffer that only holds a row-major
reshape (or a contiguous range) of another is placed *on* the other's DRAM words, and
its copy tasks emit nothing.

Every buffer lives in DRAM row-major, so ``reshape(x)[i]`` is ``x[i]`` word for word,
and a step-1 slice along a dimension with only unit dimensions before it is one run of
``x``'s words. A copy task of such an op is a DRAM round trip (a load, the chip, a
store, a wait) on the step's critical path; as a view it costs nothing, and its
readers depend directly on whoever wrote the source. Safe when the view's words stay
the source's: every task writing the view is such a copy of one source at one offset,
together covering the view, and no other task writes the source from the first of those
copies to the view's last reader (the source then lives as long as the view).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.transforms.convert_task_to_mncore.common import element, shape


def view_offset(op: t.BodyOp | g.GraphOp, source: tuple[int, ...]) -> int | None:
    """The word offset of the view that a task computing ``op`` (on its tiles) makes of
    its whole input buffer, of shape ``source``, or ``None``: not a view. The buffer's
    shape decides, not the tile's: a task may slice one row of many."""
    if isinstance(op, g.ReshapeOp):
        return 0
    if isinstance(op, g.SliceOp) and op.step.value.data == 1:
        (dim,) = g.normalize_dims([op.dim.value.data], len(source))
        if all(n == 1 for n in source[:dim]):
            return op.start.value.data * math.prod(source[dim + 1:])
    return None


def find_views(tasks: Sequence[t.TaskOp], computed: Sequence[t.BodyOp | g.GraphOp],
               buffers: Sequence[SSAValue]) -> dict[SSAValue, tuple[SSAValue, int]]:
    """Each intermediate buffer that can be a view: its root (a buffer that is no view)
    and the word offset into it."""
    intermediate = set(buffers)
    writers: dict[SSAValue, list[int]] = {}
    last_use: dict[SSAValue, int] = {}
    for i, task in enumerate(tasks):
        for v in task.outs:
            writers.setdefault(v, []).append(i)
        for v in (*task.ins, *task.outs):
            last_use[v] = i
    views: dict[SSAValue, tuple[SSAValue, int]] = {}
    for dst, written_by in writers.items():
        if dst not in intermediate:
            continue
        found = {(tasks[i].ins[0], view_offset(computed[i], shape(tasks[i].ins[0])))
                 if len(tasks[i].ins) == 1 else (None, None) for i in written_by}
        if len(found) != 1:
            continue
        ((src, offset),) = found
        if src is None or offset is None or element(src) != element(dst):
            continue
        if sum(math.prod(region.sizes) for i in written_by
               for _, region in tasks[i].writes()) != math.prod(shape(dst)):
            continue
        root, base = views.get(src, (src, 0))
        first, last = written_by[0], last_use[dst]
        if not any(first <= i <= last for i in writers.get(root, ())):
            views[dst] = (root, base + offset)
    return views
