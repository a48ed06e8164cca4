"""``torch.compile(fn, backend="mncore")`` (``frontends/dynamo.py``): graphs Dynamo
captures run on the chosen device and match eager, inference and training; guard
failures, recompiles and eager fallbacks are counted; the compile cache is shared."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore

DEVICES = ["cpu", "interp", "task", "triton", "mncore"]
# Dynamo, tracing the optimizer, touches torch.jit (its warning, not this code's)
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Any:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _mlp(widths: tuple[int, ...] = (8, 16, 4)) -> nn.Module:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(widths):
        layers += [nn.Linear(a, b), nn.GELU()]
    return nn.Sequential(*layers[:-1])


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
          y: torch.Tensor) -> torch.Tensor:
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@pytest.mark.parametrize("device", DEVICES)
def test_inference_matches_eager(device: str) -> None:
    torch_mncore.init(device)
    torch_mncore.reset_metrics()
    torch.manual_seed(0)
    model = _mlp()
    compiled = torch.compile(model, backend="mncore")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    counters = torch_mncore.counters()
    assert counters["DynamoCompiles"] == 1, counters  # the second call: guards only
    assert not [k for k in counters if k.startswith("DynamoFallback")], counters


def _sgd(params: Any) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def _compiled_steps_match_eager(device: str, step: Callable[..., torch.Tensor],
                                optimizer: Callable[[Any], torch.optim.Optimizer] = _sgd,
                                batches: Sequence[int] = (6, 6, 6)
                                ) -> tuple[nn.Module, dict[str, int]]:
    """Steps (SGD with momentum, or ``optimizer``'s) of ``torch.compile(step)`` on
    ``device``, one per batch size, against ``_step`` in eager, losses and parameters;
    the compiled model and the counters."""
    torch_mncore.init(device)
    torch_mncore.reset_metrics()
    torch.manual_seed(0)
    ours, theirs = _mlp(), _mlp()
    theirs.load_state_dict(ours.state_dict())
    our_opt, their_opt = optimizer(ours.parameters()), optimizer(theirs.parameters())
    compiled = torch.compile(step, backend="mncore")
    for batch in batches:
        x, y = torch.randn(batch, 8), torch.randint(0, 4, (batch,))
        torch.testing.assert_close(compiled(ours, our_opt, x, y),
                                   _step(theirs, their_opt, x, y), rtol=1e-5, atol=1e-6)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    return ours, dict(torch_mncore.counters())


@pytest.mark.parametrize("device", ["cpu", "interp", "task"])
def test_training_steps_match_eager(device: str) -> None:
    """Forward, backward (AOTAutograd) and the optimizer's step, three times, against
    eager; the optimizer's first step differs (its state is created), which Dynamo
    notices by a guard and recompiles once, with the reason counted."""
    _, counters = _compiled_steps_match_eager(device, _step)
    assert counters["DynamoCompiles"] >= 3, counters  # forward, backward, optimizer
    failures = [k for k in counters if k.startswith("DynamoGuardFailure::")]
    assert any("self.state" in k for k in failures), counters
    assert not [k for k in counters if k.startswith("DynamoFallback")], counters


def _step_detached_first(model: nn.Module, optimizer: torch.optim.Optimizer,
                         x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``_step``, its loss detached before ``backward()`` (a loss live past it keeps
    Dynamo from tracing ``backward()`` into the step's graph)."""
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    value = loss.detach()
    loss.backward()
    optimizer.step()
    return value


@pytest.mark.parametrize("device", ["cpu", "interp", "task"])
def test_forward_and_backward_in_one_graph_with_trace_autograd_ops(device: str) -> None:
    """With Dynamo's ``trace_autograd_ops`` it traces ``loss.backward()`` into the
    step's graph: forward and backward reach the device as one graph (no backward
    graph, no resumption after ``backward()``), and the steps still match eager."""
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        ours, counters = _compiled_steps_match_eager(device, _step_detached_first)
    for p in ours.parameters():
        assert p.grad is not None  # backward() accumulated into .grad, as in eager
    # the step's graph (forward, backward) and the optimizer's, twice (its first step
    # creates the momentum buffers): no separate backward graph
    assert counters["DynamoCompiles"] == 3, counters
    assert not [k for k in counters if k.startswith("DynamoFallback")], counters


def test_a_graph_the_device_cannot_take_runs_eagerly() -> None:
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()

    def fn(x: torch.Tensor) -> torch.Tensor:  # nextafter: a bit-level op no level has
        return torch.nextafter(x * 2, torch.zeros_like(x)) + 1

    x = torch.randn(5, 3)
    with pytest.warns(UserWarning, match="runs eagerly on the host"):
        out = torch.compile(fn, backend="mncore")(x)
    torch.testing.assert_close(out, fn(x))
    assert [k for k in torch_mncore.counters() if k.startswith("DynamoFallback::")]


@pytest.mark.parametrize("device", ["cpu", "interp", "mncore"])
def test_constant_tensors_of_the_function_are_compiled(device: str) -> None:
    """Dynamo lifts a ``torch.tensor(...)`` written in the function into a ``get_attr``
    constant of the graph: imported as a literal (a negative index included), the
    graph compiles instead of running eagerly."""
    torch_mncore.init(device)
    torch_mncore.reset_metrics()

    def fn(x: torch.Tensor) -> torch.Tensor:
        return x[torch.tensor([0, -1, 2])] * torch.tensor([[2.0], [3.0], [-1.0]])

    x = torch.randn(4, 3)
    out = torch.compile(fn, backend="mncore")(x)
    torch.testing.assert_close(out, fn(x))
    counters = torch_mncore.counters()
    assert counters["DynamoCompiles"] == 1
    assert not [k for k in counters if k.startswith("DynamoFallback::")]
    torch_mncore.init("cpu")


class _Pick(nn.Module):
    """Columns chosen per instance: a constant tensor of the graph, by value."""

    def __init__(self, columns: list[int]) -> None:
        super().__init__()
        self.columns = columns

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, torch.tensor(self.columns)] * torch.tensor([float(c) for c in self.columns])


def test_graphs_that_differ_in_constant_values_compile_apart(tmp_path: Any,
                                                             monkeypatch: Any) -> None:
    """The compile cache keys a graph's constant tensors by value (the code names them
    only): instances with their own constants each get their own program, from the
    runtime's cache and from the disk cache (a fresh runtime per instance)."""
    x = torch.arange(12.0).reshape(2, 6)
    torch_mncore.init("cpu")
    for columns in ([0, 1], [4, 5], [3, -1]):
        pick = _Pick(columns)
        torch.testing.assert_close(torch.compile(pick, backend="mncore")(x), pick(x))
    monkeypatch.setenv("MNCORE_CACHE_DIR", str(tmp_path))
    for columns in ([0, 1], [4, 5], [3, -1]):
        torch._dynamo.reset()
        torch_mncore.init("cpu")
        pick = _Pick(columns)
        torch.testing.assert_close(torch.compile(pick, backend="mncore")(x), pick(x))
    assert len(list(tmp_path.iterdir())) == 3
    torch_mncore.init("cpu")


def test_new_shapes_recompile_and_say_why() -> None:
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    model = _mlp()
    compiled = torch.compile(model, backend="mncore", dynamic=False)
    with torch.no_grad():
        for batch in (2, 3, 2):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    counters = torch_mncore.counters()
    assert counters["DynamoCompiles"] == 2, counters
    assert any("size mismatch" in k for k in counters if k.startswith("DynamoGuardFailure")), (
        counters)


def test_the_second_process_finds_the_graph_in_the_disk_cache(tmp_path: Any) -> None:
    script = ("import torch, torch_mncore\n"
              "torch_mncore.init('interp')\n"
              "f = torch.compile(lambda x: torch.tanh(x) * 3 + x.sum(), backend='mncore')\n"
              "x = torch.arange(6.0)\n"
              "torch.testing.assert_close(f(x), torch.tanh(x) * 3 + x.sum())\n"
              "print(sorted(torch_mncore.counters()))\n")
    env = {**os.environ, "MNCORE_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    assert "'UncachedCompile'" in runs[0]
    assert "'DiskCachedCompile'" in runs[1] and "'UncachedCompile'" not in runs[1], runs


def test_a_recapture_compiles_from_the_device_cache() -> None:
    """After Dynamo forgets its graphs (``torch._dynamo.reset()``), capturing again gives
    the same graph, which the runtime's compile cache serves."""
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    model = _mlp()
    x = torch.randn(3, 8)
    with torch.no_grad():
        torch.compile(model, backend="mncore")(x)
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(model, backend="mncore")(x), model(x))
    counters = torch_mncore.counters()
    assert counters["DynamoCompiles"] == 2 and counters["UncachedCompile"] == 1, counters
    assert counters["CachedCompile"] == 1, counters


def test_lazy_tensors_under_torch_compile_are_traced_lazily() -> None:
    """Dynamo does not trace the lazy runtime: with ``.mncore()`` tensors the function
    runs as lazy ops (one step at sync), with no eager fallback."""
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    model = _mlp()
    x = torch.randn(3, 8)
    with torch.no_grad():
        expected = model(x)
        model.mncore()
        out = torch.compile(model, backend="mncore")(x.mncore())
    torch_mncore.sync()
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-6)
    counters = torch_mncore.counters()
    assert counters["Executions"] == 1 and counters["TracedOps"] > 0, counters
    assert not [k for k in counters if k.startswith(("Dynamo", "CpuFallback"))], counters


class _SelfAttention(nn.Module):
    """Self-attention through ``nn.MultiheadAttention`` without its weights (the fused
    attention path)."""

    def __init__(self, attention: nn.MultiheadAttention) -> None:
        super().__init__()
        self.attention = attention

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, x, x, need_weights=False)[0]


def _forward_backward(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The output, and gradients of a loss that weighs each output element differently
    (a normalised output's ``(out**2).mean()`` is nearly constant: its gradients are too
    small for any tolerance to tell wrong ones)."""
    out = module(x)
    weights = torch.linspace(-1.0, 1.0, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    return out


@pytest.mark.parametrize("make, shape, compiled_fully", [
    # batch norm's functional form (running statistics as outputs), decomposed
    (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                           nn.AdaptiveAvgPool2d(1)), (2, 3, 8, 8), True),
    # group norm's fused kernel and its backward, decomposed
    (lambda: nn.Sequential(nn.Conv2d(4, 4, 3), nn.GroupNorm(2, 4), nn.SiLU()),
     (2, 4, 6, 6), True),
    # resampling: torch decomposes the forward, the backward is the vjp of that
    (lambda: nn.Sequential(nn.Conv2d(2, 2, 3, padding=1),
                           nn.Upsample(scale_factor=2, mode="bilinear"), nn.Conv2d(2, 2, 3)),
     (1, 2, 4, 4), True),
    # torch.nn's own layer: attention traced as its math form (the host's fused CPU
    # kernel's decomposition gave its backward a wrong logsumexp: wrong gradients)
    (lambda: nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True),
     (2, 5, 16), True),
    (lambda: nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                        norm_first=True), (2, 5, 16), True),
    (lambda: _SelfAttention(nn.MultiheadAttention(16, 4, batch_first=True)), (2, 5, 16),
     True),
])
def test_torch_nn_layers_train_as_in_eager(make: Callable[[], nn.Module],
                                           shape: tuple[int, ...], compiled_fully: bool) -> None:
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    torch.manual_seed(0)
    ours, theirs = make(), make()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the eager fallback's own warning
        got = _forward_backward(torch.compile(ours, backend="mncore"), x)
    torch.testing.assert_close(got, _forward_backward(theirs, x), rtol=1e-4, atol=1e-5)
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=name)
    for a, b in zip(ours.buffers(), theirs.buffers(), strict=True):
        torch.testing.assert_close(a, b)  # running statistics
    fallbacks = [k for k in torch_mncore.counters() if k.startswith("DynamoFallback")]
    assert (not fallbacks) == compiled_fully, fallbacks


@pytest.mark.parametrize("device, in_place", [("cpu", True), ("interp", False)])
def test_the_optimizer_updates_parameters_in_the_devices_step(device: str,
                                                              in_place: bool) -> None:
    """The optimizer's graph keeps its input mutations (AOTAutograd's
    ``keep_inference_input_mutations``): the cpu executable writes each parameter and
    momentum buffer in place (no copy after the step); a device that cannot takes the
    new values and the runner copies them in. Both match eager."""
    _, counters = _compiled_steps_match_eager(device, _step)
    updates = 2 * 4  # two steps with momentum buffers: 4 parameters, 4 buffers
    if in_place:
        assert counters["DynamoInPlaceUpdates"] >= updates, counters
    else:
        assert counters["DynamoCopiedUpdates"] >= updates, counters
        assert not counters["DynamoInPlaceUpdates"], counters


def _mutating(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a.mul_(2)
    return b + 1


@pytest.mark.parametrize("device", ["cpu", "interp"])
def test_mutated_inputs_that_share_memory_match_eager(device: str) -> None:
    """Two views of one tensor, one updated in place and the other read: no input is
    donated (writing one would change the other's values)."""
    torch_mncore.init(device)
    ours, theirs = torch.arange(6.0), torch.arange(6.0)
    got = torch.compile(_mutating, backend="mncore")(ours[:4], ours[2:])
    torch.testing.assert_close(got, _mutating(theirs[:4], theirs[2:]))
    torch.testing.assert_close(ours, theirs)
    # and with inputs of their own (Dynamo does not guard on aliasing: calling the
    # graph it made for views of one tensor with other tensors fails in PyTorch's own
    # aot_eager backend too)
    torch._dynamo.reset()
    x, y = torch.arange(4.0), torch.ones(4)
    torch.testing.assert_close(torch.compile(_mutating, backend="mncore")(x, y), y + 1)
    torch.testing.assert_close(x, torch.arange(4.0) * 2)


def _swapping(a: torch.Tensor, b: torch.Tensor) -> None:
    c = b + 1
    b.copy_(a * 2)
    a.copy_(c)


def test_donated_inputs_holding_each_others_new_values_match_eager() -> None:
    """Each input dies in the op computing the other's new value, so the executable
    writes ``b``'s new value into ``a``'s memory and ``a``'s into ``b``'s: the runner
    must not copy one in before taking the other out (it gave ``a = 2a``)."""
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    a, b = torch.arange(4.0), torch.arange(4.0) + 10
    torch.compile(_swapping, backend="mncore")(a, b)
    assert a.tolist() == [11.0, 12.0, 13.0, 14.0] and b.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert torch_mncore.counters()["DynamoCopiedUpdates"] == 2


def test_in_place_writes_of_other_types_and_shapes_match_eager() -> None:
    """``copy_`` casts and broadcasts into the input it writes; an updated input returned
    is the input itself, updated."""
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()

    def cast(x: torch.Tensor, y: torch.Tensor) -> None:
        x.copy_(y)

    def returned(x: torch.Tensor) -> torch.Tensor:
        return x.add_(1)

    ints = torch.zeros(3, dtype=torch.int64)
    torch.compile(cast, backend="mncore", dynamic=False)(ints, torch.tensor([1.7, -2.2, 3.9]))
    assert ints.tolist() == [1, -2, 3]
    rows = torch.zeros(2, 3)
    torch.compile(cast, backend="mncore", dynamic=False)(rows, torch.tensor([1.0, 2.0, 3.0]))
    assert rows.tolist() == [[1.0, 2.0, 3.0]] * 2
    x = torch.arange(3.0)
    out = torch.compile(returned, backend="mncore")(x)
    assert x.tolist() == [1.0, 2.0, 3.0] and out.tolist() == [1.0, 2.0, 3.0]
    out.add_(1)  # the input itself, as in eager
    assert x.tolist() == [2.0, 3.0, 4.0]
    assert not [k for k in torch_mncore.counters() if k.startswith("DynamoFallback")]


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("make", [
    lambda p: torch.optim.Adam(p, lr=1e-2), lambda p: torch.optim.AdamW(p, lr=1e-2),
    lambda p: torch.optim.RMSprop(p, lr=1e-2), lambda p: torch.optim.Adagrad(p, lr=1e-2),
], ids=["Adam", "AdamW", "RMSprop", "Adagrad"])
def test_adaptive_optimizers_compile_and_match_eager(device: str, make: Any) -> None:
    """Dynamo writes their ``addcmul_``/``addcdiv_`` with a value as ``prims.fma``, which
    the importer lacked: every step of these optimizers ran eagerly (correct, slow)."""
    _, counters = _compiled_steps_match_eager(device, _step, make)
    assert not [k for k in counters if k.startswith("DynamoFallback")], counters


@pytest.mark.parametrize("device", ["cpu", "interp"])
def test_a_second_batch_size_compiles_per_shape_instead_of_running_eagerly(device: str
                                                                          ) -> None:
    """A loader's last, smaller batch makes Dynamo recompile with a symbolic batch
    dimension: each size then gets a static program (every later call ran eagerly)."""
    _, counters = _compiled_steps_match_eager(device, _step, batches=(16, 16, 5, 16, 5, 9))
    assert not [k for k in counters if k.startswith("DynamoFallback")], counters
    assert counters["DynamoShapeSpecializations"] >= 4  # forward and backward, sizes 5, 9
    torch_mncore.init("cpu")


def test_compiled_graphs_count_their_executions_and_simulated_cycles() -> None:
    """Each call of a compiled graph is counted as a lazy step's execution is, with the
    mncore simulator's steps and cycles (they stayed in the simulator)."""
    torch_mncore.init("mncore")
    torch_mncore.reset_metrics()
    fn = torch.compile(lambda x: (x * 2 + 1).sum(), backend="mncore")
    x = torch.arange(8.0)
    for _ in range(3):
        assert fn(x).item() == 64.0
    counters = torch_mncore.counters()
    assert counters["Executions"] == counters["MNCoreRuns"] == 3
    assert counters["MNCoreCycles"] > 0 and counters["MNCoreSteps"] > 0
    assert "ExecuteTime" in torch_mncore.metrics_report()
    torch_mncore.init("cpu")


def test_a_type_the_graph_lacks_is_named_in_the_fallback() -> None:
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    x = torch.arange(-5, 7)
    with pytest.warns(UserWarning, match="torch.int8 has no graph element type"):
        got = torch.compile(lambda x: x.to(torch.int8) * 100, backend="mncore")(x)
    torch.testing.assert_close(got, x.to(torch.int8) * 100)


@pytest.mark.parametrize("fn", [
    lambda x, lr: F.normalize(x @ x.T, dim=1) * lr,
    lambda x, lr: F.cosine_similarity(x, x.flip(0)) + torch.linalg.vector_norm(x, 3, dim=1),
    lambda x, lr: x - lr * x.sin(),  # a float that changes between calls: a 0-d input
], ids=["normalize", "cosine_similarity_vector_norm", "changing_float"])
def test_ops_torch_decomposes_beyond_core_aten_compile(fn: Callable[..., torch.Tensor]
                                                      ) -> None:
    """An op the importer lacks, which torch decomposes (``linalg_vector_norm``), and
    Dynamo's ``prims.convert_element_type`` of a changing float argument: each made the
    whole graph run eagerly."""
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    compiled = torch.compile(fn, backend="mncore")
    for lr in (0.1, 0.05, 0.025):
        x = torch.randn(3, 4)
        torch.testing.assert_close(compiled(x, lr), fn(x, lr))
    assert not [k for k in torch_mncore.counters() if k.startswith("DynamoFallback")]


def test_clip_grad_norm_in_a_compiled_step_compiles() -> None:
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    torch.manual_seed(0)
    ours, theirs = _mlp(), _mlp()
    theirs.load_state_dict(ours.state_dict())

    def step(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
        model.zero_grad()
        model(x).square().sum().backward()
        return torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, foreach=False)

    x = torch.randn(6, 8)
    torch.testing.assert_close(torch.compile(step, backend="mncore")(ours, x), step(theirs, x))
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad)
    assert not [k for k in torch_mncore.counters() if k.startswith("DynamoFallback")]


def test_transformer_encoder_inference_compiles() -> None:
    """``nn.TransformerEncoder``'s eval fast path (a fused op) is decomposed into its
    slow path's ops: the whole graph ran eagerly."""
    torch_mncore.init("cpu")
    torch_mncore.reset_metrics()
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.randn(3, 5, 16)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    with torch.no_grad():
        got = torch.compile(encoder, backend="mncore")(x, src_key_padding_mask=pad)
        torch.testing.assert_close(got, encoder(x, src_key_padding_mask=pad), rtol=1e-5,
                                   atol=1e-5)
    assert not [k for k in torch_mncore.counters() if k.startswith("DynamoFallback")]


@pytest.mark.parametrize("device", ["cpu", "interp", "task"])
def test_an_output_that_views_an_input_at_a_changing_offset(device: str) -> None:
    """``x[n]`` for a changing ``n`` (Dynamo makes ``n`` symbolic after two values):
    AOTAutograd rebuilds an output that views an input from the input and the returned
    tensor's strides and offset, so the runner returns that view; a computed result or
    a clone (offset 0) gave ``x[0]`` for every ``n``, without an error (found by a
    probe). Also a row written into a buffer and returned (a decode step's KV cache)."""
    torch_mncore.init(device)
    x = torch.arange(12.0).reshape(4, 3)
    step = torch.compile(lambda x, n: x[n], backend="mncore")
    for n in range(4):
        assert torch.equal(step(x, n), x[n])

    class Cache(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("k", torch.zeros(6, 4))

        def forward(self, row: torch.Tensor, pos: int) -> torch.Tensor:
            self.k[pos] = row
            return self.k[pos]

    cache = Cache()
    decode = torch.compile(cache, backend="mncore")
    rows = [decode(torch.full((4,), float(pos + 1)), pos) for pos in range(4)]
    assert [r[0].item() for r in rows] == [1.0, 2.0, 3.0, 4.0]
    assert cache.k[:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 0.0, 0.0]


def test_an_output_viewing_an_input_at_an_offset_known_when_it_runs_runs_eagerly() -> None:
    """``x[int(x.argmax().item())]`` with Dynamo capturing the scalar: the offset is a
    value of the run, so the graph runs eagerly (its own view returned, not a clone),
    counted with its reason."""
    torch_mncore.init("cpu")
    f = torch.compile(lambda x: x[int(x.argmax().item())], backend="mncore")
    with torch._dynamo.config.patch(capture_scalar_outputs=True), \
            pytest.warns(UserWarning, match="offset known only when the graph runs"):
        got = [f(torch.tensor(v)).item() for v in ([5., 1., 2.], [1., 5., 2.], [1., 2., 5.])]
    assert got == [5.0, 5.0, 5.0]
    assert any("offset known only when" in k for k in torch_mncore.counters())

