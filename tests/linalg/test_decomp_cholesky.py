"""Blocked Cholesky: factors, the referenced triangle only, scipy's errors and formats."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import ozaki
import ozaki.linalg as ol
from ozaki.linalg import matrices

EPS = np.finfo(np.float64).eps


def assert_close(x, want, tol):
    """max |x - want| <= tol * max |want|: normwise, as backward-stable solvers agree."""
    assert np.abs(np.asarray(x) - want).max() <= tol * np.abs(want).max()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 48), nb=st.integers(1, 16), log_cond=st.floats(0, 12), lower=st.booleans(),
       seed=st.integers(0, 2 ** 32 - 1))
def test_blocked_cholesky_reconstructs_a(n, nb, log_cond, lower, seed):
    rng = np.random.default_rng(seed)
    a = matrices.random_cond(n, 10.0 ** log_cond, rng, spd=True)
    c = ol.cholesky(a, lower=lower, block_size=nb)
    l = c if lower else c.T
    assert np.array_equal(l, np.tril(l))
    assert (np.diagonal(l) > 0).all()
    assert np.abs(l @ l.T - a).max() <= 4 * n * EPS * np.abs(a).max()


def test_one_panel_is_lapack(rng):
    a = matrices.random_cond(20, 1e6, rng, spd=True)
    assert np.array_equal(ol.cholesky(a, lower=True, block_size=32), scipy.linalg.cholesky(a, lower=True))
    # the upper factor is the lower one of the transpose (LAPACK's 'U' sums in another order)
    u = ol.cholesky(a, block_size=32)
    assert np.array_equal(u, scipy.linalg.cholesky(a.T, lower=True).T)
    assert np.abs(u - scipy.linalg.cholesky(a)).max() <= 1e-11 * np.abs(u).max()


def test_only_the_named_triangle_is_read(rng):
    a = matrices.random_cond(24, 1e4, rng, spd=True)
    junk = rng.standard_normal((24, 24)) * 1e6
    up = np.triu(a) + np.tril(junk, -1)
    low = np.tril(a) + np.triu(junk, 1)
    ref = ol.cholesky(a, block_size=5)
    assert np.array_equal(ol.cholesky(up, block_size=5), ref)
    assert np.array_equal(ol.cholesky(low, lower=True, block_size=5), ref.T)


def test_not_positive_definite_reports_the_minor(rng):
    a = matrices.random_cond(20, 1e3, rng, spd=True)
    a[13, 13] = -1.0                                        # minor 14 fails (in the third block of 5)
    with pytest.raises(LinAlgError, match="14-th leading minor"):
        ol.cholesky(a, block_size=5)
    with pytest.raises(LinAlgError, match="1-th leading minor"):
        ol.cholesky(-np.eye(3))


def test_syrk_updates_run_on_ozaki_products(rng, monkeypatch):
    calls = []
    real = ozaki.matmul
    monkeypatch.setattr(ozaki, "matmul", lambda x, y, **kw: calls.append(x.shape) or real(x, y, **kw))
    ol.cholesky(matrices.random_cond(12, 10, rng, spd=True), block_size=4)
    assert calls == [(8, 4), (4, 4), (4, 4)]          # 8 x 8 trailing matrix: left half, lower right quarter
    calls.clear()
    ol.cholesky(matrices.random_cond(7, 10, rng, spd=True), block_size=4)
    assert calls == [(3, 4)]                          # under two blocks: one product


def test_cho_factor_cho_solve_and_stacks(rng):
    a = np.stack([matrices.random_cond(30, 1e5, rng, spd=True) for _ in range(2)])
    b = rng.standard_normal((30, 3))
    for lower in (True, False):
        cf = ol.cho_factor(a, lower=lower, block_size=7)
        assert cf[1] is lower
        x = ol.cho_solve(cf, b, block_size=7)
        assert x.shape == (2, 30, 3)
        assert_close(x, np.linalg.solve(a, b), 1e-9)
        # scipy reads our factor too
        assert_close(scipy.linalg.cho_solve((cf[0][0], lower), b), x[0], 1e-10)
    assert ol.cho_solve(ol.cho_factor(a[0]), b[:, 0]).shape == (30,)


def test_input_checks():
    with pytest.raises(ValueError, match="square"):
        ol.cholesky(np.ones((2, 3)))
    with pytest.raises(ValueError, match="infs or NaNs"):
        ol.cholesky(np.array([[np.nan]]))
    assert ol.cholesky(np.zeros((0, 0))).shape == (0, 0)


def test_vendor_factorization_is_lapacks(rng):
    a = matrices.random_cond(30, 1e8, rng, spd=True)
    junk = rng.standard_normal((30, 30)) * 1e3
    assert np.array_equal(ol.cholesky(np.tril(a) + np.triu(junk, 1), lower=True, factorization="vendor"),
                          scipy.linalg.cholesky(a, lower=True))
    # the upper triangle is read as the lower one of the transpose, as the blocked Cholesky's panels
    u = ol.cholesky(np.triu(a) + np.tril(junk, -1), factorization="vendor", block_size=4)
    assert np.array_equal(u, scipy.linalg.cholesky(a.T, lower=True).T)
    assert np.array_equal(u, ol.cholesky(a, block_size=64))
    c, lower = ol.cho_factor(a, lower=True, factorization="vendor")
    assert lower and np.array_equal(c, scipy.linalg.cholesky(a, lower=True))
    b = rng.standard_normal((30, 2))
    assert_close(ol.cho_solve((c, lower), b), np.linalg.solve(a, b), 1e-7)
    bad = a.copy()
    bad[17, 17] = -1.0
    with pytest.raises(LinAlgError, match="^18-th leading minor of the array is not positive definite"):
        ol.cholesky(bad, factorization="vendor")
    with pytest.raises(ValueError, match="factorization"):
        ol.cholesky(a, factorization="cusolver")
