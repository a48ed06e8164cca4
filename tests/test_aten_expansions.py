"""The ATen ops expanded into other graph ops (``frontends/aten_expansions.py``):
padding, advanced indexing, index_select, flip, diagonal, average and adaptive pooling
(forward and backward), 1-D and 3-D convolutions, cumsum, addmm's scalars and pointwise
identities, each against eager on every device, compiled whole (host fallback off, so
a node the device did not take would be an error)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from mncore_ir.frontends.aten_windows import adaptive_matrix, average_matrix

DEVICES = ["cpu", "interp", "task", "triton", "mncore"]

torch.manual_seed(0)
X = torch.randn(2, 3, 7, 6)
IDX = torch.tensor([[0, -1], [2, 1]])

CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "pad": lambda x: F.pad(x, (1, 2, -1, 3), value=0.5),
    "pad_negative_only": lambda x: F.pad(x, (-2, -1)),
    "index_adjacent": lambda x: x[:, IDX.to(x.device), 1:3],
    "index_apart": lambda x: x[torch.tensor([[0, 1], [1, -2]]).to(x.device), :, IDX.to(x.device)],
    "index_broadcast": lambda x: x[torch.tensor([1, 0]).to(x.device)[:, None], :,
                                   torch.tensor([[0, 6, -7]]).to(x.device)],
    "index_select": lambda x: torch.index_select(x, 2, torch.tensor([4, 0, 0]).to(x.device)),
    "index_put": lambda x: x.index_put((torch.tensor([0, -1, 0]).to(x.device),
                                        torch.tensor([[2], [-3]]).to(x.device)),
                                       x[0, 0] * 10, accumulate=True),
    "setitem": lambda x: _setitem(x),
    "flip": lambda x: torch.flip(x, (1, 3)),
    "rot90": lambda x: torch.rot90(x, 1, (2, 3)),
    "diagonal": lambda x: torch.diagonal(x, 1, 2, 3) + torch.diagonal(x, -2, 3, 2).sum(),
    "trace": lambda x: torch.trace(x[0, 0]),
    "isnan": lambda x: torch.isnan(x / x.abs().clamp(max=0.5) - 1).float(),
    "nan_to_num": lambda x: torch.nan_to_num(torch.log(x), neginf=-3.0),
    "sign": lambda x: torch.sign(x) * 2,
    "clamp_tensor": lambda x: torch.clamp(x, x[:, :1], x[:, 1:2] + 1),
    "var": lambda x: torch.var(x, dim=(1, 3), correction=0) + torch.std(x),
    "amin": lambda x: torch.amin(x, dim=(0, 2)) + x.min() + x.max(),
    "cumsum": lambda x: torch.cumsum(x, 2),
    "avg_pool_ceil": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                            count_include_pad=False),
    "avg_pool_divisor": lambda x: F.avg_pool2d(x, (2, 3), (1, 2), (1, 0), divisor_override=5),
    "avg_pool1d": lambda x: F.avg_pool1d(x.flatten(2), 4, 3, 2, ceil_mode=True),
    "max_pool_ceil": lambda x: _with_indices(F.max_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                          return_indices=True)),
    "max_pool_ceil_dilated": lambda x: _with_indices(F.max_pool2d(
        x[0], (2, 3), 2, 0, 2, ceil_mode=True, return_indices=True)),
    "max_pool1d_ceil": lambda x: F.max_pool1d(x.flatten(2), 4, 3, 1, ceil_mode=True),
    "adaptive_max_pool": lambda x: _with_indices(F.adaptive_max_pool2d(
        x, (3, 4), return_indices=True)),
    "adaptive_max_pool1d": lambda x: F.adaptive_max_pool1d(x.flatten(2), 5),
    "adaptive_avg_pool": lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
    "conv1d": lambda x: F.conv1d(x.flatten(2), torch.linspace(-1, 1, 60).reshape(4, 3, 5)
                                 .to(x.device), stride=2, padding=1),
    "conv_transpose2d": lambda x: F.conv_transpose2d(
        x, torch.linspace(-1, 1, 3 * 4 * 9).reshape(3, 4, 3, 3).to(x.device),
        torch.tensor([0.5, -1.0, 0.0, 2.0]).to(x.device), stride=2, padding=1,
        output_padding=1),
    "conv_transpose2d_output_padding_past_stride": lambda x: F.conv_transpose2d(
        x[:, :2, :4, :4], torch.linspace(-1, 1, 2 * 2 * 4 * 5).reshape(2, 2, 4, 5).to(
            x.device), stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2,
        dilation=(4, 4)),
    "conv_transpose1d_groups": lambda x: F.conv_transpose1d(
        x[:, :2].flatten(2), torch.linspace(-1, 1, 2 * 3 * 4).reshape(2, 3, 4).to(x.device),
        stride=3, groups=2, dilation=2),
    "addmm_scalars": lambda x: torch.addmm(x[0, 0], x[0, 1], x[1, 1, :6], beta=0.5, alpha=2),
    "log2_log10_exp2": lambda x: torch.log2(x.abs() + 0.1) + torch.log10(x.abs() + 0.1)
    + torch.exp2(x),
    "fmax_fmin": lambda x: torch.fmax(torch.log(x), x * 0.5) + torch.fmin(x, torch.log(-x)),
    "logical_xor": lambda x: torch.logical_xor(x > 0, x < 0.5).float(),
}


def _setitem(x: torch.Tensor) -> torch.Tensor:
    y = x * 1
    y[:, torch.tensor([2, 0]).to(x.device), 1:3] = -x[0, :2, :1, :]
    return y


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest):
    torch_mncore.init(request.param, host_fallback=False, implicit_sync="silent")
    yield request.param
    torch_mncore.init("cpu")


#: Where rounding to an integer is hard: halves (ties to even), just below a half,
#: past 2**22 where f32 steps by halves, past 2**23 where every f32 is an integer,
#: infinities, signed zeros, tiny values.
ROUNDING = torch.tensor([0.5, -0.5, 1.5, 2.5, -2.5, -1.5, 8388607.5, -8388607.5, 1e9, -1e9,
                         0.49999997, -0.49999997, 2.4999998, -3.7, 1234.56, 3e-8, -0.0,
                         0.0, 1e-30, float("inf"), float("-inf"), 4194303.5, 7.5, -6.5])


@pytest.mark.parametrize("fn", [torch.floor, torch.ceil, torch.trunc, torch.frac, torch.round])
def test_rounding_is_exact(device: str, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """``graph.floor`` and what is made of it give eager's values exactly (MN-Core by
    its decomposition: rounding by adding 2**23 in f32), all compiled (``round`` fits
    the tiny machine's GRFs since dead values give their slots back)."""
    x = torch.cat([ROUNDING, torch.randn(40) * 50])
    expected = fn(x)
    before = _host_ops()
    got = fn(x.mncore()).cpu()
    assert _host_ops() == before
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(got.nan_to_num(), expected.nan_to_num()), (got - expected).abs().max()


def _with_indices(pooled: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """A max pool's values and flat indices, side by side."""
    values, indices = pooled
    return torch.cat([values.flatten(), indices.flatten().float()])


def _host_ops() -> dict[str, int]:
    return {k: v for k, v in torch_mncore.counters().items() if k.startswith("CpuFallback")}


@pytest.mark.parametrize(("device", "name"), [  # CI: every other case on the task levels
    pytest.param(d, n, marks=pytest.mark.slow if d in ("task", "triton", "mncore") and i % 2
                 else ())
    for d in DEVICES for i, n in enumerate(CASES)], indirect=["device"])
def test_expansion_matches_eager(device: str, name: str) -> None:
    fn = CASES[name]
    expected = fn(X)
    before = _host_ops()
    got = fn(X.mncore())
    torch_mncore.sync()
    torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=1e-5)
    assert _host_ops() == before


def test_cumsum_past_an_infinity_and_of_integers(device: str) -> None:
    """An infinity or NaN reaches only the sums after it (the product with a triangle
    of ones gave ``nan`` before it: ``0 * inf``; a probe's find); integers and booleans
    sum exactly in int64, as eager's; dimensions past the old 1024 cap compile."""
    cases = [torch.tensor([[1.0, float("inf"), 2.0, float("-inf"), 3.0],
                           [2.0, float("nan"), 1.0, 5.0, -0.0]])]
    if device != "mncore":  # (its words hold sums of integers below 2**24 only: the host's)
        cases += [torch.tensor([[3, -2**40, 7], [2**40, 1, -5]]),
                  torch.tensor([[True, False, True]])]
    if device in ("cpu", "interp"):
        cases.append(torch.randn(2, 1500))
    before = _host_ops()
    for t in cases:
        got = torch.cumsum(t.mncore(), 1)
        torch_mncore.sync()
        expected = torch.cumsum(t, 1)
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got.cpu(), expected, equal_nan=True, atol=2e-5, rtol=1e-5)
    assert _host_ops() == before


def test_a_correction_that_takes_every_element_divides_by_zero(device: str) -> None:
    """``var``/``std`` divide by ``max(0, n - correction)`` as torch: inf where the
    correction is n or more, NaN over an empty dimension (they were negative, or -0;
    the task levels refuse reductions of empty regions)."""
    x = torch.randn(2, 3)
    empty = torch.randn(2, 0)
    cases = [(lambda t: t.var(1, correction=5), x), (lambda t: t.std(1, correction=3), x),
             (lambda t: torch.var_mean(t, 1, correction=4)[0], x)]
    if device in ("cpu", "interp"):
        cases += [(lambda t: t.var(1), empty), (lambda t: torch.var_mean(t, 1)[0], empty),
                  (lambda t: t.std(), empty)]
    for fn, t in cases:
        got = fn(t.mncore())
        torch_mncore.sync()
        torch.testing.assert_close(got.cpu(), fn(t), equal_nan=True)


#: 3-D convolutions (transposed, stride, padding, dilation, groups, kernel): a strided,
#: padded depth; per-dimension windows with groups; a dilated depth strided past its
#: kernel; transposed ones with output padding, and cropped by a padding.
CONV3D = {"strided": (False, 2, 1, 1, 1, 3),
          "groups": (False, (2, 1, 1), (1, 0, 1), (2, 1, 1), 2, (3, 2, 2)),
          "dilated": (False, 3, 1, 2, 1, 2),
          "transposed": (True, (2, 2, 3), (1, 0, 1), (2, 1, 1), 2, (3, 2, 2)),
          "transposed_cropped": (True, 2, 2, 1, 1, 3)}


#: The cases CI runs on the task-level devices (the expansion is the frontend's, the
#: same on every device; ``make slow`` runs the others there too).
CONV3D_TASK_LEVEL = ("groups", "transposed")


@pytest.mark.parametrize(("device", "name"), [
    pytest.param(d, n, marks=pytest.mark.slow if d in ("task", "triton", "mncore")
                 and n not in CONV3D_TASK_LEVEL else ())
    for d in DEVICES for n in CONV3D], indirect=["device"])
def test_conv3d_and_its_gradients_match_eager(device: str, name: str) -> None:
    """3-D convolutions as 2-D ones (``frontends/aten_conv3d.py``), transposed ones as
    their input gradients: the output and the input, weight and bias gradients,
    compiled whole."""
    transposed, stride, padding, dilation, groups, kernel = CONV3D[name]
    kernel = (kernel,) * 3 if isinstance(kernel, int) else kernel
    torch.manual_seed(0)
    x = torch.randn(1, 4, 3, 3, 2) if transposed else torch.randn(1, 4, 7, 6, 5)
    w, b = torch.randn(4, 6 // groups, *kernel) if transposed else torch.randn(
        6, 4 // groups, *kernel), torch.randn(6)

    def run(*args: torch.Tensor) -> list[torch.Tensor]:
        leaves = [a.requires_grad_() for a in args]
        if transposed:
            y = F.conv_transpose3d(*leaves, stride=stride, padding=padding,
                                   output_padding=1, groups=groups, dilation=dilation)
        else:
            y = F.conv3d(*leaves, stride=stride, padding=padding, dilation=dilation,
                         groups=groups)
        return [y, *torch.autograd.grad(y, leaves, torch.cos(y))]

    expected = run(x, w, b)
    before = _host_ops()
    got = run(*(t.mncore() for t in (x, w, b)))
    torch_mncore.sync()
    torch.testing.assert_close([t.cpu() for t in got], [t.detach() for t in expected],
                               atol=1e-4, rtol=1e-4)
    assert _host_ops() == before


class PoolNet(torch.nn.Module):
    """Convolutions (1-D, 2-D, transposed), padding, pooling and indexing in one
    trained model."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1d = torch.nn.Conv1d(3, 2, 3, padding=1)
        self.conv = torch.nn.Conv2d(2, 2, 3)
        self.up = torch.nn.ConvTranspose2d(2, 2, 2, stride=2, padding=1)
        self.head = torch.nn.Linear(2 * 3, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        y = self.conv1d(x.reshape(n, c, h * w)).reshape(n, 2, h, w)
        y = F.avg_pool2d(F.pad(torch.relu(y), (1, 1, 0, 1)), 2, 1, ceil_mode=True)
        y = F.max_pool2d(self.conv(self.up(y)), 3, 2, ceil_mode=True)
        y = F.adaptive_avg_pool2d(y, (3, 1))
        y = y.flatten(1)
        return self.head(y)[:, torch.tensor([4, 0, 2]).to(x.device)]


def test_training_through_expansions(device: str) -> None:
    """Three SGD steps: the backward ops (avg_pool2d_backward, the adaptive pool's,
    1-D and transposed convolution_backward, slices of the padding, index_put) compile as well."""

    def train(on: str) -> list[torch.Tensor]:
        torch.manual_seed(1)
        model = PoolNet()
        if on == "mncore":
            model = model.mncore()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = torch.randn(2, 3, 4, 3), torch.randn(2, 3)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            xs, ys = (x.mncore(), y.mncore()) if on == "mncore" else (x, y)
            loss = F.mse_loss(model(xs), ys)
            loss.backward()
            opt.step()
            if on == "mncore":
                torch_mncore.sync()
            losses.append(loss.detach().cpu())
        return [*losses, *(p.detach().cpu() for p in model.parameters())]

    before = _host_ops()
    got, expected = train("mncore"), train("cpu")
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    assert _host_ops() == before


@pytest.mark.parametrize("size,kernel,stride,padding,include",
                         list(itertools.product([5, 6, 7], [1, 2, 3], [1, 2, 3], [0, 1],
                                                [True, False])))
def test_average_matrix_is_torch_pooling(size: int, kernel: int, stride: int, padding: int,
                                         include: bool) -> None:
    """The pooling matrix against avg_pool1d itself, with and without ceil_mode."""
    if padding * 2 > kernel:
        return  # torch refuses it
    x = torch.randn(1, 1, size, dtype=torch.float64)
    for ceil in (False, True):
        expected = F.avg_pool1d(x, kernel, stride, padding, ceil_mode=ceil,
                                count_include_pad=include)[0, 0]
        matrix = average_matrix(size, expected.shape[0], kernel, stride, padding, include)
        np.testing.assert_allclose(matrix @ x[0, 0].numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("size,out", [(5, 3), (7, 7), (4, 6), (9, 2), (1, 3)])
def test_adaptive_matrix_is_torch_pooling(size: int, out: int) -> None:
    x = torch.randn(1, 1, size, dtype=torch.float64)
    expected = F.adaptive_avg_pool1d(x, out)[0, 0]
    np.testing.assert_allclose(adaptive_matrix(size, out) @ x[0, 0].numpy(),
                               expected.numpy(), rtol=1e-12)


def test_boolean_mask_index_runs_on_the_host() -> None:
    """A mask's result size depends on the values: refused by the importer, so the
    default host fallback takes it, and the values are eager's."""
    torch_mncore.init("cpu", implicit_sync="silent")
    x = X.mncore()
    got = (x[x > 0] * 2).cpu()
    torch.testing.assert_close(got, X[X > 0] * 2)
