"""How a lowered module runs on torch tensors: one executable factory per kind of
device (generated torch code, the reference interpreter, the megakernel simulator, the
Triton megakernel, the cycle simulator). :mod:`mncore_ir.pipeline`'s devices name them."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

if TYPE_CHECKING:  # torch is imported where a device runs: the tools do not need it
    import torch
    from xdsl.ir import Operation

    from mncore_ir.dialects.mncore import ProgramOp
    from mncore_ir.targets.graph_interpreter import Communicator

Executable = Callable[[Sequence["torch.Tensor"]], Sequence["torch.Tensor"]]
ArrayFunction = Callable[[list[np.ndarray]], Sequence[Any]]


def torch_code(module: ModuleOp) -> TorchCode:
    """The module's entry function as generated straight-line torch CPU code."""
    return TorchCode(module)


class TorchCode:
    """Generated torch code, callable on a step's arguments; :meth:`donating` runs the
    variant that may write into the arguments the caller gives up (generated at its
    first call, kept for the next steps, which donate the same buffers)."""

    VARIANTS = 8

    def __init__(self, module: ModuleOp) -> None:
        from mncore_ir.dialects.values import find_function
        from mncore_ir.targets.graph_torch import compile_function

        self.func = find_function(module)
        self.programs = {frozenset[int](): compile_function(self.func)}

    def __call__(self, args: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        return self.programs[frozenset()](*args)

    def donating(self, args: Sequence[torch.Tensor], donated: frozenset[int]
                 ) -> Sequence[torch.Tensor]:
        """Run on ``args``, writing into those at the indices ``donated`` where that
        saves a new tensor: their contents are lost."""
        program = self.programs.get(donated)
        if program is None:
            from mncore_ir.targets.graph_torch import compile_function

            program = compile_function(self.func, donated)
            if len(self.programs) < self.VARIANTS:
                self.programs[donated] = program
        return program(*args)


def reference_interpreter(module: ModuleOp) -> Executable:
    """The module's entry function in the numpy reference interpreter; its collectives
    go through ``torch.distributed``."""
    from mncore_ir.dialects.values import find_function
    from mncore_ir.targets.graph_interpreter import run_function

    func = find_function(module)
    communicator = _process_group_ranks(func)
    outputs = [t.get_element_type() for t in func.function_type.outputs]
    return on_arrays(lambda arrays: run_function(module, arrays, communicator=communicator),
                     outputs)


def _process_group_ranks(root: Operation) -> Communicator | None:
    """The communicator of a torchrun rank, where ``root`` holds collectives."""
    from mncore_ir.dialects import graph as g

    if not any(isinstance(op, g.CollectiveOp) for op in root.walk()):
        return None
    from mncore_ir.targets.torch_distributed import ProcessGroupRanks

    return ProcessGroupRanks()


def megakernel_simulator(module: ModuleOp) -> Executable:
    """The module's task kernel in the megakernel simulator; its collective tasks go
    through ``torch.distributed``."""
    from mncore_ir.dialects.task import find_kernel
    from mncore_ir.targets.task_simulator import TileEvaluator, simulate

    kernel = find_kernel(module)
    evaluator = TileEvaluator(kernel, _process_group_ranks(kernel))
    return on_arrays(lambda arrays: simulate(kernel, arrays, evaluator=evaluator))


def cycle_simulator(module: ModuleOp) -> Executable:
    """The module's ``mncore.program`` in the cycle simulator, counting its cycles. A
    device's module comes verified (the pipeline verifies after its last pass, the
    compile cache's parser as it parses), so the assembler's rules are not checked
    again (a second verification of the one-layer GPT-2 step took 0.6 s)."""
    from mncore_ir.targets.mncore_simulator import find_program

    return ProgramRunner(find_program(module), verified=True)


def on_arrays(run: ArrayFunction, outputs: Sequence[Any] = ()) -> Executable:
    """``run`` (numpy arrays in and out) on torch tensors. Narrow floats, which numpy
    holds in f32, go in as f32 and come out in the type of ``outputs`` (the element
    types of the results, where they may be narrow)."""
    import torch

    from mncore_ir.dialects.element_types import ELEMENT_TYPES, NARROW_FLOATS

    narrow = {getattr(torch, name) for name, t in ELEMENT_TYPES.items() if t in NARROW_FLOATS}
    casts = {i: getattr(torch, name) for i, t in enumerate(outputs) if t in NARROW_FLOATS
             for name, u in ELEMENT_TYPES.items() if u == t}

    def interpret(args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outs = run([(a.float() if a.dtype in narrow else a).numpy() for a in args])
        tensors = [torch.from_numpy(np.array(o)) for o in outs]  # contiguous, 0-d kept
        return [t.to(casts[i]) if i in casts else t for i, t in enumerate(tensors)]

    return interpret


class ProgramRunner:
    """Runs an ``mncore.program`` in the cycle simulator on torch tensors, counting the
    simulated steps and cycles (the lazy runtime adds them to its counters)."""

    def __init__(self, program: ProgramOp, verified: bool = False) -> None:
        """``verified``: the program passed the assembler's rules (its module was
        verified), which are then not checked again."""
        from mncore_ir.targets.mncore_simulator import Simulator

        # checked and decoded once: every step runs the same program
        self.simulator = Simulator(program, verify=not verified)
        self.counts: Counter[str] = Counter()

    def __call__(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        import torch

        outs, report = self.simulator.run([a.numpy() for a in args])
        self.counts.update({"MNCoreRuns": 1, "MNCoreSteps": report.steps,
                            "MNCoreCycles": report.cycles})
        return [torch.from_numpy(np.array(o)) for o in outs]

    def take_counts(self) -> Counter[str]:
        counts, self.counts = self.counts, Counter()
        return counts


def triton_megakernel(module: ModuleOp) -> Executable:
    """Generate and load the module's megakernel: on the GPU when there is one, else in
    Triton's interpreter, whether or not Triton was imported before."""
    import tempfile

    import torch

    from mncore_ir.dialects.task import find_kernel
    from mncore_ir.targets.triton_megakernel import generate, load

    interpret = not torch.cuda.is_available()
    if interpret:  # read as the generated module is loaded (@triton.jit) and run
        os.environ.setdefault("TRITON_INTERPRET", "1")
    directory = os.environ.get("MNCORE_CACHE_DIR") or tempfile.gettempdir()
    os.makedirs(directory, exist_ok=True)
    megakernel = load(generate(find_kernel(module)), directory)

    def run(args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        if not interpret:
            return [out.cpu() for out in megakernel.run(*args)]
        with _interpreted_jit_calls():
            return [out.cpu() for out in megakernel.run(*args)]

    return run


@contextlib.contextmanager
def _interpreted_jit_calls() -> Iterator[None]:
    """Let interpreted kernels call Triton's own ``@triton.jit`` functions (``tl.zeros``,
    ``tl.sum``, ...). Triton makes those compiled or interpreted functions once, by
    ``TRITON_INTERPRET`` when ``triton.language`` is first imported; imported before it
    was set (``transformers`` and ``make_fx`` import it), they refuse to be called from
    the interpreter. While a megakernel runs, such calls go through the interpreter."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    interpreted: dict[Callable[..., Any], InterpretedFunction[Any]] = {}

    def call(self: JITFunction[Any], *args: Any, **kwargs: Any) -> Any:
        if self.fn not in interpreted:
            interpreted[self.fn] = InterpretedFunction(self.fn)
        return interpreted[self.fn](*args, **kwargs)

    compiled_call = JITFunction.__call__
    setattr(JITFunction, "__call__", call)  # noqa: B010  (a method swapped for the run)
    try:
        yield
    finally:
        setattr(JITFunction, "__call__", compiled_call)  # noqa: B010
