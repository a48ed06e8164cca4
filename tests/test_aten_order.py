"""Order statistics, scans, arg-extremes and scatters through torch_mncore against eager
PyTorch on each device: sort (stable, NaN last ascending and first descending), topk,
kthvalue, median and nanmedian (with NaN), searchsorted and bucketize (with a sorter,
NaN past every boundary), quantile and isin (torch's decompositions over them), prod
and the cumulative ops (NaN propagation, cummax's index of the latest extreme),
argmax/argmin/max.dim/min.dim (first index, NaN as the extreme, the least int64),
scatter/scatter_add of tensors, gather with a smaller index, boolean-mask writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from conftest import run_on_device

import torch_mncore

DEVICES = ["cpu", "interp", "task", "mncore"]
BOUNDARIES = torch.tensor([-1.0, 0.0, 0.5, 2.0])
INDEX = torch.tensor([[0, 1, 2, 3, 0], [1, 2, 3, 0, 1], [3, 3, 0, 1, 2]])
SMALL_INDEX = torch.tensor([[4, 0, 1], [2, 2, 3]])


def floats() -> torch.Tensor:
    torch.manual_seed(0)
    x = torch.randn(3, 7)
    x[1, 3] = x[2, 5] = float("nan")
    x[0, 2] = x[0, 4]  # a tie
    return x


def integers() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randperm(21).reshape(3, 7) - 10  # distinct: tie order is torch's own


Case = Callable[[torch.Tensor], Any]
ORDER: dict[str, Case] = {
    "sort": lambda t: t.sort(),
    "sort_descending_dim0": lambda t: t.sort(0, descending=True),
    "sort_stable": lambda t: torch.sort(t, stable=True, dim=1),
    "argsort": lambda t: t.argsort(1),
    "msort": lambda t: torch.msort(t),
    "topk": lambda t: t.topk(3),
    "topk_smallest_dim0": lambda t: t.topk(2, dim=0, largest=False),
    "kthvalue": lambda t: t.kthvalue(2, 1),
    "kthvalue_keepdim": lambda t: t.kthvalue(3, 0, keepdim=True),
    "median": lambda t: t.median(),
    "median_dim": lambda t: t.median(1),
    "nanmedian": lambda t: t.nanmedian(),
    "nanmedian_dim": lambda t: t.nanmedian(0, keepdim=True),
    "bucketize": lambda t: torch.bucketize(t.float(), BOUNDARIES.to(t.device)),
    "searchsorted_right": lambda t: torch.searchsorted(BOUNDARIES.to(t.device), t.float(),
                                                       right=True),
    "searchsorted_sorter": lambda t: torch.searchsorted(
        BOUNDARIES.flip(0).to(t.device), t.float(),
        sorter=torch.arange(3, -1, -1).to(t.device), side="right"),
    "histc": lambda t: torch.histc(t.float().nan_to_num(), 6),
    "histc_range": lambda t: torch.histc(t.float().nan_to_num(), 5, -1.0, 1.0),
    "quantile": lambda t: torch.quantile(t.float(), 0.3, dim=1),
    "isin": lambda t: torch.isin(t, t[0]),
    "prod": lambda t: t.prod(),
    "prod_dim": lambda t: t.prod(1),
    "prod_keepdim": lambda t: t.prod(0, keepdim=True),
    "cumprod": lambda t: t.cumprod(1),
    "cummax": lambda t: t.cummax(1),
    "cummin_dim0": lambda t: t.cummin(0),
    "logcumsumexp": lambda t: torch.logcumsumexp(t.float() * 30, 1),
    "argmax": lambda t: t.argmax(),
    "argmax_dim": lambda t: t.argmax(1),
    "argmin_keepdim": lambda t: t.argmin(0, keepdim=True),
    "max_dim": lambda t: t.max(1),
    "min_dim_keepdim": lambda t: t.min(0, keepdim=True),
    "amin": lambda t: torch.amin(t, 1),
    "min": lambda t: t.min(),
}
SCATTER: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "scatter_src": lambda t, s: t.scatter(0, INDEX.to(t.device), s),
    "scatter_add": lambda t, s: t.scatter_add(0, INDEX.to(t.device), s),
    "scatter_small_index": lambda t, s: t.scatter(1, SMALL_INDEX.to(t.device), s),
    "scatter_add_small_index": lambda t, s: t.scatter_add(1, SMALL_INDEX.to(t.device), s),
    "scatter_reduce_add": lambda t, s: t.scatter(0, INDEX.to(t.device), s, reduce="add"),
    **{f"scatter_reduce_{how}{'' if keep else '_excluding_self'}":
       (lambda t, s, how=how, keep=keep: t.scatter_reduce(
           1, SMALL_INDEX.to(t.device), s, how, include_self=keep))
       for how in ("sum", "prod", "mean", "amax", "amin") for keep in (True, False)},
    "scatter_reduce_dim0": lambda t, s: t.scatter_reduce(0, INDEX.to(t.device), s, "amax"),
    **{f"index_reduce_{how}": (lambda t, s, how=how: t.index_reduce(
        0, torch.tensor([2, 0, 2]).to(t.device), s[:3], how)) for how in (
        "prod", "mean", "amax", "amin")},
    "scatter_multiply": lambda t, s: t.scatter(0, INDEX.to(t.device), s, reduce="multiply"),
    "gather_small_index": lambda t, s: torch.gather(t, 1, SMALL_INDEX.to(t.device)),
    "mask_write": lambda t, s: t.index_put((s > 0,), torch.tensor(3.0).to(t.device)),
    "mask_accumulate": lambda t, s: t.index_put((s > 0,), torch.tensor(3.0).to(t.device),
                                                accumulate=True),
    "row_mask_write": lambda t, s: t.index_put((s[:, 0] > 0,), torch.tensor(-1.0).to(
        t.device)),
}


#: Cases whose integer arithmetic the tiny machine leaves to the host (products and
#: f32-to-integer conversions that need rounding).
TINY_HOST = ("quantile", "prod", "cumprod", "cummax", "cummin", "mean", "isin")


def _on_device(device: str, fn: Callable[..., Any], *args: torch.Tensor,
               compiled: bool = True) -> list[Any]:
    """``fn`` on the device; with ``compiled``, also that no op ran on the host."""
    got, host = run_on_device(device, fn, *args)
    assert not (compiled and host), host
    return got


def _assert_same(got: list[torch.Tensor], want: Any) -> None:
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ORDER)
@pytest.mark.parametrize("make", [floats, integers], ids=["float", "int"])
def test_order_statistics_equal_eager(case: str, device: str, make: Callable) -> None:
    x = make()
    fn = ORDER[case]
    try:
        want = fn(x)
    except RuntimeError:  # eager refuses it for this dtype (argmax of ints is fine)
        pytest.skip("eager refuses")
    compiled = device != "mncore" or not any(k in case for k in TINY_HOST)
    _assert_same(_on_device(device, fn, x, compiled=compiled), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", SCATTER)
def test_scatters_equal_eager(case: str, device: str) -> None:
    torch.manual_seed(2)
    x, src = torch.randn(4, 5), torch.randn(4, 5)
    _assert_same(_on_device(device, SCATTER[case], x, src), SCATTER[case](x, src))


@pytest.mark.parametrize("device", DEVICES)
def test_products_over_an_empty_dimension_are_one(device: str) -> None:
    """An empty product is 1 (it was an internal reshape error): over the empty
    dimension, over another one (an empty result) and over everything."""
    x = torch.randn(0, 4)
    for fn in (lambda t: t.prod(0), lambda t: t.prod(1, keepdim=True), lambda t: t.prod(),
               lambda t: t.cumprod(0)):
        _assert_same(_on_device(device, fn, x, compiled=device != "mncore"), fn(x))


def test_arg_extremes_of_the_least_integer() -> None:
    """``amin(x) = -1 - amax(-1 - x)``: exact at the least int64, where ``-x``
    overflows."""
    x = torch.tensor([[5, torch.iinfo(torch.int64).min, 3], [0, -2, 7]])
    for device in ("cpu", "interp"):
        for fn in (lambda t: t.min(1), lambda t: t.argmin(1), lambda t: t.amin(0),
                   lambda t: t.cummin(1)):
            _assert_same(_on_device(device, fn, x), fn(x))


@pytest.mark.parametrize("device", ["cpu", "interp", pytest.param("task", marks=pytest.mark.slow)])
def test_long_rows_sort_by_a_bitonic_network(device: str) -> None:
    """Past 4M pairwise comparisons a bitonic network sorts when a stable sort is asked
    for (ties by index; NaN last ascending, first descending); other sorts of long rows
    order ties as torch's kernels do, so they run on the host. (The tiny MN-Core
    machine takes minutes to compile the network: issue 14.)"""
    torch.manual_seed(3)
    x = torch.randn(2, 3000)
    x[0, 5] = x[0, 100] = float("nan")
    x[1, 10:20] = 0.5
    ints = torch.randint(-50, 50, (2, 3000))
    for src in (x, ints):
        for fn in (lambda t: torch.sort(t, stable=True),
                   lambda t: torch.sort(t, descending=True, stable=True)):
            _assert_same(_on_device(device, fn, src), fn(src))
        for fn in (lambda t: t.sort(), lambda t: t.topk(7)):  # eager's own tie order:
            got, host = run_on_device(device, fn, src)  # on the host
            _assert_same(got, fn(src))
            assert host, "a long unstable sort should run on the host"


def test_sorting_past_the_network_runs_on_the_host() -> None:
    """A row longer than BITONIC_MAX is refused at compile time, and the op runs on
    the host with the right result."""
    x = torch.randn(140000)
    (got,), host = run_on_device("cpu", lambda t: t.sort().values, x)
    assert torch.equal(got, x.sort().values)
    assert host == ["CpuFallback::aten.sort.default"]


@pytest.mark.parametrize("device", ["cpu", "mncore"])
def test_equal_and_allclose_compute_on_the_device(device: str) -> None:
    """torch.equal/allclose return Python bools: the comparison is traced and compiled,
    and only its one bool is read back (no op runs on the host)."""
    a = torch.randn(3, 4)
    b, c = a.clone(), a.clone()
    b[0, 0] += 1e-7
    c[1, 1] = float("nan")
    torch_mncore.init(device, implicit_sync="silent")
    try:
        torch_mncore.reset_metrics()
        d = {k: v.mncore() for k, v in {"a": a, "b": b, "c": c}.items()}
        got = [torch.equal(d["a"], d["b"]), torch.equal(d["a"], d["a"]),
               torch.equal(d["c"], d["c"]), torch.equal(d["a"], d["a"][:2]),
               torch.allclose(d["a"], d["b"]), torch.allclose(d["a"], d["c"]),
               torch.allclose(d["c"], d["c"], equal_nan=True)]
        counters = torch_mncore.counters()
    finally:
        torch_mncore.init("cpu")
    assert got == [False, True, False, False, True, False, True]
    assert not [k for k in counters if k.startswith("CpuFallback")]


def test_triton_maxima_propagate_nan_and_take_integers() -> None:
    """The Triton target's maximum starts from the type's least value (it started from
    -inf, which no integer holds) and propagates NaN as torch.amax does (tl.max drops
    it: a silent wrong maximum)."""
    floats = torch.randn(3, 700)
    floats[1, 2] = float("nan")
    ints = torch.randint(-5, 5, (3, 7))
    for fn, x in ((lambda t: torch.amax(t, 1), floats), (lambda t: t.argmax(1), floats),
                  (lambda t: torch.amax(t, 1), ints), (lambda t: t.max(1), ints)):
        _assert_same(_on_device("triton", fn, x), fn(x))
