"""Import errors name what is wrong and where in the user's code it happened."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mncore_ir.frontends.fx import (
    FxImportError,
    UnsupportedOpError,
    capture,
    import_captured,
    import_fx,
)
from mncore_ir.testing.model_zoo import Tensors, TrainingStep


def line_of(fn: Callable[..., Any], text: str) -> tuple[str, int]:
    """The file of ``fn`` and the number of its first source line containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    index = next(i for i, line in enumerate(lines) if text in line)
    return fn.__code__.co_filename, start + index


def uses_polygamma(x: torch.Tensor) -> torch.Tensor:  # a form its handler refuses
    y = x * 2
    return torch.polygamma(2, y) + 1


def uses_nextafter(x: torch.Tensor) -> torch.Tensor:  # an op with no handler
    y = torch.tanh(x)
    return torch.nextafter(y, torch.zeros_like(y))


@pytest.mark.parametrize(("fn", "call", "aten_op"), [
    (uses_polygamma, "torch.polygamma", "aten.polygamma"),
    (uses_nextafter, "torch.nextafter", "aten.nextafter"),
], ids=["polygamma", "nextafter"])
def test_unsupported_op_in_a_function_names_op_and_line(
        fn: Callable[[torch.Tensor], torch.Tensor], call: str, aten_op: str) -> None:
    captured = capture(fn, torch.randn(3, 4))
    with pytest.raises(UnsupportedOpError) as info:
        import_captured(captured)
    message = str(info.value)
    path, line = line_of(fn, call)
    assert aten_op in message
    assert f"{path}:{line}" in message, message
    assert call in message  # the source line itself is quoted


class PolygammaModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.polygamma(2, self.linear(x))


def plain_sgd(params: Tensors, grads: Tensors, state: Tensors) -> None:
    for name, p in params.items():
        p.sub_(0.1 * grads[name])


def test_unsupported_op_in_a_training_step_names_op_and_line() -> None:
    """Through autograd and the optimizer, the error still points at ``forward``."""
    torch.manual_seed(0)
    step = TrainingStep(
        "polygamma", PolygammaModel(), F.cross_entropy,
        plain_sgd,
        (torch.randn(2, 4), torch.tensor([0, 2])), {})
    captured = capture(step, *step.example_inputs())
    with pytest.raises(UnsupportedOpError) as info:
        import_captured(captured)
    path, line = line_of(PolygammaModel.forward, "torch.polygamma")
    message = str(info.value)
    assert "aten.polygamma" in message
    assert f"{path}:{line}" in message, message


def add_one(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y + 1


@pytest.mark.parametrize("count", [1, 3])
def test_wrong_number_of_example_inputs(count: int) -> None:
    x = torch.randn(2, 2)
    captured = capture(add_one, x, x.clone())
    with pytest.raises(FxImportError) as info:
        import_fx(captured.gm, [x] * count)
    message = str(info.value)
    assert re.search(rf"\b2 inputs\b.*\b{count} example inputs\b", message), message


def test_non_tensor_example_input() -> None:
    x = torch.randn(2, 2)
    captured = capture(add_one, x, x.clone())
    with pytest.raises(FxImportError, match=r"not a tensor: 3\.0"):
        import_fx(captured.gm, [x, 3.0])  # type: ignore[list-item]


def test_unsupported_dtype() -> None:
    x = torch.randn(2, 2).to(torch.complex64)
    captured = capture(add_one, x, x.clone())
    with pytest.raises(FxImportError, match=r"torch\.complex64 is not supported"):
        import_captured(captured)


def test_supported_function_imports() -> None:
    """The same helpers on a supported function: no error (the negative tests are not
    failing for an unrelated reason)."""
    x = torch.randn(2, 2)
    module = import_captured(capture(add_one, x, x.clone()))
    module.verify()
