"""Exact references for linear systems with float64 data, independent of ozaki's products.

The exact solution x* of A x = b (A, b as the float64 values they hold) comes
as Python Fractions, from one of:

* ``solve_bareiss``: fraction-free Gaussian elimination (Bareiss) on the
  integers 2^s A, 2^t b -- exact, O(n^3) big-integer operations (~0.05 s at
  n = 32, ~1 s at n = 64 in pure Python);
* ``solve_refined``: Wilkinson's refinement with residuals computed exactly in
  Python integers and corrections from LAPACK, x* as the exact sum of the
  float64 corrections; stops when the exact residual certifies every entry to
  a relative 1e-30 (||A^-1||_inf from numpy's inverse times ||r||_inf, against
  the smallest |x_i|) and otherwise falls back to Bareiss.  Fast for n up to a
  few hundred, as long as no entry of x* is zero;
* ``solve_mpmath``: mpmath's LU at ``dps`` digits (mpf results), the
  cross-check of the other two.

Errors of a float64 solution against x* are computed exactly in Fractions.
"""

import math
from fractions import Fraction

import numpy as np

CERTIFY = 1e-30           # solve_refined's relative error target (max norm)


def _dyadic(v):
    """float64 array (2-D) -> (rows of Python ints, e) with v = ints * 2**e exactly."""
    v = np.asarray(v, dtype=np.float64)
    mant, ex = np.frexp(v)
    ints = (mant * 2.0 ** 53).astype(np.int64)        # exact: 53-bit significands
    ex = ex.astype(np.int64) - 53
    nz = v != 0
    if not nz.any():
        return [[0] * v.shape[1] for _ in range(v.shape[0])], 0
    e0 = int(ex[nz].min())
    shift = np.where(nz, ex - e0, 0)
    return [[int(i) << int(s) for i, s in zip(ri, rs)] for ri, rs in zip(ints, shift)], e0


def _as_2d(b):
    b = np.asarray(b, dtype=np.float64)
    return (b[:, None], True) if b.ndim == 1 else (b, False)


def solve_bareiss(a, b):
    """Exact solution of a x = b (square a, b of shape (n,) or (n, k)) as Fractions [i][j]
    (or [i] for a 1-D b).  ZeroDivisionError if a is singular."""
    a = np.asarray(a, dtype=np.float64)
    b, vector = _as_2d(b)
    n, k = b.shape
    ai, ea = _dyadic(a)
    bi, eb = _dyadic(b)
    m = [ai[i] + bi[i] for i in range(n)]
    width = n + k
    prev = 1
    for c in range(n):
        p = next((i for i in range(c, n) if m[i][c] != 0), None)
        if p is None:
            raise ZeroDivisionError("singular matrix")
        if p != c:
            m[c], m[p] = m[p], m[c]
        pivot, row = m[c][c], m[c]
        for i in range(c + 1, n):
            ri = m[i]
            f = ri[c]
            ri[c] = 0
            if f == 0:
                for j in range(c + 1, width):       # (ri * pivot - 0) / prev, exact
                    ri[j] = ri[j] * pivot // prev
            else:
                for j in range(c + 1, width):
                    ri[j] = (ri[j] * pivot - f * row[j]) // prev
        prev = pivot
    scale = Fraction(2) ** (eb - ea)
    x = [[None] * k for _ in range(n)]
    for c in range(k):
        for i in range(n - 1, -1, -1):
            s = Fraction(m[i][n + c])
            for j in range(i + 1, n):
                s -= m[i][j] * x[j][c]
            x[i][c] = s / m[i][i]
    x = [[v * scale for v in row] for row in x]
    return [row[0] for row in x] if vector else x


def _dyadic_terms(terms):
    """Exact integers for sum(terms): (rows of ints [i][c], e)."""
    reps = [_dyadic(t) for t in terms]
    e = min(r[1] for r in reps)
    n, k = terms[0].shape
    out = [[0] * k for _ in range(n)]
    for ints, et in reps:
        s = et - e
        for i in range(n):
            for c in range(k):
                out[i][c] += ints[i][c] << s
    return out, e


def solve_refined(a, b, max_iter=40):
    """Exact-enough solution as Fractions (see the module docstring); falls back to Bareiss."""
    import scipy.linalg
    a = np.asarray(a, dtype=np.float64)
    b2, vector = _as_2d(b)
    n, k = b2.shape
    try:
        lu = scipy.linalg.lu_factor(a, check_finite=False)
        inv_norm = float(np.abs(np.linalg.inv(a)).sum(axis=1).max())
    except (np.linalg.LinAlgError, ValueError):
        return solve_bareiss(a, b)
    if not np.isfinite(inv_norm) or not np.isfinite(lu[0]).all():
        return solve_bareiss(a, b)
    ai, ea = _dyadic(a)
    bi, eb = _dyadic(b2)
    terms = [scipy.linalg.lu_solve(lu, b2)]
    for _ in range(max_iter):
        xi, ex = _dyadic_terms(terms)
        e = min(eb, ea + ex)
        r = [[(bi[i][c] << (eb - e)) - (sum(p * xi[j][c] for j, p in enumerate(ai[i]) if p) << (ea + ex - e))
              for c in range(k)] for i in range(n)]
        rmax = max(abs(v) for row in r for v in row)
        if rmax == 0:
            break
        # |x*_i - x_i| <= ||A^-1||_inf ||r||_inf for every i: certified when that is below CERTIFY |x_i|
        # for the smallest |x_i| (componentwise, so tiny entries are right too; an x_i that is 0 with
        # r != 0 never certifies: Bareiss decides).  inv_norm is numpy's, good to cond * eps relative;
        # a factor 2 of slack covers that for the matrices this is used on (cond < 1e15).
        xmin = min(abs(v) for row in xi for v in row)
        if xmin and 2 * inv_norm * _f(rmax, e) <= CERTIFY * _f(xmin, ex):
            break
        rf = np.array([[_f(v, e) for v in row] for row in r])
        terms.append(scipy.linalg.lu_solve(lu, rf))
    else:
        return solve_bareiss(a, b)
    xi, ex = _dyadic_terms(terms)
    scale = Fraction(2) ** ex
    x = [[v * scale for v in row] for row in xi]
    return [row[0] for row in x] if vector else x


def _f(v, e):
    """float(v * 2**e) correctly rounded, for a Python int v."""
    return float(Fraction(v) * Fraction(2) ** e) if e < 0 else float(v << e)


def solve_mpmath(a, b, dps=80):
    """mpmath's LU solution at ``dps`` digits: mpf [i][j] (or [i] for a 1-D b)."""
    import mpmath
    a = np.asarray(a, dtype=np.float64)
    b2, vector = _as_2d(b)
    with mpmath.workdps(dps):
        A = mpmath.matrix(a.tolist())            # float -> mpf is exact
        cols = [mpmath.lu_solve(A, mpmath.matrix(b2[:, c].tolist())) for c in range(b2.shape[1])]
        x = [[cols[c][i] for c in range(b2.shape[1])] for i in range(a.shape[0])]
    return [row[0] for row in x] if vector else x


def solve(a, b):
    """The exact solution (Fractions): Bareiss for n <= 40, else refinement with exact residuals."""
    return solve_bareiss(a, b) if np.asarray(a).shape[0] <= 40 else solve_refined(a, b)


def as_fraction(v):
    """A Fraction from a float or an mpmath mpf (exactly)."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (float, int, np.floating, np.integer)):
        return Fraction(float(v))
    sign, man, exp, _ = v._mpf_                  # mpmath: (-1)^sign man 2^exp
    f = Fraction(int(man)) * Fraction(2) ** int(exp)
    return -f if sign else f


def _columns(x, xstar):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        return x[:, None], [[as_fraction(v)] for v in xstar]
    return x, [[as_fraction(v) for v in row] for row in xstar]


def errors(x, xstar):
    """Exact error figures of a float64 solution x against x* (Fractions or mpf), per column.

    Returns a dict of float arrays (one entry per column):
      normwise     max_i |x_i - x*_i| / max_i |x_i|   (LAPACK's err_bnds_norm measure)
      normwise_ref max_i |x_i - x*_i| / max_i |x*_i|  (the forward error, relative, max norm)
      componentwise max_i |x_i - x*_i| / |x_i|         (0/0 counts 0, c/0 infinity)
      max_ulp      max_i |x_i - x*_i| / ulp(x*_i)
      rounded      fraction of entries equal to the correctly rounded x*_i
    """
    x, xs = _columns(x, xstar)
    n, k = x.shape
    out = {key: np.zeros(k) for key in ("normwise", "normwise_ref", "componentwise", "max_ulp", "rounded")}
    for c in range(k):
        diffs = [abs(Fraction(float(x[i, c])) - xs[i][c]) for i in range(n)]
        dmax = max(diffs, default=Fraction(0))
        xmax = max((abs(float(v)) for v in x[:, c]), default=0.0)
        smax = max((abs(xs[i][c]) for i in range(n)), default=Fraction(0))
        out["normwise"][c] = _ratio(dmax, Fraction(xmax))
        out["normwise_ref"][c] = _ratio(dmax, smax)
        out["componentwise"][c] = max((_ratio(d, abs(Fraction(float(x[i, c])))) for i, d in enumerate(diffs)),
                                      default=0.0)
        ulps = [_ratio(d, Fraction(_ulp(float(xs[i][c])))) if xs[i][c] else (0.0 if d == 0 else math.inf)
                for i, d in enumerate(diffs)]
        out["max_ulp"][c] = max(ulps, default=0.0)
        out["rounded"][c] = np.mean([float(x[i, c]) == float(xs[i][c]) for i in range(n)]) if n else 1.0
    return out


def _ratio(num, den):
    if den == 0:
        return 0.0 if num == 0 else math.inf
    return float(num / den)


def _ulp(v):
    return math.ulp(v) if v else math.ulp(0.0)
