"""Independent references in Python integers and fractions, and error metrics.

Nothing here uses the code under test: products are sums of Python ints, values
are ``fractions.Fraction``s, and ``float(Fraction)`` is Python's correctly
rounded conversion (subnormals and overflow included); float32 results are
picked among neighbouring float32 values (numpy.nextafter) by exact comparison
(round_fraction32).  They are slow and meant for small matrices or sampled entries.

DFT bins: dft_bins sums in mpmath (O(N) mpmath operations a bin); for long
transforms dft_bins_exact_sum takes the roots of unity from mpmath once
(twiddle_table, as double-double pairs) and sums every bin's exact float64
product pieces with math.fsum, to about 2**-104 of sum |x_n|.
"""

import functools
import itertools
import math
from fractions import Fraction

import numpy as np

__all__ = ["complex_as_real", "dft_bins", "dft_bins_exact_sum", "twiddle_table", "l2_error", "exact_sum", "exact_dot", "exact_matmul", "scaled_integers", "scaled_matmul",
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


def twiddle_table(N, dps=36):
    """(cos_hi, cos_lo, sin_hi, sin_lo): read-only float64 arrays of length N with
    cos(2 pi j / N) = cos_hi[j] + cos_lo[j] and sin(2 pi j / N) = sin_hi[j] + sin_lo[j].

    hi = float(v) (v rounded to nearest) and lo = float(v - hi), where v is mpmath's
    cospi/sinpi at ``dps`` digits (36: 123 bits) of the rational 2j/N (itself rounded to
    those bits, exact when N is a power of two).  So |hi + lo - cos(2 pi j / N)| <=
    2**-106 |cos(2 pi j / N)| + 2**-119 (lo's rounding: half an ulp of lo, |lo| <= half
    an ulp of hi; then mpmath's and the argument's error, ~2**-121), likewise for sin;
    hi is the correctly rounded float64 of the value (barring a value within 2**-119 of
    a float64 midpoint), and the exact values 0, +-1 come out as hi = 0, +-1 with
    lo = 0 (zeros are +0.0).

    mpmath evaluates only the first octant j <= N/8 when 8 divides N, the first half
    j <= N/2 otherwise; the rest is filled by exact symmetries of the circle
    (negations and cos/sin swaps), so it holds for every N.  Memoized for the last
    two (N, dps).
    """
    N = int(N)
    if N < 1:
        raise ValueError(f"twiddle_table: N must be positive, not {N}")
    return _twiddle_table(N, int(dps))


# a 2**24 table is 512 MB and a minute of mpmath: keep the last two.  Keyed on plain
# (N, dps) by twiddle_table (lru_cache tells f(N) from f(N, 36) and numpy ints from ints).
@functools.lru_cache(maxsize=2)
def _twiddle_table(N, dps):
    import mpmath
    octant = N % 8 == 0
    last = N // 8 if octant else N // 2        # the angles computed in mpmath: j = 0..last
    cos_hi, cos_lo, sin_hi, sin_lo = [], [], [], []
    with mpmath.workdps(dps):
        for j in range(last + 1):
            c, s = mpmath.cospi_sinpi(mpmath.mpf(2 * j) / N)   # one argument reduction for both
            h = float(c)
            cos_hi.append(h)
            cos_lo.append(float(c - h))        # c - h is exact at 123 bits: h is c's leading 53
            h = float(s)
            sin_hi.append(h)
            sin_lo.append(float(s - h))
    cos = np.zeros((2, N))                     # rows (hi, lo); negating a pair negates both rows exactly
    sin = np.zeros((2, N))
    cos[:, :last + 1] = [cos_hi, cos_lo]
    sin[:, :last + 1] = [sin_hi, sin_lo]
    if octant:
        M = N // 8
        t = np.arange(M)                       # angles pi/4 .. pi/2: cos and sin swap (j = 2M - t)
        cos[:, 2 * M - t], sin[:, 2 * M - t] = sin[:, t], cos[:, t]
        t = np.arange(1, 2 * M + 1)            # pi/2 .. pi: cos(pi/2 + a) = -sin a, sin(pi/2 + a) = cos a
        cos[:, 2 * M + t], sin[:, 2 * M + t] = -sin[:, t], cos[:, t]
        t = np.arange(1, 4 * M)                # pi .. 2 pi: cos(pi + a) = -cos a, sin(pi + a) = -sin a
        cos[:, 4 * M + t], sin[:, 4 * M + t] = -cos[:, t], -sin[:, t]
    else:
        t = np.arange(1, (N + 1) // 2)         # conjugate symmetry: j = N - t for j past N/2
        cos[:, N - t], sin[:, N - t] = cos[:, t], -sin[:, t]
    out = []
    for a in (cos[0], cos[1], sin[0], sin[1]):
        a = a + 0.0                            # -0.0 (negated zeros) -> +0.0
        a.flags.writeable = False              # shared through the cache
        out.append(a)
    return tuple(out)


_SPLITTER = 2.0 ** 27 + 1                      # Veltkamp's constant for float64 (53 = 27 + 26 bits)


def _split(a):
    """(hi, lo), a = hi + lo exactly with hi, lo of at most 26 significant bits
    (Veltkamp's split, vectorized); needs |a| < 2**996 (a * splitter must not overflow)."""
    t = a * _SPLITTER
    hi = t - (t - a)
    return hi, a - hi


def _two_product(a, a_split, b, b_split):
    """(p, e) with p = fl(a b) and p + e = a b exactly (Dekker's product on Veltkamp
    splits, vectorized), provided no underflow: |a b| >= 2**-969 or a b = 0; below,
    e is off by at most a few 2**-1074."""
    p = a * b
    ah, al = a_split
    bh, bl = b_split
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _fsum2(pieces):
    """(s1, s2) for a list of float64 arrays/lists whose exact sum is S: s1 = fsum(pieces)
    = RN(S) and s2 = RN(S - s1), so |s1 + s2 - S| <= ulp(s2) / 2 <= 2**-106 |S|
    (S - s1 subnormal: <= 2**-1075).  Two passes of math.fsum (exact internally)."""
    def values():                              # memoryview: fsum reads Python floats, no list built
        return itertools.chain.from_iterable(
            memoryview(np.ascontiguousarray(p, dtype=np.float64)) for p in pieces)
    s1 = math.fsum(values())
    s2 = math.fsum(itertools.chain(values(), (-s1,)))
    return s1, s2


def dft_bins_exact_sum(x, ks, sign=-1, chunk=1 << 16, dps=36):
    """Bins k of the DFT sum_n x[n] exp(sign 2 pi i k n / N) (sign = -1 or +1) of a
    float64 or complex128 vector x, as mpmath mpc values (like dft_bins'), from the
    double-double roots of unity of twiddle_table(N, dps) and exact float64 sums.

    Per bin, every term x[n] w, w = c + i sign s at j = k n mod N (exact int64), is
    cut into float64 pieces: x_part * w_hi as an exact two-float product (Dekker),
    x_part * w_lo rounded once (its error is <= 2**-106 |x_part|); math.fsum sums the
    pieces of each chunk of ``chunk`` terms into s1 + s2 (the correctly rounded sum and
    the correctly rounded remainder), and the chunks' s1, s2 likewise.  So each part
    (real, imaginary) is within about 2**-104 sum_n (|Re x[n]| + |Im x[n]|) of the exact
    DFT bin: the roots' 2**-106 (twiddle_table), the w_lo products' 2**-106 and the
    sums' 2**-106 of each chunk's and the whole sum of |pieces|.  On random data that
    worst case is ~2**-104 sqrt(N) relative to the bins (3e-28 at N = 2**24); the
    errors being independent, what is seen is ~1e-32 (against dft_bins at 2**16 and
    2**20: 3e-33), far below float64's rounding either way.  Assumes finite parts
    below 2**500 in magnitude; products below 2**-969 (underflow) lose their exact
    error terms (a few 2**-1074 each).

    Cost: O(N) numpy work and fsum passes a bin (~50 ns a piece, 6 pieces a term and
    part, two passes: ~20 s a bin at N = 2**24 on one core) plus the table's mpmath
    evaluations, once per N (~50 s at 2**24).  ``chunk``: terms a numpy pass; 2**16
    keeps the ~20 temporaries (0.5 MB each) in cache and in reused heap memory (fresh
    multi-MB arrays cost page faults: 2**22 was 40 times slower an operation here).
    """
    import mpmath
    if sign not in (-1, 1):
        raise ValueError(f"dft_bins_exact_sum: sign must be -1 or +1, not {sign}")
    x = np.asarray(x)
    if not (np.iscomplexobj(x) or x.dtype == np.float64):
        x = x.astype(np.float64)
    x = np.ascontiguousarray(x.astype(np.complex128).ravel())
    N = len(x)
    if N >= 1 << 31:                           # k n < N**2 must fit int64
        raise ValueError("dft_bins_exact_sum: N must be below 2**31")
    if not np.isfinite(x).all():
        raise ValueError("dft_bins_exact_sum: x must be finite")
    xr, xi = x.real.copy(), x.imag.copy()
    xr_split, xi_split = _split(xr), _split(xi)    # the same for every bin
    tables = twiddle_table(N, dps)
    out = []
    for k in ks:
        k = int(k) % N
        re, im = [], []                        # each chunk's (s1, s2)
        for start in range(0, N, chunk):
            stop = min(N, start + chunk)
            j = (k * np.arange(start, stop, dtype=np.int64)) % N
            c_hi, c_lo, s_hi, s_lo = (t[j] for t in tables)
            if sign < 0:                       # w = cos - i sin: negation is exact
                s_hi, s_lo = -s_hi, -s_lo
            c_split, s_split = _split(c_hi), _split(s_hi)
            a, b = xr[start:stop], xi[start:stop]
            a_split = tuple(h[start:stop] for h in xr_split)
            b_split = tuple(h[start:stop] for h in xi_split)
            # Re(x w) = a c - b s, with s = sign sin
            p, e = _two_product(a, a_split, c_hi, c_split)
            q, f = _two_product(b, b_split, s_hi, s_split)
            re.extend(_fsum2([p, e, a * c_lo, -q, -f, -(b * s_lo)]))
            # Im(x w) = a s + b c
            p, e = _two_product(a, a_split, s_hi, s_split)
            q, f = _two_product(b, b_split, c_hi, c_split)
            im.extend(_fsum2([p, e, a * s_lo, q, f, b * c_lo]))
        # the chunks' s1 + s2 are within 2**-106 of each chunk's exact sum; their exact
        # total, to 2**-106 again, and the returned mpf is s1 + s2 exactly (fadd exact=True;
        # 2200 bits so that mpc() does not round it: |s2| may be far below ulp(s1))
        parts = [mpmath.fadd(*_fsum2([v]), exact=True) for v in (re, im)]
        with mpmath.workprec(2200):
            out.append(mpmath.mpc(*parts))
    return out


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

