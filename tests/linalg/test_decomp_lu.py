"""Blocked LU: the factors reconstruct A to LAPACK's backward error, the format is scipy's,
the ozaki updates run (small blocks), singularity is reported as scipy does."""

import warnings

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from scipy.linalg import LinAlgWarning

import ozaki
import ozaki.linalg as ol
from ozaki.linalg import decomp_lu, matrices
from ozaki.linalg._backend import Namespace

EPS = np.finfo(np.float64).eps


def assert_close(x, want, tol):
    """max |x - want| <= tol * max |want|: normwise, as backward-stable solvers agree."""
    assert np.abs(np.asarray(x) - want).max() <= tol * np.abs(want).max()


def _backward_error(a, lu, piv):
    m, n = a.shape
    k = min(m, n)
    l = np.tril(lu[:, :k], -1) + np.eye(m, k)
    u = np.triu(lu[:k])
    perm = decomp_lu.swaps_to_perm(piv, m)
    return np.abs(a[perm] - l @ u).max() / (np.abs(l).max() * np.abs(u).max() * max(m, n) * EPS)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 50), n=st.integers(1, 50), nb=st.integers(1, 20), seed=st.integers(0, 2 ** 32 - 1))
def test_blocked_lu_backward_error_any_shape_and_block(m, n, nb, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)) * np.exp2(rng.integers(-8, 8, (m, n)).astype(float))
    lu, piv = ol.lu_factor(a, block_size=nb)
    assert lu.shape == (m, n) and piv.shape == (min(m, n),) and piv.dtype == np.int32
    assert _backward_error(a, lu, piv) <= 1.0
    l = np.tril(lu[:, :min(m, n)], -1)
    assert np.abs(l).max(initial=0) <= 1.0                  # partial pivoting: |multipliers| <= 1


def test_same_factors_as_lapack_when_one_panel(rng):
    a = rng.standard_normal((30, 30))
    lu, piv = ol.lu_factor(a, block_size=64)
    lu2, piv2 = scipy.linalg.lu_factor(a)
    assert np.array_equal(lu, lu2) and np.array_equal(piv, piv2)


def test_blocked_factors_agree_with_lapack_and_feed_scipy(rng):
    a = matrices.random_cond(64, 1e3, rng)
    lu, piv = ol.lu_factor(a, block_size=8)
    lu2, piv2 = scipy.linalg.lu_factor(a)
    assert np.array_equal(piv, piv2)                        # random data: no near-ties in the pivots
    assert np.abs(lu - lu2).max() <= 1e-10 * np.abs(lu2).max()
    b = rng.standard_normal((64, 3))
    assert_close(scipy.linalg.lu_solve((lu, piv), b), np.linalg.solve(a, b), 1e-11)


def test_trailing_updates_run_on_ozaki_products(rng, monkeypatch):
    calls = []
    real = ozaki.matmul

    def spy(x, y, **kw):
        calls.append((x.shape, y.shape))
        return real(x, y, **kw)

    monkeypatch.setattr(ozaki, "matmul", spy)
    ol.lu_factor(rng.standard_normal((20, 20)), block_size=8)
    assert calls == [((12, 8), (8, 12)), ((4, 8), (8, 4))]


def test_updates_follow_ozaki_config(rng):
    a = rng.standard_normal((40, 40))
    with ozaki.config(mode="fast", num_moduli=8):           # coarse updates: a worse factorization
        lu8, piv8 = ol.lu_factor(a, block_size=8)
    lu, piv = ol.lu_factor(a, block_size=8)
    assert _backward_error(a, lu, piv) < _backward_error(a, lu8, piv8)


def test_lu_solve_both_transposes_and_stacks(rng):
    a = np.stack([matrices.random_cond(25, 1e3, rng) for _ in range(3)])
    b = rng.standard_normal((25, 4))
    f = ol.lu_factor(a, block_size=6)
    for trans, op in ((0, a), (1, a.transpose(0, 2, 1)), (2, a.transpose(0, 2, 1))):
        x = ol.lu_solve(f, b, trans=trans, block_size=6)
        assert x.shape == (3, 25, 4)
        assert_close(x, np.linalg.solve(op, b), 1e-11)
    assert ol.lu_solve(f, b[:, 0]).shape == (3, 25)
    with pytest.raises(ValueError):
        ol.lu_solve(f, np.ones(24))
    with pytest.raises(ValueError):
        ol.lu_solve(f, b, trans=3)


def test_lu_solve_with_many_rhs_uses_blocked_triangular_solves(rng):
    a = matrices.random_cond(48, 1e3, rng)
    b = rng.standard_normal((48, 40))
    x = ol.lu_solve(ol.lu_factor(a, block_size=8), b, block_size=8)
    assert_close(x, np.linalg.solve(a, b), 1e-11)


def test_singular_matrix_warns_as_scipy():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    with pytest.warns(LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        lu, piv = ol.lu_factor(a, block_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lu2, piv2 = scipy.linalg.lu_factor(a)
    assert np.array_equal(piv, piv2) and lu[2, 2] == lu2[2, 2] == 0.0


def test_zero_column_inside_a_later_panel(rng):
    a = rng.standard_normal((12, 12))
    a[:, 9] = 0.0
    with pytest.warns(LinAlgWarning):
        lu, piv = ol.lu_factor(a, block_size=4)
    assert np.diagonal(lu)[9] == 0.0
    assert ol.det(a, block_size=4) == 0.0


def test_input_checks():
    with pytest.raises(ValueError, match="ndim"):
        ol.lu_factor(np.ones(3))
    with pytest.raises(ValueError, match="infs or NaNs"):
        ol.lu_factor(np.array([[1.0, np.inf], [0.0, 1.0]]))
    lu, piv = ol.lu_factor(np.zeros((0, 0)))
    assert lu.shape == (0, 0) and piv.shape == (0,)


def test_swaps_to_perm():
    assert decomp_lu.swaps_to_perm([2, 2, 2], 3).tolist() == [2, 0, 1]
    a = np.arange(12.0).reshape(4, 3)
    piv = [3, 3, 2]
    b = a.copy()
    for i, p in enumerate(piv):                             # LAPACK's xLASWP, row by row
        b[[i, p]] = b[[p, i]]
    assert np.array_equal(a[decomp_lu.swaps_to_perm(piv, 4)], b)


def test_lu_factor_object_solves(rng):
    ns = Namespace(gpu=False)
    a = matrices.random_cond(17, 1e3, rng)
    f = decomp_lu.LUFactor.factor(ns, a, 5)
    b = rng.standard_normal((17, 2))
    assert_close(f.solve(b), np.linalg.solve(a, b), 1e-11)
    assert_close(f.solve_t(b), np.linalg.solve(a.T, b), 1e-11)
    assert f.zero_pivot() == -1


@settings(max_examples=50, deadline=None)
@given(m=st.integers(1, 60), k=st.integers(0, 60), seed=st.integers(0, 2 ** 32 - 1))
def test_swaps_to_perm_is_the_sequence_of_swaps(m, k, seed):
    rng = np.random.default_rng(seed)
    k = min(k, m)
    piv = np.array([rng.integers(i, m) for i in range(k)], dtype=np.int64)
    rows = list(range(m))
    for i, p in enumerate(piv):                             # LAPACK's xLASWP, one swap after another
        rows[i], rows[p] = rows[p], rows[i]
    assert decomp_lu.swaps_to_perm(piv, m).tolist() == rows


def test_vendor_factorization_is_lapacks(rng):
    a = rng.standard_normal((40, 40))
    stack = np.stack([a, matrices.random_cond(40, 1e8, rng)])
    lu, piv = ol.lu_factor(stack, factorization="vendor", block_size=8)       # the block size plays no part
    for i in range(2):
        lu2, piv2 = scipy.linalg.lu_factor(stack[i])
        assert np.array_equal(lu[i], lu2) and np.array_equal(piv[i], piv2)
    assert piv.dtype == np.int32
    lu_r, piv_r = ol.lu_factor(a[:, :25], factorization="vendor")             # rectangular as scipy's
    lu2, piv2 = scipy.linalg.lu_factor(a[:, :25])
    assert np.array_equal(lu_r, lu2) and np.array_equal(piv_r, piv2)
    with pytest.warns(LinAlgWarning, match="Diagonal number 2 is exactly zero"):
        ol.lu_factor(np.ones((3, 3)), factorization="vendor")
    with pytest.raises(ValueError, match="factorization"):
        ol.lu_factor(a, factorization="magma")
    with pytest.raises(ValueError, match="factorization"):
        ol.lu_factor(np.zeros((0, 3, 3)), factorization="magma")              # checked with nothing to factor


def test_lu_factor_objects_of_both_factorizations_solve(rng):
    ns = Namespace(gpu=False)
    a = matrices.random_cond(45, 1e6, rng)
    b = rng.standard_normal((45, 2))
    for factorization in ("vendor", "ozaki"):
        f = decomp_lu.LUFactor.factor(ns, a, 7, factorization)
        assert f.nb == 7 and f.zero_pivot() == -1
        assert_close(f.solve(b), np.linalg.solve(a, b), 1e-9)               # blocked substitution, 7 rows
        assert_close(f.solve_t(b), np.linalg.solve(a.T, b), 1e-9)
        assert_close(f.solve(b, block_size=64), np.linalg.solve(a, b), 1e-9)
    f = decomp_lu.LUFactor.factor(ns, np.asfortranarray(a.copy()), factorization="vendor", overwrite=True)
    assert np.array_equal(f.lu, scipy.linalg.lu_factor(a)[0])
