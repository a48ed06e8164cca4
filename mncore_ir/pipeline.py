"""The Python compile API: named pipelines and applying pass pipelines to modules."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from mncore_ir.registry import get_all_dialects, get_all_passes

#: The graph-level pipeline: simplify, expand composites, simplify again, fuse.
GRAPH_PIPELINE = "canonicalize,cse,graph-decompose,canonicalize,cse,dce,graph-fuse-elementwise"

#: The pass pipeline each lazy-tensor device runs on an imported graph.
DEVICE_PIPELINES = {
    "cpu": "canonicalize,cse,dce",
    "interp": "canonicalize,cse,dce",
    "task": "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task",
    "triton": "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task",
}

Executable = Callable[[Sequence[torch.Tensor]], Sequence[torch.Tensor]]


def mncore_machine() -> str:
    """The machine the ``mncore`` device compiles for: ``$MNCORE_MACHINE``, or ``tiny``."""
    from mncore_ir.dialects.mncore_machines import MACHINES

    name = os.environ.get("MNCORE_MACHINE", "tiny")
    if name not in MACHINES:
        raise ValueError(f"MNCORE_MACHINE={name!r} is not a machine; machines: "
                         f"{', '.join(MACHINES)}")
    return name


def device_pipeline(device: str) -> str:
    """The pass pipeline ``device`` runs on an imported graph: ``mncore`` decomposes
    composites, tiles into tasks and lowers them to a program for ``mncore_machine()``."""
    if device == "mncore":
        return (f"{GRAPH_PIPELINE},convert-graph-to-task,"
                f"convert-task-to-mncore{{machine={mncore_machine()}}}")
    return DEVICE_PIPELINES[device]


def device_executable(module: ModuleOp, device: str) -> Executable:
    """How ``device`` runs the module's entry function on torch tensors: generated
    torch code (``cpu``), the reference interpreter (``interp``), the megakernel
    simulator (``task``), the Triton megakernel (``triton``: on a GPU when there is
    one, else in Triton's interpreter) or the cycle simulator (``mncore``)."""
    if device == "cpu":
        from mncore_ir.targets.graph_torch import compile_module

        program = compile_module(module)
        return lambda args: program(*args)
    if device == "triton":
        return triton_executable(module)
    if device == "mncore":
        from mncore_ir.targets.mncore_simulator import find_program

        return ProgramRunner(find_program(module))
    if device == "task":
        from mncore_ir.targets.task_simulator import TileEvaluator, find_kernel, simulate

        kernel = find_kernel(module)
        evaluator = TileEvaluator(kernel)
        run = lambda arrays: simulate(kernel, arrays, evaluator=evaluator)  # noqa: E731
    else:
        from mncore_ir.targets.graph_interpreter import run_function

        run = lambda arrays: run_function(module, arrays)  # noqa: E731

    def interpret(args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outs = run([a.numpy() for a in args])
        return [torch.from_numpy(np.array(o)) for o in outs]  # contiguous, 0-d kept

    return interpret


class ProgramRunner:
    """Runs an ``mncore.program`` in the cycle simulator on torch tensors, counting the
    simulated steps and cycles (the lazy runtime adds them to its counters)."""

    def __init__(self, program: Any) -> None:
        from mncore_ir.targets.mncore_simulator import check

        check(program)  # once: every step runs the same program
        self.program = program
        self.counts: Counter[str] = Counter()

    def __call__(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        from mncore_ir.targets.mncore_simulator import simulate

        outs, report = simulate(self.program, [a.numpy() for a in args], verify=False)
        self.counts.update({"MNCoreRuns": 1, "MNCoreSteps": report.steps,
                            "MNCoreCycles": report.cycles})
        return [torch.from_numpy(np.array(o)) for o in outs]

    def take_counts(self) -> Counter[str]:
        counts, self.counts = self.counts, Counter()
        return counts


def make_context() -> Context:
    """A context with every mncore-ir dialect registered (lazily)."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def apply_pipeline(module: ModuleOp, spec: str, ctx: Context | None = None,
                   verify: bool = True) -> ModuleOp:
    """Run ``spec`` (``mncore-opt -p`` syntax) on ``module`` in place, verifying after
    each pass when ``verify``."""

    def callback(_prev: object, mod: ModuleOp, _next: object) -> None:
        if verify:
            mod.verify()

    PassPipeline.parse_spec(get_all_passes(), spec, callback).apply(ctx or make_context(), module)
    return module


def triton_executable(module: ModuleOp) -> Executable:
    """Generate and load the module's megakernel; without a GPU, Triton runs it in its
    interpreter (``TRITON_INTERPRET=1`` is set for this process, which works only if
    ``triton.language`` has not been imported yet: set it before tracing)."""
    import os
    import tempfile

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from mncore_ir.targets.task_simulator import find_kernel
    from mncore_ir.targets.triton_megakernel import generate, load

    directory = os.environ.get("MNCORE_CACHE_DIR") or tempfile.gettempdir()
    os.makedirs(directory, exist_ok=True)
    megakernel = load(generate(find_kernel(module)), directory)
    return lambda args: [out.cpu() for out in megakernel.run(*args)]
