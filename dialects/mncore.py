"""The ``mncore`` dialect: a static program for an MN-Core-like machine.

A ``mncore.program`` is bound to a machine (``dialects/mncore_machines.py``) and is one
straight-line instruction stream: every instruction names the step (VLIW bundle) that
issues it and its slot — ALU, MAU (matrix unit), L1 transfer, L2 transfer, DMA or
control — and reads and writes words of the memories through ``#mncore.ref``s such as
``lm0[16]`` (PE memories ``lm0``, ``lm1``, ``grf0``, ``grf1``; block memories ``l1bm``,
``l2bm``; ``dram``; ``fwd`` is the previous step's ALU/MAU result). All PEs run the
same instruction (SIMD); a step covers 4 cycles, so PE operands are 4 words.

    mncore.program @p machine "tiny" {
      mncore.tensor @x input dram[0] : tensor<4xf32>
      mncore.tensor @y output dram[64] : tensor<4xf32>
      mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
      mncore.wait 1 tag 1
      mncore.l2 2 "bcast" l2bm[0] -> l1bm[0] words 4
      mncore.l1 6 "bcast" l1bm[0] -> lm0[0]
      mncore.alu 9 "fadd" lm0[0], grf0[0] -> lm1[0]
      mncore.l1 12 "gather" lm1[0] -> l1bm[16]
      ...
    }

The program's verifier applies the rules an assembler would: one instruction per slot
per step, steps in order, operands in the spaces their slot can reach and inside the
machine's memories, and the port rules (an LM is read *or* written in a step and not
read for two steps after a write; a GRF is read once and written once per step; ``fwd``
only right after an ALU or MAU result). Timing hazards — reading a value before it is
ready, using DMA data before its wait — are the cycle simulator's to detect.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import ClassVar, NoReturn

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

from mncore_ir.dialects.diagnostics import OpVerifyException
from mncore_ir.dialects.element_types import (
    MNCORE_ELEMENT_TYPES,
    SupportedElementTypes,
    print_dense,
)
from mncore_ir.dialects.mncore_isa import ALU, MAU
from mncore_ir.dialects.mncore_machines import MACHINES, PE_SPACES, SPACES, Machine

#: A word is an f32 and holds integers and booleans exactly up to this magnitude; f64
#: has no word form.
EXACT_INTEGERS = 2**24
MNCORE_TYPES = SupportedElementTypes("mncore", MNCORE_ELEMENT_TYPES, static_shapes=True)


@irdl_attr_definition
class RefAttr(ParametrizedAttribute):
    """A word address in a memory space: ``#mncore.ref<lm0[16]>``, written ``lm0[16]``
    in instructions."""

    name = "mncore.ref"
    space: StringAttr = param_def()
    address: IntAttr = param_def()

    def __init__(self, space: str, address: int) -> None:
        super().__init__(StringAttr(space), IntAttr(address))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        space, address = parse_ref(parser)
        parser.parse_punctuation(">")
        return (StringAttr(space), IntAttr(address))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self}>")

    def __str__(self) -> str:
        return f"{self.space.data}[{self.address.data}]"


@functools.lru_cache(maxsize=1 << 16)
def ref(space: str, address: int) -> RefAttr:
    """``space[address]``, shared: attributes are immutable, and programs name the same
    words over and over."""
    return RefAttr(space, address)


@functools.lru_cache(maxsize=1 << 16)
def i64_attr(value: int) -> IntegerAttr:
    """An i64 attribute, shared (steps, sizes, tags)."""
    return IntegerAttr(value, i64)


@functools.lru_cache(maxsize=256)
def _kind(kind: str) -> StringAttr:
    return StringAttr(kind)


def parse_i64(parser: AttrParser, allow_negative: bool = False) -> int:
    """An integer that an i64 property holds, refused where it stands otherwise (it
    failed as an internal error when the property was built: found by the fuzzer)."""
    pos = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=allow_negative)
    if not -(1 << 63) <= value < 1 << 63:
        parser.raise_error(f"{value} does not fit in 64 bits", pos, parser.pos)
    return value


def parse_ref(parser: AttrParser) -> tuple[str, int]:
    pos = parser.pos
    space = parser.parse_identifier(context_msg=": a memory space")
    if space not in (*SPACES, "fwd"):
        parser.raise_error(f"unknown memory space {space!r}; spaces: "
                           f"{', '.join((*SPACES, 'fwd'))}", pos, parser.pos)
    parser.parse_punctuation("[")
    address = parse_i64(parser)
    parser.parse_punctuation("]")
    return space, address


def parse_strided_ref(parser: AttrParser) -> tuple[RefAttr, int]:
    """``space[address]`` or, in a ``mncore.repeat``, ``space[address + N * i]``: the
    word ``address + N i`` in iteration ``i``."""
    pos = parser.pos
    space = parser.parse_identifier(context_msg=": a memory space")
    if space not in (*SPACES, "fwd"):
        parser.raise_error(f"unknown memory space {space!r}; spaces: "
                           f"{', '.join((*SPACES, 'fwd'))}", pos, parser.pos)
    parser.parse_punctuation("[")
    address = parse_i64(parser)
    stride = 0
    if parser.parse_optional_punctuation("+") is not None:
        stride = parse_i64(parser)
        parser.parse_punctuation("*")
        parser.parse_keyword("i", ": the iteration (a stride is N * i)")
    parser.parse_punctuation("]")
    return ref(space, address), stride


def _strided(reference: RefAttr, stride: int) -> str:
    return f"{reference.space.data}[{reference.address.data} + {stride} * i]" if stride \
        else str(reference)


# --------------------------------------------------------------------------- instructions


class InstructionOp(IRDLOperation):
    """One instruction: ``mncore.<slot> STEP "KIND" SRC, ... -> DST (mask REF)? (words N)?
    (lanes N)? (run N stride N)? (rows N pitch N)? (l2b N)? (tag N)?``."""

    SLOT: ClassVar[str]
    KINDS: ClassVar[tuple[str, ...]]
    step = prop_def(IntegerAttr[I64])
    kind = prop_def(StringAttr)
    srcs = prop_def(ArrayAttr[RefAttr], default_value=ArrayAttr([]))
    dst = opt_prop_def(RefAttr)
    mask = opt_prop_def(RefAttr)
    words = opt_prop_def(IntegerAttr[I64])
    lanes = opt_prop_def(IntegerAttr[I64])
    run = opt_prop_def(IntegerAttr[I64])
    stride = opt_prop_def(IntegerAttr[I64])
    rows = opt_prop_def(IntegerAttr[I64])
    pitch = opt_prop_def(IntegerAttr[I64])
    l2b = opt_prop_def(IntegerAttr[I64])
    tag = opt_prop_def(IntegerAttr[I64])
    strides = opt_prop_def(DenseArrayBase)
    """In a ``mncore.repeat``: how far each reference (sources, destination, mask)
    advances per iteration."""
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp, RepeatOp),))

    NUMBERS: ClassVar[tuple[str, ...]] = ("words", "lanes", "run", "stride", "rows", "pitch",
                                          "l2b", "tag")

    def __init__(self, step: int, kind: str, srcs: Sequence[RefAttr] = (),
                 dst: RefAttr | None = None, words: int | None = None,
                 tag: int | None = None, run: int | None = None,
                 stride: int | None = None, l2b: int | None = None,
                 mask: RefAttr | None = None, strides: Sequence[int] | None = None,
                 rows: int | None = None, pitch: int | None = None,
                 lanes: int | None = None) -> None:
        props: dict[str, Attribute] = {"step": i64_attr(step), "kind": _kind(kind),
                                       "srcs": ArrayAttr(tuple(srcs))}
        if dst is not None:
            props["dst"] = dst
        if mask is not None:
            props["mask"] = mask
        for name, value in (("words", words), ("lanes", lanes), ("run", run), ("stride", stride),
                            ("rows", rows), ("pitch", pitch), ("l2b", l2b), ("tag", tag)):
            if value is not None:
                props[name] = i64_attr(value)
        if strides is not None and any(strides):
            props["strides"] = DenseArrayBase.from_list(i64, tuple(strides))
        # built as ``create`` builds (the properties are well typed by construction):
        # programs hold millions of instructions; the verifier still checks each
        Operation.__init__(self, properties=props)

    @property
    def at(self) -> int:
        return self.step.value.data

    @property
    def count(self) -> int:
        return self.words.value.data if self.words is not None else 4

    def refs(self) -> list[RefAttr]:
        """The sources, the destination and the mask, in that order."""
        return [*self.srcs.data, *(r for r in (self.dst, self.mask) if r is not None)]

    def ref_strides(self) -> tuple[int, ...]:
        """Per reference of :meth:`refs`, its advance per iteration of a repeat."""
        if self.strides is None:
            return (0,) * len(self.refs())
        return tuple(int(v) for v in self.strides.get_values())

    def strided_operands(self, machine: Machine) -> tuple[list[Span], list[Span]]:
        """:meth:`operands_of` as (space, first word, words, stride) in iteration 0 (the
        sources then the mask are read, the destination written)."""
        reads, writes = self.operands_of(machine)
        strides = self.ref_strides()
        n = len(self.srcs.data)
        read_strides = [*strides[:n], *strides[n + 1:]] if self.strides is not None else \
            [0] * len(reads)
        write_strides = [strides[n]] if self.strides is not None else [0] * len(writes)
        return ([(r.space.data, r.address.data, k, st) for (r, k), st in
                 zip(reads, read_strides, strict=True)],
                [(r.space.data, r.address.data, k, st) for (r, k), st in
                 zip(writes, write_strides, strict=True)])

    def iteration(self, step: int, i: int) -> InstructionOp:
        """A copy, outside any repeat, as issued at ``step`` by iteration ``i``."""
        strides = self.ref_strides()
        shifted = [ref(r.space.data, r.address.data + i * s) if s else r
                   for r, s in zip(self.refs(), strides, strict=True)]
        n = len(self.srcs.data)
        dst = shifted[n] if self.dst is not None else None
        mask = shifted[-1] if self.mask is not None else None
        numbers = {name: getattr(self, name).value.data for name in self.NUMBERS
                   if getattr(self, name) is not None}
        return type(self)(step, self.kind.data, shifted[:n], dst, mask=mask, **numbers)

    @classmethod
    def parse(cls, parser: Parser) -> InstructionOp:
        step = parse_i64(parser)
        kind = parser.parse_optional_str_literal() or ""
        srcs: list[RefAttr] = []
        dst = None
        strides: list[int] = []

        def strided() -> RefAttr:
            reference, stride = parse_strided_ref(parser)
            strides.append(stride)
            return reference

        token = parser._current_token  # a source starts with a memory space's name
        if (token.kind == MLIRTokenKind.BARE_IDENT and token.text not in cls.NUMBERS
                and "." not in token.text):
            srcs = parser.parse_comma_separated_list(Parser.Delimiter.NONE, strided)
        mask = None
        if parser.parse_optional_punctuation("->") is not None:
            dst = strided()
            if parser.parse_optional_keyword("mask") is not None:
                mask = strided()
        numbers: dict[str, int] = {}
        for name in cls.NUMBERS:
            if parser.parse_optional_keyword(name) is not None:
                numbers[name] = parse_i64(parser)
        op = cls(step, kind, srcs, dst, mask=mask, strides=strides, **numbers)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.at}")
        if self.kind.data:
            printer.print_string(" ")
            printer.print_string_literal(self.kind.data)
        refs = [_strided(r, s) for r, s in zip(self.refs(), self.ref_strides(), strict=True)]
        n = len(self.srcs.data)
        if n:
            printer.print_string(" " + ", ".join(refs[:n]))
        if self.dst is not None:
            printer.print_string(f" -> {refs[n]}")
        if self.mask is not None:
            printer.print_string(f" mask {refs[-1]}")
        for name in self.NUMBERS:
            value = getattr(self, name)
            if value is not None:
                printer.print_string(f" {name} {value.value.data}")
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)

    USES: ClassVar[tuple[str, ...]] = ()
    """Which of ``words``, ``lanes``, ``run``, ``stride``, ``rows``, ``pitch``, ``l2b`` and
    ``tag`` the instruction takes."""

    def verify_(self) -> None:
        if self.kind.data not in self.KINDS:
            raise VerifyException(f"{self.name} has no kind {self.kind.data!r}; kinds: "
                                  f"{', '.join(self.KINDS) or 'none (no kind)'}")
        for name in ("step", *self.NUMBERS):
            value = getattr(self, name)
            if value is not None and name != "step" and name not in self.USES:
                raise VerifyException(f"{self.name} takes no {name}")
            if value is not None and value.value.data < 0:  # word lists run upward
                raise VerifyException(f"{self.name}: {name} {value.value.data} is negative")
        if self.mask is not None and not isinstance(self, AluOp):
            raise VerifyException(f"{self.name} takes no mask (only mncore.alu does)")
        if self.words is not None and self.words.value.data < 1:
            raise VerifyException(f"{self.name} moves at least 1 word")
        if self.strides is not None:
            values = self.strides.get_values()
            if not isinstance(self.parent_op(), RepeatOp):
                raise VerifyException(f"{self.name} has strides only in an mncore.repeat")
            if len(values) != len(self.refs()) or any(not isinstance(v, int) or v < 0
                                                      for v in values):
                raise VerifyException(f"{self.name}: strides are one non-negative integer "
                                      "per reference (sources, destination, mask)")

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        """(reads, writes) as (reference, words) pairs on ``machine``."""
        raise NotImplementedError

    def destination(self) -> RefAttr:
        """The destination of an instruction whose kind writes one (the verifier checks
        it is there)."""
        assert self.dst is not None, f"{self.name} has no destination"
        return self.dst

    def tag_number(self) -> int:
        """The tag of a DMA or a wait (the verifier checks it is there)."""
        assert self.tag is not None, f"{self.name} has no tag"
        return self.tag.value.data


Accesses = list[tuple[RefAttr, int]]  # (reference, words) pairs
Span = tuple[str, int, int, int]  # space, first word, words, stride per iteration
Issue = tuple[int, "InstructionOp", int | None, list[Span], list[Span]]
"""(step, instruction, iteration of its repeated group or None, reads, writes)."""


_NUMBER_PROPERTIES = frozenset(("step", *InstructionOp.NUMBERS))


def _well_formed(op: InstructionOp) -> bool:
    """What IRDL's generic verifier checks of an instruction (no operands, results or
    regions; its properties and their types; a ``mncore.program`` parent), as a few
    type tests: it costs ~20 us an op, and programs hold a million instructions."""
    if op.operands or op.results or op.regions or op.successors:
        return False
    props = op.properties
    if "step" not in props or "kind" not in props or "srcs" not in props:
        return False
    for name, value in props.items():
        if name in _NUMBER_PROPERTIES:
            if type(value) is not IntegerAttr or value.type != i64:
                return False
        elif name in ("dst", "mask"):
            if type(value) is not RefAttr:
                return False
        elif name == "kind":
            if type(value) is not StringAttr:
                return False
        elif name == "strides":
            if type(value) is not DenseArrayBase:
                return False
        elif name != "srcs" or type(value) is not ArrayAttr or any(
                type(ref) is not RefAttr for ref in value.data):
            return False
    return isinstance(op.parent_op(), ProgramOp | RepeatOp)


def instruction_definition(cls: type[InstructionOp]) -> type[InstructionOp]:
    """``irdl_op_definition`` whose generic verification runs only when
    :func:`_well_formed` finds something off (then it raises its own message)."""
    checks = cls.verify_
    op_class = irdl_op_definition(cls)
    op_def = op_class.get_irdl_definition()  # its one trait: HasParent(ProgramOp)

    def verify_(self: InstructionOp) -> None:
        if not _well_formed(self):
            op_def.verify(self)
        checks(self)

    op_class.verify_ = verify_  # type: ignore[method-assign]
    return op_class


def _spaces(ref: RefAttr, allowed: Sequence[str], what: str, op: InstructionOp) -> None:
    if ref.space.data not in allowed:
        raise VerifyException(f"{op.name} {op.kind.data!r}: {what} must be in "
                              f"{'/'.join(allowed)}, not {ref.space.data}")


@instruction_definition
class AluOp(InstructionOp):
    """Elementwise on 4 words per PE: ``dst = kind(srcs...)``. Comparisons write 1.0 or
    0.0; ``fsel c, a, b`` is ``c != 0 ? a : b``. With ``mask REF`` only the words whose
    mask word is not zero are written (a per-PE, per-word write mask)."""

    name = "mncore.alu"
    SLOT: ClassVar[str] = "alu"
    KINDS: ClassVar[tuple[str, ...]] = tuple(ALU)

    def verify_(self) -> None:
        super().verify_()
        want = ALU[self.kind.data].arity
        if len(self.srcs.data) != want or self.dst is None:
            raise VerifyException(f"mncore.alu {self.kind.data!r} takes {want} sources and "
                                  "a destination")
        for ref in self.srcs.data:
            _spaces(ref, (*PE_SPACES, "fwd"), "sources", self)
        _spaces(self.dst, PE_SPACES, "the destination", self)
        if self.mask is not None:
            _spaces(self.mask, PE_SPACES, "the mask", self)

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        """The mask, if any, is read after the sources."""
        masks = [(self.mask, 4)] if self.mask is not None else []
        return [(r, 4) for r in self.srcs.data] + masks, [(self.destination(), 4)]


@instruction_definition
class MauOp(InstructionOp):
    """Matrix unit, per PE, with A the 4x4 row-major matrix at the first source:
    ``mma``: ``dst(4) = A . b + c``; ``vmm``: ``dst(4) = b . A + c``."""

    name = "mncore.mau"
    SLOT: ClassVar[str] = "mau"
    KINDS: ClassVar[tuple[str, ...]] = tuple(MAU)

    def verify_(self) -> None:
        super().verify_()
        if len(self.srcs.data) != MAU[self.kind.data].arity or self.dst is None:
            raise VerifyException(f"mncore.mau {self.kind.data!r} takes a matrix, a vector "
                                  "and an addend and a destination")
        for ref in self.srcs.data:
            _spaces(ref, (*PE_SPACES, "fwd"), "sources", self)
        if self.srcs.data[0].space.data == "fwd":
            raise VerifyException("mncore.mau: the matrix cannot be forwarded")
        _spaces(self.dst, PE_SPACES, "the destination", self)

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        a, b, c = self.srcs.data
        return [(a, 16), (b, 4), (c, 4)], [(self.destination(), 4)]


@instruction_definition
class L1Op(InstructionOp):
    """L1BM <-> the PEs of each L1B: ``bcast`` (the same 4 words to every PE),
    ``scatter`` (4 words per PE, PE-major), ``gather`` (inverse) and ``reduce`` (sum
    over the PEs of the block into 4 words)."""

    name = "mncore.l1"
    SLOT: ClassVar[str] = "l1"
    KINDS: ClassVar[tuple[str, ...]] = ("bcast", "scatter", "gather", "reduce")

    def verify_(self) -> None:
        super().verify_()
        if len(self.srcs.data) != 1 or self.dst is None:
            raise VerifyException("mncore.l1 takes one source and a destination")
        inward = self.kind.data in ("bcast", "scatter")
        _spaces(self.srcs.data[0], ("l1bm",) if inward else PE_SPACES, "the source", self)
        _spaces(self.dst, PE_SPACES if inward else ("l1bm",), "the destination", self)

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        block = 4 * machine.pes_per_l1b if self.kind.data in ("scatter", "gather") else 4
        (src,) = self.srcs.data
        if self.kind.data in ("bcast", "scatter"):
            return [(src, block)], [(self.destination(), 4)]
        return [(src, 4)], [(self.destination(), block)]


@instruction_definition
class L2Op(InstructionOp):
    """L2BM <-> the L1BMs of each L2B, ``words`` per L1BM: ``bcast``, ``scatter``,
    ``gather``, ``reduce`` (sum over the L1BMs). A scatter with ``lanes N`` says that
    only its first ``N`` source words carry data, counted over the L2Bs' copies in turn
    (each copy's ``words`` x L1Bs), or, ``N`` no more than one copy's, the first ``N``
    of every copy (a wave that every L2B repeats): the other words may hold anything,
    and the program never moves what the scatter makes of them into a lane that
    matters. It changes no value; ``mncore-forward-stores`` may then read other
    words in their place."""

    name = "mncore.l2"
    SLOT: ClassVar[str] = "l2"
    USES: ClassVar[tuple[str, ...]] = ("words", "lanes")
    KINDS: ClassVar[tuple[str, ...]] = ("bcast", "scatter", "gather", "reduce")

    def verify_(self) -> None:
        super().verify_()
        if len(self.srcs.data) != 1 or self.dst is None or self.words is None:
            raise VerifyException("mncore.l2 takes one source, a destination and words")
        if self.lanes is not None and self.kind.data != "scatter":
            raise VerifyException("mncore.l2: only a scatter takes lanes")
        if self.lanes is not None and self.lanes.value.data < 1:
            raise VerifyException("mncore.l2: a scatter's lanes are at least 1")
        inward = self.kind.data in ("bcast", "scatter")
        _spaces(self.srcs.data[0], ("l2bm",) if inward else ("l1bm",), "the source", self)
        _spaces(self.dst, ("l1bm",) if inward else ("l2bm",), "the destination", self)

    def live(self, machine: Machine) -> np.ndarray | None:
        """Which source words carry data (``lanes``), per word of a copy and L2B; None
        when all do."""
        if self.lanes is None:
            return None
        per, n = self.count * machine.l1b_per_l2b, self.lanes.value.data
        index = np.arange(per)[:, None]
        if n <= per:
            return np.broadcast_to(index < n, (per, machine.l2bs))
        return index + per * np.arange(machine.l2bs)[None, :] < n

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        n = self.count
        block = n * machine.l1b_per_l2b if self.kind.data in ("scatter", "gather") else n
        (src,) = self.srcs.data
        if self.kind.data in ("bcast", "scatter"):
            return [(src, block)], [(self.destination(), n)]
        return [(src, n)], [(self.destination(), block)]


def dram_extent(words: int, run: int | None, stride: int | None, rows: int | None,
                pitch: int | None) -> int:
    """The DRAM words from the first a DMA of these numbers touches to the last."""
    per = words // (rows or 1)
    row = per if run is None or stride is None else stride * (per // run - 1) + run
    return (pitch or 0) * ((rows or 1) - 1) + row


@instruction_definition
class DmaOp(InstructionOp):
    """Asynchronous DRAM <-> L2BM transfer of ``words`` (``load`` broadcasts to every
    L2BM, ``store`` writes L2B 0's words), finished when ``mncore.wait`` on its tag
    returns. ``l2b N`` loads into L2B ``N`` only, or stores from it. With ``run R
    stride S`` the DRAM side is strided: runs of ``R`` words, ``S``
    words apart (a 2-D descriptor; a load may repeat words with a shorter stride, even
    0); with ``rows N pitch P`` as well (or alone: each row one run), the words are
    ``N`` rows of ``words / N``, each laid out so, row ``k`` starting ``k P`` words
    after the first (a 3-D descriptor: a window's rows, a transposed block); the L2BM
    side is always contiguous."""

    name = "mncore.dma"
    SLOT: ClassVar[str] = "dma"
    USES: ClassVar[tuple[str, ...]] = ("words", "run", "stride", "rows", "pitch", "l2b",
                                       "tag")
    KINDS: ClassVar[tuple[str, ...]] = ("load", "store")

    def verify_(self) -> None:
        super().verify_()
        if len(self.srcs.data) != 1 or self.dst is None or self.words is None \
                or self.tag is None:
            raise VerifyException("mncore.dma takes one source, a destination, words and a tag")
        load = self.kind.data == "load"
        _spaces(self.srcs.data[0], ("dram",) if load else ("l2bm",), "the source", self)
        _spaces(self.dst, ("l2bm",) if load else ("dram",), "the destination", self)
        if (self.run is None) != (self.stride is None):
            raise VerifyException("mncore.dma takes run and stride together")
        if (self.rows is None) != (self.pitch is None):
            raise VerifyException("mncore.dma takes rows and pitch together")
        rows, pitch = self.row_layout()
        if rows < 1 or self.count % rows:
            raise VerifyException(f"mncore.dma: rows {rows} do not divide {self.count} words")
        per = self.count // rows
        if self.run is not None and self.stride is not None:
            run, stride = self.run.value.data, self.stride.value.data
            if run < 1 or per % run:
                row = " (a row's)" if rows > 1 else ""
                raise VerifyException(f"mncore.dma: run {run} does not divide {per} words{row}")
            if stride < run and not load:
                raise VerifyException(f"mncore.dma: stride {stride} is shorter than run {run}:"
                                      " a store would write a word twice")
        if rows > 1 and pitch < self._row_extent(per) and not load and (
                self.count > 1 << 22  # not listed: a verifier must not allocate much
                or len(np.unique(self.dram_words())) < self.count):  # interleaved rows
            raise VerifyException(f"mncore.dma: pitch {pitch} is shorter than a row's "
                                  f"{self._row_extent(per)} words: a store would write a "
                                  "word twice")

    @property
    def block(self) -> int | None:
        """The one L2B the transfer touches, or ``None``: a load to all, a store from 0."""
        return self.l2b.value.data if self.l2b is not None else None

    @property
    def dram(self) -> RefAttr:
        return self.srcs.data[0] if self.kind.data == "load" else self.destination()

    def row_layout(self) -> tuple[int, int]:
        """(rows, pitch): one row unless ``rows N pitch P``."""
        if self.rows is None or self.pitch is None:
            return 1, 0
        return self.rows.value.data, self.pitch.value.data

    def _row(self, per: int) -> np.ndarray:
        """A row's DRAM words from its first."""
        if self.run is None or self.stride is None:
            return np.arange(per)
        run, stride = self.run.value.data, self.stride.value.data
        return (stride * np.arange(per // run)[:, None] + np.arange(run)).reshape(-1)

    def _row_extent(self, per: int) -> int:
        if self.run is None or self.stride is None:
            return per
        run, stride = self.run.value.data, self.stride.value.data
        return stride * (per // run - 1) + run  # strides are not negative

    def dram_words(self) -> np.ndarray:
        """The DRAM addresses the transfer touches, in L2BM order."""
        first, n = self.dram.address.data, self.count
        rows, pitch = self.row_layout()
        if rows == 1 and (self.run is None or self.stride is None):
            return np.arange(first, first + n)
        return (first + pitch * np.arange(rows)[:, None] + self._row(n // rows)).reshape(-1)

    def dram_extent(self) -> int:
        """How many DRAM words lie from the first word touched to the last, counted
        without listing them (a verifier must not allocate what it is about to reject)."""
        rows, pitch = self.row_layout()
        run, stride = (None, None) if self.run is None or self.stride is None else (
            self.run.value.data, self.stride.value.data)
        return dram_extent(self.count, run, stride, rows, pitch)

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        """The DRAM side as its extent (first to last word touched)."""
        extent = self.dram_extent()
        src, dst = self.srcs.data[0], self.destination()
        if self.kind.data == "load":
            return [(src, extent)], [(dst, self.count)]
        return [(src, self.count)], [(dst, extent)]


@instruction_definition
class WaitOp(InstructionOp):
    """Blocks issue until every DMA with ``tag`` has finished."""

    name = "mncore.wait"
    SLOT: ClassVar[str] = "ctrl"
    KINDS: ClassVar[tuple[str, ...]] = ("",)
    USES: ClassVar[tuple[str, ...]] = ("tag",)

    def verify_(self) -> None:
        if self.tag is None or self.srcs.data or self.dst is not None or self.kind.data:
            raise VerifyException("mncore.wait takes only a tag")
        super().verify_()

    def operands_of(self, machine: Machine) -> tuple[Accesses, Accesses]:
        return [], []


INSTRUCTIONS = (AluOp, MauOp, L1Op, L2Op, DmaOp, WaitOp)


@irdl_op_definition
class RepeatOp(IRDLOperation):
    """A group of instructions issued ``count`` times, ``period`` steps apart, fully
    static: ``mncore.repeat STEP count N period P { ... }``. Iteration ``i`` issues each
    body instruction at ``STEP + i P +`` its own step (relative to the group's start)
    with every reference ``space[a + s * i]`` at word ``a + s i``. The body holds ALU,
    MAU and L1 instructions (no transfers to L2BM or DRAM, no waits, no ``fwd``); what
    the whole expansion issues obeys the program's rules, which the program's verifier
    checks as if expanded. Iterations may overlap (a modulo schedule)."""

    name = "mncore.repeat"
    step = prop_def(IntegerAttr[I64])
    count = prop_def(IntegerAttr[I64])
    period = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp), NoTerminator()))
    SLOT: ClassVar[str] = "repeat"
    ALLOWED: ClassVar[tuple[type[InstructionOp], ...]] = (AluOp, MauOp, L1Op)

    def __init__(self, step: int, count: int, period: int,
                 body: Sequence[InstructionOp]) -> None:
        super().__init__(properties={"step": i64_attr(step), "count": i64_attr(count),
                                     "period": i64_attr(period)},
                         regions=[Region(Block(list(body)))])

    @property
    def at(self) -> int:
        return self.step.value.data

    @property
    def times(self) -> int:
        return self.count.value.data

    @property
    def every(self) -> int:
        return self.period.value.data

    def group(self) -> list[InstructionOp]:
        return list(self.body.block.ops)  # type: ignore[arg-type]

    def last_step(self) -> int:
        """The step of the group's last issue (its start for an empty group)."""
        rel = max((op.at for op in self.body.block.ops), default=0)  # type: ignore[attr-defined]
        return self.at + (self.times - 1) * self.every + rel

    def expand(self) -> list[InstructionOp]:
        """Every instruction the group issues, as new plain instructions in issue
        order."""
        issued = [op.iteration(self.at + i * self.every + op.at, i)
                  for i in range(self.times) for op in self.group()]
        issued.sort(key=lambda op: op.at)
        return issued

    @classmethod
    def parse(cls, parser: Parser) -> RepeatOp:
        step = parse_i64(parser)
        parser.parse_keyword("count")
        count = parse_i64(parser)
        parser.parse_keyword("period")
        period = parse_i64(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls.create(properties={"step": i64_attr(step), "count": i64_attr(count),
                                    "period": i64_attr(period)}, regions=[region])
        if attrs:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.at} count {self.times} period {self.every}")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_empty_block=False)

    #: The most instructions a group may issue: the program's verifier, the scheduler and
    #: the simulator check every issue, so a larger count would run for hours, not fail.
    MAX_ISSUES: ClassVar[int] = 1 << 22

    def check_budget(self) -> None:
        """Refuse a group issuing more than :attr:`MAX_ISSUES` (the program's verifier
        calls this before it expands the group)."""
        issued = self.times * len(self.body.block.ops)
        if issued > self.MAX_ISSUES:
            raise OpVerifyException(
                self, f"mncore.repeat: count {self.times:,} issues {issued:,} instructions, "
                f"more than the {self.MAX_ISSUES:,} a group may issue (each issue is checked)")

    def verify_(self) -> None:
        if self.times < 1 or self.every < 1:
            raise VerifyException("mncore.repeat: count and period are at least 1")
        self.check_budget()
        if not self.body.block.ops:
            raise VerifyException("mncore.repeat holds at least one instruction")
        last = -1
        for op in self.body.block.ops:
            if not isinstance(op, self.ALLOWED):
                raise OpVerifyException(op, f"{op.name} cannot be in an mncore.repeat: it "
                                            "holds ALU, MAU and L1 instructions")
            if any(r.space.data == "fwd" for r in op.refs()):
                raise OpVerifyException(op, "an instruction in an mncore.repeat cannot read "
                                            "fwd")
            if op.at < last:
                raise OpVerifyException(op, f"step {op.at} comes after step {last}: "
                                            "instructions must be in issue order")
            last = op.at


# --------------------------------------------------------------------------- placement


@irdl_op_definition
class TensorOp(IRDLOperation):
    """A program input, output or constant in DRAM, row-major:
    ``mncore.tensor @x input dram[0] : tensor<8x8xf32>``,
    ``mncore.tensor @c constant dram[64] = dense<[1.0, 2.0]> : tensor<2xf32>``."""

    name = "mncore.tensor"
    sym_name = prop_def(StringAttr)
    role = prop_def(StringAttr)
    at = prop_def(RefAttr)
    type = prop_def(TensorType)
    value = opt_prop_def(DenseIntOrFPElementsAttr)
    traits = lazy_traits_def(lambda: (SymbolOpInterface(), HasParent(ProgramOp),
                                      MNCORE_TYPES))

    @classmethod
    def parse(cls, parser: Parser) -> TensorOp:
        name = parser.parse_symbol_name().data
        pos = parser.pos
        role = parser.parse_identifier(context_msg=": input, output or constant")
        if role not in ("input", "output", "constant"):
            parser.raise_error("a tensor is an input, an output or a constant", pos, parser.pos)
        at = RefAttr(*parse_ref(parser))
        props: dict[str, Attribute] = {"sym_name": StringAttr(name), "role": StringAttr(role),
                                       "at": at}
        if role == "constant":
            parser.parse_punctuation("=")
            value = parser.parse_attribute()
            if not isinstance(value, DenseIntOrFPElementsAttr):
                parser.raise_error("a constant tensor needs a dense literal")
            props["value"], props["type"] = value, value.get_type()
        else:
            parser.parse_punctuation(":")
            props["type"] = parser.parse_type()
        return cls.create(properties=props, attributes=parser.parse_optional_attr_dict())

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data} {self.role.data} {self.at} ")
        if self.value is not None:
            printer.print_string("= ")
            print_dense(printer, self.value)
        else:
            printer.print_string(": ")
            printer.print_attribute(self.type)
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        if self.at.space.data != "dram":
            raise VerifyException("mncore.tensor lives in dram")
        if (self.role.data == "constant") != (self.value is not None):
            raise VerifyException("mncore.tensor has a value exactly when it is a constant")
        if self.value is not None and self.value.get_type() != self.type:
            raise VerifyException("mncore.tensor: the value's type is not the tensor's")
        element = self.type.element_type
        if self.value is not None and isinstance(element, IntegerType) and element.width.data > 24:
            values = np.frombuffer(self.value.data.data, np.dtype(element.format))
            if values.size and max(-int(values.min()), int(values.max())) > EXACT_INTEGERS:
                raise VerifyException(
                    f"mncore.tensor @{self.sym_name.data}: a value reaches past the ±2**24 "
                    "that a word (f32) holds exactly")


@irdl_op_definition
class BufferOp(IRDLOperation):
    """A named region of a memory, as the compiler placed it:
    ``mncore.buffer @h lm0[0] words 16``; a buffer laid out on another's words (a view:
    a slice or a permutation, see convert-task-to-mncore's ``views``) names its shape
    and strides, ``mncore.buffer @v dram[64] words 32 shape [4, 8] strides [1, 16]``:
    element ``i`` of it is the word ``at + sum(i[d] strides[d])``."""

    name = "mncore.buffer"
    sym_name = prop_def(StringAttr)
    at = prop_def(RefAttr)
    words = prop_def(IntegerAttr[I64])
    shape = opt_prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    traits = lazy_traits_def(lambda: (SymbolOpInterface(), HasParent(ProgramOp)))

    @classmethod
    def build(cls, name: str, at: RefAttr, words: int,
              layout: tuple[Sequence[int], Sequence[int]] | None = None) -> BufferOp:
        """The buffer ``name`` at ``at``; ``layout``: its shape and strides."""
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name), "at": at,
                                            "words": IntegerAttr(words, i64)}
        if layout is not None:
            properties["shape"] = DenseArrayBase.from_list(i64, tuple(layout[0]))
            properties["strides"] = DenseArrayBase.from_list(i64, tuple(layout[1]))
        return cls.create(properties=properties)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        name = parser.parse_symbol_name().data
        at = RefAttr(*parse_ref(parser))
        parser.parse_keyword("words")
        words = parse_i64(parser)
        layout = None
        if parser.parse_optional_keyword("shape") is not None:
            sizes = _parse_integers(parser)
            parser.parse_keyword("strides")
            layout = (sizes, _parse_integers(parser))
        op = cls.build(name, at, words, layout)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data} {self.at} words {self.words.value.data}")
        if self.shape is not None and self.strides is not None:
            printer.print_string(f" shape {list(self.shape.get_values())} strides "
                                 f"{list(self.strides.get_values())}")
        printer.print_op_attributes(self.attributes)

    def extent(self) -> int:
        """Words from ``at`` to past the last word it holds."""
        if self.shape is None or self.strides is None:
            return self.words.value.data
        sizes, strides = self.shape.get_values(), self.strides.get_values()
        if len(sizes) != len(strides):  # refused by the buffer's own verifier
            return self.words.value.data
        if 0 in sizes:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))

    def verify_(self) -> None:
        if self.at.space.data == "fwd":
            raise VerifyException("mncore.buffer cannot live in fwd")
        if (self.shape is None) != (self.strides is None):
            raise VerifyException("mncore.buffer names its shape and strides together")
        if self.shape is not None and self.strides is not None:
            sizes, strides = self.shape.get_values(), self.strides.get_values()
            if len(sizes) != len(strides):
                raise VerifyException(f"mncore.buffer has {len(sizes)} dimensions but "
                                      f"{len(strides)} strides")
            if any(n < 0 for n in sizes) or any(s < 0 for s in strides):
                raise VerifyException("mncore.buffer sizes and strides are not negative")
            if math.prod(sizes) != self.words.value.data:
                raise VerifyException(f"mncore.buffer holds {self.words.value.data} words "
                                      f"but its shape {list(sizes)} has {math.prod(sizes)}")


def _parse_integers(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(
        Parser.Delimiter.SQUARE, lambda: parse_i64(parser, allow_negative=True))


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A static program for one machine: ``mncore.program @p machine "tiny" { ... }``."""

    name = "mncore.program"
    sym_name = prop_def(StringAttr)
    machine = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove(), NoTerminator())

    def __init__(self, name: str, machine: str, body: Region) -> None:
        super().__init__(properties={"sym_name": StringAttr(name),
                                     "machine": StringAttr(machine)}, regions=[body])

    @property
    def target(self) -> Machine:
        return MACHINES[self.machine.data]

    def units(self) -> list[InstructionOp | RepeatOp]:
        """The instructions and repeated groups as written, in program order."""
        return [op for op in self.body.block.ops if isinstance(op, InstructionOp | RepeatOp)]

    def instructions(self) -> list[InstructionOp]:
        """Every instruction the program issues, in issue order: repeated groups
        expanded (:meth:`RepeatOp.expand`)."""
        units = self.units()
        if not any(isinstance(op, RepeatOp) for op in units):
            return units  # type: ignore[return-value]
        issued: list[InstructionOp] = []
        for op in units:
            issued.extend(op.expand() if isinstance(op, RepeatOp) else (op,))
        issued.sort(key=lambda op: op.at)  # stable: program order within a step
        return issued

    def issues(self) -> list[Issue]:
        """Every issue of the program in issue order, with the words it reads and writes
        (strides 0): a repeated group's per iteration without copying its instructions
        (a group's accesses are shifted, not recomputed)."""
        machine = self.target
        found: list[Issue] = []
        for unit in self.units():
            if isinstance(unit, InstructionOp):
                reads, writes = unit.operands_of(machine)
                found.append((unit.at, unit, None,
                              [(r.space.data, r.address.data, k, 0) for r, k in reads],
                              [(r.space.data, r.address.data, k, 0) for r, k in writes]))
                continue
            body = [(op, *op.strided_operands(machine)) for op in unit.group()]
            for i in range(unit.times):
                start = unit.at + i * unit.every
                for op, reads, writes in body:
                    found.append((start + op.at, op, i,
                                  [(sp, a + i * st, k, 0) for sp, a, k, st in reads],
                                  [(sp, a + i * st, k, 0) for sp, a, k, st in writes]))
        if any(isinstance(unit, RepeatOp) for unit in self.units()):
            found.sort(key=lambda issue: issue[0])
        return found

    def tensors(self, role: str) -> list[TensorOp]:
        return [op for op in self.body.block.ops
                if isinstance(op, TensorOp) and op.role.data == role]

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        name = parser.parse_symbol_name().data
        parser.parse_keyword("machine")
        pos = parser.pos
        machine = parser.parse_str_literal("a machine name")
        if machine not in MACHINES:
            parser.raise_error(f"unknown machine {machine!r}; machines: "
                               f"{', '.join(MACHINES)}", pos, parser.pos)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls(name, machine, region)
        if attrs:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data} machine ")
        printer.print_string_literal(self.machine.data)
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_empty_block=False)

    def verify_(self) -> None:
        if self.machine.data not in MACHINES:
            raise VerifyException(f"unknown machine {self.machine.data!r}")
        machine = self.target
        last_step = -1
        for op in self.body.block.ops:
            if not isinstance(op, TensorOp | BufferOp | InstructionOp | RepeatOp):
                raise OpVerifyException(op, f"{op.name} cannot be in an mncore.program: it "
                                            "holds tensors, buffers, instructions and "
                                            "repeated groups")
            if isinstance(op, RepeatOp):
                op.check_budget()
            if isinstance(op, InstructionOp | RepeatOp):
                if op.at < last_step:
                    raise OpVerifyException(op, f"step {op.at} comes after step {last_step}: "
                                                "instructions must be in issue order")
                last_step = op.at
            if isinstance(op, TensorOp):
                _check_dimensions(op, machine)
            if isinstance(op, TensorOp | BufferOp):
                self._check_bounds(op, [(op.at.space.data, op.at.address.data, _extent(op),
                                         0)], machine)
        self._check_tensors_apart()
        try:
            self._check_issue(machine)
        except Exception:
            # The instructions were not all valid, or the program breaks a rule. xDSL
            # verifies nested ops first, so a valid program pays for its instructions'
            # checks once; the tools verify a program before its ops, so an error is
            # blamed on its instruction first, as if they had been checked first.
            for unit in self.units():
                for op in unit.walk():
                    try:
                        op.verify_()
                    except OpVerifyException:
                        raise
                    except VerifyException as error:
                        raise OpVerifyException(op, str(error)) from None
            raise

    def _check_tensors_apart(self) -> None:
        """Inputs, outputs and constants each have words of their own: an input laid
        over another read the other's values (buffers share words by liveness)."""
        placed = sorted((op for op in self.body.block.ops
                         if isinstance(op, TensorOp) and _extent(op)),
                        key=lambda op: (op.at.space.data, op.at.address.data))
        reach: TensorOp | None = None  # of those before, the one reaching furthest
        for op in placed:
            space, at = op.at.space.data, op.at.address.data
            if reach is not None and reach.at.space.data == space and (
                    at < reach.at.address.data + _extent(reach)):
                raise OpVerifyException(
                    op, f"@{op.sym_name.data} ({space}[{at}], {_extent(op)} words) overlaps "
                    f"@{reach.sym_name.data} ({space}[{reach.at.address.data}]): a "
                    "program's inputs, outputs and constants each have words of their own")
            if reach is None or reach.at.space.data != space or (
                    at + _extent(op) > reach.at.address.data + _extent(reach)):
                reach = op

    @staticmethod
    def _check_bounds(op: IRDLOperation, spans: Sequence[Span], machine: Machine) -> None:
        for space, address, words, _ in spans:
            if space == "fwd":
                continue
            size = machine.size(space)
            if address + words > size:
                raise OpVerifyException(
                    op, f"{space}[{address}] + {words} words is beyond {space} "
                    f"({size} words on {machine.name})")

    def _check_issue(self, machine: Machine) -> None:
        """One instruction per slot per step, the port rules: on every issue, a
        repeated group's blamed on the group with its iteration. The loop does only
        what every issue needs (a program has a million of them); messages are built
        when a rule is broken."""
        used: set[tuple[int, str]] = set()
        lm_written = {"lm0": -99, "lm1": -99}  # LM -> last step that wrote it
        ports: dict[tuple[int, str], list[str]] = {}
        producers: set[int] = set()
        dma_tags: dict[int, set[int]] = {}  # step -> tags of the DMAs issued then
        sizes = {space: machine.size(space) for space in
                 ("lm0", "lm1", "grf0", "grf1", "l1bm", "l2bm", "dram")}
        blocked = machine.lm_write_blocks_reads
        for step, op, iteration, reads, writes in self.issues():
            slot = op.SLOT

            def fail(message: str, op: InstructionOp = op, iteration: int | None = iteration
                     ) -> NoReturn:
                if iteration is None:
                    raise OpVerifyException(op, message)
                raise OpVerifyException(op.parent_op(),  # type: ignore[arg-type]
                                        f"iteration {iteration}: {op.name} "
                                        f"{op.kind.data!r}: {message}")

            if slot == "dma" and isinstance(op, DmaOp):
                dma_tags.setdefault(step, set()).add(op.tag_number())
                if op.block is not None and op.block >= machine.l2bs:
                    fail(f"l2b {op.block} is beyond the {machine.l2bs} L2Bs of "
                         f"{machine.name}")
            elif slot == "ctrl" and isinstance(op, WaitOp) and \
                    op.tag_number() in dma_tags.get(step, ()):
                fail(f"step {step} waits on tag {op.tag_number()} issued in the same step: "
                     "a wait takes effect before its bundle issues")
            if (step, slot) in used:
                fail(f"step {step} already has an instruction in the {slot} slot")
            used.add((step, slot))
            for space, address, words, _ in (*reads, *writes):
                if space != "fwd" and address + words > sizes[space]:
                    fail(f"{space}[{address}] + {words} words is beyond {space} "
                         f"({sizes[space]} words on {machine.name})")
            if slot == "l2" and isinstance(op, L2Op) and op.lanes is not None and \
                    op.lanes.value.data > (words := op.count * machine.l1b_per_l2b
                                           * machine.l2bs):
                fail(f"lanes {op.lanes.value.data} are more than the {words} words the "
                     f"scatter reads from the {machine.l2bs} L2Bs")
            for space, *_ in reads:
                if space == "fwd" and step - 1 not in producers:
                    fail(f"step {step} reads fwd but step {step - 1} has no ALU or MAU result")
                if space in lm_written and step - lm_written[space] <= blocked:
                    fail(f"step {step} reads {space}, written at step {lm_written[space]}: "
                         f"an LM cannot be read for {blocked} steps after a write")
            for space, direction in [*((r[0], "read") for r in reads),
                                     *((w[0], "write") for w in writes)]:
                if space not in PE_SPACES:
                    continue
                seen = ports.setdefault((step, space), [])
                seen.append(direction)
                if space.startswith("lm") and len(seen) > 1:
                    fail(f"step {step} uses {space} twice: an LM is read or written once "
                         "per step")
                if space.startswith("grf") and seen.count(direction) > 1:
                    fail(f"step {step} has two {direction}s of {space}: a GRF has one read "
                         "and one write port")
            for space, *_ in writes:
                if space in lm_written:
                    lm_written[space] = step
            if slot in ("alu", "mau"):
                producers.add(step)

def _check_dimensions(op: TensorOp, machine: Machine) -> None:
    """Even an empty tensor's non-zero dimensions must fit in DRAM together: its strides
    are DRAM distances, and the simulator (numpy) cannot even make an empty array of a
    shape whose other dimensions overflow."""
    span = math.prod(n for n in op.type.get_shape() if n)
    if span > machine.dram_words:
        raise OpVerifyException(
            op, f"mncore.tensor @{op.sym_name.data}: {op.type} spans {span:,} words in its "
            f"non-zero dimensions, more than dram ({machine.dram_words:,} words on "
            f"{machine.name})")


def _extent(op: TensorOp | BufferOp) -> int:
    if isinstance(op, BufferOp):
        return op.extent()
    size = 1
    for n in op.type.get_shape():
        size *= n
    return size


MNCore = Dialect("mncore", [ProgramOp, TensorOp, BufferOp, RepeatOp, *INSTRUCTIONS],
                 [RefAttr])
