"""Cholesky: blocked right-looking, diagonal blocks on LAPACK/cuSOLVER potrf, the panel
below them by the vendor TRSM, the SYRK-shaped trailing updates on ozaki products (or
the vendor's potrf alone)."""

from numpy.linalg import LinAlgError

from . import _util
from ._backend import namespace
from .triangular import trsm


def cholesky_blocked(ns, a, block_size=None):
    """Factor the symmetric 2-D float64 array ``a`` (lower triangle read) in place: A = L L^T.

    Returns (L with zeros above the diagonal, info): info = 0 on success, else
    the order of the leading minor that is not positive definite (1-based,
    LAPACK's convention), and L is not complete.
    """
    xp = ns.xp
    nb = block_size or ns.block_size
    n = a.shape[0]
    for k in range(0, n, nb):
        e = min(k + nb, n)
        l11, info = ns.potrf(a[k:e, k:e])
        if info:
            return a, k + info
        a[k:e, k:e] = l11
        if e < n:
            # L21 = A21 L11^-T, as the transposed solve L11 L21^T = A21^T
            l21 = ns.trsm(l11, a[e:, k:e].T, lower=True).T
            a[e:, k:e] = l21
            _syrk_lower(ns, a[e:, e:], l21, nb)
    return xp.tril(a), 0


def _syrk_lower(ns, c, l, nb):
    """c -= l l^T where only c's lower triangle is needed (SYRK's shape on ozaki products).

    Two products, the left half of the columns over all rows and the lower
    right quarter, cover the lower triangle with 3/4 of the full square's
    flops; halving further would make the products too small for the int8
    GEMMs to pay (a trailing matrix under two blocks is one product).
    """
    m = c.shape[0]
    if m < 2 * nb:
        c -= ns.gemm(l, l.T)
        return
    h = m // 2
    c[:, :h] -= ns.gemm(l, l[:h].T)
    c[h:, h:] -= ns.gemm(l[h:], l[h:].T)


def _symmetric_lower(xp, a, lower):
    """A working copy whose lower triangle holds the triangle of ``a`` that is to be read."""
    return _util.working_copy(xp, a if lower else a.T)


class CholeskyFactor:
    """A = L L^T of one symmetric positive definite matrix, with solves by A (= A^T).

    ``block_size``: rows per block of its triangular solves (None: the defaults).
    """

    def __init__(self, ns, l, block_size=None):
        self.ns, self.l, self.n, self.nb = ns, l, l.shape[0], block_size

    @classmethod
    def factor(cls, ns, a, lower, block_size=None, factorization="ozaki"):
        """Factor (lower triangle of a read when lower, else the upper); LinAlgError if not PD.

        "ozaki": ``cholesky_blocked`` (block_size: its panel width); "vendor": the
        vendor's potrf on the whole matrix.  block_size also blocks the solves.
        """
        _util.check_factorization(factorization)
        if factorization == "vendor":
            l, info = ns.potrf(a, lower)
        else:
            l, info = cholesky_blocked(ns, _symmetric_lower(ns.xp, a, lower), block_size)
        if info:
            raise LinAlgError(f"{info}-th leading minor of the array is not positive definite")
        return cls(ns, l, block_size)

    def solve(self, b, block_size=None):
        nb = block_size or self.nb
        y = trsm(self.ns, self.l, b, lower=True, block_size=nb)
        return trsm(self.ns, self.l, y, lower=True, trans=1, block_size=nb)

    solve_t = solve


def cholesky(a, lower=False, overwrite_a=False, check_finite=True, *, block_size=None, factorization="ozaki"):
    """Compute the Cholesky decomposition of a matrix (scipy.linalg.cholesky).

    Returns the upper-triangular U with a = U^T U (default), or the lower L with
    a = L L^T when ``lower``; the other triangle is zero.  Only the triangle of
    ``a`` named by ``lower`` is read.  Stacks (..., M, M) are factored one by one.

    Blocked right-looking: potrf (LAPACK/cuSOLVER) on diagonal blocks of
    ``block_size``, the vendor's TRSM below them, trailing updates on ozaki.matmul
    under the current ``ozaki.config``; ``factorization="vendor"``: the vendor's
    potrf on the whole matrix instead.

    Raises
    ------
    LinAlgError
        "k-th leading minor of the array is not positive definite".
    ValueError
        Non-square input, infs or NaNs (check_finite).
    """
    _util.check_factorization(factorization)
    ns = namespace(a)
    xp = ns.xp
    a = _util.square_stack(ns, a, "a", check_finite)
    out = xp.empty(a.shape, dtype=xp.float64)
    for index, mat in _util.stack_items(xp, a, a.shape[:-2]):
        l = CholeskyFactor.factor(ns, mat, lower, block_size, factorization).l
        out[index] = l if lower else l.T
    return out


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True, *, block_size=None, factorization="ozaki"):
    """Cholesky decomposition for use in cho_solve (scipy.linalg.cho_factor).

    Returns (c, lower): c holds the factor in the triangle named by ``lower``
    (zeros in the other triangle).  ``factorization`` as for ``cholesky``.
    """
    return cholesky(a, lower=lower, check_finite=check_finite, block_size=block_size,
                    factorization=factorization), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True, *, block_size=None):
    """Solve a x = b given the Cholesky factorization of a (scipy.linalg.cho_solve).

    Only the triangle of c named by ``lower`` is read.  No refinement
    (``solve(assume_a="pos")`` refines).
    """
    c, lower = c_and_lower
    ns, c, b2, batch, vector = _util.solve_operands(c, b, check_finite)
    xp = ns.xp
    out = xp.empty(tuple(batch) + b2.shape[-2:], dtype=xp.float64)
    bb = xp.broadcast_to(b2, out.shape)
    for index, mat in _util.stack_items(xp, c, batch):
        l = xp.tril(mat) if lower else xp.tril(mat.T)
        out[index] = CholeskyFactor(ns, l, block_size).solve(bb[index])
    return out[..., 0] if vector else out
