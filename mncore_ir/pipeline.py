"""The Python compile API: named pipelines and applying pass pipelines to modules."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mncore_ir.dominance import DominanceError, check_dominance
from mncore_ir.registry import get_all_dialects, get_all_passes

if TYPE_CHECKING:  # torch is imported where a device runs: the tools do not need it
    import torch

#: The graph-level pipeline: simplify, expand composites, simplify again, fuse.
GRAPH_PIPELINE = "canonicalize,cse,graph-decompose,canonicalize,cse,dce,graph-fuse-elementwise"

#: The pass pipeline each lazy-tensor device runs on an imported graph.
DEVICE_PIPELINES = {
    "cpu": "canonicalize,cse,dce",
    "interp": "canonicalize,cse,dce",
    "task": "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task",
    "triton": "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task",
}

Executable = Callable[[Sequence["torch.Tensor"]], Sequence["torch.Tensor"]]


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

    import torch

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
        import torch

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
    """Run ``spec`` (``mncore-opt -p`` syntax) on ``module`` in place. With ``verify``,
    the IR is verified and its SSA dominance checked before the first pass and after
    each one, so a pass that leaves invalid IR is named (:class:`InvalidIRError`); an
    internal error in a pass is a :class:`PassError` naming it."""

    def callback(previous: ModulePass | None, mod: ModuleOp, _next: object) -> None:
        if verify:
            check_ir(mod, previous)

    pipeline = PassPipeline.parse_spec(get_all_passes(), spec, callback)
    apply_passes(pipeline, ctx or make_context(), module)
    return module


class InvalidIRError(VerifyException):
    """IR between passes that does not verify (types, traits or SSA dominance): names
    the pass that produced it and, when one is known, the op to blame (``op``)."""

    def __init__(self, message: str, pass_name: str | None, op: Operation | None) -> None:
        where = f"after pass '{pass_name}'" if pass_name else "given to the pipeline"
        super().__init__(f"the IR {where} is invalid: {message}")
        self.pass_name = pass_name
        self.op = op


class PassError(Exception):
    """An exception that is not a diagnostic escaped a pass: an internal error (a bug in
    the pass, not in its input), named so that it is told apart from a diagnosis."""

    def __init__(self, pass_name: str, error: Exception) -> None:
        detail = str(error).strip()
        super().__init__(f"internal error in pass '{pass_name}': {type(error).__name__}"
                         + (f": {detail}" if detail else ""))
        self.pass_name = pass_name


def check_ir(module: ModuleOp, after: ModulePass | None = None) -> None:
    """Verify ``module`` and check its SSA dominance (linear in its size), blaming the
    pass ``after`` which it was produced (``None``: the pipeline's input)."""
    name = after.name if after is not None else None
    try:
        module.verify()
        check_dominance(module)
    except VerifyException as error:
        from mncore_ir.parsing import blame  # only on failure: it imports every dialect

        op, found = blame(module, error)
        raise InvalidIRError(str(found).strip(), name, op) from error
    except DominanceError as error:
        raise InvalidIRError(str(error), name, getattr(error, "op", None)) from error
    except Exception as error:  # the verifier itself failed on what the pass left
        if name is None:
            raise
        raise PassError(name, error) from error


def apply_passes(pipeline: PassPipeline, ctx: Context, module: ModuleOp) -> None:
    """``pipeline.apply`` (the same callbacks between passes), except that an exception
    that is not a diagnostic is re-raised as a :class:`PassError` naming its pass."""
    passes = pipeline.passes
    callback = pipeline.callback or (lambda *_: None)
    callback(None, module, passes[0] if passes else None)
    for index, module_pass in enumerate(passes):
        try:
            module_pass.apply(ctx, module)
        except DiagnosticException:
            raise
        except Exception as error:
            raise PassError(module_pass.name, error) from error
        callback(module_pass, module, passes[index + 1] if index + 1 < len(passes) else None)


def triton_executable(module: ModuleOp) -> Executable:
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
    JITFunction.__call__ = call  # type: ignore[method-assign]
    try:
        yield
    finally:
        JITFunction.__call__ = compiled_call  # type: ignore[method-assign]
