"""The megakernel simulator: runs a ``task.kernel`` task by task with numpy.

A task's meaning comes from the graph level: an ``elementwise`` task runs its
``task.body`` on whole tiles (numpy broadcasts the inputs' regions), any other task of kind
``K`` runs the reference interpreter's ``graph.K`` on its input regions. So a kernel is
right exactly when its tiling and dependencies are.

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
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from mncore_ir.dialects import task as t
from mncore_ir.dialects.diagnostics import InterpretationError
from mncore_ir.dialects.graph import Graph
from mncore_ir.dialects.task import find_kernel as find_kernel
from mncore_ir.dialects.task import predecessors as predecessors
from mncore_ir.dialects.values import constant_value, numpy_dtype
from mncore_ir.targets.graph_interpreter import (
    DEFAULT_MAX_BYTES,
    GraphFunctions,
    check_inputs,
    check_sizes,
)

_GRAPH_OPS: dict[str, type[Operation]] = {op.name[6:]: op for op in Graph.operations}


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
    shape, dtype = tuple(typ.get_shape()), numpy_dtype(typ.element_type)  # type: ignore[attr-defined]
    if not poison:
        return np.zeros(shape, dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype)
    return np.full(shape, np.iinfo(dtype).min, dtype)


class TileEvaluator:
    """Runs one task's computation on numpy tiles, with the graph interpreter."""

    def __init__(self, kernel: t.KernelOp) -> None:
        self.bodies = kernel.bodies()
        self.interpreter = Interpreter(ModuleOp([]))
        self.interpreter.register_implementations(GraphFunctions())
        self.interpreter.register_implementations(TaskBodyFunctions())
        self.ops: dict[tuple[Any, ...], Operation] = {}

    def graph_op(self, task: t.TaskOp, args: Sequence[np.ndarray]) -> Operation:
        """A ``graph.<kind>`` op with the task's properties on tile-shaped types."""
        outs = [(v.type.element_type, tile.sizes) for v, tile in task.writes()]  # type: ignore[attr-defined]
        ins = [(v.type.element_type, a.shape)  # type: ignore[attr-defined]
               for (v, _), a in zip(task.reads(), args, strict=True)]
        key = (task.kind.data, task.attrs, tuple(ins), tuple(outs))
        if key not in self.ops:
            op_type = _GRAPH_OPS.get(task.kind.data)
            if op_type is None:
                raise InterpretationError(f"task kind {task.kind.data!r} has no meaning: it is "
                                          "neither 'elementwise' nor a graph op")
            block = Block(arg_types=[TensorType(e, list(s)) for e, s in ins])
            self.ops[key] = op_type.create(
                operands=list(block.args), properties=dict(task.attrs.data),
                result_types=[TensorType(e, list(s)) for e, s in outs])
        return self.ops[key]

    def __call__(self, task: t.TaskOp, args: Sequence[np.ndarray]) -> PythonValues:
        if task.body is not None:
            body = self.bodies[task.body.root_reference.data]
            return self.interpreter.run_ssacfg_region(body.body, tuple(args), "task.body")
        return self.interpreter.run_op(self.graph_op(task, args), tuple(args))


def simulate(kernel: t.KernelOp, inputs: Sequence[Any], order_seed: int | None = None,
             poison: bool = True, evaluator: TileEvaluator | None = None,
             max_bytes: int = DEFAULT_MAX_BYTES) -> list[np.ndarray]:
    """Run ``kernel`` on numpy inputs; returns its outputs."""
    check_sizes(kernel, kernel.function_type.inputs.data, max_bytes)
    args = [a.copy() for a in check_inputs(kernel, inputs)]  # tasks must not write them
    memory: dict[SSAValue, np.ndarray] = dict(zip(kernel.inputs, args, strict=True))
    outputs = [poisoned(v.type, poison) for v in kernel.outputs]
    memory.update(zip(kernel.outputs, outputs, strict=True))
    for op in kernel.body.block.ops:
        if isinstance(op, t.BufferOp):
            memory[op.result] = poisoned(op.result.type, poison)
        elif isinstance(op, t.ConstantOp):
            memory[op.result] = constant_value(op.value)  # type: ignore[arg-type]
    tasks = kernel.tasks()
    evaluate = evaluator or TileEvaluator(kernel)
    order = (range(len(tasks)) if order_seed is None
             else execution_order(predecessors(kernel), order_seed))
    for index in order:
        task = tasks[index]
        tiles = [memory[v][tile.slices()] for v, tile in task.reads()]
        try:
            results = evaluate(task, tiles)
        except InterpretationError as error:  # e.g. an index out of range: the task's
            raise InterpretationError(f"task {index} ({task.kind.data}): {error}", task
                                      ) from error
        except (ValueError, TypeError, IndexError) as error:
            raise InterpretationError(f"task {index} ({task.kind.data}) failed: {error}",
                                      task) from error
        for (value, tile), result in zip(task.writes(), results, strict=True):
            memory[value][tile.slices()] = np.broadcast_to(np.asarray(result), tile.sizes)
    return outputs


def run_kernel(module: ModuleOp, inputs: Sequence[Any], name: str | None = None,
               order_seed: int | None = None) -> list[np.ndarray]:
    """Simulate the kernel ``name`` (or the module's only kernel) on numpy inputs."""
    return simulate(find_kernel(module, name), inputs, order_seed)
