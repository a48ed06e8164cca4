"""One ``task.kernel`` as one ``mncore.program``: every buffer placed in DRAM (inputs,
outputs and constants for the whole program, intermediates shared by liveness, then
the constant pool), and each task lowered, in kernel order, by the kernel for the op
it computes (dispatched on the op's class: ``task.computation``)."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float64Type,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import Block, Operation, Region

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.dialects.mncore_machines import Machine
from mncore_ir.transforms.convert_task_to_mncore import lanes, matmul, scalar, windows
from mncore_ir.transforms.convert_task_to_mncore.common import (
    COPIES,
    REDUCTIONS,
    MNCoreConversionError,
    Slot,
    element,
    op_label,
    reduced_dims,
    shape,
)
from mncore_ir.transforms.convert_task_to_mncore.emitter import MAX_INSTRUCTIONS, Emitter
from mncore_ir.transforms.convert_task_to_mncore.intervals import Intervals
from mncore_ir.transforms.convert_task_to_mncore.matmul_epilogue import (
    Epilogue,
    find_epilogues,
    fits_in_grf,
    next_to_their_matmuls,
)
from mncore_ir.transforms.convert_task_to_mncore.packing import pack
from mncore_ir.transforms.convert_task_to_mncore.views import (
    find_in_place,
    find_views,
    is_dense,
)

#: The graph ops whose tasks are lowered (besides pointwise ``task.body``s).
LOWERED_OPS: tuple[type[g.GraphOp], ...] = (
    *g.MATMULS, *COPIES, *REDUCTIONS, g.GatherOp, g.ScatterOp, g.EmbeddingOp, g.IndexPutOp,
    g.Conv2dOp, g.Conv2dBackwardOp, g.MaxPool2dOp, g.MaxPool2dBackwardOp)
#: The task kinds lowered, as messages name them.
LOWERED = ("elementwise", *(op_label(op) for op in LOWERED_OPS))
#: Composites that graph-decompose expands into ops that are lowered.
_DECOMPOSED = (g.RowOp, g.RowBackwardOp, g.LayerNormOp)


def _check_whole_reduction(task: t.TaskOp, op: g.ReduceOp) -> None:
    """The lane kernels reduce whole dimensions: refuse a split reduction's chunk."""
    ((value, region),) = task.reads()
    dims, _ = reduced_dims(task, op)
    if any(region.sizes[d] != shape(value)[d] for d in dims):
        raise MNCoreConversionError(
            f"convert-task-to-mncore: {op.name} task reads a chunk [{region}] of its reduced "
            "dimensions (a split reduction: convert-graph-to-task{target=mncore} makes "
            "whole ones)", task)


def build_program(kernel: t.KernelOp, machine: Machine, matmul_kernel: str = "auto",
                  max_instructions: int = MAX_INSTRUCTIONS, use_views: bool = True,
                  resident: bool = True, packed: bool = True, epilogues: bool = True
                  ) -> m.ProgramOp:
    """The (unscheduled) program of ``kernel``: instructions in their order of meaning,
    numbered one per step until ``mncore-schedule`` places them. ``use_views``:
    reshapes and contiguous slices of intermediates as views (``views``), not copies;
    ``resident``: waves read again from LM (``residents``); ``packed``: small tasks of
    one pointwise body share waves (``packing``); ``epilogues``: a matmul's cheap
    pointwise consumer runs on its accumulators (``matmul_epilogue``)."""
    bodies = kernel.bodies()
    tasks = kernel.tasks()
    computed = [t.computation(task, bodies) for task in tasks]
    for task, op in zip(tasks, computed, strict=True):
        if not isinstance(op, (t.BodyOp, *LOWERED_OPS)):
            hint = (" (run graph-decompose before convert-graph-to-task: it expands row ops "
                    "into elementwise ops and reductions)" if isinstance(op, _DECOMPOSED)
                    else "")
            label = op_label(op) if isinstance(op, g.GraphOp) else t.task_label(task)
            raise MNCoreConversionError(
                f"convert-task-to-mncore: task kind {label!r} is not lowered{hint}; "
                f"lowered kinds: {', '.join(LOWERED)}", op or task)
        if isinstance(op, g.ReduceOp):
            _check_whole_reduction(task, op)
    ops = kernel.body.block.ops
    fixed = [*kernel.inputs, *kernel.outputs,
             *(op.result for op in ops if isinstance(op, t.ConstantOp))]
    buffers = [op.result for op in ops if isinstance(op, t.BufferOp)]
    for v in [*fixed, *buffers]:
        users = (c for task, c in zip(tasks, computed, strict=True) if v in task.operands)
        if (words := math.prod(shape(v))) > machine.dram_words:  # before any analysis
            name = f"%{v.name_hint}" if v.name_hint else f"a {v.type}"
            raise MNCoreConversionError(
                f"convert-task-to-mncore: buffer {name} ({words} words) does not fit in "
                f"dram ({machine.dram_words} words on {machine.name})",
                v.owner if isinstance(v.owner, t.BufferOp) else next(users, None))
        if element(v) != f32 and not isinstance(element(v), IntegerType):
            why = (" (an f64 value: a float64 tensor, or the exact quotient of an integer "
                   "division, which the importer computes in f64)"
                   if element(v) == Float64Type() else "")
            raise MNCoreConversionError(f"convert-task-to-mncore: {v.type} has no word "
                                        f"form (f32, integers and booleans do){why}",
                                        next(users, None))
    # tasks of at most one L1B's lanes of a wave (which computes on every PE) packed
    order, found = pack(tasks, computed, 4 * machine.pes_per_l1b) if packed else (
        list(range(len(tasks))), {})
    fused: dict[int, Epilogue] = {}
    if epilogues:  # a matmul's consumer moves next to it, before DRAM is shared out
        grouped = {j for members in found.values() for j in members}
        fused = find_epilogues([tasks[j] for j in order], [computed[j] for j in order],
                               set(buffers), {p for p, j in enumerate(order) if j in grouped})
        probe = Emitter(machine, max_instructions, resident)  # its fixed areas only
        fused = {p: ep for p, ep in fused.items() if fits_in_grf(probe, ep)
                 and matmul.epilogue_fits(probe, tasks[order[p]], matmul_kernel)}
        order, fused = next_to_their_matmuls(order, fused)
    position = {j: i for i, j in enumerate(order)}
    groups = {position[last]: [position[j] for j in members]
              for last, members in found.items()}  # by the new place of the last member
    members = {i for group in groups.values() for i in group}
    tasks, computed = [tasks[j] for j in order], [computed[j] for j in order]
    e = Emitter(machine, max_instructions, resident)
    for v in fixed:
        e.place(v, math.prod(shape(v)))
    intervals = Intervals(kernel)
    in_place, done = find_in_place(tasks, computed, buffers) if use_views else ({}, set())
    views = find_views(tasks, computed, buffers, in_place) if use_views else {}
    roots = {view.root for view in views.values()}
    fused = {i: ep for i, ep in fused.items() if ep.c not in views and ep.c not in roots}
    by_consumer = {id(ep.task): i for i, ep in fused.items()}
    consumed: set[int] = set()  # the matmuls whose epilogue ran
    e.allocate(buffers, tasks, views)
    e.pool_base = e.size
    placed: list[Operation] = [*tensors(e, kernel)]
    placed += [m.BufferOp.build(  # where the intermediates live, and how
        f"buffer{i}", m.ref("dram", e.dram[v]), math.prod(shape(v)),
        (shape(v), views[v].strides) if v in views and not is_dense(shape(v), views[v].strides)
        else None) for i, v in enumerate(buffers)]
    for i, (task, op) in enumerate(zip(tasks, computed, strict=True)):
        assert isinstance(op, t.BodyOp | g.GraphOp)
        try:
            if i in groups:
                group = [(tasks[k], computed[k]) for k in groups[i]]
                ranges = [[intervals.of(*read) for read in member.reads()]
                          for member, _ in group]  # integer arguments' (None: f32)
                if all(r == ranges[0] for r in ranges):
                    for member in group:
                        intervals.task(*member)
                    lanes.pointwise_packed(e, group, intervals.body(*group[0]))
                else:  # integer arguments of unlike ranges: each on its own
                    for member in group:
                        lower_lanes(e, intervals, *member)
            elif i in members:
                continue  # lowered with its group, at the place of its last member
            elif i in done or (task.outs[0] in views and task.outs[0] not in in_place):
                # a copy whose words are already there
                intervals.task(task, op)
            elif id(task) in by_consumer and by_consumer[id(task)] in consumed:
                continue  # computed as its matmul's epilogue
            elif isinstance(op, g.MATMULS):
                intervals.task(task, op)  # refuses integers
                epilogue = fused.get(i)
                if epilogue is not None:
                    epilogue.known = intervals.body(epilogue.task, epilogue.body)
                if matmul.lower_matmul(e, task, op, matmul_kernel, epilogue):
                    intervals.task(epilogue.task, epilogue.body)  # type: ignore[union-attr]
                    consumed.add(i)
            else:
                lower_lanes(e, intervals, task, op)
        except MNCoreConversionError as error:
            if error.op is None:  # the emitter knows no task: blame this one's op
                error.op = op
            raise
    if e.pool:
        typ = TensorType(f32, [len(e.pool)])
        placed.append(m.TensorOp.create(properties={
            "sym_name": StringAttr("constant_pool"), "role": StringAttr("constant"),
            "at": m.ref("dram", e.pool_base),
            "value": DenseIntOrFPElementsAttr.from_list(
                typ, np.array(e.pool, np.float32).tolist()), "type": typ}))
    block = Block([*placed, *e.finished()])
    return m.ProgramOp(kernel.sym_name.data, machine.name, Region(block))


def tensors(e: Emitter, kernel: t.KernelOp) -> list[m.TensorOp]:
    """The program's inputs, outputs and constants where ``e`` placed them, each named
    after its value, made unique as the printer does (values of one kernel can share a
    name hint: a step cut into parts names several copies alike)."""
    out, names = [], iter(range(1 << 30))
    taken = {"constant_pool"} | {f"buffer{i}" for i in range(len(e.dram))}

    def unique(hint: str) -> StringAttr:
        name, n = hint, 0
        while name in taken:
            n += 1
            name = f"{hint}_{n}"
        taken.add(name)
        return StringAttr(name)

    for role, group in (("input", kernel.inputs), ("output", kernel.outputs)):
        for v in group:
            out.append(m.TensorOp.create(properties={
                "sym_name": unique(v.name_hint or f"{role}{next(names)}"),
                "role": StringAttr(role), "at": m.ref("dram", e.dram[v]),
                "type": TensorType(element(v), shape(v))}))
    for op in kernel.body.block.ops:
        if isinstance(op, t.ConstantOp):
            out.append(m.TensorOp.create(properties={
                "sym_name": unique(op.result.name_hint or f"const{next(names)}"),
                "role": StringAttr("constant"),
                "at": m.ref("dram", e.dram[op.result]), "value": op.value,
                "type": op.value.get_type()}))
    return out


def lower_lanes(e: Emitter, intervals: Intervals, task: t.TaskOp,
                op: t.BodyOp | g.GraphOp) -> None:
    """A task whose outputs are computed lane by lane (or, for sums of few outputs,
    through the tree); integer outputs are brought into their types."""
    interval = intervals.task(task, op)
    if isinstance(op, g.SumOp | g.MeanOp) and lanes.tree_pays(e, task, op):
        lanes.reduce_tree(e, task, op)
        return
    if isinstance(op, g.Conv2dBackwardOp):
        windows.lower_conv2d_backward(e, task, op)
        return
    writes = task.writes()
    tile = writes[0][1]
    kernel = lane_kernel(e, intervals, task, op, tile)
    element_type = element(writes[0][0])

    def settled(coords: list[np.ndarray]) -> list[Slot]:
        slots = kernel(coords)
        if interval is not None:  # into the output's type (wrapped, or 0 and 1)
            slots = [scalar.settle(e, slot, interval, element_type) for slot in slots]
        return slots

    lanes.lanes_over(e, tile, writes, settled)


def lane_kernel(e: Emitter, intervals: Intervals, task: t.TaskOp, op: t.BodyOp | g.GraphOp,
                tile: t.Tile) -> lanes.Lanes:
    """What each wave of lanes computes, by the class of the task's op."""
    if isinstance(op, t.BodyOp):
        known = intervals.body(task, op)
        return lambda c: lanes.pointwise(e, task, op, tile, known, c)
    if isinstance(op, g.GatherOp):
        return lambda c: lanes.gather(e, task, op, c)
    if isinstance(op, g.ScatterOp):
        return lambda c: lanes.scatter(e, task, op, c)
    if isinstance(op, g.EmbeddingOp):
        return lambda c: lanes.embedding(e, task, c)
    if isinstance(op, g.IndexPutOp):
        return lambda c: lanes.index_put(e, task, op, c)
    if isinstance(op, g.Conv2dOp):
        return lambda c: windows.conv2d(e, task, op, c)
    if isinstance(op, g.MaxPool2dOp):
        return lambda c: windows.max_pool2d(e, task, op, c)
    if isinstance(op, g.MaxPool2dBackwardOp):
        return lambda c: windows.max_pool2d_backward(e, task, op, c)
    if isinstance(op, g.ReduceOp):
        return lambda c: lanes.reduce(e, task, op, c)
    assert isinstance(op, COPIES), op.name
    return lambda c: lanes.copy(e, task, op, tile, c)
