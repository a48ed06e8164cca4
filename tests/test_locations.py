"""Source locations: the parser gives each op its ``file:line:col`` (as MLIR's does)
and convert-graph-to-task copies the graph op's onto the tasks and body ops it makes,
so a later pass's error can point at the user's line."""

from __future__ import annotations

import io

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.printer import Printer

from mncore_ir.dialects import task as t
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context, module_text

TEXT = """\
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
                                        tensor<4x8xf32>) {
  %a = graph.exp %x : tensor<4x8xf32>
  %b = graph.tanh %a : tensor<4x8xf32>
  func.return %a, %b, %b, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
"""


def where(op: Operation) -> tuple[str, int, int]:
    location = op.location
    assert isinstance(location, FileLineColLoc), location
    return location.filename.data, location.line.data, location.column.data


def test_parsed_ops_get_their_source_locations() -> None:
    module = parse_module(make_context(), TEXT, "f.mlir")
    func = module.ops.first
    assert func is not None
    assert where(func) == ("f.mlir", 1, 1)
    assert [where(op) for op in func.walk()][1:] == [("f.mlir", 3, 3), ("f.mlir", 4, 3),
                                                    ("f.mlir", 5, 3)]


def test_a_written_location_is_kept() -> None:
    text = TEXT.replace("graph.exp %x : tensor<4x8xf32>",
                        'graph.exp %x : tensor<4x8xf32> loc("train.py":12:5)')
    module = parse_module(make_context(), text, "f.mlir")
    assert ("train.py", 12, 5) in [where(op) for op in module.walk() if op is not module]


def test_tasks_and_bodies_carry_the_graph_ops_locations() -> None:
    """Every task (the copies into the outputs that are not written directly among
    them: ``%b`` a second time and the input ``%x``) and every op of its body."""
    module = parse_module(make_context(), TEXT, "f.mlir")
    apply_pipeline(module, "convert-graph-to-task{elementwise_tile=16}")
    kernel = t.find_kernel(module)
    lines = {where(task)[1] for task in kernel.tasks()}
    assert lines == {3, 4, 5}  # exp, tanh, the return's copies
    copies = [task for task in kernel.tasks() if where(task)[1] == 5]
    assert len(copies) == 2 * 32 // 16  # two outputs of 32 elements in tiles of 16
    bodies = kernel.bodies()
    body_lines = {where(op)[1] for body in bodies.values() for op in body.walk()
                  if op.name in ("graph.exp", "graph.tanh")}
    assert body_lines == {3, 4}


def test_printed_locations_parse_back_as_they_were() -> None:
    """``--print-debuginfo``'s text of a task kernel (its block arguments' and ops'
    ``loc(...)``, ``loc(unknown)`` included) parses back with the same locations: the
    kernel's and bodies' arguments took no location, and a written ``loc(unknown)``
    became the text's own position."""
    module = parse_module(make_context(), TEXT, "f.mlir")
    apply_pipeline(module, "convert-graph-to-task{elementwise_tile=16}")
    text = module_text(module, locations=True)
    stream = io.StringIO()
    Printer(stream, print_debuginfo=True).print_op(module)
    again = parse_module(make_context(), stream.getvalue(), "printed.mlir")
    assert module_text(again, locations=True) == text
    assert "printed.mlir" not in module_text(again, locations=True)
