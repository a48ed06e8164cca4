"""``assume_pure(fn)``, as torch_xla's: ``fn`` is traced once per input signature into a
template (``lazy_templates``), and every later call on lazy tensors records one node,
not ``fn``'s ops. Its gradient is a second template, the vector-Jacobian product of
``fn`` (it recomputes ``fn``'s forward, which the pipeline's CSE may merge with the
forward node's ops when both are in one step).

``fn`` must be a function of its arguments: no reads of values, no random numbers, no
writes into its inputs, no state read from elsewhere (a global changed between calls is
not seen). What a template cannot stand for (see ``lazy_templates``) runs ``fn`` as
usual, op by op."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.lazy_runtime import Runtime
from mncore_ir.frontends.lazy_templates import Template, capture, signature
from mncore_ir.frontends.lazy_tensor import LazyTensor, Value

_MISSING = object()
Arguments = tuple[pytree.TreeSpec, tuple[bool, ...], tuple[Any, ...]]
"""How to rebuild a call's arguments from its tensors: the tree, which leaves are
tensors, and the other leaves."""


class _Pure:
    """One decorated function: its templates, by kind and call signature, and the
    structure of its outputs for each forward one."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = f"{fn.__module__}.{getattr(fn, '__qualname__', repr(fn))}"
        self.templates: dict[Any, Template | None] = {}
        self.structures: dict[Any, pytree.TreeSpec] = {}
        self.structure: pytree.TreeSpec | None = None  # of the latest call's outputs

    def call(self, arguments: Arguments, tensors: tuple[Any, ...]) -> tuple[torch.Tensor, ...]:
        """``fn`` on the arguments rebuilt around ``tensors``: its output leaves."""
        tree, mask, constants = arguments
        ti, ci = iter(tensors), iter(constants)
        args, kwargs = pytree.tree_unflatten(
            [next(ti) if is_tensor else next(ci) for is_tensor in mask], tree)
        leaves, self.structure = pytree.tree_flatten(self.fn(*args, **kwargs))
        if not all(isinstance(x, torch.Tensor) for x in leaves):
            raise TypeError(f"assume_pure({self.name}): the function must return tensors, "
                            "or a structure of them")
        return tuple(leaves)

    def template(self, runtime: Runtime, kind: str, run: Callable[..., Any],
                 tensors: tuple[Any, ...], key: Any) -> tuple[Template | None, list[Value]]:
        """The template of ``run`` for these tensors (captured on a first call), and the
        tensors' values to record it with."""
        called = signature(tensors, {})
        assert called is not None  # every tensor is lazy: the wrapper checked
        full_key = (kind, key, called[0])
        template = self.templates.get(full_key, _MISSING)
        if template is _MISSING:
            template = capture(runtime, f"{self.name}:{kind}", run, tensors, {}, called[1])
            runtime.metrics.counters["PureCaptures" if template is not None
                                     else f"NotPure::{self.name}"] += 1
            self.templates[full_key] = template
            if kind == "forward":
                self.structures[full_key] = self.structure
        if kind == "forward" and template is not None:
            self.structure = self.structures[full_key]
        return template, called[1]  # type: ignore[return-value]


class _PureFunction(torch.autograd.Function):
    """A call recorded as its forward template, differentiated by its backward one."""

    @staticmethod
    def forward(ctx: Any, pure: _Pure, arguments: Arguments, *tensors: torch.Tensor) -> Any:
        runtime = _runtime()
        ctx.pure, ctx.arguments = pure, arguments
        ctx.save_for_backward(*tensors)
        run = functools.partial(_star, pure.call, arguments)
        template, values = pure.template(runtime, "forward", run, tensors,
                                         _constant_key(arguments))
        if template is None:
            return pure.call(arguments, tensors)
        return tuple(template.record(runtime, values))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:
        tensors = ctx.saved_tensors
        needs = tuple(ctx.needs_input_grad[2:])
        vjp = functools.partial(_vjp, ctx.pure, ctx.arguments, len(tensors), needs)
        inputs = (*tensors, *grads)
        if torch.is_grad_enabled():  # create_graph: the gradients are differentiated again
            found = _vjp(ctx.pure, ctx.arguments, len(tensors), needs, *inputs,
                         create_graph=True)
        elif all(isinstance(t, LazyTensor) for t in inputs):
            runtime = _runtime()
            template, values = ctx.pure.template(
                runtime, "backward", vjp, inputs, (_constant_key(ctx.arguments), needs))
            found = template.record(runtime, values) if template is not None else vjp(*inputs)
        else:
            found = vjp(*inputs)
        it = iter(found)
        return (None, None, *[next(it) if need else None for need in needs])


def _runtime() -> Runtime:
    runtime = lt.active()
    assert isinstance(runtime, Runtime)
    return runtime


def _constant_key(arguments: Arguments) -> Any:
    tree, mask, constants = arguments
    return (tree, mask, lt.meta_key(constants))


def _star(call: Callable[[Arguments, tuple[Any, ...]], Any], arguments: Arguments,
          *tensors: Any) -> Any:
    return call(arguments, tensors)


def _vjp(pure: _Pure, arguments: Arguments, count: int, needs: tuple[bool, ...],
         *tensors_and_grads: torch.Tensor, create_graph: bool = False
         ) -> tuple[torch.Tensor, ...]:
    """The gradients of ``fn``'s outputs with respect to its inputs that need one, given
    the outputs' gradients: ``fn`` recomputed under autograd (``create_graph``: from the
    inputs themselves, so that the gradients can be differentiated again; a template
    of the backward could not be)."""
    tensors, grads = tensors_and_grads[:count], tensors_and_grads[count:]
    with torch.enable_grad():
        inputs = tuple(t if create_graph and need else t.detach().requires_grad_(need)
                       for t, need in zip(tensors, needs, strict=True))
        outs = pure.call(arguments, inputs)
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True) if o.requires_grad]
        wanted = [x for x, need in zip(inputs, needs, strict=True) if need]
        found = (torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                     allow_unused=True, create_graph=create_graph)
                 if pairs else [None] * len(wanted))
    return tuple(g if g is not None else torch.zeros_like(x)
                 for g, x in zip(found, wanted, strict=True))


#: The non-tensor arguments a template is keyed by: values, equal when their contents
#: are (containers are flattened into their leaves first).
_VALUES = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device,
           torch.memory_format, torch.layout, enum.Enum, type(Ellipsis))


def assume_pure(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` traced once per input signature (shapes, dtypes, non-tensor arguments)
    and recorded as one node at each later call on lazy tensors; differentiable.
    Called on anything else (host tensors, no runtime, a non-tensor argument that is
    not a plain value such as an object, a slice or an array), ``fn`` runs as it is."""
    pure = _Pure(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, tree = pytree.tree_flatten((args, kwargs))
        mask = tuple(isinstance(x, torch.Tensor) for x in leaves)
        tensors = tuple(x for x in leaves if isinstance(x, torch.Tensor))
        runtime = lt.current()
        if not tensors or not all(type(t) is LazyTensor or isinstance(t, LazyTensor)
                                  for t in tensors) or not isinstance(runtime, Runtime):
            return fn(*args, **kwargs)
        constants = tuple(x for x in leaves if not isinstance(x, torch.Tensor))
        if not all(isinstance(x, _VALUES) for x in constants):
            # an object's contents may change between calls without changing its key
            # (its identity), and an unhashable one has none: no template stands for it
            runtime.metrics.counters[f"NotPure::{pure.name}"] += 1
            return fn(*args, **kwargs)
        outs = _PureFunction.apply(pure, (tree, mask, constants), *tensors)
        assert pure.structure is not None
        return pytree.tree_unflatten(list(outs), pure.structure)

    return wrapper
