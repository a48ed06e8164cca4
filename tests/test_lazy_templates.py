"""Decomposition templates (``frontends/lazy_templates.py``): a decomposed op is traced
once per signature and replayed; a replay computes what running the decomposition
computes, and what a template cannot stand for runs the decomposition at every call."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from mncore_ir.frontends import lazy_runtime
from mncore_ir.frontends.lazy_templates import Template, capture, signature
from mncore_ir.frontends.lazy_tensor import Item, LazyTensor
from mncore_ir.testing.model_zoo import GPT


@pytest.fixture(autouse=True)
def device() -> None:
    torch_mncore.init("cpu", implicit_sync="error")
    torch_mncore.reset_metrics()


def _capture(fn: Any, *args: Any) -> Template | None:
    runtime = lazy_runtime.runtime()
    called = signature(args, {})
    assert called is not None
    return capture(runtime, torch.ops.aten.add.Tensor, fn, args, {}, called[1])


def test_replays_are_keyed_by_signature_aliasing_kind_and_constants() -> None:
    """lerp is decomposed: calls that differ in what the decomposition may depend on
    (an input passed twice, a view, a buffer or a computed value, the weight) each get
    their template, and each computes what eager computes."""
    x, y, w = torch.randn(6, 5), torch.randn(6, 5), torch.rand(6, 5)
    lx, ly = x.mncore(), y.mncore()
    cases = [
        (lambda a, b: torch.lerp(a, a, 0.3), lambda a, b: torch.lerp(a, b, 0.3)),
        (lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: torch.lerp(a + 1, b, 0.3)),
        (lambda a, b: torch.lerp(a, b, 0.7), lambda a, b: torch.lerp(a[1:], b[:-1], 0.7)),
        (lambda a, b: torch.lerp(a, b, w.mncore() if a.device.type != "cpu" else w),
         lambda a, b: torch.lerp(a.t(), b.t(), 0.7)),
    ]
    outs = [(f(lx, ly), g(lx, ly)) for f, g in cases]
    torch_mncore.sync()
    for (f, g), (ours_f, ours_g) in zip(cases, outs, strict=True):
        torch.testing.assert_close(ours_f.cpu(), f(x, y))
        torch.testing.assert_close(ours_g.cpu(), g(x, y))
    captures = torch_mncore.counters()["TemplateCaptures"]
    again = [torch.lerp(lx + 1, ly, 0.3), torch.lerp(lx, lx, 0.3)]  # seen signatures
    torch_mncore.sync()
    assert torch_mncore.counters()["TemplateCaptures"] == captures
    torch.testing.assert_close(again[0].cpu(), torch.lerp(x + 1, y, 0.3))
    torch.testing.assert_close(again[1].cpu(), x)


def test_a_multi_output_decomposition_replays() -> None:
    x = torch.randn(4, 7)
    lazy = x.mncore()
    first = torch.var_mean(lazy, dim=1, correction=0)
    second = torch.var_mean(lazy * 2, dim=1, correction=0)
    torch_mncore.sync()
    for ours, theirs in zip((*first, *second), (*torch.var_mean(x, dim=1, correction=0),
                                                *torch.var_mean(x * 2, dim=1, correction=0)),
                            strict=True):
        torch.testing.assert_close(ours.cpu(), theirs)


def test_random_numbers_are_drawn_at_each_call() -> None:
    """bernoulli's decomposition draws with rand_like: a template would repeat the
    first draw, so it runs again (and matches eager's draws under the same seed)."""
    p = torch.rand(32, 32)
    torch.manual_seed(0)
    eager = [torch.bernoulli(p), torch.bernoulli(p)]
    torch.manual_seed(0)
    lazy_p = p.mncore()
    ours = [torch.bernoulli(lazy_p), torch.bernoulli(lazy_p)]
    torch_mncore.sync()
    assert torch.equal(ours[0].cpu(), eager[0]) and torch.equal(ours[1].cpu(), eager[1])
    assert not torch.equal(ours[0].cpu(), ours[1].cpu())
    assert torch_mncore.counters()["NoTemplate::aten.bernoulli.default"] == 1


def test_no_template_for_a_decomposition_with_effects() -> None:
    host = torch.randn(3, 4)
    written = host.mncore() + 1

    def writes_its_input(a: torch.Tensor) -> torch.Tensor:
        a.add_(1)
        return a * 2

    def reads_a_value(a: torch.Tensor) -> torch.Tensor:
        return a * a.sum().item()

    assert _capture(writes_its_input, written) is None
    assert _capture(lambda a: a.view(-1), written) is None  # a view of the input
    assert _capture(lambda a: a, written) is None  # the input itself
    assert _capture(reads_a_value, written) is None
    assert _capture(lambda a: torch.rand_like(a) * a, written) is None
    assert "Executions" not in torch_mncore.counters()  # nothing was read: no sync
    torch_mncore.sync()
    torch.testing.assert_close(written.cpu(), host + 1)  # the input is unchanged


def test_a_template_records_one_node_per_call() -> None:
    a, b = torch.randn(3, 4).mncore(), torch.randn(3, 4).mncore()
    template = _capture(lambda u, v: (u * v + u, u - v), a, b)
    assert template is not None and len(template.inputs) == 2 and len(template.steps) == 3
    runtime = lazy_runtime.runtime()
    values = signature((a, b), {})[1]
    first, second = template.record(runtime, values), template.record(runtime, values)
    for one, two in zip(first, second, strict=True):
        assert isinstance(one, LazyTensor) and isinstance(one._storage_.value, Item)
        assert one._storage_.value.node.op is template
        assert one._storage_ is not two._storage_
        assert one._storage_.value.node is not two._storage_.value.node
    assert first[0]._storage_.value.node is first[1]._storage_.value.node
    torch_mncore.sync()
    torch.testing.assert_close(first[0].cpu(), a.cpu() * b.cpu() + a.cpu())
    torch.testing.assert_close(second[1].cpu(), a.cpu() - b.cpu())


def test_a_number_is_a_graph_input_not_part_of_the_template() -> None:
    """lerp's weight is hoisted before the decomposition runs (its Tensor overload, the
    weight a 0-d input): one template and one graph for every weight."""
    x, y = torch.randn(5), torch.randn(5)
    results = []
    for weight in (0.2, 0.7):
        results.append(torch.lerp(x.mncore(), y.mncore(), weight))
        torch_mncore.sync()
    counters = torch_mncore.counters()
    assert counters["TemplateCaptures"] == 1 and counters["UncachedCompile"] == 1, counters
    torch.testing.assert_close(results[0].cpu(), torch.lerp(x, y, 0.2))
    torch.testing.assert_close(results[1].cpu(), torch.lerp(x, y, 0.7))


def test_templates_differing_in_hoisted_scalars_share_a_graph() -> None:
    """softplus's beta has no Tensor overload: each beta gets its template (a
    decomposition may branch on a number), but beta is hoisted inside it, so both have
    one structure and the second step compiles nothing."""
    x = torch.randn(6)
    results = []
    captures = []
    for beta in (1.5, 2.5):
        results.append(F.softplus(x.mncore(), beta=beta))
        torch_mncore.sync()
        captures.append(torch_mncore.counters()["TemplateCaptures"])
    assert captures[1] > captures[0]  # the second beta: new templates
    assert torch_mncore.counters()["UncachedCompile"] == 1  # but the same graph
    torch.testing.assert_close(results[0].cpu(), F.softplus(x, beta=1.5))
    torch.testing.assert_close(results[1].cpu(), F.softplus(x, beta=2.5))


def test_steady_state_steps_capture_nothing() -> None:
    """A training step decomposes at record time once: the third step of a GPT
    captures no template and runs the executable the second step compiled."""
    torch.manual_seed(0)
    model = GPT(layers=1).mncore()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 64, (2, 8)).mncore()
    for _ in range(3):
        torch_mncore.reset_metrics()
        optimizer.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1))
        loss.backward()
        optimizer.step()
        torch_mncore.sync()
    counters = torch_mncore.counters()
    assert "TemplateCaptures" not in counters and counters["CachedCompile"] == 1, counters


_STEP = """
import torch, torch_mncore
torch_mncore.init("cpu", implicit_sync="error")
x = torch.arange(12.0).reshape(3, 4).mncore()
out = torch.lerp(x, x * 2, 0.3) + torch.nn.functional.softplus(x, beta=2.0)
torch_mncore.sync()
print(sorted(torch_mncore.counters()))
"""


def test_a_template_keys_graphs_alike_in_every_process(tmp_path: Any) -> None:
    """A template's key is a digest of its structure (no object identities), so the
    on-disk cache of another process finds the step."""
    env = {**os.environ, "MNCORE_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", _STEP], env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    assert "'UncachedCompile'" in runs[0] and "'DiskCachedCompile'" not in runs[0]
    assert "'DiskCachedCompile'" in runs[1] and "'UncachedCompile'" not in runs[1], runs


def test_dropout_draws_eagers_numbers_without_reading_its_input() -> None:
    """``native_dropout`` (what ``F.dropout`` calls on the device) draws its noise on the
    host as eager's CPU kernel does, and multiplies on the device: eager's numbers and
    gradients under one seed, new ones at each call (inside attention too), and no sync
    of the step for the input (the whole op ran on the host)."""
    torch.manual_seed(0)
    w, x = torch.randn(8, 8), torch.randn(2, 4, 8)

    def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = F.dropout(x @ w, 0.3, training=True)
        q = h.reshape(2, 2, 2, 8)
        a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
        return F.dropout(a, 0.5, training=True).sum() + F.dropout(h, 0.1).sum()

    for seed in (5, 6):  # the second step replays any template: its draws must be new
        torch.manual_seed(seed)
        eager_w = w.clone().requires_grad_()
        expected = step(x, eager_w)
        expected.backward()
        torch.manual_seed(seed)
        ours_w = w.clone().mncore().requires_grad_()
        torch_mncore.reset_metrics()
        got = step(x.mncore(), ours_w)
        got.backward()
        torch_mncore.sync()
        torch.testing.assert_close(got.cpu(), expected.detach())
        torch.testing.assert_close(ours_w.grad.cpu(), eager_w.grad)
        assert "FallbackSyncs" not in torch_mncore.counters()
