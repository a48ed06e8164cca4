"""LLM decoding with a static KV cache: the cached step against a full-sequence model
written independently (SDPA), greedy tokens on every device against eager (lazy and FX
paths), no recompiles over a long generation, and the decode tilings of the task level
(permuted reads, split-K, split reductions, in-place index_put) against the graph
level in the simulator (random orders) and the Triton megakernel."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.task import find_kernel
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.frontends.fx_steps import CompiledStep
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.task_simulator import simulate
from mncore_ir.targets.task_timing import task_work
from mncore_ir.testing.decoders import (
    Decoder,
    decode_carry,
    decode_step,
    decoder,
    greedy_decode,
    greedy_steps,
    prompt_tokens,
    rotate,
    step_inputs,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def full_sequence_logits(model: Decoder, tokens: torch.Tensor) -> torch.Tensor:
    """The model over a whole sequence at once, without a cache: causal SDPA with
    grouped-query heads, positions 0..T-1 (an independent path to the same numbers)."""
    cfg = model.cfg
    b, length = tokens.shape
    positions = torch.arange(length)
    x = model.tok(tokens)
    rope = None
    if cfg.style == "gpt2":
        x = x + model.pos(positions)
    else:
        rope = (model.rope_cos[:length], model.rope_sin[:length])
    for block in model.blocks:
        attn, h = block.attn, block.norm1(x)
        hd = cfg.head_dim
        q = attn.q(h).view(b, length, cfg.heads, hd).transpose(1, 2)
        k = attn.k(h).view(b, length, cfg.kv_heads, hd).transpose(1, 2)
        v = attn.v(h).view(b, length, cfg.kv_heads, hd).transpose(1, 2)
        if rope is not None:
            q, k = rotate(q, *rope), rotate(k, *rope)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + attn.o(y.transpose(1, 2).reshape(b, length, cfg.dim))
        h = block.norm2(x)
        mlp = (block.down(F.silu(block.gate(h)) * block.up(h)) if cfg.style == "llama"
               else block.down(F.gelu(block.up(h), approximate="tanh")))
        x = x + mlp
    h = model.norm(x)
    return h @ model.tok.weight.t() if cfg.style == "gpt2" else model.head(h)


@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-tiny"])
def test_cached_decode_equals_full_sequence_attention(name: str) -> None:
    model = decoder(name, batch=2)
    tokens = prompt_tokens(model.cfg, 12, seed=3)
    model.reset_cache()
    pos = torch.zeros((), dtype=torch.long)
    stepped = []
    with torch.no_grad():
        for i in range(tokens.shape[1]):
            stepped.append(model(tokens[:, i:i + 1], pos))
            pos += 1
        want = full_sequence_logits(model, tokens)
    torch.testing.assert_close(torch.stack(stepped, dim=1), want, rtol=1e-4, atol=1e-5)


#: (device, model, new tokens): every device on a tiny config (mncore: its own tinier
#: ones, the cycle simulator being slow), fewer tokens where a step is slow.
LAZY_CASES = [("cpu", "gpt2-tiny", 32), ("cpu", "llama-tiny", 32),
              ("interp", "gpt2-tiny", 32), ("interp", "llama-tiny", 32),
              ("task", "gpt2-tiny", 32), ("task", "llama-tiny", 32),
              ("triton", "llama-tiny", 3), ("mncore", "gpt2-mncore", 3),
              ("mncore", "llama-mncore", 3)]


@pytest.fixture
def lazy_device(request: pytest.FixtureRequest) -> Any:
    def start(name: str) -> None:
        torch_mncore.init(device=name)
        torch_mncore.reset_metrics()
        request.addfinalizer(lambda: torch_mncore.init("cpu"))
    return start


@pytest.mark.parametrize(("device", "name", "count"), LAZY_CASES)
def test_lazy_greedy_tokens_equal_eager(device: str, name: str, count: int,
                                        lazy_device: Any) -> None:
    model = decoder(name)
    prompt = prompt_tokens(model.cfg)
    want = greedy_decode(model, prompt, count)
    lazy_device(device)
    model.reset_cache()
    model.mncore()
    chosen = []
    for token in greedy_steps(model, prompt, count, device="mncore"):
        torch_mncore.sync()
        chosen.append(token.cpu())
    got = torch.cat(chosen[prompt.shape[1] - 1:], dim=1)
    assert got.tolist() == want.tolist()
    assert torch_mncore.counter_value("UncachedCompile") == 1
    assert not [n for n in torch_mncore.counter_names() if n.startswith("CpuFallback")]


def test_sixty_four_tokens_compile_once(lazy_device: Any) -> None:
    model = decoder("gpt2-tiny", context=72, layers=1)
    prompt = prompt_tokens(model.cfg)
    want = greedy_decode(model, prompt, 64)
    lazy_device("cpu")
    model.reset_cache()
    model.mncore()
    chosen = []
    for token in greedy_steps(model, prompt, 64, device="mncore"):
        torch_mncore.sync()
        chosen.append(token)
    assert torch.cat([c.cpu() for c in chosen[3:]], dim=1).tolist() == want.tolist()
    assert torch_mncore.counter_value("UncachedCompile") == 1
    assert torch_mncore.counter_value("CachedCompile") == len(chosen) - 1


@pytest.mark.parametrize(("device", "name", "count"),
                         [("interp", "llama-tiny", 16), ("task", "gpt2-tiny", 16),
                          ("cpu", "llama-tiny", 16)])
def test_fx_compiled_step_tokens_equal_eager(device: str, name: str, count: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from generate import fx_decode

    model = decoder(name)
    prompt = prompt_tokens(model.cfg)
    want = greedy_decode(model, prompt, count)
    got, seconds, step = fx_decode(model, prompt, count, device)
    assert got.tolist() == want.tolist()
    assert step.calls == len(seconds) == prompt.shape[1] + count - 1


def test_compiled_step_refuses_other_shapes() -> None:
    model = decoder("gpt2-tiny")
    weights, caches, token, pos = step_inputs(model)
    step = CompiledStep(decode_step(model), weights, caches, token, pos, device_name="cpu")
    with pytest.raises(ValueError, match=r"input token is \(\(2, 1\), torch.int64\), "
                                         r"compiled for \(\(1, 1\), torch.int64\)"):
        step(weights, caches, torch.zeros(2, 1, dtype=torch.long), pos)


# --------------------------------------------------------------------------- task level

#: Small tiles so that the tiny decoders' step uses every decode tiling.
DECODE_TILES = "convert-graph-to-task{split_k=8 elementwise_tile=16 matmul_tile=1,16}"


def lowered_step(name: str, steps: int = 1, tiles: str = DECODE_TILES
                 ) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    """The decode step's task kernel (``steps`` steps unrolled into one) at position 5 of
    a random cache, its inputs, and the graph level's outputs on them."""
    model = decoder(name, batch=2)
    weights, caches, token, pos = step_inputs(model)
    g_ = torch.Generator().manual_seed(1)
    caches = {k: torch.randn(v.shape, generator=g_) for k, v in caches.items()}
    token = torch.tensor([[3], [7]])
    pos = torch.tensor(5)
    captured = capture(decode_step(model), weights, caches, token, pos)
    module = import_captured(captured)
    ctx = make_context()
    carry = ",".join(map(str, decode_carry(captured.input_names, captured.output_names)))
    unroll = f"graph-unroll-steps{{steps={steps} carry={carry} collect=0}}," if steps > 1 else ""
    apply_pipeline(module, f"{unroll}canonicalize,cse,dce,graph-fuse-elementwise", ctx)
    arrays = [x.numpy() for x in captured.example_inputs]
    want = [np.asarray(o) for o in run_function(module, arrays)]
    apply_pipeline(module, tiles, ctx)
    return module, arrays, want


@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-tiny"])
def test_decode_tilings_match_the_graph_level(name: str) -> None:
    module, arrays, want = lowered_step(name)
    kernel = find_kernel(module)
    bodies = kernel.bodies()
    computed = [t.computation(task, bodies) for task in kernel.tasks()]
    assert any(isinstance(op, g.MatmulPermutedOp) for op in computed)
    assert not any(isinstance(op, g.PermuteOp) and g.shape_of(op.input)[0] == 48
                   for op in computed), "a cache was copied into its permutation"
    assert any(isinstance(op, t.BodyOp) and op.sym_name.data.startswith("ew")
               and len(op.body.block.args) > 2 for op in computed), "no split-K sum"
    puts = [task for task, op in zip(kernel.tasks(), computed, strict=True)
            if isinstance(op, g.IndexPutOp)]
    assert puts and all(task.reads()[0] == task.writes()[0] for task in puts)
    chunks = [task for task, op in zip(kernel.tasks(), computed, strict=True)
              if isinstance(op, g.AmaxOp) and task.reads()[0][1].sizes[-1] < 64]
    assert chunks, "the argmax over the vocabulary was not split"
    for seed in (None, 1, 2):
        got = simulate(kernel, arrays, order_seed=seed)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-tiny"])
def test_split_k_epilogues_with_tiles_of_several_rows(name: str) -> None:
    """At batch 2 with 2-row matmul tiles, an epilogue behind a (batch, 1, dim) view
    cannot take the product's tiles as they are: it stays an op of its own."""
    tiles = "convert-graph-to-task{split_k=8 elementwise_tile=16 matmul_tile=2,16}"
    module, arrays, want = lowered_step(name, tiles=tiles)
    for seed in (None, 5):
        got = simulate(find_kernel(module), arrays, order_seed=seed)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["megakernel", pytest.param("levels", marks=pytest.mark.slow)])
def test_decode_tilings_run_in_the_triton_megakernel(megakernel: Any, mode: str) -> None:
    """The Triton megakernel (Triton's interpreter; compiled for sm_90 at the end of the
    session) on the same tilings, two decode steps unrolled into the kernel, in both
    launch modes (CI: the persistent one; ``make slow`` also one launch per level)."""
    module, arrays, want = lowered_step("llama-tiny", steps=2)
    kernel = megakernel(find_kernel(module))
    got = kernel.run(*[torch.from_numpy(a) for a in arrays], mode=mode)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-4, atol=1e-5, err_msg=mode)


def test_timing_counts_gathered_rows_and_in_place_puts() -> None:
    """An embedding task moves the rows it picks, not its whole table; an in-place
    index_put the rows it writes, not its buffer twice."""
    module, _, _ = lowered_step("gpt2-tiny")
    kernel = find_kernel(module)
    bodies = kernel.bodies()
    for task in kernel.tasks():
        op = t.computation(task, bodies)
        if isinstance(op, g.EmbeddingOp | g.IndexPutOp):
            _, moved = task_work(task, bodies)
            out_bytes = 4 * np.prod(task.writes()[0][1].sizes)
            table = 4 * np.prod(task.reads()[0][1].sizes)
            assert moved < table / 4, (op.name, moved, table)
            if isinstance(op, g.EmbeddingOp):
                assert moved >= 2 * out_bytes


def test_unrolled_decode_loop_tokens_equal_eager() -> None:
    """graph-unroll-steps: six decode steps in one task kernel, the chosen token, caches
    and position carried on the device, after an eager prefill of the prompt."""
    model = decoder("llama-tiny")
    prompt = prompt_tokens(model.cfg)
    want = greedy_decode(model, prompt, 7)
    model.reset_cache()
    pos = torch.zeros((), dtype=torch.long)
    with torch.no_grad():
        for i in range(prompt.shape[1]):
            logits = model(prompt[:, i:i + 1], pos)
            pos += 1
    first = logits.argmax(dim=-1, keepdim=True)
    weights, _, _, _ = step_inputs(model)
    caches = {k: v.clone() for k, v in model.named_buffers() if ".cache_" in k}
    captured = capture(decode_step(model), weights, caches, first, pos)
    carry = decode_carry(captured.input_names, captured.output_names)
    module = import_captured(captured)
    apply_pipeline(module, f"graph-unroll-steps{{steps=6 collect=0 carry="
                           f"{','.join(map(str, carry))}}},canonicalize,cse,dce,"
                           "graph-fuse-elementwise,convert-graph-to-task", make_context())
    kernel = find_kernel(module)
    outputs = simulate(kernel, [x.numpy() for x in captured.example_inputs], order_seed=3)
    tokens = [first.item()] + [int(o.reshape(-1)[0]) for o in outputs[:6]]
    assert tokens == want[0].tolist()
    assert int(outputs[-1]) == pos.item() + 6  # the position, carried out last


@pytest.mark.parametrize("in_place", ["true", "false"])
def test_index_put_in_the_triton_megakernel(in_place: str, megakernel: Any) -> None:
    """The Triton index_put copies its input into its output unless they are one buffer
    (the in-place task): both forms give the graph level's values."""
    from mncore_ir.dialects.values import find_function
    from mncore_ir.parsing import parse_module

    with open(os.path.join(ROOT, "lit_tests/transforms/Inputs/decode.mlir")) as file:
        text = file.read()
    rng = np.random.default_rng(0)
    graph = parse_module(make_context(), text)
    inputs = [np.full(tuple(t.get_shape()), 3) if "i64" in str(t) else
              rng.standard_normal(tuple(t.get_shape())).astype(np.float32)
              for t in find_function(graph).function_type.inputs.data]
    want = run_function(graph, inputs)
    module = parse_module(make_context(), text)
    apply_pipeline(module, "convert-graph-to-task{workers=8 matmul_tile=1,8 split_k=16 "
                           f"elementwise_tile=8 in_place_index_put={in_place}}}")
    got = megakernel(find_kernel(module)).run(*[torch.from_numpy(a) for a in inputs])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-5, atol=1e-5)
