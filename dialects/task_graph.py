"""The event graph of a task kernel, read once: who signals each event, what each task
waits on, and so each task's predecessors. The kernel verifier and every target that
orders tasks (simulator, timing model, Triton) start from the same reading.

The functions take a task's operands by group (``TaskOp.operand_groups()``) or anything
with a kernel's ``tasks()``, so that this module does not import the dialect it serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from xdsl.ir import SSAValue


class TaskOperands(NamedTuple):
    """A task's operands by group."""

    ins: tuple[SSAValue, ...]
    outs: tuple[SSAValue, ...]
    waits: tuple[SSAValue, ...]
    signal: SSAValue | None


class _Task(Protocol):
    def operand_groups(self) -> TaskOperands: ...


class _Kernel(Protocol):
    def tasks(self) -> Sequence[_Task]: ...


class EventGraph(NamedTuple):
    """Who signals each event (task indices, in order) and what each task waits on."""

    signallers: dict[SSAValue, list[int]]
    waits: list[tuple[SSAValue, ...]]

    def predecessors(self) -> list[list[int]]:
        """For each task, the tasks it waits for (the signallers of its events)."""
        return [sorted({p for e in waits for p in self.signallers.get(e, ())})
                for waits in self.waits]


def event_graph(groups: Sequence[TaskOperands]) -> EventGraph:
    """The events between tasks of operands ``groups`` (in kernel order)."""
    signallers: dict[SSAValue, list[int]] = {}
    waits: list[tuple[SSAValue, ...]] = []
    for index, group in enumerate(groups):
        if group.signal is not None:
            signallers.setdefault(group.signal, []).append(index)
        waits.append(group.waits)
    return EventGraph(signallers, waits)


def predecessors(kernel: _Kernel) -> list[list[int]]:
    """For each task of ``kernel``, the tasks it waits for."""
    return event_graph([task.operand_groups() for task in kernel.tasks()]).predecessors()
