"""Parse-time diagnoses with a source position: element types a level does not
support, an unterminated string literal (answered at once, not after exponential
backtracking), and a value used before its definition."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.utils.exceptions import ParseError

from mncore_ir.dialects import graph as g
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import make_context

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

UNSUPPORTED = ["bf16", "f16", "f80", "f128", "index", "i8", "i16", "i128", "ui32", "si64"]


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
                         "level (supported: f32, f64, i64, i32, i1, ui8)")


@pytest.mark.parametrize("element", [str(t) for t in g.ELEMENT_TYPES.values()])
def test_every_supported_graph_element_type_parses(element: str) -> None:
    parse_module(make_context(), graph_add(element), "t.mlir")


def test_a_graph_constant_of_an_unsupported_type_is_rejected_at_the_constant() -> None:
    error = parse_error("func.func @main() -> tensor<2xbf16> {\n"
                        "  %0 = graph.constant dense<1.0> : tensor<2xbf16>\n"
                        "  func.return %0 : tensor<2xbf16>\n"
                        "}\n")
    assert position(error) == (2, 3)
    assert "graph.constant: element type bf16 is not supported at the graph level" in error.msg


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
                        '  task.task "neg" ins(%x[0:4]) outs(%y[0:4])\n'
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


@pytest.mark.parametrize("element", ["bf16", "index"])
def test_mncore_run_gives_one_message_for_an_unsupported_type(tmp_path: Path,
                                                             element: str) -> None:
    source = tmp_path / "f.mlir"
    source.write_text(graph_add(element))
    done = subprocess.run([str(BIN / "mncore-run"), str(source), "--random-inputs", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"mncore-run: {source}:2:3: error: graph.add: element type {element} is not "
        "supported at the graph level (supported: f32, f64, i64, i32, i1, ui8)")
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
  task.task "neg" ins(%x[0:4]) outs(%t[0:4]) signal(%e)
  %e = task.event triggers 1
  task.task "neg" ins(%t[0:4]) outs(%y[0:4]) waits(%e)
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
