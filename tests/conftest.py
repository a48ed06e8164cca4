"""Shared fixtures: the model zoo's training steps, captured once per test session, and
the Triton megakernels generated in a session (compiled for sm_90 at its end)."""

from __future__ import annotations

import os
import subprocess
import sys

# Triton decides between its interpreter and its compiler per function as it is
# decorated, and tracing imports triton.language: this machine has no GPU, so choose
# the interpreter before anything is imported.
os.environ.setdefault("TRITON_INTERPRET", "1")

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
import torch

from mncore_ir.dialects import task as t
from mncore_ir.frontends.fx import CapturedGraph, capture
from mncore_ir.pipeline import GRAPH_PIPELINE
from mncore_ir.testing.model_zoo import TRAINING_STEPS, TrainingStep

#: The tolerance of every comparison with PyTorch eager (f32).
RTOL, ATOL = 1e-4, 1e-5

#: Pass pipelines whose results must equal the imported graph's.
PIPELINES = {
    "none": "",
    "canonicalize-cse-dce": "canonicalize,cse,dce",
    "graph-decompose": "graph-decompose",
    "graph-fuse-elementwise": "graph-fuse-elementwise",
    "graph-pipeline": GRAPH_PIPELINE,
}


def assert_all_close(outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                     names: Sequence[str] | None = None) -> None:
    """Same count, shapes and dtypes, and values within RTOL/ATOL."""
    assert len(outputs) == len(expected)
    names = names or [f"output {i}" for i in range(len(outputs))]
    assert len(names) == len(outputs)
    for name, out, exp in zip(names, outputs, expected, strict=True):
        assert out.shape == exp.shape, f"{name}: shape {out.shape} != {exp.shape}"
        assert out.dtype == exp.dtype, f"{name}: dtype {out.dtype} != {exp.dtype}"
        np.testing.assert_allclose(out, exp, rtol=RTOL, atol=ATOL, err_msg=name)

def run_on_device(device: str, fn: Callable[..., Any], *args: torch.Tensor,
                  implicit_sync: str = "error") -> tuple[list[torch.Tensor], list[str]]:
    """``fn`` of ``args`` moved to a fresh ``device`` runtime, synced and read back (a
    tuple result as a list), and the names of the ops that ran on the host."""
    import torch_mncore

    torch_mncore.init(device, implicit_sync=implicit_sync)
    try:
        torch_mncore.reset_metrics()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*[a.mncore() for a in args])
            torch_mncore.sync()
            got = [o.cpu() for o in (out if isinstance(out, tuple) else (out,))]
        host = [k for k in torch_mncore.counters() if k.startswith("CpuFallback")]
    finally:
        torch_mncore.init("cpu")
    return got, host


CapturedStep = tuple[TrainingStep, CapturedGraph]


@pytest.fixture(scope="session")
def captured_steps() -> Callable[[str], CapturedStep]:
    """``get(name)``: the training step ``name`` and its capture, built on first use.

    Capturing takes seconds (two ``make_fx`` traces), so each step is captured once;
    tests import a fresh module from the capture and must not change the capture.
    """
    cache: dict[str, CapturedStep] = {}

    def get(name: str) -> CapturedStep:
        if name not in cache:
            step = TRAINING_STEPS[name]()
            cache[name] = (step, capture(step, *step.example_inputs()))
        return cache[name]

    return get


COMPILE_ALL = """
import importlib.util, sys
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("megakernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.compile_for_gpu(90, 32)
print(f"compiled {len(sys.argv) - 1} megakernels for sm_90")
"""


@pytest.fixture(scope="session")
def megakernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[t.KernelOp], Any]]:
    """``make(kernel)``: generate and load the kernel's megakernel module. At the end of
    the session every generated module is compiled for sm_90 (without a GPU)."""
    directory = tmp_path_factory.mktemp("megakernels")
    paths: list[str] = []

    from mncore_ir.targets.triton_megakernel import generate, load

    def make(kernel: t.KernelOp) -> Any:
        module = load(generate(kernel), str(directory))
        paths.append(module.__file__)
        return module

    yield make
    if not paths:
        return
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    result = subprocess.run([sys.executable, "-c", COMPILE_ALL, *sorted(set(paths))],
                            env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-4000:]
