"""Shared fixtures: the model zoo's training steps, captured once per test session."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mncore_ir.frontends.fx import CapturedGraph, capture
from mncore_ir.model_zoo import TRAINING_STEPS, TrainingStep

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
