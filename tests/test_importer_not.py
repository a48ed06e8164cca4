"""``torch.logical_not`` and ``torch.bitwise_not`` of every dtype equal eager at every
graph-level executor: an integer's complement is ``-x - 1``, a number's logical not is
a comparison with zero (both used to import as ``graph.not``, which takes booleans
only, so the IR did not verify)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torch_mncore
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.graph_torch import compile_module

VALUES = {
    torch.bool: torch.tensor([True, False, True]),
    torch.uint8: torch.tensor([0, 5, 255], dtype=torch.uint8),
    torch.int32: torch.tensor([5, 0, -3, 2**31 - 1, -2**31], dtype=torch.int32),
    torch.int64: torch.tensor([5, 0, -3, 2**63 - 1, -2**63]),
    torch.float32: torch.tensor([0.0, -0.0, 1.5, float("nan")]),
}


@pytest.mark.parametrize("fn", [torch.logical_not, torch.bitwise_not])
@pytest.mark.parametrize("dtype", list(VALUES), ids=str)
def test_not_matches_eager(fn, dtype: torch.dtype) -> None:
    x = VALUES[dtype]
    if fn is torch.bitwise_not and dtype.is_floating_point:
        with pytest.raises(Exception, match="bitwise_not"):
            import_captured(capture(lambda t: fn(t), x))
        return
    module = import_captured(capture(lambda t: fn(t), x))
    module.verify()
    expected = fn(x).numpy()
    got = run_function(module, [x.numpy()])[0]
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
    cpu = compile_module(module)(x)[0].numpy()
    np.testing.assert_array_equal(cpu, expected)
    apply_pipeline(module, "canonicalize,cse,graph-fuse-elementwise,convert-graph-to-task")


def test_bitwise_not_through_torch_mncore() -> None:
    x = VALUES[torch.int64]
    torch_mncore.init("task", implicit_sync="error")
    try:
        y = torch.bitwise_not(x.mncore())
        torch_mncore.sync()
        got = y.cpu()
    finally:
        torch_mncore.init("cpu")
    assert torch.equal(got, torch.bitwise_not(x))
