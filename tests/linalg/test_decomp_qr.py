"""Blocked Householder QR and lstsq."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st

import ozaki
import ozaki.linalg as ol
from ozaki.linalg import decomp_qr, matrices
from ozaki.linalg._backend import Namespace

NS = Namespace(gpu=False)
EPS = np.finfo(np.float64).eps


def test_larft_gives_the_product_of_the_reflectors(rng):
    m, k = 12, 5
    qr, tau = NS.geqrf(rng.standard_normal((m, k)))
    v = decomp_qr._reflector_block(NS, qr)
    t = decomp_qr.larft(NS, v, tau)
    h = np.eye(m)
    for i in range(k):
        h = h @ (np.eye(m) - tau[i] * np.outer(v[:, i], v[:, i]))
    assert np.abs(h - (np.eye(m) - v @ t @ v.T)).max() < 1e-14
    assert np.array_equal(t, np.triu(t))


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), nb=st.integers(1, 12), seed=st.integers(0, 2 ** 32 - 1))
def test_blocked_qr_is_orthogonal_and_reconstructs(m, n, nb, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((max(m, n), n))
    f = decomp_qr.QRFactor.factor(NS, a, nb)
    mm = a.shape[0]
    q = f.apply_q(np.eye(mm))
    assert np.abs(q.T @ q - np.eye(mm)).max() <= 20 * mm * EPS
    r = np.zeros((mm, n))
    r[:n] = f.r
    assert np.abs(q @ r - a).max() <= 20 * mm * EPS * np.abs(a).max()
    assert np.allclose(np.abs(np.diagonal(f.r)), np.abs(np.diagonal(np.linalg.qr(a)[1])), rtol=1e-8)


def test_reflectors_are_applied_on_ozaki_products(rng, monkeypatch):
    calls = []
    real = ozaki.matmul
    monkeypatch.setattr(ozaki, "matmul", lambda x, y, **kw: calls.append(1) or real(x, y, **kw))
    decomp_qr.QRFactor.factor(NS, rng.standard_normal((10, 8)), 4)
    assert len(calls) == 2 + 3                       # two larft Gram products, one block update


@pytest.mark.parametrize("m,n", [(40, 12), (12, 12), (7, 30)])
def test_lstsq_matches_scipy_full_rank(rng, m, n):
    a = rng.standard_normal((m, n))
    b = rng.standard_normal((m, 3))
    x, res, rank, s = ol.lstsq(a, b, block_size=5)
    x2, res2, rank2, _ = scipy.linalg.lstsq(a, b)
    assert rank == rank2 == min(m, n) and s is None
    assert np.abs(x - x2).max() <= 1e-10 * np.abs(x2).max()
    assert res.shape == np.asarray(res2).shape
    assert np.allclose(res, res2, rtol=1e-9)
    x1, res1, _, _ = ol.lstsq(a, b[:, 0], block_size=5)
    assert x1.shape == (n,) and res1.shape == ((1,) if m > n else (0,))


def test_lstsq_rank_deficient_goes_to_lapack(rng):
    a = rng.standard_normal((20, 6))
    a[:, 4] = a[:, 1] - a[:, 0]
    b = rng.standard_normal(20)
    x, res, rank, s = ol.lstsq(a, b)
    x2, _, rank2, s2 = scipy.linalg.lstsq(a, b)
    assert rank == rank2 == 5 and s is not None
    assert np.allclose(x, x2)


def test_lstsq_errors_and_empty():
    with pytest.raises(ValueError):
        ol.lstsq(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError):
        ol.lstsq(np.ones((2, 3, 2)), np.ones(3))
    x, res, rank, _ = ol.lstsq(np.zeros((3, 0)), np.ones(3))
    assert x.shape == (0,) and rank == 0


def test_lstsq_on_ill_conditioned_full_rank(rng):
    a = matrices.random_cond(30, 1e10, rng)[:, :20]
    b = a @ rng.standard_normal(20)
    x, _, rank, _ = ol.lstsq(a, b, block_size=6)
    assert rank == 20
    assert np.abs(a @ x - b).max() <= 1e-12 * np.abs(b).max()
