"""The megakernel simulator: runs a ``task.kernel`` task by task with numpy.

A task's meaning comes from the graph level, through ``computation()``: a pointwise
``task.body`` runs on whole tiles (numpy broadcasts the inputs' regions), a tile body's
graph op runs in the reference interpreter on the input regions. So a kernel is right
exactly when its tiling and dependencies are.

Tasks run in the kernel's order, or in a random topological order of the dependencies
its events express (``order_seed``); buffers start poisoned (NaN, or an extreme integer)
so a task that runs before the data it reads shows up as a wrong result.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import task as t
from mncore_ir.dialects.diagnostics import InterpretationError
from mncore_ir.dialects.task import find_kernel as find_kernel
from mncore_ir.dialects.task import predecessors as predecessors
from mncore_ir.dialects.values import constant_value, numpy_dtype
from mncore_ir.targets.graph_interpreter import (
    DEFAULT_MAX_BYTES,
    CollectiveFunctions,
    Communicator,
    GraphFunctions,
    SimulatedRanks,
    check_inputs,
    check_sizes,
)


@register_impls
class TaskBodyFunctions(InterpreterFunctions):
    @impl_terminator(t.YieldOp)
    def run_yield(self, interp: Interpreter, op: t.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()


def execution_order(preds: Sequence[Sequence[int]], seed: int | None) -> list[int]:
    """Program order, or a random topological order: each task draws a random priority
    and the ready task of highest priority runs next. (Picking uniformly among ready
    tasks instead almost never lets a long-ready task wait for a late one.)"""
    if seed is None:
        return list(range(len(preds)))
    rng = random.Random(seed)
    priority = [rng.random() for _ in preds]
    waiting = [len(ps) for ps in preds]
    successors: list[list[int]] = [[] for _ in preds]
    for index, ps in enumerate(preds):
        for p in ps:
            successors[p].append(index)
    ready = [(-priority[i], i) for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, pick = heapq.heappop(ready)
        order.append(pick)
        for s in successors[pick]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (-priority[s], s))
    return order


def poisoned(typ: Attribute, poison: bool) -> np.ndarray:
    assert isinstance(typ, MemRefType)
    shape, dtype = tuple(typ.get_shape()), numpy_dtype(typ.element_type)
    if not poison:
        return np.zeros(shape, dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype)
    return np.full(shape, np.iinfo(dtype).min, dtype)


class TileEvaluator:
    """Runs one task's computation on numpy tiles, with the graph interpreter; a
    collective task's tile goes through ``communicator`` to the other ranks' tiles."""

    def __init__(self, kernel: t.KernelOp, communicator: Communicator | None = None) -> None:
        self.bodies = kernel.bodies()
        self.interpreter = Interpreter(ModuleOp([]))
        self.interpreter.register_implementations(GraphFunctions())
        self.interpreter.register_implementations(TaskBodyFunctions())
        self.interpreter.register_implementations(CollectiveFunctions(communicator))
        self.computations: dict[str, Operation | None] = {}  # by body: tasks share them

    def __call__(self, task: t.TaskOp, args: Sequence[np.ndarray]) -> PythonValues:
        name = task.body_name
        if name not in self.computations:
            self.computations[name] = t.computation(task, self.bodies)
        what = self.computations[name]
        if isinstance(what, t.BodyOp):
            return self.interpreter.run_ssacfg_region(what.body, tuple(args), "task.body")
        if what is None:
            raise InterpretationError(f"task.task refers to @{name}, which is no task.body "
                                      "of this kernel")
        return self.interpreter.run_op(what, tuple(args))


def simulate(kernel: t.KernelOp, inputs: Sequence[Any], order_seed: int | None = None,
             poison: bool = True, evaluator: TileEvaluator | None = None,
             max_bytes: int = DEFAULT_MAX_BYTES,
             communicator: Communicator | None = None) -> list[np.ndarray]:
    """Run ``kernel`` on numpy inputs; returns its outputs. Its collective tasks go
    through ``communicator`` (every rank runs the tasks in the same order, so the
    ranks' tiles of a collective task meet)."""
    check_sizes(kernel, kernel.function_type.inputs.data, max_bytes)
    args = [a.copy() for a in check_inputs(kernel, inputs)]  # tasks must not write them
    memory: dict[SSAValue, np.ndarray] = dict(zip(kernel.inputs, args, strict=True))
    outputs = [poisoned(v.type, poison) for v in kernel.outputs]
    memory.update(zip(kernel.outputs, outputs, strict=True))
    for op in kernel.body.block.ops:
        if isinstance(op, t.BufferOp):
            memory[op.result] = poisoned(op.result.type, poison)
        elif isinstance(op, t.ConstantOp):
            memory[op.result] = constant_value(op.value)
    tasks = kernel.tasks()
    evaluate = evaluator or TileEvaluator(kernel, communicator)
    order = (range(len(tasks)) if order_seed is None
             else execution_order(predecessors(kernel), order_seed))
    bodies = kernel.bodies()

    def label(task: t.TaskOp) -> str:
        return t.computation_label(t.computation(task, bodies))

    for index in order:
        task = tasks[index]
        tiles = [memory[v][tile.slices()] for v, tile in task.reads()]
        try:
            results = evaluate(task, tiles)
        except InterpretationError as error:  # e.g. an index out of range: the task's
            raise InterpretationError(f"task {index} ({label(task)}): {error}",
                                      task) from error
        except (ValueError, TypeError, IndexError) as error:
            raise InterpretationError(f"task {index} ({label(task)}) failed: {error}",
                                      task) from error
        for (value, tile), result in zip(task.writes(), results, strict=True):
            memory[value][tile.slices()] = np.broadcast_to(np.asarray(result), tile.sizes)
    return outputs


def run_kernel(module: ModuleOp, inputs: Sequence[Any], name: str | None = None,
               order_seed: int | None = None) -> list[np.ndarray]:
    """Simulate the kernel ``name`` (or the module's only kernel) on numpy inputs."""
    return simulate(find_kernel(module, name), inputs, order_seed)


def simulate_ranks(kernel: t.KernelOp, inputs: Sequence[Sequence[Any]],
                   order_seed: int | None = None, poison: bool = True,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> list[list[np.ndarray]]:
    """Run ``kernel`` on ``len(inputs)`` simulated devices, device r on ``inputs[r]``
    (each with its own buffers, in threads), their collective tasks meeting tile by
    tile; returns each device's outputs."""
    ranks = SimulatedRanks(len(inputs))
    return ranks.run(lambda rank: simulate(kernel, inputs[rank], order_seed, poison,
                                           max_bytes=max_bytes, communicator=ranks))
