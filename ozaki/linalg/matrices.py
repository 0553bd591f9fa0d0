"""Test matrices the solvers did not shape: prescribed condition, Hilbert, Kahan, Pascal, graded.

Every generator returns float64 arrays; the matrix is whatever float64 holds
after its construction rounds (the references solve that matrix exactly, not
the ideal one).  ``xp`` (numpy or cupy) picks where random ones are built.
"""

import math

import numpy as np


def _rng(xp, seed):
    """numpy: a Generator; cupy: a cupy.random.RandomState (standard_normal, random_sample)."""
    if xp is np:
        return np.random.default_rng(seed)          # a Generator passes through unaltered
    if hasattr(seed, "standard_normal") and not isinstance(seed, np.random.Generator):
        return seed                                 # already a cupy RandomState
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2 ** 31))
    return xp.random.RandomState(seed)


def _uniform(rng, n):
    return rng.random_sample(n) if hasattr(rng, "random_sample") else rng.random(n)


def _permutation(xp, rng, n):
    return xp.argsort(_uniform(rng, n))


def singular_values(n, cond, xp=np):
    """n values from 1 down to 1/cond, geometrically spaced."""
    if n == 1:
        return xp.ones(1)
    return xp.asarray(np.power(float(cond), -np.arange(n) / (n - 1)))


def orthogonal(n, seed=None, xp=np):
    """A random orthogonal matrix (Q of the QR of a Gaussian matrix, signs fixed by R's diagonal)."""
    g = _rng(xp, seed).standard_normal((n, n))
    q, r = xp.linalg.qr(g)
    return q * xp.sign(xp.diagonal(r))


def random_cond(n, cond, seed=None, xp=np, spd=False):
    """U diag(s) V^T (or U diag(s) U^T, symmetrized, when ``spd``) with s from 1 to 1/cond.

    U, V from QR of Gaussian matrices; its 2-norm condition number is ``cond``
    up to the rounding of the product (relative 1e-16 per entry, which moves
    the smallest singular value once cond approaches 1e16).
    """
    rng = _rng(xp, seed)
    u = orthogonal(n, rng, xp)
    s = singular_values(n, cond, xp)
    if spd:
        a = (u * s) @ u.T
        return (a + a.T) * 0.5             # exactly symmetric (both halves round the same sums)
    v = orthogonal(n, rng, xp)
    a = (u * s) @ v.T
    # shuffle rows so the largest entries do not sit where the QR put them
    return a[_permutation(xp, rng, n)]


def hilbert(n):
    """H[i, j] = 1 / (i + j + 1), each entry rounded to float64 (cond ~ e^(3.5 n))."""
    i = np.arange(n, dtype=np.float64)
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


def pascal(n):
    """The symmetric positive definite Pascal matrix P[i, j] = C(i + j, i): integers, exact for n <= 28,
    det 1, its inverse integral, cond growing like 16^n."""
    if n > 28:
        raise ValueError("pascal(n) is exact in float64 only for n <= 28")
    return np.array([[math.comb(i + j, i) for j in range(n)] for i in range(n)], dtype=np.float64)


def kahan(n, theta=1.2, pert=25.0):
    """Kahan's upper triangular matrix diag(1, s, ..., s^(n-1)) (I - c * strict upper ones),
    s = sin(theta), c = cos(theta), with the diagonal perturbed by pert * eps * (n - i) (Higham's
    gallery('kahan')) so that column-pivoted QR leaves it alone; badly conditioned, harmless-looking."""
    s, c = math.sin(theta), math.cos(theta)
    scale = s ** np.arange(n)
    k = np.triu(-c * np.ones((n, n)), 1) + np.eye(n)
    k = scale[:, None] * k
    k[np.diag_indices(n)] += pert * np.finfo(np.float64).eps * np.arange(n, 0, -1)
    return k


def graded(n, decades=12, seed=None, xp=np):
    """D1 B D2 with B Gaussian and D1, D2 spanning ``decades`` orders of magnitude (rows and
    columns scaled independently): huge normwise condition, modest after scaling."""
    rng = _rng(xp, seed)
    b = rng.standard_normal((n, n))
    d1 = xp.asarray(np.logspace(0, -decades, n))[_permutation(xp, rng, n)]
    d2 = xp.asarray(np.logspace(0, -decades / 2, n))[_permutation(xp, rng, n)]
    return (d1[:, None] * b) * d2[None, :]


def families(n, seed=None):
    """Named square test matrices of order n (numpy), for the tests and the verify cases."""
    rng = _rng(np, seed)
    out = {f"cond1e{e}": random_cond(n, 10.0 ** e, rng) for e in (2, 6, 10, 13)}
    out["graded"] = graded(n, 12, rng)
    return out
