"""Constants survive print → parse bit for bit, and literals that do not fit their type
are errors at the literal.

xDSL 0.75 prints an integral f32 of more than 7 digits as its bit pattern
(``dense<0x4B800000>`` for 16777216.0) and read that back as the integer 1266679808;
it also prints a splat of ``0.0`` and ``-0.0`` as one ``0.0`` and quietens signalling
NaNs. Every tool and the lazy runtime's disk cache parse through ``mncore_ir.parsing``
and print through the dialects, so these tests cover them all.
"""

from __future__ import annotations

import math
import struct
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    FunctionType,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
    f16,
    f32,
    i1,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

import torch_mncore
from mncore_ir.dialects import graph as g
from mncore_ir.dialects.element_types import print_dense
from mncore_ir.parsing import LocatingParser, parse_module
from mncore_ir.pipeline import make_context
from mncore_ir.targets.mlir_text import ExactMLIRTarget
from mncore_ir.tools import mncore_opt

BIN = Path(sys.executable).parent
f64 = Float64Type()
FORMATS = {f32: "<I", f64: "<Q"}


def constant_module(typ: TensorType, data: bytes) -> ModuleOp:
    """``func.func @main() -> typ`` returning ``graph.constant`` of the raw ``data``."""
    block = Block()
    const = g.ConstantOp(DenseIntOrFPElementsAttr(typ, BytesAttr(data)))
    block.add_ops([const, ReturnOp(const.result)])
    return ModuleOp([FuncOp("main", FunctionType.from_lists([], [typ]), Region(block))])


def printed(module: ModuleOp, generic: bool = False) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


def reparsed_bytes(module: ModuleOp, generic: bool = False) -> bytes:
    text = printed(module, generic)
    parsed = parse_module(make_context(), text, "roundtrip.mlir")
    [const] = [op for op in parsed.walk() if isinstance(op, g.ConstantOp)]
    return const.value.data.data


def pack(typ: TensorType, patterns: list[int]) -> bytes:
    fmt = FORMATS[typ.element_type]
    return b"".join(struct.pack(fmt, p) for p in patterns)


F32_SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x7F800000, 0xFF800000,
               0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FBFFFFF, 0x4B800000, 0x4B800001,
               0x4F000000, 0x7F7FFFFF, 0x3F800000]
F64_SPECIAL = [0, 1 << 63, 1, 0x7FF0000000000000, 0xFFF0000000000000,
               0x7FF8000000000000, 0x7FF0000000000001, 0x4340000000000000,
               0x4341C37937E08000, 0x7FEFFFFFFFFFFFFF]


def bit_patterns(width: int) -> st.SearchStrategy[int]:
    """Any bit pattern (subnormals, infinities, NaN payloads, signalling NaNs), weighted
    towards integral values of 2**24 (f32) or 2**53 (f64) and beyond."""
    special = F32_SPECIAL if width == 32 else F64_SPECIAL
    fmt, raw = ("<f", "<I") if width == 32 else ("<d", "<Q")
    integral = st.integers(1 << (24 if width == 32 else 53), 1 << 62).map(
        lambda n: struct.unpack(raw, struct.pack(fmt, float(n)))[0])
    return st.one_of(st.sampled_from(special), st.integers(0, (1 << width) - 1), integral)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([32, 64]).flatmap(
    lambda w: st.tuples(st.just(w), st.lists(bit_patterns(w), min_size=0, max_size=6))))
def test_float_constants_survive_print_and_parse(case: tuple[int, list[int]]) -> None:
    """Zero-size constants too (``tensor<0xf32>`` prints as ``dense<>``)."""
    width, patterns = case
    element = f32 if width == 32 else f64
    typ = TensorType(element, [len(patterns)])
    data = pack(typ, patterns)
    assert reparsed_bytes(constant_module(typ, data)) == data


def emitted_generic_bytes(module: ModuleOp) -> bytes:
    """The constant's bytes after ``mncore-opt --print-op-generic``'s printing (the
    ``mlir`` target) and a parse of its text."""
    out = StringIO()
    ExactMLIRTarget(print_generic_format=True).emit(make_context(), module, out)
    parsed = parse_module(make_context(), out.getvalue(), "generic.mlir")
    [const] = [op for op in parsed.walk() if isinstance(op, g.ConstantOp)]
    return const.value.data.data


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([32, 64]).flatmap(
    lambda w: st.tuples(st.just(w), st.lists(bit_patterns(w), min_size=0, max_size=6))))
def test_float_constants_survive_the_generic_form(case: tuple[int, list[int]]) -> None:
    """xDSL's generic printer prints the property with its own lossy text
    (``[0.0, -0.0]`` as a splat, signalling NaNs quietened)."""
    width, patterns = case
    typ = TensorType(f32 if width == 32 else f64, [len(patterns)])
    data = pack(typ, patterns)
    assert emitted_generic_bytes(constant_module(typ, data)) == data


def test_mncore_opt_print_op_generic_keeps_signed_zeros_and_nan_payloads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "c.mlir"
    source.write_text("""\
func.func @f() -> (tensor<2xf32>, tensor<f32>) {
  %a = graph.constant dense<[0.0, -0.0]> : tensor<2xf32>
  %c = graph.constant dense<0x7F800001> : tensor<f32>
  func.return %a, %c : tensor<2xf32>, tensor<f32>
}
""")
    mncore_opt.main([str(source), "--print-op-generic"])
    generic = capsys.readouterr().out
    assert 'value = dense<"0x0000000000000080"> : tensor<2xf32>' in generic
    assert 'value = dense<"0x0100807F"> : tensor<f32>' in generic
    parsed = parse_module(make_context(), generic, "generic.mlir")
    assert [op.value.data.data.hex() for op in parsed.walk() if isinstance(op, g.ConstantOp)
            ] == ["0000000000000080", "0100807f"]


#: The graph's integer element types and the values each holds, ``[low, high)``.
INTEGER_TYPES = {i64: (-(2**63), 2**63), IntegerType(32): (-(2**31), 2**31),
                 IntegerType(8, Signedness.UNSIGNED): (0, 2**8), i1: (0, 2)}


def integer_case(element: IntegerType) -> st.SearchStrategy[tuple[IntegerType, list[int]]]:
    low, high = INTEGER_TYPES[element]
    values = st.one_of(st.sampled_from([low, high - 1, 0]), st.integers(low, high - 1))
    return st.tuples(st.just(element), st.lists(values, min_size=0, max_size=6))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(INTEGER_TYPES)).flatmap(integer_case))
def test_integer_constants_survive_print_and_parse(
        case: tuple[IntegerType, list[int]]) -> None:
    """Every value of every graph integer type, the ends of its range included, is
    read back from its text (the parser checks the range of each literal)."""
    element, values = case
    typ = TensorType(element, [len(values)])
    data = DenseIntOrFPElementsAttr.from_list(typ, values).data.data
    assert reparsed_bytes(constant_module(typ, data)) == data


@pytest.mark.parametrize(("element", "pattern"), [
    *((f32, p) for p in F32_SPECIAL), *((f64, p) for p in F64_SPECIAL)])
def test_float_splats_survive_print_and_parse(element: Attribute, pattern: int) -> None:
    typ = TensorType(element, [2, 3])
    data = pack(typ, [pattern] * 6)
    assert reparsed_bytes(constant_module(typ, data)) == data


@pytest.mark.parametrize("patterns", [[0, 0x80000000], [0x80000000, 0, 0, 0],
                                      [0x7FC00000, 0x7FC00001]], ids=["zeros", "zeros4", "nans"])
def test_values_that_compare_equal_but_differ_in_bits_are_not_a_splat(
        patterns: list[int]) -> None:
    typ = TensorType(f32, [len(patterns)])
    data = pack(typ, patterns)
    assert reparsed_bytes(constant_module(typ, data)) == data


def test_the_generic_format_keeps_integral_floats() -> None:
    typ = TensorType(f32, [3])
    data = pack(typ, [0x4B800000, 0x4F000000, 0x7F800000])
    assert reparsed_bytes(constant_module(typ, data), generic=True) == data


@pytest.mark.parametrize("length", [1, 7, 101, 1000])
def test_large_and_small_non_splat_constants_survive(length: int) -> None:
    values = np.random.default_rng(length).standard_normal(length).astype(np.float32)
    values[0] = 16777216.0
    typ = TensorType(f32, [length])
    data = values.tobytes()
    assert reparsed_bytes(constant_module(typ, data)) == data


@given(st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=4))
@settings(max_examples=100, deadline=None)
def test_f16_literals_survive_print_and_parse(patterns: list[int]) -> None:
    """f16 is no graph element type, but a literal of it prints and parses exactly
    (CPython drops an f16 NaN's payload, so xDSL's own text would not)."""
    data = struct.pack(f"<{len(patterns)}H", *patterns)
    attr = DenseIntOrFPElementsAttr(TensorType(f16, [len(patterns)]), BytesAttr(data))
    out = StringIO()
    print_dense(Printer(stream=out), attr)
    parsed = LocatingParser(make_context(), out.getvalue()).parse_attribute()
    assert isinstance(parsed, DenseIntOrFPElementsAttr) and parsed.data.data == data


@pytest.mark.parametrize(("literal", "value"), [
    ("0x4B800000 : f32", 16777216.0),
    ("0x7F800000 : f32", math.inf),
    ("0x80000000 : f32", -0.0),
    ("0x4341C37937E08000 : f64", 1e16),
])
def test_hex_float_attributes_are_bit_patterns(literal: str, value: float) -> None:
    attr = LocatingParser(make_context(), literal).parse_attribute()
    assert isinstance(attr, FloatAttr)
    assert struct.pack("<d", attr.value.data) == struct.pack("<d", value)


@pytest.mark.parametrize(("literal", "value"), [
    ("dense<0x4B800000> : tensor<f32>", 16777216.0),
    ("dense<[0x4B800000, 1.5]> : tensor<2xf32>", 16777216.0),
    ("dense<0x3C00> : tensor<f16>", 1.0),
])
def test_hex_dense_elements_are_bit_patterns(literal: str, value: float) -> None:
    attr = LocatingParser(make_context(), literal).parse_attribute()
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    assert attr.get_values()[0] == value


def test_a_hex_signalling_nan_keeps_its_bits() -> None:
    attr = LocatingParser(make_context(), "dense<[0x7F800001, 1.0]> : tensor<2xf32>"
                          ).parse_attribute()
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    assert attr.data.data == struct.pack("<If", 0x7F800001, 1.0)


# ---------------------------------------------------------------------- out of range


@pytest.mark.parametrize(("literal", "column", "message"), [
    ("dense<1.0e+308> : tensor<2xf32>", 7, "floating point value 1.0e+308 is too large for f32"),
    ("dense<[1.0, -1.0e+39]> : tensor<2xf32>", 13,
     "floating point value -1.0e+39 is too large for f32"),
    ("dense<1.0e+400> : tensor<f64>", 7, "floating point value 1.0e+400 is too large for f64"),
    ("dense<70000.0> : tensor<f16>", 7, "floating point value 70000.0 is too large for f16"),
    ("dense<1000000000000000000000000000000000000000> : tensor<f32>", 7,
     "floating point value 1000000000000000000000000000000000000000 is too large for f32"),
    ("dense<300> : tensor<2xi8>", 7, "integer value 300 is out of range for i8 ([-128, 128))"),
    ("dense<[1, 2147483648]> : tensor<2xi32>", 11,
     "integer value 2147483648 is out of range for i32"),
    ("dense<256> : tensor<ui8>", 7, "integer value 256 is out of range for ui8 ([0, 256))"),
    ("dense<2> : tensor<i1>", 7, "integer value 2 is out of range for i1 ([0, 2))"),
    ("dense<-0x3F800000> : tensor<f32>", 7,
     "a hexadecimal float literal is a bit pattern and takes no minus sign"),
    ("dense<0x1FFFFFFFF> : tensor<f32>", 7,
     "hexadecimal float literal 0x1FFFFFFFF has more bits than f32"),
    ("dense<1> : tensor<i128>", 7, "dense literals of i128 are not supported"),
    ("dense<1.0> : tensor<f80>", 7, "dense literals of f80 are not supported"),
    ("1.0e+308 : f32", 1, "floating point value 1.0e+308 is too large for f32"),
    ("-0x3F800000 : f32", 1, "a hexadecimal float literal is a bit pattern"),
    ("300 : i8", 1, "Integer value 300 is out of range for type i8"),
])
def test_literals_that_do_not_fit_are_errors_at_the_literal(literal: str, column: int,
                                                             message: str) -> None:
    with pytest.raises(ParseError) as info:
        LocatingParser(make_context(), literal, "lit.mlir").parse_attribute()
    loc = info.value.span.get_location()
    assert (loc.file, loc.line, loc.col) == ("lit.mlir", 1, column)
    assert message in info.value.msg


def test_an_overflowing_constant_in_a_file_names_its_position() -> None:
    text = ("func.func @main() -> tensor<2xf32> {\n"
            "  %0 = graph.constant dense<1.0e+308> : tensor<2xf32>\n"
            "  func.return %0 : tensor<2xf32>\n"
            "}\n")
    with pytest.raises(ParseError, match="too large for f32") as info:
        parse_module(make_context(), text, "f.mlir")
    loc = info.value.span.get_location()
    assert (loc.line, loc.col) == (2, 29)


# ---------------------------------------------------------------------- the tools


BIG = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<[16777216.0, 1.0e-45, -0.0, 3.0e+09]> : tensor<4xf32>
  %s = graph.constant dense<16777218.0> : tensor<4xf32>
  %m = graph.minimum %a, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %0 = graph.add %m, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
ARGS = ["--args", "dense<[1.0e+09, 0.0, -0.0, 1.0]> : tensor<4xf32>"]


def run_tool(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120)


def test_mncore_opt_output_runs_like_the_original(tmp_path: Path) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(BIG)
    direct, piped = tmp_path / "direct.npz", tmp_path / "piped.npz"
    done = run_tool([str(BIN / "mncore-run"), str(source), *ARGS, "--save-outputs",
                     str(direct)])
    assert done.returncode == 0, done.stderr
    optimized = run_tool([str(BIN / "mncore-opt"), str(source)])
    assert optimized.returncode == 0, optimized.stderr
    assert "0x4B800000" in optimized.stdout  # the printer's hex form is what is read back
    done = run_tool([str(BIN / "mncore-run"), *ARGS, "--save-outputs", str(piped)],
                    stdin=optimized.stdout)
    assert done.returncode == 0, done.stderr
    expected = np.minimum(np.array([1.0e9, 0.0, -0.0, 1.0], np.float32),
                          np.float32(16777218.0)) + np.array(
        [16777216.0, 1.0e-45, -0.0, 3.0e9], np.float32)
    for path in (direct, piped):
        assert np.load(path)["result0"].tobytes() == expected.tobytes()


def test_mncore_run_reports_an_overflowing_argument_literal(tmp_path: Path) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(BIG)
    done = run_tool([str(BIN / "mncore-run"), str(source), "--args",
                     "dense<[1.0, 2.0, 3.0, 1.0e+39]> : tensor<4xf32>"])
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "mncore-run: --args[0]:1:23: error: floating point value 1.0e+39 is too large "
        "for f32")
    assert "Traceback" not in done.stderr


def test_the_disk_cache_keeps_a_large_integral_clamp_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph read back from MNCORE_CACHE_DIR computes what the first one did."""
    monkeypatch.setenv("MNCORE_CACHE_DIR", str(tmp_path / "cache"))
    x = torch.tensor([3.0e7, -5.0, 16777216.0, 2.0e9])
    expected = x.clamp(max=16777216.0)
    results = []
    for _ in range(2):  # the second init forgets the in-memory cache: a disk hit
        torch_mncore.init("cpu", implicit_sync="silent")
        y = x.mncore().clamp(max=16777216.0)
        torch_mncore.sync()
        results.append(y.cpu())
        torch_mncore.wait_device_ops()
    assert any((tmp_path / "cache").iterdir())
    for got in results:
        assert torch.equal(got, expected), (got, expected)
