"""LU with partial pivoting: blocked right-looking, panels on LAPACK/cuSOLVER getrf,
trailing updates on ozaki products (or the vendor's getrf alone).  lu_factor, lu_solve."""

import warnings

import numpy as np
from scipy.linalg import LinAlgWarning, lapack

from . import _util
from ._backend import namespace
from .triangular import trsm


def swaps_to_perm(piv, m):
    """LAPACK's sequential row swaps (row i <-> row piv[i], 0-based) as a permutation:
    the factored matrix is a[perm].

    The swaps are applied to the row numbers by LAPACK's xLASWP (0-based in
    scipy's wrapper; float64 holds the numbers exactly): a Python loop over the
    rows took 7 ms at m = 16384.
    """
    piv = np.asarray(piv)
    if piv.size == 0:
        return np.arange(m)
    rows = lapack.dlaswp(np.arange(m, dtype=np.float64)[:, None], piv.astype(np.int32))
    return rows[:, 0].astype(np.int64)


def lu_blocked(ns, a, block_size=None):
    """Factor the 2-D float64 array ``a`` in place: a[perm] = L U.  Returns (a, piv on the host).

    Panel k (columns k:e) is factored by the vendor getrf, its row swaps are
    applied to the columns left and right of it, U12 = L11^-1 A12 by the
    vendor TRSM, and the trailing matrix takes A22 -= L21 U12 on ozaki.matmul.
    """
    xp = ns.xp
    nb = block_size or ns.block_size
    m, n = a.shape
    kmax = min(m, n)
    piv = np.empty(kmax, dtype=np.int64)
    for k in range(0, kmax, nb):
        e = min(k + nb, kmax)
        lu_p, piv_p = ns.getrf(a[k:, k:e])
        a[k:, k:e] = lu_p
        piv[k:e] = piv_p + k
        perm = swaps_to_perm(piv_p, m - k)
        if (perm != np.arange(m - k)).any():
            p = xp.asarray(perm)
            if k:
                a[k:, :k] = a[k:, :k][p]
            if e < n:
                a[k:, e:] = a[k:, e:][p]
        if e < n:
            a[k:e, e:] = ns.trsm(a[k:e, k:e], a[k:e, e:], lower=True, unit_diagonal=True)
            if e < m:
                a[e:, e:] -= ns.gemm(a[e:, k:e], a[k:e, e:])
    return a, piv


def decompose(ns, a, block_size=None, factorization="ozaki", overwrite=False):
    """a[perm] = L U of the 2-D float64 array a: (lu, piv on the host), by ``lu_blocked``
    ("ozaki") or the vendor's getrf alone ("vendor"); ``overwrite``: a may be overwritten."""
    _util.check_factorization(factorization)
    if factorization == "vendor":
        return ns.getrf(a, overwrite)
    return lu_blocked(ns, a if overwrite else _util.working_copy(ns.xp, a), block_size)


class LUFactor:
    """P^T A = L U of one square matrix, with solves by A and A^T (and its singularity).

    ``block_size``: rows per block of its triangular solves (None: the defaults).
    """

    def __init__(self, ns, lu, piv, block_size=None):
        self.ns, self.lu, self.n, self.nb = ns, lu, lu.shape[0], block_size
        self.piv = np.asarray(piv, dtype=np.int64)
        self.perm = swaps_to_perm(self.piv, self.n)
        self._perm_dev = ns.xp.asarray(self.perm)        # solves permute on the device, by one gather

    @classmethod
    def factor(cls, ns, a, block_size=None, factorization="ozaki", overwrite=False):
        """The factorization of a (``decompose``); block_size also blocks its solves."""
        lu, piv = decompose(ns, a, block_size, factorization, overwrite)
        return cls(ns, lu, piv, block_size)

    def zero_pivot(self):
        """0-based index of the first exactly zero (or non-finite) pivot, or -1."""
        d = self.ns.asnumpy(self.ns.xp.diagonal(self.lu))
        bad = ~(d != 0) | ~np.isfinite(d)       # cuSOLVER may leave NaN after a zero pivot
        return int(np.argmax(bad)) if bad.any() else -1

    def solve(self, b, block_size=None):
        """A^-1 b for a 2-D b."""
        nb = block_size or self.nb
        y = trsm(self.ns, self.lu, b[self._perm_dev], lower=True, unit_diagonal=True, block_size=nb)
        return trsm(self.ns, self.lu, y, lower=False, block_size=nb)

    def solve_t(self, b, block_size=None):
        """A^-T b for a 2-D b."""
        nb = block_size or self.nb
        y = trsm(self.ns, self.lu, b, lower=False, trans=1, block_size=nb)
        z = trsm(self.ns, self.lu, y, lower=True, trans=1, unit_diagonal=True, block_size=nb)
        x = self.ns.xp.empty_like(z)
        x[self._perm_dev] = z
        return x


def lu_factor(a, overwrite_a=False, check_finite=True, *, block_size=None, factorization="ozaki"):
    """Compute the pivoted LU decomposition of a matrix (scipy.linalg.lu_factor).

    Blocked right-looking LU with partial pivoting: each panel of
    ``block_size`` columns is factored by LAPACK/cuSOLVER getrf, the trailing
    updates run on ozaki.matmul (under the current ``ozaki.config``).

    Parameters
    ----------
    a : (..., M, N) array_like (numpy) or cupy.ndarray
        Matrix (or stack) to decompose.
    overwrite_a, check_finite : bool, optional
        As scipy's; ``a`` is never overwritten.
    block_size : int, optional
        Panel width (default: ozaki.linalg.BLOCK_SIZE for the array module).
    factorization : {"ozaki", "vendor"}, optional
        "ozaki" (default): the blocked LU above; "vendor": LAPACK's / cuSOLVER's
        getrf on the whole matrix (scipy.linalg.lu_factor's and
        cupyx.scipy.linalg.lu_factor's factors).

    Returns
    -------
    lu : (..., M, N) ndarray
        U in the upper triangle, L's multipliers below (unit diagonal implied).
    piv : (..., K) ndarray of int32, K = min(M, N)
        Row i was interchanged with row piv[i] (0-based, applied in order).

    Warns
    -----
    LinAlgWarning
        When a pivot is exactly zero (the matrix is singular).
    """
    _util.check_factorization(factorization)
    ns = namespace(a)
    xp = ns.xp
    a = _util.as_float64(ns, a, "a", check_finite)
    if a.ndim < 2:
        raise ValueError(f"Expected at least ndim=2, got a.ndim={a.ndim}")
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    lu = xp.empty(a.shape, dtype=xp.float64)
    piv = np.empty(batch + (min(m, n),), dtype=np.int32)
    for index, mat in _util.stack_items(xp, a, batch):
        lu[index], piv[index] = decompose(ns, mat, block_size, factorization)
        d = ns.asnumpy(xp.diagonal(lu[index]))
        bad = ~(d != 0) | ~np.isfinite(d)
        if bad.any():
            warnings.warn(f"Diagonal number {int(np.argmax(bad)) + 1} is exactly zero. Singular matrix.",
                          LinAlgWarning, stacklevel=2)
    return lu, xp.asarray(piv)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True, *, block_size=None):
    """Solve an equation system, a x = b, given the LU factorization of a (scipy.linalg.lu_solve).

    Parameters
    ----------
    lu_and_piv : (lu, piv)
        From ``lu_factor`` (or scipy.linalg.lu_factor / cupyx.scipy.linalg.lu_factor).
    b : (M,) or (..., M, K) array
        Right-hand side; stacks broadcast against ``lu``.
    trans : {0, 1, 2}
        Solve a x = b (0) or a^T x = b (1; 2 is the same for real matrices).

    Returns
    -------
    x : ndarray of the shape of the broadcast b.  No refinement (``solve`` refines).
    """
    lu, piv = lu_and_piv
    if trans not in (0, 1, 2):
        raise ValueError(f"trans must be 0, 1 or 2, got {trans!r}")
    ns, lu, b2, batch, vector = _util.solve_operands(lu, b, check_finite)
    xp = ns.xp
    piv = np.asarray(ns.asnumpy(xp.asarray(piv)), dtype=np.int64)
    if piv.shape[-1:] != lu.shape[-1:]:
        raise ValueError(f"piv.shape={piv.shape} does not match lu.shape={lu.shape}")
    pivs = np.broadcast_to(piv, tuple(batch) + piv.shape[-1:])
    out = xp.empty(tuple(batch) + b2.shape[-2:], dtype=xp.float64)
    bb = xp.broadcast_to(b2, out.shape)
    for index, mat in _util.stack_items(xp, lu, batch):
        f = LUFactor(ns, mat, pivs[index])
        out[index] = f.solve(bb[index], block_size) if trans == 0 else f.solve_t(bb[index], block_size)
    return out[..., 0] if vector else out
