"""Power-of-two equilibration, as LAPACK's xGEEQUB / xPOEQUB: scalings R, C with every row and
column maximum of R A C near 1.

solve factors R A C instead of A and uses the factorization only to compute
corrections (A^-1 = C (R A C)^-1 R); residuals stay exact on the original A.
Why: an ozaki product in the default "accurate" mode keeps each entry to about
2^-50 of its row maximum (left factor) and column maximum (right factor), so a
trailing update whose U12 columns mix rows of very different scales would lose
the small rows' bits; after equilibration the rows are comparable.  Scaling by
powers of two changes no digit (short of underflow), so it never costs accuracy.
"""

# exponents stay in a range where 2^-e is a normal float64 either way
_EXP_LIMIT = 1000


def _reciprocal_pow2(xp, v, halve=False):
    """2^-e (2^-floor(e/2) when ``halve``) for v = m 2^e, 0.5 <= m < 1; 1 where v is 0 or not finite."""
    _, e = xp.frexp(v)
    if halve:
        e = e // 2
    s = xp.ldexp(xp.ones(v.shape), xp.clip(-e, -_EXP_LIMIT, _EXP_LIMIT).astype(xp.int32))
    return xp.where((v > 0) & xp.isfinite(v), s, 1.0)


def general(xp, a):
    """(r, c): rows scaled first, then columns of the row-scaled matrix (xGEEQUB's order)."""
    r = _reciprocal_pow2(xp, xp.abs(a).max(axis=1))
    c = _reciprocal_pow2(xp, (xp.abs(a) * r[:, None]).max(axis=0))
    return r, c


def symmetric(xp, a):
    """s with diag(s) A diag(s) of diagonal in [0.5, 2): from the diagonal (xPOEQUB), keeps symmetry."""
    return _reciprocal_pow2(xp, xp.abs(xp.diagonal(a)), halve=True)


def scaled(a, r, c):
    """diag(r) a diag(c)."""
    return (a * r[:, None]) * c[None, :]


class Equilibrated:
    """A factorization f of R A C, used as one of A."""

    def __init__(self, f, r, c):
        self.f, self.n = f, f.n
        self.r, self.c = r[:, None], c[:, None]

    def solve(self, b):
        """A^-1 b = C (R A C)^-1 R b."""
        return self.c * self.f.solve(self.r * b)

    def solve_t(self, b):
        """A^-T b = R (R A C)^-T C b."""
        return self.r * self.f.solve_t(self.c * b)
