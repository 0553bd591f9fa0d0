"""Condition estimates from a factorization: Hager's 1-norm estimator with Higham's
refinements (LAPACK's xLACN2), on solves with the factors only (O(n^2) each).

The estimates are lower bounds of the norms they estimate (usually within a
factor of 3); they decide warnings and when the refinement's error bounds are
trusted, never the bounds' values themselves.
"""

import numpy as np

ITMAX = 5


def norm1_estimate(ns, apply, apply_t, n):
    """A lower estimate of ||B||_1 for an n x n operator given x -> B x and x -> B^T x on (n, 1) arrays.

    Two host synchronisations per iteration: each decision's figures come to the
    host together (on a GPU every float() of a device value waits for the device).
    """
    xp = ns.xp
    if n == 0:
        return 0.0
    x = xp.full((n, 1), 1.0 / n)
    est, sign_old, j_old = 0.0, None, -1
    for it in range(ITMAX):
        y = apply(x)
        sign = xp.where(y >= 0, 1.0, -1.0)
        figures = [xp.abs(y).sum()] + ([(sign == sign_old).all()] if sign_old is not None else [])
        est_new, *same = _to_host(ns, figures)
        if not np.isfinite(est_new):
            return float("inf")
        if it > 0 and est_new <= est:
            break
        est = est_new
        if same and same[0]:
            break                                    # the same vertex again: converged
        sign_old = sign
        z = apply_t(sign)
        az = xp.abs(z).ravel()
        j = xp.argmax(az)
        j, zj, ztx = _to_host(ns, [j, az[j], (z * x).sum()])
        j = int(j)
        if it > 0 and (j == j_old or zj <= ztx):
            break                                    # no better vertex: a local maximum
        j_old = j
        x = xp.zeros((n, 1))
        x[j] = 1.0
    # Higham's extra vector, alternating and growing, catches what the vertices miss
    i = np.arange(n, dtype=np.float64)
    alt = (1.0 - 2.0 * (i % 2)) * (1.0 + i / max(n - 1, 1))
    y = apply(xp.asarray(alt.reshape(n, 1)))
    return max(est, 2.0 * float(xp.abs(y).sum()) / (3.0 * n))


def _to_host(ns, values):
    """Device scalars (float, bool, or indices below 2^53) as host floats, in one transfer."""
    xp = ns.xp
    return [float(v) for v in ns.asnumpy(xp.stack([xp.asarray(v, dtype=xp.float64) for v in values]))]


def inverse_norm1(ns, factor):
    """An estimate of ||A^-1||_1 from a factorization with ``solve`` and ``solve_t``."""
    return norm1_estimate(ns, factor.solve, factor.solve_t, factor.n)


def rcond_1(ns, a, factor):
    """Reciprocal 1-norm condition number estimate 1 / (||A||_1 ||A^-1||_1), as LAPACK's xGECON."""
    xp = ns.xp
    if factor.n == 0:
        return float("inf")
    anorm = float(xp.abs(a).sum(axis=0).max())
    inv = inverse_norm1(ns, factor)
    if anorm == 0 or inv == 0 or not np.isfinite(inv):
        return 0.0
    return 1.0 / (anorm * inv)


def scaled_inverse_norm_inf(ns, factor, left, right):
    """An estimate of || diag(left) A^-1 diag(right) ||_inf (left, right: (n, 1), >= 0, finite).

    ||M||_inf = ||M^T||_1 with M^T = diag(right) A^-T diag(left).
    """
    return norm1_estimate(ns, lambda x: right * factor.solve_t(left * x),
                          lambda x: left * factor.solve(right * x), factor.n)


def skeel_rcond(ns, a, factor, x=None):
    """Reciprocal Skeel condition estimates, as LAPACK's xLA_GERCOND.

    Without x: 1 / || |A^-1| |A| ||_inf (normwise, no scaling).  With x (one
    column): 1 / max_i (|A^-1| |A| |x|)_i / |x_i|, the componentwise condition
    number cond(A diag(x)); 0 when some x_i = 0.  |A^-1| g = |A^-1 diag(g)| e for
    g >= 0, so both are infinity norms of scaled inverses.
    """
    xp = ns.xp
    n = factor.n
    if n == 0:
        return float("inf")
    absa = xp.abs(a)
    if x is None:
        g = absa.sum(axis=1, keepdims=True)
        left = xp.ones((n, 1))
    else:
        ax = xp.abs(x.reshape(n, 1))
        if not bool((ax > 0).all()):
            return 0.0
        g = absa @ ax           # a scale for the estimate only: rounding here is harmless
        left = 1.0 / ax
        if not bool(xp.isfinite(left).all()):
            return 0.0
    est = scaled_inverse_norm_inf(ns, factor, left, g)
    if est == 0:
        return float("inf")
    return 0.0 if not np.isfinite(est) else 1.0 / est
