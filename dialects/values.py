"""Python values of IR things: the numpy dtype of an element type, the array of a dense
literal, the bytes of a shaped type, and finding a module's entry function. Every
executor and lowering reads IR values through these; ``paused_gc`` serves the code that
makes or checks tens of thousands of them."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation

from mncore_ir.dialects.diagnostics import InterpretationError
from mncore_ir.dialects.element_types import ELEMENT_TYPES

_NUMPY_NAMES = {typ: name for name, typ in ELEMENT_TYPES.items()}


def has_numpy_dtype(element_type: Attribute) -> bool:
    return element_type in _NUMPY_NAMES


def numpy_dtype(element_type: Any) -> np.dtype:
    """The numpy dtype of a graph element type (the names are shared with torch)."""
    return np.dtype(_NUMPY_NAMES[element_type])


def nbytes(typ: Attribute) -> int:
    """The bytes a tensor or memref of static shape ``typ`` takes in numpy."""
    assert isinstance(typ, TensorType | MemRefType)
    return math.prod(typ.get_shape()) * numpy_dtype(typ.get_element_type()).itemsize


def constant_value(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The array a dense literal holds, in its element type's dtype."""
    typ = attr.type
    assert isinstance(typ, TensorType)
    dtype = numpy_dtype(typ.element_type)
    storage = np.int8 if dtype == np.bool_ else dtype.newbyteorder("<")
    values = np.frombuffer(attr.data.data, dtype=storage)
    return values.astype(dtype).reshape(typ.get_shape())


def find_function(module: ModuleOp, name: str | None = None,
                  kind: type[Operation] = FuncOp) -> Any:
    """The function (or other symbol op of ``kind``) ``name``, or the module's only
    (or ``main``) one."""
    funcs = [op for op in module.ops if isinstance(op, kind)]
    if name is not None:
        for f in funcs:
            if _symbol(f) == name:
                return f
        raise InterpretationError(f"no function named @{name}")
    if len(funcs) == 1:
        return funcs[0]
    for f in funcs:
        if _symbol(f) == "main":
            return f
    raise InterpretationError("the module has no single entry function: name one")


def _symbol(op: Operation) -> str | None:
    name = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return name.data if isinstance(name, StringAttr) else None



@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: a kernel is a few objects per task, none
    garbage while it is made or verified, and each full collection meanwhile would
    traverse them all (and the rest of the heap): half a pass's time for tens of
    thousands of tasks."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
