"""torch_mncore's life cycle: moving modules (parameter identity), what needs init()
and what re-init does, Triton imported before the triton device, and a clean exit."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore

# ---------------------------------------------------------------------- tied parameters


class TiedLM(nn.Module):
    """An output layer that shares the embedding's weight, and batch-norm buffers."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.norm = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.emb(x)))


def _train_tied(model: TiedLM, move: Callable[[nn.Module], nn.Module] | None
                ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Three SGD steps; the losses and the final state (parameters and buffers)."""
    if move is not None:
        assert move(model) is model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(3):
        x, y = torch.randint(0, 16, (12,), generator=g), torch.randint(0, 16, (12,), generator=g)
        if move is not None:
            x, y = x.mncore(), y.mncore()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if move is not None:
            torch_mncore.sync()
        losses.append(loss.detach())
    state = {n: t.detach().cpu() for n, t in model.state_dict(keep_vars=True).items()}
    return torch.stack([loss.cpu() for loss in losses]), state


@pytest.mark.parametrize("move", [lambda m: m.mncore(), lambda m: m.to("mncore"),
                                  lambda m: m.to(torch.device("mncore"), torch.float32)],
                         ids=["mncore()", "to('mncore')", "to(device, dtype)"])
def test_moving_a_module_keeps_tied_parameters(move: Callable[[nn.Module], nn.Module]
                                                ) -> None:
    torch_mncore.init("cpu", implicit_sync="error")
    torch.manual_seed(0)
    base = TiedLM()
    eager_losses, eager_state = _train_tied(copy.deepcopy(base), None)
    model = copy.deepcopy(base)
    emb_weight = model.emb.weight
    lazy_losses, lazy_state = _train_tied(model, move)

    assert len(list(model.parameters())) == len(list(base.parameters())) == 3
    assert model.head.weight is model.emb.weight is emb_weight
    assert isinstance(emb_weight, nn.Parameter) and emb_weight.device.type == "mncore"
    assert [n for n, _ in model.named_buffers()] == [n for n, _ in base.named_buffers()]
    assert all(b.device.type == "mncore" for b in model.buffers())
    assert lazy_state["norm.num_batches_tracked"].item() == 3
    torch.testing.assert_close(lazy_losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert lazy_state.keys() == eager_state.keys()
    for name, value in eager_state.items():
        torch.testing.assert_close(lazy_state[name], value, rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.parametrize("back", [lambda m: m.cpu(), lambda m: m.to("cpu"),
                                  lambda m: m.to(torch.device("cpu"), torch.float64)],
                         ids=["cpu()", "to('cpu')", "to(cpu, float64)"])
def test_moving_a_module_back_keeps_its_parameters(back: Callable[[nn.Module], nn.Module]
                                                   ) -> None:
    """After training on the device, ``model.cpu()`` keeps each Parameter (as moving from
    CUDA does): an optimizer built earlier still updates the module."""
    torch_mncore.init("cpu")
    torch.manual_seed(0)
    model = nn.Linear(3, 2).mncore()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    model(x.mncore()).sum().backward()
    optimizer.step()
    torch_mncore.sync()
    weight = model.weight
    assert back(model) is model and model.weight is weight
    assert weight.device.type == "cpu" and optimizer.param_groups[0]["params"][0] is weight
    before = weight.detach().clone()
    optimizer.zero_grad()
    model(x.to(weight.dtype)).sum().backward()
    optimizer.step()
    torch_mncore.sync()
    step = 0.1 * x.to(weight.dtype).sum(0).expand(2, 3)
    torch.testing.assert_close(weight.detach(), before - step)


def test_a_backward_on_the_host_before_the_import_leaves_the_device_working() -> None:
    """Autograd sizes its per-device queues at the process's first backward: one on the
    host before ``import torch_mncore`` left none for the device (an internal assertion
    at every backward there)."""
    done = run_python("""
        import torch
        x = torch.randn(3, requires_grad=True)
        (x * 2).sum().backward()
        import torch_mncore
        torch_mncore.init("cpu")
        w = torch.randn(3).mncore().requires_grad_()
        (w * 3).sum().backward()
        torch_mncore.sync()
        print(w.grad.cpu().tolist())
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[3.0, 3.0, 3.0]"


def test_other_moves_are_unchanged() -> None:
    """Only moves to the device swap parameters; dtype casts still go through torch."""
    model = nn.Linear(2, 2)
    weight = model.weight
    assert model.to(torch.float64) is model and model.weight is weight
    assert weight.dtype == torch.float64


# ---------------------------------------------------------------------- init


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 300
               ) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the runtime is per process), from a file so
    that error messages can name its lines."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="user_") as script:
        script.write(textwrap.dedent(code))
        script.flush()
        return subprocess.run([sys.executable, script.name], capture_output=True, text=True,
                              timeout=timeout, env=env)


@pytest.mark.parametrize("call", ["torch_mncore.sync()", "torch_mncore.wait_device_ops()",
                                  "torch.ones(2).mncore() + 1"])
def test_using_the_device_before_init_is_an_error(call: str) -> None:
    done = run_python(f"""
        import torch, torch_mncore
        try:
            {call}
        except torch_mncore.LazyError as error:
            print(error)
        else:
            print("no error")
        """)
    assert done.returncode == 0, done.stderr
    assert re.match(rf"torch_mncore is not initialised at \S+user_\w+\.py:4: {re.escape(call)}: ",
                    done.stdout), done.stdout
    assert "call torch_mncore.init(device=...)" in done.stdout


def test_reinit_runs_pending_traces_on_the_old_device() -> None:
    """A tensor traced before init() switches device is computed by the old device and
    is an input of the new one's graphs."""
    torch_mncore.init("cpu", implicit_sync="error")
    x = torch.arange(4.0).mncore() * 2
    torch_mncore.init("interp", implicit_sync="error")
    assert torch.equal(x.cpu(), torch.arange(4.0) * 2)
    y = x + 1
    torch_mncore.sync()
    assert torch.equal(y.cpu(), torch.arange(4.0) * 2 + 1)
    assert torch_mncore.counters()["Executions"] == 1  # y's step, on the new device
    torch_mncore.init("cpu")


def test_reinit_reports_a_step_that_fails_on_the_old_device() -> None:
    """The pending step cannot compile for the tiny machine (f64): init() says so and
    keeps the device; its tensors keep the error; a second init() switches."""
    torch_mncore.init("mncore", implicit_sync="error", host_fallback=False)
    out = torch.ones(4, dtype=torch.float64).mncore() * 2
    with pytest.raises(torch_mncore.LazyError,
                       match=r"(?s)torch_mncore.init\('cpu'\) at .*test_lazy_lifecycle.py:\d+: "
                             r".*the 'mncore' device failed there, so the device is still "
                             r"'mncore': .*cannot compile this step.*call torch_mncore.init"
                             r"\('cpu'\) again to switch anyway"):
        torch_mncore.init("cpu")
    torch_mncore.init("cpu", implicit_sync="error")
    with pytest.raises(torch_mncore.LazyError, match="cannot compile this step"):
        out.cpu()
    z = torch.ones(2).mncore() + 1
    torch_mncore.sync()
    assert z.tolist() == [2.0, 2.0]


def test_a_step_that_fails_to_compile_keeps_its_error() -> None:
    """Reading a tensor of a step whose compilation failed repeats the diagnosis (it
    used to be a bare AssertionError)."""
    torch_mncore.init("mncore", implicit_sync="silent", host_fallback=False)
    out = torch.ones(4, dtype=torch.float64).mncore() * 2
    with pytest.raises(torch_mncore.LazyError, match="cannot compile this step"):
        torch_mncore.sync()
    for _ in range(2):
        with pytest.raises(torch_mncore.LazyError, match="cannot compile this step"):
            out.cpu()
    torch_mncore.init("cpu")


# ---------------------------------------------------------------------- triton import order

MLP_STEP = """
    import torch, torch_mncore
    import torch.nn.functional as F
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x, y = torch.randn(6, 8), torch.randint(0, 4, (6,))

    def step(model, x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()

    eager = copy.deepcopy(base)
    eager_loss = step(eager, x, y)
    torch_mncore.init("triton", implicit_sync="error")
    model = copy.deepcopy(base).mncore()
    loss = step(model, x.mncore(), y.mncore())
    torch_mncore.sync()
    torch.testing.assert_close(loss.cpu(), eager_loss)
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.grad.cpu(), theirs.grad)
    print("same as eager")
"""


@pytest.mark.parametrize("first", ["import triton.language", "import triton"])
def test_triton_device_works_after_triton_was_imported(first: str) -> None:
    """Triton chooses interpreter or compiler for its own library functions when it is
    imported; the triton device must work whoever imported it first."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = run_python(f"import copy\n{first}\n" + textwrap.dedent(MLP_STEP), env=env,
                      timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "same as eager" in done.stdout


# ---------------------------------------------------------------------- exit

TRAIN_AND_EXIT = """
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore

torch_mncore.init("cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).mncore()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    x, y = torch.randn(16, 32).mncore(), torch.randint(0, 10, (16,)).mncore()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    torch_mncore.sync()
torch_mncore.wait_device_ops()
"""


def test_worker_threads_are_gone_before_the_interpreter_finalises() -> None:
    """The root cause of the aborts: a worker thread still freeing tensors while the
    interpreter finalises. torch_mncore's exit handler ends every worker thread."""
    done = run_python("""
        import atexit, os, threading

        def check():  # registered first, so it runs after torch_mncore's handler
            workers = [t for t in threading.enumerate() if t.name == "mncore-worker"]
            print(f"{len(workers)} worker threads at exit", flush=True)
            os._exit(len(workers))

        atexit.register(check)
        import torch, torch_mncore
        torch_mncore.init("cpu")
        x = torch.ones(3).mncore() * 2
        torch_mncore.init("interp")
        y = x + 1
        torch_mncore.sync()
        """)
    assert done.stdout == "0 worker threads at exit\n", done.stdout + done.stderr
    assert done.returncode == 0


@pytest.mark.parametrize("count", [6, pytest.param(30, marks=pytest.mark.slow)])
def test_training_then_exiting_is_always_clean(count: int) -> None:
    """A training script that returns exits with status 0, every time (it used to abort
    with 'terminate called without an active exception' about one run in ten: 30 runs
    catch that 96 times in 100, CI's 6 about half the time; the test above checks the
    cause itself, the worker threads alive at exit, every time)."""
    with ThreadPoolExecutor(max(2, min(8, os.cpu_count() or 1))) as pool:
        runs = list(pool.map(lambda _: run_python(TRAIN_AND_EXIT), range(count)))
    failed = [(r.returncode, r.stderr[-500:]) for r in runs if r.returncode != 0]
    assert not failed, f"{len(failed)} of {count} runs failed: {failed[:3]}"


@pytest.mark.parametrize("device_threads", [1, 2])
def test_the_worker_keeps_its_threads_to_itself(device_threads: int) -> None:
    """The worker runs its graphs with ``device_threads`` intra-op threads, while the
    caller and threads started later keep theirs (a worker with its own OpenMP team made
    every small parallel op of the host 10x slower: ``bench/lazy_overhead.py`` (d))."""
    done = run_python(f"""
        import threading
        import torch, torch_mncore
        from mncore_ir.frontends import lazy_runtime

        torch.set_num_threads(2)
        host = torch.randn(512, 512)
        worker = lazy_runtime.init("cpu", device_threads={device_threads}).worker
        seen = []
        run_job = worker._run

        def counted(job):  # on the worker's thread
            seen.append(torch.get_num_threads())
            run_job(job)

        worker._run = counted
        x = host.mncore()
        for _ in range(2):  # a step whose ops run in parallel
            y = (x @ x).relu().sum(0)
            torch_mncore.sync(wait=True)
        later = []
        thread = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
        thread.start(); thread.join()
        print(min(seen), max(seen), torch.get_num_threads(), later[0])
        """)
    assert done.returncode == 0, done.stderr
    low, high, caller, later = map(int, done.stdout.split())
    assert (low, high, caller, later) == (device_threads, device_threads, 2, 2)


def test_a_worker_needs_a_thread() -> None:
    with pytest.raises(torch_mncore.LazyError, match=r"device_threads=0: .* at least 1"):
        torch_mncore.init("cpu", device_threads=0)


def test_a_module_a_live_graph_holds_is_refused_before_anything_moves() -> None:
    """An eager output whose autograd graph holds the module's weights (an RNN's):
    torch's swap failed halfway, with an internal message; now nothing moves and the
    error says what to do."""
    torch_mncore.init("cpu")
    model = nn.Sequential(nn.Linear(4, 4), nn.RNN(4, 4, batch_first=True))
    out, hidden = model(torch.randn(1, 3, 4))
    with pytest.raises(torch_mncore.LazyError, match="live autograd graph"):
        model.mncore()
    assert all(p.device.type == "cpu" for p in model.parameters())
    del out, hidden
    assert model.mncore() is model
    assert all(p.device.type == "mncore" for p in model.parameters())
