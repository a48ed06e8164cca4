"""Compiling a step's traced graph (:mod:`~mncore_ir.frontends.lazy_graph`) through
the FX importer and the device's pipeline, with an in-memory and an optional on-disk
cache (``MNCORE_CACHE_DIR``). What the device cannot take runs on the host: the graph
is compiled in parts (:mod:`~mncore_ir.frontends.lazy_partition`), or, when nothing
can be compiled, run eagerly whole, with a warning.

What a compile leaves to look at: ``MNCORE_DUMP_DIR`` gets each step's final IR and,
under ``passes/``, its IR after every pass with the user's source lines as locations;
``MNCORE_DEBUG`` says what is compiled and why, and which ops run on the host and why;
a compile that runs past 2 s shows its phases (``MNCORE_PROGRESS=0`` silences them)."""

from __future__ import annotations

import hashlib
import operator
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch import fx
from torch.fx.experimental.proxy_tensor import make_fx
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.frontends import lazy_disk_cache as disk_cache
from mncore_ir.frontends.fx import (
    DECOMPOSITIONS,
    HANDLERS,
    FxImporter,
    FxImportError,
    describe_position,
    import_fx,
    source_position,
    user_frame,
)
from mncore_ir.frontends.lazy_disk_cache import COMPILER_VERSION
from mncore_ir.frontends.lazy_graph import (
    TraceGraph,
    cut,
    example_inputs,
    fx_graph,
    input_metas,
    to_fx,
)
from mncore_ir.frontends.lazy_names import input_names
from mncore_ir.frontends.lazy_ops import importable
from mncore_ir.frontends.lazy_partition import (
    HostOp,
    OnDevice,
    PartsRun,
    blamed_nodes,
    host_op,
    placeholders,
    returns_one,
    split,
)
from mncore_ir.frontends.lazy_templates import Template
from mncore_ir.frontends.lazy_tensor import LazyError
from mncore_ir.frontends.lazy_where import describe_location
from mncore_ir.pipeline import (
    CompileProgress,
    Device,
    PassDumps,
    PassObserver,
    apply_pipeline,
    count_ops,
    make_context,
)


def blamed_line(error: BaseException) -> str:
    """The user's source line (``path:line: code``) of the IR op that ``error``, or an
    error it was raised from, blames (the compiler's diagnostics carry it as ``op``;
    the importer gave each op its source position), or ``""``."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        op = getattr(cause, "op", None)
        if isinstance(op, Operation):
            position = source_position(op)
            return describe_position(position) if position else ""
        cause = cause.__cause__ or cause.__context__
    return ""


@dataclass(eq=False)
class CompiledGraph:
    """A step's executable, with the IR it runs and its cache key."""

    key: str
    ir: str
    run: Callable[[Sequence[torch.Tensor]], Sequence[torch.Tensor]]


def needs_retrace(graph: TraceGraph) -> bool:
    """Whether the trace holds an op to import through the ``make_fx`` re-trace
    (:func:`to_core_aten`), which decomposes or rewrites it. Record time decomposes the
    ops that pass through dispatch; what is left: view ops recorded when a chain of
    views is materialized (``LazyTensor.value``, writes through views), which bypass
    dispatch (``_reshape_alias``); an op whose decomposition failed on lazy tensors
    (one that needs a value), recorded whole; and an op with no handler, which the
    re-trace may make importable or else the importer names at its line."""
    return not all(node.op.importable if type(node.op) is Template else importable(node.op)
                   for node in graph.nodes)


class _AtNode(Exception):
    """``cause``, raised while converting the FX node whose source line is
    ``stack_trace``: carries the node out of ``make_fx`` and the importer."""

    def __init__(self, stack_trace: str | None, cause: Exception) -> None:
        super().__init__(str(cause))
        self.stack_trace = stack_trace
        self.cause = cause


class _Replay(fx.Interpreter):
    """Runs the trace under ``make_fx``; a node that fails names its source line."""

    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.extra_traceback = False  # the message stays the op's own

    def run_node(self, n: fx.Node) -> Any:
        try:
            return super().run_node(n)
        except Exception as error:
            raise _AtNode(n.meta.get("stack_trace"), error) from error


def to_core_aten(gm: fx.GraphModule, examples: Sequence[torch.Tensor]) -> fx.GraphModule:
    """Decompose to the importer's core ATen, keeping each node's source line."""

    def replay(*args: torch.Tensor) -> Any:
        with fx_traceback.preserve_node_meta():
            return _Replay(gm).run(*args)

    # The trace is functional already (in-place ops were rewritten while tracing).
    return make_fx(replay, decomposition_table=DECOMPOSITIONS, tracing_mode="fake")(*examples)


def import_graph(gm: fx.GraphModule | fx.Graph, examples: Sequence[torch.Tensor],
                 names: Sequence[str] | None = None, tolerant: bool = False,
                 origins: dict[Operation, str] | None = None,
                 element_types: Sequence[Any] | None = None) -> ModuleOp:
    """The core-ATen graph as ``func.func @main`` with arguments ``names`` (default
    ``inN``); a failure names the node's line. ``tolerant``: the nodes the importer
    cannot take are a :class:`_Split` (all of them, with why), not an error.
    ``origins`` is filled with the node (name) each op was imported from; the nodes
    that read or make another element type than ``element_types`` (the device's) are
    refused."""
    names = list(names) if names is not None else [f"in{i}" for i in range(len(examples))]
    importer = FxImporter(gm, examples, "main", names, HANDLERS, tolerant=tolerant,
                          element_types=element_types)
    if origins is not None:
        importer.origins = origins
    try:
        module = ModuleOp([importer.run()])
    except Exception as error:
        node = importer.node
        raise _AtNode(node.meta.get("stack_trace") if node else None, error) from error
    if importer.failures:
        raise _Split(importer.graph, list(examples), names,
                     {node.name: error for node, error in importer.failures.items()})
    return module


class _Split(Exception):
    """The step's graph holds nodes the device cannot take (``failures``: why, by
    node name): it is compiled in parts (:mod:`~mncore_ir.frontends.lazy_partition`)."""

    def __init__(self, graph: fx.Graph, metas: list[Any], names: list[str],
                 failures: dict[str, BaseException]) -> None:
        super().__init__(f"{len(failures)} nodes the device cannot take")
        self.graph = graph
        self.metas = metas
        self.names = names
        self.failures = failures


def _message(error: Exception) -> str:
    """The error's text; other than the compiler's own diagnostics, with its type, so
    that a bare ``KeyError: 'x'`` still says what it is."""
    if isinstance(error, DiagnosticException | FxImportError):
        return str(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _first_line(graph: TraceGraph) -> str:
    """The source line of the step's first traced op that has one, or ``""``."""
    where = next((node.where for node in graph.nodes if node.where), "")
    return describe_location(where) if where else ""


def _directory(variable: str) -> str | None:
    """The directory named by the environment ``variable``, refusing one that is not."""
    path = os.environ.get(variable) or None
    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise LazyError(f"{variable}={path!r} is not a directory")
    return path


class GraphCompiler:
    """Compiles traced graphs for one device, caching by structural hash. ``retrace``
    sends every graph through the ``make_fx`` re-trace (what :func:`needs_retrace`
    asks for), to compare the two paths. With ``host_fallback`` what the device cannot
    take runs on the host (in parts, or the whole step), else it is a ``LazyError``."""

    retrace = False

    def __init__(self, device: Device, metrics: Any, host_fallback: bool = True) -> None:
        self.device = device
        self.host_fallback = host_fallback
        self.metrics = metrics
        self.cache: dict[Any, CompiledGraph] = {}  # by trace structure or FX key
        self.cache_dir = _directory("MNCORE_CACHE_DIR")
        self.dump_dir = _directory("MNCORE_DUMP_DIR")
        self.debug = os.environ.get("MNCORE_DEBUG", "") not in ("", "0")
        self.progress = os.environ.get("MNCORE_PROGRESS", "") != "0"
        self.compiles_at: Counter[str] = Counter()
        self.ctx = make_context()

    def cut(self, outputs: Sequence[Any]) -> TraceGraph:
        return cut(outputs)

    def compile(self, graph: TraceGraph, reason: str) -> CompiledGraph:
        """The step's executable, from the cache or compiled; any failure is a
        ``LazyError`` naming the user's line (the original error is its cause)."""
        cached = self.cache.get(graph.structure)
        if cached is not None:
            self.metrics.counters["CachedCompile"] += 1
            return cached
        start = time.perf_counter()
        if self.debug:
            print(f"[mncore] compiling {graph.key} because of {reason}: "
                  f"{len(graph.nodes)} ops, {len(graph.inputs)} inputs, "
                  f"{len(graph.outputs)} outputs", file=sys.stderr)
        try:
            try:
                compiled = self._compile(graph, start)
            except _Split as parts:
                compiled = self._compile_parts(graph.key, parts, start)
        except Exception as error:
            cause = error.cause if isinstance(error, _AtNode) else error
            diagnosis = self._diagnose(graph, error)
            if not self.host_fallback:
                raise diagnosis from cause
            compiled = self._on_host(graph, diagnosis)
        self.cache[graph.structure] = compiled
        seconds = time.perf_counter() - start
        self.metrics.time("CompileTime", seconds)
        self._explain(graph, reason, seconds)
        if self.dump_dir:
            os.makedirs(self.dump_dir, exist_ok=True)
            with open(os.path.join(self.dump_dir, f"{graph.key}.graph.mlir"), "w") as f:
                f.write(compiled.ir)
        return compiled

    def _compile(self, graph: TraceGraph, start: float) -> CompiledGraph:
        imports: dict[str, Any] = {}

        def imported() -> ModuleOp:
            names = input_names(graph.inputs)
            tolerant = self.host_fallback
            if self.retrace or needs_retrace(graph):
                self.metrics.counters["ReTrace"] += 1
                metas = example_inputs(graph)
                fx_g = to_core_aten(to_fx(graph), metas).graph
            else:
                metas, fx_g = input_metas(graph), fx_graph(graph)
            imports.update(graph=fx_g, metas=metas, names=names, origins={})
            return import_graph(fx_g, metas, names, tolerant, imports["origins"],
                                self.device.element_types)

        try:
            return self._lowered(graph.key, imported, len(graph.nodes), start)
        except _Split:
            raise
        except Exception as error:  # the pipeline's: in parts when it blames nodes
            blamed = blamed_nodes(error, imports.get("origins", {}))
            if not self.host_fallback or not blamed:
                raise
            raise _Split(imports["graph"], imports["metas"], imports["names"],
                         dict.fromkeys(blamed, error)) from error

    #: How many times a step's parts are cut again after a part's pipeline blamed nodes.
    SPLITS = 8

    def _compile_parts(self, key: str, parts: _Split, start: float) -> CompiledGraph:
        """The step in parts: each part the device takes compiled, the rest run
        eagerly. A part whose pipeline fails blaming nodes is cut again without them;
        one whose failure blames none runs on the host (with a warning)."""
        named = dict(zip((p.name for p in parts.graph.nodes if p.op == "placeholder"),
                         parts.names, strict=True))
        failures = dict(parts.failures)
        for attempt in range(self.SPLITS):
            cut_up = split(parts.graph, failures)
            runs, irs, host = [], [], list(cut_up.host)
            for name in cut_up.device:
                part = getattr(cut_up.module, name)
                try:
                    compiled = self._compile_part(part, named, start)
                except Exception as error:
                    blamed = blamed_nodes(error, getattr(error, "origins", {}))
                    why = self._message_at(error)
                    if blamed - set(failures) and attempt < self.SPLITS - 1:
                        failures.update(dict.fromkeys(blamed, error))
                        break  # cut again without them
                    warnings.warn(f"the {self.device.name} device cannot compile part of "
                                  f"this step: {why}; that part runs on the host",
                                  stacklevel=2)
                    host += [host_op(n, why) for n in part.graph.nodes
                             if n.op == "call_function" and n.target is not operator.getitem]
                    continue
                setattr(cut_up.module, name, OnDevice(compiled.run, returns_one(part)))
                runs.append(compiled.run)
                irs.append(f"// {name}\n{compiled.ir}")
            else:
                break
        self.metrics.counters["SplitCompiles"] += 1
        self._report_host(host)
        header = "".join(f"// on the host: {op.describe()}\n" for op in host)
        return CompiledGraph(key, header + "\n".join(irs),
                             PartsRun(cut_up.module, [op.op for op in host], runs))

    def _compile_part(self, part: fx.GraphModule, named: dict[str, str], start: float
                      ) -> CompiledGraph:
        """One device part's executable, cached by its code and inputs like a graph
        ``torch.compile`` hands over; a failure carries the ops' ``origins``."""
        inputs = placeholders(part)
        metas = [p.meta["val"] for p in inputs]
        names = [named.get(p.name, p.name) for p in inputs]
        signature = [(tuple(m.shape), m.dtype) for m in metas]
        text = f"{part.code}{signature!r}{COMPILER_VERSION}"
        key = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        origins: dict[Operation, str] = {}
        ops = sum(1 for n in part.graph.nodes if n.op == "call_function")
        try:
            compiled = self._lowered(key, lambda: import_graph(part.graph, metas, names,
                                                               origins=origins), ops, start)
        except Exception as error:
            error.origins = origins  # type: ignore[attr-defined]
            raise
        self.cache[key] = compiled
        return compiled

    def _on_host(self, graph: TraceGraph, diagnosis: LazyError) -> CompiledGraph:
        """The whole step, eagerly on the host: what the device could not compile at
        all (one warning, saying why)."""
        warnings.warn(f"{diagnosis}; the step runs on the host", stacklevel=3)
        module = fx.GraphModule(torch.nn.Module(), fx_graph(graph))
        host = [host_op(n, str(diagnosis)) for n in module.graph.nodes
                if n.op == "call_function" and n.target is not operator.getitem]
        self._report_host(host)
        return CompiledGraph(graph.key, "".join(f"// on the host: {op.describe()}\n"
                                                for op in host),
                             PartsRun(module, [op.op for op in host], []))

    def _report_host(self, host: Sequence[HostOp]) -> None:
        if self.debug:
            for op in host:
                print(f"[mncore] on the host: {op.describe()}", file=sys.stderr)

    def _message_at(self, error: Exception) -> str:
        """``error``'s message with the user's line it blames, when it names one."""
        line = ""
        if isinstance(error, _AtNode):
            line = user_frame(error.stack_trace)
            error = error.cause
        line = line if line and line != "<unknown source line>" else blamed_line(error)
        message = _message(error)
        return f"{message} (at {line})" if line and line not in message else message

    def _lowered(self, key: str, imported: Callable[[], ModuleOp], ops: int, start: float
                 ) -> CompiledGraph:
        """The executable of the graph ``imported()`` gives (of ``ops`` traced ops), from
        the on-disk cache when it holds ``key``, else lowered by the device's pipeline
        (and stored), dumped after each pass with ``MNCORE_DUMP_DIR``."""
        progress = CompileProgress(f"[mncore] compiling {key}", start, self.progress)
        path = self._path(key)
        try:
            progress.phase(0, "import", lambda: ops)
            entry = disk_cache.load(self.ctx, path) if path else None
            if entry is None:
                module = imported()
                observers: list[PassObserver] = [progress]
                if self.dump_dir:
                    observers.append(PassDumps(os.path.join(self.dump_dir, "passes"), key))
                apply_pipeline(module, self.device.pipeline, self.ctx, observers=observers)
                ir = str(module)
                if path:
                    disk_cache.store(path, ir)
                self.metrics.counters["UncachedCompile"] += 1
            else:
                ir, module = entry
                self.metrics.counters["DiskCachedCompile"] += 1
            progress.phase(progress.total - 1 if progress.total else 1, "executable",
                           lambda: count_ops(module))
            compiled = CompiledGraph(key, ir, self.device.executable(module))
        except BaseException:
            progress.close()
            raise
        progress.close(lambda: count_ops(module))
        return compiled

    def compile_fx(self, gm: fx.GraphModule, examples: Sequence[Any], name: str
                   ) -> CompiledGraph:
        """A core-ATen FX graph's executable (what ``torch.compile`` hands the device),
        cached with the traced steps: keyed by its code and its inputs' signatures.
        Failures are the importer's, naming the user's line."""
        signature = [(tuple(x.shape), x.stride(), x.dtype) if isinstance(x, torch.Tensor)
                     else repr(x) for x in examples]
        text = f"{_graph_text(gm)}{signature!r}{COMPILER_VERSION}"
        key = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        cached = self.cache.get(key)
        if cached is not None:
            self.metrics.counters["CachedCompile"] += 1
            return cached
        start = time.perf_counter()
        ops = sum(1 for node in gm.graph.nodes if node.op == "call_function")
        if self.debug:
            print(f"[mncore] compiling {key} because of torch.compile ({name}): {ops} ops, "
                  f"{len(examples)} inputs", file=sys.stderr)
        compiled = self._lowered(key, lambda: import_fx(gm, examples, name), ops, start)
        self.cache[key] = compiled
        seconds = time.perf_counter() - start
        self.metrics.time("CompileTime", seconds)
        if self.debug:
            print(f"[mncore] compile {key}: {ops} ops, {len(examples)} inputs, {seconds:.3f} s;"
                  f" cause: torch.compile ({name})", file=sys.stderr)
        if self.dump_dir:
            os.makedirs(self.dump_dir, exist_ok=True)
            with open(os.path.join(self.dump_dir, f"{key}.graph.mlir"), "w") as f:
                f.write(compiled.ir)
        return compiled

    def _diagnose(self, graph: TraceGraph, error: Exception) -> LazyError:
        """The user's error for a failed compile, at the best source line known: the FX
        node that failed, else the IR op the error blames, else the step's first line."""
        line = ""
        if isinstance(error, _AtNode):
            line = user_frame(error.stack_trace)
            line = "" if line == "<unknown source line>" else line
            error = error.cause
        line = line or blamed_line(error) or _first_line(graph)
        message = _message(error)
        if line and line not in message:  # the importer's own errors name it already
            message += f" (first at {line})"
        return LazyError(f"the {self.device.name} device cannot compile this step: {message}")

    def _path(self, key: str) -> str | None:
        if not self.cache_dir:
            return None
        return os.path.join(self.cache_dir, f"{key}.{self.device.cache_tag}.mlir")

    def _explain(self, graph: TraceGraph, reason: str, seconds: float) -> None:
        if not self.debug:
            return
        self.compiles_at[reason] += 1
        print(f"[mncore] compile {graph.key}: {len(graph.nodes)} ops, {len(graph.inputs)} "
              f"inputs, {len(graph.outputs)} outputs, {seconds:.3f} s; cause: {reason}",
              file=sys.stderr)
        if self.compiles_at[reason] == 3:
            warnings.warn(f"{reason} has compiled 3 different graphs: check for changing "
                          "shapes or Python values baked into the graph", stacklevel=2)


def _graph_text(gm: fx.GraphModule) -> str:
    """What an FX graph computes, as cache-key text: its code and its submodules'
    (higher-order ops' branches), and the values of the constants it reads
    (``get_attr``: Dynamo lifts ``torch.tensor([...])`` in a function into one, which
    the code names but does not spell)."""
    parts = [module.code for _, module in gm.named_modules() if isinstance(module, fx.GraphModule)]
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        value: Any = gm
        for name in str(node.target).split("."):
            value = getattr(value, name)
        if isinstance(value, torch.Tensor):
            data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
            value = (tuple(value.shape), value.dtype,
                     hashlib.blake2b(data.numpy().tobytes(), digest_size=16).hexdigest())
        elif isinstance(value, fx.GraphModule):
            continue
        parts.append(f"{node.target}={value!r}")
    return "\n".join(parts)
