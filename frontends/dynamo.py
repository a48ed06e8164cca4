"""``torch.compile(fn, backend="mncore")``: Dynamo captures ``fn`` once per guard set,
AOTAutograd splits each captured graph into core-ATen forward and backward graphs, and
each of those goes through the importer and the pipeline of the device
``torch_mncore.init`` chose, into the compile cache the lazy runtime uses. Later calls
cost Dynamo's guard check and the device's execution.

The graphs run on host tensors (every device here runs on the host's memory). A graph
the device cannot take (an op with no handler, symbolic shapes) runs eagerly instead,
with one warning and a ``DynamoFallback::<why>`` count: what eager runs is never
refused. The package's entry point registers the backend, so importing ``torch`` is
enough for ``backend="mncore"``."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch._decomp import decomposition_table
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx.experimental.proxy_tensor import make_fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree

from mncore_ir.frontends.aten_expansions import fused_multiply_add
from mncore_ir.frontends.corrected_decompositions import corrected_kernels
from mncore_ir.frontends.fx import DECOMPOSITIONS, EXPORT_ONLY, HANDLERS, math_attention
from mncore_ir.frontends.lazy_fast_paths import FAST_PATHS
from mncore_ir.frontends.lazy_runtime import Runtime, runtime
from mncore_ir.frontends.lazy_worker import Metrics

aten = torch.ops.aten


def _skip_the_lazy_runtime() -> None:
    """Dynamo must not trace the lazy runtime's own code (a lazy tensor's dispatch, its
    shape inference): calls into it run as they are, so ``.mncore()`` tensors under
    ``torch.compile`` are traced lazily, as without it."""
    from torch._dynamo import trace_rules

    for package in ("mncore_ir.frontends", "torch_mncore"):
        trace_rules.add(package)


_skip_the_lazy_runtime()


def mncore_backend(gm: fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Any:
    """The Dynamo backend: AOTAutograd with core-ATen decompositions, its forward,
    backward and inference graphs compiled for the runtime's device. The partitioner
    is the min-cut one (as inductor's): the forward saves parameters, not their
    transposes, which the backward recomputes as free views; an inference graph keeps
    its input mutations (an optimizer's updates), which run in the device's step."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    active = runtime()  # a LazyError naming torch_mncore.init() when there is none
    _register_prims()
    _count_guard_failures(active)
    active.metrics.counters["DynamoFrames"] += 1
    backend = aot_autograd(fw_compiler=_compiler(active, "forward"),
                           bw_compiler=_compiler(active, "backward"),
                           inference_compiler=_compiler(active, "inference"),
                           decompositions=_decompositions(),
                           partition_fn=min_cut_rematerialization_partition,
                           keep_inference_input_mutations=True)
    with math_attention(), corrected_kernels():  # AOTAutograd traces both passes here
        return backend(gm, example_inputs, **kwargs)


def _register_prims() -> None:
    """The importer's handlers of the prims Dynamo writes: ``prims.fma`` for
    ``addcmul_``, ``addcdiv_`` (with a value) and ``add_`` (with a tensor alpha; every
    Adam, AdamW, RMSprop and Adagrad step ran eagerly without it), and
    ``prims.convert_element_type`` for a Python float argument whose value changes
    between calls (a scheduler's learning rate, then a 0-d tensor input)."""
    fma = getattr(torch.ops.prims, "fma", None)  # loaded with Dynamo's own imports
    if fma is not None and fma.default not in HANDLERS:
        HANDLERS[fma.default] = fused_multiply_add
    HANDLERS.setdefault(torch.ops.prims.convert_element_type.default, _convert_element_type)


def _convert_element_type(imp: Any, node: fx.Node) -> Any:
    return imp.as_type(node.args[0], node.args[1])


def _decompositions() -> dict[Any, Any]:
    """The importer's decompositions (those of :func:`capture`), and batch norm's:
    AOTAutograd hands over its functional forms (``_native_batch_norm_legit_functional``,
    whose running statistics are outputs), which the lazy path never records (it
    decomposes them while tracing) and the importer has no handler for."""
    from torch._decomp import get_decompositions

    norms = get_decompositions([
        aten._native_batch_norm_legit_functional, aten._native_batch_norm_legit,
        aten._native_batch_norm_legit_no_training, aten.native_batch_norm])
    others = {op: _wide_only(f) for op, f in decomposition_table.items()
              if op not in DECOMPOSITIONS and op not in HANDLERS and op not in EXPORT_ONLY
              and isinstance(op, torch._ops.OpOverload)}
    return {**others, **FAST_PATHS, **DECOMPOSITIONS,
            **{op: f for op, f in norms.items() if op not in HANDLERS}}


def _wide_only(decomposition: Callable[..., Any]) -> Callable[..., Any]:
    """One of torch's decompositions beyond core ATen, for an op the importer lacks
    (``linalg_vector_norm``: ``F.normalize``, ``clip_grad_norm_``), as the lazy path
    uses them: not for f16/bf16, which they compute in the narrow type where torch's
    CPU kernels compute in f32 (the op is then kept, and its graph runs eagerly)."""
    def decompose(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16)
               for a in pytree.tree_leaves((args, kwargs))):
            return NotImplemented
        return decomposition(*args, **kwargs)

    return decompose


def _count_guard_failures(active: Runtime) -> None:
    """Dynamo recompiles a frame when a guard fails: count each reason it gives
    (``DynamoGuardFailure::<reason>``) once per runtime, so metrics say why a function
    recompiled."""
    from torch._dynamo.utils import guard_failures

    for reasons in guard_failures.values():
        for reason in map(str, reasons):
            if reason not in active.guard_failures_seen:
                active.guard_failures_seen.add(reason)
                active.metrics.counters[f"DynamoGuardFailure::{reason}"] += 1


def _compiler(active: Runtime, kind: str) -> Callable[[fx.GraphModule, Sequence[Any]], Any]:
    def compile_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        symbolic = [x for x in example_inputs if isinstance(x, torch.SymInt) or (
            isinstance(x, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in x.shape))]
        if symbolic:
            return _per_shape(active, gm, kind)
        return _static(active, gm, kind, example_inputs)

    return compile_graph


def _static(active: Runtime, gm: fx.GraphModule, kind: str, example_inputs: Sequence[Any]
            ) -> Any:
    """``gm`` (static shapes) as the device's executable, or eagerly where it cannot
    compile."""
    _rewrite_gradient_copies(gm)
    narrowed = _narrow_float_scalars(gm)
    example_inputs = [x.to(torch.float32) if i in narrowed else x
                      for i, x in enumerate(example_inputs)]
    plan = _plan_outputs(gm, _saved_from(kind), narrowed)
    if any(layout is None for *_, layout in plan.views):
        return _eager(active, gm, "an output is a view of an input at an offset known only "
                      "when the graph runs", plan)
    try:
        # AOTAutograd calls the backend with its fake mode on: the executable's constant
        # tensors must be real ones
        with unset_fake_temporarily():
            compiled = active.compiler.compile_fx(gm, example_inputs, f"dynamo_{kind}")
    except Exception as error:
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        return _eager(active, gm, why, plan)
    active.metrics.counters["DynamoCompiles"] += 1
    return _runner(compiled.run, plan, active.metrics)


#: The most shapes one symbolic graph is compiled for; calls with further ones run it
#: eagerly.
SHAPE_LIMIT = 16


def _per_shape(active: Runtime, gm: fx.GraphModule, kind: str) -> Any:
    """A graph with symbolic shapes (Dynamo makes a dimension symbolic once it has seen
    two sizes, as a loader's last, smaller batch does): each call's shapes get a static
    program, the graph re-traced with that call's inputs, rather than the graph running
    eagerly from then on. Counted as ``DynamoShapeSpecializations``."""
    programs: dict[Any, Any] = {}

    def run(args: list[Any]) -> Any:
        key = tuple((tuple(a.shape), a.stride(), a.dtype) if isinstance(a, torch.Tensor)
                    else (type(a), a) for a in args)
        program = programs.get(key)
        if program is None:
            if len(programs) >= SHAPE_LIMIT:
                program = _eager(active, gm, f"more than {SHAPE_LIMIT} shapes")
            else:
                active.metrics.counters["DynamoShapeSpecializations"] += 1
                try:
                    program = _specialized(active, gm, kind, args)
                except Exception as error:  # the re-trace itself: the graph runs eagerly
                    why = str(error).splitlines()[0] if str(error) else type(error).__name__
                    program = _eager(active, gm, f"re-tracing for shapes: {why}")
            programs[key] = program
        return program(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


#: ``(result, input, (size, stride, storage offset) or None)``.
InputView = tuple[int, int, tuple[tuple[int, ...], tuple[int, ...], int] | None]
#: ``(result, the result holding its memory, (size, stride, storage offset))``.
OutputView = tuple[int, int, tuple[tuple[int, ...], tuple[int, ...], int]]


@dataclass(frozen=True)
class _Outputs:
    """Where a rewritten graph's results go: ``layout`` gives, for each output
    AOTAutograd expects, ``None`` (a ``None`` output), ``("result", k)`` (the graph's
    ``k``-th result), ``("input", i)`` (input ``i`` itself: a saved tensor) or
    ``("constant", n)`` (a size a shape-specialised forward saves);
    ``mutations`` pairs each mutated input with the result holding its new value."""

    layout: tuple[tuple[str, Any] | None, ...]
    mutations: tuple[tuple[int, int], ...]
    views: tuple[InputView, ...] = ()
    """Each result that is a view of an input (:func:`_input_views`): AOTAutograd
    rebuilds such an output from the input and the returned tensor's strides and
    offset, so the runner returns that view itself (a result the device computed, or a
    clone, has offset 0: ``x[n]`` gave ``x[0]`` for every ``n``)."""
    shared: tuple[OutputView, ...] = ()
    """Each result that views another's memory (:func:`_output_views`): an inference
    graph's outputs alias each other as the graph's views do (AOTAutograd leaves them
    to the backend), so the runner returns views of one result, not copies."""
    narrowed: tuple[int, ...] = ()
    """The inputs the runner passes in f32 (:func:`_narrow_float_scalars`)."""


def _saved_from(kind: str) -> int | None:
    """The first output of a forward graph that is a tensor saved for the backward
    (AOTAutograd's metadata of the graph being compiled): those are never the user's,
    so they may be inputs themselves."""
    if kind != "forward":
        return None
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    return getattr(meta, "num_forward", None)


def _plan_outputs(gm: fx.GraphModule, saved_from: int | None,
                  narrowed: frozenset[int] = frozenset()) -> _Outputs:
    """Rewrite ``gm``'s outputs into what the importer takes, and say how to put back
    AOTAutograd's: ``None`` outputs (gradients of inputs that need none), which the
    importer cannot type, are dropped; a saved tensor that is an input (a forward
    saving a parameter) is not returned but passed through (the executable would
    clone it: its results own their memory); ``copy_`` into an input (an inference
    graph's kept mutation, after the input's last read) becomes a result that the
    runner writes into the input."""
    graph = gm.graph
    places = {node: i for i, node in enumerate(n for n in graph.nodes if n.op == "placeholder")}
    mutated: dict[fx.Node, fx.Node] = {}
    for node in list(graph.nodes):
        if node.target is aten.copy_.default and node.args[0] in places:
            target, value = node.args[0], node.args[1]
            if any(user is not node and _after(user, node) for user in target.users):
                continue  # read after its update: the importer says what it cannot do
            value = _like(graph, node, value, target)
            mutated[target] = value
            node.replace_all_uses_with(value)  # an output: AOTAutograd returns the input
            graph.erase_node(node)
    output = graph.output_node()
    layout: list[tuple[str, Any] | None] = []
    results: list[Any] = []
    for position, out in enumerate(output.args[0]):
        if out is None:
            layout.append(None)
        elif not isinstance(out, fx.Node):  # a size saved for the backward, specialised
            layout.append(("constant", out))
        elif saved_from is not None and position >= saved_from and out in places:
            layout.append(("input", places[out]))
        else:
            layout.append(("result", len(results)))
            results.append(out)
    mutations = []
    for target, value in mutated.items():
        mutations.append((places[target], len(results)))
        results.append(value)
    views = _input_views(places, mutated, results)
    shared = _output_views(results, {k for k, *_ in views} | {k for _, k in mutations})
    output.args = (tuple(results),)
    graph.eliminate_dead_code()
    gm.recompile()
    return _Outputs(tuple(layout), tuple(mutations), views, shared, tuple(sorted(narrowed)))


def _whole(val: torch.Tensor) -> bool:
    """Whether a traced tensor is its storage's every element, densely in order."""
    return (val.storage_offset() == 0 and val.is_contiguous()
            and val.numel() * val.element_size() == val.untyped_storage().nbytes())


def _static_layout(val: Any) -> bool:
    return isinstance(val, torch.Tensor) and all(
        isinstance(d, int) for d in (*val.shape, *val.stride(), val.storage_offset()))


def _output_views(results: list[Any], skip: set[int]) -> tuple[OutputView, ...]:
    """The results (but ``skip``'s) that share memory in the traced graph, each as a
    view of one of them that is its memory whole; where none is, the views' root (up
    their first arguments while those share it) joins the results, as AOTAutograd
    adds an intermediate base. Results of unknown layout are left alone."""
    groups: dict[StorageWeakRef, list[int]] = {}
    for k, node in enumerate(list(results)):
        val = node.meta.get("val") if isinstance(node, fx.Node) else None
        if k not in skip and _static_layout(val):
            groups.setdefault(StorageWeakRef(val.untyped_storage()), []).append(k)
    found: list[OutputView] = []
    for storage, members in groups.items():
        if len(members) < 2:
            continue
        root = next((k for k in members if _whole(results[k].meta["val"])), None)
        if root is None:  # a base no output is: up the views to it
            node = results[members[0]]
            while isinstance(node, fx.Node) and node.args and isinstance(
                    node.args[0], fx.Node) and _static_layout(node.args[0].meta.get("val")) \
                    and StorageWeakRef(node.args[0].meta["val"].untyped_storage()) == storage:
                node = node.args[0]
            if not _whole(node.meta["val"]):
                continue
            root = len(results)
            results.append(node)
        for k in members:
            if k != root:
                val = results[k].meta["val"]
                found.append((k, root, (tuple(val.shape), tuple(val.stride()),
                                        val.storage_offset())))
    return tuple(found)


def _input_views(places: dict[fx.Node, int], mutated: dict[fx.Node, fx.Node],
                 results: list[Any]) -> tuple[InputView, ...]:
    """The results that view an input's memory, or the new value written into an input
    laid out as the input is, by their traced metadata (Dynamo's and AOTAutograd's
    fake tensors share storage as their views do); the metadata ``None`` where it is
    known only when the graph runs (an offset from ``.item()``)."""
    storages = {}
    for node, i in places.items():
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            storages.setdefault(StorageWeakRef(val.untyped_storage()), i)
    for target, value in mutated.items():
        new, old = value.meta.get("val"), target.meta.get("val")
        if isinstance(new, torch.Tensor) and isinstance(old, torch.Tensor) and (
                new.stride(), new.storage_offset()) == (old.stride(), old.storage_offset()):
            storages.setdefault(StorageWeakRef(new.untyped_storage()), places[target])
    found: list[InputView] = []
    for k, node in enumerate(results):
        val = node.meta.get("val") if isinstance(node, fx.Node) else None
        if node in places or node in mutated.values() or not isinstance(val, torch.Tensor):
            continue
        i = storages.get(StorageWeakRef(val.untyped_storage()))
        if i is None:
            continue
        known = all(isinstance(d, int) for d in (*val.shape, *val.stride(),
                                                  val.storage_offset()))
        found.append((k, i, (tuple(val.shape), tuple(val.stride()), val.storage_offset())
                       if known else None))
    return tuple(found)


def _after(user: fx.Node, node: fx.Node) -> bool:
    """Whether ``user`` comes after ``node`` in their graph."""
    current = node.next
    while current.op != "root":
        if current is user:
            return True
        current = current.next
    return False


def _like(graph: fx.Graph, at: fx.Node, value: fx.Node, target: fx.Node) -> fx.Node:
    """``value`` as ``copy_`` would write it into ``target``: cast to its dtype and
    broadcast to its shape, where they differ."""
    want, have = target.meta.get("val"), value.meta.get("val")
    if not isinstance(want, torch.Tensor) or not isinstance(have, torch.Tensor):
        return value
    with graph.inserting_before(at):
        if have.dtype != want.dtype:
            value = graph.call_function(aten._to_copy.default, (value,), {"dtype": want.dtype})
            value.meta["val"] = have.to(want.dtype)
        if tuple(have.shape) != tuple(want.shape):
            value = graph.call_function(aten.expand.default, (value, list(want.shape)))
            value = graph.call_function(aten.clone.default, (value,))
            value.meta["val"] = want
    return value


def _specialized(active: Runtime, gm: fx.GraphModule, kind: str, args: list[Any]) -> Any:
    """``gm`` for the shapes of ``args``: re-traced with their tensors as its inputs and
    its size arguments as constants, compiled; a boxed call taking ``gm``'s inputs."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    sizes = list(args)

    def with_sizes(*given: torch.Tensor) -> Any:
        full = list(sizes)
        for i, t in zip(tensors, given, strict=True):
            full[i] = t
        return gm(*full)

    static = make_fx(with_sizes, tracing_mode="fake")(*[args[i] for i in tensors])
    sizes = [None if isinstance(a, torch.Tensor) else a for a in args]  # no tensor kept
    program = _static(active, static, kind, [args[i] for i in tensors])

    def run(args: list[Any]) -> Any:
        given = [args[i] for i in tensors]
        args.clear()
        return program(given)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _runner(run_graph: Any, plan: _Outputs, metrics: Metrics, device: bool = True) -> Any:
    """A boxed call of the executable that puts AOTAutograd's outputs back (see
    :class:`_Outputs`). A mutated input that no other input shares memory with is
    donated to the cpu executable, which then updates it in place (an optimizer step
    writes each parameter once, with no copy); otherwise its new value is copied in.
    Counted as ``DynamoInPlaceUpdates`` and ``DynamoCopiedUpdates``; each call as the
    lazy worker counts a step's (``Executions``, ``ExecuteTime``, a simulator's
    ``MNCoreSteps`` and ``MNCoreCycles``) unless it runs on the host (not ``device``)."""
    donating = getattr(run_graph, "donating", None)
    take_counts = getattr(run_graph, "take_counts", None)
    owner = {k: i for i, k in plan.mutations}  # result -> the input it updates
    mutated = [i for i, _ in plan.mutations]
    layout, views, aliased = plan.layout, plan.views, plan.shared
    viewing = {k for k, *_ in views} | {k for k, *_ in aliased}
    counters = metrics.counters

    def run(args: list[Any]) -> list[Any]:
        inputs = list(args)
        args.clear()  # AOTAutograd's boxed convention: the inputs die early
        for i in plan.narrowed:
            inputs[i] = inputs[i].to(torch.float32)
        memory = [a.untyped_storage().data_ptr() if isinstance(a, torch.Tensor) else None
                  for a in inputs]
        donated: frozenset[int] = frozenset()
        if mutated:
            sharing: dict[int | None, int] = {}
            for place in memory:
                sharing[place] = sharing.get(place, 0) + 1
            donated = frozenset(i for i in mutated if sharing[memory[i]] == 1
                                and inputs[i].is_contiguous() and inputs[i]._base is None)
        start = time.perf_counter()
        results = list(donating(inputs, donated) if donating and donated else
                       run_graph(inputs))
        if device:
            metrics.time("ExecuteTime", time.perf_counter() - start)
            metrics.count({"Executions": 1, **(take_counts() if take_counts else {})})
        shared = set(memory)
        in_place = 0
        for k, i, layout_ in views:  # AOTAutograd rebuilds these from them
            if layout_ is not None:  # (else an eager run's own view)
                results[k] = inputs[i].as_strided(*layout_)
        for k, r in enumerate(results):
            if not isinstance(r, torch.Tensor) or k in viewing:  # a size for the backward,
                continue  # or a view of an input (above, or an eager run's own)
            own = owner.get(k)
            if own is not None and r is inputs[own]:  # a donated input, written in place
                in_place += 1
                results[k] = None
                continue
            place = r.untyped_storage().data_ptr()
            if own is not None and place == memory[own] and _same_place(r, inputs[own]):
                in_place += 1  # written where it belongs
                results[k] = None
            elif place in shared or (own is None and r._base is not None):
                # in an input's memory (a pass returned an input; a donated input holds
                # another input's new value, which its own update would overwrite), or
                # a view: a tensor of its own, before any input is written
                results[k] = r.clone()
        for k, root, (size, stride, offset) in aliased:  # views of one result's memory
            base = results[root]
            if base.storage_offset() or not base.is_contiguous():
                base = results[root] = base.contiguous()
            results[k] = base.as_strided(size, stride, offset)
        for i, k in plan.mutations:
            if results[k] is not None:
                inputs[i].copy_(results[k])
        if mutated:
            counters["DynamoCopiedUpdates"] += len(mutated) - in_place
            counters["DynamoInPlaceUpdates"] += in_place
        return [None if place is None else results[place[1]] if place[0] == "result"
                else inputs[place[1]] if place[0] == "input" else place[1]
                for place in layout]

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _same_place(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` (tensors of one storage) are the same words."""
    return (a.storage_offset() == b.storage_offset() and a.stride() == b.stride()
            and a.shape == b.shape)


def _eager(active: Runtime, gm: fx.GraphModule, why: str, plan: _Outputs | None = None
           ) -> Any:
    """``gm`` run eagerly (counted, with a warning); with ``plan``, the outputs (and
    mutations) of the rewritten graph are put back as :func:`_runner` does."""
    active.metrics.counters[f"DynamoFallback::{why}"] += 1
    warnings.warn(f"torch.compile(backend='mncore'): a graph runs eagerly on the host: "
                  f"{why}", stacklevel=2)
    if plan is None:
        return make_boxed_func(gm.forward)
    return _runner(lambda inputs: gm(*inputs), plan, active.metrics, device=False)


_CONVERTS = (torch.ops.prims.convert_element_type.default, aten._to_copy.default)


def _narrow_float_scalars(gm: fx.GraphModule) -> frozenset[int]:
    """The 0-d f64 inputs (a Python float Dynamo passes as a tensor once its value
    changes: a scheduler's learning rate) whose every use is a conversion to f32,
    maybe through f64: the graph then takes them in f32, which is exact, and devices
    with no f64 word (MN-Core) take the graph (its f32 step ran on the host)."""
    def to(node: fx.Node) -> torch.dtype | None:
        dtype = node.args[1] if len(node.args) > 1 else node.kwargs.get("dtype")
        return dtype if node.target in _CONVERTS and set(node.kwargs) <= {"dtype"} else None

    def ends(node: fx.Node) -> list[fx.Node] | None:  # the f32 conversions it reaches
        found: list[fx.Node] = []
        for user in node.users:
            dtype = to(user)
            if dtype == torch.float32:
                found.append(user)
            elif dtype != torch.float64 or (more := ends(user)) is None:
                return None
            else:
                found += more
        return found

    narrowed = set()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        val = node.meta.get("val")
        if not (isinstance(val, torch.Tensor) and val.dtype == torch.float64 and not val.ndim
                and node.users and (found := ends(node))):
            continue
        for end in found:
            end.replace_all_uses_with(node)
        node.meta["val"] = val.to(torch.float32)
        narrowed.add(i)
    if narrowed:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return frozenset(narrowed)


def _rewrite_gradient_copies(gm: fx.GraphModule) -> None:
    """Rewrite ``copy(empty_permuted(...), src)`` (Dynamo's gradient-accumulation form)
    as ``clone(src)``."""
    graph = gm.graph
    for node in list(graph.nodes):
        target = node.args[0] if node.args else None
        if node.target is aten.copy.default and isinstance(target, fx.Node) and (
                target.target is aten.empty_permuted.default):
            with graph.inserting_before(node):
                clone = graph.call_function(aten.clone.default, (node.args[1],))
            clone.meta = dict(node.meta)
            node.replace_all_uses_with(clone)
            graph.erase_node(node)
