"""Independent references in Python integers and fractions, and error metrics.

Nothing here uses the code under test: products are sums of Python ints, values
are ``fractions.Fraction``s, and ``float(Fraction)`` is Python's correctly
rounded conversion (subnormals and overflow included); float32 results are
picked among neighbouring float32 values (numpy.nextafter) by exact comparison
(round_fraction32).  They are slow and meant for small matrices or sampled entries.
"""

import math
from fractions import Fraction

import numpy as np

__all__ = ["complex_as_real", "dft_bins", "l2_error", "exact_sum", "exact_dot", "exact_matmul", "scaled_integers", "scaled_matmul",
           "round_fraction", "round_fraction32", "ulp", "ulp_error", "dmmch_ratio"]

_EPS = 2.0 ** -53          # unit roundoff of float64 (LAPACK's DMMCH uses eps = 2**-53 too)


def round_fraction(f, sign_if_zero=1.0):
    """float64 nearest to the Fraction f (ties to even); +-inf past the overflow threshold."""
    if f == 0:
        return math.copysign(0.0, sign_if_zero)
    try:
        return float(f)
    except OverflowError:
        return math.inf if f > 0 else -math.inf


_F32_OVERFLOW = Fraction(2) ** 128        # float32's binade past its largest value, where inf stands


def _f32_value(x):
    """The exact value of a float32, +inf standing for 2**128 (the rounding of RNE with
    unbounded exponent that overflows)."""
    return _F32_OVERFLOW if np.isinf(x) else Fraction(float(x))


def round_fraction32(f, sign_if_zero=1.0):
    """numpy.float32 nearest to the Fraction f (ties to even); +-inf past float32's
    overflow threshold; subnormals at their own spacing.

    Independent of float64 rounding (no double rounding): a float32 near f is
    walked with numpy.nextafter to the two consecutive float32 values bracketing
    |f|, and the nearer one is taken by exact Fraction comparison, on a tie the
    one whose bit pattern is even (2**128, standing for inf, counts as even).
    """
    if f == 0:
        return np.float32(math.copysign(0.0, sign_if_zero))
    a = abs(f)
    if a >= _F32_OVERFLOW:
        r = np.float32(np.inf)
    else:
        try:
            g = min(float(a), float(np.finfo(np.float32).max))
        except OverflowError:
            g = float(np.finfo(np.float32).max)
        lo = np.float32(g)
        up, down = np.float32(np.inf), np.float32(0)
        with np.errstate(over="ignore"):              # max -> inf: the 2**128 neighbour
            while _f32_value(lo) > a:
                lo = np.nextafter(lo, down)
            while _f32_value(np.nextafter(lo, up)) <= a:
                lo = np.nextafter(lo, up)
            hi = np.nextafter(lo, up)
        below, above = a - _f32_value(lo), _f32_value(hi) - a
        if below != above:
            r = lo if below < above else hi
        else:
            r = lo if int(np.array(lo).view(np.int32)) % 2 == 0 else hi
    return -r if f < 0 else r


def _rounder(dtype):
    return round_fraction32 if np.dtype(dtype) == np.float32 else round_fraction


def exact_dot(a, b, dtype=np.float64):
    """The correctly rounded exact value of sum_k a_k b_k for float vectors, IEEE specials;
    rounded once to ``dtype`` (float64, or float32: round_fraction32)."""
    a = [float(v) for v in a]
    b = [float(v) for v in b]
    if any(math.isnan(x) or math.isnan(y) for x, y in zip(a, b)):
        return math.nan
    infs = set()
    for x, y in zip(a, b):
        if math.isinf(x) or math.isinf(y):
            if x == 0 or y == 0:
                return math.nan
            infs.add(math.copysign(1.0, x) * math.copysign(1.0, y))
    if infs:
        return math.nan if len(infs) == 2 else math.copysign(math.inf, infs.pop())
    return _rounder(dtype)(exact_sum(a, b), _zero_sign(a, b))


def _zero_sign(a, b):
    """IEEE sign of a zero sum of products: -1 iff every term is a -0 (then the sum is -0)."""
    all_negative_zero = len(a) > 0 and all(
        (x == 0 or y == 0) and math.copysign(1.0, x) * math.copysign(1.0, y) < 0 for x, y in zip(a, b))
    return -1.0 if all_negative_zero else 1.0


def is_faithful(c, a, b, dtype=np.float64):
    """Whether c is a faithful value of sum_k a_k b_k: one of the two ``dtype`` (float64
    or float32) values bracketing the exact sum (the sum itself when it is one); IEEE's
    value where an input is NaN/inf or the correctly rounded sum overflows."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c = np.dtype(dtype).type(c)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        want = exact_dot(a, b, dtype)
        return bool((np.isnan(c) and np.isnan(want)) or c == want)
    exact = exact_sum(a.tolist(), b.tolist())
    rn = _rounder(dtype)(exact)
    if np.isinf(rn) or not np.isfinite(c):
        return bool(c == rn)
    down, up = (Fraction(float(np.nextafter(c, c.dtype.type(v)))) for v in (-np.inf, np.inf))
    return Fraction(float(c)) == exact or down < exact < up


def exact_matmul(A, B, entries=None, dtype=np.float64):
    """Correctly rounded exact A @ B (2-D float arrays, widened exactly to float64);
    ``entries``: optional list of (i, j); ``dtype``: float64 or float32, the format
    each entry is rounded to, once."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if entries is None:
        return np.array([[exact_dot(A[i], B[:, j], dtype) for j in range(B.shape[1])]
                         for i in range(A.shape[0])], dtype=dtype).reshape(A.shape[0], B.shape[1])
    return np.array([exact_dot(A[i], B[:, j], dtype) for i, j in entries], dtype=dtype)


def scaled_integers(X, beta, axis, nearest=False):
    """The integers sign(x) floor(|x| / 2**beta) of a mode's scaling, as Python ints.

    ``beta`` per row (axis=1: rows of X are scaled) or per column (axis=0);
    nearest: sign(x) floor(|x| / 2**beta + 1/2) (the accurate mode's rounding).
    """
    X = np.asarray(X, dtype=np.float64)
    beta = [int(b) for b in np.asarray(beta).tolist()]
    out = []
    for i in range(X.shape[0]):
        row = []
        for j in range(X.shape[1]):
            f = abs(Fraction(float(X[i, j])))
            bb = beta[i] if axis == 1 else beta[j]
            v = math.floor(f / Fraction(2) ** bb + (Fraction(1, 2) if nearest else 0))
            row.append(-v if X[i, j] < 0 else v)
        out.append(row)
    return out


def scaled_matmul(A, B, beta_a, beta_b, entries=None, nearest=False, dtype=np.float64):
    """RN(A'B' 2**(beta_a_i + beta_b_j)) for the scaled integers A', B' (finite inputs),
    rounded once to ``dtype`` (float64 or float32).

    ``nearest``: the integers are rounded to nearest (see scaled_integers).

    The bit-for-bit reference of every mode: what the pipeline must return
    given its own scaling, computed here in Python ints.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    Ai = scaled_integers(A, beta_a, axis=1, nearest=nearest)
    Bi = scaled_integers(B, beta_b, axis=0, nearest=nearest)
    ba = [int(b) for b in np.asarray(beta_a).tolist()]
    bb = [int(b) for b in np.asarray(beta_b).tolist()]
    n = len(Bi[0]) if Bi else 0

    def entry(i, j):
        s = sum(Ai[i][k] * Bi[k][j] for k in range(len(Bi)))
        return _rounder(dtype)(Fraction(s) * Fraction(2) ** (ba[i] + bb[j]),
                               _zero_sign(A[i].tolist(), B[:, j].tolist()))

    if entries is None:
        return np.array([[entry(i, j) for j in range(n)] for i in range(len(Ai))], dtype=dtype).reshape(len(Ai), n)
    return np.array([entry(i, j) for i, j in entries], dtype=dtype)


def exact_sum(a, b):
    """sum_k a_k b_k of finite floats as an exact Fraction."""
    return sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0))


def ulp(x):
    """Spacing of float64 at x (the ulp of the result's binade; subnormal spacing near 0)."""
    return np.spacing(np.abs(np.asarray(x, dtype=np.float64)))


def ulp_error(C, A, B, entries=None):
    """|C - exact| / ulp(exact rounded), exactly, per entry (finite results)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    if entries is None:
        entries = [(i, j) for i in range(C.shape[0]) for j in range(C.shape[1])]
    out = []
    for i, j in entries:
        exact = exact_sum(A[i], B[:, j])
        unit = Fraction(float(ulp(round_fraction(exact))))
        out.append(float(abs(Fraction(float(C[i, j])) - exact) / unit))
    return np.array(out)


def dmmch_ratio(C, A, B, entries=None, eps=_EPS):
    """LAPACK DMMCH test ratio max |C - C_exact| / (eps |A||B|), computed exactly;
    ``eps``: 2**-53 (float64, the default) or 2**-24 for float32 results (SMMCH).

    Entries whose exact |A||B| is zero count only if C is nonzero there (ratio
    inf); a non-finite C entry where the exact value is finite gives inf.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    if entries is None:
        entries = [(i, j) for i in range(C.shape[0]) for j in range(C.shape[1])]
    worst = 0.0
    for i, j in entries:
        if not math.isfinite(C[i, j]):
            return math.inf
        exact = exact_sum(A[i], B[:, j])
        denom = exact_sum(np.abs(A[i]), np.abs(B[:, j]))
        err = abs(Fraction(float(C[i, j])) - exact)
        if err:
            worst = math.inf if denom == 0 else max(worst, float(err / denom / Fraction(eps)))
    return worst


def dft_bins(x, ks, sign=-1, dps=40):
    """Bins k of the DFT sum_n x[n] exp(sign 2 pi i k n / N), in mpmath at ``dps`` digits."""
    import mpmath
    N = len(x)
    with mpmath.workdps(dps):
        xs = [mpmath.mpc(complex(v)) for v in x]
        return [mpmath.fsum(xs[n] * mpmath.expjpi(sign * 2 * mpmath.mpf(int(k) * n % N) / N) for n in range(N))
                for k in ks]              # int(k): numpy integers are not mpf arguments


def l2_error(y, ref, ks, dps=40):
    """benchFFT's L2 relative error of the bins ks of y against reference bins."""
    import mpmath
    with mpmath.workdps(dps):
        num = mpmath.fsum(abs(mpmath.mpc(complex(y[k])) - r) ** 2 for k, r in zip(ks, ref))
        den = mpmath.fsum(abs(r) ** 2 for r in ref)
        return float(mpmath.sqrt(num / den))


def complex_as_real(A, B):
    """The real products behind A @ B for complex A, B: ((X_re, Y_re), (X_im, Y_im)).

    Re(A @ B) = [Ar, -Ai] @ [Br; Bi] and Im(A @ B) = [Ar, Ai] @ [Bi; Br], each a
    real product of 2k terms: the exact references and metrics of complex products.
    """
    A = np.asarray(A, dtype=np.complex128)
    B = np.asarray(B, dtype=np.complex128)
    return ((np.hstack([A.real, -A.imag]), np.vstack([B.real, B.imag])),
            (np.hstack([A.real, A.imag]), np.vstack([B.imag, B.real])))

