"""``python -m tests.fuzz.run``: mutate IR, run the tools on it, report what is a bug.

Each input is a mutant of a seed (``tests.fuzz.mutate``) put through ``mncore-opt``
with a pipeline drawn from the realistic ones, then ``mncore-run --random-inputs 0`` on
what it printed, and (``--differential``) the graph interpreter against the task and
mncore levels. Input ``i`` of seed ``S`` depends on ``(S, i)`` only.

Every input runs in a fresh worker forked from this process (``jobs`` at a time), so a
hang is cut after ``--timeout`` CPU seconds in one stage (or six times that of wall
time), and memory is measured per input: the parent polls each worker's RSS and kills
it when it grows by more than ``--memory-mb``, the worker reports its peak RSS growth
(``ru_maxrss`` starts again at fork), and an address space limit far above that turns
a runaway allocation into a ``MemoryError`` (also a memory outcome). A stopped worker
first dumps its Python stack (faulthandler, SIGUSR1): the report says where it was.

Outcomes: ``ok``; ``diagnosed`` (exit 1 with a user-facing error class);
``unlocated`` (bad input diagnosed without a file position: reported, not a failure);
and the failures ``traceback`` (an exception escaped ``main``), ``internal`` (exit 1,
but the message is an internal exception's), ``hang``, ``memory``, ``crash`` (the worker
died) and ``mismatch`` (levels disagree). Failures are grouped by exception type and
the project line that raised it, so the report lists distinct bugs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shlex
import signal
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from unittest import mock

from tests.fuzz.mutate import Seed, load_seeds, mutate, seed_files, split_seeds
from tests.fuzz.worker import (
    CRASH,
    DIAGNOSED,
    FAILURES,
    HANG,
    MEMORY,
    OK,
    OUTCOMES,
    ROOT,
    RUN_ARGS,
    UNLOCATED,
    Case,
    StageResult,
    load_error_classes,
    opt_argv,
    rss_kb,
    run_tool,
    stack_path,
    stuck_at,
    work,
)

#: How bad each outcome is: a case or a column shows its worst.
RANK = {outcome: rank for rank, outcome in enumerate(OUTCOMES)}
STAGE_COLUMNS = ("opt", "run", "diff")


#: The fuzzer's compile budget: a larger program cannot be compiled, scheduled, verified
#: and simulated within a stage's time limit, and would count as a hang.
MAX_INSTRUCTIONS = 5000

#: The fuzzer's task budget, for the same reason: lowering and verifying a task costs
#: tens of microseconds and simulating one more, and every task is at least one mncore
#: instruction. (convert-graph-to-task's default, 50,000, is a few seconds of work.)
MAX_TASKS = 5000

BUDGETS = {"convert-graph-to-task": {"max_tasks": MAX_TASKS},
           "convert-task-to-mncore": {"max_instructions": MAX_INSTRUCTIONS}}
"""The option each pass that takes a budget gets from the fuzzer."""


def with_budgets(spec: str) -> str:
    """``spec`` (``mncore-opt -p`` syntax) with the fuzzer's budgets."""
    from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

    return ",".join(str(ArgSpec(s.name, {**s.parameters,
                                         **{k: (v,) for k, v in BUDGETS.get(s.name, {}).items()}}))
                    for s in parse_pipeline(spec))


def mncore_pipeline() -> str:
    """The mncore device's pipeline, for the ``tiny`` machine whatever the environment,
    with the fuzzer's budgets."""
    from mncore_ir.pipeline import device_pipeline

    with mock.patch.dict(os.environ, {"MNCORE_MACHINE": "tiny"}):
        return with_budgets(device_pipeline("mncore"))


def task_pipeline() -> str:
    """The differential's task level, with the fuzzer's budget."""
    return with_budgets("convert-graph-to-task")


def pipelines() -> tuple[str, ...]:
    """The pipelines an input is put through: none, cleanups, each graph pass, the
    task conversion, the whole mncore pipeline, and scheduling mncore programs."""
    return ("", "canonicalize,cse,dce", "graph-decompose",
            with_budgets("graph-fuse-elementwise,convert-graph-to-task"), mncore_pipeline(),
            "mncore-schedule")


# -- seeds -----------------------------------------------------------------------------


#: Generated IR longer than this is not a seed: parsing a 100 kB program for every
#: mutant of it would take most of a run's time.
MAX_GENERATED_CHARS = 32_000


def generated_seeds(sources: Iterable[Path], folder: Path) -> dict[str, list[Seed]]:
    """Task- and mncore-level IR that the compiler makes from graph-level ``sources``,
    saved in ``folder`` (once per run: it follows the compiler as it changes)."""
    from mncore_ir.tools import mncore_opt

    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[Seed]] = {}
    for source in sources:
        for level, spec in (("task", "convert-graph-to-task"), ("mncore", mncore_pipeline())):
            result, text = run_tool("seed", mncore_opt.main, opt_argv(source, spec))
            if result.outcome != OK or len(text) > MAX_GENERATED_CHARS:
                continue
            path = folder / f"{source.stem}.{level}.mlir"
            path.write_text(text)
            out[f"{path.name} (generated)"] = split_seeds(f"{source.name}@{level}", text)
    return out


def all_seeds(out: Path) -> dict[str, list[Seed]]:
    """The lit tests' and examples' IR, and what the compiler makes of the graph-level
    inputs among them (``Inputs/`` and ``examples/``)."""
    files = seed_files(ROOT)
    seeds = load_seeds(ROOT, files)
    sources = [p for p in files if (p.parent.name == "Inputs" or p.parent.name == "examples")
               and "func.func" in p.read_text(errors="replace")]
    seeds.update(generated_seeds(sources, out / "seeds"))
    return seeds


def make_cases(seeds: dict[str, list[Seed]], count: int, seed: int, differential: bool
               ) -> Iterator[Case]:
    """Input ``i``: a file, a seed of it, its mutant, a pipeline and two simulator
    orders, all drawn from ``Random(f"{seed}/{i}")``."""
    files, choices = sorted(seeds), pipelines()
    task, mncore = task_pipeline(), mncore_pipeline()
    for index in range(count):
        rng = random.Random(f"{seed}/{index}")
        chosen = rng.choice(seeds[rng.choice(files)])
        mutant = mutate(rng, chosen)
        yield Case(index, mutant.data, rng.choice(choices),
                   tuple(rng.randrange(2**31) for _ in range(2)), differential, mncore,
                   chosen.name, mutant.mutations, task)


# -- running cases in forked workers -------------------------------------------------------


@dataclass
class CaseResult:
    case: Case
    stages: list[StageResult]

    @property
    def outcome(self) -> str:
        failing = self.failure()
        if failing is not None:
            return failing.outcome
        return max((s.outcome for s in self.stages), key=RANK.__getitem__, default=OK)

    def failure(self) -> StageResult | None:
        return next((s for s in self.stages if s.outcome in FAILURES), None)

    def column(self, name: str) -> str | None:
        """The worst outcome of the stages of one column (``diff`` gathers the
        differential check's steps); None when no such stage ran."""
        mine = [s.outcome for s in self.stages if s.stage.split(":")[0] == name]
        return max(mine, key=RANK.__getitem__) if mine else None


@dataclass
class Running:
    """A worker and the stage it is in: when it began, in wall and CPU seconds."""

    case: Case
    process: BaseProcess
    stage: str = "start"
    since: float = field(default_factory=time.monotonic)
    cpu_since: float = 0.0
    base_kb: int | None = None


#: A stage that gets no CPU time (a deadlock, a sleep) is a hang after this many
#: timeouts of wall time; otherwise the timeout counts the worker's CPU seconds, so
#: that other work on the machine does not make slow stages look like hangs.
WALL_FACTOR = 6


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process (``/proc/PID/stat``, fields 14 and 15)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def stop(state: Running, workdir: Path) -> str:
    """Kill a stuck worker after asking it (SIGUSR1, faulthandler) where it is."""
    path = stack_path(workdir, state.case.index)
    with contextlib.suppress(OSError):
        os.kill(state.process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and "File" not in path.read_text(errors="replace"):
            time.sleep(0.02)
    state.process.kill()
    try:
        return stuck_at(path.read_text(errors="replace"))
    except OSError:
        return ""


def run_cases(cases: Iterable[Case], jobs: int, timeout: float, memory_mb: int,
              workdir: Path, progress: bool = False, deadline: float | None = None
              ) -> list[CaseResult]:
    """Run every case in its own forked worker, ``jobs`` at a time; after ``deadline``
    (``time.monotonic()``), start no more."""
    load_error_classes()
    context = get_context("fork")
    pending, running = deque(cases), {}
    total, results, started = len(pending), [], time.monotonic()

    def finish(conn: Connection, stages: list[StageResult]) -> None:
        state = running.pop(conn)
        if state.process.is_alive():
            state.process.kill()
        state.process.join()
        conn.close()
        results.append(CaseResult(state.case, stages))
        if progress and len(results) % max(50, total // 20) == 0:
            bad = sum(r.outcome in FAILURES for r in results)
            print(f"[{len(results)}/{total}] {time.monotonic() - started:.0f} s, "
                  f"{bad} failing", file=sys.stderr, flush=True)

    while pending or running:
        if deadline is not None and time.monotonic() > deadline:
            pending.clear()
        while pending and len(running) < jobs:
            case = pending.popleft()
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=work, args=(send, case, workdir, memory_mb),
                                      daemon=True)
            process.start()
            send.close()
            running[receive] = Running(case, process)
        for conn in wait(list(running), timeout=0.05):
            state = running[conn]
            try:
                message = conn.recv()
            except (EOFError, OSError):
                state.process.join(1)
                code = state.process.exitcode
                finish(conn, [StageResult(state.stage, CRASH, f"the worker died (exit code "
                                          f"{code}) in stage {state.stage}")])
                continue
            if message[0] == "start":
                state.base_kb = message[1]
            elif message[0] == "stage":
                state.stage, state.since = message[1], time.monotonic()
                state.cpu_since = _cpu_seconds(state.process.pid)
            else:
                _, stages, growth_kb = message
                if growth_kb > memory_mb * 1024:
                    stages.append(StageResult(state.stage, MEMORY, f"peak RSS grew by "
                                              f"{growth_kb // 1024} MB by stage {state.stage}"))
                finish(conn, stages)
        now = time.monotonic()
        for conn, state in list(running.items()):
            rss = rss_kb(state.process.pid)
            cpu = _cpu_seconds(state.process.pid) - state.cpu_since
            if cpu > timeout or now - state.since > WALL_FACTOR * timeout:
                where = stop(state, workdir)
                finish(conn, [StageResult(
                    state.stage, HANG, f"no result after {cpu:.1f} CPU seconds "
                    f"({now - state.since:.1f} s) in stage {state.stage}, in {where}",
                    seconds=now - state.since, where=where)])
            elif state.base_kb is not None and rss is not None and \
                    rss - state.base_kb > memory_mb * 1024:
                where = stop(state, workdir)
                finish(conn, [StageResult(state.stage, MEMORY, f"RSS grew by "
                                          f"{(rss - state.base_kb) // 1024} MB in stage "
                                          f"{state.stage}, in {where}", where=where)])
    return sorted(results, key=lambda r: r.case.index)


# -- the report ------------------------------------------------------------------------


def seed_file(name: str) -> str:
    return name.split("#")[0]


def group_label(result: CaseResult, stage: StageResult) -> str:
    """What tells one bug from another: the exception type and the project line that
    raised it; for a hang, a memory blow-up, a crash or a wrong result, the stage,
    the pipeline and the seed's file."""
    if stage.where:  # the innermost frame: "via" differs with the caller
        return f"{stage.stage}: in {stage.where.split(' via ')[0]}"
    if stage.error is not None:
        prefix = f"{stage.stage}: " if stage.stage.startswith("diff") else ""
        return prefix + stage.error.label()
    where = seed_file(result.case.seed)
    if stage.stage == "opt":
        return f"opt -p '{result.case.pipeline}' on {where}"
    return f"{stage.stage} on {where}"


def reproduce(result: CaseResult, stage: StageResult, path: Path) -> str:
    """The command that shows the failure again."""
    opt = shlex.join(["mncore-opt", *opt_argv(path, result.case.pipeline)])
    if stage.stage == "opt":
        return opt
    if stage.stage == "run":
        return f"{opt} | {shlex.join(['mncore-run', *RUN_ARGS])}"
    return shlex.join([sys.executable, "-m", "tests.fuzz.run", "--replay", str(path),
                       "--differential"])


@dataclass
class Group:
    outcome: str
    label: str
    results: list[CaseResult] = field(default_factory=list)
    saved: Path | None = None

    @property
    def example(self) -> CaseResult:
        return self.results[0]

    def stage(self) -> StageResult:
        failing = [s for s in self.example.stages if s.outcome == self.outcome]
        return failing[0]


@dataclass
class Summary:
    results: list[CaseResult]
    seconds: float
    title: str

    def counts(self) -> Counter[str]:
        return Counter(r.outcome for r in self.results)

    def failures(self) -> int:
        return sum(n for outcome, n in self.counts().items() if outcome in FAILURES)

    def groups(self) -> list[Group]:
        """Distinct failures (and unlocated diagnoses), most frequent first."""
        groups: dict[tuple[str, str], Group] = {}
        for result in self.results:
            stage = result.failure() or next(
                (s for s in result.stages if s.outcome == UNLOCATED), None)
            if stage is None:
                continue
            key = (stage.outcome, group_label(result, stage))
            groups.setdefault(key, Group(*key)).results.append(result)
        return sorted(groups.values(), key=lambda g: (RANK[g.outcome], -len(g.results)))

    def table(self) -> str:
        rows = [f"{'outcome':<10} {'inputs':>7} " + " ".join(f"{c:>6}" for c in STAGE_COLUMNS)]
        for outcome in OUTCOMES:
            columns = [sum(r.column(c) == outcome for r in self.results) for c in STAGE_COLUMNS]
            n = self.counts()[outcome]
            if n or any(columns):
                note = "  (not a failure)" if outcome == UNLOCATED else ""
                rows.append(f"{outcome:<10} {n:>7} " + " ".join(f"{c:>6}" for c in columns)
                            + note)
        rows.append(f"{'total':<10} {len(self.results):>7}")
        return "\n".join(rows)


def save_example(group: Group, number: int, out: Path) -> Path:
    """The group's first input, and beside it what happened and how to see it again."""
    folder = out / group.outcome
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", group.label)[:60].strip("-")
    path = folder / f"{number:02d}-{slug}.mlir"
    example, stage = group.example, group.stage()
    path.write_bytes(example.case.data)
    detail = [f"outcome: {group.outcome} ({len(group.results)} inputs)",
              f"group: {group.label}", f"seed: {example.case.seed}",
              f"mutations: {'; '.join(example.case.mutations)}",
              f"pipeline: {example.case.pipeline or '(none)'}", f"stage: {stage.stage}",
              f"reproduce: {reproduce(example, stage, path)}", "", stage.message]
    path.with_suffix(".txt").write_text("\n".join(detail) + "\n", errors="surrogateescape")
    group.saved = path
    return path


def report(summary: Summary, out: Path, show: int) -> str:
    """The table, then up to ``show`` distinct examples per class; every group is
    saved under ``out`` (``report.json`` lists them all)."""
    lines = [summary.title + f": {summary.seconds:.0f} s", "", summary.table()]
    groups = summary.groups()
    listing = []
    for outcome in (*FAILURES, UNLOCATED):
        mine = [g for g in groups if g.outcome == outcome]
        if not mine:
            continue
        inputs = sum(len(g.results) for g in mine)
        lines += ["", f"{outcome}: {len(mine)} distinct ({inputs} inputs)"]
        for number, group in enumerate(mine, 1):
            path = save_example(group, number, out)
            stage = group.stage()
            command = reproduce(group.example, stage, path)
            listing.append({"outcome": outcome, "label": group.label,
                            "inputs": len(group.results), "stage": stage.stage,
                            "message": stage.last_line(), "example": str(path),
                            "reproduce": command, "seed": group.example.case.seed,
                            "mutations": list(group.example.case.mutations)})
            if number > show:
                continue
            lines += [f"  {number}. [{len(group.results)}x] {group.label}",
                      f"     {stage.last_line()[:300]}",
                      f"     seed {group.example.case.seed}: "
                      f"{'; '.join(group.example.case.mutations)[:200]}",
                      f"     {command}"]
        if len(mine) > show:
            lines.append(f"  ... {len(mine) - show} more in {out / outcome}")
    (out / "report.json").write_text(json.dumps(
        {"title": summary.title, "counts": dict(summary.counts()), "groups": listing},
        indent=1))
    return "\n".join(lines)


# -- entry points ----------------------------------------------------------------------


def fuzz(count: int, seed: int, differential: bool = False, jobs: int = 2,
         timeout: float = 5.0, memory_mb: int = 1024, out: Path | None = None,
         progress: bool = False, max_seconds: float | None = None) -> Summary:
    """Generate and run ``count`` inputs from ``seed`` (the first ones only, when
    ``max_seconds`` runs out)."""
    out = out or Path(tempfile.gettempdir()) / "mncore-fuzz" / f"seed-{seed}"
    start = time.monotonic()
    seeds = all_seeds(out)
    cases = list(make_cases(seeds, count, seed, differential))
    deadline = None if max_seconds is None else start + max_seconds
    with tempfile.TemporaryDirectory(prefix="mncore-fuzz-") as workdir:
        results = run_cases(cases, jobs, timeout, memory_mb, Path(workdir), progress,
                            deadline)
    ran = f"{len(results)} of {count}" if len(results) < count else f"{count}"
    title = (f"mncore-ir fuzz: {ran} inputs, seed {seed}"
             f"{', differential' if differential else ''}, {jobs} jobs")
    return Summary(results, time.monotonic() - start, title)


def replay(path: Path, pipeline: str, differential: bool, timeout: float,
           memory_mb: int) -> int:
    """Run one saved input like the fuzzer does, printing each stage in full."""
    case = Case(0, path.read_bytes(), pipeline, (1, 2), differential, mncore_pipeline(),
                str(path), task_pipeline=task_pipeline())
    with tempfile.TemporaryDirectory(prefix="mncore-fuzz-") as workdir:
        [result] = run_cases([case], 1, timeout, memory_mb, Path(workdir))
    for stage in result.stages:
        print(f"== {stage.stage}: {stage.outcome}")
        if stage.message:
            print(stage.message)
        if stage.error is not None and stage.outcome != DIAGNOSED:
            print(stage.error.traceback)
    return 1 if result.outcome in FAILURES else 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="how many inputs")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed")
    parser.add_argument("--differential", action="store_true",
                        help="also compare the graph, task and mncore levels' results")
    parser.add_argument("--jobs", type=int, default=2, help="workers at a time")
    parser.add_argument("--show", type=int, default=5,
                        help="distinct examples shown per failure class")
    parser.add_argument("--out", type=Path, help="where examples, generated seeds and "
                        "report.json go (default: $TMPDIR/mncore-fuzz/seed-SEED)")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="seconds a stage may take before it is a hang")
    parser.add_argument("--memory-mb", type=int, default=1024,
                        help="RSS growth of a worker that is a memory blow-up")
    parser.add_argument("--max-seconds", type=float,
                        help="start no input after this many seconds (report those run)")
    parser.add_argument("--replay", type=Path, metavar="FILE",
                        help="run one saved input and print each stage in full")
    parser.add_argument("--pipeline", default="", help="the pipeline for --replay")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replay is not None:
        return replay(args.replay, args.pipeline, args.differential, args.timeout,
                      args.memory_mb)
    out = args.out or Path(tempfile.gettempdir()) / "mncore-fuzz" / f"seed-{args.seed}"
    summary = fuzz(args.count, args.seed, args.differential, args.jobs, args.timeout,
                   args.memory_mb, out, progress=True, max_seconds=args.max_seconds)
    print(report(summary, out, args.show))
    return 1 if summary.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
