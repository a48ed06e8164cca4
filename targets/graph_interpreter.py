"""Reference interpreter for the graph level: each op runs its numpy reference.

The references live in ``dialects/graph_semantics`` (the level's definition of
meaning); this module runs functions on them: xDSL interpreter bindings, input and size
checks. Later levels are checked against it. Values are ``numpy.ndarray``s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
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


def run_function(module: ModuleOp, inputs: Sequence[Any], name: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> list[np.ndarray]:
    """Run a graph-level function on numpy inputs; returns its outputs."""
    func = find_function(module, name)
    check_sizes(func, func.function_type.inputs.data, max_bytes)
    args = check_inputs(func, inputs)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    return [np.asarray(v) for v in interpreter.call_op(func, tuple(args))]
