"""solve_triangular: scipy's semantics, blocked substitution for many right-hand sides."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import ozaki
import ozaki.linalg as ol


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
