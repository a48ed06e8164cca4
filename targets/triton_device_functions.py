"""The Triton source of the megakernel's device functions, one per task type: the body
of a ``@triton.jit`` function ``(arena, desc, d)`` that reads its descriptor at ``desc +
d`` (see ``triton_descriptors``) and computes its task's tiles. Task types are told
apart by what their tasks compute (``task.computation``): a pointwise body, or a graph
op's class and the properties its code reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Operation, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.graph_semantics import SEMANTICS, decomposed
from mncore_ir.dialects.values import constant_value
from mncore_ir.targets.triton_descriptors import RANK, TYPES, TritonTargetError, dtype_of, pow2

#: Native Triton helpers (in the generated prelude) for elementwise ops the semantics
#: table gives no Triton spelling, keyed on their ``approximate`` property; ops with
#: neither go through the table's decomposition.
_NATIVE: dict[type[Operation], str] = {g.GeluOp: "_gelu", g.GeluBackwardOp: "_gelu_backward"}


def _value_type(value: SSAValue | Attribute) -> str:
    return TYPES[dtype_of(value).name][1]


def _spelling(op: Operation, operands: Sequence[str], ty: str, block: str) -> str | None:
    """The Triton expression of one op of a pointwise computation on blocks of ``block``
    points (``ty``: its result's Triton type), or ``None`` when it has none."""
    if isinstance(op, g.ConstantOp):
        assert isinstance(op.value, DenseIntOrFPElementsAttr)
        (value,) = constant_value(op.value).reshape(-1)
        literal = repr(bool(value)) if ty == "tl.int1" else repr(value.item())
        literal = {"nan": "float('nan')", "inf": "float('inf')",
                   "-inf": "float('-inf')"}.get(literal, literal)
        return f"tl.full([{block}], {literal}, {ty})"
    if isinstance(op, g.ConvertOp) and ty == "tl.int1":
        return f"{operands[0]} != 0"
    native = _NATIVE.get(type(op))
    if native is not None:
        assert isinstance(op, g.GeluOp | g.GeluBackwardOp)
        tanh = "_tanh" if op.approximate.data == "tanh" else ""
        return f"{native}{tanh}({', '.join(operands)})"
    if ty == "tl.int1" and isinstance(op, g.AddOp):  # True + True is True: or, not a
        return f"{operands[0]} | {operands[1]}"        # 1-bit sum that wraps to False
    if isinstance(op, g.PowOp) and ty.startswith(("tl.int", "tl.uint")):
        return f"_ipow({operands[0]}, {operands[1]})"  # exact, where _pow takes logs
    entry = SEMANTICS.get(type(op))
    if entry is None or entry.triton is None:
        return None
    return entry.triton.format(*operands, dtype=ty)


def _emit(op: Operation, operands: Sequence[str], name: str, block: str,
          lines: list[str]) -> str:
    """Append the lines computing ``op``'s result into ``name`` (or, through its
    decomposition, into names that start with it); returns the result's name."""
    ty = _value_type(op.results[0])
    expr = _spelling(op, operands, ty, block)
    if expr is not None:
        lines.append(f"{name} = ({expr}).to({ty})")
        return name
    expansion = decomposed(op)
    if expansion is None:
        raise TritonTargetError(f"{op.name} has no Triton form", op)
    scratch, (result,) = expansion
    names: dict[SSAValue, str] = dict(zip(scratch.args, operands, strict=True))
    for j, inner in enumerate(scratch.ops):
        names[inner.results[0]] = _emit(inner, [names[o] for o in inner.operands],
                                        f"{name}_{j}", block, lines)
    return names[result]


def body_source(body: t.BodyOp, args: Sequence[str], block: str) -> tuple[list[str], list[str]]:
    """Lines computing a task body on loaded blocks, and the names of its results."""
    names: dict[SSAValue, str] = dict(zip(body.body.block.args, args, strict=True))
    lines: list[str] = []
    for i, op in enumerate(body.body.block.ops):
        if isinstance(op, t.YieldOp):
            return lines, [names[v] for v in op.values]
        try:
            names[op.results[0]] = _emit(op, [names[o] for o in op.operands], f"v{i}", block,
                                         lines)
        except TritonTargetError as error:
            raise TritonTargetError(f"task.body @{body.sym_name.data}: {error}") from None
    raise TritonTargetError(f"task.body @{body.sym_name.data} has no task.yield")


def _load_desc(n_operands: int, extras: int = 0) -> list[str]:
    lines = [f"s{i} = tl.load(desc + d + {i})" for i in range(RANK)]
    for k in range(n_operands):
        base = RANK + k * (RANK + 1)
        lines.append(f"o{k} = tl.load(desc + d + {base})")
        lines += [f"t{k}_{j} = tl.load(desc + d + {base + 1 + j})" for j in range(RANK)]
    first = RANK + n_operands * (RANK + 1)
    lines += [f"x{j} = tl.load(desc + d + {first + j})" for j in range(extras)]
    return lines


def _flat_loop(count: str, block: int) -> list[str]:
    """A loop over ``count`` elements in blocks: ``flat`` indices and their ``mask``."""
    return [f"for start in range(0, {count}, {block}):",
            f"    flat = start + tl.arange(0, {block})", f"    mask = flat < {count}"]


def _ptr(k: int, dtype: np.dtype) -> str:
    return f"_ptr(arena, o{k}, {TYPES[dtype.name][0]})"


def _load(k: int, dtype: np.dtype, addr: str, mask: str, other: str = "0") -> str:
    text = f"tl.load({_ptr(k, dtype)} + {addr}, mask={mask}, other={other})"
    return f"({text} != 0)" if dtype.name == "bool" else text


def _store(k: int, dtype: np.dtype, addr: str, value: str, mask: str) -> str:
    ptr_type = TYPES[dtype.name][0]
    return f"tl.store({_ptr(k, dtype)} + {addr}, ({value}).to({ptr_type}), mask={mask})"


def _addr6(k: int, flat: str = "flat") -> str:
    return f"_addr6({flat}, s1, s2, s3, s4, s5, " + ", ".join(
        f"t{k}_{j}" for j in range(RANK)) + ")"


def _rows(k: int, what: str) -> str:
    return f"_addr3({what}, s1, s2, t{k}_0, t{k}_1, t{k}_2)"


def _cols(k: int, what: str) -> str:
    return f"_addr3({what}, s4, s5, t{k}_3, t{k}_4, t{k}_5)"


@dataclass
class TaskType:
    """Tasks that share one device function: they compute ``op`` (a pointwise
    ``task.body`` or a graph op, from ``task.computation``) on operands of ``dtypes``."""

    index: int
    op: Operation
    example: t.TaskOp
    dtypes: list[np.dtype]
    largest: list[int] = field(default_factory=lambda: [0] * 4)

    @property
    def name(self) -> str:
        label = "elementwise" if isinstance(self.op, t.BodyOp) else self.op.name
        return f"_task{self.index}_{label.removeprefix('graph.')}"


def task_type_key(op: Operation, dtypes: Sequence[np.dtype]) -> tuple[Any, ...]:
    """What tells task types apart: a pointwise body by its symbol, a graph op by its
    class and the properties its device code reads (the rest are in the descriptors)."""
    if isinstance(op, t.BodyOp):
        what: tuple[Any, ...] = (t.BodyOp, op.sym_name.data)
    elif op.has_trait(g.Elementwise) or isinstance(op, g.IndexPutOp):
        what = (type(op), tuple(sorted(op.properties.items())))
    else:
        what = (type(op),)
    return (*what, tuple(d.name for d in dtypes))


def pointwise_source(tt: TaskType, body: list[str], args: list[str], results: list[str],
                     n_in: int) -> list[str]:
    """The body at every point of the space. Its descriptors are coalesced
    (``Descriptor.coalesced``), so a space of one dimension — every tile that all its
    operands hold contiguously or broadcast — takes the address ``flat * stride``; other
    spaces unravel the flat index."""
    block = min(pow2(tt.largest[0]), 1024)
    lines = [*_load_desc(len(tt.dtypes)), "n = s0 * s1 * s2 * s3 * s4 * s5",
             "flat_space = n == s5", *_flat_loop("n", block), "    if flat_space:"]
    lines += [f"        p{k} = flat * t{k}_5" for k in range(len(tt.dtypes))]
    lines.append("    else:")
    lines += [f"        p{k} = {_addr6(k)}" for k in range(len(tt.dtypes))]
    for k in range(n_in):
        lines.append(f"    {args[k]} = {_load(k, tt.dtypes[k], f'p{k}', 'mask')}")
    lines += ["    " + line for line in body]
    for j, value in enumerate(results):
        k = n_in + j
        lines.append("    " + _store(k, tt.dtypes[k], f"p{k}", value, "mask"))
    return lines


def _elementwise_source(tt: TaskType) -> list[str]:
    """A pointwise body, or one elementwise graph op, at every point of the tile."""
    n_in = len(tt.example.ins)
    args = [f"a{k}" for k in range(n_in)]
    block = str(min(pow2(tt.largest[0]), 1024))
    if isinstance(tt.op, t.BodyOp):
        lines, results = body_source(tt.op, args, block)
    else:
        lines = []
        results = [_emit(tt.op, args, "v0", block, lines)]
    return pointwise_source(tt, lines, args, results, n_in)


def _copy_source(tt: TaskType) -> list[str]:
    """Permutes, slices and reshapes: their views make them copies."""
    return pointwise_source(tt, [], ["a0"], ["a0"], 1)


def device_source(tt: TaskType) -> list[str]:
    """The body of one task type's device function."""
    if isinstance(tt.op, t.BodyOp) or tt.op.has_trait(g.Elementwise):
        return _elementwise_source(tt)
    source = _SOURCES.get(type(tt.op))
    if source is None:
        raise TritonTargetError(f"{tt.op.name} has no Triton device function")
    return source(tt)


def _embedding_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    return [*_load_desc(3, 1), "n = s0 * s1 * s2 * s3 * s4 * s5",
            *_flat_loop("n", block),
            f"    row = {_load(1, dt[1], _addr6(1), 'mask')}",
            f"    a0 = {_load(0, dt[0], 'row * x0 + ' + _addr6(0), 'mask')}",
            "    " + _store(2, dt[2], _addr6(2), "a0", "mask")]


def _gather_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    return [*_load_desc(3, 1), "n = s0 * s1 * s2 * s3 * s4 * s5",
            *_flat_loop("n", block),
            f"    where = {_load(1, dt[1], _addr6(1), 'mask')}",
            f"    a0 = {_load(0, dt[0], _addr6(0) + ' + where * x0', 'mask')}",
            "    " + _store(2, dt[2], _addr6(2), "a0", "mask")]


def _scatter_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    # out = input first (both whole and contiguous), unless they are one buffer: the
    # in-place task after convert-graph-to-task's tiled copy moves only the rows put
    return [*_load_desc(4, 2),
            "if o0 != o3:",
            *("    " + line for line in _flat_loop("x0", block)),
            f"        a0 = {_load(0, dt[0], 'flat', 'mask')}",
            "        " + _store(3, dt[3], "flat", "a0", "mask"),
            "tl.debug_barrier()",
            f"value = {_load(2, dt[2], '0', 'True')}",
            "n = s0 * s1 * s2 * s3 * s4 * s5",
            *_flat_loop("n", block),
            f"    where = {_load(1, dt[1], _addr6(1), 'mask')}",
            "    " + _store(3, dt[3], _addr6(3) + " + where * x1",
                          f"tl.full([{block}], 0, value.dtype) + value", "mask")]


def _index_put_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    assert isinstance(tt.op, g.IndexPutOp)
    add = bool(tt.op.accumulate.value.data)
    rows = g.shape_of(tt.op.input)[0]  # negative indices count from the end, as torch's
    target = f"{_ptr(3, dt[3])} + {_addr6(3)} + where * x1"
    write = (_atomic_add(tt, dt[3], target, "value") if add
             else _store(3, dt[3], _addr6(3) + " + where * x1", "value", "mask"))
    # out = input first (both whole and contiguous), unless they are one buffer: the
    # in-place task after convert-graph-to-task's tiled copy moves only the rows put
    return [*_load_desc(4, 2),
            "if o0 != o3:",
            *("    " + line for line in _flat_loop("x0", block)),
            f"        a0 = {_load(0, dt[0], 'flat', 'mask')}",
            "        " + _store(3, dt[3], "flat", "a0", "mask"),
            "tl.debug_barrier()",
            "n = s0 * s1 * s2 * s3 * s4 * s5",
            *_flat_loop("n", block),
            f"    where = {_load(1, dt[1], _addr6(1), 'mask')}",
            f"    where = tl.where(where < 0, where + {rows}, where)  # -1: the last row",
            f"    value = {_load(2, dt[2], _addr6(2), 'mask')}",
            "    " + write]


def _layer_norm_backward_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    bl = pow2(tt.largest[2])
    if bl > 16384:
        raise TritonTargetError("layer_norm_backward rows longer than 16384 elements")
    br = max(1, min(pow2(tt.largest[1]), 8192 // bl))
    ty = TYPES[dt[0].name][1]

    def at(k: int) -> str:
        return f"{_rows(k, 'rows')}[:, None] + {_cols(k, 'cols')}[None, :]"

    return [*_load_desc(8), "R = s0 * s1 * s2", "L = s3 * s4 * s5",
            f"cols = tl.arange(0, {bl})", "cmask = cols < L",
            f"dw = tl.zeros([{bl}], {ty})", f"db = tl.zeros([{bl}], {ty})",
            f"w = {_load(4, dt[4], _cols(4, 'cols'), 'cmask')}",
            f"for r0 in range(0, R, {br}):",
            f"    rows = r0 + tl.arange(0, {br})", "    rmask = rows < R",
            "    m2 = rmask[:, None] & cmask[None, :]",
            f"    gr = {_load(0, dt[0], at(0), 'm2')}",
            f"    x = {_load(1, dt[1], at(1), 'm2')}",
            f"    mean = {_load(2, dt[2], _rows(2, 'rows'), 'rmask')}",
            f"    rstd = {_load(3, dt[3], _rows(3, 'rows'), 'rmask')}",
            "    xhat = tl.where(m2, (x - mean[:, None]) * rstd[:, None], 0.0)",
            "    gx = tl.where(m2, gr * w[None, :], 0.0)",
            "    total = tl.sum(gx, axis=1)[:, None]",
            "    dot = tl.sum(gx * xhat, axis=1)[:, None]",
            "    gi = rstd[:, None] / L * (L * gx - total - xhat * dot)",
            "    " + _store(5, dt[5], at(5), "gi", "m2"),
            "    dw += tl.sum(tl.where(m2, gr * xhat, 0.0), axis=0)",
            "    db += tl.sum(tl.where(m2, gr, 0.0), axis=0)",
            _store(6, dt[6], _cols(6, "cols"), "dw", "cmask"),
            _store(7, dt[7], _cols(7, "cols"), "db", "cmask")]


def _window_source(tt: TaskType) -> list[str]:
    """Direct convolution / max-pool: each output element loops over its window."""
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 256)
    conv = isinstance(tt.op, g.Conv2dOp)
    ty = TYPES[dt[0].name][1]
    lines = [*_load_desc(4 if conv else 3, 14),
             "C = x0", "H = x1", "W = x2", "KH = x3", "KW = x4", "SH = x5", "SW = x6",
             "PH = x7", "PW = x8", "DH = x9", "DW = x10", "G = x11", "O = x12",
             "n = s2 * s3 * s4 * s5",
             *_flat_loop("n", block),
             "    ow = flat % s5", "    oh = (flat // s5) % s4",
             "    oc = (flat // (s5 * s4)) % s3",
             "    nb = flat // (s5 * s4 * s3)"]
    if conv:
        lines += ["    CG = C // G", "    group = oc // (O // G)",
                  f"    acc = {_load(2, dt[2], 'oc', 'mask')}",
                  "    for cg in range(0, CG):",
                  "        ci = group * CG + cg",
                  "        for kh in range(0, KH):",
                  "            ih = oh * SH - PH + kh * DH",
                  "            for kw in range(0, KW):",
                  "                iw = ow * SW - PW + kw * DW",
                  "                inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
                  "                xv = " + _load(0, dt[0], "((nb * C + ci) * H + ih) * W + iw",
                                                 "inside"),
                  "                wv = " + _load(1, dt[1], "((oc * CG + cg) * KH + kh) * KW + kw",
                                                 "mask"),
                  "                acc += xv * wv",
                  "    " + _store(3, dt[3], "flat", "acc", "mask")]
    else:
        lines += [f"    best = tl.full([{block}], float('-inf'), {ty})",
                  f"    arg = tl.zeros([{block}], tl.int64)",
                  "    for kh in range(0, KH):",
                  "        ih = oh * SH - PH + kh * DH",
                  "        for kw in range(0, KW):",
                  "            iw = ow * SW - PW + kw * DW",
                  "            inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
                  "            xv = " + _load(0, dt[0], "((nb * C + oc) * H + ih) * W + iw",
                                             "inside", "float('-inf')"),
                  "            better = xv > best",
                  "            best = tl.where(better, xv, best)",
                  "            arg = tl.where(better, (ih * W + iw).to(tl.int64), arg)",
                  "    " + _store(1, dt[1], "flat", "best", "mask"),
                  "    " + _store(2, dt[2], "flat", "arg", "mask")]
    return lines


_GEOMETRY = ["C = x0", "H = x1", "W = x2", "KH = x3", "KW = x4", "SH = x5", "SW = x6",
             "PH = x7", "PW = x8", "DH = x9", "DW = x10", "G = x11", "O = x12", "NB = x13",
             "OH = x14", "OW = x15"]


def _conv_backward_source(tt: TaskType) -> list[str]:
    """grad_input (over the input's elements, gathering from the output positions that
    used each one), grad_weight (over the weight's elements, summing over batch and
    output positions) and grad_bias (over the output channels)."""
    dt = tt.dtypes
    block = 256
    ty = TYPES[dt[0].name][1]
    g_at = "((nb * O + oc) * OH + oh) * OW + ow"
    return [*_load_desc(6, 16), *_GEOMETRY, "CG = C // G", "OG = O // G",
            "n = NB * C * H * W",
            *_flat_loop("n", block),
            "    iw = flat % W", "    ih = (flat // W) % H", "    ci = (flat // (W * H)) % C",
            "    nb = flat // (W * H * C)", "    group = ci // CG", "    cg = ci % CG",
            f"    acc = tl.zeros([{block}], {ty})",
            "    for oo in range(0, OG):",
            "        oc = group * OG + oo",
            "        for kh in range(0, KH):",
            "            th = ih + PH - kh * DH",
            "            oh = th // SH",
            "            for kw in range(0, KW):",
            "                tw = iw + PW - kw * DW",
            "                ow = tw // SW",
            "                used = mask & (th >= 0) & (th % SH == 0) & (oh < OH) & (tw >= 0)"
            " & (tw % SW == 0) & (ow < OW)",
            f"                gv = {_load(0, dt[0], g_at, 'used')}",
            "                wv = " + _load(2, dt[2], "((oc * CG + cg) * KH + kh) * KW + kw",
                                          "mask"),
            "                acc += gv * wv",
            "    " + _store(3, dt[3], "flat", "acc", "mask"),
            "n = O * CG * KH * KW",
            *_flat_loop("n", block),
            "    kw = flat % KW", "    kh = (flat // KW) % KH", "    cg = (flat // (KW * KH)) % CG",
            "    oc = flat // (KW * KH * CG)", "    ci = (oc // OG) * CG + cg",
            f"    acc = tl.zeros([{block}], {ty})",
            "    for nb in range(0, NB):",
            "        for oh in range(0, OH):",
            "            ih = oh * SH - PH + kh * DH",
            "            for ow in range(0, OW):",
            "                iw = ow * SW - PW + kw * DW",
            "                inside = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
            "                xv = " + _load(1, dt[1], "((nb * C + ci) * H + ih) * W + iw",
                                          "inside"),
            f"                gv = {_load(0, dt[0], g_at, 'mask')}",
            "                acc += xv * gv",
            "    " + _store(4, dt[4], "flat", "acc", "mask"),
            f"for start in range(0, O, {block}):",
            f"    oc = start + tl.arange(0, {block})", "    mask = oc < O",
            f"    acc = tl.zeros([{block}], {ty})",
            "    for nb in range(0, NB):",
            "        for oh in range(0, OH):",
            "            for ow in range(0, OW):",
            f"                acc += {_load(0, dt[0], g_at, 'mask')}",
            "    " + _store(5, dt[5], "oc", "acc", "mask")]


def _pool_backward_source(tt: TaskType) -> list[str]:
    """Zero the input gradient, then add each output gradient at its argmax."""
    dt = tt.dtypes
    block = min(pow2(tt.largest[0]), 1024)
    ty = TYPES[dt[3].name][1]
    target = f"{_ptr(3, dt[3])} + (flat // (OH * OW)) * (H * W) + where"
    return [*_load_desc(4, 16), *_GEOMETRY,
            "n = NB * C * H * W",
            f"for start in range(0, n, {block}):",
            f"    flat = start + tl.arange(0, {block})",
            "    " + _store(3, dt[3], "flat", f"tl.zeros([{block}], {ty})", "flat < n"),
            "tl.debug_barrier()",
            "n = NB * C * OH * OW",
            *_flat_loop("n", block),
            f"    where = {_load(2, dt[2], 'flat', 'mask')}",
            f"    gv = {_load(0, dt[0], 'flat', 'mask')}",
            "    " + _atomic_add(tt, dt[3], target, "gv")]


def _atomic_add(tt: TaskType, dtype: np.dtype, target: str, value: str) -> str:
    """``value`` added at ``target`` where ``mask``; Triton adds atomically only words of
    16 bits or more (not int16): accumulating into narrower ones is the host's."""
    if dtype.itemsize < 2 or dtype in (np.int16, np.uint16):
        raise TritonTargetError(f"{tt.op.name}: Triton has no atomic add of {dtype.name} "
                                "to accumulate with", tt.op)
    return f"tl.atomic_add({target}, {value}, mask=mask)"


def _matmul_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    bm = min(pow2(tt.largest[1], 16), 64)
    bn = min(pow2(tt.largest[2], 16), 64)
    bk = min(pow2(tt.largest[3], 16), 32)
    acc = TYPES[dt[2].name][1]
    return [*_load_desc(3), "M = s3", "N = s4", "K = s5",
            f"for m0 in range(0, M, {bm}):",
            f"    rm = m0 + tl.arange(0, {bm})",
            f"    for n0 in range(0, N, {bn}):",
            f"        rn = n0 + tl.arange(0, {bn})",
            f"        acc = tl.zeros([{bm}, {bn}], {acc})",
            f"        for k0 in range(0, K, {bk}):",
            f"            rk = k0 + tl.arange(0, {bk})",
            "            a = " + _load(0, dt[0], "rm[:, None] * t0_3 + rk[None, :] * t0_5",
                                    "(rm[:, None] < M) & (rk[None, :] < K)"),
            "            b = " + _load(1, dt[1], "rk[:, None] * t1_5 + rn[None, :] * t1_4",
                                    "(rk[:, None] < K) & (rn[None, :] < N)"),
            "            acc += " + ('tl.dot(a, b, input_precision="ieee")'
                                     if np.issubdtype(dt[2], np.floating) else
                                     # tl.dot has no int64/int32 products: sum them
                                     "tl.sum(a[:, :, None] * b[None, :, :], axis=1)"),
            "        " + _store(2, dt[2], "rm[:, None] * t2_3 + rn[None, :] * t2_4", "acc",
                               "(rm[:, None] < M) & (rn[None, :] < N)")]


def _reduce_source(tt: TaskType) -> list[str]:
    dt = tt.dtypes
    bl = min(pow2(tt.largest[2]), 1024)
    br = max(1, min(pow2(tt.largest[1]), 4096 // bl))
    ty = TYPES[dt[1].name][1]
    if isinstance(tt.op, g.AmaxOp):  # from the least value of the type
        low = dt[0]
        init = other = ("float('-inf')" if np.issubdtype(low, np.floating) else "0"
                        if low == np.bool_ else str(np.iinfo(low).min))
        combine = "tl.maximum(acc, tl.max(x, axis=1))"
    else:
        init, other, combine = "0", "0", "acc + tl.sum(x, axis=1)"
    # tl.max drops NaN where torch.amax propagates it: a float maximum counts NaNs
    nan = isinstance(tt.op, g.AmaxOp) and np.issubdtype(dt[0], np.floating)
    lines = [*_load_desc(2), "R = s0 * s1 * s2", "L = s3 * s4 * s5",
             f"for r0 in range(0, R, {br}):",
             f"    rows = r0 + tl.arange(0, {br})", "    rmask = rows < R",
             f"    acc = tl.full([{br}], {init}, {ty})",
             *([f"    nan = tl.zeros([{br}], tl.int32)"] if nan else []),
             f"    for l0 in range(0, L, {bl}):",
             f"        cols = l0 + tl.arange(0, {bl})",
             "        m2 = rmask[:, None] & (cols[None, :] < L)",
             "        x = " + _load(0, dt[0], f"{_rows(0, 'rows')}[:, None] + "
                                  f"{_cols(0, 'cols')}[None, :]", "m2", other),
             f"        acc = ({combine}).to({ty})",
             *(["        nan = tl.maximum(nan, tl.max((x != x).to(tl.int32), axis=1))",
                "    acc = tl.where(nan > 0, float('nan'), acc)"] if nan else [])]
    if isinstance(tt.op, g.MeanOp):
        lines.append("    acc = acc / L")
    lines.append("    " + _store(1, dt[1], _rows(1, "rows"), "acc", "rmask"))
    return lines


def _row_source(tt: TaskType) -> list[str]:
    op, dt = tt.op, tt.dtypes
    bl = pow2(tt.largest[2])
    if bl > 16384:
        raise TritonTargetError(f"{op.name}: rows of {tt.largest[2]} elements are "
                                "longer than the 16384 one block holds")
    br = max(1, min(pow2(tt.largest[1]), 8192 // bl))
    layer_norm = isinstance(op, g.LayerNormOp)
    n_ops = 6 if layer_norm else 2 if isinstance(op, g.RowOp) else 3
    lines = [*_load_desc(n_ops, 1 if layer_norm else 0),
             "R = s0 * s1 * s2", "L = s3 * s4 * s5",
             f"for r0 in range(0, R, {br}):",
             f"    rows = r0 + tl.arange(0, {br})",
             f"    cols = tl.arange(0, {bl})",
             "    rmask = rows < R",
             "    m2 = rmask[:, None] & (cols[None, :] < L)"]

    def at(k: int) -> str:
        return f"{_rows(k, 'rows')}[:, None] + {_cols(k, 'cols')}[None, :]"

    body: list[str]
    if isinstance(op, g.RowOp):  # softmax, log-softmax
        minus_inf = 'float("-inf")'
        body = [f"x = {_load(0, dt[0], at(0), 'm2', minus_inf)}",
                "shifted = x - tl.max(x, axis=1)[:, None]",
                "e = tl.where(m2, tl.exp(shifted), 0.0)",
                "total = tl.sum(e, axis=1)[:, None]",
                ("y = e / total" if isinstance(op, g.SoftmaxOp)
                 else "y = shifted - tl.log(total)"),
                _store(1, dt[1], at(1), "y", "m2")]
    elif isinstance(op, g.SoftmaxBackwardOp):
        body = [f"gr = {_load(0, dt[0], at(0), 'm2')}", f"out = {_load(1, dt[1], at(1), 'm2')}",
                "y = out * (gr - tl.sum(gr * out, axis=1)[:, None])",
                _store(2, dt[2], at(2), "y", "m2")]
    elif isinstance(op, g.LogSoftmaxBackwardOp):
        body = [f"gr = {_load(0, dt[0], at(0), 'm2')}", f"out = {_load(1, dt[1], at(1), 'm2')}",
                "y = gr - tl.exp(out) * tl.sum(gr, axis=1)[:, None]",
                _store(2, dt[2], at(2), "y", "m2")]
    elif layer_norm:
        body = [f"x = {_load(0, dt[0], at(0), 'm2')}",
                f"w = {_load(1, dt[1], _cols(1, 'cols') + '[None, :]', 'm2')}",
                f"b = {_load(2, dt[2], _cols(2, 'cols') + '[None, :]', 'm2')}",
                "mean = tl.sum(x, axis=1) / L",
                "xc = tl.where(m2, x - mean[:, None], 0.0)",
                "var = tl.sum(xc * xc, axis=1) / L",
                "eps = x0.to(tl.float64, bitcast=True)",
                f"rstd = (1.0 / tl.sqrt(var + eps)).to({TYPES[dt[0].name][1]})",
                "y = xc * rstd[:, None] * w + b",
                _store(3, dt[3], at(3), "y", "m2"),
                _store(4, dt[4], _rows(4, "rows"), "mean", "rmask"),
                _store(5, dt[5], _rows(5, "rows"), "rstd", "rmask")]
    else:
        raise TritonTargetError(f"{op.name} has no Triton row function")
    return lines + ["    " + line for line in body]


_SOURCES: dict[type[Operation], Callable[[TaskType], list[str]]] = {
    g.PermuteOp: _copy_source, g.SliceOp: _copy_source, g.ReshapeOp: _copy_source,
    g.EmbeddingOp: _embedding_source, g.GatherOp: _gather_source,
    g.ScatterOp: _scatter_source, g.IndexPutOp: _index_put_source,
    g.LayerNormBackwardOp: _layer_norm_backward_source, g.Conv2dOp: _window_source,
    g.MaxPool2dOp: _window_source, g.Conv2dBackwardOp: _conv_backward_source,
    g.MaxPool2dBackwardOp: _pool_backward_source, **dict.fromkeys(g.MATMULS, _matmul_source),
    g.SumOp: _reduce_source, g.MeanOp: _reduce_source, g.AmaxOp: _reduce_source,
    g.SoftmaxOp: _row_source, g.LogSoftmaxOp: _row_source,
    g.SoftmaxBackwardOp: _row_source, g.LogSoftmaxBackwardOp: _row_source,
    g.LayerNormOp: _row_source,
}
"""The device function of each graph op class the target runs (elementwise ops go
through ``_elementwise_source``)."""


def pointwise(op: Operation) -> bool:
    """Whether ``op``'s device function is :func:`pointwise_source`, which reads its space
    as one flat index (so its descriptors may be coalesced)."""
    return (isinstance(op, t.BodyOp) or op.has_trait(g.Elementwise)
            or _SOURCES.get(type(op)) is _copy_source)
