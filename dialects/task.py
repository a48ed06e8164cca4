"""The ``task`` dialect: a megakernel task graph (the idea of MPK).

A ``task.kernel`` holds buffers, events and tasks. A task computes one tile of one
operator: it names the operator kind, the region (offset and size per dimension) it
reads from each input and writes to each output, the events it waits on and the event
it signals. An event fires once its trigger count of tasks have signalled it.

A task of kind ``"elementwise"`` names a ``task.body``: the scalar computation (graph
ops on 0-d tensors, ending in ``task.yield``) applied at every point of its output
tiles, as ``linalg.generic``'s region is; the tiles of one operator share one body.
Other kinds name a graph operator and carry its properties: the verifier checks that
the operator accepts the task's regions and that they are laid out as the targets read
them (``verify_kind``). Constant tensors live in ``task.constant`` buffers.

Tasks are kept in a topological order and a task waits only on events whose signallers
all come before it: this is what makes in-order worker queues and a ticket-queue
megakernel deadlock-free, and the kernel's verifier checks it, with the other
invariants the later levels rely on.

    task.kernel @k(%x: memref<8x16xf32>) -> (%y: memref<8x16xf32>) {
      task.body @neg(%a: tensor<f32>) {
        %r = graph.neg %a : tensor<f32>
        task.yield %r : tensor<f32>
      }
      %t = task.buffer : memref<8x16xf32>
      %e = task.event triggers 2
      task.task "exp" ins(%x[0:4, 0:16]) outs(%t[0:4, 0:16]) signal(%e)
      task.task "exp" ins(%x[4:8, 0:16]) outs(%t[4:8, 0:16]) signal(%e)
      task.task "elementwise" @neg ins(%t[0:8, 0:16]) outs(%y[0:8, 0:16]) waits(%e)
      task.return
    }
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import OpVerifyException as OpVerifyException
from mncore_ir.dialects.element_types import (
    GRAPH_ELEMENT_TYPES,
    DenseLiteralFormat,
    SupportedElementTypes,
    integer_range,
)
from mncore_ir.dialects.values import find_function

#: The task level runs on the megakernel simulator and Triton: the graph's element types.
TASK_TYPES = SupportedElementTypes("task", GRAPH_ELEMENT_TYPES, static_shapes=True)


@irdl_attr_definition
class EventType(ParametrizedAttribute, TypeAttribute):
    """An event: a counter that tasks signal and wait on."""

    name = "task.event"


@dataclass(frozen=True)
class Tile:
    """A region: offset and size per dimension."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]

    @staticmethod
    def of(attr: DenseArrayBase) -> Tile:
        return _tile_of(attr)

    def attr(self) -> DenseArrayBase:
        return _tile_attr(self)

    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + s) for o, s in zip(self.offsets, self.sizes, strict=True))

    def __str__(self) -> str:
        return ", ".join(f"{o}:{o + s}" for o, s in zip(self.offsets, self.sizes, strict=True))


# Kernels repeat few distinct regions many times: decoding and encoding are cached.
Accesses = list[tuple[SSAValue, Tile]]
"""A task's (buffer, region) pairs, of its inputs or of its outputs."""


@functools.lru_cache(maxsize=1 << 16)
def _tile_of(attr: DenseArrayBase) -> Tile:
    values = tuple(attr.get_values())
    rank = len(values) // 2
    return Tile(values[:rank], values[rank:])  # type: ignore[arg-type]


@functools.lru_cache(maxsize=1 << 16)
def _tile_attr(tile: Tile) -> DenseArrayBase:
    # Packed directly: ``from_list`` normalises every value first, which costs more
    # than the rest of a task; ``pack`` still refuses a value that is no i64.
    return DenseArrayBase(i64, BytesAttr(i64.pack((*tile.offsets, *tile.sizes))))


@functools.lru_cache(maxsize=64)
def _segment_sizes(ins: int, outs: int, waits: int, signals: int) -> DenseArrayBase:
    """A task's ``operandSegmentSizes``: kernels repeat few combinations."""
    return DenseArrayBase.from_list(i32, [ins, outs, waits, signals])


@functools.lru_cache(maxsize=256)
def _kind_attr(kind: str) -> StringAttr:
    return StringAttr(kind)


@functools.lru_cache(maxsize=256)
def _body_attr(body: str) -> SymbolRefAttr:
    return SymbolRefAttr(body)


@functools.lru_cache(maxsize=256)
def _attrs_attr(items: tuple[tuple[str, Attribute], ...]) -> DictionaryAttr:
    """The tiles of one operator carry its properties: one attribute for all of them."""
    return DictionaryAttr(dict(items))


@irdl_op_definition
class BufferOp(IRDLOperation):
    """Storage for an intermediate tensor inside a kernel."""

    name = "task.buffer"
    result = result_def(MemRefType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp), TASK_TYPES))
    assembly_format = "attr-dict `:` type($result)"


@irdl_op_definition
class ConstantOp(DenseLiteralFormat, IRDLOperation):
    """A buffer holding known values: ``%c = task.constant dense<...> : tensor<...>``
    gives a memref of the literal's shape and element type."""

    name = "task.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(MemRefType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp), TASK_TYPES))

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        typ = value.get_type()
        super().__init__(properties={"value": value},
                         result_types=[MemRefType(typ.element_type, typ.get_shape())])


    def verify_(self) -> None:
        typ = self.value.get_type()
        assert isa(self.result.type, MemRefType)
        if (tuple(typ.get_shape()) != tuple(self.result.type.get_shape())
                or typ.element_type != self.result.type.element_type):
            raise VerifyException(f"task.constant of type {typ} cannot fill "
                                  f"{self.result.type}")


@irdl_op_definition
class EventOp(IRDLOperation):
    """An event that fires after ``triggers`` signals."""

    name = "task.event"
    triggers = prop_def(IntegerAttr[I64])
    result = result_def(EventType)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    assembly_format = "`triggers` $triggers attr-dict"

    def __init__(self, triggers: int) -> None:
        super().__init__(properties={"triggers": IntegerAttr(triggers, i64)},
                         result_types=[EventType()])


_I64_LOW, _I64_HIGH = integer_range(i64)


def _parse_i64(parser: Parser, what: str) -> tuple[int, int]:
    """An integer literal and where it starts; one that an i64 cannot hold is a parse
    error at it (a region is stored as an i64 array, which would raise a ValueError)."""
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False)
    if not _I64_LOW <= value < _I64_HIGH:
        _raise_at(parser, f"region {what} {value} is out of range for i64", start)
    return value, start


def _parse_range(parser: Parser) -> tuple[int, int]:
    """``start:end`` of one dimension of a region, as its offset and size."""
    begin, start = _parse_i64(parser, "start")
    parser.parse_punctuation(":")
    end, _ = _parse_i64(parser, "end")
    if not _I64_LOW <= end - begin < _I64_HIGH:
        _raise_at(parser, f"region size {end - begin} of {begin}:{end} is out of range for "
                          "i64", start)
    return begin, end - begin


def _raise_at(parser: Parser, message: str, start: int) -> None:
    """A parse error over the source from ``start`` to the last token read."""
    text = parser.lexer.input.content[start:parser.pos]
    parser.raise_error(message, start, start + len(text.rstrip()))


def _checked_regions(what: str, values: Sequence[SSAValue],
                     tiles: ArrayAttr[DenseArrayBase]) -> Accesses:
    """Each buffer with its region, which has the buffer's rank and lies inside it."""
    if len(values) != len(tiles.data):
        raise VerifyException(f"task.task has {len(values)} {what}s but "
                              f"{len(tiles.data)} {what} regions")
    regions: Accesses = []
    for i, (value, attr) in enumerate(zip(values, tiles.data, strict=True)):
        typ = value.type
        assert isinstance(typ, MemRefType)
        shape = typ.get_shape()
        if DYNAMIC_INDEX in shape:
            raise VerifyException(f"task.task {what} {i}: buffers need static shapes")
        if len(attr) != 2 * len(shape):
            flat = attr.get_values()
            text = str(Tile.of(attr)) if len(flat) % 2 == 0 else list(flat)
            raise VerifyException(f"task.task {what} {i}: region [{text}] does not "
                                  f"have rank {len(shape)}")
        tile = Tile.of(attr)
        for d, (o, s, n) in enumerate(zip(tile.offsets, tile.sizes, shape, strict=True)):
            if o < 0 or s < 1 or o + s > n:
                raise VerifyException(f"task.task {what} {i}: region [{tile}] is out of "
                                      f"bounds in dimension {d} (size {n})")
        regions.append((value, tile))
    return regions


class TaskOperands(NamedTuple):
    """A task's operands by group."""

    ins: tuple[SSAValue, ...]
    outs: tuple[SSAValue, ...]
    waits: tuple[SSAValue, ...]
    signal: SSAValue | None


@functools.lru_cache(maxsize=256)
def _segment_ends(sizes: DenseArrayBase) -> tuple[int, ...]:
    return tuple(itertools.accumulate(sizes.get_values()))  # type: ignore[arg-type]


@irdl_op_definition
class TaskOp(IRDLOperation):
    """One tile of one operator: what it reads and writes, when it may start, and the
    event it signals when done."""

    name = "task.task"
    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    waits = var_operand_def(EventType)
    signal = opt_operand_def(EventType)
    kind = prop_def(StringAttr)
    in_tiles = prop_def(ArrayAttr[DenseArrayBase])
    out_tiles = prop_def(ArrayAttr[DenseArrayBase])
    attrs = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    body = opt_prop_def(SymbolRefAttr)
    traits = lazy_traits_def(lambda: (HasParent(KernelOp),))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, kind: str, ins: Sequence[tuple[SSAValue, Tile]],
                 outs: Sequence[tuple[SSAValue, Tile]], waits: Sequence[SSAValue] = (),
                 signal: SSAValue | None = None,
                 attrs: dict[str, Attribute] | None = None,
                 body: str | None = None) -> None:
        # Operation.__init__, not IRDL's builder, and attributes shared between tasks:
        # kernels have tens of thousands of tasks, and the builder's normalisation of
        # each argument costs more than the rest of a task; the verifier checks what it
        # would (operand types and segment sizes).
        signals = [signal] if signal is not None else []
        properties: dict[str, Attribute] = {
            "kind": _kind_attr(kind),
            "in_tiles": ArrayAttr([t.attr() for _, t in ins]),
            "out_tiles": ArrayAttr([t.attr() for _, t in outs]),
            "attrs": _attrs_attr(tuple((attrs or {}).items())),
        }
        if body is not None:
            properties["body"] = _body_attr(body)
        properties[AttrSizedOperandSegments.attribute_name] = _segment_sizes(
            len(ins), len(outs), len(waits), len(signals))
        Operation.__init__(self, operands=[*(v for v, _ in ins), *(v for v, _ in outs),
                                           *waits, *signals], properties=properties)

    def operand_groups(self) -> TaskOperands:
        """``ins``, ``outs``, ``waits`` and ``signal`` at once. Each of xDSL's accessors
        decodes the segment sizes again, which is most of a verifier's time per task;
        these are decoded once per distinct sizes."""
        ends = _segment_ends(self.properties[AttrSizedOperandSegments.attribute_name])  # type: ignore[arg-type]
        operands = tuple(self.operands)
        signals = operands[ends[2]:ends[3]]
        return TaskOperands(operands[:ends[0]], operands[ends[0]:ends[1]],
                            operands[ends[1]:ends[2]], signals[0] if signals else None)

    def reads(self) -> list[tuple[SSAValue, Tile]]:
        ins = self.operand_groups().ins
        return [(v, Tile.of(a)) for v, a in zip(ins, self.in_tiles.data, strict=True)]

    def writes(self) -> list[tuple[SSAValue, Tile]]:
        outs = self.operand_groups().outs
        return [(v, Tile.of(a)) for v, a in zip(outs, self.out_tiles.data, strict=True)]

    def verify_(self) -> None:
        # IRDL's generated verify_ has checked the segment sizes before this runs.
        groups = self.operand_groups()
        verify_kind(self, _checked_regions("input", groups.ins, self.in_tiles),
                    _checked_regions("output", groups.outs, self.out_tiles))

    @classmethod
    def parse(cls, parser: Parser) -> TaskOp:
        kind = parser.parse_str_literal("the operator kind of a task")
        body = parser.parse_optional_symbol_name()

        def buffer() -> SSAValue:
            """A buffer operand: defined earlier in the kernel, so its type is known."""
            unresolved = parser.parse_unresolved_operand()
            defined = parser.ssa_values.get(unresolved.operand_name)
            if defined is None or unresolved.index >= len(defined):
                parser.raise_error("a task's buffers must be defined before the task",
                                   unresolved.span)
            return parser.resolve_operand(unresolved, defined[unresolved.index].type)

        def event() -> SSAValue:
            return parser.parse_operand(EventType())

        def tiled() -> tuple[SSAValue, Tile]:
            value = buffer()
            ranges = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: _parse_range(parser))
            return value, Tile(tuple(r[0] for r in ranges), tuple(r[1] for r in ranges))

        def group(keyword: str, item: object) -> list[object]:
            if parser.parse_optional_keyword(keyword) is None:
                return []
            return parser.parse_comma_separated_list(Parser.Delimiter.PAREN, item)  # type: ignore[arg-type]

        ins = group("ins", tiled)
        outs = group("outs", tiled)
        waits = group("waits", event)
        signal = group("signal", event)
        if len(signal) > 1:
            parser.raise_error("a task signals at most one event")
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(kind, ins, outs, waits, signal[0] if signal else None,  # type: ignore[arg-type]
                 dict(attrs.data) if attrs else None, body.data if body else None)
        op.attributes.update(parser.parse_optional_attr_dict())  # discardable ones
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.kind.data)
        if self.body is not None:
            printer.print_string(" ")
            printer.print_attribute(self.body)
        for keyword, pairs in (("ins", self.reads()), ("outs", self.writes())):
            if pairs:
                printer.print_string(f" {keyword}(")
                printer.print_list(pairs, lambda p: (printer.print_operand(p[0]),
                                                     printer.print_string(f"[{p[1]}]")))
                printer.print_string(")")
        if self.waits:
            printer.print_string(" waits(")
            printer.print_list(self.waits, printer.print_operand)
            printer.print_string(")")
        if self.signal is not None:
            printer.print_string(" signal(")
            printer.print_operand(self.signal)
            printer.print_string(")")
        if self.attrs.data:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attrs.data)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)


# --------------------------------------------------------------------------- task kinds
#
# What a task of each kind means, and so what its regions must look like: the
# megakernel simulator runs ``graph.<kind>`` on the regions; the Triton descriptors and
# convert-task-to-mncore address the buffers directly and take the regions to be laid
# out as convert-graph-to-task tiles each kind. The verifier checks both here, so a task
# the targets would misread is an error at its position, not a crash or a wrong result.

_GRAPH_KINDS: dict[str, type[g.GraphOp]] = {
    op.name.removeprefix("graph."): op for op in g.Graph.operations  # type: ignore[misc]
    if issubclass(op, g.GraphOp) and op is not g.FusedOp}


def verify_kind(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """An ``elementwise`` task has a body and regions of one iteration space; a task
    named after a graph op is that op on its regions' shapes (operands, attributes,
    shapes), with regions laid out as the targets read them. Other kinds are left to
    the targets, which refuse them by name."""
    kind = task.kind.data
    if kind == "elementwise":
        if task.body is None:
            raise VerifyException('task.task "elementwise" needs a task.body')
        _verify_elementwise_regions(reads, writes)
        return
    if kind not in _GRAPH_KINDS:
        return  # a kind of its own: no target runs it, and each says so
    if task.body is not None:
        raise VerifyException(f"task.task {kind!r} takes no task.body (only 'elementwise' "
                              "tasks do)")
    error = _graph_op_error(kind, task.attrs,
                            tuple((v.type.element_type, r.sizes) for v, r in reads),  # type: ignore[attr-defined]
                            tuple((v.type.element_type, r.sizes) for v, r in writes))  # type: ignore[attr-defined]
    if error is not None:
        raise VerifyException(f"task.task {kind!r} is graph.{kind} on its regions' shapes, "
                              f"which is invalid: {error}")
    if kind in _TILED:
        _TILED[kind](task, reads, writes)
    elif kind in _WHOLE:
        for what, pairs in (("input", reads), ("output", writes)):
            for i, (value, tile) in enumerate(pairs):
                _need_whole(value, tile, range(len(tile.sizes)), f"{kind} {what} {i}",
                            "the targets run this kind over whole buffers")


RegionShape = tuple[Attribute, tuple[int, ...]]  # a region's element type and sizes


@functools.lru_cache(maxsize=1 << 12)
def _graph_op_error(kind: str, attrs: DictionaryAttr, ins: tuple[RegionShape, ...],
                    outs: tuple[RegionShape, ...]) -> str | None:
    """Why ``graph.<kind>`` with these properties on tensors of these regions does not
    verify (``None`` when it does); the tiles of one operator share one answer."""
    block = Block(arg_types=[TensorType(e, sizes) for e, sizes in ins])
    op = _GRAPH_KINDS[kind].create(operands=list(block.args), properties=dict(attrs.data),
                                   result_types=[TensorType(e, sizes) for e, sizes in outs])
    try:
        op.verify()
    except VerifyException as error:
        return str(error).strip()
    return None


def _need_whole(value: SSAValue, tile: Tile, dims: Iterable[int], what: str,
                why: str) -> None:
    shape = value.type.get_shape()  # type: ignore[attr-defined]
    for d in dims:
        if tile.offsets[d] != 0 or tile.sizes[d] != shape[d]:
            raise VerifyException(f"task.task {what}: region [{tile}] does not cover "
                                  f"dimension {d} of its buffer ({shape[d]}): {why}")


def _verify_elementwise_regions(reads: Accesses, writes: Accesses) -> None:
    """One iteration space, the first output's tile: every output tile has its sizes,
    every input region broadcasts to them (size 1 or equal, right-aligned)."""
    if not writes:
        raise VerifyException('task.task "elementwise" writes no output')
    space = writes[0][1].sizes
    for i, (_, tile) in enumerate(writes[1:], 1):
        if tile.sizes != space:
            raise VerifyException(f"task.task \"elementwise\": output {i} region [{tile}] "
                                  f"is not the size of output 0's ({'x'.join(map(str, space))})")
    for i, (_, region) in enumerate(reads):
        lead = len(space) - len(region.sizes)
        if lead < 0 or any(s not in (1, space[lead + d]) for d, s in enumerate(region.sizes)):
            raise VerifyException(
                f"task.task \"elementwise\": input {i} region [{region}] does not broadcast "
                f"to the output tile ({'x'.join(map(str, space))})")


def _dims(task: TaskOp, name: str, rank: int) -> list[int]:
    attr = task.attrs.data[name]
    values = attr.get_values() if isinstance(attr, DenseArrayBase) else [attr.value.data]  # type: ignore[attr-defined]
    return sorted(set(g.normalize_dims(values, rank)))  # type: ignore[arg-type]


def _matmul_regions(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """The kernels address one matrix per operand from its region's origin."""
    for what, pairs in (("input", reads), ("output", writes)):
        for i, (_, tile) in enumerate(pairs):
            if any(s != 1 for s in tile.sizes[:-2]):
                raise VerifyException(f"task.task \"matmul\" {what} {i}: region [{tile}] "
                                      "spans more than one matrix (leading sizes must be 1)")


def _reduction_regions(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """Reduced dimensions whole; each kept one is the output tile's."""
    ((value, region),) = reads
    ((_, tile),) = writes
    kind, rank = task.kind.data, len(region.sizes)
    dims = _dims(task, "dims", rank)
    _need_whole(value, region, dims, f"{kind} input 0", "a task reduces whole dimensions")
    keep = task.attrs.data.get("keepdim")
    keepdim = bool(keep.value.data) if isinstance(keep, IntegerAttr) else False
    kept = [d for d in range(rank) if keepdim or d not in dims]
    for i, d in enumerate(kept):
        if d not in dims and region.offsets[d] != tile.offsets[i]:
            raise VerifyException(
                f"task.task {kind!r}: input region [{region}] starts at {region.offsets[d]} in "
                f"dimension {d}, its output tile [{tile}] at {tile.offsets[i]}")


def _row_regions(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """Rows run whole along ``dim`` (layer norm: along the normalized dimensions)."""
    kind = task.kind.data
    pairs = reads if kind != "layer_norm" else reads[:1]
    rank = len(pairs[0][1].sizes)
    if kind == "layer_norm":
        k = task.attrs.data["normalized_dims"].value.data  # type: ignore[attr-defined]
        dims = list(range(rank - k, rank))
    else:
        dims = _dims(task, "dim", rank)
    for i, (value, tile) in enumerate([*pairs, *writes[:1]]):
        _need_whole(value, tile, dims, f"{kind} operand {i}", "a task holds whole rows")


def _slice_regions(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """``start`` counts from the buffer's first element along ``dim``."""
    ((value, region),) = reads
    _need_whole(value, region, _dims(task, "dim", len(region.sizes)), "slice input 0",
                "start and step index the whole dimension")


def _reshape_regions(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """Both regions are runs of consecutive elements: the task is a flat copy."""
    for what, (value, tile) in (("input", reads[0]), ("output", writes[0])):
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        first = next((d for d, s in enumerate(tile.sizes) if s != 1), len(shape))
        _need_whole(value, tile, range(first + 1, len(shape)), f"reshape {what} 0",
                    "a reshape task copies a run of consecutive elements")


def _embedding_regions(task: TaskOp, reads: Accesses, writes: Accesses) -> None:
    """The whole table; the rows of the output tile are those of its indices."""
    (weight, weight_tile), (_, index_tile) = reads
    ((out, tile),) = writes
    _need_whole(weight, weight_tile, range(2), "embedding input 0", "rows are looked up "
                "in the whole table")
    _need_whole(out, tile, [len(tile.sizes) - 1], "embedding output 0", "a task writes "
                "whole rows")
    if index_tile.offsets != tile.offsets[:-1]:
        raise VerifyException(f"task.task \"embedding\": index region [{index_tile}] is not "
                              f"at the rows of the output tile [{tile}]")


_TILED: dict[str, Callable[[TaskOp, Accesses, Accesses], None]] = {
    "matmul": _matmul_regions, "sum": _reduction_regions, "mean": _reduction_regions,
    "amax": _reduction_regions, "softmax": _row_regions, "log_softmax": _row_regions,
    "softmax_backward": _row_regions, "log_softmax_backward": _row_regions,
    "layer_norm": _row_regions, "slice": _slice_regions, "reshape": _reshape_regions,
    "embedding": _embedding_regions, "permute": lambda task, reads, writes: None,
}
"""Kinds convert-graph-to-task tiles, with what their regions must satisfy beyond
the graph op's shapes."""

_WHOLE = frozenset(kind for kind, op in _GRAPH_KINDS.items()
                   if kind not in _TILED and not op.has_trait(g.Elementwise))
"""Kinds the targets run over whole buffers only (convolutions, gathers, ...)."""


@irdl_op_definition
class BodyOp(IRDLOperation):
    """The scalar computation of elementwise tasks: ``task.body @name(%a: tensor<f32>,
    ...) { graph ops on 0-d tensors; task.yield ... }``."""

    name = "task.body"
    sym_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (SymbolOpInterface(), IsolatedFromAbove(),
                                      HasParent(KernelOp), TASK_TYPES))

    def __init__(self, name: str, body: Region) -> None:
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @property
    def arg_types(self) -> list[Attribute]:
        return [a.type for a in self.body.block.args]

    @property
    def yield_types(self) -> list[Attribute]:
        last = self.body.block.last_op
        return [v.type for v in last.values] if isinstance(last, YieldOp) else []

    @classmethod
    def parse(cls, parser: Parser) -> BodyOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, parser.parse_region(args))  # type: ignore[arg-type]
        if attrs:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data}(")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_(self) -> None:
        for typ in [*self.arg_types, *self.yield_types]:
            if not isinstance(typ, TensorType) or typ.get_shape():
                raise VerifyException(f"task.body @{self.sym_name.data} works on 0-d tensors, "
                                      f"not {typ}")
        if not isinstance(self.body.block.last_op, YieldOp):
            raise VerifyException(f"task.body @{self.sym_name.data} must end with task.yield")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a task body with the values of one point of each output."""

    name = "task.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(BodyOp)))
    assembly_format = "$values attr-dict `:` type($values)"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "task.return"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(KernelOp)))
    assembly_format = "attr-dict"


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A megakernel: arguments are its inputs then its outputs (written in place)."""

    name = "task.kernel"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove(), TASK_TYPES)

    def __init__(self, name: str, inputs: Sequence[MemRefType], outputs: Sequence[MemRefType],
                 body: Region) -> None:
        super().__init__(properties={
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(list(inputs), list(outputs)),
        }, regions=[body])

    @property
    def inputs(self) -> Sequence[SSAValue]:
        return self.body.block.args[: len(self.function_type.inputs.data)]

    @property
    def outputs(self) -> Sequence[SSAValue]:
        return self.body.block.args[len(self.function_type.inputs.data):]

    def tasks(self) -> list[TaskOp]:
        return [op for op in self.body.block.ops if isinstance(op, TaskOp)]

    def bodies(self) -> dict[str, BodyOp]:
        return {op.sym_name.data: op for op in self.body.block.ops if isinstance(op, BodyOp)}

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        ins = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        parser.parse_punctuation("->")
        outs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([*ins, *outs])
        op = cls(name, [a.type for a in ins], [a.type for a in outs], body)  # type: ignore[misc]
        if attrs:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data}(")
        printer.print_list(self.inputs, printer.print_block_argument)
        printer.print_string(") -> (")
        printer.print_list(self.outputs, printer.print_block_argument)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_(self) -> None:
        block = self.body.block
        types = [*self.function_type.inputs.data, *self.function_type.outputs.data]
        if [a.type for a in block.args] != types:
            raise VerifyException("task.kernel block arguments must be its inputs then its "
                                  "outputs")
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException("task.kernel must end with task.return")
        bodies = self.bodies()
        for body in bodies.values():  # before the tasks that use them
            try:
                body.verify_()
            except VerifyException as error:
                raise OpVerifyException(body, str(error)) from None
        tasks = self.tasks()
        try:
            self._verify_bodies_used(tasks, bodies)
            self._verify_events(tasks)
            self._verify_outputs_written_once(tasks)
        except Exception:
            # These checks read the tasks' regions and events, which each task verifies
            # on its own (xDSL verifies the ops in a kernel before it; the parser, in
            # source order, after it): verifying every task here too would double the
            # cost of a valid kernel, so an invalid task is looked for only now, and its
            # own error, at its position, explains the failure best.
            self._verify_tasks(tasks)
            raise

    @staticmethod
    def _verify_tasks(tasks: Sequence[TaskOp]) -> None:
        for task in tasks:
            try:
                task.verify_()
            except VerifyException as error:
                raise OpVerifyException(task, str(error)) from None

    @staticmethod
    def _verify_bodies_used(tasks: Sequence[TaskOp], bodies: dict[str, BodyOp]) -> None:
        """Each body use is checked once per combination of body and element types:
        the tiles of one operator share both."""
        checked: dict[tuple[str, tuple[Attribute, ...], tuple[Attribute, ...]], str | None] = {}
        for task in tasks:
            if task.body is None:
                continue
            groups = task.operand_groups()
            key = (task.body.root_reference.data,
                   tuple(v.type.element_type for v in groups.ins),  # type: ignore[attr-defined]
                   tuple(v.type.element_type for v in groups.outs))  # type: ignore[attr-defined]
            if key not in checked:
                checked[key] = _body_use_error(bodies, *key)
            error = checked[key]
            if error is not None:
                raise OpVerifyException(task, error)

    def _verify_events(self, tasks: Sequence[TaskOp]) -> None:
        """Trigger counts equal signal counts; waits follow every signaller."""
        signals: dict[SSAValue, int] = {}
        last_signaller: dict[SSAValue, int] = {}
        groups = [task.operand_groups() for task in tasks]
        for index, group in enumerate(groups):
            signal = group.signal
            if signal is not None:
                signals[signal] = signals.get(signal, 0) + 1
                last_signaller[signal] = index
        for op in self.body.block.ops:
            if isinstance(op, EventOp):
                want, got = op.triggers.value.data, signals.get(op.result, 0)
                if want != got:
                    raise OpVerifyException(op, f"event has trigger count {want} but {got} "
                                                "tasks signal it")
        for index, (task, group) in enumerate(zip(tasks, groups, strict=True)):
            for event in group.waits:
                last = last_signaller.get(event)
                if last is not None and last >= index:
                    who = "it signals itself" if last == index else f"task {last} signals"
                    raise OpVerifyException(
                        task, f"task {index} ({task.kind.data}) waits on an event that {who}: "
                        "tasks must be in a topological order")

    def _verify_outputs_written_once(self, tasks: Sequence[TaskOp]) -> None:
        """Every element of every kernel output is written by exactly one task."""
        tiles: dict[SSAValue, list[Tile]] = {out: [] for out in self.outputs}
        for task in tasks:
            for value, tile in task.writes():
                if value in tiles:
                    tiles[value].append(tile)
        for i, (out, written) in enumerate(tiles.items()):
            shape = tuple(out.type.get_shape())  # type: ignore[attr-defined]
            if not covered_once(shape, written):
                where, count = first_miscounted(shape, written)
                raise VerifyException(
                    f"output {i} of task.kernel @{self.sym_name.data}: element {list(where)} "
                    f"is written by {count} tasks, not exactly one")


def _body_use_error(bodies: dict[str, BodyOp], name: str, ins: Sequence[Attribute],
                    outs: Sequence[Attribute]) -> str | None:
    """Why a task with buffers of element types ``ins`` and ``outs`` cannot use body
    ``@name``: a body takes one 0-d tensor per input and yields one per output, of the
    buffers' element types (``None`` when it can)."""
    body = bodies.get(name)
    if body is None:
        return f"task.task refers to @{name}, which is no task.body of this kernel"
    for what, elements, types in (("takes", ins, body.arg_types),
                                  ("yields", outs, body.yield_types)):
        wanted = [TensorType(e, []) for e in elements]
        if list(types) != wanted:
            return (f"task.body @{name} {what} ({', '.join(map(str, types))}) but the task "
                    f"needs ({', '.join(map(str, wanted))})")
    return None


def covered_once(shape: Sequence[int], tiles: Sequence[Tile]) -> bool:
    """Whether ``tiles`` (inside ``shape``) cover each element exactly once: they are
    pairwise disjoint and their sizes add up to the buffer's. Memory and time go with
    the number of tiles, not of elements: the tiles of a tiling cut the buffer into
    about as many cells (a cell per combination of their edges), counted at once;
    scattered tiles that would cut it into many more are swept instead."""
    if sum(math.prod(t.sizes) for t in tiles) != math.prod(shape):
        return False
    if not shape or len(tiles) < 2:
        return True
    starts, ends = _boxes(tiles, len(shape))
    cuts = _cuts(shape, starts, ends)
    if math.prod(len(c) for c in cuts) <= _CELLS_PER_TILE * len(tiles):
        return bool((_cell_counts(cuts, starts, ends) == 1).all())
    return not _any_overlap(starts, ends)


_CELLS_PER_TILE = 8
"""Tiles whose edges cut a buffer into at most this many cells per tile are counted
cell by cell (vectorised); others are swept (a loop over the tiles)."""


def _boxes(tiles: Sequence[Tile], rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiles' first and one-past-last corners, one row per tile."""
    starts = np.array([t.offsets for t in tiles], np.int64).reshape(len(tiles), rank)
    return starts, starts + np.array([t.sizes for t in tiles], np.int64).reshape(len(tiles), rank)


def _cuts(shape: Sequence[int], starts: np.ndarray, ends: np.ndarray) -> list[np.ndarray]:
    """Per dimension, the sorted distinct edges of the tiles and of the buffer."""
    return [np.unique(np.concatenate(([0, n], starts[:, d], ends[:, d])))
            for d, n in enumerate(shape)]


def _cell_counts(cuts: Sequence[np.ndarray], starts: np.ndarray, ends: np.ndarray
                 ) -> np.ndarray:
    """How many tiles cover each cell of the grid that ``cuts`` make: each tile adds
    +-1 at the corners of its box in a difference array, whose prefix sums along every
    dimension are the counts."""
    dims = [len(c) for c in cuts]
    low = [np.searchsorted(c, starts[:, d]) for d, c in enumerate(cuts)]
    high = [np.searchsorted(c, ends[:, d]) for d, c in enumerate(cuts)]
    counts = np.zeros(math.prod(dims), np.int64)
    for corner in itertools.product((False, True), repeat=len(dims)):
        at = np.ravel_multi_index([high[d] if upper else low[d]
                                   for d, upper in enumerate(corner)], dims)
        counts += (-1) ** sum(corner) * np.bincount(at, minlength=counts.size)
    grid = counts.reshape(dims)
    for axis in range(len(dims)):
        grid = np.cumsum(grid, axis=axis)
    return grid[tuple(slice(0, n - 1) for n in dims)]


def _any_overlap(starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether two boxes ``[starts, ends)`` share an element: a sweep along the dimension
    where the boxes start at the most places, each box compared (all dimensions at once)
    with the boxes still open where it starts."""
    sweep = max(range(starts.shape[1]), key=lambda d: len(np.unique(starts[:, d])))
    open_ = np.empty(0, np.int64)
    for i in np.argsort(starts[:, sweep], kind="stable"):
        open_ = open_[ends[open_, sweep] > starts[i, sweep]]
        if ((starts[open_] < ends[i]) & (starts[i] < ends[open_])).all(axis=1).any():
            return True
        open_ = np.append(open_, i)
    return False


def first_miscounted(shape: Sequence[int], tiles: Sequence[Tile]
                     ) -> tuple[tuple[int, ...], int]:
    """The first element (row-major) not written exactly once and how many tiles write
    it, counted on the grid the tiles' edges cut the buffer into (an element's count is
    its cell's, and a cell's first element is the first of its count). Only for the
    diagnosis: the grid has a cell per combination of edges, not per element."""
    rank = len(shape)
    if not rank:
        return (), len(tiles)
    starts, ends = _boxes(tiles, rank)
    cuts = _cuts(shape, starts, ends)
    cells = _cell_counts(cuts, starts, ends)
    cell = tuple(int(x) for x in np.argwhere(cells != 1)[0])
    return tuple(int(c[x]) for c, x in zip(cuts, cell, strict=True)), int(cells[cell])


Task = Dialect("task", [KernelOp, BodyOp, BufferOp, ConstantOp, EventOp, TaskOp, YieldOp,
                       ReturnOp], [EventType])


def find_kernel(module: ModuleOp, name: str | None = None) -> KernelOp:
    """The kernel ``name``, or the module's only (or ``main``) one."""
    return find_function(module, name, KernelOp)


def predecessors(kernel: KernelOp) -> list[list[int]]:
    """For each task, the tasks it waits for (the signallers of the events it waits on)."""
    tasks = kernel.tasks()
    signallers: dict[SSAValue, list[int]] = {}
    for index, task in enumerate(tasks):
        if task.signal is not None:
            signallers.setdefault(task.signal, []).append(index)
    return [sorted({p for e in task.waits for p in signallers.get(e, ())}) for task in tasks]


def computation(task: TaskOp, bodies: Mapping[str, BodyOp]) -> g.GraphOp | BodyOp | None:
    """What ``task`` computes, typed: its pointwise ``BodyOp`` (applied at every point of
    its output tiles), or the graph op it applies to its regions (operands typed as its
    input regions, results as its output regions; shared by the tasks of one operator and
    not to be modified), or ``None`` for a kind no target runs. Targets dispatch on this,
    never on a name."""
    kind = task.kind.data
    if kind == "elementwise":
        assert task.body is not None
        return bodies[task.body.root_reference.data]
    if kind not in _GRAPH_KINDS:
        return None
    groups = task.operand_groups()
    in_tiles, out_tiles = task.in_tiles.data, task.out_tiles.data
    return _tile_op(kind, task.attrs,
                    tuple((_element_type(v), Tile.of(a).sizes)
                          for v, a in zip(groups.ins, in_tiles, strict=True)),
                    tuple((_element_type(v), Tile.of(a).sizes)
                          for v, a in zip(groups.outs, out_tiles, strict=True)))


def task_label(task: TaskOp) -> str:
    """A short name for traces, graphs and messages (never compared)."""
    return task.kind.data


def _element_type(value: SSAValue) -> Attribute:
    typ = value.type
    assert isinstance(typ, MemRefType)
    return typ.get_element_type()


@functools.lru_cache(maxsize=1 << 12)
def _tile_op(kind: str, attrs: DictionaryAttr, ins: tuple[RegionShape, ...],
             outs: tuple[RegionShape, ...]) -> g.GraphOp:
    block = Block(arg_types=[TensorType(e, sizes) for e, sizes in ins])
    op = _GRAPH_KINDS[kind].create(operands=list(block.args), properties=dict(attrs.data),
                                   result_types=[TensorType(e, sizes) for e, sizes in outs])
    block.add_op(op)
    return op
