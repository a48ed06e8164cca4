"""``-t dot``: Graphviz drawings of each graph-level function (ops as boxes, values as
edges labelled with their tensor types) and each task kernel (tasks as boxes labelled
with their body and output tiles, events as points between signallers and waiters)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.utils.target import Target

from mncore_ir.dialects.task import KernelOp, task_label


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short_type(value: SSAValue) -> str:
    return str(value.type).removeprefix("tensor<").removesuffix(">")


def function_to_dot(func: FuncOp, out: IO[str], index: int) -> None:
    name = func.sym_name.data
    out.write(f"  subgraph cluster_{index} {{\n    label={_quote('@' + name)};\n")
    ids: dict[Operation | BlockArgument, str] = {}
    for i, arg in enumerate(func.body.block.args):
        ids[arg] = f"f{index}_arg{i}"
        label = f"%{arg.name_hint or i}\n{_short_type(arg)}"
        out.write(f"    {ids[arg]} [shape=ellipse, label={_quote(label)}];\n")
    for j, op in enumerate(func.body.block.ops):
        ids[op] = f"f{index}_op{j}"
        label = op.name.removeprefix("graph.")
        if op.results and op.results[0].name_hint:
            label = f"%{op.results[0].name_hint} = {label}"
        out.write(f"    {ids[op]} [shape=box, label={_quote(label)}];\n")
        for operand in op.operands:
            source = operand.owner if isinstance(operand.owner, Operation) else operand
            if source in ids:
                out.write(f"    {ids[source]} -> {ids[op]} "
                          f"[label={_quote(_short_type(operand))}];\n")
    out.write("  }\n")


def kernel_to_dot(kernel: KernelOp, out: IO[str], index: int) -> None:
    out.write(f"  subgraph cluster_{index} {{\n    label={_quote('@' + kernel.sym_name.data)};\n")
    events: dict[SSAValue, str] = {}
    for j, task in enumerate(kernel.tasks()):
        name = f"k{index}_t{j}"
        tiles = " ".join(f"[{tile}]" for _, tile in task.writes())
        label = _quote(f"{j}: @{task_label(task)}" + "\n" + tiles)
        out.write(f"    {name} [shape=box, label={label}];\n")
        for event in task.waits:
            out.write(f"    {events[event]} -> {name};\n")
        if task.signal is not None:
            if task.signal not in events:
                events[task.signal] = f"k{index}_e{len(events)}"
                out.write(f"    {events[task.signal]} [shape=point];\n")
            out.write(f"    {name} -> {events[task.signal]};\n")
    out.write("  }\n")


@dataclass(frozen=True)
class GraphDotTarget(Target):
    """Graphviz ``digraph`` of every ``func.func`` and ``task.kernel`` in the module."""

    name = "dot"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write("digraph mncore {\n  node [fontname=monospace];\n")
        for i, op in enumerate(module.ops):
            if isinstance(op, FuncOp):
                function_to_dot(op, output, i)
            elif isinstance(op, KernelOp):
                kernel_to_dot(op, output, i)
        output.write("}\n")
