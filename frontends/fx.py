"""Capture and import: a Python training step becomes a functional core-ATen FX graph
(``capture``), and such a graph a ``graph`` dialect function (``import_fx``).

``capture(fn, *args)`` traces with ``make_fx``; ``import_fx(gm, example_inputs)`` runs
the importer (:mod:`~mncore_ir.frontends.fx_importer`) with the ATen table
(:mod:`~mncore_ir.frontends.aten_handlers`, and
:mod:`~mncore_ir.frontends.aten_expansions` and ``aten_windows`` for ops with no graph
op of their own),
one node to one op or a short fixed expansion. An ATen op without a mapping is an
:class:`UnsupportedOpError` naming the op and the user's source line.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch import fx
from torch._decomp import core_aten_decompositions, get_decompositions
from torch.func import functionalize
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from mncore_ir.frontends import (  # noqa: F401 (their handlers)
    aten_collectives,
    aten_expansions,
    aten_linalg,
    aten_math,
    aten_order,
    aten_scans,
    aten_scatter,
    aten_special,
    aten_views,
    aten_windows,
)
from mncore_ir.frontends.aten_handlers import HANDLERS
from mncore_ir.frontends.corrected_decompositions import CORRECTED
from mncore_ir.frontends.fx_importer import (
    FxImporter,
    FxImportError,
    UnsupportedOpError,
    describe_position,
    source_position,
    unsupported,
    user_frame,
)
from mncore_ir.frontends.resampling_decompositions import RESAMPLING_DECOMPOSITIONS
from mncore_ir.frontends.rnn_decompositions import RNN_DECOMPOSITIONS

__all__ = ["HANDLERS", "FxImportError", "FxImporter", "UnsupportedOpError", "capture",
           "describe_position", "import_captured", "import_fx", "source_position",
           "unsupported", "user_frame"]

aten = torch.ops.aten

#: Composite ops kept whole at capture time: ``graph-decompose`` expands them later,
#: and later levels may give them dedicated kernels; the importer expands
#: ``index_add``/``index_copy`` itself (torch's decompositions are index_puts, which
#: count a negative index from the end where these ops refuse it), and ``index_fill``
#: (whose decomposition is an ``index_copy``, though it counts from the end).
KEPT_COMPOSITES = (
    aten._softmax_backward_data.default,
    aten._log_softmax_backward_data.default,
    aten.gelu_backward.default,
    aten.native_layer_norm_backward.default,
    aten.index_add.default,
    aten.index_copy.default,
    aten.index_fill.int_Scalar,
    aten.index_fill.int_Tensor,
)

#: torch's decompositions meant for export only: the CPU flash attention's gives the
#: attention matrix as its second output, where the op gives the logsumexp its
#: backward reads (gradients through it came out wrong). Attention is traced as its
#: math form instead (:func:`math_attention`).
EXPORT_ONLY = (aten._scaled_dot_product_flash_attention_for_cpu.default,)


def math_attention() -> contextlib.AbstractContextManager[None]:
    """While tracing for the device: ``scaled_dot_product_attention`` as its math form
    (products and a softmax, which autograd differentiates), not the host's fused CPU
    kernel, whose forward and backward are ops of their own."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


#: The decomposition table used by :func:`capture`: torch's core-ATen decompositions
#: without :data:`KEPT_COMPOSITES`; group norm (with its backward) and ``repeat``, core
#: ATen ops that torch decomposes but the importer has no handler for (``nn.GroupNorm``
#: and ``nn.InstanceNorm2d`` were refused); and the fused RNN cells and resampling
#: backward kernels torch has none for. Batch norm is decomposed before
#: functionalization (torch's ``native_batch_norm`` schema hides its running-stat
#: mutation).
DECOMPOSITIONS = {**{k: v for k, v in core_aten_decompositions().items()
                     if k not in KEPT_COMPOSITES and k not in EXPORT_ONLY},
                  **get_decompositions([aten.repeat, aten.native_group_norm,
                                        aten.native_group_norm_backward]),
                  **CORRECTED,
                  **RNN_DECOMPOSITIONS,
                  **RESAMPLING_DECOMPOSITIONS}
HIDDEN_MUTATION_DECOMPOSITIONS = get_decompositions(
    [aten.native_batch_norm, aten._native_batch_norm_legit, aten._batch_norm_with_update])


@dataclass
class CapturedGraph:
    """A functional core-ATen graph of a Python callable, with the names of its
    flat inputs and outputs. Outputs are the callable's result followed by the new
    values of every input tensor the callable mutated."""

    gm: fx.GraphModule
    example_inputs: list[torch.Tensor]
    input_names: list[str]
    output_names: list[str]
    mutated_inputs: list[int] = field(default_factory=list)


def _names(tree: Any, prefix: str) -> list[str]:
    leaves, _ = pytree.tree_flatten_with_path(tree)
    return [prefix + pytree.keystr(path) for path, _ in leaves]


def capture(fn: Callable[..., Any], *args: Any,
            arg_names: Sequence[str] | None = None) -> CapturedGraph:
    """Trace ``fn(*args)`` (which may use autograd and mutate its tensor arguments)
    into a functional core-ATen FX graph over the flattened tensors of ``args``.

    Two passes: ``make_fx`` records autograd and in-place ops as ATen; retracing that
    graph under ``functionalize`` with :data:`DECOMPOSITIONS` gives core ATen with no
    mutation. Nodes keep the user's stack trace for error messages.
    """
    flat, spec = pytree.tree_flatten(args)
    result_count = [0]
    _anchor_user_code(fn)

    def step(*flat_args: torch.Tensor) -> tuple[Any, ...]:
        copies = [a.clone() for a in flat_args]
        out = pytree.tree_leaves(fn(*pytree.tree_unflatten(copies, spec)))
        result_count[0] = len(out)
        return (*out, *copies)

    with math_attention():
        first = make_fx(step, decomposition_table=HIDDEN_MUTATION_DECOMPOSITIONS,
                        tracing_mode="fake", record_stack_traces=True)(*flat)

    def replay(*flat_args: torch.Tensor) -> Any:
        with fx_traceback.preserve_node_meta():
            return fx.Interpreter(first).run(*flat_args)

    gm = make_fx(functionalize(replay, remove="mutations_and_views"),
                 decomposition_table=DECOMPOSITIONS, tracing_mode="fake")(*flat)
    mutated = _keep_mutated_outputs(gm, result_count[0])
    if arg_names is None:
        params = list(inspect.signature(fn).parameters)
        arg_names = params if len(params) == len(args) else [f"arg{i}" for i in range(len(args))]
    input_names = [re.sub(r"[\[\]'.]+", ".", name).strip(".")
                   for i, arg in enumerate(args) for name in _names(arg, arg_names[i])]
    n = result_count[0]
    out_names = [f"result{i}" if n > 1 else "result" for i in range(n)]
    out_names += [f"new.{input_names[i]}" for i in mutated]
    return CapturedGraph(gm, list(flat), input_names, out_names, list(mutated))


def _anchor_user_code(fn: Callable[..., Any]) -> None:
    """Make ``make_fx`` keep stack frames of ``fn`` and of the functions defined beside
    it: with ``record_stack_traces`` it keeps only frames named ``forward`` and
    registered anchors, so a plain function's ops would have no source line."""
    register = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    code = getattr(target, "__code__", None)
    if register is None or code is None:
        return
    register(target)
    for value in getattr(target, "__globals__", {}).values():
        candidates = [value, *vars(value).values()] if inspect.isclass(value) else [value]
        for c in candidates:
            if inspect.isfunction(c) and c.__code__.co_filename == code.co_filename:
                register(c)


_IDENTITY_OPS = (aten.clone.default, aten.detach_copy.default, aten.detach.default,
                 aten.alias.default, aten.alias_copy.default)


def _keep_mutated_outputs(gm: fx.GraphModule, result_count: int) -> list[int]:
    """Drop the outputs that return an input unchanged; the indices of the others."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = gm.graph.output_node()
    outs = pytree.tree_leaves(output.args[0])

    def root(node: Any) -> Any:
        while isinstance(node, fx.Node) and node.target in _IDENTITY_OPS:
            node = node.args[0]
        return node

    mutated = [i for i, o in enumerate(outs[result_count:]) if root(o) is not placeholders[i]]
    output.args = (tuple(outs[:result_count] + [outs[result_count + i] for i in mutated]),)
    gm.graph._codegen = fx.graph.CodeGen()  # flat outputs now: drop make_fx's pytree codegen
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return mutated


def import_fx(gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor],
              func_name: str = "main", arg_names: Sequence[str] | None = None) -> ModuleOp:
    """Import ``gm`` (functional core ATen) as ``func.func @func_name`` in a new module."""
    func = FxImporter(gm, example_inputs, func_name, arg_names, HANDLERS).run()
    return ModuleOp([func])


def import_captured(captured: CapturedGraph, func_name: str = "main") -> ModuleOp:
    return import_fx(captured.gm, captured.example_inputs, func_name, captured.input_names)
