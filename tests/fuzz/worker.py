"""What a forked worker does with one mutant, and how it tells a diagnosis from a bug.

The tools run in-process (``main(argv)``, output captured, ``SystemExit`` caught).
``mncore_ir.tools.errors.describe`` is wrapped in the worker so that every exception
that ``cli_errors`` turns into a message is recorded with its type and where it was
raised: a message is a diagnosis only when the exception is one of the user-facing
error classes (``is_user_error``); ``error: 'dim'`` from a ``KeyError`` is an internal
error that merely looks like one.
"""

from __future__ import annotations

import faulthandler
import importlib
import io
import os
import random
import re
import resource
import signal
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

#: The repository: frames under it (outside .venv and this package) are "ours".
ROOT = Path(__file__).resolve().parents[2]
_OURS_EXCLUDED = (ROOT / ".venv", Path(__file__).resolve().parent)

#: Outcomes of one stage, and which of them are failures of the compiler.
OK, DIAGNOSED, UNLOCATED = "ok", "diagnosed", "unlocated"
TRACEBACK, INTERNAL, HANG, MEMORY, CRASH, MISMATCH = (
    "traceback", "internal", "hang", "memory", "crash", "mismatch")
FAILURES = (TRACEBACK, INTERNAL, HANG, MEMORY, CRASH, MISMATCH)
OUTCOMES = (OK, DIAGNOSED, UNLOCATED, *FAILURES)

#: Comparison tolerance of the differential mode (floats; integers must be equal).
RTOL = ATOL = 1e-4


#: The exception classes that are diagnoses, not bugs, when they reach the user:
#: xDSL's parse errors and diagnostics (``DiagnosticException`` covers
#: ``VerifyException``, ``PassFailedException``, xDSL's ``InterpretationError`` and the
#: project's ``TaskConversionError``, ``MNCoreConversionError``, ``ScheduleError``,
#: ``OpVerifyException``, ``HazardError``...), a bad pass option, a missing file, and
#: the project's own user-facing classes. Named by module, so that a class that does
#: not exist (yet) is skipped.
USER_ERRORS = (
    ("xdsl.utils.exceptions", "ParseError"),
    ("xdsl.utils.exceptions", "DiagnosticException"),
    ("xdsl.utils.exceptions", "ArgSpecParseError"),
    ("builtins", "FileNotFoundError"),
    ("mncore_ir.dominance", "DominanceError"),
    ("mncore_ir.targets.graph_interpreter", "InterpretationError"),
    ("mncore_ir.targets.graph_torch", "GraphTorchError"),
    ("mncore_ir.targets.triton_descriptors", "TritonTargetError"),
    ("mncore_ir.tools.diagnostics", "LocatedError"),
)

#: Classes that wrap an internal error to name where it happened (``internal error in
#: pass 'X': KeyError: ...``): internal whatever they derive from; grouped by the
#: exception they wrap.
INTERNAL_WRAPPERS = (("mncore_ir.pipeline", "PassError"),)


def _classes(names: Sequence[tuple[str, str]]) -> tuple[type[BaseException], ...]:
    found = []
    for module, name in names:
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


@cache
def user_error_types() -> tuple[type[BaseException], ...]:
    return _classes(USER_ERRORS)


@cache
def internal_wrapper_types() -> tuple[type[BaseException], ...]:
    return _classes(INTERNAL_WRAPPERS)


def load_error_classes() -> None:
    """Import the error classes' modules (torch and Triton among them) in the parent:
    each forked worker that had to import them itself spent most of its time on it."""
    user_error_types()
    internal_wrapper_types()


def is_user_error(error: BaseException) -> bool:
    """A diagnosis: one of ``USER_ERRORS`` and not an internal error wrapped."""
    return (isinstance(error, user_error_types())
            and not isinstance(error, internal_wrapper_types()))


@dataclass
class ErrorInfo:
    """An exception, reduced to what classifies and groups it (picklable)."""

    type: str
    message: str
    site: str  # the innermost frame in the project: "path:line (function)"
    raised_at: str  # the innermost frame of all
    traceback: str
    user_error: bool
    memory: bool
    #: For a VerifyException from the verification between passes: the pass that ran
    #: before it ("" when the input itself failed, before any pass); else None.
    after_pass: str | None = None

    def outcome(self) -> str:
        if self.memory:
            return MEMORY
        if not self.user_error or not self.message:
            return INTERNAL
        if self.after_pass:  # a pass produced IR that does not verify
            return INTERNAL
        if self.after_pass == "":  # bad input, but reported without a file position
            return UNLOCATED
        return DIAGNOSED

    def label(self) -> str:
        """What tells one bug from another: the type, where it was raised, the pass."""
        label = f"{self.type} at {self.site}"
        if self.raised_at != self.site:
            label += f" raised in {self.raised_at}"
        if self.after_pass:
            label += f" (verifying after {self.after_pass})"
        return label


@cache
def _resolved(filename: str) -> Path:
    return Path(filename).resolve()


def _frame_text(frame: traceback.FrameSummary) -> str:
    """``path:line (function)``, the path relative to the repository or to the
    site-packages folder."""
    path = _resolved(frame.filename)
    shown = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    shown = shown.rpartition("site-packages/")[2]
    return f"{shown}:{frame.lineno} ({frame.name})"


def _is_ours(filename: str) -> bool:
    path = _resolved(filename)
    return path.is_relative_to(ROOT) and not any(path.is_relative_to(p) for p in _OURS_EXCLUDED)


def _verified_after(tb: TracebackType | None) -> str | None:
    """The pass before the pipeline's verification callback that raised, if any."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "callback":
            for local in ("previous_pass", "previous", "_prev"):
                if local in frame.f_locals:
                    prev = frame.f_locals[local]
                    return "" if prev is None else str(getattr(prev, "name", prev))
        tb = tb.tb_next
    return None


def _root_cause(error: BaseException) -> BaseException:
    """The exception at the end of ``raise ... from`` chain: where the bug is."""
    seen = {id(error)}
    while error.__cause__ is not None and id(error.__cause__) not in seen:
        error = error.__cause__
        seen.add(id(error))
    return error


def _after_pass(error: BaseException) -> str | None:
    """For a verifier error between passes, the pass before it ("" for the input)."""
    from xdsl.utils.exceptions import VerifyException

    if not isinstance(error, VerifyException):
        return None
    if hasattr(error, "pass_name"):  # the pipeline's InvalidIRError names it
        return error.pass_name or ""
    return _verified_after(error.__traceback__)


def error_info(error: BaseException) -> ErrorInfo:
    """Type, message, where raised (the root cause's frames: a wrapper's own ``raise``
    says nothing), the traceback, and how to classify it."""
    root = _root_cause(error)
    frames = traceback.extract_tb(root.__traceback__) or traceback.extract_tb(
        error.__traceback__)
    ours = [f for f in frames if _is_ours(f.filename)]
    site = _frame_text(ours[-1]) if ours else (_frame_text(frames[-1]) if frames else "?")
    name = type(error).__qualname__
    if root is not error:
        name += f"({type(root).__qualname__})"
    return ErrorInfo(
        type=name,
        message=(str(error).strip() or "")[:2000],
        site=site,
        raised_at=_frame_text(frames[-1]) if frames else "?",
        traceback="".join(traceback.format_exception(error))[-6000:],
        user_error=is_user_error(error),
        memory=isinstance(error, MemoryError) or isinstance(root, MemoryError),
        after_pass=_after_pass(error),
    )


#: The errors ``cli_errors`` described during the current tool run.
_DESCRIBED: list[ErrorInfo] = []


def install_describe_hook() -> None:
    """Record every exception that ``cli_errors`` turns into a message (in the worker:
    the patch dies with it)."""
    from mncore_ir.tools import errors

    original = errors.describe
    if getattr(original, "fuzz_hook", False):
        return

    def describe(error: BaseException) -> str:
        _DESCRIBED.append(error_info(error))
        return original(error)

    describe.fuzz_hook = True  # type: ignore[attr-defined]
    errors.describe = describe


@dataclass
class StageResult:
    """One stage of one case: a tool run, or a step of the differential check."""

    stage: str
    outcome: str
    message: str = ""
    error: ErrorInfo | None = None
    exit_code: int | None = None
    seconds: float = 0.0
    #: For a hang or a memory blow-up: where the worker was when it was stopped.
    where: str = ""

    def last_line(self) -> str:
        lines = [line for line in self.message.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def run_tool(stage: str, main: Callable[[Sequence[str]], None], argv: Sequence[str]
             ) -> tuple[StageResult, str]:
    """Run a tool's ``main`` in-process; its result and its standard output."""
    _DESCRIBED.clear()
    out, err = io.StringIO(), io.StringIO()
    code: int | None = 0
    escaped: BaseException | None = None
    start = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException as e:  # anything else escaped main: a traceback
            escaped, code = e, None
    seconds = time.perf_counter() - start
    message = err.getvalue().strip()
    if escaped is not None:
        info = error_info(escaped)
        outcome = MEMORY if info.memory else TRACEBACK
        message = info.traceback
        result = StageResult(stage, outcome, message, info, None, seconds)
    elif code == 0:
        result = StageResult(stage, OK, message, None, 0, seconds)
    elif _DESCRIBED:
        info = _DESCRIBED[-1]
        result = StageResult(stage, info.outcome(), message, info, code, seconds)
    else:  # a non-zero exit that did not go through cli_errors (argparse, xDSL)
        result = StageResult(stage, DIAGNOSED if message else INTERNAL,
                             message or f"exit {code} without a message", None, code, seconds)
    return result, out.getvalue()


def error_stage(stage: str, error: BaseException, seconds: float) -> StageResult:
    """A stage of the differential check that raised (not through the tools)."""
    info = error_info(error)
    return StageResult(stage, info.outcome(), f"{info.type}: {info.message}", info, None, seconds)


# -- the differential check --------------------------------------------------------


def compare(expected: Sequence[Any], actual: Sequence[Any]) -> str | None:
    """Why two result lists differ (shapes, dtypes, values beyond RTOL/ATOL, NaN
    positions, any integer), or None."""
    if len(expected) != len(actual):
        return f"{len(actual)} results, expected {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape:
            return f"result{i}: shape {a.shape}, expected {e.shape}"
        if e.dtype != a.dtype:
            return f"result{i}: dtype {a.dtype}, expected {e.dtype}"
        if e.dtype.kind in "fc":
            bad = ~np.isclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            bad = a != e
        if bad.any():
            where = tuple(int(k) for k in np.argwhere(bad)[0])
            return (f"result{i}: {int(bad.sum())} of {bad.size} elements differ; at {where}: "
                    f"got {a[where]!r}, expected {e[where]!r}")
    return None


def read_only(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The inputs as read-only views: an executor that writes its inputs fails (a bug
    this finds), and no copy doubles the memory of a large input."""
    views = [a.view() for a in arrays]
    for view in views:
        view.flags.writeable = False
    return views


def graph_functions(module: Any) -> list[Any]:
    """The functions of a graph-level module (functions only) that take tensors and
    call nothing: each can be compared on its own."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.dialects.func import CallOp, FuncOp

    if not module.ops or not all(isinstance(op, FuncOp) for op in module.ops):
        return []
    return [func for func in module.ops
            if all(isinstance(typ, TensorType) for typ in func.function_type.inputs.data)
            and not any(isinstance(op, CallOp) for op in func.walk())]


class Differential:
    """The steps of comparing one function across levels, each a stage."""

    def __init__(self, announce: Callable[[str], None], task_pipeline: str,
                 mncore_pipeline: str, order_seeds: Sequence[int]) -> None:
        self.announce = announce
        self.task_pipeline = task_pipeline
        self.mncore_pipeline = mncore_pipeline
        self.order_seeds = order_seeds
        self.results: list[StageResult] = []

    def step(self, stage: str, action: Callable[[], Any]) -> tuple[bool, Any]:
        """Run ``action`` as ``stage``; an exception is classified, not re-raised, so
        that the next level still runs."""
        self.announce(stage)
        start = time.perf_counter()
        try:
            return True, action()
        except Exception as error:
            self.results.append(error_stage(stage, error, time.perf_counter() - start))
            return False, None

    def levels(self, inputs: Sequence[np.ndarray]
               ) -> list[tuple[str, str, list[tuple[str, Callable[[Any], Any]]]]]:
        """Each level: its name, its pipeline from graph, and its executions."""
        from mncore_ir.targets.mncore_simulator import find_program
        from mncore_ir.targets.mncore_simulator import simulate as simulate_program
        from mncore_ir.targets.task_simulator import find_kernel, simulate

        def task(seed: int) -> Callable[[Any], Any]:
            return lambda m: simulate(find_kernel(m), read_only(inputs), seed)

        def mncore(m: Any) -> Any:
            return simulate_program(find_program(m), read_only(inputs))[0]

        return [("task", self.task_pipeline,
                 [(f"order {seed}", task(seed)) for seed in self.order_seeds]),
                ("mncore", self.mncore_pipeline, [("cycle simulator", mncore)])]

    def compare_function(self, module: Any, name: str) -> None:
        """Interpret ``module``'s one function, then lower and run it at each level."""
        from mncore_ir.pipeline import apply_pipeline, make_context
        from mncore_ir.targets.graph_interpreter import check_sizes, find_function, run_function
        from mncore_ir.tools.mncore_run import random_inputs

        function = find_function(module)
        types = list(function.function_type.inputs.data)

        def interpret() -> tuple[list[np.ndarray], list[Any]]:
            check_sizes(function, types)  # as mncore-run does, before drawing the inputs
            inputs = random_inputs(types, 0, 4)
            return inputs, run_function(module, read_only(inputs))

        ran, value = self.step("diff:graph", interpret)
        if not ran:
            if self.results[-1].outcome in (DIAGNOSED, UNLOCATED):
                self.results.pop()  # the interpreter refuses it: nothing to compare with
            return
        inputs, expected = value
        self.results.append(StageResult("diff:graph", OK))
        for level, spec, runs in self.levels(inputs):
            lowered = module.clone()
            ok, _ = self.step(f"diff:{level}-lower",
                              lambda m=lowered, s=spec: apply_pipeline(m, s, make_context()))
            if ok:
                self.run_level(f"diff:{level}-run", f"@{name} at {level}", lowered, runs,
                               expected)

    def run_level(self, stage: str, what: str, lowered: Any,
                  runs: list[tuple[str, Callable[[Any], Any]]], expected: list[Any]) -> None:
        for how, execute in runs:
            start = time.perf_counter()
            ran, outputs = self.step(stage, lambda ex=execute: ex(lowered))
            if not ran:
                last = self.results[-1]
                if last.outcome in (DIAGNOSED, UNLOCATED):  # lowered, then refused to run
                    last.outcome = MISMATCH
                    last.message = f"{what} ({how}) raised {last.message}; the graph ran"
                return
            why = compare(expected, outputs)
            self.results.append(StageResult(
                stage, MISMATCH if why else OK, f"{what} ({how}): {why}" if why else "",
                seconds=time.perf_counter() - start))


def differential(path: Path, data: bytes, order_seeds: Sequence[int], task_pipeline: str,
                 mncore_pipeline: str, announce: Callable[[str], None], functions: int = 2
                 ) -> list[StageResult]:
    """Compare the graph interpreter with the task level (``task_pipeline``,
    the megakernel simulator in each order of ``order_seeds``) and the mncore level
    (``mncore_pipeline``, the cycle simulator) on the same random inputs, for up to
    ``functions`` functions of the mutant, each in a module of its own.

    A mutant that does not parse as graph functions, or that the interpreter refuses
    to run, is not compared (no stages); a level that refuses to lower it is
    ``diagnosed``; a level that lowered it but fails to run it, or disagrees, is a
    ``mismatch``."""
    from xdsl.dialects.builtin import ModuleOp

    from mncore_ir.parsing import parse_module
    from mncore_ir.pipeline import make_context

    try:
        module = parse_module(make_context(), data, str(path))
    except Exception:
        return []
    funcs = graph_functions(module)
    chosen = random.Random(order_seeds[0] if order_seeds else 0).sample(
        funcs, min(functions, len(funcs)))
    check = Differential(announce, task_pipeline, mncore_pipeline, order_seeds)
    for func in chosen:
        check.compare_function(ModuleOp([func.clone()]), func.sym_name.data)
    return check.results


# -- one case ----------------------------------------------------------------------


@dataclass
class Case:
    """One input: a mutant, the pipeline to run it through, and what else to check."""

    index: int
    data: bytes
    pipeline: str
    order_seeds: tuple[int, ...] = ()
    differential: bool = False
    mncore_pipeline: str = ""
    seed: str = ""
    mutations: tuple[str, ...] = ()
    task_pipeline: str = "convert-graph-to-task"


def opt_argv(path: Path | str, pipeline: str) -> list[str]:
    return [str(path), *(["-p", pipeline] if pipeline else [])]


RUN_ARGS = ("--random-inputs", "0")


def rss_kb(pid: int | str = "self") -> int | None:
    """A process's resident set size (``/proc/PID/statm``), None when it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, IndexError, ValueError):
        return None


def _guard_address_space(memory_mb: int) -> None:
    """A hard stop far above the memory limit (the parent kills at the limit itself):
    a runaway allocation raises MemoryError instead of exhausting the machine."""
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + 4 * memory_mb * 2**20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def run_case(case: Case, workdir: Path, announce: Callable[[str], None]) -> list[StageResult]:
    """``mncore-opt`` with the case's pipeline, ``mncore-run`` on what it printed, and
    the differential check."""
    from mncore_ir.tools import mncore_opt, mncore_run

    path = workdir / f"case{case.index}.mlir"
    path.write_bytes(case.data)
    announce("opt")
    opt, output = run_tool("opt", mncore_opt.main, opt_argv(path, case.pipeline))
    results = [opt]
    if opt.outcome == OK and output.strip():
        lowered = workdir / f"case{case.index}.out.mlir"
        lowered.write_text(output, errors="surrogateescape")
        announce("run")
        run, _ = run_tool("run", mncore_run.main, [str(lowered), *RUN_ARGS])
        results.append(run)
    if case.differential:
        results += differential(path, case.data, case.order_seeds, case.task_pipeline,
                                case.mncore_pipeline, announce)
    return results


def stack_path(workdir: Path, index: int) -> Path:
    """Where a worker's Python stack is written when the parent sends it SIGUSR1."""
    return workdir / f"case{index}.stack"


_STACK_FRAME = re.compile(r'^\s*File "(.*)", line (\d+) in (.*)$')


def stuck_at(dump: str) -> str:
    """From a faulthandler dump (most recent call first): the innermost frame, and the
    innermost frame of the project when that is not it."""
    frames = [traceback.FrameSummary(m[1], int(m[2]), m[3].strip())
              for m in map(_STACK_FRAME.match, dump.splitlines()) if m]
    if not frames:
        return ""
    where = _frame_text(frames[0])
    ours = next((f for f in frames if _is_ours(f.filename)), None)
    if ours is not None and ours is not frames[0]:
        where += f" via {_frame_text(ours)}"
    return where


def work(conn: Connection, case: Case, workdir: Path, memory_mb: int) -> None:
    """The body of a forked worker: run ``case``, reporting each stage as it starts
    (the parent times stages out) and the peak memory growth at the end. An exception
    that escapes the stages is the harness's or an import's: a ``crash``, reported
    here rather than printed by multiprocessing."""
    stage = "start"

    def announce(name: str) -> None:
        nonlocal stage
        stage = name
        conn.send(("stage", name))

    try:
        stack = stack_path(workdir, case.index).open("w")
        faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True)
        _guard_address_space(memory_mb)
        warnings.simplefilter("ignore")  # warnings are not outcomes (pytest makes some errors)
        install_describe_hook()
        random.seed(case.index)  # anything drawing from the global generator repeats
        conn.send(("start", rss_kb()))
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results = run_case(case, workdir, announce)
        growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    except BaseException as error:
        info = error_info(error)
        results, growth_kb = [StageResult(stage, CRASH, info.traceback, info)], 0
    conn.send(("done", results, growth_kb))
    conn.close()
