"""The model zoo's training steps, imported and interpreted, against eager PyTorch.

For every training step and pipeline: capture, import, run the pipeline, verify, check
dominance, run in the numpy interpreter and compare the loss and every updated input
with eager PyTorch running the same step on fresh copies of the inputs. The zoo's
hand-written optimizers are themselves checked against ``torch.optim``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import PIPELINES, RTOL, assert_all_close
from torch import nn
from torch.func import functional_call
from torch.utils import _pytree as pytree

from mncore_ir.dominance import check_dominance
from mncore_ir.frontends.fx import CapturedGraph, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.testing.model_zoo import (
    MLP,
    TRAINING_STEPS,
    Tensors,
    TrainingStep,
    adam_update,
    sgd_update,
)

CapturedStep = tuple[TrainingStep, CapturedGraph]
GetStep = Callable[[str], CapturedStep]

_EXPECTED: dict[str, list[np.ndarray]] = {}


def eager_outputs(name: str, step: TrainingStep, captured: CapturedGraph) -> list[np.ndarray]:
    """The loss and the new value of every mutated input, from eager PyTorch (cached)."""
    if name not in _EXPECTED:
        inputs = step.example_inputs()
        loss = step(*inputs)
        flat = pytree.tree_leaves(inputs)
        _EXPECTED[name] = [loss.numpy()] + [flat[i].numpy() for i in captured.mutated_inputs]
    return _EXPECTED[name]


@pytest.mark.parametrize("pipeline", PIPELINES.values(), ids=PIPELINES.keys())
@pytest.mark.parametrize("name", TRAINING_STEPS)
def test_training_step_matches_eager(name: str, pipeline: str, captured_steps: GetStep) -> None:
    step, captured = captured_steps(name)
    module = import_captured(captured)
    if pipeline:
        apply_pipeline(module, pipeline)
    module.verify()
    check_dominance(module)
    outputs = run_function(module, [t.numpy() for t in captured.example_inputs])
    assert_all_close(outputs, eager_outputs(name, step, captured), captured.output_names)


@pytest.mark.parametrize("name", TRAINING_STEPS)
def test_every_updated_input_is_an_output(name: str, captured_steps: GetStep) -> None:
    """Every parameter, buffer and optimizer-state tensor is a mutated input, and
    nothing else is: an update the graph misses would be silently lost."""
    step, captured = captured_steps(name)
    params, buffers, state, _inputs, _target = step.example_inputs()
    expected = ({f"params.{k}" for k in params} | {f"buffers.{k}" for k in buffers}
                | {f"state.{k}" for k in state})
    mutated = [captured.input_names[i] for i in captured.mutated_inputs]
    assert len(mutated) == len(set(mutated))
    assert set(mutated) == expected
    assert captured.output_names == ["result"] + [f"new.{n}" for n in mutated]

    # Every input that eager PyTorch changes is among them.
    before = [t.clone() for t in pytree.tree_leaves(step.example_inputs())]
    after = step.example_inputs()
    step(*after)
    changed = {captured.input_names[i]
               for i, (b, a) in enumerate(zip(before, pytree.tree_leaves(after), strict=True))
               if not torch.equal(a, b)}
    assert changed <= set(mutated)
    assert changed, "the step changed nothing"


def test_cnn_batch_norm_statistics_are_updated(captured_steps: GetStep) -> None:
    _step, captured = captured_steps("cnn_sgd")
    mutated = {captured.input_names[i] for i in captured.mutated_inputs}
    for bn in ("bn1", "bn2"):
        for stat in ("running_mean", "running_var", "num_batches_tracked"):
            assert f"buffers.{bn}.{stat}" in mutated


# ------------------------------------------------------------- the zoo's optimizers


def torch_state(kind: str, name: str, zoo_state: Tensors) -> dict[str, torch.Tensor]:
    """``torch.optim`` per-parameter state equal to the zoo's state for parameter ``name``."""
    if kind == "sgd":
        return {"momentum_buffer": zoo_state[f"momentum.{name}"].clone()}
    return {"step": zoo_state["step"].clone(), "exp_avg": zoo_state[f"exp_avg.{name}"].clone(),
            "exp_avg_sq": zoo_state[f"exp_avg_sq.{name}"].clone()}


def zoo_state_like(kind: str, params: Tensors, generator: torch.Generator) -> Tensors:
    """Mid-training state in the zoo's conventions (non-zero, so it matters)."""
    if kind == "sgd":
        return {f"momentum.{k}": torch.randn(v.shape, generator=generator) * 0.01
                for k, v in params.items()}
    state = {"step": torch.tensor(10.0)}
    for k, v in params.items():
        state[f"exp_avg.{k}"] = torch.randn(v.shape, generator=generator) * 1e-3
        state[f"exp_avg_sq.{k}"] = torch.rand(v.shape, generator=generator) * 1e-4
    return state


def compare_with_torch_optim(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    update: Callable[[Tensors, Tensors, Tensors], None],
    make_optimizer: Callable[[list[nn.Parameter]], torch.optim.Optimizer],
    kind: str,
    state: Tensors,
    batches: list[tuple[torch.Tensor, torch.Tensor]],
) -> None:
    """Run the zoo's ``update`` and ``torch.optim`` side by side, comparing after each step."""
    reference = copy.deepcopy(model)
    optimizer = make_optimizer(list(reference.parameters()))
    named = dict(reference.named_parameters())
    for name, p in named.items():
        optimizer.state[p] = torch_state(kind, name, state)
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    buffers = {k: v.detach().clone() for k, v in model.named_buffers()}
    initial = {k: v.clone() for k, v in params.items()}
    for x, y in batches:
        leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        loss = loss_fn(functional_call(model, {**leaves, **buffers}, (x,)), y)
        grads = torch.autograd.grad(loss, list(leaves.values()))
        with torch.no_grad():
            update(params, dict(zip(params, grads, strict=True)), state)

        optimizer.zero_grad()
        loss_fn(reference(x), y).backward()
        optimizer.step()

        for name, p in named.items():
            np.testing.assert_allclose(params[name].numpy(), p.detach().numpy(), rtol=RTOL,
                                       atol=1e-6, err_msg=f"parameter {name}")
            expected = torch_state(kind, name, state)
            for key, value in optimizer.state[p].items():
                np.testing.assert_allclose(expected[key].numpy(), value.numpy(), rtol=RTOL,
                                           atol=1e-7, err_msg=f"{key} of {name}")
        for name, b in reference.named_buffers():
            np.testing.assert_allclose(buffers[name].numpy(), b.numpy(), rtol=RTOL, atol=1e-6,
                                       err_msg=f"buffer {name}")
    moved = max(float((params[k] - initial[k]).abs().max()) for k in params)
    assert moved > 1e-4, "the updates did not change the parameters"


OPTIMIZERS: dict[str, tuple[str, Callable[..., None], Callable[..., torch.optim.Optimizer]]] = {
    "sgd": ("sgd", partial(sgd_update, lr=0.1, momentum=0.9),
            partial(torch.optim.SGD, lr=0.1, momentum=0.9)),
    "adam": ("adam", partial(adam_update, lr=0.01),
             partial(torch.optim.Adam, lr=0.01)),
    "adamw": ("adam", partial(adam_update, lr=0.01, weight_decay=0.1),
              partial(torch.optim.AdamW, lr=0.01, weight_decay=0.1)),
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_zoo_optimizer_matches_torch_optim(optimizer: str) -> None:
    kind, update, make_optimizer = OPTIMIZERS[optimizer]
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    model = MLP((6, 12, 5))
    state = zoo_state_like(kind, dict(model.named_parameters()), g)
    batches = [(torch.randn(4, 6, generator=g), torch.randint(0, 5, (4,), generator=g))
               for _ in range(3)]
    compare_with_torch_optim(model, F.cross_entropy, update, make_optimizer, kind, state,
                             batches)


#: The optimizer each training step's update stands for, with the same hyperparameters
#: as its ``update`` in ``model_zoo``.
STEP_OPTIMIZERS: dict[str, tuple[str, Callable[..., torch.optim.Optimizer]]] = {
    "mlp_sgd": ("sgd", partial(torch.optim.SGD, lr=0.1, momentum=0.9)),
    "mlp_adam": ("adam", partial(torch.optim.Adam, lr=1e-3)),
    "gpt_adamw": ("adam", partial(torch.optim.AdamW, lr=1e-3, weight_decay=0.01)),
    "cnn_sgd": ("sgd", partial(torch.optim.SGD, lr=0.05, momentum=0.9)),
}


@pytest.mark.parametrize("name", TRAINING_STEPS)
def test_training_step_update_matches_torch_optim(name: str) -> None:
    """Each training step's own update (loss, hyperparameters, state) over three steps."""
    step = TRAINING_STEPS[name]()
    kind, make_optimizer = STEP_OPTIMIZERS[name]
    x, y = step.batch
    batches = [(x, y), (x.flip(0), y.flip(0)), (x, y.roll(1))]
    state = {k: v.clone() for k, v in step.state.items()}
    compare_with_torch_optim(step.model, step.loss, step.update, make_optimizer, kind, state,
                             batches)
