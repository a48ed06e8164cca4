"""Reference interpreter for the graph level: each op runs its numpy reference.

The references live in ``dialects/graph_semantics`` (the level's definition of
meaning); this module runs functions on them: xDSL interpreter bindings, input and size
checks. Later levels are checked against it. Values are ``numpy.ndarray``s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute, Operation

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import InterpretationError as InterpretationError
from mncore_ir.dialects.graph_semantics import SEMANTICS, semantics
from mncore_ir.dialects.graph_semantics_numpy import check_indices as check_indices
from mncore_ir.dialects.values import as_element_type, has_numpy_dtype
from mncore_ir.dialects.values import constant_value as constant_value
from mncore_ir.dialects.values import find_function as find_function
from mncore_ir.dialects.values import nbytes as nbytes
from mncore_ir.dialects.values import numpy_dtype as numpy_dtype

#: The most bytes one tensor or buffer, and all inputs together, may take by default:
#: the interpreters hold every value in host memory at once.
DEFAULT_MAX_BYTES = 1 << 30


def _shaped_types(op: Operation) -> list[Attribute]:
    """The static-shape tensors and memrefs ``op`` defines or names (results, entry block
    arguments, signatures, literals and type properties)."""
    types: list[Attribute] = [r.type for r in op.results]
    types += [a.type for region in op.regions for block in region.blocks for a in block.args]
    for prop in op.properties.values():
        if isinstance(prop, FunctionType):
            types += [*prop.inputs.data, *prop.outputs.data]
        elif isinstance(prop, DenseIntOrFPElementsAttr):
            types.append(prop.get_type())
        else:
            types.append(prop)
    return [typ for typ in types if isinstance(typ, TensorType | MemRefType)
            and has_numpy_dtype(typ.get_element_type()) and min(typ.get_shape(), default=0) >= 0]


def check_sizes(root: Operation, input_types: Sequence[Attribute],
                max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Refuse, before anything is allocated, to run ``root`` (a function, kernel or
    program) when one of its tensors or buffers, or all its inputs together, would take
    more than ``max_bytes``: numpy would fail deep inside (or allocate terabytes)."""
    for op in root.walk():
        for typ in _shaped_types(op):
            if nbytes(typ) > max_bytes:
                raise InterpretationError(
                    f"{op.name}: a value of type {typ} takes {nbytes(typ):,} bytes, more "
                    f"than the limit of {max_bytes:,} bytes for one tensor")
    total = sum(nbytes(typ) for typ in input_types)
    if total > max_bytes:
        sym = root.properties.get("sym_name")
        name = sym.data if isinstance(sym, StringAttr) else root.name
        raise InterpretationError(
            f"the inputs of @{name} take {total:,} bytes, more than the "
            f"limit of {max_bytes:,} bytes for all inputs")


def _cast(value: Any, result_type: Attribute) -> np.ndarray:
    """Keep the IR's element type: numpy promotes 0-d operands differently than torch
    (and computes narrow floats in f32: the result rounds to the type)."""
    assert isinstance(result_type, TensorType)
    return as_element_type(value, result_type.element_type)


def run_reference(op: Operation, args: Sequence[Any]) -> tuple[np.ndarray, ...]:
    """The results of ``op`` on ``args`` by its numpy reference, of its result types."""
    reference = semantics(type(op)).reference
    assert reference is not None, f"{op.name} has no numpy reference"
    out = reference(op, *args)
    outs = out if isinstance(out, tuple) else (out,)
    return tuple(_cast(v, r.type) for v, r in zip(outs, op.results, strict=True))


@register_impls
class GraphFunctions(InterpreterFunctions):
    """The graph dialect's ops by their numpy references (``graph_semantics``)."""

    @impl(g.FusedOp)
    def run_fused(self, interp: Interpreter, op: g.FusedOp, args: PythonValues):
        return interp.run_ssacfg_region(op.body, args, "graph.fused")

    @impl_terminator(g.YieldOp)
    def run_yield(self, interp: Interpreter, op: g.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()


def _run(self: GraphFunctions, interp: Interpreter, op: Operation, args: PythonValues
         ) -> PythonValues:
    return run_reference(op, args)


for _op, _semantics in SEMANTICS.items():
    if _semantics.reference is not None:
        setattr(GraphFunctions, f"run_{_op.name[6:]}", impl(_op)(_run))
register_impls(GraphFunctions)


def check_inputs(func: Any, inputs: Sequence[Any]) -> list[np.ndarray]:
    """The inputs as arrays of the argument types of ``func`` (a function or kernel:
    tensor or memref arguments), or a clear error."""
    types = func.function_type.inputs.data
    if len(inputs) != len(types):
        raise InterpretationError(f"@{func.sym_name.data} takes {len(types)} arguments, "
                                  f"got {len(inputs)}")
    out = []
    for i, (value, typ) in enumerate(zip(inputs, types, strict=True)):
        arr = np.asarray(value)
        expected = tuple(typ.get_shape())
        if arr.shape != expected:
            raise InterpretationError(f"argument {i} of @{func.sym_name.data} has shape "
                                      f"{arr.shape}, expected {expected} ({typ})")
        out.append(as_element_type(arr, typ.element_type))
    return out


# ------------------------------------------------------------------ collectives


class Communicator(Protocol):
    """How one rank's collectives reach the others: simulated ranks in threads
    (:class:`SimulatedRanks`) or a real engine (``torch.distributed``, in
    ``mncore_ir.executables``). Reductions are ``graph.COLLECTIVE_REDUCTIONS``."""

    def all_reduce(self, x: np.ndarray, reduce: str, group: str, size: int) -> np.ndarray: ...

    def all_gather(self, x: np.ndarray, group: str, size: int) -> np.ndarray: ...

    def reduce_scatter(self, x: np.ndarray, reduce: str, group: str, size: int
                       ) -> np.ndarray: ...


def combine(values: Sequence[np.ndarray], reduce: str) -> np.ndarray:
    """The ranks' values reduced in rank order (so every rank computes the same bits);
    ``avg`` is the sum divided by the count, as torch.distributed's backends compute it."""
    if reduce in ("max", "min"):
        pick = np.maximum if reduce == "max" else np.minimum
        out = values[0]
        for v in values[1:]:
            out = pick(out, v)
        return out
    out = values[0]
    for v in values[1:]:
        out = out * v if reduce == "product" else out + v
    if reduce == "avg":
        out = out / len(values) if np.issubdtype(out.dtype, np.floating) else out // len(values)
    return out


def collective(op: g.CollectiveOp, value: np.ndarray, communicator: Communicator | None
               ) -> np.ndarray:
    """``op`` on this rank's ``value`` through ``communicator`` (none: a clear error),
    of ``op``'s result type."""
    if communicator is None:
        raise InterpretationError(
            f"{op.name} needs the other ranks: run the function with run_ranks (or on "
            "a device started under torch.distributed)")
    group, size = op.group.data, op.group_size.value.data
    if isinstance(op, g.AllReduceOp):
        out = communicator.all_reduce(value, op.reduce.data, group, size)
    elif isinstance(op, g.AllGatherOp):
        out = communicator.all_gather(value, group, size)
    else:
        assert isinstance(op, g.ReduceScatterOp)
        out = communicator.reduce_scatter(value, op.reduce.data, group, size)
    return _cast(out, op.result.type)


class SimulatedRanks:
    """``size`` ranks as threads of one process, meeting at a barrier for each
    collective; each thread says which rank it is (``local.rank``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots: list[np.ndarray | None] = [None] * size
        self.local = threading.local()

    def exchange(self, x: np.ndarray, size: int, what: str) -> list[np.ndarray]:
        if size != self.size:
            raise InterpretationError(f"{what} is for a group of {size} ranks, run on "
                                      f"{self.size}")
        self.slots[self.local.rank] = x
        self.barrier.wait()
        values = [v for v in self.slots if v is not None]
        self.barrier.wait()  # every rank has read the slots before they are reused
        return values

    def all_reduce(self, x: np.ndarray, reduce: str, group: str, size: int) -> np.ndarray:
        return combine(self.exchange(x, size, "graph.all_reduce"), reduce)

    def all_gather(self, x: np.ndarray, group: str, size: int) -> np.ndarray:
        return np.concatenate(self.exchange(x, size, "graph.all_gather"))

    def reduce_scatter(self, x: np.ndarray, reduce: str, group: str, size: int
                       ) -> np.ndarray:
        total = combine(self.exchange(x, size, "graph.reduce_scatter"), reduce)
        return np.split(total, size)[self.local.rank]

    def run(self, rank_main: Callable[[int], Any]) -> list[Any]:
        """``rank_main(rank)`` on every rank, each in its thread; their results by rank.
        A rank's error stops the others and is raised (the first by rank that is not
        another's abandoned barrier)."""
        results: list[Any] = [None] * self.size
        errors: list[BaseException | None] = [None] * self.size

        def run(rank: int) -> None:
            self.local.rank = rank
            try:
                results[rank] = rank_main(rank)
            except threading.BrokenBarrierError as error:
                errors[rank] = error
            except BaseException as error:
                errors[rank] = error
                self.barrier.abort()  # the others stop waiting for this rank

        threads = [threading.Thread(target=run, args=(r,), name=f"rank{r}")
                   for r in range(self.size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        raised = [e for e in errors if e is not None]
        if raised:
            raise next((e for e in raised if not isinstance(e, threading.BrokenBarrierError)),
                       raised[0])
        return results


@register_impls
class CollectiveFunctions(InterpreterFunctions):
    """The collectives, through the rank's communicator."""

    def __init__(self, communicator: Communicator | None) -> None:
        self.communicator = communicator

    @impl(g.AllReduceOp)
    def run_all_reduce(self, interp: Interpreter, op: g.AllReduceOp, args: PythonValues):
        return (collective(op, args[0], self.communicator),)

    @impl(g.AllGatherOp)
    def run_all_gather(self, interp: Interpreter, op: g.AllGatherOp, args: PythonValues):
        return (collective(op, args[0], self.communicator),)

    @impl(g.ReduceScatterOp)
    def run_reduce_scatter(self, interp: Interpreter, op: g.ReduceScatterOp,
                           args: PythonValues):
        return (collective(op, args[0], self.communicator),)


def run_function(module: ModuleOp, inputs: Sequence[Any], name: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES,
                 communicator: Communicator | None = None) -> list[np.ndarray]:
    """Run a graph-level function on numpy inputs; returns its outputs. Its collectives
    go through ``communicator``."""
    func = find_function(module, name)
    check_sizes(func, func.function_type.inputs.data, max_bytes)
    args = check_inputs(func, inputs)
    check_no_recursion(module, func)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    interpreter.register_implementations(CollectiveFunctions(communicator))
    return [np.asarray(v) for v in interpreter.call_op(func, tuple(args))]


def check_no_recursion(module: ModuleOp, func: FuncOp) -> None:
    """Refuse a chain of ``func.call``s from ``func`` back to a function it came
    through: a graph function has no control flow, so the calls would never end."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    done: set[str] = set()

    def visit(function: FuncOp, path: list[str]) -> None:
        for call in function.walk():
            if not isinstance(call, CallOp):
                continue
            callee = call.callee.root_reference.data
            if callee in path:
                chain = " -> ".join(f"@{n}" for n in [*path[path.index(callee):], callee])
                raise InterpretationError(f"func.call @{callee}: a recursive call ({chain}): "
                                          "graph functions have no control flow, so it "
                                          "would never end", call)
            if callee in functions and callee not in done:
                visit(functions[callee], [*path, callee])
        done.add(function.sym_name.data)

    visit(func, [func.sym_name.data])


def run_ranks(module: ModuleOp, inputs: Sequence[Sequence[Any]], name: str | None = None,
              max_bytes: int = DEFAULT_MAX_BYTES) -> list[list[np.ndarray]]:
    """Run a graph-level function on ``len(inputs)`` simulated ranks, rank r on
    ``inputs[r]``, their collectives meeting in threads; returns each rank's outputs."""
    ranks = SimulatedRanks(len(inputs))
    return ranks.run(lambda rank: run_function(module, inputs[rank], name, max_bytes, ranks))
