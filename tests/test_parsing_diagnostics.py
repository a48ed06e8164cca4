"""Parse-time diagnoses with a source position: element types a level does not
support, an unterminated string literal (answered at once, not after exponential
backtracking), a value used before its definition, integer and hex literals that do
not fit their type, zero-size literals, and verifier errors xDSL raises naming no op."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ParseError

from mncore_ir.dialects import graph as g
from mncore_ir.parsing import LocatingParser, parse_module
from mncore_ir.pipeline import InvalidIRError, check_ir, make_context
from mncore_ir.tools.errors import cli_errors
from mncore_ir.tools.mncore_opt import MNCoreOptMain

BIN = Path(sys.executable).parent


def parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_module(make_context(), text, "t.mlir")
    return info.value


def position(error: ParseError) -> tuple[int, int]:
    loc = error.span.get_location()
    assert loc.file == "t.mlir"
    return loc.line, loc.col


# ---------------------------------------------------------------------- element types

UNSUPPORTED = ["f80", "f128", "index", "i8", "i16", "i128", "ui32", "si64"]
GRAPH_TYPES = "f32, f64, i64, i32, i1, ui8, bf16, f16"


def graph_add(element: str) -> str:
    t = f"tensor<2x{element}>"
    return (f"func.func @main(%a: {t}) -> {t} {{\n"
            f"  %0 = graph.add %a, %a : {t}, {t} -> {t}\n"
            f"  func.return %0 : {t}\n"
            "}\n")


@pytest.mark.parametrize("element", UNSUPPORTED)
def test_a_graph_op_names_an_unsupported_element_type(element: str) -> None:
    error = parse_error(graph_add(element))
    assert position(error) == (2, 3)
    assert error.msg == (f"graph.add: element type {element} is not supported at the graph "
                         f"level (supported: {GRAPH_TYPES})")


@pytest.mark.parametrize("element", [str(t) for t in g.ELEMENT_TYPES.values()])
def test_every_supported_graph_element_type_parses(element: str) -> None:
    parse_module(make_context(), graph_add(element), "t.mlir")


def test_a_graph_constant_of_an_unsupported_type_is_rejected_at_the_constant() -> None:
    error = parse_error("func.func @main() -> tensor<2xi16> {\n"
                        "  %0 = graph.constant dense<1> : tensor<2xi16>\n"
                        "  func.return %0 : tensor<2xi16>\n"
                        "}\n")
    assert position(error) == (2, 3)
    assert "graph.constant: element type i16 is not supported at the graph level" in error.msg


def test_a_function_signature_names_an_unsupported_element_type() -> None:
    error = parse_error("func.func @main(%a: tensor<2xf80>) -> tensor<2xf80> {\n"
                        "  func.return %a : tensor<2xf80>\n"
                        "}\n")
    assert position(error) == (1, 1)
    assert error.msg.startswith("func.func: element type f80 is not supported at the graph "
                                "level")


@pytest.mark.parametrize(("attr", "message"), [
    ("array<i128: 1>", "dense arrays of this element type are not supported"),
    ("array<f32: 1.0e+39>", "a value of this dense array is too large for its element type"),
    ('dense<"0x00"> : tensor<f80>', "dense literals of this element type are not supported"),
])
def test_literals_xdsl_cannot_pack_are_errors_at_the_literal(attr: str, message: str) -> None:
    error = parse_error("func.func @main() {\n"
                        f"  func.return {{a = {attr}}}\n"
                        "}\n")
    assert position(error) == (2, 25)  # at the "<" after the keyword
    assert error.msg == message
    assert attr[5:].startswith(error.span.text) and len(error.span.text) >= len(attr) - 6


@pytest.mark.parametrize(("body", "line", "op"), [
    ("  %t = task.buffer : memref<4xbf16>\n", 2, "task.buffer"),
    ("  %c = task.constant dense<1> : tensor<4xindex>\n", 2, "task.constant"),
])
def test_task_ops_name_an_unsupported_element_type(body: str, line: int, op: str) -> None:
    error = parse_error("task.kernel @k(%x: memref<4xf32>) -> (%y: memref<4xf32>) {\n"
                        f"{body}"
                        "  task.task @neg ins(%x[0:4]) outs(%y[0:4])\n"
                        "  task.body @neg(%a: tensor<f32>) {\n"
                        "    %n = graph.neg %a : tensor<f32>\n"
                        "    task.yield %n : tensor<f32>\n  }\n"
                        "  task.return\n}\n")
    assert position(error) == (line, 3)
    assert error.msg.startswith(f"{op}: element type ")
    assert "is not supported at the task level" in error.msg


def test_a_task_kernel_names_an_unsupported_argument_type() -> None:
    error = parse_error("task.kernel @k(%x: memref<4xf16>) -> (%y: memref<4xf32>) {\n"
                        "  task.return\n}\n")
    assert position(error) == (1, 1)
    assert error.msg.startswith("task.kernel: element type f16 is not supported at the task")


def test_an_mncore_tensor_of_f64_has_no_word_form() -> None:
    error = parse_error('mncore.program @p machine "tiny" {\n'
                        "  mncore.tensor @x input dram[0] : tensor<4xf64>\n"
                        "}\n")
    assert position(error) == (2, 3)
    assert error.msg == ("mncore.tensor: element type f64 is not supported at the mncore "
                         "level (supported: f32, i64, i32, i1, ui8)")


@pytest.mark.parametrize("element", ["i16", "index"])
def test_mncore_run_gives_one_message_for_an_unsupported_type(tmp_path: Path,
                                                             element: str) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(graph_add(element))
    done = subprocess.run([str(BIN / "mncore-run"), str(source), "--random-inputs", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"mncore-run: {source}:2:3: error: graph.add: element type {element} is not "
        f"supported at the graph level (supported: {GRAPH_TYPES})")
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------- string literals

UNTERMINATED = '"' + "a" * 4096 + "\n"
LEXER_MESSAGE = "error: End of file reached before closing string literal."


def test_an_unterminated_string_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    source = tmp_path / "s.mlir"
    source.write_text(UNTERMINATED)
    for tool in ("mncore-opt", "mncore-run"):
        done = subprocess.run([str(BIN / tool), str(source)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 1
        assert done.stderr.splitlines()[0] == f"{tool}: {source}:1:1: {LEXER_MESSAGE}"


def test_an_unterminated_string_argument_is_reported_at_once(tmp_path: Path) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(graph_add("f32"))
    done = subprocess.run([str(BIN / "mncore-run"), str(source), "--args",
                           UNTERMINATED.strip()], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"mncore-run: --args[0]:1:1: {LEXER_MESSAGE}"


def test_strings_with_escapes_still_lex() -> None:
    module = parse_module(make_context(),
                          'func.func @main() attributes {s = "a\\"b\\n\\41"} {\n'
                          "  func.return\n}\n", "t.mlir")
    [func] = module.ops
    assert func.attributes["s"].data == 'a"b\nA'  # type: ignore[attr-defined]


def test_bytes_that_are_not_utf8_are_an_error_at_the_first() -> None:
    with pytest.raises(ParseError) as info:
        parse_module(make_context(), b"func.func @f() {\n  func.return \x80\n}\n", "t.mlir")
    assert position(info.value) == (2, 15)
    assert info.value.msg == ("the input is not UTF-8: byte 0x80 at offset 31 (invalid "
                              "start byte)")


# ---------------------------------------------------------------------- dominance

SWAPPED = """\
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %1 = graph.mul %0, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %0 = graph.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %1 : tensor<2xf32>
}
"""


def test_a_use_before_its_definition_is_reported_at_the_use() -> None:
    error = parse_error(SWAPPED)
    assert position(error) == (2, 3)
    assert error.msg == ("operand 0 of graph.mul is a value (result 0 of graph.add), which "
                         "is defined later in the same block (use before definition)")
    assert str(error).splitlines()[1] == SWAPPED.splitlines()[1]


def test_a_use_before_definition_inside_a_fused_body() -> None:
    error = parse_error("""\
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.fused %a : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %2 = graph.neg %1 : tensor<2xf32>
    %1 = graph.add %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    graph.yield %2 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
""")
    assert position(error) == (4, 5)
    assert error.msg.startswith("operand 0 of graph.neg is a value (result 0 of graph.add), "
                                "which is defined later in the same block")


def test_a_task_signalling_an_event_defined_later_is_reported_at_the_task() -> None:
    error = parse_error("""\
task.kernel @k(%x: memref<4xf32>) -> (%y: memref<4xf32>) {
  %t = task.buffer : memref<4xf32>
  task.task @neg ins(%x[0:4]) outs(%t[0:4]) signal(%e)
  %e = task.event triggers 1
  task.task @neg ins(%t[0:4]) outs(%y[0:4]) waits(%e)
  task.body @neg(%a: tensor<f32>) {
    %n = graph.neg %a : tensor<f32>
    task.yield %n : tensor<f32>
  }
  task.return
}
""")
    assert position(error) == (3, 3)
    assert error.msg == ("operand 2 of task.task is %e (result 0 of task.event), which is "
                         "defined later in the same block (use before definition)")


def test_mncore_run_reports_a_use_before_definition(tmp_path: Path) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(SWAPPED)
    done = subprocess.run([str(BIN / "mncore-run"), str(source), "--random-inputs", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"mncore-run: {source}:2:3: error: operand 0 of graph.mul is a value (result 0 of "
        "graph.add), which is defined later in the same block (use before definition)")


# ---------------------------------------------------------------------- integer literals

#: Each integer element type and the values it holds, ``[low, high)``, as MLIR reads
#: them here: signless and signed types are two's complement (``i1`` holds 0 and 1),
#: unsigned types count from 0, ``index`` is a signed 64-bit integer.
INTEGER_RANGES = {
    "i1": (0, 2), "i8": (-(2**7), 2**7), "ui8": (0, 2**8), "si8": (-(2**7), 2**7),
    "i16": (-(2**15), 2**15), "ui16": (0, 2**16), "si16": (-(2**15), 2**15),
    "i32": (-(2**31), 2**31), "ui32": (0, 2**32), "si32": (-(2**31), 2**31),
    "i64": (-(2**63), 2**63), "ui64": (0, 2**64), "si64": (-(2**63), 2**63),
    "index": (-(2**63), 2**63),
}


def parse_literal(text: str) -> DenseIntOrFPElementsAttr:
    attr = LocatingParser(make_context(), text, "lit.mlir").parse_attribute()
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return attr


def literal_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        LocatingParser(make_context(), text, "lit.mlir").parse_attribute()
    return info.value


@pytest.mark.parametrize("element", INTEGER_RANGES)
def test_integer_literals_at_the_ends_of_their_range_parse_exactly(element: str) -> None:
    low, high = INTEGER_RANGES[element]
    for spelling, value in [(low, low), (high - 1, high - 1), (hex(high - 1), high - 1)]:
        attr = parse_literal(f"dense<[{spelling}, 0]> : tensor<2x{element}>")
        if element == "i1":  # xDSL stores true as the 1-bit two's complement -1
            assert [bool(v) for v in attr.get_values()] == [bool(value), False]
        else:
            assert [int(v) for v in attr.get_values()] == [value, 0]


@pytest.mark.parametrize("element", INTEGER_RANGES)
def test_integer_literals_outside_their_range_are_errors_at_the_literal(
        element: str) -> None:
    """Below and above the range, in decimal and hex: ``dense<9223372036854775808> :
    tensor<index>`` was a ``struct.error`` ("argument out of range") with no position,
    and a negative value for an unsigned type named neither the value nor the type."""
    low, high = INTEGER_RANGES[element]
    for spelling in [str(low - 1), str(high), hex(high), str(2**64), str(-(2**63) - 1),
                     "-1" if low == 0 else str(low - 1)]:
        error = literal_error(f"dense<[0, {spelling}]> : tensor<2x{element}>")
        loc = error.span.get_location()
        assert (loc.file, loc.line, loc.col) == ("lit.mlir", 1, 11)
        assert error.span.text == spelling
        assert error.msg == (f"integer value {spelling} is out of range for {element} "
                             f"([{low}, {high}))")


@pytest.mark.parametrize("spelling", ["9223372036854775808", "-9223372036854775809",
                                      "0x8000000000000000"])
def test_an_index_attribute_outside_64_bits_is_an_error(spelling: str) -> None:
    error = literal_error(f"{{n = {spelling} : index}}")
    assert error.span.get_location().col == 6
    assert error.msg == (f"integer value {spelling} is out of range for index "
                         f"([{-(2**63)}, {2**63}))")


def test_the_fuzzed_index_constant_is_an_error_in_mncore_opt(tmp_path: Path) -> None:
    source = tmp_path / "f.mlir"
    source.write_text("func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {\n"
                      "  %c = graph.constant dense<9223372036854775808> : tensor<index>\n"
                      "  func.return %a : tensor<2xi32>\n"
                      "}\n")
    done = subprocess.run([str(BIN / "mncore-opt"), str(source), "-p", "mncore-schedule"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"mncore-opt: {source}:2:29: error: integer value 9223372036854775808 is out of "
        f"range for index ([{-(2**63)}, {2**63}))")


# ---------------------------------------------------------------------- zero-size literals

@pytest.mark.parametrize("literal", [
    "dense<> : tensor<0xf32>",
    "dense<[]> : tensor<0xf32>",
    "dense<[]> : tensor<0xi64>",
    "dense<[[]]> : tensor<1x0xf32>",
    "dense<0x4B800000> : tensor<0xf32>",  # was a ZeroDivisionError
    "dense<0x7F800001> : tensor<2x0xf32>",
    "dense<1.0> : tensor<0xf32>",
    "dense<7> : tensor<0x3xi32>",
    "dense<true> : tensor<0xi1>",
    'dense<"0x"> : tensor<0xf32>',
    'dense<"0x0000803F"> : tensor<0xf32>',  # one element's bytes: a splat, as in MLIR
])
def test_zero_size_literals_parse_to_no_data(literal: str) -> None:
    attr = parse_literal(literal)
    assert len(attr) == 0 and attr.data.data == b""
    assert str(attr.get_type()) == literal.rsplit(": ", 1)[1]


@pytest.mark.parametrize(("literal", "column", "message"), [
    ("dense<[]> : tensor<0x2xf32>", 28,  # xDSL's error, after the type
     "Shape mismatch in dense literal. Expected [0, 2] shape from the type, but got [0] "
     "shape."),
    ("dense<[1.0]> : tensor<0xf32>", 29,
     "Shape mismatch in dense literal. Expected [0] shape from the type, but got [1] "
     "shape."),
    ('dense<"0x00"> : tensor<0xf32>', 7, "a hexadecimal dense literal of 1 byte does not "
     "fit tensor<0xf32>, which takes 0 bytes (or 4 bytes for a splat)"),
    ("dense<0x100000000> : tensor<0xf32>", 7,
     "hexadecimal float literal 0x100000000 has more bits than f32"),
    ("dense<300> : tensor<0xi8>", 7, "integer value 300 is out of range for i8"),
])
def test_zero_size_literals_that_do_not_fit_are_refused(literal: str, column: int,
                                                        message: str) -> None:
    error = literal_error(literal)
    assert error.span.get_location().col == column
    assert message in error.msg


# ---------------------------------------------------------------------- hex strings

@pytest.mark.parametrize(("literal", "message"), [
    ('dense<"0x000000"> : tensor<i32>',  # was an unlocated VerifyException
     "a hexadecimal dense literal of 3 bytes does not fit tensor<i32>, which takes 4 bytes"),
    ('dense<"0x0000000000"> : tensor<2xi32>',  # was "got 1 elements"
     "a hexadecimal dense literal of 5 bytes does not fit tensor<2xi32>, which takes 8 "
     "bytes (or 4 bytes for a splat)"),
    ('dense<"0x0000803F00"> : tensor<f32>',  # was accepted, and failed when printed
     "a hexadecimal dense literal of 5 bytes does not fit tensor<f32>, which takes 4 bytes"),
    ('dense<"0xZZ"> : tensor<i8>', 'a hexadecimal dense literal is "0x" and pairs of hex '
     "digits"),
    ('dense<"1234"> : tensor<2xi8>', 'a hexadecimal dense literal is "0x" and pairs of hex '
     "digits"),
])
def test_hex_strings_that_do_not_fit_their_type_are_errors_at_the_string(
        literal: str, message: str) -> None:
    error = literal_error(literal)
    assert error.span.get_location().col == 7
    assert error.span.text == literal[6:literal.index(">")]
    assert error.msg == message


@pytest.mark.parametrize(("literal", "values"), [
    ('dense<"0x0100000002000000"> : tensor<2xi32>', [1, 2]),
    ('dense<"0xFFFFFFFF"> : tensor<3xi32>', [-1, -1, -1]),
    ('dense<"0xFF00"> : tensor<2xi1>', [-1, 0]),  # xDSL stores true as 0xFF
    ('dense<"0x0000000000000080"> : tensor<index>', [-(2**63)]),
])
def test_hex_strings_that_fit_hold_their_bytes(literal: str, values: list[int]) -> None:
    assert [int(v) for v in parse_literal(literal).get_values()] == values


# ---------------------------------------------------------------------- verifier positions

EMPTY_BODY = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n}\n"
EMPTY_BLOCK = ("Operation func.func contains empty block in single-block region that "
               "expects at least a terminator")


def test_an_empty_function_body_is_an_error_at_the_function() -> None:
    """xDSL checks it in ``Block.verify``, which verifying op by op skipped: the parse
    passed and the pipeline reported it without a position."""
    error = parse_error(EMPTY_BODY)
    assert position(error) == (1, 1)
    assert error.msg == EMPTY_BLOCK


def test_an_empty_nested_function_body_is_an_error_at_that_function() -> None:
    error = parse_error("builtin.module {\n"
                        "  func.func @g() {\n    func.return\n  }\n"
                        "  func.func @f(%x: tensor<2xf32>) {\n  }\n"
                        "}\n")
    assert position(error) == (5, 3)
    assert error.msg == EMPTY_BLOCK


@pytest.mark.parametrize("signature", ["@main()", "@main() -> tensor<2xf32>"])
def test_a_function_without_a_body_is_an_error_at_the_function(signature: str) -> None:
    """xDSL reads ``{}`` without an entry block as a declaration, which
    ``convert-graph-to-task`` failed on with an internal error."""
    error = parse_error(f"func.func {signature} {{\n}}\n")
    assert position(error) == (1, 1)
    assert error.msg == ("func.func @main has no body: a graph-level function is a "
                         "definition, not a declaration")


def test_mncore_opt_reports_an_empty_body_at_its_function(tmp_path: Path) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(EMPTY_BODY)
    done = subprocess.run([str(BIN / "mncore-opt"), str(source), "-p", "graph-decompose"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"mncore-opt: {source}:1:1: error: {EMPTY_BLOCK}"


@pytest.mark.parametrize("signature", ["(%x: memref<2xf32>)", "(%x: i32)"])
def test_a_graph_function_that_is_not_on_tensors_is_an_error_at_it(tmp_path: Path,
                                                                   signature: str) -> None:
    """A ``func.func`` taking or returning something else than tensors (a memref, a
    scalar) is refused by convert-graph-to-task at the function, not an internal
    assertion (found by a probe)."""
    source = tmp_path / "f.mlir"
    source.write_text(f"func.func @f{signature} {{\n  func.return\n}}\n")
    done = subprocess.run([str(BIN / "mncore-opt"), str(source), "-p", "convert-graph-to-task"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    kind = "memref<2xf32>" if "memref" in signature else "i32"
    assert done.stderr.splitlines()[0] == (
        f"mncore-opt: {source}:1:1: error: convert-graph-to-task: @f takes or returns {kind};"
        " a graph function's arguments and results are tensors")


def empty_function() -> tuple[ModuleOp, FuncOp]:
    func = FuncOp("f", FunctionType.from_lists([], []), Region(Block()))
    return ModuleOp([func]), func


def test_check_ir_blames_the_op_with_an_empty_block() -> None:
    module, func = empty_function()
    with pytest.raises(InvalidIRError) as info:
        check_ir(module)
    assert info.value.op is func
    assert str(info.value) == f"the IR given to the pipeline is invalid: {EMPTY_BLOCK}"


class EmptyBodyPass(ModulePass):
    """Leaves ``@main`` with an empty body: invalid IR that only ``Block.verify`` sees."""

    name = "test-empty-body"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        [func] = [f for f in op.walk() if isinstance(f, FuncOp)]
        for inner in reversed(list(func.body.block.ops)):
            inner.detach()
            inner.erase()


class OptWithEmptyBodyPass(MNCoreOptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        self.register_pass(EmptyBodyPass.name, lambda: EmptyBodyPass)


def test_mncore_opt_reports_a_pass_that_empties_a_body_at_the_function(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(graph_add("f32"))
    with pytest.raises(SystemExit) as exit_, cli_errors("mncore-opt"):
        OptWithEmptyBodyPass("test", [str(source), "-p", "test-empty-body"]).run()
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"mncore-opt: {source}:1:1: error: the IR after pass 'test-empty-body' is "
        f"invalid: {EMPTY_BLOCK}")


def test_syntax_past_an_op_s_format_says_what_was_found() -> None:
    """xDSL says only "in block definition" when an op's syntax ends before the line
    does; the error names the token, at its position."""
    error = parse_error("func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                        "  %y = graph.exp %x : tensor<8xf32> -> tensor<8xf32>\n"
                        "  func.return %y : tensor<8xf32>\n}\n")
    assert "expected an operation, a block label or '}', found '->'" in str(error)
    assert position(error) == (2, 37)



@pytest.mark.parametrize(("second", "row", "blamed", "over"), [
    ("@z input dram[2] : tensor<4xf32>", 3, "@z (dram[2], 4 words)", "@x (dram[0])"),
    ("@z input dram[40] : tensor<4xf32>", 3, "@z (dram[40], 4 words)", "@big (dram[30])")])
def test_mncore_tensors_laid_over_each_other_are_refused_at_the_later(
        second: str, row: int, blamed: str, over: str) -> None:
    """An mncore program's inputs, outputs and constants each have words of their own:
    an input laid over another read the other's words, without an error (found by a
    probe); blamed on the later one in DRAM."""
    text = ("mncore.program @p machine \"tiny\" {\n"
            "  mncore.tensor @x input dram[0] : tensor<4xf32>\n"
            f"  mncore.tensor {second}\n"
            "  mncore.tensor @w output dram[50] : tensor<4xf32>\n"
            "  mncore.tensor @big constant dram[30] = dense<0.0> : tensor<40xf32>\n}")
    error = parse_error(text)
    assert position(error)[0] == row
    assert f"{blamed} overlaps {over}: a program's inputs, outputs and constants" in error.msg
