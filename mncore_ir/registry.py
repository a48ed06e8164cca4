"""What the tools know: dialects, passes, targets, frontends, as lazy factories."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.utils.frontend import Frontend
from xdsl.utils.target import Target


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def graph() -> Dialect:
        from mncore_ir.dialects.graph import Graph

        return Graph

    def task() -> Dialect:
        from mncore_ir.dialects.task import Task

        return Task

    def mncore() -> Dialect:
        from mncore_ir.dialects.mncore import MNCore

        return MNCore

    def builtin() -> Dialect:
        from xdsl.dialects.builtin import Builtin

        return Builtin

    def func() -> Dialect:
        from xdsl.dialects.func import Func

        return Func

    return {"builtin": builtin, "func": func, "graph": graph, "task": task, "mncore": mncore}


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def canonicalize() -> type[ModulePass]:
        from xdsl.transforms.canonicalize import CanonicalizePass

        return CanonicalizePass

    def cse() -> type[ModulePass]:
        from xdsl.transforms.common_subexpression_elimination import (
            CommonSubexpressionElimination,
        )

        return CommonSubexpressionElimination

    def dce() -> type[ModulePass]:
        from xdsl.transforms.dead_code_elimination import DeadCodeElimination

        return DeadCodeElimination

    def graph_decompose() -> type[ModulePass]:
        from mncore_ir.transforms.graph_decompose import GraphDecomposePass

        return GraphDecomposePass

    def graph_fuse_elementwise() -> type[ModulePass]:
        from mncore_ir.transforms.graph_fuse_elementwise import GraphFuseElementwisePass

        return GraphFuseElementwisePass

    def graph_unroll_steps() -> type[ModulePass]:
        from mncore_ir.transforms.graph_unroll_steps import GraphUnrollStepsPass

        return GraphUnrollStepsPass

    def convert_graph_to_task() -> type[ModulePass]:
        from mncore_ir.transforms.convert_graph_to_task import ConvertGraphToTaskPass

        return ConvertGraphToTaskPass

    def convert_task_to_mncore() -> type[ModulePass]:
        from mncore_ir.transforms.convert_task_to_mncore import ConvertTaskToMNCorePass

        return ConvertTaskToMNCorePass

    def mncore_forward_stores() -> type[ModulePass]:
        from mncore_ir.transforms.mncore_forward_stores import MNCoreForwardStoresPass

        return MNCoreForwardStoresPass

    def mncore_expand_repeats() -> type[ModulePass]:
        from mncore_ir.transforms.mncore_expand_repeats import MNCoreExpandRepeatsPass

        return MNCoreExpandRepeatsPass

    def mncore_schedule() -> type[ModulePass]:
        from mncore_ir.transforms.mncore_schedule import MNCoreSchedulePass

        return MNCoreSchedulePass

    return {
        "canonicalize": canonicalize,
        "convert-graph-to-task": convert_graph_to_task,
        "convert-task-to-mncore": convert_task_to_mncore,
        "cse": cse,
        "dce": dce,
        "graph-decompose": graph_decompose,
        "graph-fuse-elementwise": graph_fuse_elementwise,
        "graph-unroll-steps": graph_unroll_steps,
        "mncore-expand-repeats": mncore_expand_repeats,
        "mncore-forward-stores": mncore_forward_stores,
        "mncore-schedule": mncore_schedule,
    }


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    def mlir() -> type[Target]:
        from mncore_ir.targets.mlir_text import ExactMLIRTarget

        return ExactMLIRTarget

    def dot() -> type[Target]:
        from mncore_ir.targets.dot import GraphDotTarget

        return GraphDotTarget

    def triton() -> type[Target]:
        from mncore_ir.targets.triton_megakernel import TritonTarget

        return TritonTarget

    def mncore_asm() -> type[Target]:
        from mncore_ir.targets.mncore_asm import MNCoreAsmTarget

        return MNCoreAsmTarget

    return {"mlir": mlir, "dot": dot, "triton": triton, "mncore-asm": mncore_asm}


def get_all_frontends() -> dict[str, Callable[[], type[Frontend]]]:
    def mlir() -> type[Frontend]:
        from mncore_ir.parsing import LocatingMLIRFrontend

        return LocatingMLIRFrontend

    return {"mlir": mlir}
