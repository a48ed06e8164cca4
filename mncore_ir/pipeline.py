"""The Python compile API: the devices (each with its named pass pipeline and its
executable factory), applying pass pipelines to modules, and watching one run: the IR
after each pass (with source locations) and a long compile's progress."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mncore_ir import executables
from mncore_ir.dialects.element_types import MNCORE_ELEMENT_TYPES, TASK_ELEMENT_TYPES
from mncore_ir.dominance import DominanceError, check_dominance
from mncore_ir.executables import Executable
from mncore_ir.registry import get_all_dialects, get_all_passes

#: The graph-level pipeline: simplify, expand composites, simplify again, fuse.
GRAPH_PIPELINE = "canonicalize,cse,graph-decompose,canonicalize,cse,dce,graph-fuse-elementwise"

#: The mncore device's graph pipeline: convolutions become matrix products of their
#: windows, and embeddings and their gradients products with one-hot matrices (the MAU
#: is MN-Core's fast path; a lane per output walking its window, or comparing its index
#: with every row, is not).
MNCORE_GRAPH_PIPELINE = GRAPH_PIPELINE.replace("graph-decompose",
                                               "graph-decompose{convolutions=true lookups=true}")

#: The triton device's graph pipeline: convolutions become matrix products too (its
#: matmul tasks are tiled over the whole grid and use ``tl.dot``; a direct convolution
#: walks each output's window with scalar multiply-adds, and its backward op is one
#: task), while its fused softmax and layer-norm kernels stay.
TRITON_GRAPH_PIPELINE = ("canonicalize,cse,graph-decompose{composites=false convolutions=true},"
                         "canonicalize,cse,dce,graph-fuse-elementwise")

#: convert-graph-to-task's options for the mncore level: the tilings that
#: convert-task-to-mncore has no kernels for are off, collectives run on the host, and
#: tiles are as wide as MN-Core 2: a matmul tile is one pass of the stationary kernel's
#: rows (256 rows of A per L2B) over 4 units of 256 columns (the 8 L2Bs' columns; A
#: loaded once for them), an elementwise tile one wave of lanes (4 words on each of
#: 4096 PEs). Each task takes the whole machine, so smaller tiles only repeat each
#: task's loads of A, its DMA set-ups and its waits. Buffers are not reused at the task
#: level: convert-task-to-mncore shares DRAM by liveness itself, and a buffer that holds
#: one value can be a view of another (a reshape that costs no task).
MNCORE_TASKS = ("target=mncore collectives=false matmul_tile=256,1024 elementwise_tile=16384 "
                "reuse_buffers=false")

#: What a device's pipeline or cache tag says for the machine it compiles for.
MACHINE = "$MNCORE_MACHINE"


@dataclass(frozen=True)
class Device:
    """Where a compiled graph runs: the pass pipeline (``mncore-opt -p`` syntax) that
    lowers an imported graph for it, the factory of its executable (given the module
    the pipeline made, or the compile cache parsed: verified either way), the tag of its
    compile-cache entries, and the element types it holds (None: every graph type). In
    ``pipeline`` and ``cache_tag``, :data:`MACHINE` stands for the machine
    :func:`device` binds (``$MNCORE_MACHINE``)."""

    name: str
    summary: str
    pipeline: str
    executable: Callable[[ModuleOp], Executable]
    cache_tag: str
    element_types: tuple[Attribute, ...] | None = None

    @property
    def machine_dependent(self) -> bool:
        return MACHINE in self.pipeline or MACHINE in self.cache_tag


#: Every device, by name: the lazy runtime, the compile cache and ``mncore-opt
#: --device`` read them. A new device is one entry.
DEVICES: dict[str, Device] = {d.name: d for d in (
    Device("cpu", "generated straight-line torch CPU code", "canonicalize,cse,dce",
           executables.torch_code, "cpu"),
    Device("interp", "the numpy reference interpreter", "canonicalize,cse,dce",
           executables.reference_interpreter, "interp"),
    Device("task", "the megakernel simulator",
           "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task",
           executables.megakernel_simulator, "task", TASK_ELEMENT_TYPES),
    Device("triton", "the Triton megakernel (Triton's interpreter without a GPU)",
           f"{TRITON_GRAPH_PIPELINE},convert-graph-to-task{{collectives=false}}",
           executables.triton_megakernel, "triton", TASK_ELEMENT_TYPES),
    Device("mncore", "a static program for an MN-Core machine, run by the cycle simulator",
           f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}},"
           f"convert-task-to-mncore{{machine={MACHINE}}},mncore-forward-stores,"
           "mncore-schedule",
           executables.cycle_simulator, f"mncore-{MACHINE}", MNCORE_ELEMENT_TYPES),
)}


class UnknownDeviceError(ValueError):
    """A device name that is not in :data:`DEVICES`."""


def device(name: str) -> Device:
    """The device ``name``, bound to the machine ``mncore_machine()`` where its
    pipeline names one."""
    found = DEVICES.get(name)
    if found is None:
        raise UnknownDeviceError(f"unknown device {name!r}; devices: {', '.join(DEVICES)}")
    if not found.machine_dependent:
        return found
    machine = mncore_machine()
    return replace(found, pipeline=found.pipeline.replace(MACHINE, machine),
                   cache_tag=found.cache_tag.replace(MACHINE, machine))


def device_pipeline(name: str) -> str:
    """The pass pipeline the device ``name`` runs on an imported graph."""
    return device(name).pipeline


def mncore_machine() -> str:
    """The machine the ``mncore`` device compiles for: ``$MNCORE_MACHINE``, or ``tiny``."""
    from mncore_ir.dialects.mncore_machines import MACHINES

    name = os.environ.get("MNCORE_MACHINE", "tiny")
    if name not in MACHINES:
        raise ValueError(f"MNCORE_MACHINE={name!r} is not a machine; machines: "
                         f"{', '.join(MACHINES)}")
    return name


def make_context() -> Context:
    """A context with every mncore-ir dialect registered (lazily)."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


class PassObserver(Protocol):
    """Told of each pass :func:`apply_passes` runs (``index`` of ``count``): dumps and
    progress watch a pipeline through it, and a run without one pays nothing."""

    def before_pass(self, index: int, count: int, name: str, module: ModuleOp) -> None: ...

    def after_pass(self, index: int, count: int, name: str, module: ModuleOp) -> None: ...


def apply_pipeline(module: ModuleOp, spec: str, ctx: Context | None = None,
                   verify: bool = True, observers: Sequence[PassObserver] = ()) -> ModuleOp:
    """Run ``spec`` (``mncore-opt -p`` syntax) on ``module`` in place. With ``verify``,
    the IR is verified and its SSA dominance checked before the first pass and after
    each one, so a pass that leaves invalid IR is named (:class:`InvalidIRError`); an
    internal error in a pass is a :class:`PassError` naming it. ``observers`` see each
    pass start and end (the end before verification: a dump shows invalid IR too)."""

    def callback(previous: ModulePass | None, mod: ModuleOp, _next: object) -> None:
        if verify:
            check_ir(mod, previous)

    pipeline = PassPipeline.parse_spec(get_all_passes(), spec, callback)
    apply_passes(pipeline, ctx or make_context(), module, observers)
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


def apply_passes(pipeline: PassPipeline, ctx: Context, module: ModuleOp,
                 observers: Sequence[PassObserver] = ()) -> None:
    """``pipeline.apply`` (the same callbacks between passes), except that an exception
    that is not a diagnostic is re-raised as a :class:`PassError` naming its pass;
    ``observers`` are told of each pass before it runs and after (before the callback)."""
    passes = pipeline.passes
    callback = pipeline.callback or (lambda *_: None)
    callback(None, module, passes[0] if passes else None)
    for index, module_pass in enumerate(passes):
        for observer in observers:
            observer.before_pass(index, len(passes), module_pass.name, module)
        try:
            module_pass.apply(ctx, module)
        except DiagnosticException:
            raise
        except Exception as error:
            raise PassError(module_pass.name, error) from error
        for observer in observers:
            observer.after_pass(index, len(passes), module_pass.name, module)
        callback(module_pass, module, passes[index + 1] if index + 1 < len(passes) else None)


# ---------------------------------------------------------------------- watching a run


def ir_level(module: ModuleOp) -> str:
    """``graph``, ``task`` or ``mncore``: the level of the IR ``module`` holds, by the
    dialect of its top-level ops (``func.func`` of graph ops, ``task.kernel``,
    ``mncore.program``)."""
    dialects = {op.name.split(".", 1)[0] for op in module.ops}
    return next((level for level in ("mncore", "task") if level in dialects), "graph")


def module_text(module: ModuleOp, locations: bool = False) -> str:
    """``module`` as text; with ``locations``, each op's known source location as MLIR's
    ``--mlir-print-debuginfo`` prints it (``loc("train.py":12:1)``). Unknown ones are
    left out: that is what the parser assumes without one, and custom formats that take
    block arguments (``task.kernel``'s results) do not read a location after them."""
    if not locations:
        return str(module)
    stream = io.StringIO()
    Printer(stream, print_debuginfo=True).print_op(module)
    return stream.getvalue().replace(" loc(unknown)", "")


@dataclass
class PassDumps:
    """A :class:`PassObserver` that writes the IR, with source locations, before the
    first pass and after each: ``<directory>/<prefix>.<NN>-<pass>.<level>.mlir``, ``NN``
    counting passes from 01 (``00-input`` is the pipeline's input) and ``level`` what
    :func:`ir_level` says of the IR then."""

    directory: str
    prefix: str

    def before_pass(self, index: int, count: int, name: str, module: ModuleOp) -> None:
        if index == 0:
            self.write(0, "input", module)

    def after_pass(self, index: int, count: int, name: str, module: ModuleOp) -> None:
        self.write(index + 1, name, module)

    def write(self, number: int, name: str, module: ModuleOp) -> str:
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory,
                            f"{self.prefix}.{number:02d}-{name}.{ir_level(module)}.mlir")
        with open(path, "w") as f:
            f.write(module_text(module, locations=True))
        return path


#: Seconds a compile runs before :class:`CompileProgress` shows anything.
PROGRESS_AFTER_S = 2.0


class CompileProgress:
    """A long compile's phases on stderr, as a ``tqdm`` bar: nothing for a compile that
    ends within :data:`PROGRESS_AFTER_S`; after that, one update at each phase change
    (the import, each pass, the executable's build), never on a timer that would fill a
    log. Each update says the phase, the op count and the time so far. As a
    :class:`PassObserver`, each pass is a phase: ``1 + count + 1`` in all."""

    def __init__(self, label: str, start: float | None = None, enabled: bool = True) -> None:
        self.label = label
        self.start = time.perf_counter() if start is None else start
        self.enabled = enabled
        self.total: int | None = None
        self.bar: Any = None

    def phase(self, position: int, name: str, ops: Callable[[], int]) -> None:
        """Phase ``position`` (from 0), ``name``, begins; ``ops()`` counts the ops, and is
        called only when the update is shown."""
        elapsed = time.perf_counter() - self.start
        if self.bar is None and (not self.enabled or elapsed < PROGRESS_AFTER_S):
            return
        postfix = f"{name}, {ops()} ops, {elapsed:.1f} s"
        if self.bar is None:
            from tqdm import tqdm  # only for a long compile: importing it takes 50 ms

            # shown at once, as it is; tqdm's monitor thread leaves a bar with
            # miniters=1 alone, so nothing is printed between phases
            self.bar = tqdm(desc=self.label, total=self.total, initial=position,
                            postfix=postfix, file=sys.stderr, leave=True, mininterval=0,
                            miniters=1, dynamic_ncols=False,
                            bar_format="{desc}: phase {n_fmt}/{total_fmt}{postfix}")
            return
        self.bar.total = self.total
        self.bar.n = position
        self.bar.set_postfix_str(postfix)  # and shows it

    def close(self, ops: Callable[[], int] | None = None) -> None:
        """End the bar, if one is shown; with ``ops``, the compile is done (else it
        failed, and the bar stays at the phase that did)."""
        if self.bar is None:
            return
        if ops is not None:
            self.bar.n = self.bar.total if self.bar.total is not None else self.bar.n + 1
            elapsed = time.perf_counter() - self.start
            self.bar.set_postfix_str(f"done, {ops()} ops, {elapsed:.1f} s", refresh=False)
        self.bar.close()  # shows it, and ends the line
        self.bar = None

    def before_pass(self, index: int, count: int, name: str, module: ModuleOp) -> None:
        self.total = count + 2
        self.phase(index + 1, f"pass {name}", lambda: count_ops(module))

    def after_pass(self, index: int, count: int, name: str, module: ModuleOp) -> None:
        return None


def count_ops(module: ModuleOp) -> int:
    """The ops nested in ``module`` (not counting it)."""
    return sum(1 for _ in module.walk()) - 1
