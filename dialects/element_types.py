"""Element types each level supports, and dense literals that keep their exact values.

The executors of a level handle a fixed set of element types (the graph interpreter and
cpu executor map each to a numpy/torch dtype; the cycle simulator holds every value in
an f32 word). An op of a level carries :class:`SupportedElementTypes`, so an unsupported
type (``f80``, ``index``, ``i128``, ...) is a verifier error at the op that names it,
not a ``KeyError`` deep inside an executor.

xDSL prints a dense literal from its values as Python floats, which loses bits in two
cases: a signalling NaN becomes a quiet one, and a tensor whose elements compare equal
but differ in bits (``0.0`` and ``-0.0``) prints as a splat. :func:`print_dense` prints
those as their raw bytes instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    ContainerType,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    ShapedType,
    Signedness,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

#: Element types a graph tensor may hold, by their torch names.
ELEMENT_TYPES: dict[str, Attribute] = {
    "float32": f32,
    "float64": Float64Type(),
    "int64": i64,
    "int32": IntegerType(32),
    "bool": i1,
    "uint8": IntegerType(8, Signedness.UNSIGNED),
    "bfloat16": BFloat16Type(),
    "float16": Float16Type(),
}
#: Floats narrower than f32. Numpy has no bf16, and its f16 arithmetic is not torch's:
#: the graph interpreter holds them in f32 arrays and rounds each op's result to the
#: type, as torch's CPU kernels compute in f32 and round once per op.
NARROW_FLOATS: tuple[Attribute, ...] = (BFloat16Type(), Float16Type())

#: The graph level: every type with a torch dtype.
GRAPH_ELEMENT_TYPES: tuple[Attribute, ...] = tuple(ELEMENT_TYPES.values())
#: The task level: the narrow floats stay at the graph level for now (the lazy
#: runtime's task and triton devices run their ops on the host).
TASK_ELEMENT_TYPES: tuple[Attribute, ...] = tuple(
    t for t in GRAPH_ELEMENT_TYPES if t not in NARROW_FLOATS)
#: The mncore level: a word is an f32 and holds integers and booleans exactly; f64 has
#: no word form.
MNCORE_ELEMENT_TYPES: tuple[Attribute, ...] = tuple(
    t for t in TASK_ELEMENT_TYPES if not isinstance(t, Float64Type))


@dataclass(frozen=True)
class SupportedElementTypes(OpTrait):
    """The op's tensors and memrefs (operands, results, entry block arguments, typed
    properties) hold only ``types``, those the executors of ``level`` handle, and, with
    ``static_shapes``, have no dynamic (``?``) dimension: a level whose executors allocate
    every value up front needs every size when the IR is read."""

    level: str
    types: tuple[Attribute, ...]
    static_shapes: bool = False

    def verify(self, op: Operation) -> None:
        for element in _element_types(op):
            if element not in self.types:
                supported = ", ".join(map(str, self.types))
                raise VerifyException(
                    f"{op.name}: element type {element} is not supported at the "
                    f"{self.level} level (supported: {supported})")
        if self.static_shapes:
            for typ in _types(op):
                if isinstance(typ, ShapedType) and not typ.has_static_shape():
                    raise VerifyException(f"{op.name}: {typ} has a dynamic size; the "
                                          f"{self.level} level needs static shapes")


def _element_types(op: Operation) -> Iterator[Attribute]:
    """The element types of every shaped type ``op`` mentions, and the types of its
    scalar attributes (``workers = 132 : f80`` is one, which xDSL cannot even print)."""
    for typ in _types(op):
        yield typ.get_element_type() if isinstance(typ, ContainerType) else typ


def _types(op: Operation) -> Iterator[Attribute]:
    """Every shaped type ``op`` mentions, and the types of its scalar attributes."""
    types: list[Attribute] = [v.type for v in (*op.operands, *op.results)]
    types += [a.type for region in op.regions for a in
              (region.blocks.first.args if region.blocks.first else ())]
    attrs = [a for top in (*op.properties.values(), *op.attributes.values())
             for a in _nested(top)]
    for attr in attrs:
        if isinstance(attr, FunctionType):
            types += [*attr.inputs.data, *attr.outputs.data]
        elif isinstance(attr, DenseIntOrFPElementsAttr):
            types.append(attr.get_type())
        elif isinstance(attr, TypeAttribute):
            types.append(attr)
    for typ in types:
        if isinstance(typ, ContainerType):
            yield typ
    yield from (a.type for a in attrs if isinstance(a, IntegerAttr | FloatAttr))


def _nested(attr: Attribute) -> Iterator[Attribute]:
    """``attr`` and the attributes in it, through arrays and dictionaries."""
    yield attr
    items = (attr.data if isinstance(attr, ArrayAttr) else
             attr.data.values() if isinstance(attr, DictionaryAttr) else ())
    for item in items:
        yield from _nested(item)


def integer_range(typ: IntegerType | IndexType) -> tuple[int, int]:
    """``[low, high)`` of the values an element of ``typ`` holds: a signless type is two's
    complement like torch's ``int32``/``int64`` (``i1`` holds 0 and 1), an unsigned type
    counts from 0, ``index`` is signed and as wide as xDSL packs it (64 bits, as in
    MLIR)."""
    if isinstance(typ, IndexType):
        width = 8 * typ.compile_time_size
        return -(1 << (width - 1)), 1 << (width - 1)
    width = typ.width.data
    if typ.signedness.data == Signedness.UNSIGNED or (
            width == 1 and typ.signedness.data == Signedness.SIGNLESS):
        return 0, 1 << width
    return -(1 << (width - 1)), 1 << (width - 1)


def prints_exactly(attr: DenseIntOrFPElementsAttr) -> bool:
    """Whether xDSL's text for ``attr`` parses back to the same bytes.

    xDSL prints floats from Python floats, which keep every value but not every NaN
    (CPython quietens an f32 signalling NaN and drops an f16 NaN's payload), and prints
    a splat when all values compare equal (``0.0`` and ``-0.0`` do). Only the NaNs take
    xDSL's own round trip; the rest is checked with numpy.
    """
    element = attr.get_element_type()
    if not isinstance(element, Float16Type | Float32Type | Float64Type):
        return True
    data = attr.data.data
    values = np.frombuffer(data, np.dtype(element.format))
    nans = values[np.isnan(values)].tobytes()
    if nans and element.pack(element.unpack(nans, len(nans) // values.itemsize)) != nans:
        return False
    if len(values) < 2:
        return True
    if data == data[:values.itemsize] * len(values):
        return True  # a splat in bits too
    return not bool(np.all(values == values[0]))  # printed as a splat it is not


def print_dense(printer: Printer, attr: DenseIntOrFPElementsAttr) -> None:
    """Print ``attr`` as xDSL does when that is exact, else as its hex bytes."""
    if prints_exactly(attr):
        printer.print_attribute(attr)
        return
    printer.print_string(f'dense<"0x{attr.data.data.hex().upper()}"> : ')
    printer.print_attribute(attr.get_type())


class ExactDensePrinting(Printer):
    """A printer whose dense literals parse back to the same bytes wherever they
    appear (the generic form and attribute dictionaries print them with xDSL's
    lossy text otherwise)."""

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and not prints_exactly(attribute):
            print_dense(self, attribute)
        else:
            super().print_attribute(attribute)


class DenseLiteralFormat:
    """The assembly of a constant op holding one ``value`` literal
    (``%c = <op> dense<...> : tensor<...>``), printed exactly by :func:`print_dense`;
    the op's ``__init__`` takes the literal. (No annotations here: IRDL reads every
    annotated field of an op class as a definition.)"""

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            name = cls.name  # type: ignore[attr-defined]
            parser.raise_error(f"{name} expects a dense literal", pos, parser.pos)
        op = cls(value)  # type: ignore[call-arg]
        op.attributes.update(parser.parse_optional_attr_dict())  # type: ignore[attr-defined]
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_dense(printer, self.value)  # type: ignore[attr-defined]
        printer.print_op_attributes(self.attributes)  # type: ignore[attr-defined]
