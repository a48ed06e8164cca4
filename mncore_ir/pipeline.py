"""The Python compile API: named pipelines and applying pass pipelines to modules."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from mncore_ir.registry import get_all_dialects, get_all_passes

#: The graph-level pipeline: simplify, expand composites, simplify again, fuse.
GRAPH_PIPELINE = "canonicalize,cse,graph-decompose,canonicalize,cse,dce,graph-fuse-elementwise"


def make_context() -> Context:
    """A context with every mncore-ir dialect registered (lazily)."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def apply_pipeline(module: ModuleOp, spec: str, ctx: Context | None = None,
                   verify: bool = True) -> ModuleOp:
    """Run ``spec`` (``mncore-opt -p`` syntax) on ``module`` in place, verifying after
    each pass when ``verify``."""

    def callback(_prev: object, mod: ModuleOp, _next: object) -> None:
        if verify:
            mod.verify()

    PassPipeline.parse_spec(get_all_passes(), spec, callback).apply(ctx or make_context(), module)
    return module
