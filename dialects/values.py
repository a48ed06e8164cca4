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
from mncore_ir.dialects.element_types import ELEMENT_TYPES, NARROW_FLOATS

_NUMPY_NAMES = {typ: name for name, typ in ELEMENT_TYPES.items()}
_BFLOAT16, _FLOAT16 = NARROW_FLOATS


def has_numpy_dtype(element_type: Attribute) -> bool:
    return element_type in _NUMPY_NAMES


def numpy_dtype(element_type: Any) -> np.dtype:
    """The numpy dtype that holds a graph element type (the names are shared with
    torch): its own, or f32 for a narrow float (see :func:`as_element_type`)."""
    if element_type in NARROW_FLOATS:
        return np.dtype(np.float32)
    return np.dtype(_NUMPY_NAMES[element_type])


def as_element_type(value: Any, element_type: Attribute) -> np.ndarray:
    """``value`` as an array of ``element_type``'s numpy dtype; a narrow float's values
    rounded to the nearest the type holds (:func:`round_narrow`), in f32."""
    if element_type in NARROW_FLOATS:
        array = np.array(value, np.float32, order="C")
        round_narrow(array, element_type)
        return array
    return np.asarray(value).astype(numpy_dtype(element_type), copy=False)


def round_narrow(array: np.ndarray, element_type: Attribute, chunk: int = 1 << 14) -> None:
    """Round a C-contiguous f32 array in place to the nearest values of the narrow
    float ``element_type`` (ties to even, NaN kept), a chunk at a time (little
    memory)."""
    assert array.dtype == np.float32 and array.flags.c_contiguous
    flat = array.reshape(-1)
    for start in range(0, flat.size, chunk):
        part = flat[start:start + chunk]
        if element_type == _FLOAT16:
            part[...] = part.astype(np.float16)
            continue
        bits = part.view(np.uint32)  # a bf16 is an f32's upper half
        rounded = (bits + (((bits >> 16) & 1) + 0x7FFF)) & 0xFFFF0000
        part[...] = np.where(np.isnan(part), part, rounded.view(np.float32))


def nbytes(typ: Attribute) -> int:
    """The bytes a tensor or memref of static shape ``typ`` takes in numpy."""
    assert isinstance(typ, TensorType | MemRefType)
    return math.prod(typ.get_shape()) * numpy_dtype(typ.get_element_type()).itemsize


def constant_value(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The array a dense literal holds, in its element type's dtype."""
    typ = attr.type
    assert isinstance(typ, TensorType)
    if typ.element_type == _BFLOAT16:  # the upper half of an f32
        raw = np.frombuffer(attr.data.data, "<u2").astype(np.uint32) << 16
        return raw.view(np.float32).reshape(typ.get_shape())
    if typ.element_type == _FLOAT16:
        raw = np.frombuffer(attr.data.data, "<f2")
        return raw.astype(np.float32).reshape(typ.get_shape())
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
