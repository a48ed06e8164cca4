"""The lazy runtime's compile cache: keys that tell every argument apart (no false
hits across steps), on-disk entries that survive corruption, and compile failures
reported as ``LazyError`` at the user's line."""

from __future__ import annotations

import inspect
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torch_mncore
from mncore_ir.frontends import lazy_runtime
from mncore_ir.frontends.lazy_tensor import Scalar, meta_key


@pytest.fixture(autouse=True)
def cpu_device() -> Iterator[None]:
    torch_mncore.init("cpu", implicit_sync="silent")
    yield
    torch_mncore.wait_device_ops()


def lazy(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> torch.Tensor:
    """``fn`` as one lazy step on the host's copies of ``inputs``, read back."""
    out = fn(*(x.mncore() for x in inputs))
    torch_mncore.sync()
    return out.cpu()


def assert_same(got: torch.Tensor, expected: torch.Tensor, what: object = "") -> None:
    """Eager's dtype and values (to rounding; nan where eager has nan), and its signs
    of zero, which ``assert_close`` does not compare."""
    torch.testing.assert_close(got, expected, rtol=1.3e-6, atol=1e-5, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")
    if expected.is_floating_point():
        numbers = ~expected.isnan()
        assert torch.equal(got[numbers].signbit(), expected[numbers].signbit()), (
            what, got, expected)


def assert_like_eager(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> None:
    """The lazy step gives eager's result."""
    assert_same(lazy(fn, *inputs), fn(*inputs), fn)


def line_of(fn: Callable[..., Any], text: str) -> str:
    """``file:line`` of the first source line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    index = next(i for i, line in enumerate(lines) if text in line)
    return f"{fn.__code__.co_filename}:{start + index}"


# ---------------------------------------------------------------------- keys


def test_python_scalars_are_keyed_by_type_and_exact_value() -> None:
    assert len({meta_key(1), meta_key(1.0), meta_key(True)}) == 3
    assert len({meta_key(0), meta_key(0.0), meta_key(-0.0), meta_key(False)}) == 4
    assert meta_key(math.nan) == meta_key(float("nan"))  # a nan is one key, not a miss
    assert meta_key([1, 2]) != meta_key([1.0, 2])
    assert meta_key((1, (2, 3))) != meta_key((1, (2, 3.0)))
    assert meta_key(1 + 0j) != meta_key(1.0) and meta_key(-0j) != meta_key(0j)
    assert meta_key(torch.float32) != meta_key(torch.float64)


B = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
A1 = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(1))
A2 = torch.randn(2, 4, 5, generator=torch.Generator().manual_seed(2))
# -0.0 in the data: x + 0.0 is +0.0 there, so a graph may not fold x + 0.0 to x.
X = torch.tensor([[-2.5, -1.0, 0.0], [0.75, -0.0, 3.0]])
Y = torch.tensor([[1.5, -2.0, 4.0], [0.25, -0.75, 2.0]])
INTS = torch.tensor([[-3, -1, 0], [1, 2, 5]])


@pytest.mark.parametrize("alphas", [(0.125, 0.5), (0.5, 0.125), (2.0, 2)])
def test_baddbmm_alpha_is_part_of_the_key(alphas: tuple[float, float]) -> None:
    for alpha in alphas:  # consecutive steps: the second must not reuse the first
        assert_like_eager(lambda c, a, b, alpha=alpha: torch.baddbmm(c, a, b, alpha=alpha),
                          B, A1, A2)


@pytest.mark.parametrize("alphas", [(0.125, 0.5), (2.5, 2)])
def test_rsub_alpha_is_part_of_the_key(alphas: tuple[float, float]) -> None:
    for alpha in alphas:
        assert_like_eager(lambda x, y, alpha=alpha: torch.rsub(x, y, alpha=alpha), X, Y)


def test_int_and_float_scalars_do_not_share_a_graph() -> None:
    """``1 == 1.0 == True`` in Python, but an int64 tensor plus 1.0 is float32."""
    for fn in (lambda x: x + 1, lambda x: x + 1.0, lambda x: x * 1.0, lambda x: x * -1.0,
               lambda x: x + 0.0, lambda x: x * 1, lambda x: x + True, lambda x: x * -0.0,
               lambda x: x * 0.0):
        assert_like_eager(fn, INTS)
    for fn in (lambda x: x * 0.0, lambda x: x * -0.0, lambda x: x + 0, lambda x: x - 0.0,
               lambda x: x + 0.0, lambda x: 0.0 + x, lambda x: x - (-0.0), lambda x: x + -0.0):
        assert_like_eager(fn, X)


# One family per op: a function of (inputs, variation) and the variations to try. Values
# cover every argument kind: positional and keyword scalars, keyword-only strings,
# lists of ints, dtypes and memory formats; bool vs int vs float, -0.0 vs 0.0, nan.
SCALARS = (0, 1, -1, 2, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5, True, False, math.nan, math.inf)
DTYPES = (torch.float32, torch.float64, torch.int64, torch.int32, torch.bool)
FAMILIES: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...],
                          tuple[Any, ...]]] = {
    "add_f": (lambda x, v: x + v, (X,), SCALARS),
    "add_i": (lambda x, v: x + v, (INTS,), SCALARS),
    "mul_i": (lambda x, v: x * v, (INTS,), SCALARS),
    "mul_f": (lambda x, v: x * v, (X,), SCALARS),
    "rsub_i": (lambda x, v: v - x, (INTS,), SCALARS),
    "div_i": (lambda x, v: x / v, (INTS,), SCALARS),
    "pow_f": (lambda x, v: x.abs() ** v, (X,), SCALARS),
    "clamp_min": (lambda x, v: torch.clamp(x, min=v), (INTS,), SCALARS),
    "where": (lambda x, v: torch.where(x > 0, x, v), (X,), SCALARS),
    "masked_fill": (lambda x, v: x.masked_fill(x > 0, v), (INTS,), SCALARS),
    "full_like": (lambda x, v: torch.full_like(x, v) + x, (X,), SCALARS),
    "add_alpha": (lambda x, y, v: torch.add(x, y, alpha=v), (X, Y), SCALARS),
    "rsub_alpha": (lambda x, y, v: torch.rsub(x, y, alpha=v), (X, Y), SCALARS),
    "baddbmm": (lambda c, a, b, v: torch.baddbmm(c, a, b, beta=v[0], alpha=v[1]),
                (B, A1, A2), ((1, 1), (1.0, 0.5), (0.5, 1.0), (0, 2), (0.0, 2.0), (2, 0.125))),
    "leaky_relu": (lambda x, v: F.leaky_relu(x, v), (X,), (0.01, 0.2, 0, 1, -0.5)),
    "hardtanh": (lambda x, v: F.hardtanh(x, *v), (X,), ((-1, 1), (-1.0, 1.0), (-0.5, 2.0),
                                                          (0.0, 0.5))),
    "pad": (lambda x, v: F.pad(x, [1, 0], value=v), (X,), SCALARS),
    "to": (lambda x, v: x.to(v) * 3, (X,), DTYPES),
    "sum_dtype": (lambda x, v: x.sum(dtype=v), (INTS,), DTYPES[:4]),
    "sum_dims": (lambda x, v: x.sum(dim=v[0], keepdim=v[1]), (X,),
                 ((0, False), (1, False), ([0], False), ([1], True), ([0, 1], False),
                  ((0, 1), True), (-1, False), (0, True))),
    "view": (lambda x, v: x.reshape(v) * 2, (X,), ([6], [3, 2], [-1], (2, 3), [1, 6])),
    "permute": (lambda x, v: x.permute(v) + 1, (X,), ((0, 1), (1, 0), [1, 0])),
    "div_mode": (lambda x, y, v: torch.div(x, y, rounding_mode=v), (X, Y),
                 (None, "floor", "trunc")),
    "gelu": (lambda x, v: F.gelu(x, approximate=v), (X,), ("none", "tanh")),
    "softmax": (lambda x, v: torch.softmax(x, dim=v), (X,), (0, 1, -1)),
    "elu": (lambda x, v: F.elu(x, alpha=v), (X,), (1.0, 1, 0.5, 2, True)),
    "clone_format": (lambda x, v: x.reshape(1, 2, 3, 1).clone(memory_format=v) * 2, (X,),
                     (torch.contiguous_format, torch.channels_last, torch.preserve_format)),
}


def _eager_works(name: str, v: Any) -> bool:
    fn, inputs, _ = FAMILIES[name]
    try:
        fn(*inputs, v)
    except RuntimeError:  # e.g. a float alpha with integer tensors: not a cache case
        return False
    return True


CASES = [(name, v) for name, (_, _, values) in FAMILIES.items() for v in values
         if _eager_works(name, v)]


@st.composite
def case_pairs(draw: st.DrawFn) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """Two cases, mostly of one op with different arguments (where false hits hide)."""
    first = draw(st.sampled_from(CASES))
    same_op = [c for c in CASES if c[0] == first[0]]
    return first, draw(st.one_of(st.sampled_from(same_op), st.sampled_from(CASES)))


def _step(name: str, v: Any) -> tuple[torch.Tensor, torch.Tensor, Any, bool]:
    """Case (name, v) as a lazy step: its result, eager's, its graph's key (None when
    the op ran on the host) and whether the graph hoisted a scalar into an input (a
    value the key leaves out)."""
    fn, inputs, _ = FAMILIES[name]
    expected = fn(*inputs, v)
    runtime = lazy_runtime.runtime()
    runtime.last = None
    got = lazy(lambda *xs: fn(*xs, v), *inputs)
    if runtime.last is None:  # a CPU fallback: no graph
        return got, expected, None, False
    graph = runtime.last[0]
    return got, expected, graph.structure, any(isinstance(x, Scalar) for x in graph.inputs)


@settings(max_examples=80, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case_pairs())
def test_no_two_steps_share_a_graph_unless_eager_agrees(
        pair: tuple[tuple[str, Any], tuple[str, Any]]) -> None:
    """Consecutive steps on the cpu device: each gives eager's result (so no step ran a
    graph compiled for another), and two steps whose graphs have no hoisted scalars
    share a key only when eager gives them identical results."""
    results = [_step(*case) for case in pair]
    for (got, expected, _, _), case in zip(results, pair, strict=True):
        assert_same(got, expected, case)
    (_, a, key_a, hoisted_a), (_, b, key_b, hoisted_b) = results
    if key_a is not None and key_a == key_b and not (hoisted_a or hoisted_b):
        assert a.dtype == b.dtype and a.shape == b.shape, pair
        assert torch.equal(a.isnan(), b.isnan()) and torch.equal(
            a.nan_to_num(), b.nan_to_num()), pair


FLOWS: dict[str, Callable[..., torch.Tensor]] = {
    "a*b+a": lambda a, b, c: a * b + a,
    "a*b+b": lambda a, b, c: a * b + b,
    "a*a+b": lambda a, b, c: a * a + b,
    "(a+b)*c": lambda a, b, c: (a + b) * c,
    "(a+c)*b": lambda a, b, c: (a + c) * b,
    "cat(a,b)": lambda a, b, c: torch.cat([a, b]),
    "cat(b,a)": lambda a, b, c: torch.cat([b, a]),
    "max-indices": lambda a, b, c: a.max(dim=0)[1].float() + b[0],
    "max-values": lambda a, b, c: a.max(dim=0)[0] + b[0],
}


def test_steps_that_differ_only_in_how_values_flow_have_their_own_graphs() -> None:
    """The same ops on the same shapes, wired differently (which input an op reads, the
    order of a list operand, which output of a multi-output op is used), one step after
    another: each gives eager's result, so none ran another's graph. (``cat(a,b)`` and
    ``cat(b,a)`` may share one: the same graph with its inputs bound the other way.)"""
    g = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(3, 4, generator=g) for _ in range(3))
    for _ in range(2):  # the second round: every graph is in the cache
        for name, fn in FLOWS.items():
            got = lazy(fn, a, b, c)
            torch.testing.assert_close(got, fn(a, b, c), rtol=0, atol=0, msg=name)


# ---------------------------------------------------------------------- the disk cache


def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3 + 1


def disk_step(x: torch.Tensor) -> torch.Tensor:
    return lazy(triple, x)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("MNCORE_CACHE_DIR", str(path))
    torch_mncore.init("cpu", implicit_sync="silent")
    return path


def _corrupt_truncated(data: bytes) -> bytes:
    return data[:len(data) // 2]


def _corrupt_edited(data: bytes) -> bytes:
    """A plausible edit that still parses: the graph's constant 1 becomes 2."""
    edited = data.replace(b"dense<1.000000e+00>", b"dense<2.000000e+00>")
    assert edited != data, data
    return edited


def _corrupt_body_rewritten(data: bytes) -> bytes:
    """An entry of the old format (no header): parses, but nothing vouches for it."""
    return data.split(b"\n", 1)[1]


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": _corrupt_truncated,
    "empty": lambda data: b"",
    "not-utf8": lambda data: b"\xff\xfe\x80" + data[3:],
    "edited": _corrupt_edited,
    "headerless": _corrupt_body_rewritten,
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_a_bad_disk_entry_is_a_miss_with_one_warning(cache_dir: Path,
                                                      corrupt: Callable[[bytes], bytes]
                                                      ) -> None:
    x = torch.arange(4, dtype=torch.float32)
    expected = triple(x)
    torch.testing.assert_close(disk_step(x), expected)
    [entry] = cache_dir.iterdir()
    good = entry.read_bytes()
    entry.write_bytes(corrupt(good))
    torch_mncore.init("cpu", implicit_sync="silent")  # a new process would do the same
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(disk_step(x), expected)
        torch.testing.assert_close(disk_step(x), expected)  # in memory now: no new warning
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and str(entry) in messages[0], messages
    assert "compiling the step again" in messages[0]
    assert entry.read_bytes() == good  # rewritten
    assert torch_mncore.counters()["UncachedCompile"] == 1


def softmax_step(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * 0.3, 0) + x / 3


def test_a_good_disk_entry_is_read_by_a_second_process(cache_dir: Path,
                                                        tmp_path: Path) -> None:
    """This process writes the entry; another reads it (no compile, no warning) and
    gets bit-identical values."""
    x = torch.linspace(-1, 1, 7)
    ours = [v.hex() for v in lazy(softmax_step, x).tolist()]
    assert torch_mncore.counters()["UncachedCompile"] == 1
    script = tmp_path / "step.py"
    script.write_text(
        "import torch, torch_mncore\n"
        "torch_mncore.init('cpu')\n"
        "x = torch.linspace(-1, 1, 7).mncore()\n"
        "y = torch.softmax(x * 0.3, 0) + x / 3\n"
        "torch_mncore.sync()\n"
        "print([v.hex() for v in y.cpu().tolist()])\n"
        "print(dict(torch_mncore.counters()))\n")
    env = {**os.environ, "MNCORE_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, check=True, timeout=300)
    assert "compile-cache" not in done.stderr, done.stderr
    values, counters = done.stdout.splitlines()
    assert "'DiskCachedCompile': 1" in counters and "UncachedCompile" not in counters
    assert values == repr(ours)


@pytest.mark.parametrize("variable", ["MNCORE_CACHE_DIR", "MNCORE_DUMP_DIR"])
def test_a_cache_path_that_is_a_file_is_refused_at_init(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        variable: str) -> None:
    path = tmp_path / "not-a-dir"
    path.write_text("")
    monkeypatch.setenv(variable, str(path))
    with pytest.raises(torch_mncore.LazyError, match=f"{variable}=.*not-a-dir' is not a "
                       "directory"):
        torch_mncore.init("cpu")
    monkeypatch.delenv(variable)
    torch_mncore.init("cpu")


# ---------------------------------------------------------------------- compile errors


def masked_loss(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = p[y > 0].sum()
    loss.backward()
    return loss


def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    """No host fallback: what the device cannot compile is an error."""
    monkeypatch.setattr(lazy_runtime.runtime().compiler, "host_fallback", False)


def test_boolean_mask_loss_runs_its_index_put_on_the_host() -> None:
    """What the device cannot compile (the mask's index_put, from autograd) runs on the
    host in its part of the step: the gradient is eager's."""
    p_host = torch.randn(6, requires_grad=True)
    y_host = torch.tensor([1.0, -1.0, 2.0, -3.0, 0.5, 0.0])
    expected = masked_loss(p_host, y_host)
    p = p_host.detach().mncore().requires_grad_()
    before = torch_mncore.counter_value("CpuFallback::aten.index_put.default") or 0
    loss = masked_loss(p, y_host.mncore())
    torch_mncore.sync()
    assert torch.allclose(loss.cpu(), expected)
    assert torch.allclose(p.grad.cpu(), p_host.grad)
    assert (torch_mncore.counter_value("CpuFallback::aten.index_put.default") or 0) > before


def test_boolean_mask_loss_is_a_lazy_error_at_the_users_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    strict(monkeypatch)
    p = torch.randn(6).mncore().requires_grad_()
    y = torch.tensor([1.0, -1.0, 2.0, -3.0, 0.5, 0.0]).mncore()
    masked_loss(p, y)
    with pytest.raises(torch_mncore.LazyError) as info:
        torch_mncore.sync()
    message = str(info.value)
    assert message.startswith("the cpu device cannot compile this step: "
                              "aten.index_put.default: indexing with a torch.bool tensor"
                              ), message
    assert f"(first at {line_of(masked_loss, 'loss = p[y > 0].sum()')}: " in message, message
    assert info.value.__cause__ is not None
    assert type(info.value.__cause__).__name__ == "UnsupportedOpError"


def test_any_exception_while_compiling_names_the_failing_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception that is no diagnostic (here a KeyError from the importer) is a
    LazyError with its type, at the line of the node being imported."""
    from mncore_ir.frontends import fx

    def broken(imp: Any, node: Any) -> Any:
        raise KeyError("no such thing")

    monkeypatch.setitem(fx.HANDLERS, torch.ops.aten.tanh.default, broken)
    strict(monkeypatch)
    x = torch.randn(3).mncore()
    y = x + 1
    z = torch.tanh(y)  # the op that fails
    with pytest.raises(torch_mncore.LazyError) as info:
        torch_mncore.sync()
    message = str(info.value)
    assert message.startswith("the cpu device cannot compile this step: KeyError: "
                              "'no such thing' (first at "), message
    where = line_of(test_any_exception_while_compiling_names_the_failing_node, "z = torch")
    assert f"{where}: z = torch.tanh(y)" in message, message
    assert isinstance(info.value.__cause__, KeyError)
    del y, z


def test_an_executable_that_cannot_be_built_is_a_lazy_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the importer (building the executable) names the step's line."""
    def refuse(module: Any) -> Any:
        raise ValueError("no executable today")

    compiler = lazy_runtime.runtime().compiler
    monkeypatch.setattr(compiler, "device", replace(compiler.device, executable=refuse))
    strict(monkeypatch)
    x = torch.randn(3).mncore()
    y = x * 5
    with pytest.raises(torch_mncore.LazyError, match=r"^the cpu device cannot compile this "
                       r"step: ValueError: no executable today \(first at .*"
                       r"test_lazy_cache.py:\d+: y = x \* 5\)$") as info:
        torch_mncore.sync()
    assert isinstance(info.value.__cause__, ValueError)
    del y


def test_a_failing_decomposition_names_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error inside make_fx (here a decomposition that raises) is a LazyError at the
    line of the traced op it was decomposing, not a later one's."""
    from mncore_ir.frontends import lazy_compile

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("decomposition failed")

    monkeypatch.setitem(lazy_compile.DECOMPOSITIONS, torch.ops.aten.tanh.default, broken)
    strict(monkeypatch)
    x = torch.randn(3).mncore()
    w = x * 2
    y = torch.tanh(w)
    z = y + 1
    with pytest.raises(torch_mncore.LazyError) as info:
        torch_mncore.sync()
    where = line_of(test_a_failing_decomposition_names_its_line, "y = torch.tanh")
    assert str(info.value) == ("the cpu device cannot compile this step: RuntimeError: "
                               f"decomposition failed (first at {where}: y = torch.tanh(w))")
    assert isinstance(info.value.__cause__, RuntimeError)
    del w, z
