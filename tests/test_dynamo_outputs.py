"""``torch.compile(backend="mncore")``'s outputs and inputs as eager has them: outputs
that view one intermediate share its memory, and a Python float that changes between
calls (a 0-d f64 input) is taken in f32."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from test_dynamo import _step, fresh_dynamo, pytestmark  # noqa: F401 (its fixture, marks)
from torch import nn

import torch_mncore


@pytest.fixture(autouse=True)
def back_on_the_cpu() -> Any:
    yield
    torch_mncore.init("cpu")


@pytest.mark.parametrize("device", ["cpu", "interp", "task"])
@pytest.mark.parametrize("returns", [
    lambda y: (y, y.view(-1), y[1], y.t()), lambda y: (y.view(-1), y.t()),
    lambda y: (y[0], y[:, 1:]), lambda y: (y, *y.chunk(2, 1))],
    ids=["with-base", "whole-view", "no-whole", "chunks"])
def test_outputs_that_view_one_intermediate_share_its_memory(device: str,
                                                             returns: Callable) -> None:
    """An inference graph returning views of one intermediate (AOTAutograd leaves their
    aliasing to the backend): the outputs share memory as eager's do, so a write
    through one shows through the others; they were copies (found by a probe)."""
    torch_mncore.init(device)
    x = torch.randn(2, 4)
    expected, got = returns(x * 2), torch.compile(lambda x: returns(x * 2),
                                                  backend="mncore")(x)
    shared = [t.untyped_storage().data_ptr() == expected[0].untyped_storage().data_ptr()
              for t in expected]
    assert [t.untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()
            for t in got] == shared
    for outputs in (expected, got):
        outputs[0].add_(100)
    for a, b in zip(got, expected, strict=True):
        assert a.shape == b.shape and a.stride() == b.stride()
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("device", ["cpu", "mncore"])
def test_a_python_float_that_changes_is_taken_in_f32(device: str) -> None:
    """Dynamo passes a Python float whose value changes (a scheduler's learning rate)
    as a 0-d f64 input, converted to f32 where used: the graph takes it in f32 (exact),
    so MN-Core, which has no f64 word, compiles the step instead of running it on the
    host (found by a probe)."""
    torch_mncore.init(device)
    f = torch.compile(lambda x, s: x * s + 1, backend="mncore")
    x = torch.randn(5)
    for s in (0.5, 0.25, 3.0):
        assert torch.equal(f(x, s), x * s + 1)
    torch.manual_seed(0)
    model, reference = nn.Linear(4, 3), nn.Linear(4, 3)
    reference.load_state_dict(model.state_dict())
    runs = []
    for net, compiled in ((model, True), (reference, False)):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 0.5 ** k)
        step = torch.compile(_step, backend="mncore") if compiled else _step
        for k in range(3):
            step(net, optimizer, torch.full((2, 4), k + 1.0), torch.ones(2, 3))
            schedule.step()
        runs.append([p.detach().clone() for p in net.parameters()])
    for a, b in zip(*runs, strict=True):
        torch.testing.assert_close(a, b)
    assert not [k for k in torch_mncore.counters() if "no word form" in k]
