"""What each ATen op is to the lazy tracer, decided once per op and cached: how
dispatch handles it (record, view, in-place, decompose, fallback, ...), which Python
scalars become graph inputs, an out= overload's functional form, and the inverse of a
view op for writing through views."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import torch
from torch._decomp import decomposition_table

from mncore_ir.frontends import lazy_collectives
from mncore_ir.frontends import lazy_tensor as lt
from mncore_ir.frontends.fx import DECOMPOSITIONS, HIDDEN_MUTATION_DECOMPOSITIONS
from mncore_ir.frontends.fx import HANDLERS as IMPORTABLE
from mncore_ir.frontends.lazy_fast_paths import FAST_PATHS
from mncore_ir.frontends.lazy_tensor import (
    DeviceData,
    Item,
    LazyError,
    LazyStorage,
    LazyTensor,
    Node,
    Placeholder,
    Value,
    ViewStep,
)
from mncore_ir.frontends.lazy_where import describe_location, user_location

aten = torch.ops.aten


def dropout_drawn_on_host(x: torch.Tensor, p: float, train: bool | None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """``native_dropout`` (what ``F.dropout`` calls on this device, as on CUDA): its
    noise drawn on the host as eager's CPU kernel draws it (``bernoulli_`` of a tensor
    like the input, the default generator: eager's numbers under ``manual_seed``), then
    scaled in the input's type and multiplied on the device. The input is not read, so
    the step is not cut there (the op ran on the host, syncing its input)."""
    if train is not None and not train:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    noise = torch.empty_like(x).bernoulli_(1.0 - p)  # a factory, then a host op
    mask = noise != 0
    noise = noise.mul_(0.0 if p == 1 else 1.0 / (1.0 - p))
    return x * noise, mask


#: What the tracer expands while recording: ops whose schema hides a mutation (as
#: capture does), ``native_dropout`` and torch.nn's inference fast paths.
TRACE_DECOMPOSITIONS = {**HIDDEN_MUTATION_DECOMPOSITIONS, **FAST_PATHS,
                        aten.native_dropout.default: dropout_drawn_on_host}

# ---------------------------------------------------------------------- scalar hoisting

BAKED = (0, 1, -1)
#: Integers from this magnitude on are baked too: an MN-Core word (f32) does not hold
#: them exactly, so as literals the lowering refuses them when it compiles (the step
#: can then run on the host, or the error names the line), where as inputs they would
#: fail when the program runs; they are rare enough (sentinels: ``iinfo.max``) not to
#: cost the trace cache.
BAKED_INTEGERS = 2**24


#: Exponents eager's ``pow(tensor, number)`` computes as other ops (``sqrt``, ``rsqrt``,
#: products, reciprocals: ``(-inf) ** 0.5`` is nan, ``(-0.0) ** -0.5`` is -inf), which
#: a hoisted exponent would turn into ``pow``'s general case.
_POW_SPECIAL = (0.5, -0.5, 2, 3, -2)
_POW = (aten.pow.Tensor_Scalar, aten.pow_.Scalar)


def baked(value: int | float, func: Any = None) -> bool:
    """Whether a Python number argument of ``func`` stays in the graph rather than
    being hoisted."""
    return value in BAKED or (type(value) is int and abs(value) >= BAKED_INTEGERS) or (
        func in _POW and value in _POW_SPECIAL)


def _tensor_overload(op: torch._ops.OpOverload, index: int) -> torch._ops.OpOverload | None:
    """The overload of ``op``'s packet that takes a Tensor where ``op`` takes a Scalar."""
    name = op._overloadname
    for candidate in (name.replace("Scalar", "Tensor"), "Tensor", "Tensor_Tensor"):
        overload = getattr(op.overloadpacket, candidate, None)
        if overload is None or overload is op:
            continue
        schema_args = overload._schema.arguments
        if index < len(schema_args) and isinstance(schema_args[index].type, torch.TensorType):
            return overload
    return None


RECORD, VIEW, INPLACE, DECOMPOSE, ALPHA, ADDC, FALLBACK, UNSUPPORTED, OUT = (
    "record", "view", "inplace", "decompose", "alpha", "addc", "fallback", "unsupported", "out")
FACTORY, COPY = "factory", "copy"
#: An op ``dispatch`` handles before any plan (reading a value, leaving the device).
SPECIAL = "special"
#: An in-place view op (``squeeze_``, ``t_``, ...): the tensor itself becomes the view.
INPLACE_VIEW = "inplace_view"
#: An op the importer lacks that one of torch's other decompositions (beyond core ATen)
#: expands: traced through it when what it records is all importable, else on the host.
DECOMPOSE_OR_FALLBACK = "decompose_or_fallback"
#: An op torch decomposes to core ATen: its decomposition runs on the lazy tensors, so
#: the trace holds the ops the importer takes, with shapes inferred once.
CORE = "core"
#: torch.distributed: a process-group (c10d) op, run through the group at once
#: (``lazy_collectives``); an op that waits for or wraps a recorded collective's value.
PROCESS_GROUP, COLLECTIVE_READY = "process_group", "collective_ready"
_COMPOSITE: dict[torch._ops.OpOverload, Callable[..., Any] | None] = {}


def core_decomposition(func: torch._ops.OpOverload) -> Callable[..., Any] | None:
    """How ``make_fx`` decomposes ``func``: its entry in ``DECOMPOSITIONS`` (read each
    time: the table may change), else, for an op the importer has no handler for, its
    ``CompositeImplicitAutograd`` kernel (an op a decomposition calls reaches dispatch
    without having run it); None for an op kept whole."""
    found = DECOMPOSITIONS.get(func)
    if found is None and func not in IMPORTABLE:
        if func not in _COMPOSITE:
            _COMPOSITE[func] = func.decompose if torch._C._dispatch_has_kernel_for_dispatch_key(
                func.name(), "CompositeImplicitAutograd") else None
        found = _COMPOSITE[func]
    return found


def importable(func: torch._ops.OpOverload) -> bool:
    """Whether the trace may be imported holding ``func`` with no ``make_fx`` re-trace:
    the importer has a handler for it, and the re-trace would keep it whole or it is a
    view op (moving data, its handler and its decomposition agree)."""
    return func in IMPORTABLE and (func.is_view or core_decomposition(func) is None)


def plan_of(func: torch._ops.OpOverload) -> str:
    """How ``dispatch`` handles ``func``, decided once per op (kept on its key)."""
    key = lt.op_key(func)
    if key.plan is None:
        special = func in (aten._local_scalar_dense.default, aten._to_copy.default,
                           aten.copy_.default, aten.equal.default, aten.allclose.default,
                           aten._linalg_check_errors.default)
        key.plan = SPECIAL if special else underlying_plan(func)
    return key.plan


_UNDERLYING: dict[torch._ops.OpOverload, str] = {}


def underlying_plan(func: torch._ops.OpOverload) -> str:
    """``func``'s plan, for a :data:`SPECIAL` op where its special case does not apply."""
    plan = _UNDERLYING.get(func)
    if plan is None:
        plan = _UNDERLYING[func] = _decide_plan(func)
    return plan


def _decide_plan(func: torch._ops.OpOverload) -> str:
    if lazy_collectives.is_process_group_op(func):
        plan = PROCESS_GROUP
    elif lazy_collectives.is_ready_op(func):
        plan = COLLECTIVE_READY
    elif func in TRACE_DECOMPOSITIONS:
        plan = DECOMPOSE
    elif func not in DECOMPOSITIONS and core_decomposition(func) is not None:
        plan = CORE  # a composite op: only a decomposition calls one below autograd
    elif func in (aten.add_.Tensor, aten.add.Tensor, aten.sub.Tensor, aten.sub_.Tensor):
        plan = ALPHA
    elif func in (aten.addcmul_.default, aten.addcmul.default, aten.addcdiv_.default,
                  aten.addcdiv.default):
        plan = ADDC
    elif func in (aten.set_.source_Tensor, aten.set_.source_Storage):
        plan = UNSUPPORTED
    elif func in (aten._copy_from.default, aten._copy_from_and_resize.default):
        plan = COPY
    elif torch.Tag.out in func.tags:
        plan = OUT
    elif _takes_device(func) and (func not in IMPORTABLE or "empty" in func.__name__):
        plan = FACTORY  # what the compiler cannot import, and uninitialised memory
    elif func.is_view:
        plan = VIEW
    elif torch.Tag.inplace_view in func.tags and view_variant(func) is not None:
        plan = INPLACE_VIEW
    elif func._schema.is_mutable:
        plan = INPLACE
    elif func in DECOMPOSITIONS:
        plan = CORE
    elif func in IMPORTABLE:
        plan = RECORD
    elif func in decomposition_table and torch.Tag.nondeterministic_seeded not in func.tags:
        plan = DECOMPOSE_OR_FALLBACK
    else:
        plan = FALLBACK
    return plan


def hoist_target(func: torch._ops.OpOverload, index: int) -> torch._ops.OpOverload | None:
    """The op to record when argument ``index`` becomes a tensor input, or None when
    the scalar must be baked into the graph (cached per op and position)."""
    hoist = lt.op_key(func).hoist
    if index not in hoist:
        schema_args = func._schema.arguments
        target = None
        if index < len(schema_args):
            typ = schema_args[index].type
            if isinstance(typ, torch.TensorType):
                target = func
            elif isinstance(typ, torch.NumberType):
                target = _tensor_overload(func, index)
        hoist[index] = target
    return hoist[index]


SCALAR_DTYPES: dict[tuple[torch.dtype, type], torch.dtype] = {}


_INT_RANGES: dict[torch.dtype, tuple[int, int]] = {
    d: (torch.iinfo(d).min, torch.iinfo(d).max)
    for d in (torch.int8, torch.uint8, torch.int16, torch.int32)}


#: Ops that compute in their tensor's own integer type, a Python number as a wrapped
#: 0-d tensor of it, cast unchecked (``int8_tensor < 1000`` compares with -24). Not
#: ``div``, which computes in float (``int8_tensor / 1000`` divides by 1000.0).
_WRAPPING = {aten.add, aten.sub, aten.mul, aten.eq, aten.ne, aten.lt, aten.le, aten.gt,
             aten.ge, aten.remainder, aten.fmod, aten.bitwise_and, aten.bitwise_or,
             aten.bitwise_xor, aten.floor_divide}
#: Division with a rounding mode computes in the integer type too (``int8 // 1000``
#: divides by -24); without one it is true division, in float.
_DIVISION_MODES = {aten.div.Tensor_mode, aten.div.Scalar_mode}


def wrapped_int(value: int, dtype: torch.dtype, func: torch._ops.OpOverload) -> int:
    """A Python int argument of ``func`` as eager makes it a number of ``dtype``, a
    narrow integer type: wrapped around for an op of :data:`_WRAPPING` or a division
    with a rounding mode (``uint8 + 300`` adds 44); other ops keep it, and the hoisted
    tensor's conversion refuses it."""
    bounds = _INT_RANGES.get(dtype)
    if bounds is None or bounds[0] <= value <= bounds[1] or (
            func.overloadpacket not in _WRAPPING and func not in _DIVISION_MODES):
        return value
    return int(torch.tensor(value, dtype=torch.int64).to(dtype))


#: Ops whose eager CPU kernels compute a narrow float tensor with a Python number's own
#: value, in f32 (multiplication, division with or without rounding, ``lerp``'s
#: weight; addition and subtraction round the number to the tensor's type first): the
#: number is hoisted as an f32 tensor, not rounded (``x16 * 70000.0`` would overflow;
#: ``bf16 // 0.3`` divided by 0.30078125; AdamW's ``exp_avg.lerp_(grad, 0.1)`` on bf16
#: weighed by 0.10009765625), and the importer computes in f32.
_OPMATH = {aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar,
           aten.div.Tensor_mode, aten.div.Scalar_mode, aten.lerp.Scalar}
_TRUE_DIVISION = {aten.div.Tensor, aten.div.Scalar}
NARROW_FLOATS = (torch.float16, torch.bfloat16)


def narrow_opmath(dtype: torch.dtype, func: torch._ops.OpOverload) -> bool:
    """Whether ``func`` computes a narrow float ``dtype`` with a Python number's own value
    in f32. Beside a 0-d tensor the number stays in the graph (an f32 hoist would widen
    the result), where the importer computes in f32 (``0-d x16 * 70000.0`` is 35008)."""
    return dtype in NARROW_FLOATS and func in _OPMATH


def hoisted_number(value: int | float, dtype: torch.dtype, rank: int,
                   func: torch._ops.OpOverload, kwargs: dict[str, Any]
                   ) -> tuple[int | float, torch.dtype]:
    """A Python number hoisted as ``func``'s argument next to a tensor of ``dtype`` with
    ``rank`` dimensions: its value (an int wrapped as :func:`wrapped_int` says) and the
    dtype of its 0-d tensor, :func:`scalar_dtype`'s, but f32 for a product or quotient
    of a narrow float tensor with dimensions (:data:`_OPMATH`; beside a 0-d tensor an
    f32 one would widen the result), and int64 for an int dividing an integer tensor
    (true division keeps its value: ``int8 / 1000`` divides by 1000.0)."""
    kind = type(value)
    if func is aten.pow.Tensor_Scalar and kind is int and value < 0 and not (
            dtype.is_floating_point or dtype.is_complex):  # eager's check (a hoisted
        # number reaches the meta kernel as a 0-d tensor, whose value it cannot check)
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    hoisted = SCALAR_DTYPES.get((dtype, kind)) or scalar_dtype(dtype, kind)
    if hoisted in NARROW_FLOATS and rank and func in _OPMATH:
        hoisted = torch.float32
    if kind is int:
        if hoisted in _INT_RANGES and (func in _TRUE_DIVISION or (
                func in _DIVISION_MODES and kwargs.get("rounding_mode") is None)):
            return value, torch.int64
        value = wrapped_int(value, hoisted, func)
    return value, hoisted


def scalar_dtype(tensor_dtype: torch.dtype, scalar_type: type) -> torch.dtype:
    """The dtype a Python scalar takes next to a tensor (it never widens a float tensor)."""
    key = (tensor_dtype, scalar_type)
    if key not in SCALAR_DTYPES:
        SCALAR_DTYPES[key] = torch.result_type(
            torch.empty(1, dtype=tensor_dtype, device="meta"), scalar_type(2))
    return SCALAR_DTYPES[key]


def _takes_device(func: torch._ops.OpOverload) -> bool:
    """A factory: it takes the device to make its result on."""
    return any(a.name == "device" and a.kwarg_only for a in func._schema.arguments)


def on_device(device: Any) -> bool:
    return device is not None and torch.device(device).type == lt.DEVICE_NAME


def leaves_device(kwargs: dict[str, Any]) -> bool:
    device = kwargs.get("device")
    return device is not None and torch.device(device).type != lt.DEVICE_NAME


def functional_variant(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    if func is aten.copy_.default:
        return aten.copy.default
    name = func._schema.name.split("::")[1]
    if not name.endswith("_"):
        return None
    packet = getattr(aten, name[:-1], None)
    if packet is None:
        return None
    # the overload taking the same arguments: not always of the same name
    # (``pow_.Scalar(Tensor self, Scalar exponent)`` is ``pow.Tensor_Scalar``; ``pow.Scalar``
    # raises a number to tensor powers)
    wanted = [(a.name, str(a.type)) for a in func._schema.arguments]
    named = getattr(packet, func._overloadname, None)
    for overload in [named] + [getattr(packet, o) for o in packet.overloads()]:
        if overload is not None and [(a.name, str(a.type)) for a in
                                     overload._schema.arguments] == wanted:
            return overload
    return None


def inplace_form(func: torch._ops.OpOverload) -> tuple[Any, bool]:
    """How an in-place op is traced (decided once per op, kept on its key): its
    functional variant and whether that is decomposed, or ``(None, False)`` where it
    runs on the host (it writes more than its first argument, or the compiler has no
    functional form)."""
    key = lt.op_key(func)
    if key.inplace is None:
        writes = [i for i, a in enumerate(func._schema.arguments)
                  if a.alias_info is not None and a.alias_info.is_write]
        functional = functional_variant(func)
        if writes != [0] or functional is None or (
                functional not in IMPORTABLE and functional not in DECOMPOSITIONS):
            key.inplace = (None, False)
        else:
            key.inplace = (functional, func is not aten.copy_.default
                           and core_decomposition(functional) is not None)
    return key.inplace


def check_cast(result: torch.dtype, target: torch.dtype) -> None:
    """Refuse, with eager's message, an in-place op whose result ``target`` cannot hold
    (``int_tensor.mul_(0.5)``): written, it would be cast without an error."""
    if not torch.can_cast(result, target):
        def name(dtype: torch.dtype) -> str:  # torch.float32 -> Float, as c10 names it
            return torch.empty(0, dtype=dtype).type().removeprefix("torch.").removesuffix(
                "Tensor")

        raise RuntimeError(f"result type {name(result)} can't be cast to the desired "
                           f"output type {name(target)}")


def check_inplace(result: torch.Tensor, target: torch.Tensor) -> None:
    """Refuse, with eager's messages, an in-place op whose result ``target`` cannot
    hold: one of another dtype it cannot be cast to, or of a shape its operands
    broadcast to that is not ``target``'s (``zeros(4).add_(ones(2, 4))``: written, the
    tensor would hold the 2x4 result under its shape of 4)."""
    check_cast(result.dtype, target.dtype)
    if result.shape != target.shape:
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the "
                           f"broadcast shape {list(result.shape)}")


def view_variant(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The view op an in-place view op (``transpose_``) applies to its tensor: the
    overload of the op without ``_`` that takes the same arguments."""
    name = func._schema.name.split("::")[1]
    packet = getattr(aten, name.removesuffix("_"), None)
    if packet is None or not name.endswith("_"):
        return None
    wanted = [(a.name, str(a.type)) for a in func._schema.arguments]
    for overload in packet.overloads():
        candidate = getattr(packet, overload)
        if candidate.is_view and [(a.name, str(a.type)) for a in
                                  candidate._schema.arguments] == wanted:
            return candidate
    return None


def _writes(arg: torch._C.Argument) -> bool:
    return arg.alias_info is not None and arg.alias_info.is_write


_OUT_NAMES: dict[torch._ops.OpOverload, tuple[str, ...]] = {}


def out_names(func: torch._ops.OpOverload) -> tuple[str, ...]:
    """The names of an out= overload's outputs (keyword-only, in the returns' order)."""
    names = _OUT_NAMES.get(func)
    if names is None:
        names = _OUT_NAMES[func] = tuple(a.name for a in func._schema.arguments if _writes(a))
    return names


#: What a factory's functional overload takes and its out= overload does not.
_FACTORY_KWARGS = frozenset(("dtype", "layout", "device", "pin_memory"))
_OUT_FUNCTIONAL: dict[torch._ops.OpOverload, torch._ops.OpOverload | None] = {}


def out_functional(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The functional overload that the out= overload ``func`` writes into its outs:
    the same inputs (names, types, defaults, order) and one result per out; a factory's
    may also take ``dtype``, ``layout``, ``device`` and ``pin_memory``. (The inverse of
    ``torch._library._out_variant.to_out_variant``, which does not allow the latter.)"""
    if func in _OUT_FUNCTIONAL:
        return _OUT_FUNCTIONAL[func]
    if not all(a.kwarg_only for a in func._schema.arguments if _writes(a)):
        _OUT_FUNCTIONAL[func] = None  # it updates an input too: run it on the host
        return None
    inputs = [(a.name, str(a.type), a.default_value)
              for a in func._schema.arguments if not _writes(a)]
    names = {i[0] for i in inputs}
    found = None
    packet = func.overloadpacket
    for name in packet.overloads():
        candidate = getattr(packet, name)
        schema = candidate._schema
        if (schema.is_mutable or candidate.is_view
                or len(schema.returns) != len(out_names(func))):
            continue
        own = [(a.name, str(a.type), a.default_value) for a in schema.arguments
               if not (a.kwarg_only and a.name in _FACTORY_KWARGS and a.name not in names)]
        if own == inputs:
            found = candidate
            break
    _OUT_FUNCTIONAL[func] = found
    return found


def as_strided_of_storage(view: LazyTensor, args: tuple[Any, ...],
                          kwargs: dict[str, Any]) -> LazyTensor:
    """``view.as_strided(size, stride, offset)``: its sizes, strides and offset address
    the storage, not the view, so it is a view of the storage's base (a dense tensor,
    its elements in storage order); the offset defaults to the view's own, as eager's."""
    root = view._views[0].base_meta
    size, stride, *rest = args
    offset = rest[0] if rest and rest[0] is not None else kwargs.get("storage_offset")
    if offset is None:
        offset = view.storage_offset()
    meta = lt.infer_meta(aten.as_strided.default, (root, size, stride, offset), {})
    step = ViewStep(aten.as_strided.default, (size, stride, offset), (), root, meta)
    return LazyTensor(view._storage_, (step,), meta)


def resize_out(tensor: LazyTensor, meta: torch.Tensor) -> None:
    """Give ``tensor`` the shape and strides of ``meta``, as eager resizes an out=
    argument of the wrong shape. A wrapper subclass cannot be resized through dispatch
    (its storage holds no data), so its metadata is set by ``set_``'s meta kernel on
    its own storage; the old value is dropped with a fresh storage. Not for a tensor
    that is a view or an alias (``detach()``'s, which shares its base's storage): eager
    would resize the memory they share."""
    if tensor._views or getattr(tensor, "_alias", False):
        raise LazyError(f"an out= tensor that shares its memory with another must have "
                        f"the result's shape {list(meta.shape)}, not {list(tensor.shape)}, "
                        f"at {describe_location(user_location())}")
    aten.set_.source_Storage_storage_offset.redispatch(
        _META_KEYS, tensor, tensor.untyped_storage(), 0, meta.shape, meta.stride())
    tensor._sig = (tuple(meta.shape), meta.stride(), meta.dtype)
    tensor._cache = None
    old = tensor._storage_
    tensor._storage_ = LazyStorage(old.value)
    # a view or alias of the tensor still on the old storage would see the resized
    # memory in eager, which the device does not model: reading it fails, naming why
    value = old.value
    shape, dtype = ((value.shape, value.dtype) if isinstance(value, DeviceData)
                    else (tuple(value.meta.shape), value.meta.dtype))
    resized: Future[None] = Future()
    resized.set_exception(LazyError(
        f"this tensor shares its memory with one that was resized (an out= of another "
        f"shape, or resize_) at {describe_location(user_location())}: eager would show "
        "it the resized memory, which the device does not model; copy it before"))
    old.set(DeviceData(shape, dtype, future=resized))


_META_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)


def single_views(func: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any],
                 metas: Sequence[torch.Tensor]) -> list[tuple[Any, tuple[Any, ...]]] | None:
    """A view op of several results (``split``, ``split_with_sizes``, ``unbind``) as
    one single view of the base per result, ``(op, args after the base)``: a slice or
    a select, whose writes reach the base and which see the base's (``None``: another
    op)."""
    packet = func.overloadpacket
    if packet not in (aten.split, aten.split_with_sizes, aten.unbind):
        return None
    rank = args[0].dim()
    given = args[2 if packet is not aten.unbind else 1:]
    dim = (given[0] if given else kwargs.get("dim", 0)) % max(rank, 1)
    if packet is aten.unbind:
        return [(aten.select.int, (dim, i)) for i in range(len(metas))]
    parts, start = [], 0
    for meta in metas:
        parts.append((aten.slice.Tensor, (dim, start, start + meta.shape[dim], 1)))
        start += meta.shape[dim]
    return parts


def refuse_write_to_copy(target: Any) -> None:
    """A result of a view op that the runtime records as a copy (a view of several
    results other than :func:`single_views`') takes no in-place write: eager would
    write its base."""
    made_by = getattr(target, "_made_by", None)
    if made_by is not None:
        raise LazyError(f"an in-place update through a view made by {made_by} is not "
                        f"supported, at {describe_location(user_location())}")


def scatter_view(step: ViewStep, base: Value, new: Value) -> Value:
    """The base value with the view ``step`` of it replaced by ``new``."""
    op, args = step.op, step.args
    meta = step.base_meta
    packet = op.overloadpacket
    if op is aten.view.dtype:  # the same bits seen as the base's type again
        if new_dtype_size(new) != meta.element_size():
            raise LazyError(f"an in-place update through a view as {args[0]} of a "
                            f"{meta.dtype} tensor (another element size) is not supported, "
                            f"at {describe_location(user_location())}")
        node_op, node_args = aten.view.dtype, (new, meta.dtype)
    elif packet in (aten.view, aten._unsafe_view, aten.reshape, aten.squeeze, aten.unsqueeze,
                    aten.flatten, aten.view_copy):
        # reshape: the new value may not be laid out as a view of it can be (an op on a
        # transposed view gives a transposed result)
        node_op, node_args = aten.reshape.default, (new, list(meta.shape))
    elif packet in (aten.alias, aten.detach) or (
            packet is aten.expand and tuple(_value_meta(new).shape) == tuple(meta.shape)):
        return new  # (an expand to the base's own shape is the base, as eager's)
    elif packet in (aten.t, aten.transpose):
        node_op = aten.t.default if packet is aten.t else aten.transpose.int
        node_args = (new,) if packet is aten.t else (new, *args)
    elif packet is aten.permute:
        inverse = [0] * len(args[0])
        for i, p in enumerate(args[0]):
            inverse[p % len(inverse)] = i
        node_op, node_args = aten.permute.default, (new, inverse)
    elif packet is aten.select:  # select_scatter, in ops the importer takes
        dim, index = args[0] % meta.dim(), args[1] % meta.shape[args[0]]
        column = Node(aten.unsqueeze.default, (new, dim), {},
                      lt.infer_meta(aten.unsqueeze.default, (_value_meta(new), dim), {}))
        node_op, node_args = aten.slice_scatter.default, (base, column, dim, index, index + 1)
    elif packet is aten.slice:
        node_op, node_args = aten.slice_scatter.default, (base, new, *args)
    elif packet is aten.diagonal:  # (cov.diagonal().add_(eps))
        node_op, node_args = aten.diagonal_scatter.default, (base, new, *args)
    elif packet is aten.as_strided:  # (DDP's gradient views into its buckets)
        node_op, node_args = aten.as_strided_scatter.default, (base, new, *args)
    else:
        raise LazyError(f"an in-place update through a view made by {op} is not supported, "
                        f"at {describe_location(user_location())}")
    meta_args = tuple(_value_meta(a) for a in node_args)
    return Node(node_op, node_args, {}, lt.infer_meta(node_op, meta_args, {}))


def new_dtype_size(v: Any) -> int:
    """The element size of a value written through a view."""
    return _value_meta(v).element_size()


def _value_meta(v: Any) -> Any:
    if isinstance(v, Node | Item | Placeholder):
        return v.meta
    if isinstance(v, DeviceData):
        return torch.empty(v.shape, dtype=v.dtype, device="meta")
    return v
