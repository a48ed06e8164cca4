"""Buffer donation on the cpu device: a step's executable writes into the input
buffers that nothing else holds (a parameter's previous value, a dropped batch), as
eager's in-place optimizer does, and never into memory a tensor, a view or an array
the user holds can still show, nor into one a queued graph still reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_mncore


@pytest.fixture(params=[True, False], ids=["async", "sync"])
def runtime(request: pytest.FixtureRequest) -> None:
    torch_mncore.init("cpu", implicit_sync="error", asynchronous=request.param)
    torch_mncore.reset_metrics()


def donated() -> int:
    return torch_mncore.counter_value("DonatedBuffers") or 0


def test_a_training_loop_donates_and_matches_eager(runtime: None) -> None:
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 5))
    model = nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 5))
    model.load_state_dict(eager.state_dict())
    model.mncore()
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
                  for m in (eager, model)]
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        x, y = torch.randn(16, 24, generator=g), torch.randint(0, 5, (16,), generator=g)
        for m, opt, (a, b) in zip((eager, model), optimizers,
                                  ((x, y), (x.mncore(), y.mncore())), strict=True):
            opt.zero_grad()
            F.cross_entropy(m(a), b).backward()
            opt.step()
        torch_mncore.sync()
    torch_mncore.wait_device_ops()
    # each step gives up the parameters' and momentum buffers' previous values
    assert donated() >= 3 * 4
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.cpu(), theirs, rtol=1e-5, atol=1e-6)


def test_a_buffer_a_live_tensor_holds_is_not_written(runtime: None) -> None:
    a = torch.arange(64.0).reshape(8, 8).mncore()
    b = a * 2  # reads a's buffer, which a still holds
    torch_mncore.sync(wait=True)
    np.testing.assert_array_equal(a.cpu().numpy(), np.arange(64.0).reshape(8, 8))
    np.testing.assert_array_equal(b.cpu().numpy(), 2 * np.arange(64.0).reshape(8, 8))
    assert donated() == 0
    c = b + 1  # b's buffer: b is dropped before the sync, so it is given up
    del b
    torch_mncore.sync(wait=True)
    np.testing.assert_array_equal(c.cpu().numpy(), 2 * np.arange(64.0).reshape(8, 8) + 1)
    assert donated() == 1


def test_memory_an_array_or_tensor_of_the_user_shows_is_not_written(runtime: None) -> None:
    x = torch.arange(16.0).mncore()
    torch_mncore.sync(wait=True)
    array = x.numpy()  # shares the buffer's memory
    x.mul_(3)  # x's old buffer: held by no lazy tensor now, but the array shows it
    torch_mncore.sync(wait=True)
    np.testing.assert_array_equal(array, np.arange(16.0))
    held = x.materialize()  # the buffer's tensor itself
    x.add_(1)
    torch_mncore.sync(wait=True)
    torch.testing.assert_close(held, 3 * torch.arange(16.0))
    storage = x.materialize().untyped_storage()  # its memory, as a storage object
    x.add_(1)
    torch_mncore.sync(wait=True)
    torch.testing.assert_close(torch.empty(0).set_(storage), 3 * torch.arange(16.0) + 1)
    np.testing.assert_array_equal(x.cpu().numpy(), 3 * np.arange(16.0) + 2)
    assert donated() == 0
    x.add_(1)  # now nothing else shows x's buffer
    torch_mncore.sync(wait=True)
    np.testing.assert_array_equal(x.cpu().numpy(), 3 * np.arange(16.0) + 3)
    assert donated() == 1


def test_a_buffer_a_queued_graph_reads_waits_for_it(runtime: None) -> None:
    """Two steps in flight: the second gives up a buffer the first still reads."""
    w = torch.ones(256, 256).mncore()
    torch_mncore.sync(wait=True)
    first = (w @ w).sum()  # a slow first graph
    torch_mncore.sync()
    w.add_(1)  # w's old buffer: only the two graphs read it now
    second = w * 2
    torch_mncore.sync()
    torch_mncore.wait_device_ops()
    assert first.item() == 256.0 ** 3
    np.testing.assert_array_equal(second.cpu().numpy(), np.full((256, 256), 4.0))
    np.testing.assert_array_equal(w.cpu().numpy(), np.full((256, 256), 2.0))


def test_buffers_made_under_inference_mode_are_not_donated() -> None:
    """torch lets no thread outside ``inference_mode`` write a tensor made inside it:
    the worker's in-place step into such a buffer failed."""
    torch_mncore.init("cpu")
    with torch.inference_mode():
        z = torch.ones(2).mncore() * 3
        z.add_(1)
        torch_mncore.sync()
        torch.testing.assert_close(z.cpu(), torch.full((2,), 4.0))
