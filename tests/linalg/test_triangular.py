"""solve_triangular: scipy's semantics, blocked substitution for many right-hand sides (ozaki
updates) and for few (native float64 updates), against scipy and exact solutions."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import ozaki
import ozaki.linalg as ol
from ozaki.linalg import matrices, triangular
from ozaki.linalg._backend import Namespace

NS = Namespace(gpu=False)
EPS = 2.0 ** -53


def assert_close(x, want, tol):
    """max |x - want| <= tol * max |want|: normwise, as backward-stable solvers agree."""
    assert np.abs(np.asarray(x) - want).max() <= tol * np.abs(want).max()


def _tri(rng, n, lower):
    t = rng.standard_normal((n, n)) + np.diag(np.full(n, 4.0))
    return np.tril(t) if lower else np.triu(t)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 30), nb=st.integers(1, 12), lower=st.booleans(),
       trans=st.sampled_from([0, 1, 2, "N", "T", "C"]), unit=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_matches_scipy_every_option(n, k, nb, lower, trans, unit, seed):
    rng = np.random.default_rng(seed)
    t = _tri(rng, n, lower) + rng.standard_normal((n, n)) * 100 * (np.triu if lower else np.tril)(np.ones((n, n)), 1 if lower else -1)
    b = rng.standard_normal((n, k))
    x = ol.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit, block_size=nb)
    want = scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit)
    assert_close(x, want, 1e-9)


def test_blocked_path_runs_ozaki_updates(rng, monkeypatch):
    calls = []
    real = ozaki.matmul
    monkeypatch.setattr(ozaki, "matmul", lambda x, y, **kw: calls.append((x.shape, y.shape)) or real(x, y, **kw))
    t = _tri(rng, 12, lower=True)
    ol.solve_triangular(t, rng.standard_normal((12, 4)), lower=True, block_size=4)
    assert calls == [((8, 4), (4, 4)), ((4, 4), (4, 4))]
    calls.clear()
    ol.solve_triangular(t, rng.standard_normal((12, 3)), lower=True, block_size=4)
    assert calls == []                                      # fewer right-hand sides than a block: vendor TRSM


def test_vectors_and_stacks(rng):
    t = np.stack([_tri(rng, 9, False) for _ in range(3)])
    b = rng.standard_normal(9)
    x = ol.solve_triangular(t, b)
    assert x.shape == (3, 9)
    for i in range(3):
        assert np.allclose(t[i] @ x[i], b)


def test_singular_and_bad_input():
    t = np.triu(np.ones((4, 4)))
    t[2, 2] = 0.0
    with pytest.raises(LinAlgError, match="diagonal 2"):
        ol.solve_triangular(t, np.ones(4))
    assert np.isfinite(ol.solve_triangular(t, np.ones(4), unit_diagonal=True)).all()
    with pytest.raises(ValueError):
        ol.solve_triangular(np.eye(3), np.ones(4))
    with pytest.raises(ValueError):
        ol.solve_triangular(np.eye(3), np.ones(3), trans=3)


# -- few right-hand sides: blocked substitution on native float64 products ---------------

def _exact_solution(t, b, trans, lower, unit):
    """op(t)^-1 b as Fractions [i][j], by substitution in exact arithmetic (the triangle named
    by ``lower`` read, its diagonal taken as ones when ``unit``)."""
    n, k = b.shape
    tri = np.tril(t) if lower else np.triu(t)
    if unit:
        tri = tri - np.diag(np.diagonal(tri)) + np.eye(n)
    op = tri.T if trans else tri
    low = lower != bool(trans)
    x = [[None] * k for _ in range(n)]
    for j in range(k):
        for i in (range(n) if low else reversed(range(n))):
            others = range(i) if low else range(i + 1, n)
            s = Fraction(b[i, j]) - sum(Fraction(op[i, l]) * x[l][j] for l in others)
            x[i][j] = s / Fraction(op[i, i])
    return x


def _skeel_factors(t, trans, lower, unit):
    """(|op(t)^-1|, |op(t)|): |op(t)^-1| |op(t)| |x| bounds a backward-stable solve's error
    componentwise (times n eps, to first order); the inverse from its exact columns."""
    n = t.shape[0]
    tri = np.tril(t) if lower else np.triu(t)
    if unit:
        tri = tri - np.diag(np.diagonal(tri)) + np.eye(n)
    op = tri.T if trans else tri
    inv = np.array([[float(v) for v in row] for row in _exact_solution(t, np.eye(n), trans, lower, unit)])
    return np.abs(inv), np.abs(op)


def _ill_conditioned(rng, n, lower, kind):
    """Triangles that are hard for a solver: graded diagonals over 2^+-40, Kahan's matrix,
    and the unit lower factor L of a badly conditioned matrix's LU."""
    if kind == "graded":
        t = rng.standard_normal((n, n)) * np.exp2(rng.integers(-40, 41, n))[:, None]
        t += np.diag(np.exp2(rng.integers(-40, 41, n).astype(float)))
    elif kind == "kahan":
        t = matrices.kahan(n)
        t = t.T if lower else t
    else:                                   # L (unit diagonal) or U of the LU, in one array as LAPACK's
        t, _ = scipy.linalg.lu_factor(matrices.random_cond(n, 1e12, rng))
    return np.tril(t) if lower else np.triu(t)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(1, 5), nb=st.integers(1, 16), lower=st.booleans(),
       trans=st.sampled_from([0, 1, 2, "N", "T", "C"]), unit=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_substitution_matches_scipy_every_option(n, k, nb, lower, trans, unit, seed):
    rng = np.random.default_rng(seed)
    t = _tri(rng, n, lower) + np.where(np.tri(n, k=-1, dtype=bool).T if lower else np.tri(n, k=-1, dtype=bool),
                                       np.nan, 0.0)                       # the other triangle is never read
    b = rng.standard_normal((n, k))
    x = triangular.substitute(NS, t, b, lower, triangular._TRANS[trans], unit, block_size=nb)
    want = scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit, check_finite=False)
    assert_close(x, want, 1e-10)


@pytest.mark.parametrize("kind", ["graded", "kahan", "lu factor"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
def test_substitution_forward_error_against_exact_solutions(rng, kind, lower, trans):
    # n not a multiple of the block, one to several columns: the error of each entry within
    # what backward stability allows, n eps (|op(t)^-1| |op(t)| |x*|)_i, as LAPACK's solve
    n = 37
    unit = kind == "lu factor" and lower
    t = _ill_conditioned(rng, n, lower, kind)
    inv, op = _skeel_factors(t, trans, lower, unit)
    for k in (1, 2, 5):
        b = rng.standard_normal((n, k))
        exact = _exact_solution(t, b, trans, lower, unit)
        xs = np.array([[float(v) for v in row] for row in exact])
        scale = inv @ (op @ np.abs(xs))
        for nb in (5, 16, 64):
            x = triangular.substitute(NS, t, b, lower, trans, unit, block_size=nb)
            err = np.array([[abs(Fraction(x[i, j]) - exact[i][j]) for j in range(k)] for i in range(n)], float)
            assert (err <= n * EPS * scale).all(), (kind, nb, (err / (n * EPS * scale)).max())
            lapack = scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit)
            err_lapack = np.abs(lapack - xs)
            assert (err_lapack <= n * EPS * scale).all()        # the yardstick holds for LAPACK too


def test_substitution_on_unit_diagonal_ignores_the_diagonal(rng):
    n = 23
    t = np.tril(rng.standard_normal((n, n)))
    t[np.diag_indices(n)] = np.nan                    # not read
    b = rng.standard_normal((n, 2))
    for trans in (0, 1):
        exact = _exact_solution(np.nan_to_num(t), b, trans, True, True)
        x = triangular.substitute(NS, t, b, True, trans, True, block_size=4)
        assert np.array_equal(np.isfinite(x), np.ones_like(x, bool))
        xs = np.array([[float(v) for v in row] for row in exact])
        assert_close(x, xs, 1e-12)


def test_few_right_hand_sides_run_native_blocked_substitution(rng, monkeypatch):
    products, solves = [], []
    real_product, real_solve = Namespace.subtract_product, Namespace.trsm_in_place
    monkeypatch.setattr(Namespace, "subtract_product",
                        lambda self, c, a, b: products.append(a.shape) or real_product(self, c, a, b))
    monkeypatch.setattr(Namespace, "trsm_in_place",
                        lambda self, t, x, *args, **kw: solves.append(t.shape) or real_solve(self, t, x, *args, **kw))
    t = _tri(rng, 10, lower=False)
    b = rng.standard_normal((10, 3))
    x = ol.solve_triangular(t, b, block_size=4)               # 3 columns < 4: blocks of 4 rows, bottom up
    assert_close(x, scipy.linalg.solve_triangular(t, b), 1e-12)
    assert solves == [(2, 2), (4, 4), (4, 4)]
    assert products == [(4, 2), (4, 6)]                      # each block row: one product over the solved rows
    products.clear(), solves.clear()
    ol.solve_triangular(t, b[:, :1])                           # default: 10 rows within one block
    assert products == [] and solves == []


def test_trsm_splits_by_the_number_of_columns(rng, monkeypatch):
    used = []
    monkeypatch.setattr(triangular, "substitute", lambda *a, **kw: used.append("substitute") or np.zeros((12, 1)))
    t = _tri(rng, 12, lower=True)
    triangular.trsm(NS, t, rng.standard_normal((12, 1)), True, block_size=4)
    assert used == ["substitute"]
    used.clear()
    x = triangular.trsm(NS, t, rng.standard_normal((12, 4)), True, block_size=4)   # as many as a block: ozaki
    assert used == [] and x.shape == (12, 4)
