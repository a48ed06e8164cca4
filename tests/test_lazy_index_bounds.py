"""Indices that eager refuses are refused on the lazy devices too, where the importer
used to count a negative index from the end (``index_select``, ``scatter``,
``index_add``/``index_copy`` through torch's index_put decompositions) or let it land
nowhere (``scatter_reduce``, ``index_reduce``, ``one_hot``); the ops that do count
from the end (advanced indexing, ``index_fill``, ``take``, ``put_``) still do."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import torch_mncore
from tests.conftest import run_on_device

X = torch.arange(12.0).reshape(4, 3)

Case = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _zeros(like: torch.Tensor) -> torch.Tensor:
    return torch.zeros(4, 3, device=like.device)


def _column(i: torch.Tensor) -> torch.Tensor:
    return i.view(2, 1).expand(2, 3)


#: op -> (the op of x and a 2-element index), where eager refuses a negative index
#: and one past the end.
REFUSED: dict[str, Case] = {
    "index_select": lambda x, i: torch.index_select(x, 0, i),
    "index_select_dim1": lambda x, i: torch.index_select(x, 1, i),
    "scatter_src": lambda x, i: _zeros(x).scatter(0, _column(i), x[:2]),
    "scatter_add": lambda x, i: _zeros(x).scatter_add(0, _column(i), x[:2]),
    "scatter_reduce": lambda x, i: _zeros(x).scatter_reduce(0, _column(i), x[:2], "amax"),
    "index_add": lambda x, i: _zeros(x).index_add(0, i, x[:2], alpha=2.0),
    "index_add_dim1": lambda x, i: _zeros(x).index_add(1, i, x[:, :2]),
    "index_add_": lambda x, i: _zeros(x).index_add_(0, i, x[:2]),
    "index_copy": lambda x, i: _zeros(x).index_copy(0, i, x[:2]),
    "index_reduce": lambda x, i: x.index_reduce(0, i, x[:2], "prod"),
    "one_hot": lambda x, i: F.one_hot(i, 4),
}
#: op -> its case, where eager counts a negative index from the end.
WRAPPED: dict[str, Case] = {
    "index_fill": lambda x, i: x.index_fill(0, i, 7.0),
    "index_fill_dim1": lambda x, i: x.index_fill(1, i, -1.0),
    "advanced_indexing": lambda x, i: x[i] + x[:, i[:1]].sum(),
    "index_put": lambda x, i: x.index_put((i,), torch.tensor(5.0, device=x.device)),
    "take": lambda x, i: torch.take(x, i),
}


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("name", sorted(REFUSED))
@pytest.mark.parametrize("bad", [-1, 4])
def test_an_index_eager_refuses_is_refused(device: str, name: str, bad: int) -> None:
    case = REFUSED[name]
    index = torch.tensor([0, bad if "dim1" not in name else min(bad, 3)])
    with pytest.raises((RuntimeError, IndexError)):
        case(X, index)  # eager refuses it
    with pytest.raises(torch_mncore.LazyError, match="graph execution failed"):
        run_on_device(device, case, X, index)


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_indices_in_range_equal_eager(device: str, name: str) -> None:
    case = REFUSED[name]
    index = torch.tensor([2, 0])
    (got,), host = run_on_device(device, case, X, index)
    assert not host
    torch.testing.assert_close(got, case(X, index))


@pytest.mark.parametrize("device", ["cpu", "interp"])
@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_negative_indices_count_from_the_end_where_eager_does(device: str, name: str
                                                              ) -> None:
    case = WRAPPED[name]
    index = torch.tensor([0, -1])
    (got,), host = run_on_device(device, case, X, index)
    assert not host
    torch.testing.assert_close(got, case(X, index))


def test_one_hot_infers_the_classes_and_refuses_what_eager_refuses() -> None:
    labels = torch.tensor([[1, 0, 3], [2, 2, 1]])
    # the class count is read back, as eager reads it
    (got,), _ = run_on_device("cpu", lambda y: F.one_hot(y), labels, implicit_sync="warn")
    torch.testing.assert_close(got, F.one_hot(labels))
    with pytest.raises(RuntimeError, match="LongTensor"):
        run_on_device("cpu", lambda y: F.one_hot(y, 4), labels.int())
    with pytest.raises(RuntimeError, match="empty tensor"):
        run_on_device("cpu", lambda y: F.one_hot(y), torch.tensor([], dtype=torch.long),
                      implicit_sync="warn")
