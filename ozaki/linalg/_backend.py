"""Array-module dispatch: the vendor kernels a blocked algorithm calls on its panels.

numpy arrays run on LAPACK through scipy.linalg; cupy arrays on cuSOLVER/cuBLAS
through cupy and cupyx.scipy.linalg.  Everything GEMM-shaped goes through
ozaki.matmul (``gemm`` below); everything else here is the vendor's.
"""

import warnings

import numpy as np

import ozaki

# Columns per panel of the blocked factorizations (and rows per block of the
# blocked triangular solves), per array module.  On the CPU LAPACK is so much
# faster than an emulated product that small problems should stay one panel;
# on the GPU a panel must be wide enough that the trailing update's int8 GEMMs,
# not its scaling and epilogue passes, dominate (K = block size).  Measured on
# the H200 (bench.linalg, LU of cond-1e10 matrices): 1024 -> 2048 took n = 8192
# from 58.7 to 48.2 ms and n = 16384 from 240 to 183 ms (cuSOLVER: 39 / 143 ms).
BLOCK_SIZE = {"numpy": 256, "cupy": 2048}


class Namespace:
    """The array module of one call (numpy or cupy) and its vendor kernels."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.name = "cupy" if gpu else "numpy"
        if gpu:
            import cupy
            self.xp = cupy
        else:
            self.xp = np

    @property
    def block_size(self):
        return BLOCK_SIZE[self.name]

    def asnumpy(self, x):
        return self.xp.asnumpy(x) if self.gpu else np.asarray(x)

    # -- vendor panels --------------------------------------------------------------

    def getrf(self, a):
        """LU with partial pivoting of an (m, n) panel: (lu, piv as host int64, 0-based)."""
        if self.gpu:
            import cupyx.scipy.linalg as csl
            with warnings.catch_warnings():
                # a zero pivot is detected on the whole factor afterwards (both backends)
                warnings.simplefilter("ignore", RuntimeWarning)
                lu, piv = csl.lu_factor(a, check_finite=False)
            return lu, piv.get().astype(np.int64)
        from scipy.linalg import lapack
        getrf, = lapack.get_lapack_funcs(("getrf",), (a,))
        lu, piv, info = getrf(a)
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of LAPACK getrf")
        return lu, piv.astype(np.int64)

    def potrf(self, a):
        """Lower Cholesky factor of a symmetric block (lower triangle read), and LAPACK's info."""
        if self.gpu:
            return _cupy_potrf_lower(a)
        from scipy.linalg import lapack
        potrf, = lapack.get_lapack_funcs(("potrf",), (a,))
        c, info = potrf(a, lower=1, clean=1)
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of LAPACK potrf")
        return c, int(info)

    def trsm(self, t, b, lower, trans=0, unit_diagonal=False):
        """op(t)^-1 b for a triangular t, by the vendor's triangular solve (no singularity check)."""
        if self.gpu:
            import cupyx.scipy.linalg as csl
            return csl.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                        check_finite=False)
        import scipy.linalg
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # inf/nan from a zero diagonal entry
            return scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                                 check_finite=False)

    def geqrf(self, a):
        """Householder QR of an (m, n) panel in LAPACK's layout: (qr, tau), R on and above the diagonal,
        the reflectors' vectors (unit first entry implied) below."""
        h, tau = self.xp.linalg.qr(a, mode="raw")     # numpy and cupy: h is LAPACK's array transposed
        return h.T, tau

    def lstsq(self, a, b, cond):
        """The vendor's least-squares solver (the rank-deficient fallback)."""
        if self.gpu:
            x, res, rank, s = self.xp.linalg.lstsq(a, b, rcond=cond)
            return x, res, int(rank), s
        import scipy.linalg
        return scipy.linalg.lstsq(a, b, cond=cond, check_finite=False)

    # -- the emulated products ---------------------------------------------------------

    def gemm(self, a, b):
        """a @ b on ozaki.matmul under the caller's ozaki.config (default mode "accurate")."""
        return ozaki.matmul(a, b)

    def exact_gemm(self, a, b):
        """The correctly rounded exact product a @ b, whatever the surrounding ozaki.config says
        (a may be exact_left's)."""
        with ozaki.config(mode="exact", num_moduli=None):
            return ozaki.matmul(a, b, mode="exact")

    def exact_left(self, a):
        """a prepared as the left operand of many exact_gemm products (ozaki.prepare)."""
        return ozaki.prepare(a, "left", mode="exact", num_moduli=None)


def _cupy_potrf_lower(a):
    """cuSOLVER potrf on a copy of ``a`` (its lower triangle read): (L, info), as LAPACK.

    cupy.linalg.cholesky reports a failed factorization only under
    cupyx.errstate(linalg="raise") and without the failing order, so the call is
    made here directly (the way cupy.linalg.cholesky makes it).
    """
    import cupy
    from cupy.cuda import device
    try:
        from cupy_backends.cuda.libs import cublas, cusolver
    except ImportError:                                  # older layouts
        from cupy.cuda import cublas, cusolver
    n = a.shape[0]
    # C-order lower triangle == Fortran-order upper triangle of the transpose, which
    # for a symmetric matrix is the same matrix: potrf(UPPER) on the C array gives
    # U with A = U^T U in Fortran terms, i.e. L = U^T in C terms, in the lower triangle.
    x = cupy.array(a, dtype=cupy.float64, order="C", copy=True)
    if n == 0:
        return x, 0
    handle = device.get_cusolver_handle()
    info = cupy.zeros(1, dtype=np.int32)
    uplo = cublas.CUBLAS_FILL_MODE_UPPER
    lwork = cusolver.dpotrf_bufferSize(handle, uplo, n, x.data.ptr, n)
    work = cupy.empty(max(int(lwork), 1), dtype=cupy.float64)
    cusolver.dpotrf(handle, uplo, n, x.data.ptr, n, work.data.ptr, lwork, info.data.ptr)
    return cupy.tril(x), int(info.get()[0])


def namespace(*arrays):
    """The Namespace of the arrays: cupy when any is a cupy array (then all must be), else numpy."""
    kinds = {type(x).__module__.split(".")[0] == "cupy" for x in arrays if x is not None}
    if len(kinds) > 1:
        raise TypeError("ozaki.linalg: operands must all be numpy arrays or all be cupy arrays")
    return Namespace(gpu=kinds == {True})
