"""A Python step function captured once (FX), compiled once for a device, then called
like the function itself: it returns the function's results and writes the new values
of the tensors the function mutates back into them (a decode step's KV caches and
position, a training step's parameters). The FX path's counterpart of a lazy ``sync()``
per step, without tracing each call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline, device


class CompiledStep:
    """``fn`` captured on ``example_args`` and lowered by ``device_name``'s pipeline."""

    def __init__(self, fn: Callable[..., Any], *example_args: Any,
                 device_name: str = "interp") -> None:
        self.captured = capture(fn, *example_args)
        self.module = import_captured(self.captured)
        target = device(device_name)
        apply_pipeline(self.module, target.pipeline)
        self.run = target.executable(self.module)
        self.signature = [(tuple(t.shape), t.dtype) for t in self.captured.example_inputs]
        self.results = len(self.captured.output_names) - len(self.captured.mutated_inputs)
        self.calls = 0

    def __call__(self, *args: Any) -> list[torch.Tensor]:
        """The step on ``args`` (shaped as the example's): its results; the tensors it
        mutates are updated in place."""
        flat = pytree.tree_leaves(args)
        got = [(tuple(t.shape), t.dtype) for t in flat]
        if got != self.signature:
            wrong = next(i for i, (a, b) in enumerate(zip(got, self.signature, strict=False))
                         if a != b) if len(got) == len(self.signature) else None
            where = (f"input {self.captured.input_names[wrong]} is {got[wrong]}, compiled "
                     f"for {self.signature[wrong]}" if wrong is not None
                     else f"{len(got)} tensors, compiled for {len(self.signature)}")
            raise ValueError(f"CompiledStep called with other shapes than it was compiled "
                             f"for: {where} (capture it again for them)")
        outputs = self.run(flat)
        with torch.no_grad():
            for index, new in zip(self.captured.mutated_inputs, outputs[self.results:],
                                  strict=True):
                flat[index].copy_(new)
        self.calls += 1
        return list(outputs[:self.results])
