"""Integers at the mncore level: a word is an f32, exact up to 2**24, so the lowering
either computes the graph interpreter's integers exactly (narrow types wrap as numpy
casts them, booleans are ``!= 0``, integer means truncate) or refuses, naming the op,
where a value could leave what a word holds exactly. No silent wrong results.

Each case runs one op on edge values (0, the type's extremes a word holds, values that
overflow ui8) through the graph interpreter and the ``tiny`` cycle simulator.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import ParseError

from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import InterpretationError, run_function
from mncore_ir.targets.mncore_simulator import find_program, simulate
from mncore_ir.transforms.convert_task_to_mncore import MNCoreConversionError

TO_TINY = ("convert-graph-to-task{target=mncore},convert-task-to-mncore{machine=tiny},"
           "mncore-schedule")
BIG = 2**24 - 1  # the largest integer input the simulator takes
#: Edge values of each type (those a word holds), 8 of them.
EDGES = {
    "ui8": [0, 1, 2, 127, 128, 200, 254, 255],
    "i32": [0, 1, -1, 7, -7, 4096, BIG, -BIG],
    "i64": [0, 1, -1, 7, -7, 4096, BIG, -BIG],
    "i1": [0, 1, 1, 0, 1, 0, 0, 1],
}
DTYPES = {"ui8": np.uint8, "i32": np.int32, "i64": np.int64, "i1": np.bool_}
#: Binary ops: the result of ``op a, b`` on the same type.
BINARY = ("add", "sub", "mul", "maximum", "minimum")
UNARY = ("neg", "abs", "relu")


def both_levels(text: str, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The graph interpreter's results and the lowered program's on ``tiny``."""
    expected = run_function(parse_module(make_context(), text, "ref.mlir"), inputs)
    module = parse_module(make_context(), text, "low.mlir")
    apply_pipeline(module, TO_TINY)
    outputs, _ = simulate(find_program(module), inputs)
    return list(expected), outputs


def assert_equal(outputs: list[np.ndarray], expected: list[np.ndarray]) -> None:
    for ours, theirs in zip(outputs, expected, strict=True):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


def edges(typ: str, shift: int = 0) -> np.ndarray:
    return np.roll(np.array(EDGES[typ]), shift).astype(DTYPES[typ])


def binary(op: str, typ: str) -> str:
    return f"""func.func @main(%a: tensor<8x{typ}>, %b: tensor<8x{typ}>) -> tensor<8x{typ}> {{
  %0 = graph.{op} %a, %b : tensor<8x{typ}>, tensor<8x{typ}> -> tensor<8x{typ}>
  func.return %0 : tensor<8x{typ}>
}}"""


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("typ", ["ui8", "i1"])
def test_narrow_binary_ops_wrap_as_numpy(op: str, typ: str) -> None:
    if typ == "i1" and op == "sub":
        pytest.skip("numpy has no boolean subtraction")
    a, b = edges(typ), edges(typ, 3)
    expected, outputs = both_levels(binary(op, typ), [a, b])
    assert_equal(outputs, expected)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("typ", ["i32", "i64"])
def test_wide_selections_are_exact_at_the_edges(op: str, typ: str) -> None:
    expected, outputs = both_levels(binary(op, typ), [edges(typ), edges(typ, 3)])
    assert_equal(outputs, expected)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("typ", ["i32", "i64"])
def test_wide_arithmetic_that_may_leave_a_word_is_refused(op: str, typ: str) -> None:
    module = parse_module(make_context(), binary(op, typ), "m.mlir")
    with pytest.raises(MNCoreConversionError, match=rf"graph.{op} in task.body .* beyond "
                       r"the ±2\*\*24 that a word \(f32\) holds exactly") as info:
        apply_pipeline(module, TO_TINY)
    assert info.value.op is not None and info.value.op.name == f"graph.{op}"


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("typ", ["ui8", "i32", "i64"])
def test_unary_ops_match_the_interpreter(op: str, typ: str) -> None:
    text = f"""func.func @main(%a: tensor<8x{typ}>) -> tensor<8x{typ}> {{
  %0 = graph.{op} %a : tensor<8x{typ}>
  func.return %0 : tensor<8x{typ}>
}}"""
    expected, outputs = both_levels(text, [edges(typ)])
    assert_equal(outputs, expected)


def test_small_products_of_wide_integers_are_exact() -> None:
    """Bounded operands (booleans, small constants) keep wide arithmetic in a word."""
    text = """func.func @main(%a: tensor<8xi1>, %b: tensor<8xi64>) -> tensor<8xi64> {
  %0 = graph.convert %a : tensor<8xi1> to tensor<8xi64>
  %c = graph.constant dense<-3> : tensor<i64>
  %1 = graph.mul %0, %c : tensor<8xi64>, tensor<i64> -> tensor<8xi64>
  %2 = graph.maximum %1, %b : tensor<8xi64>, tensor<8xi64> -> tensor<8xi64>
  func.return %2 : tensor<8xi64>
}"""
    expected, outputs = both_levels(text, [edges("i1"), edges("i64")])
    assert_equal(outputs, expected)


@pytest.mark.parametrize("source", ["i32", "i64", "i1"])
def test_converts_to_ui8_wrap(source: str) -> None:
    text = f"""func.func @main(%a: tensor<8x{source}>) -> tensor<8xui8> {{
  %0 = graph.convert %a : tensor<8x{source}> to tensor<8xui8>
  func.return %0 : tensor<8xui8>
}}"""
    expected, outputs = both_levels(text, [edges(source)])
    assert_equal(outputs, expected)


REDUCTION = """func.func @main(%x: tensor<{rows}x4x{typ}>) -> tensor<4x{typ}> {{
  %0 = graph.{op} %x dims = array<i64: 0> : tensor<{rows}x4x{typ}> -> tensor<4x{typ}>
  func.return %0 : tensor<4x{typ}>
}}"""


@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
@pytest.mark.parametrize("typ", ["ui8", "i32", "i64", "i1"])
def test_reductions_match_the_interpreter(op: str, typ: str) -> None:
    """Sums of ui8 wrap, means truncate toward zero (numpy's mean cast to the type),
    boolean sums and means are ``!= 0``; the fuzzer found the mean of ui8 rounded."""
    rows = 5 if typ in ("ui8", "i1") else 1  # wide sums of 5 could leave a word
    rng = np.random.default_rng(0)
    x = rng.choice(EDGES[typ], (rows, 4)).astype(DTYPES[typ])
    if typ == "ui8":
        x[:, 0] = [1, 2, 1, 2, 2]  # mean 1.6: truncated to 1, not rounded to 2
    expected, outputs = both_levels(REDUCTION.format(rows=rows, typ=typ, op=op), [x])
    assert_equal(outputs, expected)


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("rows", [2, 3, 7])
def test_integer_means_truncate_exactly(sign: int, rows: int) -> None:
    """Means of i32 up to 2**24 (ui8 values scaled by a constant, so the lowering knows
    the bound): the quotient is exact, not the rounded product by 1 / rows."""
    scale = sign * ((2**24 - rows) // (255 * rows))  # the largest the lowering takes
    text = f"""func.func @main(%x: tensor<{rows}x4xui8>) -> tensor<4xi32> {{
  %0 = graph.convert %x : tensor<{rows}x4xui8> to tensor<{rows}x4xi32>
  %c = graph.constant dense<{scale}> : tensor<i32>
  %1 = graph.mul %0, %c : tensor<{rows}x4xi32>, tensor<i32> -> tensor<{rows}x4xi32>
  %2 = graph.mean %1 dims = array<i64: 0> : tensor<{rows}x4xi32> -> tensor<4xi32>
  func.return %2 : tensor<4xi32>
}}"""
    rng = np.random.default_rng(rows)
    x = rng.integers(0, 256, (rows, 4)).astype(np.uint8)
    x[:, 0], x[:, 1] = 255, np.arange(rows) % 2 * 255
    expected, outputs = both_levels(text, [x])
    assert_equal(outputs, expected)


def test_wide_sums_that_may_leave_a_word_are_refused() -> None:
    module = parse_module(make_context(), REDUCTION.format(rows=2, typ="i64", op="sum"), "m")
    with pytest.raises(MNCoreConversionError, match=r"the sum of 2 elements of "
                       r"memref<2x4xi64> may take values in \[-33554430, 33554430\]"):
        apply_pipeline(module, TO_TINY)


def test_index_put_accumulating_ui8_wraps() -> None:
    text = """func.func @main(%x: tensor<5x4xui8>, %rows: tensor<3xi64>, %v: tensor<3x4xui8>)
    -> tensor<5x4xui8> {
  %0 = graph.index_put %x[%rows], %v accumulate = true
      : tensor<5x4xui8>, tensor<3xi64>, tensor<3x4xui8> -> tensor<5x4xui8>
  func.return %0 : tensor<5x4xui8>
}"""
    x = np.full((5, 4), 250, np.uint8)
    rows = np.array([1, 1, 3])
    v = np.array([[3, 4, 5, 6], [255, 0, 1, 2], [9, 9, 9, 9]], np.uint8)
    expected, outputs = both_levels(text, [x, rows, v])
    assert_equal(outputs, expected)


def test_integer_constants_a_word_cannot_hold_are_refused() -> None:
    """The fuzzer's case: a constant of -2**31 - 1 was rounded to -2**31 and multiplied."""
    text = """func.func @scale(%x: tensor<3xi64>) -> tensor<3xi64> {
  %c = graph.constant dense<[2, 3, -2147483649]> : tensor<3xi64>
  %0 = graph.mul %x, %c : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}"""
    module = parse_module(make_context(), text, "m.mlir")
    with pytest.raises(MNCoreConversionError, match=r"may take values in \[-2147483649, "
                       r"3\], beyond the ±2\*\*24"):
        apply_pipeline(module, TO_TINY)


PROGRAM = """mncore.program @main machine "tiny" {{
  mncore.tensor @x input dram[0] : tensor<4xf32>
  {tensor}
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 4 tag 1
  mncore.wait 3 tag 1
}}"""


@pytest.mark.parametrize(("tensor", "message"), [
    ("mncore.tensor @y output dram[32] : tensor<9223372036854775807x0xf32>",
     r"tensor<9223372036854775807x0xf32> spans 9,223,372,036,854,775,807 words in its "
     r"non-zero dimensions, more than dram"),
    ("mncore.tensor @c constant dram[32] = dense<[16777217]> : tensor<1xi64>",
     r"@c: a value reaches past the ±2\*\*24 that a word \(f32\) holds exactly"),
])
def test_verifier_refuses_tensors_a_program_cannot_hold(tensor: str, message: str) -> None:
    with pytest.raises(ParseError, match=r"p.mlir:3:3\n.*\n.*\n.*" + message):
        parse_module(make_context(), PROGRAM.format(tensor=tensor), "p.mlir")


def test_simulator_bounds_dram_before_allocating() -> None:
    text = PROGRAM.format(tensor="mncore.tensor @y output dram[1000000] : tensor<4xf32>")
    program = find_program(parse_module(make_context(), text, "p.mlir"))
    with pytest.raises(InterpretationError, match=r"mncore.tensor @y reaches dram\[1000003\]"
                       r", so the simulator would hold 4,000,016 bytes of DRAM"):
        simulate(program, [np.zeros(4, np.float32)], max_bytes=1 << 20)
    simulate(program, [np.zeros(4, np.float32)])


def test_wrapped_ui8_intermediates_feed_later_ops() -> None:
    """``a + b`` on ui8 wraps before it is compared (not only when it is stored)."""
    text = """func.func @main(%a: tensor<8xui8>, %b: tensor<8xui8>) -> tensor<8xi1> {
  %0 = graph.add %a, %b : tensor<8xui8>, tensor<8xui8> -> tensor<8xui8>
  %c = graph.constant dense<100> : tensor<ui8>
  %1 = graph.lt %0, %c : tensor<8xui8>, tensor<ui8> -> tensor<8xi1>
  func.return %1 : tensor<8xi1>
}"""
    expected, outputs = both_levels(text, [edges("ui8"), edges("ui8", 3)])
    assert_equal(outputs, expected)


#: Floats converted to integers truncate toward zero: ties, negative halves, and floats
#: from 2**23 on (integers already, past what a word's arithmetic keeps exact).
FLOATS = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.49, 7.99, -7.99, 2**23 - 0.5,
          -(2**23 - 0.5), 2**23 + 2.0, -(2**24), 3.0e9, -1.0e10]


@pytest.mark.parametrize("typ", ["i64", "i32", "ui8"])
def test_floats_truncate_into_integers(typ: str) -> None:
    values = np.array(FLOATS, np.float32)
    if typ != "i64":  # past its type, torch's conversion is undefined
        info = np.iinfo(DTYPES[typ])
        values = np.where((values > info.min) & (values < info.max), values, 3.75)
    text = f"""func.func @main(%a: tensor<16xf32>) -> tensor<16x{typ}> {{
  %0 = graph.convert %a : tensor<16xf32> to tensor<16x{typ}>
  func.return %0 : tensor<16x{typ}>
}}"""
    expected, outputs = both_levels(text, [values.astype(np.float32)])
    assert_equal(outputs, expected)


def test_a_truncated_float_clamped_is_an_exact_index() -> None:
    """Nearest-neighbour interpolation's indices: ``i * scale`` truncated, clamped to
    the input's rows (a selection keeps any integer exact), then offset by arithmetic."""
    text = """func.func @main(%s: tensor<f32>) -> tensor<8xi64> {
  %i = graph.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %x = graph.mul %i, %s : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %t = graph.convert %x : tensor<8xf32> to tensor<8xi64>
  %hi = graph.constant dense<3> : tensor<i64>
  %c = graph.minimum %t, %hi : tensor<8xi64>, tensor<i64> -> tensor<8xi64>
  %lo = graph.constant dense<-4> : tensor<i64>
  %d = graph.maximum %c, %lo : tensor<8xi64>, tensor<i64> -> tensor<8xi64>
  %one = graph.constant dense<1> : tensor<i64>
  %r = graph.add %d, %one : tensor<8xi64>, tensor<i64> -> tensor<8xi64>
  func.return %r : tensor<8xi64>
}"""
    for scale in (0.5, -0.75, 1.0e9):
        expected, outputs = both_levels(text, [np.array(scale, np.float32)])
        assert_equal(outputs, expected)


def test_arithmetic_on_an_unbounded_truncated_float_is_refused() -> None:
    text = """func.func @main(%a: tensor<8xf32>) -> tensor<8xi64> {
  %t = graph.convert %a : tensor<8xf32> to tensor<8xi64>
  %one = graph.constant dense<1> : tensor<i64>
  %r = graph.add %t, %one : tensor<8xi64>, tensor<i64> -> tensor<8xi64>
  func.return %r : tensor<8xi64>
}"""
    module = parse_module(make_context(), text, "m.mlir")
    with pytest.raises(MNCoreConversionError, match=r"graph.add in task.body .* beyond "
                       r"the ±2\*\*24 that a word \(f32\) holds exactly"):
        apply_pipeline(module, TO_TINY)
