"""``mncore-run --random-inputs``: inputs drawn in their own dtype (the memory they take
is about their own size), within each type's range, and sizes checked in total."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.element_types import NARROW_FLOATS
from mncore_ir.dialects.values import as_element_type, numpy_dtype
from mncore_ir.tools import mncore_run
from mncore_ir.tools.mncore_run import random_inputs

SHAPE = (512, 1024)


@pytest.mark.parametrize("name", list(g.ELEMENT_TYPES))
def test_drawing_takes_about_the_inputs_own_memory(name: str) -> None:
    """The fuzzer's case: a float32 input just under the 1 GiB limit took over 1 GiB more
    to draw (a float64 draw, then a cast)."""
    typ = TensorType(g.ELEMENT_TYPES[name], SHAPE)
    random_inputs([TensorType(typ.element_type, (1,))], seed=0, int_high=4)  # warm caches
    tracemalloc.start()
    try:
        (value,) = random_inputs([typ], seed=0, int_high=4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert value.dtype == numpy_dtype(typ.element_type) and value.shape == SHAPE
    if typ.element_type in NARROW_FLOATS:  # held in f32, every value the type's own
        assert np.array_equal(value, as_element_type(value, typ.element_type))
    assert peak <= 1.1 * value.nbytes + 64 * 1024, (peak, value.nbytes)


def test_values_keep_to_each_types_range() -> None:
    types = [TensorType(g.ELEMENT_TYPES[n], (4096,)) for n in ("uint8", "int32", "bool")]
    small, wide, flags = random_inputs(types, seed=1, int_high=1000)
    assert small.min() >= 0 and small.max() == 255  # [0, 256): uint8 cannot hold 999
    assert 255 < wide.max() < 1000 and wide.min() >= 0
    assert set(np.unique(flags)) == {False, True}


def run_tool(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        mncore_run.main(argv)
        raise SystemExit(0)
    return exit_info.value.code, capsys.readouterr().err


TWO_INPUTS = """func.func @main(%a: tensor<150xf32>, %b: tensor<150xf32>) -> tensor<150xf32> {
  %c = graph.add %a, %b : tensor<150xf32>, tensor<150xf32> -> tensor<150xf32>
  func.return %c : tensor<150xf32>
}
"""


def test_all_inputs_together_are_checked_against_the_limit(tmp_path, capsys) -> None:
    path = tmp_path / "two.mlir"
    path.write_text(TWO_INPUTS)
    code, err = run_tool([str(path), "--random-inputs", "0", "--max-bytes", "1000"], capsys)
    assert code == 1
    assert err == ("mncore-run: error: the inputs of @main take 1,200 bytes, more than the "
                   "limit of 1,000 bytes for all inputs\n")
    code, _ = run_tool([str(path), "--random-inputs", "0", "--max-bytes", "1200"], capsys)
    assert code == 0


def test_int_high_must_be_positive(tmp_path, capsys) -> None:
    path = tmp_path / "two.mlir"
    path.write_text(TWO_INPUTS)
    code, err = run_tool([str(path), "--random-inputs", "0", "--int-high", "0"], capsys)
    assert code == 2 and "Traceback" not in err
    assert "argument --int-high: 0 is not a positive integer" in err
