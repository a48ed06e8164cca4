"""Dense linear algebra of ATen as graph ops, unrolled over the (static) matrix size n:
LU factorization with partial pivoting (LAPACK's getrf: the first largest magnitude is
the pivot, a zero pivot skips the scaling and sets ``info``), triangular solves by
substitution, Cholesky (right-looking), and from them ``det``, ``slogdet``, ``solve``,
``inv``, ``lu``/``lu_factor``/``lu_solve``/``lu_unpack``, ``cholesky_solve``,
``cholesky_inverse``, ``solve_triangular``/``triangular_solve``, batched over leading
dimensions. Each of the n steps is a few whole-matrix ops (a masked column, a rank-one
update, a row permutation by gather), so n is limited to :data:`LINALG_MAX`. The
``info`` results are computed on the device; ``_linalg_check_errors`` reads them (the
runtime's tracer, as torch's CPU kernels check them). Checked against eager in
``tests/test_aten_linalg.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import fx
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects.graph_semantics_transcendental import Math
from mncore_ir.frontends.aten_expansions import argument, extreme, first_index
from mncore_ir.frontends.aten_handlers import handles, reduce
from mncore_ir.frontends.aten_scans import fold
from mncore_ir.frontends.fx_importer import FxImporter, unsupported

aten = torch.ops.aten

#: The largest matrix side unrolled (each step is about 25 graph ops).
LINALG_MAX = 64
I32 = IntegerType(32)


class Matrices:
    """Whole-matrix helpers on (..., n, n) values of one element type."""

    def __init__(self, imp: FxImporter, like: SSAValue) -> None:
        self.imp, self.m = imp, Math(imp.builder, like)
        self.typ = g.element_type_of(like)

    def const(self, array: np.ndarray, typ: Any = None) -> SSAValue:
        return self.imp.constant(array, typ or self.typ, array.shape)

    def col(self, a: SSAValue, k: int) -> SSAValue:
        """Column k as (..., n, 1)."""
        r = len(g.shape_of(a))
        return self.imp.insert(g.SliceOp(a, dim=r - 1, start=k, end=k + 1), hint=False)

    def row(self, a: SSAValue, k: int) -> SSAValue:
        """Row k as (..., 1, n)."""
        r = len(g.shape_of(a))
        return self.imp.insert(g.SliceOp(a, dim=r - 2, start=k, end=k + 1), hint=False)

    def t(self, a: SSAValue) -> SSAValue:
        r = len(g.shape_of(a))
        perm = [*range(r - 2), r - 1, r - 2]
        return self.imp.insert(g.PermuteOp(a, perm=perm), hint=False)

    def rows(self, n: int, keep: Any) -> SSAValue:
        """A (n, 1) boolean constant: ``keep(i)`` for row i."""
        return self.const(np.array([[bool(keep(i))] for i in range(n)]), g.i1)

    def unit_row(self, n: int, k: int) -> SSAValue:
        """(1, n): 1 at column k, 0 elsewhere (a column placed by a product)."""
        return self.const(np.eye(n)[k:k + 1])

    def gather_rows(self, a: SSAValue, index: SSAValue) -> SSAValue:
        """Rows of ``a`` reordered by ``index`` (..., n, 1) i64."""
        shape = g.shape_of(a)
        spread = self.imp.insert(g.ExpandOp(index, shape), hint=False)
        return self.imp.insert(g.GatherOp(a, spread, dim=len(shape) - 2), hint=False)

    def diagonal(self, a: SSAValue) -> SSAValue:
        """(..., n) of the diagonal (a masked row sum)."""
        n = g.shape_of(a)[-1]
        masked = self.m.where(self.const(np.eye(n, dtype=bool), g.i1), a, 0.0)
        return reduce(self.imp, g.SumOp, masked, [len(g.shape_of(a)) - 1], False, hint=False)


def _square(node: fx.Node, a: SSAValue, rectangular: bool = False) -> int:
    """The matrices' side (columns, for ``rectangular`` ops), checked."""
    shape = g.shape_of(a)
    if len(shape) < 2 or (shape[-1] != shape[-2] and not rectangular):
        raise unsupported(node, f"{node.target} of a non-square {list(shape)} matrix")
    if max(shape[-2:]) > LINALG_MAX:
        raise unsupported(node, f"{node.target} of {shape[-2]} x {shape[-1]} matrices "
                                f"(unrolled up to {LINALG_MAX})")
    if not g.is_float(g.element_type_of(a)):
        raise unsupported(node, f"{node.target} of {g.element_type_of(a)}")
    return shape[-1]


def _swap(mm: Matrices, n: int, k: int, p: SSAValue) -> SSAValue:
    """The row order exchanging rows k and p (..., 1, 1): (..., n, 1) i64."""
    m, ar = mm.m, mm.const(np.arange(n).reshape(n, 1), g.i64)
    kk = mm.imp.constant(k, g.i64)
    return m.where(m.eq(ar, kk), p, m.where(m.eq(ar, p), kk, ar))


def lu(mm: Matrices, a: SSAValue, n: int) -> tuple[SSAValue, SSAValue, list[SSAValue],
                                                    SSAValue, SSAValue]:
    """P^T A = L U for A (..., m, n): U (upper, m x n), L (unit lower, m x n; its first
    min(m, n) columns are L's), the pivot row of each of the min(m, n) steps (..., 1, 1)
    i64, the composed row order (..., m, 1) and info (..., 1, 1) i32."""
    imp, m = mm.imp, mm.m
    rank = len(g.shape_of(a))
    height = g.shape_of(a)[-2]
    u = a
    lower = imp.insert(g.ExpandOp(imp.constant(0.0, mm.typ), g.shape_of(a)), hint=False)
    order = imp.insert(g.ExpandOp(mm.const(np.arange(height).reshape(height, 1), g.i64),
                                  (*g.shape_of(a)[:-1], 1)), hint=False)
    info = imp.constant(0, I32)
    pivots = []
    for k in range(min(height, n)):
        magnitude = m.where(mm.rows(height, lambda i, k=k: i >= k), m.abs(mm.col(u, k)),
                            -1.0)
        best = extreme(imp, magnitude, [rank - 2], True, True)
        p = first_index(imp, magnitude, best, rank - 2, True)
        swap = _swap(mm, height, k, p)
        u, lower, order = (mm.gather_rows(v, swap) for v in (u, lower, order))
        pivot = mm.col(mm.row(u, k), k)
        below = m.where(mm.rows(height, lambda i, k=k: i > k), mm.col(u, k), 0.0)
        factor = m.where(m.eq(pivot, 0.0), 0.0, m.div(below, pivot))
        u = m.sub(u, m.mul(factor, mm.row(u, k)))
        lower = m.add(lower, m.mul(factor, mm.unit_row(n, k)))
        pivots.append(p)
        zero = m.and_(m.eq(info, imp.constant(0, I32)), m.eq(pivot, 0.0))
        info = m.where(zero, imp.constant(k + 1, I32), info)
    upper = m.where(mm.const(np.triu(np.ones((height, n), bool)), g.i1), u, 0.0)
    unit = m.add(lower, mm.const(np.eye(height, n)))
    return upper, unit, pivots, order, info


def _packed(mm: Matrices, upper: SSAValue, unit: SSAValue) -> SSAValue:
    return mm.m.sub(mm.m.add(upper, unit), mm.const(np.eye(*g.shape_of(upper)[-2:])))


def _pivot_tensor(mm: Matrices, pivots: list[SSAValue]) -> SSAValue:
    """LAPACK's 1-based pivots (..., n) i32."""
    imp = mm.imp
    ones = [imp.reshape(mm.m.e(g.AddOp(p, imp.constant(1, g.i64))),
                        (*g.shape_of(p)[:-2], 1)) for p in pivots]
    joined = ones[0] if len(ones) == 1 else imp.insert(
        g.ConcatOp(*ones, dim=len(g.shape_of(ones[0])) - 1), hint=False)
    return imp.insert(g.ConvertOp(joined, I32), hint=False)


def substitute(mm: Matrices, tri: SSAValue, b: SSAValue, n: int, lower: bool,
               unit: bool) -> SSAValue:
    """X with ``tri @ X = b``, by forward (``lower``) or backward substitution."""
    m = mm.m
    x = b
    steps = range(n) if lower else range(n - 1, -1, -1)
    for k in steps:
        xk = mm.row(x, k)
        if not unit:
            xk = m.div(xk, mm.col(mm.row(tri, k), k))
            x = m.where(mm.rows(n, lambda i, k=k: i == k), xk, x)
        later = (lambda i, k=k: i > k) if lower else (lambda i, k=k: i < k)
        column = m.where(mm.rows(n, later), mm.col(tri, k), 0.0)
        x = m.sub(x, m.mul(column, xk))
    return x


def _as_columns(imp: FxImporter, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue,
                                                                     bool]:
    """A and B broadcast to common batch dimensions, B as columns (a vector B, as
    torch decides, becomes one column); whether it was a vector."""
    sa, sb = g.shape_of(a), g.shape_of(b)
    vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])
    if vector:
        b = imp.reshape(b, (*sb, 1))
        sb = g.shape_of(b)
    batch = g.broadcast_shapes(sa[:-2], sb[:-2])
    if sa[:-2] != batch:
        a = imp.insert(g.ExpandOp(a, (*batch, *sa[-2:])), hint=False)
    if sb[:-2] != batch:
        b = imp.insert(g.ExpandOp(b, (*batch, *sb[-2:])), hint=False)
    return a, b, vector


def _lu_solve(mm: Matrices, upper: SSAValue, unit: SSAValue, order: SSAValue,
              b: SSAValue, n: int) -> SSAValue:
    ordered = mm.gather_rows(b, order)
    return substitute(mm, upper, substitute(mm, unit, ordered, n, True, True), n, False,
                      False)


@handles(aten.linalg_lu_factor_ex.default)
def _lu_factor(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue, SSAValue]:
    a = imp.value(node.args[0])
    n = _square(node, a, rectangular=True)
    if not node.kwargs.get("pivot", True):
        raise unsupported(node, "LU without pivoting")
    mm = Matrices(imp, a)
    upper, unit, pivots, _, info = lu(mm, a, n)
    return (_packed(mm, upper, unit), _pivot_tensor(mm, pivots),
            imp.reshape(info, g.shape_of(a)[:-2]))


@handles(aten._linalg_det.default, aten._linalg_slogdet.default)
def _det(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    """det = (-1)^swaps prod(diag U); slogdet: its sign and log|det| (sum of logs)."""
    a = imp.value(node.args[0])
    n = _square(node, a)
    mm = Matrices(imp, a)
    m = mm.m
    if not n:  # the empty product: det 1, log|det| 0
        batch = g.shape_of(a)[:-2]
        one = imp.insert(g.ExpandOp(imp.constant(1.0, mm.typ), batch), hint=False)
        pivots_ = imp.insert(g.ExpandOp(imp.constant(0, I32), (*batch, 0)), hint=False)
        if node.target == aten._linalg_det.default:
            return one, a, pivots_
        return one, m.mul(one, 0.0), a, pivots_
    upper, unit, pivots, _, _ = lu(mm, a, n)
    batch = g.shape_of(a)[:-2]
    diag = mm.diagonal(upper)
    flips = [m.where(m.eq(p, imp.constant(k, g.i64)), 1.0, -1.0) for k, p in
             enumerate(pivots)]
    sign = imp.reshape(flips[0] if n == 1 else fold(imp, imp.insert(g.ConcatOp(
        *flips, dim=len(g.shape_of(flips[0])) - 1), hint=False),
        len(g.shape_of(flips[0])) - 1, m.mul, 1.0), batch)
    rank = len(g.shape_of(diag)) - 1
    packed, pivot_tensor = _packed(mm, upper, unit), _pivot_tensor(mm, pivots)
    if node.target == aten._linalg_det.default:
        det = m.mul(sign, imp.reshape(fold(imp, diag, rank, m.mul, 1.0), batch))
        return det, packed, pivot_tensor
    signs = m.where(m.lt(diag, 0.0), -1.0, m.where(m.eq(diag, 0.0), 0.0, 1.0))
    sign = m.mul(sign, imp.reshape(fold(imp, signs, rank, m.mul, 1.0), batch))
    logs = reduce(imp, g.SumOp, m.unary(g.LogOp, m.abs(diag)), [rank], False, hint=False)
    return sign, logs, packed, pivot_tensor


@handles(aten._linalg_solve_ex.default, aten.linalg_inv_ex.default)
def _solve(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, ...]:
    """A X = B (X A = B with ``left=False``) from A's LU; inv solves for I."""
    a = imp.value(node.args[0])
    n = _square(node, a)
    mm = Matrices(imp, a)
    inverse = node.target == aten.linalg_inv_ex.default
    left = node.kwargs.get("left", True)
    if inverse:
        b = imp.insert(g.ExpandOp(mm.const(np.eye(n)), g.shape_of(a)), hint=False)
        vector = False
    else:
        a, b, vector = _as_columns(imp, a, imp.value(node.args[1]))
        if not left:  # X A = B: A^T X^T = B^T
            if vector:
                raise unsupported(node, "solve of a vector from the right")
            a, b = mm.t(a), mm.t(b)
    upper, unit, pivots, order, info = lu(mm, a, n)
    x = _lu_solve(mm, upper, unit, order, b, n)
    info = imp.reshape(info, g.shape_of(a)[:-2])
    if inverse:
        return x, info
    x = mm.t(x) if not left else x
    if vector:
        x = imp.reshape(x, g.shape_of(x)[:-1])
    return x, _packed(mm, upper, unit), _pivot_tensor(mm, pivots), info


def cholesky(mm: Matrices, a: SSAValue, n: int) -> tuple[SSAValue, SSAValue]:
    """A = L L^T (lower L), and info: the first step whose pivot is not positive."""
    imp, m = mm.imp, mm.m
    rest = a
    lower = imp.insert(g.ExpandOp(imp.constant(0.0, mm.typ), g.shape_of(a)), hint=False)
    info = imp.constant(0, I32)
    for k in range(n):
        pivot = mm.col(mm.row(rest, k), k)
        bad = m.and_(m.eq(info, imp.constant(0, I32)), m.e(g.NotOp(m.lt(0.0, pivot))))
        info = m.where(bad, imp.constant(k + 1, I32), info)
        column = m.where(mm.rows(n, lambda i, k=k: i >= k),
                         m.div(mm.col(rest, k), m.unary(g.SqrtOp, pivot)), 0.0)
        lower = m.add(lower, m.mul(column, mm.unit_row(n, k)))
        rest = m.sub(rest, m.mul(column, imp.reshape(column, (*g.shape_of(column)[:-2], 1,
                                                               n))))
    return lower, info


@handles(aten.linalg_cholesky_ex.default, aten.cholesky.default)
def _cholesky(imp: FxImporter, node: fx.Node) -> Any:
    a = imp.value(node.args[0])
    n = _square(node, a)
    mm = Matrices(imp, a)
    upper = node.kwargs.get("upper", False) or argument(node, 1, "upper", False)
    lower, info = cholesky(mm, a, n)
    factor = mm.t(lower) if upper else lower
    if node.target == aten.cholesky.default:
        return factor
    return factor, imp.reshape(info, g.shape_of(a)[:-2])


def _cholesky_solve(mm: Matrices, factor: SSAValue, b: SSAValue, n: int, upper: bool
                    ) -> SSAValue:
    """A X = B for A = L L^T (``upper``: U^T U)."""
    lower = mm.t(factor) if upper else factor
    return substitute(mm, mm.t(lower), substitute(mm, lower, b, n, True, False), n, False,
                      False)


@handles(aten.cholesky_solve.default, aten.cholesky_inverse.default)
def _cholesky_uses(imp: FxImporter, node: fx.Node) -> SSAValue:
    inverse = node.target == aten.cholesky_inverse.default
    factor = imp.value(node.args[0] if inverse else node.args[1])
    n = _square(node, factor)
    mm = Matrices(imp, factor)
    upper = argument(node, 1 if inverse else 2, "upper", False)
    if inverse:
        b = imp.insert(g.ExpandOp(mm.const(np.eye(n)), g.shape_of(factor)), hint=False)
    else:
        factor, b, _ = _as_columns(imp, factor, imp.value(node.args[0]))
    return _cholesky_solve(mm, factor, b, n, upper)


@handles(aten.linalg_solve_triangular.default, aten.triangular_solve.default)
def _triangular(imp: FxImporter, node: fx.Node) -> Any:
    if node.target == aten.triangular_solve.default:
        b, a = imp.value(node.args[0]), imp.value(node.args[1])
        upper, transpose = argument(node, 2, "upper", True), argument(node, 3, "transpose",
                                                                      False)
        unit, left = argument(node, 4, "unitriangular", False), True
    else:
        a, b = imp.value(node.args[0]), imp.value(node.args[1])
        upper, transpose = node.kwargs["upper"], False
        unit, left = node.kwargs.get("unitriangular", False), node.kwargs.get("left", True)
    n = _square(node, a)
    mm = Matrices(imp, a)
    original = a
    a, b, _ = _as_columns(imp, a, b)
    if not left:  # X A = B: A^T X^T = B^T
        a, b, upper = mm.t(a), mm.t(b), not upper
    if transpose:
        a, upper = mm.t(a), not upper
    x = substitute(mm, a, b, n, not upper, unit)
    x = x if left else mm.t(x)
    if node.target == aten.triangular_solve.default:
        return x, original
    return x


def _order_of(mm: Matrices, pivots: SSAValue, n: int) -> SSAValue:
    """The composed row order (..., n, 1) of LAPACK's 1-based pivot sequence."""
    imp, m = mm.imp, mm.m
    batch = g.shape_of(pivots)[:-1]
    rows = imp.insert(g.ConvertOp(pivots, g.i64), hint=False)
    order = imp.insert(g.ExpandOp(mm.const(np.arange(n).reshape(n, 1), g.i64),
                                  (*batch, n, 1)), hint=False)
    rank = len(batch) + 1
    for k in range(g.shape_of(pivots)[-1]):
        p = m.sub(imp.reshape(imp.insert(g.SliceOp(rows, dim=rank - 1, start=k, end=k + 1),
                                         hint=False), (*batch, 1, 1)), imp.constant(1, g.i64))
        order = mm.gather_rows(order, _swap(mm, n, k, p))
    return order


def _permutation(mm: Matrices, order: SSAValue, n: int) -> SSAValue:
    """P with P^T A = A[order]: P[j, i] = [order[i] == j]."""
    m = mm.m
    columns = mm.imp.reshape(order, (*g.shape_of(order)[:-2], 1, n))
    hit = m.eq(columns, mm.const(np.arange(n).reshape(n, 1), g.i64))
    return m.where(hit, 1.0, 0.0)


@handles(aten.lu_unpack.default, aten.linalg_lu.default)
def _lu_unpack(imp: FxImporter, node: fx.Node) -> tuple[SSAValue, SSAValue, SSAValue]:
    """P (m x m), L (m x k) and U (k x n), k = min(m, n), of a factorization or of
    packed LU and its pivots."""
    a = imp.value(node.args[0])
    n = _square(node, a, rectangular=True)
    height = g.shape_of(a)[-2]
    mm = Matrices(imp, a)
    if node.target == aten.linalg_lu.default:
        if not node.kwargs.get("pivot", True):
            raise unsupported(node, "LU without pivoting")
        upper, unit, _, order, _ = lu(mm, a, n)
    else:
        upper = mm.m.where(mm.const(np.triu(np.ones((height, n), bool)), g.i1), a, 0.0)
        strict = np.tril(np.ones((height, n), bool), -1)
        unit = mm.m.add(mm.m.where(mm.const(strict, g.i1), a, 0.0),
                        mm.const(np.eye(height, n)))
        order = _order_of(mm, imp.value(node.args[1]), height)
    k = min(height, n)
    rank = len(g.shape_of(a))
    if k < n:
        unit = imp.insert(g.SliceOp(unit, dim=rank - 1, start=0, end=k), hint=False)
    if k < height:
        upper = imp.insert(g.SliceOp(upper, dim=rank - 2, start=0, end=k), hint=False)
    return _permutation(mm, order, height), unit, upper


@handles(aten.linalg_lu_solve.default)
def _linalg_lu_solve(imp: FxImporter, node: fx.Node) -> SSAValue:
    """From packed LU and pivots: A X = B; ``adjoint``: A^T X = B (U^T, L^T, then P);
    ``left=False`` transposes both sides."""
    packed, pivots, b = (imp.value(v) for v in node.args[:3])
    n = _square(node, packed)
    mm = Matrices(imp, packed)
    m = mm.m
    left, adjoint = node.kwargs.get("left", True), node.kwargs.get("adjoint", False)
    upper = m.where(mm.const(np.triu(np.ones((n, n), bool)), g.i1), packed, 0.0)
    unit = m.add(m.where(mm.const(np.tril(np.ones((n, n), bool), -1), g.i1), packed, 0.0),
                 mm.const(np.eye(n)))
    order = _order_of(mm, pivots, n)
    packed, b, _ = _as_columns(imp, packed, b)
    if not left:  # X A = B: A^T X^T = B^T
        b, adjoint = mm.t(b), not adjoint
    if adjoint:
        z = substitute(mm, mm.t(unit), substitute(mm, mm.t(upper), b, n, True, False), n,
                       False, True)
        x = m.e(g.MatmulOp(_permutation(mm, order, n), z))
    else:
        x = _lu_solve(mm, upper, unit, order, b, n)
    return x if left else mm.t(x)
