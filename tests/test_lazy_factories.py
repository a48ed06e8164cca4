"""Factory functions and ``out=`` overloads on the ``mncore`` device against eager.

The factories are not a hand-picked few: they are every ATen overload whose schema
takes a keyword-only ``device`` and returns one tensor (``arange``, ``linspace``,
``eye``, ``full``, the windows, ``rand*``, ``*_like``, ``new_*``, ...), called with
arguments made from the schema, each also through its ``out=`` overload with an ``out``
of the wrong size. Values are compared except where eager's are unspecified (random
ops, uninitialised memory): there shape and dtype are.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import torch_mncore
from mncore_ir.frontends.lazy_runtime import LazyError

aten = torch.ops.aten
FACTORY_KWARGS = ("dtype", "layout", "device", "pin_memory")

#: Overloads that make no dense tensor of the device's: other layouts, files.
NOT_DENSE = ("sparse", "quantized", "from_file")


def factory_overloads() -> list[torch._ops.OpOverload]:
    """Public ATen overloads with a keyword-only ``device`` that return one tensor."""
    found = []
    for schema in torch._C._jit_get_all_schemas():
        namespace, name = schema.name.split("::")
        if namespace != "aten" or name.startswith("_") or any(n in name for n in NOT_DENSE):
            continue
        if not any(a.name == "device" and a.kwarg_only for a in schema.arguments):
            continue
        if len(schema.returns) != 1 or str(schema.returns[0].type) != "Tensor":
            continue
        if any(str(a.type) == "List[t]" for a in schema.arguments):
            continue  # TorchScript's generic torch.tensor: see PYTHON_FACTORIES
        packet = getattr(aten, name, None)
        overload = getattr(packet, schema.overload_name or "default", None)
        if overload is not None:  # aten::tensor and friends are TorchScript builtins
            found.append(overload)
    return sorted(set(found), key=str)


FACTORIES = factory_overloads()

#: Argument values by name (and the tensors' by name below); arguments with defaults
#: keep them.
VALUES: dict[str, Any] = {
    "size": [2, 3], "stride": [1, 2], "physical_layout": [1, 0], "n": 4, "m": 3,
    "window_length": 5, "periodic": False, "alpha": 0.5, "beta": 0.25, "row": 3, "col": 4,
    "steps": 5, "start": 1, "end": 8, "step": 2, "s": 3.5, "fill_value": 2.5, "high": 10,
    "low": 2, "mean": 0.5, "std": 2.0,
}
#: ``aten::tensor(t)`` and ``as_tensor(t)``: the value by its type.
VALUES_OF_TYPE = {"bool": True, "int": 3, "float": 2.5, "complex": 1 - 2j}


def host_arguments(schema: torch._C.FunctionSchema) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for ``schema``, with host tensors."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for a in schema.arguments:
        if a.name in FACTORY_KWARGS or (a.alias_info is not None and a.alias_info.is_write):
            continue
        if str(a.type) == "Tensor":
            value: Any = (torch.arange(6.0).reshape(2, 3) - 2.5 if a.name in ("self", "data")
                          else torch.tensor(VALUES[a.name]))
        elif a.name == "t":
            value = VALUES_OF_TYPE[str(a.type)]
        elif "Generator" in str(a.type):
            value = torch.Generator().manual_seed(0)
        elif a.has_default_value():
            continue
        else:
            value = VALUES[a.name]
        if a.kwarg_only:
            kwargs[a.name] = value
        else:
            args.append(value)
    return args, kwargs


def to_device(args: Any) -> Any:
    return [a.to("mncore") if isinstance(a, torch.Tensor) else a for a in args]


def to_device_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``high`` stays on the host: eager wants it "a scalar tensor and on CPU"."""
    return {k: v if k == "high" else to_device([v])[0] for k, v in kwargs.items()}


def values_specified(op: torch._ops.OpOverload) -> bool:
    """Eager's values are unspecified for random ops (tagged) and uninitialised memory."""
    return torch.Tag.nondeterministic_seeded not in op.tags and "empty" not in op.__name__


def assert_like_eager(ours: torch.Tensor, eager: torch.Tensor, check_values: bool) -> None:
    assert ours.device.type == "mncore"
    torch_mncore.sync()
    host = ours.cpu()
    assert (host.shape, host.dtype) == (eager.shape, eager.dtype)
    if check_values:
        torch.testing.assert_close(host, eager, equal_nan=True)


def dtypes(schema: torch._C.FunctionSchema) -> list[torch.dtype | None]:
    """The default dtype, and others where the factory takes one."""
    if any(a.name == "dtype" for a in schema.arguments):
        return [None, torch.float64, torch.int32]
    return [None]


@pytest.fixture(autouse=True)
def lazy() -> Iterator[None]:
    torch_mncore.init("cpu", implicit_sync="silent")
    yield
    torch_mncore.wait_device_ops()


def run_both(op: torch._ops.OpOverload, dtype: torch.dtype | None
             ) -> tuple[torch.Tensor | Exception, Any]:
    """Eager on the host (or its error), and the same call on the device."""
    args, kwargs = host_arguments(op._schema)
    if dtype is not None:
        kwargs["dtype"] = dtype
    takes_tensor = any(isinstance(a, torch.Tensor) for a in (*args, *kwargs.values()))
    try:
        eager: torch.Tensor | Exception = op(*args, **kwargs)
    except (RuntimeError, ValueError) as error:
        eager = error
    device_kwargs = to_device_kwargs(kwargs)
    if not takes_tensor or dtype is not None:
        device_kwargs["device"] = "mncore"

    def call() -> torch.Tensor:
        return op(*to_device(args), **device_kwargs)

    return eager, call


def test_the_factory_list_is_torch_s() -> None:
    names = {op.__name__.split(".")[0] for op in FACTORIES}
    assert {"arange", "linspace", "logspace", "eye", "full", "zeros", "ones", "empty",
            "rand", "randn", "randint", "randperm", "zeros_like", "new_full", "hann_window",
            "tril_indices", "scalar_tensor"} <= names
    assert len(FACTORIES) >= 70


@pytest.mark.parametrize("op", FACTORIES, ids=str)
def test_factory_matches_eager(op: torch._ops.OpOverload) -> None:
    ran = 0
    for dtype in dtypes(op._schema):
        eager, call = run_both(op, dtype)
        if isinstance(eager, Exception):  # not a valid call: the device refuses it too
            with pytest.raises(type(eager)):
                torch_mncore.sync()
                call().cpu()
            continue
        if eager.dtype.is_complex or any(str(a.type) == "complex" for a in op._schema.arguments):
            # the compilers take no complex dtypes: a complex tensor is held, not computed
            with contextlib.suppress(LazyError):
                assert_like_eager(call(), eager, values_specified(op))
                ran += 1
            continue
        assert_like_eager(call(), eager, values_specified(op))
        ran += 1
    assert ran, f"{op}: eager accepts none of the generated calls"


def out_overload(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """``op``'s out= overload: its inputs, less the factory keywords, plus ``out``."""
    inputs = [(a.name, str(a.type)) for a in op._schema.arguments
              if a.name not in FACTORY_KWARGS]
    for name in op.overloadpacket.overloads():
        candidate = getattr(op.overloadpacket, name)
        schema = candidate._schema
        if torch.Tag.out in candidate.tags and [
                (a.name, str(a.type)) for a in schema.arguments if a.name != "out"] == inputs:
            return candidate
    return None


OUT_FACTORIES = [(op, out) for op in FACTORIES if (out := out_overload(op)) is not None]


@pytest.mark.parametrize("size", [0, 7, None], ids=["empty-out", "wrong-size-out",
                                                      "right-size-out"])
@pytest.mark.parametrize(("op", "out_op"), OUT_FACTORIES, ids=[str(o) for _, o in OUT_FACTORIES])
def test_factory_out_overload_matches_eager(op: torch._ops.OpOverload,
                                            out_op: torch._ops.OpOverload,
                                            size: int | None) -> None:
    args, kwargs = host_arguments(out_op._schema)
    expected = op(*args, **kwargs)
    shape = expected.shape if size is None else (size,)
    eager_out = torch.zeros(shape, dtype=expected.dtype)
    out = torch.zeros(shape, dtype=expected.dtype, device="mncore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager's "An output ... was resized"
        assert out_op(*args, **kwargs, out=eager_out) is eager_out
        assert out_op(*to_device(args), **to_device_kwargs(kwargs), out=out) is out
    assert_like_eager(out, eager_out, values_specified(op))


OUT_OF_COMMON_OPS = {
    "add": lambda a, b, out: torch.add(a, b, alpha=2, out=out),
    "mm": lambda a, b, out: torch.mm(a, b.t(), out=out),
    "mul-int-into-float": lambda a, b, out: torch.mul(a.long(), b.long(), out=out),
    "sum-dim": lambda a, b, out: torch.sum(a, 1, out=out),
    "arange": lambda a, b, out: torch.arange(2, 11, 3, out=out),
    "linspace": lambda a, b, out: torch.linspace(-1, 1, 7, out=out),
    "eye": lambda a, b, out: torch.eye(3, 4, out=out),
    "cat": lambda a, b, out: torch.cat([a, b], out=out),
}


def common_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)


@pytest.mark.parametrize("out_shape", [(0,), (5, 5), None],
                         ids=["empty-out", "wrong-size-out", "right-size-out"])
@pytest.mark.parametrize("name", OUT_OF_COMMON_OPS)
def test_out_overloads_of_common_ops(name: str, out_shape: tuple[int, ...] | None) -> None:
    fn = OUT_OF_COMMON_OPS[name]
    a, b = common_inputs()
    expected = fn(a, b, torch.empty(0))
    shape = expected.shape if out_shape is None else out_shape
    out = torch.full(shape, -1.0, device="mncore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager's "An output ... was resized"
        result = fn(a.to("mncore"), b.to("mncore"), out)
    assert result is out
    assert_like_eager(out, expected, True)


def test_out_is_traced_not_run_on_the_host() -> None:
    a, b = common_inputs()
    out = torch.empty(0, device="mncore")
    torch.add(a.to("mncore"), b.to("mncore"), out=out)
    torch.mm(out, out.t(), out=out)  # out is an input too
    torch_mncore.sync()
    assert not any(k.startswith("CpuFallback") for k in torch_mncore.counters())
    torch.testing.assert_close(out.cpu(), (a + b) @ (a + b).t())


def test_out_with_an_output_per_result() -> None:
    a, _ = common_inputs()
    values, indices = torch.empty(0, device="mncore"), torch.empty(0, dtype=torch.long,
                                                                    device="mncore")
    result = torch.max(a.to("mncore"), 1, out=(values, indices))
    assert result[0] is values and result[1] is indices
    torch_mncore.sync()
    expected = torch.max(a, 1)
    torch.testing.assert_close(values.cpu(), expected.values)
    torch.testing.assert_close(indices.cpu(), expected.indices)


def test_out_that_is_a_view_writes_its_base() -> None:
    a, b = common_inputs()
    base = torch.zeros(2, 3, 4, device="mncore")
    torch.add(a.to("mncore"), b.to("mncore"), out=base[1])
    torch_mncore.sync()
    torch.testing.assert_close(base.cpu(), torch.stack([torch.zeros(3, 4), a + b]))


def test_out_that_is_a_view_of_the_wrong_size_is_refused() -> None:
    a, b = common_inputs()
    base = torch.zeros(2, 5, device="mncore")
    with pytest.raises(LazyError, match=r"shares its memory with another must have the "
                                        r"result's shape \[3, 4\], not \[5\], at "
                                        r".*test_lazy_factories.py"):
        torch.add(a.to("mncore"), b.to("mncore"), out=base[1])


def test_out_that_is_an_alias_writes_its_base_and_is_not_resized() -> None:
    """``detach()`` shares its base's storage (no view step): a write through it is a
    write to the base, and resizing it, which eager does to the memory both see, is
    refused as for a view."""
    a, b = common_inputs()
    base = torch.zeros(3, 4, device="mncore")
    torch.add(a.to("mncore"), b.to("mncore"), out=base.detach())
    torch.testing.assert_close(base.cpu(), a + b)
    wrong = torch.zeros(5, device="mncore")
    with pytest.raises(LazyError, match=r"shares its memory with another"):
        torch.add(a.to("mncore"), b.to("mncore"), out=wrong.detach())
    alone = torch.zeros(5, device="mncore")
    torch.add(a.to("mncore"), b.to("mncore"), out=alone)
    torch.testing.assert_close(alone.cpu(), a + b)


def test_out_dtype_eager_cannot_cast_to_is_refused_as_eager_does() -> None:
    a, b = common_inputs()
    with pytest.raises(RuntimeError) as eager:
        torch.add(a, b, out=torch.empty(3, 4, dtype=torch.long))
    assert "can't be cast" in str(eager.value)
    out = torch.empty(3, 4, dtype=torch.long, device="mncore")
    with pytest.raises(RuntimeError, match=re.escape(str(eager.value))):
        torch.add(a.to("mncore"), b.to("mncore"), out=out)


def test_out_overload_without_functional_runs_on_the_host_and_writes_out() -> None:
    g = torch.randn(1, 2, 1, 1, 1)
    x = torch.randn(1, 2, 3, 3, 3)
    expected = aten.adaptive_avg_pool3d_backward.grad_input(g, x, grad_input=torch.empty(0))
    out = torch.empty(0, device="mncore")
    result = aten.adaptive_avg_pool3d_backward.grad_input(
        g.to("mncore"), x.to("mncore"), grad_input=out)
    assert result is out
    assert_like_eager(out, expected, True)


PYTHON_FACTORIES = {
    "tensor": lambda d: torch.tensor([[1.5, 2.0], [3.0, -4.0]], device=d),
    "tensor-int": lambda d: torch.tensor([1, 2, 3], device=d),
    "tensor-empty": lambda d: torch.tensor([], device=d),
    "tensor-scalar": lambda d: torch.tensor(7, dtype=torch.int16, device=d),
    "as_tensor": lambda d: torch.as_tensor([1.0, 2.0], dtype=torch.float64, device=d),
    "asarray": lambda d: torch.asarray([[1, 2], [3, 4]], device=d),
    "new_tensor": lambda d: torch.ones(2, device=d).new_tensor([5, 6]),
    "new_tensor-dtype": lambda d: torch.ones(2, device=d).new_tensor([5, 6], dtype=torch.long),
    "index-with-list": lambda d: torch.arange(12.0, device=d).reshape(3, 4)[:, [0, 2]],
    "index-with-nested-list": lambda d: torch.arange(12.0, device=d).reshape(3, 4)[[0, 2], 1:],
}


@pytest.mark.parametrize("name", PYTHON_FACTORIES)
def test_python_factories_match_eager(name: str) -> None:
    make = PYTHON_FACTORIES[name]
    assert_like_eager(make("mncore"), make("cpu"), True)


def test_copy_from_device_into_a_host_tensor_and_back() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], device="mncore") * 2
    torch_mncore.sync()
    host = torch.zeros(3)
    host.copy_(x)
    torch.testing.assert_close(host, torch.tensor([2.0, 4.0, 6.0]))


def test_backend_copies_resize_and_copy_both_ways() -> None:
    src = torch.arange(6.0).reshape(2, 3)
    dst = torch.zeros(2, device="mncore")
    assert aten._copy_from_and_resize(src, dst) is dst
    assert aten._copy_from(src * 2, torch.zeros(2, 3, device="mncore")).shape == (2, 3)
    host = torch.zeros(1, dtype=torch.float64)
    assert aten._copy_from_and_resize(dst, host) is host
    torch_mncore.sync()
    assert dst.shape == (2, 3)
    torch.testing.assert_close(dst.cpu(), src)
    torch.testing.assert_close(host, src.double())
