"""ozaki.linalg on cupy arrays (CUDA device): same API, cuSOLVER panels, the CPU's bits where
the refined solution is correctly rounded."""

import warnings

import numpy as np
import pytest
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

import ozaki.linalg as ol
from ozaki.linalg import matrices, reference

pytestmark = pytest.mark.gpu
EPS = np.finfo(np.float64).eps


@pytest.fixture
def cp():
    import cupy
    return cupy


@pytest.mark.parametrize("kind", ["gen", "pos"])
def test_refined_solve_on_the_gpu(rng, cp, kind):
    a = matrices.random_cond(64, 1e12, rng, spd=kind == "pos")
    b = rng.standard_normal((64, 3))
    x, info = ol.solve(cp.asarray(a), cp.asarray(b), assume_a=kind, full_output=True, block_size=16)
    assert isinstance(x, cp.ndarray)
    xs = reference.solve(a, b)
    e = reference.errors(cp.asnumpy(x), xs)
    assert e["normwise_ref"].max() <= 4 * EPS
    assert (e["normwise"] <= info.err_bnds_norm[:, 1]).all()
    assert (e["componentwise"] <= info.err_bnds_comp[:, 1]).all()
    x_cpu = ol.solve(a, b, assume_a=kind, block_size=16)
    rounded = np.array([[float(x_cpu[i, j]) == float(xs[i][j]) for j in range(3)] for i in range(64)])
    assert rounded.mean() > 0.9
    assert np.array_equal(cp.asnumpy(x)[rounded], x_cpu[rounded])


def test_factorizations_on_the_gpu(rng, cp):
    a = matrices.random_cond(50, 1e6, rng)
    lu, piv = ol.lu_factor(cp.asarray(a), block_size=16)
    assert isinstance(lu, cp.ndarray)
    lu2, piv2 = ol.lu_factor(a, block_size=16)
    assert np.array_equal(cp.asnumpy(piv), piv2)
    assert np.abs(cp.asnumpy(lu) - lu2).max() <= 1e-10 * np.abs(lu2).max()
    s = matrices.random_cond(50, 1e6, rng, spd=True)
    for lower in (True, False):
        c = cp.asnumpy(ol.cholesky(cp.asarray(s), lower=lower, block_size=16))
        assert np.abs(c - ol.cholesky(s, lower=lower, block_size=16)).max() <= 1e-10 * np.abs(c).max()
    b = rng.standard_normal((50, 40))
    t = np.triu(a) + 10 * np.eye(50)
    x = cp.asnumpy(ol.solve_triangular(cp.asarray(t), cp.asarray(b), block_size=16))
    assert np.abs(x - ol.solve_triangular(t, b, block_size=16)).max() <= 1e-12 * np.abs(x).max()
    xl, res, rank, _ = ol.lstsq(cp.asarray(a[:, :30]), cp.asarray(b), block_size=8)
    xl2, res2, _, _ = ol.lstsq(a[:, :30], b, block_size=8)
    assert rank == 30 and np.abs(cp.asnumpy(xl) - xl2).max() <= 1e-8 * np.abs(xl2).max()
    assert float(ol.det(cp.asarray(a))) == pytest.approx(ol.det(a), rel=1e-9)
    assert np.abs(cp.asnumpy(ol.inv(cp.asarray(a), block_size=16)) - ol.inv(a, block_size=16)).max() \
        <= 1e-8 * np.abs(ol.inv(a)).max()


def test_errors_on_the_gpu(rng, cp):
    with pytest.raises(LinAlgError):
        ol.solve(cp.zeros((4, 4)), cp.ones(4))
    s = matrices.random_cond(20, 1e3, rng, spd=True)
    s[13, 13] = -1.0
    with pytest.raises(LinAlgError, match="14-th leading minor"):
        ol.cholesky(cp.asarray(s), block_size=5)
    with pytest.warns(LinAlgWarning):
        ol.lu_factor(cp.ones((3, 3)))
    with pytest.raises(TypeError):
        ol.solve(cp.eye(2), np.ones(2))


def test_gpu_matrices_and_bench_smoke(cp, tmp_path):
    a = matrices.random_cond(128, 1e10, 3, xp=cp)
    assert isinstance(a, cp.ndarray)
    assert float(np.linalg.cond(cp.asnumpy(a))) == pytest.approx(1e10, rel=0.05)
    from bench import linalg as bl
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)
        assert bl.main(["--sizes", "256", "--repeats", "1", "--out", str(tmp_path / "l.json")]) == 0
