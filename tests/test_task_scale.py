"""Large tensors at the task level (issue 11, fuzzer hangs on sizes of 100,000).

* Tiling: a task holds about ``elementwise_tile`` elements, so a row-wise op, reduction
  or embedding over 100,000 short rows is a few hundred tasks, not one per 16 rows;
  long rows keep ``row_tile`` rows. Bigger row tiles compute what eager PyTorch does.
* Verification: each task is verified once per verification of the module (not again
  by its kernel), whether the module is verified by xDSL or by the parser; an invalid
  task is still reported at the task when the kernel's checks see it first.
* The task budget: ``max_tasks`` (default 50,000) refuses a kernel at the op that would
  exceed it, before any task is made, with the file position.
* The written-once check counts cells or sweeps, and both agree with counting elements.
* The fuzzer gives ``convert-graph-to-task`` its task budget wherever it runs it.
"""

from __future__ import annotations

import gc
import io
import math
import re
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.printer import Printer

from mncore_ir.dialects import task as t
from mncore_ir.dialects import task_regions
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.task_simulator import find_kernel, simulate
from mncore_ir.tools import mncore_opt
from mncore_ir.transforms.convert_graph_to_task import TaskConversionError
from tests.fuzz.run import MAX_TASKS, mncore_pipeline, pipelines


def lower(text: str, options: str = "") -> ModuleOp:
    module = parse_module(make_context(), text, "scale.mlir")
    apply_pipeline(module, f"convert-graph-to-task{options}", make_context())
    return module


def tasks_of(text: str) -> list[t.TaskOp]:
    return find_kernel(lower(text)).tasks()


SOFTMAX = """func.func @main(%x: tensor<{rows}x{cols}xf32>) -> tensor<{rows}x{cols}xf32> {{
  %y = graph.softmax %x dim 1 : tensor<{rows}x{cols}xf32>
  return %y : tensor<{rows}x{cols}xf32>
}}
"""
LAYER_NORM = """func.func @main(%x: tensor<100000x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>)
    -> tensor<100000x8xf32> {
  %y, %m, %r = graph.layer_norm %x, %w, %b dims 1 eps 1.000000e-05
      : tensor<100000x8xf32>, tensor<8xf32>, tensor<8xf32>
      -> tensor<100000x8xf32>, tensor<100000x1xf32>, tensor<100000x1xf32>
  return %y : tensor<100000x8xf32>
}
"""
SUM = """func.func @main(%x: tensor<100000x100xf32>) -> tensor<100000xf32> {
  %s = graph.sum %x dims = array<i64: 1> : tensor<100000x100xf32> -> tensor<100000xf32>
  return %s : tensor<100000xf32>
}
"""
EMBEDDING = """func.func @main(%w: tensor<10x4xf32>, %i: tensor<100000xi64>)
    -> tensor<100000x4xf32> {
  %e = graph.embedding %w[%i] : tensor<10x4xf32>, tensor<100000xi64> -> tensor<100000x4xf32>
  return %e : tensor<100000x4xf32>
}
"""
ADD = """func.func @main(%x: tensor<100000x100xf32>) -> tensor<100000x100xf32> {
  %a = graph.add %x, %x : tensor<100000x100xf32>, tensor<100000x100xf32> -> tensor<100000x100xf32>
  return %a : tensor<100000x100xf32>
}
"""


@pytest.mark.parametrize(("text", "rows_per_task", "rows"), [
    (SOFTMAX.format(rows=100000, cols=8), 4096 // 8, 100000),
    (LAYER_NORM, 4096 // 8, 100000),
    (SUM, 4096 // 100, 100000),
    (EMBEDDING, 4096 // 4, 100000),
    (ADD, 4096 // 100, 100000),  # elementwise: tiles of whole short rows already
    (SOFTMAX.format(rows=6400, cols=1024), 16, 6400),  # long rows: row_tile rows a task
    # long rows that row_tile would give to 4 tasks of 132 workers: one a task
    (SOFTMAX.format(rows=64, cols=1024), 1, 64),
])
def test_tasks_hold_about_elementwise_tile_elements(text: str, rows_per_task: int,
                                                    rows: int) -> None:
    tasks = tasks_of(text)
    assert len(tasks) == math.ceil(rows / rows_per_task)
    first_output = tasks[0].writes()[0][1]
    assert first_output.sizes[0] == rows_per_task


def test_row_tile_stays_the_least_rows_a_task_holds() -> None:
    """... unless the tasks would be too few for the workers (fill_workers)."""
    module = lower(SOFTMAX.format(rows=100, cols=8),
                   "{row_tile=64 elementwise_tile=8 fill_workers=false}")
    assert [task.writes()[0][1].sizes[0] for task in find_kernel(module).tasks()] == [64, 36]
    module = lower(SOFTMAX.format(rows=100, cols=8), "{row_tile=64 elementwise_tile=8}")
    assert [task.writes()[0][1].sizes[0] for task in find_kernel(module).tasks()] == [1] * 100


SHORT_ROWS = """func.func @main(%x: tensor<3000x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>,
                %table: tensor<7x3xf32>, %ids: tensor<3000xi64>)
    -> (tensor<3000x3xf32>, tensor<3000x3xf32>, tensor<3000x3xf32>, tensor<3000xf32>,
        tensor<3000x3xf32>) {
  %s = graph.softmax %x dim 1 : tensor<3000x3xf32>
  %l = graph.log_softmax %x dim 1 : tensor<3000x3xf32>
  %y, %m, %r = graph.layer_norm %x, %w, %b dims 1 eps 1.000000e-05
      : tensor<3000x3xf32>, tensor<3xf32>, tensor<3xf32>
      -> tensor<3000x3xf32>, tensor<3000x1xf32>, tensor<3000x1xf32>
  %a = graph.amax %x dims = array<i64: 1> : tensor<3000x3xf32> -> tensor<3000xf32>
  %e = graph.embedding %table[%ids] : tensor<7x3xf32>, tensor<3000xi64> -> tensor<3000x3xf32>
  return %s, %l, %y, %a, %e : tensor<3000x3xf32>, tensor<3000x3xf32>, tensor<3000x3xf32>,
                             tensor<3000xf32>, tensor<3000x3xf32>
}
"""


def test_tasks_of_many_short_rows_compute_what_torch_does() -> None:
    generator = torch.Generator().manual_seed(0)
    x, w, b, table = (torch.randn(*shape, generator=generator)
                      for shape in ((3000, 3), (3,), (3,), (7, 3)))
    ids = torch.randint(0, 7, (3000,), generator=generator)
    kernel = find_kernel(lower(SHORT_ROWS))
    assert len(kernel.tasks()) == 5 * math.ceil(3000 / (4096 // 3))
    for seed in (None, 1):
        got = simulate(kernel, [a.numpy() for a in (x, w, b, table, ids)], seed)
        expected = [torch.softmax(x, 1), torch.log_softmax(x, 1),
                    torch.nn.functional.layer_norm(x, (3,), w, b, 1e-5), x.amax(1),
                    torch.nn.functional.embedding(ids, table)]
        for g_, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g_, e.numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- verification


@pytest.fixture
def task_verifications(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[t.TaskOp]]:
    """The tasks whose ``verify_`` runs, in order."""
    seen: list[t.TaskOp] = []
    verify = t.TaskOp.verify_

    def counting(self: t.TaskOp) -> None:
        seen.append(self)
        verify(self)

    monkeypatch.setattr(t.TaskOp, "verify_", counting)
    yield seen


CHAIN = """func.func @main(%x: tensor<64x96xf32>) -> tensor<64xf32> {
  %a = graph.exp %x : tensor<64x96xf32>
  %s = graph.sum %a dims = array<i64: 1> : tensor<64x96xf32> -> tensor<64xf32>
  return %s : tensor<64xf32>
}
"""


def test_each_task_is_verified_once_by_xdsl(task_verifications: list[t.TaskOp]) -> None:
    module = lower(CHAIN, "{elementwise_tile=96 row_tile=4 fill_workers=false}")
    tasks = find_kernel(module).tasks()
    assert len(tasks) == 64 + 16
    task_verifications.clear()
    module.verify()
    assert sorted(map(id, task_verifications)) == sorted(map(id, tasks))


def test_each_task_is_verified_once_by_the_parser(task_verifications: list[t.TaskOp]) -> None:
    text = str(lower(CHAIN, "{elementwise_tile=96 row_tile=4 fill_workers=false}"))
    task_verifications.clear()
    tasks = find_kernel(parse_module(make_context(), text, "kernel.mlir")).tasks()
    assert sorted(map(id, task_verifications)) == sorted(map(id, tasks))


def test_an_invalid_task_seen_first_by_its_kernel_is_blamed() -> None:
    """The parser verifies a kernel before its tasks: a task whose output region is out
    of bounds also breaks the written-once check, and the task's error comes first."""
    kernel = find_kernel(lower(CHAIN, "{elementwise_tile=96 row_tile=4 fill_workers=false}"))
    bad = kernel.tasks()[-1]
    (tile,) = bad.out_tiles.data
    bad.out_tiles = ArrayAttr([t.Tile((62,), (4,)).attr()])
    assert t.Tile.of(tile) == t.Tile((60,), (4,))
    with pytest.raises(t.OpVerifyException, match=r"output 0: region \[62:66\] is out of "
                       r"bounds in dimension 0 \(size 64\)") as info:
        kernel.verify_()
    assert info.value.op is bad


def test_tasks_print_and_parse_back_generically() -> None:
    """Tasks are built without IRDL's builder: the generic form (operand segments
    included) parses back to the same kernel."""
    module = lower(CHAIN, "{elementwise_tile=96 row_tile=4 fill_workers=false}")
    generic = io.StringIO()
    Printer(stream=generic, print_generic_format=True).print_op(module)
    assert "operandSegmentSizes = array<i32: 1, 1, 0, 1>" in generic.getvalue()
    again = parse_module(make_context(), generic.getvalue(), "generic.mlir")
    assert str(again) == str(module)


# --------------------------------------------------------------------------- the budget


def test_default_task_budget_is_diagnosed_at_the_op(tmp_path, capsys) -> None:
    path = tmp_path / "big.mlir"
    path.write_text("""func.func @main(%x: tensor<4000x100000xf32>) -> tensor<4000x100000xf32> {
  %a = graph.exp %x : tensor<4000x100000xf32>
  return %a : tensor<4000x100000xf32>
}
""")
    with pytest.raises(SystemExit) as exit_info:
        mncore_opt.main([str(path), "-p", "convert-graph-to-task"])
    err = capsys.readouterr().err
    assert exit_info.value.code != 0 and "Traceback" not in err
    assert (f"{path}:2:3: error: graph.exp: lowering it would make 100,000 tasks in @main, "
            "more than max_tasks=50,000 (larger tiles make fewer tasks: elementwise_tile, "
            "row_tile, matmul_tile)") in err


@pytest.mark.parametrize("enabled", [True, False])
def test_the_pass_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with pytest.raises(TaskConversionError, match="more than max_tasks=1"):
            lower(CHAIN, "{max_tasks=1}")
        assert gc.isenabled() == enabled
        lower(CHAIN)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_the_fuzzer_gives_every_task_conversion_its_budget() -> None:
    specs = [p for p in (*pipelines(), mncore_pipeline()) if "convert-graph-to-task" in p]
    assert len(specs) >= 2
    for spec in specs:
        conversions = re.findall(r"convert-graph-to-task(\{[^}]*\})?", spec)
        assert conversions and all(f"max_tasks={MAX_TASKS}" in c for c in conversions), spec


# --------------------------------------------------------------------------- written once


boxes = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(1, 6),
                           st.integers(1, 5)), min_size=0, max_size=8)


@pytest.mark.parametrize("cells_per_tile", [0, 10**9])  # always sweep / always count cells
@settings(max_examples=150, deadline=None)
@given(tiles=boxes)
def test_written_once_agrees_with_counting_elements(cells_per_tile: int, tiles: list) -> None:
    shape = (6, 5)
    tiles = [t.Tile((r, c), (min(h, shape[0] - r), min(w, shape[1] - c)))
             for r, c, h, w in tiles]
    counts = np.zeros(shape, np.int64)
    for tile in tiles:
        counts[tile.slices()] += 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(task_regions, "_CELLS_PER_TILE", cells_per_tile)
        assert t.covered_once(shape, tiles) == bool((counts == 1).all())
    if not (counts == 1).all():
        first = tuple(int(i) for i in np.argwhere(counts != 1)[0])
        assert t.first_miscounted(shape, tiles) == (first, counts[first])
