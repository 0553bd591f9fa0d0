"""Array-module dispatch: the vendor kernels a blocked algorithm calls on its panels.

numpy arrays run on LAPACK through scipy.linalg; cupy arrays on cuSOLVER/cuBLAS
through cupy and cupyx.scipy.linalg, and through cuBLAS directly where cupy
would copy (triangular solves and native products on views of a larger matrix).
Everything GEMM-shaped on the factorizations' trailing updates goes through
ozaki.matmul (``gemm`` below); everything else here is the vendor's.
"""

import warnings

import numpy as np

import ozaki

# Columns per panel of the blocked factorizations (and rows per block of the
# blocked triangular solves with as many right-hand sides or more), per array module.  On the CPU LAPACK is so much
# faster than an emulated product that small problems should stay one panel;
# on the GPU a panel must be wide enough that the trailing update's int8 GEMMs,
# not its scaling and epilogue passes, dominate (K = block size).  Measured on
# the H200 (bench.linalg, LU of cond-1e10 matrices): 1024 -> 2048 took n = 8192
# from 58.7 to 48.2 ms and n = 16384 from 240 to 183 ms (cuSOLVER: 39 / 143 ms).
BLOCK_SIZE = {"numpy": 256, "cupy": 2048}

# Rows per diagonal block of the triangular solves with few right-hand sides
# (ozaki.linalg.triangular.substitute), per array module; None: no blocks, one
# vendor TRSM of the whole triangle.  A block costs one native product with the
# rows already solved and one vendor TRSM of its diagonal block; blocking pays
# only where the vendor's own TRSM reads the triangle far below the bandwidth a
# product reaches, not where it is bound by its dependency chain (one row after
# another), which the diagonal blocks' TRSMs then pay just the same.  On the CPU
# one LAPACK TRSM with one column ran 1.3-3x faster than blocks of 256..1024 at
# n = 2048..4096 (2-core test machine).  On the H200 one cuBLAS TRSM of a 16384
# triangle, read in place, is thought to take about 1.5 ms (cuSOLVER's getrs, two
# of them, fit in the 3 ms between cupy.linalg.solve and lu_factor); not measured
# yet: bench.linalg's stages row times it against --substitution-blocks.
SUBSTITUTION_BLOCK = {"numpy": None, "cupy": None}


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
        # the triangular solves' and native products' BLAS calls on arrays read in place
        # (None: scipy's solve_triangular and numpy's @, which read views in place already)
        self.blas = CupyBLAS() if gpu else None

    @property
    def block_size(self):
        return BLOCK_SIZE[self.name]

    @property
    def substitution_block(self):
        return SUBSTITUTION_BLOCK[self.name]

    def asnumpy(self, x):
        return self.xp.asnumpy(x) if self.gpu else np.asarray(x)

    # -- vendor panels --------------------------------------------------------------

    def getrf(self, a, overwrite=False):
        """LU with partial pivoting of an (m, n) matrix: (lu, piv as host int64, 0-based).

        ``overwrite``: a may be overwritten (no copy where a is column-major
        already, as LAPACK and cuSOLVER keep their matrices).
        """
        if self.gpu:
            import cupyx.scipy.linalg as csl
            with warnings.catch_warnings():
                # a zero pivot is detected on the whole factor afterwards (both backends)
                warnings.simplefilter("ignore", RuntimeWarning)
                lu, piv = csl.lu_factor(a, overwrite_a=overwrite, check_finite=False)
            return lu, piv.get().astype(np.int64)
        from scipy.linalg import lapack
        getrf, = lapack.get_lapack_funcs(("getrf",), (a,))
        lu, piv, info = getrf(a, overwrite_a=overwrite)
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of LAPACK getrf")
        return lu, piv.astype(np.int64)

    def potrf(self, a, lower=True):
        """Cholesky factor L (A = L L^T, lower triangular, zeros above) of a symmetric matrix
        whose ``lower`` (else upper) triangle is read, and LAPACK's info."""
        if self.gpu:
            return _cupy_potrf(a, lower)
        from scipy.linalg import lapack
        potrf, = lapack.get_lapack_funcs(("potrf",), (a,))
        # the upper triangle as the lower one of the transpose: one algorithm (LAPACK's 'L')
        # whichever triangle is read, as the blocked Cholesky's panels
        c, info = potrf(a if lower else a.T, lower=1, clean=1)
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of LAPACK potrf")
        return c, int(info)

    def trsm(self, t, b, lower, trans=0, unit_diagonal=False):
        """op(t)^-1 b for a triangular t, by the vendor's triangular solve (no singularity check)."""
        if self.blas is not None:
            x = self.xp.array(b, dtype=self.xp.float64, order="F", copy=True)
            self.blas.trsm(t, x, lower, trans, unit_diagonal)
            return x
        import scipy.linalg
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # inf/nan from a zero diagonal entry
            return scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                                 check_finite=False)

    def trsm_in_place(self, t, x, lower, trans=0, unit_diagonal=False):
        """x := op(t)^-1 x (the vendor's triangular solve), for a view x of a column-major
        (Fortran-order) array, which the GPU solves in place."""
        if self.blas is not None:
            self.blas.trsm(t, x, lower, trans, unit_diagonal)
        else:
            x[...] = self.trsm(t, x, lower, trans, unit_diagonal)

    def subtract_product(self, c, a, b):
        """c -= a @ b in native float64 (BLAS / cuBLAS DGEMM), c a view of a column-major array.

        The operands are read where they lie: views of a larger matrix are not
        copied (cupy's ``@`` copies any operand that is not contiguous).
        """
        if self.blas is not None:
            self.blas.gemm_update(c, a, b)
        else:
            c -= a @ b

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

    def exact_residual(self, a, xs, b, a_figures=None):
        """RN(b - a (x_0 + ...)) exactly, rounded once, by the GPU's exact dot kernel
        (cupy_backend.exact_residual; a_figures: exponent_figures(a), kept by the caller);
        None where it does not apply (the CPU, windows past its accumulator, non-finite
        inputs): then the exact ozaki product."""
        if not self.gpu:
            return None
        from ozaki.backends import cupy_backend
        return cupy_backend.exact_residual(a, xs, b, a_figures)

    def exponent_figures(self, a):
        """The figures of a that exact_residual reads (GPU only; None on the CPU)."""
        if not self.gpu:
            return None
        from ozaki.backends import cupy_backend
        return cupy_backend.exponent_figures(a)


def _cupy_libs():
    """cupy's cuBLAS and cuSOLVER bindings and its device module (handles)."""
    from cupy.cuda import device
    try:
        from cupy_backends.cuda.libs import cublas, cusolver
    except ImportError:                                  # older layouts
        from cupy.cuda import cublas, cusolver
    return cublas, cusolver, device


def _on_current_stream(lib, handle):
    """CuPy's cuBLAS or cuSOLVER ``handle`` bound to the current CuPy stream (CuPy's own calls
    rebind it each time; a raw call must too, or it runs on the last stream set, unordered
    with the work queued on the current one), as ozaki.backends.cupy_backend._cublas does."""
    import cupy
    lib.setStream(handle, cupy.cuda.get_current_stream().ptr)
    return handle


def _cupy_potrf(a, lower):
    """cuSOLVER potrf on a copy of ``a`` (its ``lower``, else upper, triangle read): (L, info), as LAPACK.

    cupy.linalg.cholesky reports a failed factorization only under
    cupyx.errstate(linalg="raise") and without the failing order, so the call is
    made here directly (the way cupy.linalg.cholesky makes it).
    """
    import cupy
    cublas, cusolver, device = _cupy_libs()
    n = a.shape[0]
    # cuSOLVER reads the C-order array as its transpose (Fortran order), which for a
    # symmetric matrix is the same matrix with the triangles' roles swapped: the C
    # lower triangle is the Fortran upper one.  potrf(UPPER) then leaves U (A = U^T U
    # in Fortran terms) there, i.e. L = U^T in C terms in the lower triangle;
    # potrf(LOWER) on the C upper triangle leaves L (Fortran) = U^T (C) in the upper one.
    x = cupy.array(a, dtype=cupy.float64, order="C", copy=True)
    if n == 0:
        return x, 0
    handle = _on_current_stream(cusolver, device.get_cusolver_handle())
    info = cupy.zeros(1, dtype=np.int32)
    uplo = cublas.CUBLAS_FILL_MODE_UPPER if lower else cublas.CUBLAS_FILL_MODE_LOWER
    lwork = cusolver.dpotrf_bufferSize(handle, uplo, n, x.data.ptr, n)
    work = cupy.empty(max(int(lwork), 1), dtype=cupy.float64)
    cusolver.dpotrf(handle, uplo, n, x.data.ptr, n, work.data.ptr, lwork, info.data.ptr)
    return (cupy.tril(x) if lower else cupy.triu(x).T), int(info.get()[0])


def column_major(x):
    """How BLAS reads the 2-D float64 array x where it lies: (transposed, ld), x itself
    column-major with leading dimension ld (transposed False) or x^T so (True); None when
    neither (x must be copied).  cuBLAS wants ld >= max(1, rows of what it reads)."""
    rows, cols = x.shape
    item = x.itemsize
    s0, s1 = x.strides
    if s0 % item or s1 % item:
        return None
    s0, s1 = s0 // item, s1 // item
    if rows <= 1 or s0 == 1:                             # x itself: element (i, j) at i + j ld
        ld = s1 if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return False, ld
    if cols <= 1 or s1 == 1:                             # x^T: element (i, j) at j + i ld
        ld = s0 if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return True, ld
    return None


class CupyBLAS:
    """cuBLAS DTRSM and DGEMM on cupy arrays read in place (any view with a unit stride).

    cupyx.scipy.linalg.solve_triangular copies a C-order triangle into Fortran
    order before each solve (a transposing copy of the whole matrix: most of the
    7.7 ms of one 16384 x 16384 solve with one right-hand side on the H200,
    where cuSOLVER's getrs does two solves in ~3 ms), and cupy's ``@`` copies
    operands that are not contiguous.  Here cuBLAS reads a C-order array as the
    transpose of a column-major one (and flips the operation and the triangle).
    ``lib``: (cublas module, pointer of an array, handle, Fortran copy), cupy's
    unless given (the tests give a numpy emulation of cuBLAS).
    """

    def __init__(self, lib=None):
        if lib is None:
            import cupy
            cublas, _, device = _cupy_libs()
            lib = (cublas, lambda x: x.data.ptr, lambda: _on_current_stream(cublas, device.get_cublas_handle()),
                   lambda x: cupy.array(x, dtype=cupy.float64, order="F", copy=True))
        self.cublas, self.pointer, self.handle, self.fortran_copy = lib

    def _operand(self, x):
        """(x or its Fortran copy, transposed, ld) for reading x as a BLAS matrix."""
        layout = column_major(x)
        if layout is None:
            x = self.fortran_copy(x)
            layout = column_major(x)
        return (x,) + layout

    def _result(self, x):
        """ld of the column-major (Fortran) array x that a BLAS call writes in place."""
        layout = column_major(x)
        if layout is None or layout[0]:
            raise ValueError("cuBLAS writes its results into column-major (Fortran-order) arrays only")
        return layout[1]

    def trsm(self, t, x, lower, trans=0, unit_diagonal=False):
        """x := op(t)^-1 x in place (DTRSM, left side)."""
        m, k = x.shape
        if m == 0 or k == 0:
            return
        ldx = self._result(x)
        t, t_transposed, ldt = self._operand(t)
        cb = self.cublas
        # cuBLAS sees S = t, or S = t^T when t is read transposed: then S's triangle is
        # the other one, and op(t) = op'(S) with the transpose flag flipped
        uplo = cb.CUBLAS_FILL_MODE_LOWER if lower != t_transposed else cb.CUBLAS_FILL_MODE_UPPER
        op = cb.CUBLAS_OP_T if bool(trans) != t_transposed else cb.CUBLAS_OP_N
        diag = cb.CUBLAS_DIAG_UNIT if unit_diagonal else cb.CUBLAS_DIAG_NON_UNIT
        one = np.array(1.0)
        cb.dtrsm(self.handle(), cb.CUBLAS_SIDE_LEFT, uplo, op, diag, m, k, one.ctypes.data,
                 self.pointer(t), ldt, self.pointer(x), ldx)

    def gemm_update(self, c, a, b):
        """c -= a @ b in place (DGEMM, alpha = -1, beta = 1)."""
        m, n = c.shape
        k = a.shape[1]
        if m == 0 or n == 0 or k == 0:
            return
        ldc = self._result(c)
        a, a_transposed, lda = self._operand(a)
        b, b_transposed, ldb = self._operand(b)
        cb = self.cublas
        minus_one, one = np.array(-1.0), np.array(1.0)
        cb.dgemm(self.handle(), cb.CUBLAS_OP_T if a_transposed else cb.CUBLAS_OP_N,
                 cb.CUBLAS_OP_T if b_transposed else cb.CUBLAS_OP_N, m, n, k, minus_one.ctypes.data,
                 self.pointer(a), lda, self.pointer(b), ldb, one.ctypes.data, self.pointer(c), ldc)


def namespace(*arrays):
    """The Namespace of the arrays: cupy when any is a cupy array (then all must be), else numpy."""
    kinds = {type(x).__module__.split(".")[0] == "cupy" for x in arrays if x is not None}
    if len(kinds) > 1:
        raise TypeError("ozaki.linalg: operands must all be numpy arrays or all be cupy arrays")
    return Namespace(gpu=kinds == {True})
