"""Collectives: the graph level's ops over simulated ranks (the reference interpreter,
against the same computation on one device), their import from torch.distributed's
functional collectives, and real two-process runs under torchrun (gloo) on each device:
``dist.*`` calls on device tensors, collectives recorded into a step's graph, a
tensor-parallel MLP and data-parallel training equal to single-process training."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.testing._internal.distributed.fake_pg import FakeStore

from mncore_ir.dialects.task import computation
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import InterpretationError, run_function, run_ranks
from mncore_ir.targets.graph_torch import compile_module
from mncore_ir.targets.task_simulator import find_kernel, predecessors, simulate_ranks
from mncore_ir.targets.task_timing import MachineModel, chrome_trace, estimate

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", "2"]


@pytest.fixture
def fake_world() -> Iterator[None]:
    """A two-rank process group that only traces (torch's fake backend)."""
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _shards(seed: int = 0) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
    g = torch.Generator().manual_seed(seed)
    x, w1 = torch.randn(4, 8, generator=g), torch.randn(16, 8, generator=g)
    b1, w2 = torch.randn(16, generator=g), torch.randn(8, 16, generator=g)
    halves = [slice(0, 8), slice(8, 16)]
    return [x, w1, b1, w2], [[x, w1[h], b1[h], w2[:, h]] for h in halves]


def tensor_parallel_mlp(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor,
                        w2: torch.Tensor) -> torch.Tensor:
    """Megatron-LM's MLP on one rank: columns of the first linear, rows of the second."""
    h = torch.relu(x @ w1.t() + b1)
    return funcol.all_reduce(h @ w2.t(), "sum", dist.group.WORLD)


def sequence_parallel_mlp(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor,
                          w2: torch.Tensor) -> torch.Tensor:
    """The same with the rows of ``x`` split over ranks: all-gather in, reduce-scatter
    out (Megatron's sequence parallelism)."""
    whole = funcol.all_gather_single(x, 0, dist.group.WORLD)
    h = torch.relu(whole @ w1.t() + b1)
    return funcol.reduce_scatter_single(h @ w2.t(), "sum", 0, dist.group.WORLD)


def test_tensor_parallel_mlp_on_simulated_ranks_equals_one_device(fake_world: None) -> None:
    (x, w1, b1, w2), shards = _shards()
    module = import_captured(capture(tensor_parallel_mlp, *shards[0]))
    apply_pipeline(module, "canonicalize,cse,dce")
    assert 'graph.all_reduce %mm_1 "sum" group "0" size 2' in str(module)
    outs = run_ranks(module, [[t.numpy() for t in s] for s in shards])
    expected = (torch.relu(x @ w1.t() + b1) @ w2.t()).numpy()
    for rank_outs in outs:
        np.testing.assert_allclose(rank_outs[0], expected, rtol=1e-5, atol=1e-5)


def test_sequence_parallel_mlp_on_simulated_ranks(fake_world: None) -> None:
    (x, w1, b1, w2), shards = _shards(1)
    shards = [[x[r * 2:(r + 1) * 2], *s[1:]] for r, s in enumerate(shards)]
    module = import_captured(capture(sequence_parallel_mlp, *shards[0]))
    text = str(module)
    assert "graph.all_gather" in text and 'graph.reduce_scatter' in text
    outs = run_ranks(module, [[t.numpy() for t in s] for s in shards])
    expected = (torch.relu(x @ w1.t() + b1) @ w2.t()).numpy()
    np.testing.assert_allclose(np.concatenate([o[0] for o in outs]), expected, rtol=1e-5,
                               atol=1e-5)


COLLECTIVES_IR = """
func.func @main(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>,
                                          tensor<12x2xf32>, tensor<1x2xf32>) {
  %a = graph.all_reduce %x "avg" group "g" size 3 : tensor<4x2xf32> -> tensor<4x2xf32>
  %b = graph.all_reduce %x "max" group "g" size 3 : tensor<4x2xf32> -> tensor<4x2xf32>
  %c = graph.all_reduce %x "product" group "g" size 3 : tensor<4x2xf32> -> tensor<4x2xf32>
  %d = graph.all_gather %x group "g" size 3 : tensor<4x2xf32> -> tensor<12x2xf32>
  %e = graph.reduce_scatter %d "min" group "g" size 3 : tensor<12x2xf32> -> tensor<4x2xf32>
  %f = graph.slice %e dim 0 [0:1] : tensor<4x2xf32> -> tensor<1x2xf32>
  func.return %a, %b, %c, %d, %f : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>,
                                  tensor<12x2xf32>, tensor<1x2xf32>
}
"""


def test_every_reduction_on_three_ranks() -> None:
    module = parse_module(make_context(), COLLECTIVES_IR)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((4, 2)).astype(np.float32) for _ in range(3)]
    outs = run_ranks(module, [[x] for x in xs])
    stacked = np.stack(xs)
    for rank, (a, b, c, d, f) in enumerate(outs):
        np.testing.assert_allclose(a, stacked.mean(0), rtol=1e-6)
        np.testing.assert_array_equal(b, stacked.max(0))
        np.testing.assert_allclose(c, stacked.prod(0), rtol=1e-6)
        np.testing.assert_array_equal(d, np.concatenate(xs))
        # every rank gathered the same rows: rank r keeps rows 4r..4r+3 of their minimum
        np.testing.assert_array_equal(f, np.concatenate(xs)[4 * rank:4 * rank + 1])


def test_empty_collectives() -> None:
    """Zero-size values go through every collective (each rank still meets the others)."""
    text = COLLECTIVES_IR.replace("4x2", "0x2").replace("12x2", "0x2").replace("1x2", "0x2")
    text = text.replace("[0:1]", "[0:0]")
    outs = run_ranks(parse_module(make_context(), text), [[np.zeros((0, 2), np.float32)]] * 3)
    assert all(o.shape == (0, 2) for rank in outs for o in rank)


def test_a_collective_needs_its_ranks() -> None:
    module = parse_module(make_context(), COLLECTIVES_IR)
    x = np.zeros((4, 2), np.float32)
    with pytest.raises(InterpretationError, match=r"graph\.all_reduce needs the other ranks"):
        run_function(module, [x])
    with pytest.raises(InterpretationError, match="for a group of 3 ranks, run on 2"):
        run_ranks(module, [[x], [x]])


def test_the_cpu_code_calls_torch_distributed() -> None:
    source = compile_module(parse_module(make_context(), COLLECTIVES_IR)).source
    assert "_dist.all_reduce(x, 'avg', 'g', 3)" in source
    assert "_dist.reduce_scatter(" in source


def test_a_target_without_collectives_refuses_them_at_the_op() -> None:
    module = parse_module(make_context(), COLLECTIVES_IR)
    with pytest.raises(Exception, match="this target has no collective tasks"):
        apply_pipeline(module, "convert-graph-to-task{collectives=false}")


def _task_kernel(fn: Any, shards: list[list[torch.Tensor]], tile: int = 16) -> Any:
    module = import_captured(capture(fn, *shards[0]))
    apply_pipeline(module, "canonicalize,cse,dce,graph-fuse-elementwise,"
                           f"convert-graph-to-task{{matmul_tile={tile},{tile}}}")
    return find_kernel(module)


@pytest.mark.parametrize("fn", [tensor_parallel_mlp, sequence_parallel_mlp])
def test_collective_tasks_on_simulated_devices(fake_world: None, fn: Any) -> None:
    """The megakernel simulator over two devices equals the whole MLP on one, in the
    kernel's order and in random orders its events allow."""
    (x, w1, b1, w2), shards = _shards(2)
    if fn is sequence_parallel_mlp:
        shards = [[x[r * 2:(r + 1) * 2], *s[1:]] for r, s in enumerate(shards)]
    kernel = _task_kernel(fn, shards)
    expected = (torch.relu(x @ w1.t() + b1) @ w2.t()).numpy()
    for seed in (None, 1, 2):
        outs = simulate_ranks(kernel, [[t.numpy() for t in s] for s in shards], seed)
        got = outs[0][0] if fn is tensor_parallel_mlp else np.concatenate([o[0] for o in outs])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_an_all_reduce_tile_waits_only_for_the_tiles_it_reads(fake_world: None) -> None:
    """MPK's fine-grained overlap: each all-reduce task depends on the one matmul task
    that writes its tile, not on the whole matmul."""
    g = torch.Generator().manual_seed(0)
    shards = [[torch.randn(32, 16, generator=g), torch.randn(16, 32, generator=g)]] * 2
    kernel = _task_kernel(lambda a, b: funcol.all_reduce(a @ b, "sum", dist.group.WORLD),
                          shards)
    tasks, bodies = kernel.tasks(), kernel.bodies()
    kinds = [type(computation(task, bodies)).__name__ for task in tasks]
    assert kinds.count("MatmulOp") == 4 and kinds.count("AllReduceOp") == 4, kinds
    preds = predecessors(kernel)
    for index, kind in enumerate(kinds):
        if kind == "AllReduceOp":
            (only,) = preds[index]
            assert kinds[only] == "MatmulOp"
            assert tasks[only].writes()[0][1] == tasks[index].reads()[0][1]


def test_fine_grained_collectives_beat_whole_tensor_ones(fake_world: None) -> None:
    """In the timing model the megakernel overlaps tile transfers with the matmul
    tiles still computing (512 tiles: about four waves of the 132 workers); one process
    per device in the trace."""
    shards = [[torch.zeros(1024, 2048), torch.zeros(2048, 2048)]] * 2
    kernel = _task_kernel(lambda a, b: funcol.all_reduce(a @ b, "sum", dist.group.WORLD),
                          shards, tile=64)
    report, timeline = estimate(kernel)
    assert report.megakernel_s < report.per_operator_s
    whole = import_captured(capture(lambda a, b: funcol.all_reduce(a @ b, "sum",
                                                                   dist.group.WORLD), *shards[0]))
    apply_pipeline(whole, "convert-graph-to-task{matmul_tile=64,64 tile_collectives=false}")
    kinds = [type(computation(task, find_kernel(whole).bodies())).__name__
             for task in find_kernel(whole).tasks()]
    assert kinds.count("AllReduceOp") == 1
    assert estimate(find_kernel(whole))[0].megakernel_s > report.megakernel_s
    assert timeline.transfers  # the link was used
    trace = json.loads(chrome_trace(kernel, timeline, report))
    assert trace["otherData"]["devices"] == 2
    assert {e["pid"] for e in trace["traceEvents"]} == {0, 1}
    link = MachineModel().link_bandwidth
    whole = 1024 * 2048 * 4  # bytes of the all-reduced tensor: 2(N-1)/N of it on the wire
    assert report.per_operator_s > whole / link


def _torchrun(*args: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*TORCHRUN, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("device", [
    "cpu", pytest.param("interp", marks=pytest.mark.slow),
    pytest.param("task", marks=pytest.mark.slow), "triton", "mncore"])
def test_torch_distributed_on_each_device(device: str) -> None:
    """torchrun's processes on each device (CI: ``cpu``, ``triton`` and ``mncore``;
    ``make slow`` also ``interp`` and ``task``)."""
    out = _torchrun("tests/distributed_worker.py", device)
    for check in ("dist.all_reduce", "dist.broadcast", "dist.all_gather_into_tensor",
                  "dist.all_reduce of a view", "functional collective 4",
                  "functional in-place all_reduce_",
                  "tensor-parallel MLP"):
        assert f"ok {check}\n" in out, out


@pytest.mark.parametrize(("mode", "device"), [
    ("ddp", "cpu"), ("all_reduce", "cpu"), ("functional", "cpu"),
    pytest.param("ddp", "interp", marks=pytest.mark.slow)])
def test_data_parallel_training_equals_one_process(mode: str, device: str) -> None:
    out = _torchrun("examples/ddp_training.py", "--device", device, "--mode", mode,
                    "--steps", "3", "--batch", "16", "--features", "32", "--hidden", "32")
    assert "weights" in out and ": equal" in out, out
