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

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import unset_fake_temporarily

from mncore_ir.frontends.fx import DECOMPOSITIONS, HANDLERS
from mncore_ir.frontends.lazy_runtime import Runtime, runtime

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
    backward and inference graphs compiled for the runtime's device."""
    from torch._dynamo.backends.common import aot_autograd

    active = runtime()  # a LazyError naming torch_mncore.init() when there is none
    _count_guard_failures(active)
    active.metrics.counters["DynamoFrames"] += 1
    backend = aot_autograd(fw_compiler=_compiler(active, "forward"),
                           bw_compiler=_compiler(active, "backward"),
                           inference_compiler=_compiler(active, "inference"),
                           decompositions=_decompositions())
    return backend(gm, example_inputs, **kwargs)


def _decompositions() -> dict[Any, Any]:
    """The importer's core-ATen decompositions, and batch norm's: AOTAutograd hands
    over its functional forms (``_native_batch_norm_legit_functional``, whose running
    statistics are outputs), which the lazy path never records (it decomposes batch norm
    while tracing) and the importer has no handler for."""
    from torch._decomp import get_decompositions

    batch_norm = get_decompositions([
        aten._native_batch_norm_legit_functional, aten._native_batch_norm_legit,
        aten._native_batch_norm_legit_no_training, aten.native_batch_norm])
    return {**DECOMPOSITIONS, **{op: f for op, f in batch_norm.items() if op not in HANDLERS}}


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
            return _eager(active, gm, "symbolic shapes (use torch.compile(dynamic=False))")
        kept, count = _without_none_outputs(gm)
        try:
            # AOTAutograd calls the backend with its fake mode on: the executable's
            # constant tensors must be real ones
            with unset_fake_temporarily():
                compiled = active.compiler.compile_fx(gm, example_inputs, f"dynamo_{kind}")
        except Exception as error:
            why = str(error).splitlines()[0] if str(error) else type(error).__name__
            return _eager(active, gm, why, kept, count)
        active.metrics.counters["DynamoCompiles"] += 1
        run_graph = compiled.run

        def run(args: list[Any]) -> list[Any]:
            inputs = list(args)
            args.clear()  # AOTAutograd's boxed convention: the inputs die early
            results: list[Any] = [None] * count
            memory = {a.untyped_storage().data_ptr() for a in inputs
                      if isinstance(a, torch.Tensor)}
            for i, r in zip(kept, run_graph(inputs), strict=True):
                if r.untyped_storage().data_ptr() in memory or r._base is not None:
                    r = r.clone()  # a pass returned an input, or a view: a new tensor
                results[i] = r
            return results

        run._boxed_call = True  # type: ignore[attr-defined]
        return run

    return compile_graph


def _eager(active: Runtime, gm: fx.GraphModule, why: str, kept: Sequence[int] | None = None,
           count: int = 0) -> Any:
    """``gm`` run eagerly (counted, with a warning); with ``kept``, its outputs are those
    at these positions of ``count`` (the ``None`` outputs put back)."""
    active.metrics.counters[f"DynamoFallback::{why}"] += 1
    warnings.warn(f"torch.compile(backend='mncore'): a graph runs eagerly on the host: "
                  f"{why}", stacklevel=2)
    if kept is None:
        return make_boxed_func(gm.forward)

    def run(*args: Any) -> list[Any]:
        results: list[Any] = [None] * count
        for i, r in zip(kept, gm(*args), strict=True):
            results[i] = r
        return results

    return make_boxed_func(run)


def _without_none_outputs(gm: fx.GraphModule) -> tuple[list[int], int]:
    """Drop the ``None`` outputs of a backward graph (gradients of inputs that need
    none), which the importer cannot type; rewrite ``copy(empty_permuted(...), src)``
    (Dynamo's gradient-accumulation form) as ``clone(src)``. Returns the kept output
    positions and the output count."""
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
    output = graph.output_node()
    outs = list(output.args[0])
    kept = [i for i, o in enumerate(outs) if o is not None]
    output.args = (tuple(outs[i] for i in kept),)
    graph.eliminate_dead_code()
    gm.recompile()
    return kept, len(outs)
