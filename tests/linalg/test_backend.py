"""_backend's cuBLAS calls (CupyBLAS) on the CPU, against a numpy emulation of cuBLAS that
reads host memory the way cuBLAS's documentation says it reads device memory: column-major
matrices at a pointer with a leading dimension, op and uplo flags, only the named triangle.

The GPU runs the same calls on cupy arrays (tests/linalg/test_gpu.py); here the layouts
(C- and Fortran-order arrays, their views, blocks of larger matrices, copies for the
rest) are checked without a device.
"""

import ctypes

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st

from ozaki.linalg import _backend, decomp_lu, matrices, triangular
from ozaki.linalg._backend import CupyBLAS, Namespace, column_major


class EmulatedCublas:
    """cuBLAS's DTRSM (left side) and DGEMM on host pointers, as documented; records the calls."""

    CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT = 141, 142
    CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER = 0, 1
    CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
    CUBLAS_DIAG_NON_UNIT, CUBLAS_DIAG_UNIT = 0, 1

    def __init__(self):
        self.calls = []

    @staticmethod
    def _matrix(ptr, rows, cols, ld):
        """The column-major rows x cols matrix at ptr with leading dimension ld, as a writable view."""
        assert ld >= max(1, rows), (rows, cols, ld)
        count = ld * (cols - 1) + rows
        buf = (ctypes.c_double * count).from_address(ptr)
        return np.ndarray((rows, cols), dtype=np.float64, buffer=buf, strides=(8, 8 * ld))

    @staticmethod
    def _scalar(ptr):
        return ctypes.c_double.from_address(ptr).value

    def dtrsm(self, handle, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        self.calls.append("dtrsm")
        assert side == self.CUBLAS_SIDE_LEFT and m > 0 and n > 0
        s = self._matrix(a, m, m, lda)
        tri = np.tril(s) if uplo == self.CUBLAS_FILL_MODE_LOWER else np.triu(s)   # the named triangle only
        if diag == self.CUBLAS_DIAG_UNIT:
            np.fill_diagonal(tri, 1.0)
        op = tri.T if trans == self.CUBLAS_OP_T else tri
        x = self._matrix(b, m, n, ldb)
        lower = (uplo == self.CUBLAS_FILL_MODE_LOWER) != (trans == self.CUBLAS_OP_T)
        x[...] = scipy.linalg.solve_triangular(op, self._scalar(alpha) * x, lower=lower)

    def dgemm(self, handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        self.calls.append("dgemm")
        assert m > 0 and n > 0 and k > 0
        sa = self._matrix(a, k, m, lda).T if transa == self.CUBLAS_OP_T else self._matrix(a, m, k, lda)
        sb = self._matrix(b, n, k, ldb).T if transb == self.CUBLAS_OP_T else self._matrix(b, k, n, ldb)
        out = self._matrix(c, m, n, ldc)
        out[...] = self._scalar(alpha) * (sa @ sb) + self._scalar(beta) * out


def emulated_blas():
    cublas = EmulatedCublas()
    return CupyBLAS((cublas, lambda x: x.ctypes.data, lambda: 0,
                     lambda x: np.array(x, dtype=np.float64, order="F", copy=True))), cublas


def emulated_gpu_namespace():
    """A numpy Namespace whose triangular solves and native products make the GPU's cuBLAS calls."""
    ns = Namespace(gpu=False)
    ns.blas, cublas = emulated_blas()
    return ns, cublas


def _layouts(rng, n, lower, garbage=np.nan):
    """The same triangle of order n in the layouts a solve meets, the other triangle garbage:
    C order, Fortran order, a block of a larger C-order and of a larger Fortran-order matrix,
    and a strided view (no unit stride: copied)."""
    t = rng.standard_normal((n, n)) + np.diag(np.full(n, 4.0))
    t = np.where(np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool)), t, garbage)
    big = np.full((n + 7, n + 9), garbage)
    big[3:3 + n, 5:5 + n] = t
    wide = np.full((2 * n, 2 * n), garbage)
    wide[::2, ::2] = t
    return t, {"C": np.ascontiguousarray(t), "F": np.asfortranarray(t), "C block": big[3:3 + n, 5:5 + n],
               "F block": np.asfortranarray(big)[3:3 + n, 5:5 + n], "strided": wide[::2, ::2]}


def test_column_major_reads_views_in_place():
    a = np.zeros((6, 9))
    assert column_major(a) == (True, 9)                         # C order: the transpose, ld = row length
    assert column_major(np.asfortranarray(a)) == (False, 6)
    assert column_major(a[1:4, 2:7]) == (True, 9)               # a block keeps its parent's ld
    assert column_major(np.asfortranarray(a)[1:4, 2:7]) == (False, 6)
    assert column_major(a[:, 3:4]) == (True, 9)                  # a column of a C-order matrix
    assert column_major(np.zeros((5, 1))) == (False, 5)         # a vector: any ld >= rows
    assert column_major(np.zeros((1, 5))) == (False, 1)
    assert column_major(a[::2, ::2]) is None                    # no unit stride
    assert column_major(np.broadcast_to(np.ones(3), (4, 3))) is None     # stride 0: ld 0 < cols


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(1, 4), lower=st.booleans(), trans=st.integers(0, 1),
       unit=st.booleans(), layout=st.sampled_from(["C", "F", "C block", "F block", "strided"]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_trsm_calls_solve_every_layout(n, k, lower, trans, unit, layout, seed):
    rng = np.random.default_rng(seed)
    t, views = _layouts(rng, n, lower)
    b = rng.standard_normal((n, k))
    blas, cublas = emulated_blas()
    x = np.array(b, order="F")
    blas.trsm(views[layout], x, lower, trans, unit)
    want = scipy.linalg.solve_triangular(np.nan_to_num(t), b, trans=trans, lower=lower, unit_diagonal=unit)
    assert np.abs(x - want).max() <= 1e-12 * np.abs(want).max()
    assert cublas.calls == ["dtrsm"]


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 9), k=st.integers(1, 9), n=st.integers(1, 3),
       a_layout=st.sampled_from(["C", "F", "C view", "F view", "transposed view", "strided"]),
       b_layout=st.sampled_from(["C", "F", "F rows"]), seed=st.integers(0, 2 ** 32 - 1))
def test_gemm_update_every_layout(m, k, n, a_layout, b_layout, seed):
    rng = np.random.default_rng(seed)
    big = rng.standard_normal((m + k + 4, m + k + 6))
    a = big[2:2 + m, 3:3 + k].copy()
    a_views = {"C": np.ascontiguousarray(a), "F": np.asfortranarray(a), "C view": big[2:2 + m, 3:3 + k],
               "F view": np.asfortranarray(big)[2:2 + m, 3:3 + k],
               "transposed view": np.ascontiguousarray(big.T).T[2:2 + m, 3:3 + k],
               "strided": np.repeat(np.repeat(a, 2, axis=0), 2, axis=1)[::2, ::2]}
    b = rng.standard_normal((k, n))
    whole = np.asfortranarray(rng.standard_normal((k + 5, n)))
    whole[2:2 + k] = b
    b_views = {"C": np.ascontiguousarray(b), "F": np.asfortranarray(b), "F rows": whole[2:2 + k]}
    c0 = rng.standard_normal((m + 3, n))
    c = np.array(c0, order="F", copy=True)
    blas, cublas = emulated_blas()
    blas.gemm_update(c[1:1 + m], a_views[a_layout], b_views[b_layout])
    want = c0.copy()
    want[1:1 + m] -= a @ b
    assert np.abs(c - want).max() <= 1e-13 * np.abs(want).max()
    assert cublas.calls == ["dgemm"]


def test_results_must_be_column_major():
    blas, _ = emulated_blas()
    with pytest.raises(ValueError, match="column-major"):
        blas.trsm(np.eye(3), np.ones((3, 2)), lower=True)               # C order, two columns
    blas.trsm(np.eye(3), np.ones((3, 1)), lower=True)                   # one column is both
    x = np.ones((0, 2))
    blas.trsm(np.eye(0), x, lower=True)                                 # nothing to solve: no call


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 3), nb=st.integers(1, 12), lower=st.booleans(),
       trans=st.integers(0, 1), unit=st.booleans(), layout=st.sampled_from(["C", "F", "C block"]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_substitution_through_the_gpu_calls(n, k, nb, lower, trans, unit, layout, seed):
    # the blocked substitution as the GPU runs it: every block a DGEMM and a DTRSM in place
    rng = np.random.default_rng(seed)
    t, views = _layouts(rng, n, lower)
    b = rng.standard_normal((n, k))
    ns, cublas = emulated_gpu_namespace()
    x = triangular.substitute(ns, views[layout], b, lower, trans, unit, block_size=nb)
    want = scipy.linalg.solve_triangular(np.nan_to_num(t), b, trans=trans, lower=lower, unit_diagonal=unit)
    assert np.abs(x - want).max() <= 1e-11 * np.abs(want).max()
    blocks = -(-n // nb)
    assert cublas.calls.count("dtrsm") == blocks and cublas.calls.count("dgemm") == (blocks - 1 if nb < n else 0)


def test_lu_solves_through_the_gpu_calls(rng):
    a = matrices.random_cond(30, 1e6, rng)
    ns, cublas = emulated_gpu_namespace()
    for factorization in ("ozaki", "vendor"):
        f = decomp_lu.LUFactor.factor(ns, a, 8, factorization=factorization)
        b = rng.standard_normal((30, 2))
        assert np.abs(f.solve(b) - np.linalg.solve(a, b)).max() <= 1e-8 * np.abs(np.linalg.solve(a, b)).max()
        assert np.abs(f.solve_t(b) - np.linalg.solve(a.T, b)).max() <= 1e-8 * np.abs(np.linalg.solve(a.T, b)).max()
    assert "dgemm" in cublas.calls and "dtrsm" in cublas.calls


def test_default_substitution_blocks(monkeypatch):
    assert set(_backend.SUBSTITUTION_BLOCK) == {"numpy", "cupy"}
    ns, cublas = emulated_gpu_namespace()
    rng = np.random.default_rng(7)
    t, b = np.triu(rng.standard_normal((30, 30))) + 6 * np.eye(30), rng.standard_normal((30, 1))
    for default, calls in ((None, ["dtrsm"]), (8, ["dtrsm", "dgemm"] * 3 + ["dtrsm"])):
        monkeypatch.setitem(_backend.SUBSTITUTION_BLOCK, "numpy", default)
        cublas.calls.clear()
        x = triangular.substitute(ns, t, b, lower=False)
        assert cublas.calls == calls and np.allclose(t @ x, b)
