"""Tasks that compute one pointwise body on different tensors, lowered as one lane
kernel (horizontal fusion, as PyTorch's ``foreach`` optimizers do): their lanes follow
one another in the same waves. A wave computes on every PE whatever it holds, so an
optimizer's update of a small parameter (a few hundred lanes) costs as many ALU
instructions as a whole wave; packed, the updates of many parameters share them.

A group's members move to the place of its last member. The task order is otherwise
kept, and a member moves past a task only if that task neither reads nor writes what
the member writes, nor writes what it reads (buffers, as values, conservatively).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.transforms.convert_task_to_mncore.common import element
from mncore_ir.transforms.convert_task_to_mncore.views import is_copy


def packable(task: t.TaskOp, op: t.BodyOp | g.GraphOp, lanes: int) -> bool:
    """A pointwise body with f32 results (integer results are brought into their
    types per task), not a copy (which may become a view), of at most ``lanes``."""
    return (isinstance(op, t.BodyOp) and op.is_pointwise() and not is_copy(op)
            and all(element(v) == f32 for v in task.outs)
            and math.prod(task.writes()[0][1].sizes) <= lanes)


class _Group:
    def __init__(self, body: t.BodyOp, first: int, task: t.TaskOp) -> None:
        self.body = body
        self.members = [first]
        self.reads: set[SSAValue] = set(task.ins)
        self.writes: set[SSAValue] = set(task.outs)

    def blocks(self, task: t.TaskOp) -> bool:
        """Whether its members may not move past ``task``."""
        return (any(v in self.writes for v in (*task.ins, *task.outs))
                or any(v in self.reads for v in task.outs))

    def add(self, index: int, task: t.TaskOp) -> None:
        self.members.append(index)
        self.reads.update(task.ins)
        self.writes.update(task.outs)


def pack(tasks: Sequence[t.TaskOp], computed: Sequence[t.BodyOp | g.GraphOp], lanes: int
         ) -> tuple[list[int], dict[int, list[int]]]:
    """The new task order (indices into ``tasks``) and the groups of two or more
    members, by the index of the last member (each group is lowered there)."""
    open_groups: list[_Group] = []
    done: list[_Group] = []
    for j, (task, op) in enumerate(zip(tasks, computed, strict=True)):
        candidate = packable(task, op, lanes)
        joined = None
        if candidate:
            assert isinstance(op, t.BodyOp)
            joined = next((grp for grp in open_groups if
                           (grp.body is op or grp.body.body.is_structurally_equivalent(op.body))
                           and not grp.blocks(task)), None)
        for grp in list(open_groups):
            if grp is not joined and grp.blocks(task):
                open_groups.remove(grp)
                done.append(grp)
        if joined is not None:
            joined.add(j, task)
        elif candidate:
            assert isinstance(op, t.BodyOp)
            open_groups.append(_Group(op, j, task))
    groups = {grp.members[-1]: grp.members for grp in done + open_groups
              if len(grp.members) > 1}
    moved = {i for members in groups.values() for i in members[:-1]}
    order: list[int] = []
    for j in range(len(tasks)):
        if j in groups:
            order.extend(groups[j])
        elif j not in moved:
            order.append(j)
    return order, groups
