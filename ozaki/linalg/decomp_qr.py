"""Blocked Householder QR (compact WY), panels on LAPACK/cuSOLVER geqrf, the block
reflectors applied on ozaki products; lstsq on it."""

import numpy as np

from . import _util, condest
from ._backend import namespace
from .triangular import trsm


def larft(ns, v, tau):
    """T (k x k, upper triangular) with H_1 ... H_k = I - V T V^T (LAPACK xLARFT, forward, columnwise).

    V^T V is one product; the k-step recurrence runs on the host (k = the panel width).
    """
    k = v.shape[1]
    g = ns.asnumpy(ns.gemm(v.T, v))
    tau = ns.asnumpy(tau)
    t = np.zeros((k, k))
    for i in range(k):
        t[:i, i] = t[:i, :i] @ (-tau[i] * g[:i, i])
        t[i, i] = tau[i]
    return ns.xp.asarray(t)


def _reflector_block(ns, qr_panel):
    """V: the panel's Householder vectors, unit lower trapezoidal."""
    xp = ns.xp
    m, k = qr_panel.shape
    return xp.tril(qr_panel, -1) + xp.eye(m, k)


class QRFactor:
    """A = Q R of an (m, n) matrix, m >= n, Q as block reflectors (k0, V, T) per panel."""

    def __init__(self, ns, r, panels):
        self.ns, self.r, self.panels = ns, r, panels

    @classmethod
    def factor(cls, ns, a, block_size=None):
        xp = ns.xp
        nb = block_size or ns.block_size
        a = _util.working_copy(xp, a)
        m, n = a.shape
        panels = []
        for k in range(0, min(m, n), nb):
            e = min(k + nb, n)
            qr_p, tau = ns.geqrf(a[k:, k:e])
            a[k:, k:e] = qr_p
            v = _reflector_block(ns, qr_p)
            t = larft(ns, v, tau)
            panels.append((k, v, t))
            if e < n:
                a[k:, e:] = _apply(ns, v, t.T, a[k:, e:])
        return cls(ns, xp.triu(a[:n, :n]) if m >= n else xp.triu(a), panels)

    def apply_qt(self, c):
        """Q^T c (c: (m, k), a new array)."""
        c = _util.working_copy(self.ns.xp, c)
        for k, v, t in self.panels:
            c[k:] = _apply(self.ns, v, t.T, c[k:])
        return c

    def apply_q(self, c):
        """Q c (c: (m, k), a new array)."""
        c = _util.working_copy(self.ns.xp, c)
        for k, v, t in reversed(self.panels):
            c[k:] = _apply(self.ns, v, t, c[k:])
        return c


def _apply(ns, v, t, c):
    """(I - V t V^T) c: three GEMM-shaped products on ozaki.matmul."""
    return c - ns.gemm(v, ns.gemm(t, ns.gemm(v.T, c)))


def qr_r(a, block_size=None):
    """R of the blocked QR of a 2-D numpy/cupy array (m >= n), for tests and checks."""
    ns = namespace(a)
    return QRFactor.factor(ns, _util.as_float64(ns, a, "a"), block_size).r


class _RFactor:
    """R as a factorization (for its condition estimate)."""

    def __init__(self, ns, r):
        self.ns, self.r, self.n = ns, r, r.shape[0]

    def solve(self, b):
        return self.ns.trsm(self.r, b, lower=False)

    def solve_t(self, b):
        return self.ns.trsm(self.r, b, lower=False, trans=1)


def _full_rank(ns, r, cond):
    """Whether R passes the rank test: no zero diagonal entry and rcond_1(R) > cond."""
    xp = ns.xp
    if r.shape[0] == 0:
        return True
    if bool((xp.diagonal(r) == 0).any()):
        return False
    return condest.rcond_1(ns, r, _RFactor(ns, r)) > cond


def lstsq(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True, lapack_driver=None,
          *, block_size=None):
    """Least-squares solution of a x = b (scipy.linalg.lstsq), by blocked Householder QR.

    For m >= n, x = R^-1 (Q^T b)[:n]; for m < n the minimum-norm solution
    x = Q [R^-T b; 0] from the QR of a^T.  Panels on LAPACK/cuSOLVER geqrf, the
    block reflectors applied on ozaki.matmul (current ``ozaki.config``).

    A matrix that fails the rank test (a zero diagonal entry of R, or R's
    estimated reciprocal 1-norm condition number at most ``cond``, default
    eps * max(m, n)) goes to the vendor's solver instead (scipy.linalg.lstsq
    with ``lapack_driver`` on the CPU, cupy.linalg.lstsq on the GPU), whose
    results are returned as they are: those include the singular values.

    Returns
    -------
    x : (n,) or (n, k) ndarray
    residues : (k,) ndarray ((1,) for a 1-D b)
        Squared 2-norms of the columns of b - a x when m > n and rank n, else empty.
    rank : int
    s : None (the QR path computes no singular values), or the vendor's.
    """
    ns = namespace(a, b)
    xp = ns.xp
    a = _util.as_float64(ns, a, "a", check_finite)
    b = _util.as_float64(ns, b, "b", check_finite)
    if a.ndim != 2:
        raise ValueError(f"Input array a should be 2D, got a.ndim={a.ndim}")
    if b.ndim not in (1, 2):
        raise ValueError(f"Input array b should be 1D or 2D, got b.ndim={b.ndim}")
    m, n = a.shape
    vector = b.ndim == 1
    b2 = b[:, None] if vector else b
    if b2.shape[0] != m:
        raise ValueError(f"Shape mismatch: a and b should have the same number of rows ({m} != {b2.shape[0]}).")
    k = b2.shape[1]
    if m == 0 or n == 0:
        x = xp.zeros((n, k))
        res = xp.sum(b2 * b2, axis=0) if m > 0 else xp.zeros(k)
        return (x[:, 0] if vector else x), res, 0, None
    threshold = cond if cond is not None else np.finfo(np.float64).eps * max(m, n)
    if m >= n:
        f = QRFactor.factor(ns, a, block_size)
        if _full_rank(ns, f.r, threshold):
            c = f.apply_qt(b2)
            x = trsm(ns, f.r, c[:n], lower=False, block_size=block_size)
            res = xp.sum(c[n:] * c[n:], axis=0) if m > n else xp.zeros(0)
            return (x[:, 0] if vector else x), res, n, None
    else:
        f = QRFactor.factor(ns, a.T, block_size)
        if _full_rank(ns, f.r, threshold):
            y = trsm(ns, f.r, b2, lower=False, trans=1, block_size=block_size)
            x = f.apply_q(xp.concatenate([y, xp.zeros((n - m, k))], axis=0))
            return (x[:, 0] if vector else x), xp.zeros(0), m, None
    if ns.gpu:
        return ns.lstsq(a, b, threshold)
    import scipy.linalg
    return scipy.linalg.lstsq(a, b, cond=cond, check_finite=False, lapack_driver=lapack_driver)
