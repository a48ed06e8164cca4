"""The MLP's forward pass as a persistent Triton megakernel: capture, lower through the
task level, generate (``build/mlp_megakernel.py``), show the core of the generated code,
run it (Triton's interpreter without a GPU) and compare with eager PyTorch.

    python examples/mlp_megakernel.py [--batch 8] [--width 64]
"""

import argparse
import os
import re

import torch

if not torch.cuda.is_available():  # choose Triton's interpreter before Triton loads
    os.environ.setdefault("TRITON_INTERPRET", "1")

from torch.func import functional_call

from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.pipeline import apply_pipeline
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.targets.triton_megakernel import generate, load
from mncore_ir.testing.model_zoo import MLP

PIPELINE = ("canonicalize,cse,dce,graph-fuse-elementwise,"
            "convert-graph-to-task{matmul_tile=16,32 elementwise_tile=256 workers=8}")


def excerpt(source: str, name: str) -> str:
    """One top-level function of the generated module."""
    match = re.search(rf"^@triton\.jit\ndef {name}\(.*?(?=^\S)", source, re.S | re.M)
    return match.group(0).rstrip() if match else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = MLP((args.width, args.width, 10)).eval()
    x = torch.randn(args.batch, args.width)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def forward(params, x):
        with torch.no_grad():
            return functional_call(model, params, (x,))

    captured = capture(forward, params, x)
    module = import_captured(captured)
    apply_pipeline(module, PIPELINE)
    kernel = find_kernel(module)
    source = generate(kernel)
    os.makedirs("build", exist_ok=True)
    with open("build/mlp_megakernel.py", "w") as f:
        f.write(source)
    megakernel = load(source, "build")
    print(f"MLP {args.width}-{args.width}-10, batch {args.batch}: {megakernel.NUM_TASKS} tasks "
          f"of {len(megakernel.TASK_TYPES)} types, {len(megakernel.TARGETS)} events, "
          f"{len(megakernel.LEVELS)} dependency levels -> build/mlp_megakernel.py "
          f"({len(source.splitlines())} lines)\n")
    matmul = excerpt(source, next(n for n in megakernel.TASK_TYPES if "_matmul" in n))
    head, loads, loops = matmul.partition("\n    s0 = ")[0], "    ...  # descriptor loads", \
        matmul[matmul.index("    M = s3"):]
    print("\n".join([head, loads, loops]))
    print()
    print(excerpt(source, "megakernel"))
    where = "a GPU" if torch.cuda.is_available() else "Triton's interpreter"
    with torch.no_grad():
        expected = model(x)
    for mode in ("megakernel", "levels"):
        (out,) = megakernel.run(*captured.example_inputs, mode=mode)
        error = (out.cpu() - expected).abs().max().item()
        print(f"\n{mode} mode on {where}: max |megakernel - eager| = {error:.1e}", end="")
    print()


if __name__ == "__main__":
    main()
