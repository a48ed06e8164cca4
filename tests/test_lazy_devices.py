"""The device registry (one ``Device`` per device, bound to ``$MNCORE_MACHINE`` where
its pipeline names a machine) and structured compile errors: the importer locates each
graph op at the user's line, and an error that blames an op names that line."""

from __future__ import annotations

import inspect

import pytest
import torch
from xdsl.dialects.builtin import FileLineColLoc

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.diagnostics import OpVerifyException
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.frontends.lazy_compile import blamed_line
from mncore_ir.pipeline import DEVICES, UnknownDeviceError, device


def test_devices_bind_the_machine_their_pipeline_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNCORE_MACHINE", "mncore2")
    mncore = device("mncore")
    assert "convert-task-to-mncore{machine=mncore2}" in mncore.pipeline
    assert mncore.cache_tag == "mncore-mncore2"
    assert device("cpu") is DEVICES["cpu"]
    assert device("cpu").cache_tag == "cpu"
    with pytest.raises(UnknownDeviceError, match="unknown device 'tpu'; devices: cpu, "
                       "interp, task, triton, mncore"):
        device("tpu")


def scaled_tanh(x: torch.Tensor) -> torch.Tensor:
    y = x * 3
    return torch.tanh(y)


def test_an_error_blaming_an_op_names_the_users_line() -> None:
    module = import_captured(capture(scaled_tanh, torch.randn(4)))
    tanh = next(op for op in module.walk() if isinstance(op, g.TanhOp))
    assert isinstance(tanh.location, FileLineColLoc)
    lines, start = inspect.getsourcelines(scaled_tanh)
    line = start + next(i for i, text in enumerate(lines) if "torch.tanh" in text)
    assert tanh.location.line.data == line
    try:
        raise OpVerifyException(tanh, "refused")
    except OpVerifyException as inner:
        outer = RuntimeError("the pipeline failed")
        outer.__cause__ = inner
    assert blamed_line(outer) == f"{__file__}:{line}: return torch.tanh(y)"
    assert blamed_line(RuntimeError("no op")) == ""
