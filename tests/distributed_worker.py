"""One rank of ``tests/test_distributed.py``'s torchrun jobs: torch.distributed on
mncore device tensors, each result checked against what eager torch gives (on this
process's CPU tensors, through the same process group).

    torchrun --standalone --nproc-per-node 2 tests/distributed_worker.py DEVICE
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import torch_mncore


def check(name: str, got: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-6, atol=1e-6, msg=name)
    if dist.get_rank() == 0:
        print(f"ok {name}", flush=True)


def process_group_calls(rank: int, world: int) -> None:
    """``dist.*`` on device tensors write their device tensors (they used to return
    without reducing)."""
    t = torch.full((3,), float(rank + 1)).mncore()
    dist.all_reduce(t)
    check("dist.all_reduce", t, torch.full((3,), float(sum(range(1, world + 1)))))
    t = (torch.arange(4.) * (rank + 1)).mncore()
    work = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
    work.wait()
    check("dist.all_reduce max async", t, torch.arange(4.) * world)
    b = torch.full((2,), float(rank)).mncore()
    dist.broadcast(b, src=world - 1)
    check("dist.broadcast", b, torch.full((2,), float(world - 1)))
    parts = [torch.zeros(2).mncore() for _ in range(world)]
    dist.all_gather(parts, torch.full((2,), float(rank)).mncore())
    check("dist.all_gather", torch.stack([p.cpu() for p in parts]),
          torch.arange(float(world)).repeat_interleave(2).reshape(world, 2))
    out = torch.zeros(2 * world).mncore()
    dist.all_gather_into_tensor(out, torch.full((2,), float(rank)).mncore())
    check("dist.all_gather_into_tensor", out, torch.arange(float(world)).repeat_interleave(2))
    view = torch.zeros(4, 2).mncore()
    dist.all_reduce(view[1], op=dist.ReduceOp.SUM)  # a view: written through to its base
    view[1] += rank + 1
    dist.all_reduce(view[1])
    check("dist.all_reduce of a view", view,
          torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]) * sum(range(1, world + 1)))


def functional_step(x: torch.Tensor) -> list[torch.Tensor]:
    world = dist.group.WORLD
    return [funcol.all_reduce(x * 2, "sum", world) + 1,
            funcol.all_reduce(x, "avg", world),
            funcol.all_reduce(x - 3, "max", world),
            funcol.all_gather_single(x + 1, 0, world),
            funcol.reduce_scatter_single(x * x, "sum", 0, world)]


def functional_collectives(rank: int) -> None:
    """Collectives written inside the step are recorded into its graph."""
    x = torch.arange(8.).reshape(4, 2) * (rank + 1)
    expected = [funcol.wait_tensor(t) for t in functional_step(x)]
    before = torch_mncore.counters()
    got = functional_step(x.mncore())
    torch_mncore.sync()
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        check(f"functional collective {i}", g, e)
    counts = torch_mncore.counters()
    in_place = x.mncore()  # the in-place form writes its tensor
    name = dist.group.WORLD.group_name
    torch.ops._c10d_functional.wait_tensor(
        torch.ops._c10d_functional.all_reduce_(in_place, "sum", name))
    total = sum(range(1, dist.get_world_size() + 1))
    check("functional in-place all_reduce_", in_place, torch.arange(8.).reshape(4, 2) * total)
    syncs = counts.get("FallbackSyncs", 0) - before.get("FallbackSyncs", 0)
    assert syncs == 0, f"the functional collectives synced the trace {syncs} times"
    assert counts.get("Executions", 0) - before.get("Executions", 0) == 1, "not one graph"


def tensor_parallel_mlp(rank: int, world: int) -> None:
    """Megatron's MLP: the first linear split by columns, the second by rows, one
    all-reduce; equal to the whole MLP on one process."""
    g = torch.Generator().manual_seed(0)
    x, w1 = torch.randn(4, 8, generator=g), torch.randn(16, 8, generator=g)
    b1, w2 = torch.randn(16, generator=g), torch.randn(8, 16, generator=g)
    part = slice(rank * 16 // world, (rank + 1) * 16 // world)
    shard = [t.mncore() for t in (x, w1[part], b1[part], w2[:, part])]
    h = torch.relu(shard[0] @ shard[1].t() + shard[2])
    y = funcol.all_reduce(h @ shard[3].t(), "sum", dist.group.WORLD)
    torch.testing.assert_close(y.cpu(), torch.relu(x @ w1.t() + b1) @ w2.t(), rtol=1e-5,
                               atol=1e-5)
    if rank == 0:
        print("ok tensor-parallel MLP", flush=True)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch_mncore.init(sys.argv[1])
    process_group_calls(rank, world)
    functional_collectives(rank)
    tensor_parallel_mlp(rank, world)
    torch_mncore.sync(wait=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
