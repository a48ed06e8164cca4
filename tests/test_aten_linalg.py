"""Dense linear algebra (frontends/aten_linalg.py) through torch_mncore against eager on
each device, every op compiled: det, slogdet, logdet, inv, solve (matrix, vector, from
the right), lu/lu_factor/lu_factor_ex/lu_unpack/lu_solve (adjoint, from the right),
cholesky (lower, upper, _ex, the deprecated form), cholesky_solve, cholesky_inverse,
solve_triangular (upper, lower from the right, unit diagonal), triangular_solve, and a
singular matrix: det 0, LU's info, and linalg.inv's own LinAlgError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from conftest import run_on_device

import torch_mncore

torch.manual_seed(0)
A = torch.randn(2, 4, 4)
B = torch.randn(2, 4, 3)
V = torch.randn(4)
SPD = A @ A.mT + 0.5 * torch.eye(4)
TRI = torch.triu(A) + 2 * torch.eye(4)
SINGULAR = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
LU, PIVOTS = torch.linalg.lu_factor(A)


def _d(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return t.to(like.device)


CASES: dict[str, Callable[[torch.Tensor], Any]] = {
    "det": lambda a: torch.linalg.det(a),
    "slogdet": lambda a: torch.linalg.slogdet(a),
    "logdet": lambda a: torch.logdet(a @ a.mT),
    "inv": lambda a: torch.linalg.inv(a),
    "inv_ex": lambda a: torch.linalg.inv_ex(a),
    "solve": lambda a: torch.linalg.solve(a, _d(B, a)),
    "solve_vector": lambda a: torch.linalg.solve(a[0], _d(V, a)),
    "solve_right": lambda a: torch.linalg.solve(a, _d(B, a).mT, left=False),
    "lu_factor": lambda a: torch.linalg.lu_factor(a),
    "lu_factor_ex": lambda a: torch.linalg.lu_factor_ex(a),
    "lu": lambda a: torch.linalg.lu(a),
    "lu_unpack": lambda a: torch.lu_unpack(_d(LU, a), _d(PIVOTS, a)),
    "lu_solve": lambda a: torch.linalg.lu_solve(_d(LU, a), _d(PIVOTS, a), _d(B, a)),
    "lu_solve_adjoint": lambda a: torch.linalg.lu_solve(_d(LU, a), _d(PIVOTS, a), _d(B, a),
                                                        adjoint=True),
    "lu_solve_right": lambda a: torch.linalg.lu_solve(_d(LU, a), _d(PIVOTS, a),
                                                      _d(B, a).mT, left=False),
    "cholesky": lambda a: torch.linalg.cholesky(_d(SPD, a)),
    "cholesky_upper": lambda a: torch.linalg.cholesky(_d(SPD, a), upper=True),
    "cholesky_ex": lambda a: torch.linalg.cholesky_ex(_d(SPD, a)),
    "cholesky_deprecated": lambda a: torch.cholesky(_d(SPD, a)),
    "cholesky_solve": lambda a: torch.cholesky_solve(_d(B, a),
                                                     _d(torch.linalg.cholesky(SPD), a)),
    "cholesky_inverse": lambda a: torch.cholesky_inverse(_d(torch.linalg.cholesky(SPD[0]),
                                                            a)),
    "solve_triangular": lambda a: torch.linalg.solve_triangular(_d(TRI, a), _d(B, a),
                                                                upper=True),
    "solve_triangular_lower_right": lambda a: torch.linalg.solve_triangular(
        _d(TRI.mT, a), _d(B.mT, a), upper=False, left=False),
    "solve_triangular_unit": lambda a: torch.linalg.solve_triangular(
        _d(TRI, a), _d(B, a), upper=True, unitriangular=True),
    "triangular_solve": lambda a: torch.triangular_solve(_d(B, a), _d(TRI, a),
                                                         transpose=True),
    "lu_wide": lambda a: torch.linalg.lu(a[:, :3]),
    "lu_factor_tall": lambda a: torch.linalg.lu_factor(torch.cat([a, a[:, :2] * 2], 1)),
    "lu_unpack_wide": lambda a: torch.lu_unpack(*torch.linalg.lu_factor(a[:, :3])),
    "det_empty": lambda a: torch.linalg.det(a[:, :0, :0]),
    "slogdet_empty": lambda a: torch.linalg.slogdet(a[:, :0, :0]),
    "det_singular": lambda a: torch.linalg.det(_d(SINGULAR, a)),
    "lu_factor_singular": lambda a: torch.linalg.lu_factor_ex(_d(SINGULAR, a)),
}


@pytest.mark.parametrize("device", ["cpu", "interp", "task", "mncore"])
@pytest.mark.parametrize("case", CASES)
def test_matches_eager(case: str, device: str) -> None:
    fn = CASES[case]
    got, host = run_on_device(device, fn, A, implicit_sync="silent")
    want = fn(A)
    want = list(want) if isinstance(want, tuple) else [want]
    assert not host, host
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


def test_inverse_of_a_singular_matrix_raises_torchs_error() -> None:
    """info is computed on the device; _linalg_check_errors reads it and raises the
    error torch raises, naming the zero diagonal element."""
    torch_mncore.init("cpu", implicit_sync="silent")
    try:
        with pytest.raises(torch.linalg.LinAlgError, match="diagonal element 2 is zero"):
            torch.linalg.inv(SINGULAR.mncore())
    finally:
        torch_mncore.init("cpu")
