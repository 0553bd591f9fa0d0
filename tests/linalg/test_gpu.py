"""ozaki.linalg on cupy arrays (CUDA device): same API, cuSOLVER panels, the CPU's bits where
the refined solution is correctly rounded."""

import warnings

import numpy as np
import pytest
import scipy.linalg
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

import ozaki.linalg as ol
from ozaki.linalg import condest, decomp_lu, matrices, reference, triangular
from ozaki.linalg._backend import Namespace

pytestmark = pytest.mark.gpu
EPS = np.finfo(np.float64).eps


@pytest.fixture
def cp():
    import cupy
    return cupy


@pytest.mark.parametrize("factorization", ["vendor", "ozaki"])
@pytest.mark.parametrize("kind", ["gen", "pos"])
def test_refined_solve_on_the_gpu(rng, cp, kind, factorization):
    a = matrices.random_cond(64, 1e12, rng, spd=kind == "pos")
    b = rng.standard_normal((64, 3))
    x, info = ol.solve(cp.asarray(a), cp.asarray(b), assume_a=kind, full_output=True, block_size=16,
                       factorization=factorization)
    assert isinstance(x, cp.ndarray)
    xs = reference.solve(a, b)
    e = reference.errors(cp.asnumpy(x), xs)
    assert e["normwise_ref"].max() <= 4 * EPS
    assert (e["normwise"] <= info.err_bnds_norm[:, 1]).all()
    assert (e["componentwise"] <= info.err_bnds_comp[:, 1]).all()
    x_cpu = ol.solve(a, b, assume_a=kind, block_size=16, factorization=factorization)
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


def _views(cp, rng, n, lower):
    """One triangle (the other one NaN) as cupy arrays in the layouts the solves meet: C and
    Fortran order, blocks of larger C- and Fortran-order matrices, a strided view (copied)."""
    t = rng.standard_normal((n, n)) + np.diag(np.full(n, 4.0))
    t = np.where(np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool)), t, np.nan)
    big = np.full((n + 7, n + 9), np.nan)
    big[3:3 + n, 5:5 + n] = t
    wide = np.full((2 * n, 2 * n), np.nan)
    wide[::2, ::2] = t
    g, gw = cp.asarray(big), cp.asarray(wide)
    return t, [cp.asarray(t), cp.asfortranarray(cp.asarray(t)), g[3:3 + n, 5:5 + n],
               cp.asfortranarray(g)[3:3 + n, 5:5 + n], gw[::2, ::2]]


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit", [False, True])
def test_cublas_triangular_solves_read_the_triangle_in_place(rng, cp, lower, trans, unit):
    ns = Namespace(gpu=True)
    n = 45
    t, views = _views(cp, rng, n, lower)
    for k in (1, 3):
        b = rng.standard_normal((n, k))
        want = scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit, check_finite=False)
        for view in views:
            x = ns.trsm(view, cp.asarray(b), lower, trans, unit)             # one DTRSM
            assert np.abs(cp.asnumpy(x) - want).max() <= 1e-12 * np.abs(want).max()
            for nb in (4, 16):                                              # blocked: DGEMM + DTRSM per block
                x = triangular.substitute(ns, view, cp.asarray(b), lower, trans, unit, block_size=nb)
                assert np.abs(cp.asnumpy(x) - want).max() <= 1e-12 * np.abs(want).max()


def test_cublas_native_product_on_views(rng, cp):
    ns = Namespace(gpu=True)
    big = rng.standard_normal((40, 50))
    g = cp.asarray(big)
    for a, a_host in ((g[3:20, 7:30], big[3:20, 7:30]), (cp.asfortranarray(g)[3:20, 7:30], big[3:20, 7:30]),
                      (g[3:20:2, 7:30], big[3:20:2, 7:30]), (g[5:6, 2:40], big[5:6, 2:40])):
        b = rng.standard_normal((a_host.shape[1], 2))
        c0 = rng.standard_normal((a_host.shape[0] + 4, 2))
        c = cp.asfortranarray(cp.asarray(c0))
        ns.subtract_product(c[2:2 + a_host.shape[0]], a, cp.asarray(b))
        want = c0.copy()
        want[2:2 + a_host.shape[0]] -= a_host @ b
        assert np.abs(cp.asnumpy(c) - want).max() <= 1e-13 * np.abs(want).max()


def test_vendor_factorizations_on_the_gpu(rng, cp):
    import cupyx.scipy.linalg as csl
    a = matrices.random_cond(70, 1e8, rng)
    lu, piv = ol.lu_factor(cp.asarray(a), factorization="vendor")
    lu2, piv2 = csl.lu_factor(cp.asarray(a))
    assert cp.array_equal(lu, lu2) and np.array_equal(cp.asnumpy(piv), cp.asnumpy(piv2))
    b = rng.standard_normal((70, 2))
    f = decomp_lu.LUFactor.factor(Namespace(gpu=True), cp.asarray(a), 16, "vendor")
    for x, want in ((f.solve(cp.asarray(b)), np.linalg.solve(a, b)),
                    (f.solve_t(cp.asarray(b)), np.linalg.solve(a.T, b))):
        assert np.abs(cp.asnumpy(x) - want).max() <= 1e-6 * np.abs(want).max()     # cond 1e8
    s = matrices.random_cond(50, 1e6, rng, spd=True)
    junk = rng.standard_normal((50, 50)) * 1e3
    for lower, m in ((True, np.tril(s) + np.triu(junk, 1)), (False, np.triu(s) + np.tril(junk, -1))):
        c = cp.asnumpy(ol.cholesky(cp.asarray(m), lower=lower, factorization="vendor"))
        want = scipy.linalg.cholesky(s, lower=lower)
        assert np.abs(c - want).max() <= 1e-10 * np.abs(want).max()
    s[13, 13] = -1.0
    with pytest.raises(LinAlgError, match="14-th leading minor"):
        ol.cholesky(cp.asarray(s), factorization="vendor")
    with pytest.raises(LinAlgError, match="14-th leading minor"):
        ol.solve(cp.asarray(s), cp.ones(50), assume_a="pos")
    with pytest.raises(LinAlgError, match="singular"):
        ol.solve(cp.ones((5, 5)), cp.ones(5))


def test_condition_estimate_on_the_gpu(rng, cp):
    a = matrices.random_cond(60, 1e9, rng)
    true = 1 / (np.abs(a).sum(axis=0).max() * np.abs(np.linalg.inv(a)).sum(axis=0).max())
    ns = Namespace(gpu=True)
    f = decomp_lu.LUFactor.factor(ns, cp.asarray(a), 16, "vendor")
    rc = condest.rcond_1(ns, cp.asarray(a), f)
    assert true * (1 - 1e-3) <= rc <= 10 * true


def test_exact_residual_kernel_against_fractions(rng, cp):
    """The GPU's exact residual (kernels/exact_dot.cu) is RN(b - A (x_hi + x_lo)) bit for bit,
    against fractions, on wide exponent ranges, cancellation (b the rounded A x), transposed
    views, several columns and exact zeros (+0); past its window it declines (None) and the
    refinement's Residuals take the exact product, with the same bits."""
    from fractions import Fraction
    from ozaki.backends import cupy_backend
    from ozaki.linalg import refine
    from ozaki.reference import round_fraction
    n = 48
    for spread in (0, 30, 150):
        a = rng.standard_normal((n, n)) * np.exp2(rng.integers(-spread, spread + 1, (n, n)))
        a[rng.random((n, n)) < 0.1] = 0.0
        x_hi = rng.standard_normal((n, 2)) * np.exp2(rng.integers(-spread, spread + 1, (n, 2)))
        x_lo = x_hi * 2.0 ** -54 * rng.standard_normal((n, 2))
        for b in (rng.standard_normal((n, 2)), a @ x_hi):
            for A in (a, a.T):
                got = cupy_backend.exact_residual(cp.asarray(A), [cp.asarray(x_hi), cp.asarray(x_lo)],
                                                  cp.asarray(b))
                assert got is not None
                want = np.array([[round_fraction(Fraction(float(b[i, c])) - sum(
                    Fraction(float(A[i, j])) * (Fraction(float(x_hi[j, c])) + Fraction(float(x_lo[j, c])))
                    for j in range(n))) for c in range(2)] for i in range(n)])
                assert np.array_equal(cp.asnumpy(got).view(np.int64), want.view(np.int64))
    ints = rng.integers(-4, 5, (n, n)).astype(float)
    x = rng.integers(-4, 5, (n, 1)).astype(float)
    zero = cupy_backend.exact_residual(cp.asarray(ints), [cp.asarray(x)], cp.asarray(ints @ x))
    assert np.array_equal(cp.asnumpy(zero).view(np.int64), np.zeros((n, 1)).view(np.int64))
    # a window past 64 limbs: the kernel declines, Residuals falls back with the same bits
    a = np.array([[2.0 ** 900, 2.0 ** -900], [1.0, 1.0]])
    xs = [np.array([[2.0 ** 100], [2.0 ** -100]]), np.zeros((2, 1))]
    b = np.array([[1.0], [3.0]])
    assert cupy_backend.exact_residual(cp.asarray(a), [cp.asarray(v) for v in xs], cp.asarray(b)) is None
    gpu = refine.Residuals(Namespace(True), cp.asarray(a), cp.asarray(b))([cp.asarray(v) for v in xs], [0])
    cpu = refine.Residuals(Namespace(False), a, b)(xs, [0])
    assert np.array_equal(cp.asnumpy(gpu).view(np.int64), cpu.view(np.int64))


def test_solve_under_a_user_stream(rng, cp):
    """ozaki.linalg's raw cuBLAS/cuSOLVER calls run on the current stream: a solve (vendor and
    ozaki factorizations, general and Cholesky) inside a non-blocking user stream gives the
    bits of the same solve on the null stream, after a product on another stream has left
    the shared handles bound elsewhere."""
    from ozaki.backends import cupy_backend
    import ozaki
    n = 96
    for kind in ("gen", "pos"):
        a = cp.asarray(matrices.random_cond(n, 1e8, rng, spd=kind == "pos"))
        b = cp.asarray(rng.standard_normal((n, 2)))
        want = {f: ol.solve(a, b, assume_a=kind, factorization=f, block_size=32) for f in ("vendor", "ozaki")}
        other = cp.cuda.Stream(non_blocking=True)
        with other, ozaki.config(path="cublas"):
            ozaki.matmul(a, a)                      # binds the shared cuBLAS handle to ``other``
        other.synchronize()
        user = cp.cuda.Stream(non_blocking=True)
        with user:
            got = {f: ol.solve(a, b, assume_a=kind, factorization=f, block_size=32) for f in ("vendor", "ozaki")}
        user.synchronize()
        for f in got:
            assert np.array_equal(cp.asnumpy(got[f]).view(np.int64), cp.asnumpy(want[f]).view(np.int64))
    assert cupy_backend.exact_residual(a, [b[:, :1].repeat(5, axis=1)], b[:, :1].repeat(5, axis=1)) is None
