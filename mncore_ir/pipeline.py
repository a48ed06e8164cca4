"""The Python compile API: the devices (each with its named pass pipeline and its
executable factory) and applying pass pipelines to modules."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mncore_ir import executables
from mncore_ir.dominance import DominanceError, check_dominance
from mncore_ir.executables import Executable
from mncore_ir.registry import get_all_dialects, get_all_passes

#: The graph-level pipeline: simplify, expand composites, simplify again, fuse.
GRAPH_PIPELINE = "canonicalize,cse,graph-decompose,canonicalize,cse,dce,graph-fuse-elementwise"

#: What a device's pipeline or cache tag says for the machine it compiles for.
MACHINE = "$MNCORE_MACHINE"


@dataclass(frozen=True)
class Device:
    """Where a compiled graph runs: the pass pipeline (``mncore-opt -p`` syntax) that
    lowers an imported graph for it, the factory of its executable, and the tag of its
    compile-cache entries. In ``pipeline`` and ``cache_tag``, :data:`MACHINE` stands for
    the machine :func:`device` binds (``$MNCORE_MACHINE``)."""

    name: str
    summary: str
    pipeline: str
    executable: Callable[[ModuleOp], Executable]
    cache_tag: str

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
           executables.megakernel_simulator, "task"),
    Device("triton", "the Triton megakernel (Triton's interpreter without a GPU)",
           "canonicalize,cse,dce,graph-fuse-elementwise,convert-graph-to-task",
           executables.triton_megakernel, "triton"),
    Device("mncore", "a static program for an MN-Core machine, run by the cycle simulator",
           f"{GRAPH_PIPELINE},convert-graph-to-task,"
           f"convert-task-to-mncore{{machine={MACHINE}}},mncore-schedule",
           executables.cycle_simulator, f"mncore-{MACHINE}"),
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
