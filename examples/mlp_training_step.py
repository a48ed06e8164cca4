"""The main demo: one MLP training step (forward, backward, SGD with momentum) captured
from PyTorch, printed as graph-level IR, run in the reference interpreter and compared
with eager PyTorch."""

from __future__ import annotations

import numpy as np
from torch.utils import _pytree as pytree

from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.testing.model_zoo import mlp_sgd


def main() -> None:
    step = mlp_sgd(batch=8)
    inputs = step.example_inputs()
    captured = capture(step, *inputs)
    module = import_captured(captured)
    apply_pipeline(module, "canonicalize,cse,dce")
    print(module)

    outputs = run_function(module, [t.numpy() for t in pytree.tree_leaves(inputs)])

    eager_inputs = step.example_inputs()
    eager_loss = step(*eager_inputs).item()
    eager_flat = pytree.tree_leaves(eager_inputs)
    worst = max(
        float(np.max(np.abs(out - eager_flat[i].numpy())))
        for out, i in zip(outputs[1:], captured.mutated_inputs, strict=True)
    )
    ops = sum(1 for _ in module.walk()) - 2
    print(f"\n{ops} graph ops; {len(captured.mutated_inputs)} tensors updated in place "
          f"(parameters and momentum buffers)")
    print(f"loss  interpreter: {float(outputs[0]):.6f}   PyTorch eager: {eager_loss:.6f}")
    print(f"largest difference in any updated parameter or buffer: {worst:.2e}")


if __name__ == "__main__":
    main()
