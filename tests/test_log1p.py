"""``log1p``, the op added to show what a new elementwise op costs: its IRDL class, one
semantics-table entry (numpy reference, torch spelling, decomposition) and one importer
mapping. Every level must then give eager's values without any change of its own: the
interpreter and the cpu executor through the table's reference and spelling, the task
simulator through the interpreter, Triton and MN-Core through the decomposition, and
torch_mncore through the importer.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import assert_all_close

import torch_mncore
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.graph_torch import compile_module
from mncore_ir.targets.mncore_simulator import find_program
from mncore_ir.targets.mncore_simulator import simulate as simulate_program
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.task_simulator import simulate as simulate_kernel
from mncore_ir.targets.triton_megakernel import generate, load

TO_TASK = "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task{elementwise_tile=16}"
TO_TINY = f"{TO_TASK},convert-task-to-mncore{{machine=tiny}},mncore-schedule"

#: Where log1p is hard: below f32's epsilon (1 + x rounds to 1), around -1 (-inf), below
#: it (NaN), large, infinite, signed zeros; then ordinary values.
SPECIAL = [0.0, -0.0, 1e-10, -1e-10, 3e-8, -3e-8, 1e-5, -1e-5, -1.0, -1.5, -0.999, 1e10,
           3e38, np.inf, -np.inf, np.nan]


def values(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ordinary = np.concatenate([rng.uniform(-0.99, 4, 40), 10.0 ** rng.uniform(-7, 6, 24)])
    return np.concatenate([SPECIAL, ordinary]).astype(np.float32)


def graph_module(x: np.ndarray, fn=torch.log1p):
    captured = capture(lambda x: fn(x) * 2.0, torch.from_numpy(x))
    return captured, lambda: import_captured(captured)


def assert_eager(out: np.ndarray, x: np.ndarray, level: str) -> None:
    expected = (torch.log1p(torch.from_numpy(x)) * 2.0).numpy()
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=0, equal_nan=True,
                               err_msg=f"log1p at the {level} level")


def test_the_importer_maps_log1p() -> None:
    _, module_of = graph_module(values())
    text = str(module_of())
    assert "graph.log1p" in text


def test_log1p_at_every_level_equals_eager(tmp_path: object) -> None:
    x = values()
    _, module_of = graph_module(x)
    task = module_of()
    apply_pipeline(task, TO_TASK)
    tiny = module_of()
    apply_pipeline(tiny, TO_TINY)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        outs = {
            "interp": run_function(module_of(), [x])[0],
            "cpu": compile_module(module_of())(torch.from_numpy(x))[0].numpy(),
            "task": simulate_kernel(find_kernel(task), [x])[0],
            "triton": load(generate(find_kernel(task)), str(tmp_path)).run(
                torch.from_numpy(x))[0].numpy(),
            "mncore": simulate_program(find_program(tiny), [x])[0][0],
        }
    for level, out in outs.items():
        assert_eager(out, x, level)


def test_log1p_is_no_worse_than_log_of_one_plus() -> None:
    """The decomposition keeps log1p's point: tiny inputs are not lost to ``1 + x``."""
    x = np.array([1e-10, -3e-9, 2e-8], np.float32)
    _, module_of = graph_module(x)
    tiny = module_of()
    apply_pipeline(tiny, TO_TINY)
    out = simulate_program(find_program(tiny), [x])[0][0]
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


@pytest.mark.parametrize("device", ["interp", "cpu", "task", "mncore"])
def test_log1p_through_torch_mncore(device: str) -> None:
    x = torch.from_numpy(values(1)[np.isfinite(values(1))])
    torch_mncore.init(device, implicit_sync="error")
    try:
        y = torch.log1p(x.mncore()) + x.mncore().log1p()
        torch_mncore.sync()
        got = y.cpu()
    finally:
        torch_mncore.init("cpu")
    assert_all_close([got.numpy()], [(torch.log1p(x) * 2).numpy()])
