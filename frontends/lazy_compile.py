"""Cutting a traced graph at its outputs, hashing its structure, and compiling it through
the FX importer and the device's pipeline, with an in-memory and an optional on-disk
cache (``MNCORE_CACHE_DIR``). The trace is imported as recorded: its ops are importable
(torch's decompositions ran at record time) and its shapes were inferred then.

What a compile leaves to look at: ``MNCORE_DUMP_DIR`` gets each step's final IR and,
under ``passes/``, its IR after every pass with the user's source lines as locations;
``MNCORE_DEBUG`` says what is compiled and why; a compile that runs past 2 s shows its
phases (``MNCORE_PROGRESS=0`` silences them); :func:`name_inputs` names graph inputs."""

from __future__ import annotations

import hashlib
import linecache
import operator
import os
import re
import sys
import time
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch import fx
from torch.fx.experimental.proxy_tensor import make_fx
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

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
from mncore_ir.frontends.lazy_tensor import (
    DeviceData,
    Item,
    LazyError,
    LazyStorage,
    LazyTensor,
    Node,
    Scalar,
    describe_location,
)
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import (
    CompileProgress,
    Device,
    PassDumps,
    PassObserver,
    apply_pipeline,
    count_ops,
    make_context,
)

COMPILER_VERSION = "mncore-ir 0.1.0 graph-v2"


@dataclass(eq=False)
class TraceGraph:
    """The part of the trace the outputs need, in a topological order. ``structure``
    is its cache key: ops, constants, shapes and dtypes, how values flow, and the kinds
    of inputs; never the values of data or hoisted scalars."""

    nodes: list[Node]
    inputs: list[DeviceData | Scalar]
    outputs: list[Node | Item]
    structure: tuple[Any, ...]

    @property
    def key(self) -> str:
        """A stable digest of ``structure`` (Python's ``hash`` is salted per process),
        for the on-disk cache and dumps."""
        text = repr(self.structure) + COMPILER_VERSION
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


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


_VALUES = (Node, DeviceData, Scalar)


def cut(outputs: Sequence[Any]) -> TraceGraph:
    """Collect the nodes ``outputs`` depend on, in topological order, and their
    structure (one pass, iterative: traces are long)."""
    index: dict[int, int] = {}
    nodes: list[Node] = []
    inputs: list[DeviceData | Scalar] = []
    parts: list[Any] = []

    def ref(v: Any) -> Any:
        if isinstance(v, _VALUES):
            return index[id(v)]
        if isinstance(v, Item):
            return (index[id(v.node)], v.index)
        if isinstance(v, list | tuple):
            return tuple(ref(x) for x in v)
        return None

    stack: list[tuple[Any, bool]] = [(v, False) for v in reversed(outputs)]
    while stack:
        x, done = stack.pop()
        if isinstance(x, Item):
            x = x.node
        elif isinstance(x, list | tuple):
            stack.extend((y, False) for y in reversed(x))
            continue
        if not isinstance(x, _VALUES) or id(x) in index:
            continue
        if isinstance(x, DeviceData):
            index[id(x)] = -1 - len(inputs)
            inputs.append(x)
            parts.append((x.shape, x.dtype))
        elif isinstance(x, Scalar):
            index[id(x)] = -1 - len(inputs)
            inputs.append(x)
            parts.append(x.dtype)
        elif done:
            index[id(x)] = len(nodes)
            nodes.append(x)
            parts.append((x.key, ref(x.args), ref(tuple(x.kwargs.values()))))
        else:
            stack.append((x, True))
            stack.extend((a, False) for a in reversed(x.args))
            stack.extend((a, False) for a in x.kwargs.values())
    parts.append(ref(list(outputs)))
    return TraceGraph(nodes, inputs, list(outputs), tuple(parts))


def replay(graph: TraceGraph, leaves: Sequence[Any],
           apply: Callable[[Node, tuple[Any, ...], dict[str, Any]], Any],
           item: Callable[[Any, int], Any]) -> Callable[[Any], Any]:
    """Walk the trace in order: ``apply(node, args, kwargs)`` with the node's graph
    values replaced by what earlier calls returned (``leaves`` for the inputs, ``item``
    for an output of a multi-output node). Returns the mapping of graph values."""
    env: dict[int, Any] = {id(x): leaf for x, leaf in zip(graph.inputs, leaves, strict=True)}

    def arg(v: Any) -> Any:
        if isinstance(v, Item):
            return item(env[id(v.node)], v.index)
        if isinstance(v, _VALUES):
            return env[id(v)]
        if isinstance(v, list | tuple):
            return type(v)(arg(x) for x in v)
        return v

    for node in graph.nodes:
        env[id(node)] = apply(node, arg(node.args), {k: arg(v) for k, v in node.kwargs.items()})
    return arg


def fx_graph(graph: TraceGraph) -> fx.Graph:
    """The trace as an FX graph of ATen calls, node for node: each keeps its user source
    line and its record-time output metadata as ``meta["val"]``, what the importer's
    handlers read (no shapes are inferred again)."""
    g = fx.Graph()

    def call(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stack_trace = _stack_trace(node.where)
        if type(node.op) is Template:  # its nodes, each at the template node's line
            return node.op.expand(args, lambda step, a: aten_call(step[0], a, step[2],
                                                                  step[3], stack_trace), item)
        return aten_call(node.op, args, kwargs, node.meta, stack_trace)

    def aten_call(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: Any,
                  stack_trace: str) -> fx.Node:
        fx_node = g.call_function(op, args, kwargs)
        fx_node.meta["val"] = meta
        fx_node.meta["stack_trace"] = stack_trace
        return fx_node

    def item(multi: Any, index: int) -> fx.Node:
        if type(multi) is tuple:  # the results of an expanded template
            return multi[index]
        fx_node = g.call_function(operator.getitem, (multi, index))
        fx_node.meta["val"] = multi.meta["val"][index]
        return fx_node

    placeholders = []
    for i, meta in enumerate(input_metas(graph)):
        placeholder = g.placeholder(f"in{i}")
        placeholder.meta["val"] = meta
        placeholders.append(placeholder)
    arg = replay(graph, placeholders, call, item)
    g.output(tuple(arg(v) for v in graph.outputs))
    return g


def to_fx(graph: TraceGraph) -> fx.GraphModule:
    """:func:`fx_graph` as a module, for :func:`to_core_aten`'s re-trace."""
    return fx.GraphModule(torch.nn.Module(), fx_graph(graph))


def _stack_trace(where: str) -> str:
    m = re.match(r'File "([^"]+)", line (\d+)', where)
    if not m:
        return ""
    return f"{where}\n    {linecache.getline(m.group(1), int(m.group(2))).strip()}"


def example_inputs(graph: TraceGraph) -> list[torch.Tensor]:
    return [torch.zeros(x.shape, dtype=x.dtype) if isinstance(x, DeviceData)
            else torch.zeros((), dtype=x.dtype) for x in graph.inputs]


def input_metas(graph: TraceGraph) -> list[torch.Tensor]:
    """The inputs as meta tensors (a hoisted scalar is a 0-d tensor)."""
    return [torch.empty(x.shape if isinstance(x, DeviceData) else (), dtype=x.dtype,
                        device="meta") for x in graph.inputs]


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


# ---------------------------------------------------------------------- input names

#: The names :func:`name_inputs` gave, by the storage of the named tensor (it outlives
#: the buffers it holds), and by each buffer a named tensor was seen to hold.
_NAMED_STORAGES: weakref.WeakKeyDictionary[LazyStorage, str] = weakref.WeakKeyDictionary()
_NAMED_BUFFERS: weakref.WeakKeyDictionary[DeviceData, str] = weakref.WeakKeyDictionary()


def name_inputs(named: Iterable[tuple[str, torch.Tensor]]) -> None:
    """Name device tensors (``module.named_parameters()`` after ``.mncore()``) as graph
    inputs: a step's ``func.func @main`` then reads ``%model.0.weight`` where it would
    read ``%in3``, in dumps and the IR. The graph's cache key does not change. A view of
    part of a buffer is skipped (the graph reads the whole); one of all of it (what a
    ``Parameter`` is: a ``detach``) names it. The name follows the tensor to the buffers
    it holds when a step is compiled or :func:`note_named_buffers` is called; an input
    with no name known stays ``inN``."""
    for name, tensor in named:
        if not isinstance(tensor, LazyTensor):
            raise LazyError(f"name_inputs: {name!r} is on {tensor.device}, not the mncore "
                            "device: name tensors after moving them (.mncore())")
        if _whole(tensor):
            _NAMED_STORAGES[tensor._storage_] = name
    note_named_buffers()


def _whole(tensor: LazyTensor) -> bool:
    """Whether ``tensor`` sees all of its storage's value, element for element (same
    shape, strides and dtype as the base of its views: a view of all of it)."""
    if not tensor._views:
        return True
    base = tensor._views[0].base_meta
    return (tensor.shape, tensor.stride(), tensor.dtype) == (base.shape, base.stride(),
                                                              base.dtype)


def note_named_buffers() -> None:
    """Remember the buffer each named tensor holds now. A step that updates a parameter
    holds its new value, not the buffer the graph reads, when it is compiled: calling
    this after ``sync()`` gives the new buffers (they are the next step's inputs) their
    names. Costs nothing while no tensor is named."""
    if not _NAMED_STORAGES:
        return
    for storage, name in _NAMED_STORAGES.items():  # guarded against collection
        value = storage.value
        if type(value) is DeviceData:
            _NAMED_BUFFERS[value] = name


def input_names(graph: TraceGraph) -> list[str]:
    """The step's argument names: a named buffer's name (once per graph), else ``inN``."""
    note_named_buffers()
    names = [f"in{i}" for i in range(len(graph.inputs))]
    if _NAMED_BUFFERS:
        used: set[str] = set()
        for i, x in enumerate(graph.inputs):
            name = _NAMED_BUFFERS.get(x) if isinstance(x, DeviceData) else None
            if name is not None and name not in used:
                names[i] = name
                used.add(name)
    return names


def import_graph(gm: fx.GraphModule | fx.Graph, examples: Sequence[torch.Tensor],
                 names: Sequence[str] | None = None, tolerant: bool = False,
                 origins: dict[Operation, str] | None = None,
                 element_types: Sequence[Any] | None = None) -> ModuleOp:
    """The core-ATen graph as ``func.func @main`` with arguments ``names`` (default
    ``inN``); a failure names the node's line. ``tolerant``: the nodes the importer
    cannot take are a :class:`_Split` (all of them, with why), not an error.
    ``origins`` is filled with the node (name) each op was imported from; a tolerant
    import refuses the nodes that read or make another element type than
    ``element_types`` (the device's)."""
    names = list(names) if names is not None else [f"in{i}" for i in range(len(examples))]
    importer = FxImporter(gm, examples, "main", names, HANDLERS, tolerant=tolerant,
                          element_types=element_types if tolerant else None)
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


#: The first line of an on-disk entry: the compiler that wrote it and the body's digest.
_HEADER = re.compile(r"// (.+); blake2b ([0-9a-f]{32})\n")


def _digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _unpack(data: bytes) -> str:
    """The IR of an on-disk entry; ``ValueError`` saying why when it is not intact."""
    newline = data.find(b"\n") + 1
    header = _HEADER.fullmatch(data[:newline].decode("ascii", "replace"))
    if not header:
        raise ValueError("no valid header line")
    if header.group(1) != COMPILER_VERSION:
        raise ValueError(f"written by {header.group(1)!r}, not {COMPILER_VERSION!r}")
    body = data[newline:]
    if _digest(body) != header.group(2):
        raise ValueError("its checksum does not match (truncated or edited)")
    return body.decode()


def _pack(ir: str) -> bytes:
    body = ir.encode()
    return f"// {COMPILER_VERSION}; blake2b {_digest(body)}\n".encode() + body


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
            names = input_names(graph)
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
        for _ in range(self.SPLITS):
            cut_up = split(parts.graph, failures)
            runs, irs, host = [], [], list(cut_up.host)
            for name in cut_up.device:
                part = getattr(cut_up.module, name)
                try:
                    compiled = self._compile_part(part, named, start)
                except Exception as error:
                    blamed = blamed_nodes(error, getattr(error, "origins", {}))
                    why = self._message_at(error)
                    if blamed - set(failures):
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
            entry = self._load(path) if path else None
            if entry is None:
                module = imported()
                observers: list[PassObserver] = [progress]
                if self.dump_dir:
                    observers.append(PassDumps(os.path.join(self.dump_dir, "passes"), key))
                apply_pipeline(module, self.device.pipeline, self.ctx, observers=observers)
                ir = str(module)
                if path:
                    self._store(path, ir)
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
        text = f"{gm.code}{signature!r}{COMPILER_VERSION}"
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

    def _path(self, key: str) -> str | None:
        if not self.cache_dir:
            return None
        return os.path.join(self.cache_dir, f"{key}.{self.device.cache_tag}.mlir")

    def _load(self, path: str) -> tuple[str, ModuleOp] | None:
        """The entry at ``path``, parsed; None when there is none or it is not intact
        (then one warning: the step is compiled again and the entry rewritten)."""
        try:
            with open(path, "rb") as f:
                ir = _unpack(f.read())
            return ir, parse_module(self.ctx, ir, path)
        except FileNotFoundError:
            return None
        except Exception as error:  # whatever is wrong with it, compiling again mends it
            why = str(error).splitlines()[0] if str(error) else type(error).__name__
            warnings.warn(f"ignoring the compile-cache entry {path}: {why}; compiling the "
                          "step again and rewriting it", stacklevel=2)
            return None

    def _store(self, path: str, ir: str) -> None:
        """Write the entry atomically (a reader never sees half of it); a cache that
        cannot be written costs a warning, not the step."""
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(_pack(ir))
            os.replace(tmp, path)
        except OSError as error:
            warnings.warn(f"cannot write the compile-cache entry {path}: {error}",
                          stacklevel=2)
