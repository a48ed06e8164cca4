"""``-t triton``: a ``task.kernel`` as one persistent Triton megakernel.

The generated Python module holds the kernel's tables and code:

* an **arena** (one byte tensor) in which every buffer, input, output and constant has
  an offset; tasks reach their tiles through typed pointers cast from it;
* a **task table** (type, descriptor offset, waits, signalled event), a **descriptor
  table** (per task: an iteration space of 6 sizes, then per operand the byte offset of
  its tile's origin and 6 element strides, then extras of some types) and event tables;
* one ``@triton.jit`` device function per task type: elementwise bodies (also copies,
  reshapes, permutes, slices), matmul tiles with ``tl.dot``, reductions (sum, mean,
  amax), row ops (softmax, log-softmax and their backward, layer norm and its
  backward), embedding, gather, scatter, index_put, and direct conv2d and max-pool
  and their backward ops;
* the megakernel: each program takes the next task from an atomic ticket, waits on its
  events (acquire loads, at most ``spin_bound`` polls, after which the task is recorded
  as an error instead of hanging), runs it, and signals after a barrier (release add).
  Tasks are in a topological order, so this cannot deadlock whatever the grid, and with
  the interpreter's sequential grid of 1 it never waits at all;
* ``run(*inputs, mode=...)``: ``"megakernel"``, or ``"levels"`` (one launch per
  dependency level, the cross-check and fallback), on a GPU when one is there and under
  ``TRITON_INTERPRET=1`` otherwise; ``compile_for_gpu()`` compiles the megakernel for a
  GPU target without running it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.target import Target

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.task_regions import buffer_shape
from mncore_ir.dialects.values import constant_value
from mncore_ir.targets.triton_descriptors import (
    RANK,
    TYPES,
    Layout,
    TritonTargetError,
    View,
    dtype_of,
    right_align,
    view_of,
)
from mncore_ir.targets.triton_device_functions import (
    TaskType,
    device_source,
    pointwise,
    task_type_key,
)

__all__ = ["TritonTarget", "TritonTargetError", "generate", "load"]

_PRELUDE = '''\
import os

import torch
import triton
import triton.language as tl


@triton.jit
def _ptr(arena, offset, ty: tl.constexpr):
    return (arena + offset).to(tl.pointer_type(ty), bitcast=True)


@triton.jit
def _addr6(flat, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5):
    i5 = flat % s5
    r = flat // s5
    i4 = r % s4
    r = r // s4
    i3 = r % s3
    r = r // s3
    i2 = r % s2
    r = r // s2
    i1 = r % s1
    i0 = r // s1
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3 + i4 * t4 + i5 * t5


@triton.jit
def _addr3(flat, s1, s2, t0, t1, t2):
    i2 = flat % s2
    r = flat // s2
    i1 = r % s1
    i0 = r // s1
    return i0 * t0 + i1 * t1 + i2 * t2


@triton.jit
def _tanh(x):
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


@triton.jit
def _pow(a, b):
    # C's pow: |a| ** b, the sign of odd powers of a negative a (a fractional power of
    # one is NaN, of -inf |a| ** b), a signed zero's odd powers signed, and 1 for a ** 0,
    # 1 ** b and (-1) ** inf whatever else is NaN
    r = tl.exp(b * tl.log(tl.abs(a)))
    whole = tl.floor(b) == b
    odd = whole & ((b - 2.0 * tl.floor(b * 0.5)) == 1.0)
    fractional = tl.where(a == float("-inf"), r, float("nan"))
    negative = tl.where(whole, tl.where(odd, -r, r), fractional)
    zero = tl.where(b > 0.0, 0.0, tl.where(b < 0.0, float("inf"), float("nan")))
    zero = tl.where(odd & (1.0 / a < 0.0), -zero, zero)
    one = (b == 0.0) | (a == 1.0) | ((a == -1.0) & (tl.abs(b) == float("inf")))
    return tl.where(one, 1.0, tl.where(a < 0.0, negative, tl.where(a == 0.0, zero, r)))


@triton.jit
def _ipow(a, b):
    # an integer power by squaring, wrapping as torch's; of a negative power, torch's
    # integer pow gives 1 for a base of 1, +-1 for -1 and 0 for any other base
    r = a * 0 + 1
    base = a
    e = tl.where(b < 0, 0, b)
    for _ in tl.static_range(63):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    negative = tl.where(a == 1, 1, tl.where(a == -1, 1 - 2 * (b & 1), 0))
    return tl.where(b < 0, negative, r)


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit
def _gelu_tanh(x):
    return 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@triton.jit
def _gelu_backward(grad, x):
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    return grad * (cdf + x * pdf)


@triton.jit
def _gelu_backward_tanh(grad, x):
    t = _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))
    right = 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x)
    return grad * (0.5 * (1.0 + t) + right)
'''

_RUNTIME = '''

@triton.jit
def megakernel(arena, tasks, descs, waits, counters, targets, ticket, errors, order,
               first, count, spin_bound):
    """Persistent worker: take a ticket, wait for the task's events, run it, signal."""
    i = tl.atomic_add(ticket, 1)
    while i < count:
        task = tl.load(order + first + i)
        row = tasks + task * 5
        kind = tl.load(row)
        d = tl.load(row + 1)
        w0 = tl.load(row + 2)
        nw = tl.load(row + 3)
        signal = tl.load(row + 4)
        for j in range(nw):
            event = tl.load(waits + w0 + j)
            target = tl.load(targets + event)
            seen = tl.atomic_add(counters + event, 0, sem="acquire")
            spins = 0
            while (seen < target) & (spins < spin_bound):
                seen = tl.atomic_add(counters + event, 0, sem="acquire")
                spins += 1
            if seen < target:
                tl.atomic_max(errors, task + 1)
        tl.debug_barrier()
{dispatch}
        tl.debug_barrier()
        if signal >= 0:
            tl.atomic_add(counters + signal, 1, sem="release")
        i = tl.atomic_add(ticket, 1)


SIGNATURE = {{"arena": "*u8", "tasks": "*i64", "descs": "*i64", "waits": "*i64",
             "counters": "*i32", "targets": "*i32", "ticket": "*i32", "errors": "*i32",
             "order": "*i64", "first": "i64", "count": "i64", "spin_bound": "i32"}}


class MegakernelError(RuntimeError):
    """A task waited longer than the spin bound: an event that never fires."""


def interpreting():
    return os.environ.get("TRITON_INTERPRET") == "1"


def _device(inputs):
    if interpreting():
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU here: set TRITON_INTERPRET=1 to run on the CPU")
    return torch.device("cuda")


def _table(values, dtype, device):
    return torch.tensor(values or [0], dtype=dtype, device=device)


def run(*inputs, mode="megakernel", grid=None, spin_bound=1 << 20, poison=True):
    """Run the kernel on torch tensors; returns its outputs. ``mode`` is
    ``"megakernel"`` (one launch) or ``"levels"`` (one launch per dependency level)."""
    if len(inputs) != len(INPUTS):
        raise TypeError(f"{{KERNEL}} takes {{len(INPUTS)}} inputs, got {{len(inputs)}}")
    device = _device(inputs)
    arena = torch.full((ARENA_BYTES,), 255 if poison else 0, dtype=torch.uint8, device=device)
    for value, (offset, shape, dtype) in zip(inputs, INPUTS):
        value = torch.as_tensor(value)
        if tuple(value.shape) != shape or value.dtype != dtype:
            raise TypeError(f"{{KERNEL}}: expected {{dtype}} of shape {{shape}}, got "
                            f"{{value.dtype}} of shape {{tuple(value.shape)}}")
        flat = value.detach().to(device).contiguous().reshape(-1).view(torch.uint8)
        arena[offset:offset + flat.numel()] = flat
    for offset, dtype, values in CONSTANTS:
        flat = torch.tensor(values, dtype=dtype, device=device).view(torch.uint8)
        arena[offset:offset + flat.numel()] = flat
    tasks = _table(TASKS, torch.int64, device)
    descs = _table(DESCS, torch.int64, device)
    waits = _table(WAITS, torch.int64, device)
    targets = _table(TARGETS, torch.int32, device)
    counters = torch.zeros(max(len(TARGETS), 1), dtype=torch.int32, device=device)
    errors = torch.zeros(1, dtype=torch.int32, device=device)
    if grid is None:
        grid = 1 if interpreting() else torch.cuda.get_device_properties(
            device).multi_processor_count
    if mode == "megakernel":
        launches = [(0, NUM_TASKS)]
        order = _table(list(range(NUM_TASKS)), torch.int64, device)
    elif mode == "levels":
        launches = LEVELS
        order = _table(LEVEL_ORDER, torch.int64, device)
    else:
        raise ValueError(f"mode must be 'megakernel' or 'levels', not {{mode!r}}")
    for first, count in launches:
        ticket = torch.zeros(1, dtype=torch.int32, device=device)
        megakernel[(grid,)](arena, tasks, descs, waits, counters, targets, ticket, errors,
                            order, first, count, spin_bound)
    failed = int(errors.item())
    if failed:
        raise MegakernelError(f"{{KERNEL}}: task {{failed - 1}} waited more than {{spin_bound}} "
                              "polls for an event that never fired")
    outs = []
    for offset, shape, dtype in OUTPUTS:
        n = 1
        for size in shape:
            n *= size
        nbytes = n * torch.empty((), dtype=dtype).element_size()
        outs.append(arena[offset:offset + nbytes].view(dtype).reshape(shape).clone())
    return outs


def compile_for_gpu(arch=90, warp_size=32):
    """Compile the megakernel for a CUDA GPU target without running it (needs Triton
    not in interpreter mode)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = ASTSource(fn=megakernel, signature=SIGNATURE, constexprs={{}})
    return triton.compile(source, target=GPUTarget("cuda", arch, warp_size))
'''


def _levels(preds: Sequence[Sequence[int]]) -> tuple[list[tuple[int, int]], list[int]]:
    depth: list[int] = []
    for ps in preds:
        depth.append(1 + max((depth[p] for p in ps), default=-1))
    order = sorted(range(len(preds)), key=lambda i: (depth[i], i))
    launches: list[tuple[int, int]] = []
    start = 0
    for level in range(max(depth, default=-1) + 1):
        count = depth.count(level)
        launches.append((start, count))
        start += count
    return launches, order


def _torch_dtype(dtype: np.dtype) -> str:
    return TYPES[dtype.name][2]


def _fmt_list(values: Sequence[Any], per_line: int = 16) -> str:
    rows = [", ".join(str(v) for v in values[i:i + per_line])
            for i in range(0, len(values), per_line)]
    return "[\n    " + ",\n    ".join(rows) + ",\n]" if rows else "[]"


def _computations(kernel: t.KernelOp) -> list[tuple[Operation, View]]:
    """What each task computes and the view of its descriptor; refuses, naming them, the
    tasks the target has no device function for."""
    bodies = kernel.bodies()
    by_body: dict[str, tuple[Operation | None, View | None]] = {}  # tasks share bodies
    found: list[tuple[Operation | None, View | None]] = []
    for task in kernel.tasks():
        if task.body_name not in by_body:
            op = t.computation(task, bodies)
            by_body[task.body_name] = (op, view_of(op))
        found.append(by_body[task.body_name])
    unsupported = sorted({t.task_label(task) + (f" ({op.name})" if op is not None else "")
                          for task, (op, view) in zip(kernel.tasks(), found, strict=True)
                          if view is None})
    if unsupported:
        blamed = next((op or task for task, (op, view) in zip(kernel.tasks(), found,
                                                               strict=True) if view is None))
        raise TritonTargetError(f"the triton target has no device function for task kinds: "
                                f"{', '.join(unsupported)}", blamed)
    return [(op, view) for op, view in found if op is not None and view is not None]


def generate(kernel: t.KernelOp) -> str:
    """The Python source of the megakernel module for ``kernel``."""
    from mncore_ir.dialects.task import predecessors

    layout = Layout(kernel)
    types: dict[tuple[Any, ...], TaskType] = {}
    rows: list[list[int]] = []
    descs: list[int] = []
    waits: list[int] = []
    events = {op.result: i for i, op in enumerate(
        o for o in kernel.body.block.ops if isinstance(o, t.EventOp))}
    targets = [op.triggers.value.data for op in kernel.body.block.ops
               if isinstance(op, t.EventOp)]
    for task, (op, view) in zip(kernel.tasks(), _computations(kernel), strict=True):
        desc = view(task, op, layout)
        if pointwise(op):
            desc = desc.coalesced()
        dtypes = [operand.dtype for operand in desc.operands]
        key = task_type_key(op, dtypes)
        if key not in types:
            types[key] = TaskType(len(types), op, task, dtypes)
        tt = types[key]
        sizes = right_align(desc.sizes, RANK, 1)
        matmul = isinstance(op, g.MATMULS)
        tt.largest[0] = max(tt.largest[0], math.prod(sizes))
        tt.largest[1] = max(tt.largest[1], sizes[3] if matmul else math.prod(sizes[:3]))
        tt.largest[2] = max(tt.largest[2], sizes[4] if matmul else math.prod(sizes[3:]))
        tt.largest[3] = max(tt.largest[3], sizes[5])
        signal = events[task.signal] if task.signal is not None else -1
        rows.append([tt.index, len(descs), len(waits), len(task.waits), signal])
        descs += desc.encode()
        waits += [events[e] for e in task.waits]

    functions = []
    for tt in types.values():
        lines = device_source(tt)
        functions.append("\n\n@triton.jit\ndef " + tt.name + "(arena, desc, d):\n"
                         + "\n".join("    " + line for line in lines) + "\n")
    dispatch = []
    for i, tt in enumerate(types.values()):
        keyword = "if" if i == 0 else "elif"
        dispatch.append(f"        {keyword} kind == {tt.index}:\n"
                        f"            {tt.name}(arena, descs, d)")
    launches, order = _levels(predecessors(kernel))

    def slot(value: SSAValue) -> str:
        shape = buffer_shape(value)
        return f"({layout.base[value]}, {shape!r}, {_torch_dtype(dtype_of(value))})"

    constants = []
    for op in kernel.body.block.ops:
        if isinstance(op, t.ConstantOp):
            values = constant_value(op.value).reshape(-1).tolist()
            constants.append(f"({layout.base[op.result]}, "
                             f"{_torch_dtype(dtype_of(op.result))}, {values!r})")
    header = [
        f'"""The task kernel @{kernel.sym_name.data} as a persistent Triton megakernel '
        '(generated by mncore-ir: mncore-opt -t triton)."""', "",
    ]
    tables = [
        "", "", f"KERNEL = {('@' + kernel.sym_name.data)!r}",
        f"NUM_TASKS = {len(rows)}", f"ARENA_BYTES = {layout.size}",
        "# (byte offset, shape, dtype) of each input and output in the arena",
        f"INPUTS = [{', '.join(slot(v) for v in kernel.inputs)}]",
        f"OUTPUTS = [{', '.join(slot(v) for v in kernel.outputs)}]",
        f"CONSTANTS = [{', '.join(constants)}]",
        "# per task: type, descriptor offset, first wait, wait count, signalled event (-1: none)",
        f"TASKS = {_fmt_list([x for r in rows for x in r], 15)}",
        f"# per task: {RANK} sizes, then per operand: tile origin (bytes) and {RANK} strides",
        f"DESCS = {_fmt_list(descs)}",
        f"WAITS = {_fmt_list(waits)}",
        f"TARGETS = {_fmt_list(targets)}",
        "# per dependency level: (first, count) into LEVEL_ORDER",
        f"LEVELS = {launches!r}",
        f"LEVEL_ORDER = {_fmt_list(order)}",
        "TASK_TYPES = " + repr([tt.name for tt in types.values()]),
    ]
    return ("\n".join(header) + _PRELUDE + "".join(functions) + "\n".join(tables) + "\n"
            + _RUNTIME.format(dispatch="\n".join(dispatch)))


@dataclass(frozen=True)
class TritonTarget(Target):
    """A Python module with the persistent Triton megakernel of the module's only (or
    ``main``) task kernel, and its launcher."""

    name = "triton"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from mncore_ir.dialects.task import find_kernel

        output.write(generate(find_kernel(module)))


def load(source: str, directory: str, name: str = "mncore_megakernel") -> Any:
    """Import generated source (Triton reads kernels' source files, so it is written to
    ``directory`` first)."""
    import hashlib
    import importlib.util
    import os

    digest = hashlib.blake2b(source.encode(), digest_size=8).hexdigest()
    path = os.path.join(directory, f"{name}_{digest}.py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"{name}_{digest}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
