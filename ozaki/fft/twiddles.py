"""DFT constants: correctly rounded roots of unity, built in exact fixed point.

Every constant is w_N^j = exp(sign 2 pi i j / N) * scale with its real and
imaginary parts each correctly rounded to float64 (``hi``), and the rounded
remainders ``lo`` = RN(w - hi), so that hi + lo carries each root to about
106 bits.  ``scale`` is 1, 1/d (``div`` = d > 0) or 1/sqrt(d) (``div`` = -d):
numpy's normalizations folded into the constants.

How (the same values mpmath gives, in a fraction of the time):

* Symmetry.  With g = gcd(8, N) and Q = 8 N / g, every root of order N is a
  root of order Q whose angle folds into the first octant [0, pi/4] by exact
  swaps and negations of cos and sin; those keep correct rounding, so only
  the octant table c_i = cos(2 pi i / Q), s_i = sin(2 pi i / Q),
  i = 0..Q/8, is computed (``octant``, cached per (Q, div)).
* Angle addition in integers.  i = a B + b, so e^(i theta_i) = U_a V_b with
  U_a = e^(2 pi i a B / Q) and V_b = e^(2 pi i b / Q): each table is the
  product of two tables about sqrt(Q/8) long, built the same way from
  smaller ones down to a few dozen seeds, which mpmath evaluates in interval
  arithmetic (rigorous enclosures).  Values are fixed-point integers of
  FRAC = 144 fractional bits held as 24-bit limbs in float64; a table product
  is one float64 GEMM per chunk whose outputs are the exact column sums of
  limb products (each below 14 * 2**48 < 2**53, exact in any summation order),
  then exact carry propagation.  The power-of-two-free part of ``scale``
  (``mant`` in (1/2, 1]) is one more factor of the first table; the power of
  two is applied to the rounded results, which commutes with rounding.
* Error bound (the proof).  Let every value carry an upper bound e (in units
  of 2**-FRAC) on the error of each of its two parts.  A seed is
  floor(a 2**FRAC) for the lower end a of mpmath's enclosure [a, b], so
  e = ceil(b 2**FRAC) - floor(a 2**FRAC).  For a product of U (bound eU) and
  V (bound eV), with |U|, |V| <= 1:
  Re(UV) - Re(U~V~) = dUr Vr - dUi Vi + U~r dVr - U~i dVi, at most
  sqrt(2) (eU + eV) (1 + 2**-100) < 1.5 (eU + eV); the columns p + q >= K + 2
  that are never formed weigh less than (K - 1)(1 + 2**-23) units in each
  of the two real products, and truncating a table after the carries (the
  column K + 1) less than one more: e(UV) <= 1.5 (eU + eV) + 2 K.
  ``_fixed_table`` carries these bounds through the recursion (for Q = 2**30
  the final E is below 2**-135 absolute).
* One correct rounding per part.  The final product's columns give the exact
  sum X~ = g0 + g1 + g2 + g3 of four float64 (g0 holds the bits down to
  2**-48, g1 down to 2**-96, ...).  With |X - X~| <= E, s1 = fl(g0 + g1) and
  its exact error r1 (TwoSum): hi = s1 is RN(X) when |r1| + g2 + g3 + E is
  below half the gap from s1 to its neighbours (a quarter of an ulp when s1
  is a power of two); likewise lo = s2 = fl(r1 + g2) is RN(X - hi) when
  |r2| + g3 + E is below half of its gap.  Every part that fails the test
  (probability about E / ulp(lo) ~ 2**-30 per value) is recomputed with
  mpmath interval arithmetic at doubling precision until both ends of the
  enclosure round alike (Ziv's strategy), so the rounding is certain, not
  probable.  Values that are exactly representable rationals (Niven: the
  octant has cos 0 = 1, sin 0 = 0 and sin pi/6 = 1/2, times a rational
  scale) never separate from a rounding boundary; they are rounded from
  Fractions instead.

tests/fft/test_twiddles.py checks hi and lo bit for bit against mpmath at 300
bits on fresh random samples and on the exact cases.
"""

import math
import threading
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np
from mpmath import libmp

LIMB = 24                        # bits per limb
K = 6                            # fractional limbs
FRAC = LIMB * K                  # fractional bits of every fixed-point value
SEED_MAX = 48                    # tables this short come straight from mpmath intervals
CHUNK = 1 << 13                  # products formed per GEMM (keeps the temporaries in cache)

_MPMATH = threading.Lock()       # mpmath's precision is global state


# ------------------------------------------------------------------ seeds --

def _floor_scaled(raw, shift, rnd):
    """floor or ceiling of a raw mpf times 2**shift, as a Python int."""
    return libmp.to_int(libmp.mpf_shift(raw, shift), rnd)


def _limbs(values):
    """Nonnegative fixed-point ints (< 2**(FRAC + 24)) -> float64 limbs (n, K + 1), limb 0 the integer part."""
    out = np.empty((len(values), K + 1))
    mask = (1 << LIMB) - 1
    for n, v in enumerate(values):
        for p in range(K, -1, -1):
            out[n, p] = v & mask
            v >>= LIMB
        if v:
            raise OverflowError("fixed-point value out of range")
    return out


def _seed_table(Q, step, count):
    """e^(2 pi i step k / Q), k < count (angles within [0, pi/4]): limbs (count, 2, K + 1) and
    the error bound in units of 2**-FRAC, from mpmath interval enclosures."""
    vals, err = [], 0
    with _MPMATH:
        iv = mpmath.iv
        old = iv.prec
        iv.prec = FRAC + 40
        try:
            for k in range(count):
                c, s = iv.cos_sin(iv.pi * (2 * step * k) / Q)
                for part in (c, s):
                    lo, hi = part._mpi_
                    v = max(_floor_scaled(lo, FRAC, "f"), 0)          # sin 0 = 0: [-tiny, 0]
                    err = max(err, _floor_scaled(hi, FRAC, "c") - v)
                    vals.append(v)
        finally:
            iv.prec = old
    return _limbs(vals).reshape(count, 2, K + 1), err


def _mant(div):
    """(mant, e, exact): scale = mant * 2**-e with mant in (1/2, 1] as a fixed-point int
    (floor), and whether that int is exact."""
    if div >= 1:
        e = div.bit_length() - 1
        q, r = divmod(1 << (e + FRAC), div)
        return q, e, r == 0
    d = -div
    e = (d.bit_length() - 1) // 2
    num = 1 << (2 * (e + FRAC))
    q = math.isqrt(num // d)                                   # floor(2**(e+FRAC) / sqrt(d)), exactly
    return q, e, q * q * d == num


# ---------------------------------------------------------------- products --

def _right_matrix(V):
    """The GEMM operand that turns the limbs of U (rows [Ur_0..Ur_K, Ui_0..Ui_K]) into the
    column sums of U V: shape (2 (K + 1), 2 (K + 2) B), columns ordered (part, s, b)."""
    B = V.shape[0]
    K1, S1 = K + 1, K + 2
    R = np.zeros((2, K1, 2, S1, B))
    for p in range(K1):
        for s in range(p, min(p + K1, S1)):
            q = s - p
            R[0, p, 0, s] = V[:, 0, q]           # Ur Vr  -> Re
            R[1, p, 0, s] = -V[:, 1, q]          # -Ui Vi -> Re
            R[0, p, 1, s] = V[:, 1, q]           # Ur Vi  -> Im
            R[1, p, 1, s] = V[:, 0, q]           # Ui Vr  -> Im
    return R.reshape(2 * K1, 2 * S1 * B)


def _columns(Urows, R, B):
    """Exact, carried column sums of U[a] V[b] for a block of rows of U: (rows, 2, K + 2, B);
    column s weighs 2**(-LIMB s), columns 1.. in [0, 2**LIMB) after the carries."""
    C = (Urows.reshape(len(Urows), -1) @ R).reshape(len(Urows), 2, K + 2, B)
    q = np.empty(C[:, :, 0].shape)
    for s in range(K + 1, 0, -1):                # floor division by 2**24 and carry: exact in float64
        np.multiply(C[:, :, s], 2.0 ** -LIMB, out=q)
        np.floor(q, out=q)
        C[:, :, s - 1] += q
        q *= 2.0 ** LIMB
        C[:, :, s] -= q
    return C


def _product_table(U, eU, V, eV, count):
    """The first ``count`` products U[a] V[b] (index a B + b), truncated to K fractional
    limbs: (limbs (count, 2, K + 1), error bound in units)."""
    B = V.shape[0]
    R = _right_matrix(V)
    out = np.empty((U.shape[0] * B, 2, K + 1))
    rows = max(1, CHUNK // B)
    for a0 in range(0, U.shape[0], rows):
        C = _columns(U[a0:a0 + rows], R, B)[:, :, :K + 1]           # drop column K + 1: < 1 unit
        out[a0 * B:(a0 + len(C)) * B] = C.transpose(0, 3, 1, 2).reshape(-1, 2, K + 1)
    return out[:count], math.ceil(1.5 * (eU + eV)) + 2 * K


def _split(count):
    """count = A B with B a power of two near sqrt(count), A = ceil(count / B)."""
    B = 1 << (((count - 1).bit_length() + 1) // 2)
    return -(-count // B), B


def _fixed_table(Q, step, count):
    """e^(2 pi i step k / Q) for k < count: limbs (count, 2, K + 1) and error bound (units)."""
    if count <= SEED_MAX:
        return _seed_table(Q, step, count)
    A, B = _split(count)
    V, eV = _fixed_table(Q, step, B)
    U, eU = _fixed_table(Q, step * B, A)
    return _product_table(U, eU, V, eV, count)


# ---------------------------------------------------------------- rounding --

def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _half_gap(x):
    """Half the distance from |x| to its nearest float64 neighbour, for normal x != 0 (a
    quarter ulp at powers of two, whose lower neighbour is closer): read off the bits."""
    b = x.view(np.int64) & 0x7FFFFFFFFFFFFFFF
    power_of_two = (b & ((1 << 52) - 1)) == 0
    return (((b >> 52) - 53 - power_of_two) << 52).view(np.float64)


def _round_columns(C, E):
    """(hi, lo, sure) from the carried columns C (..., K + 2, n) of values X~ with
    |X - X~| <= E (columns 1.. in [0, 2**24), so g3 < 2**-144)."""
    assert K == 6
    g0 = C[..., 0, :] + (C[..., 1, :] + C[..., 2, :] * 2.0 ** -24) * 2.0 ** -24     # exact: 49 bits
    g1 = (C[..., 3, :] + C[..., 4, :] * 2.0 ** -24) * 2.0 ** -72                  # exact: 48 bits
    g2 = (C[..., 5, :] + C[..., 6, :] * 2.0 ** -24) * 2.0 ** -120
    g3 = C[..., 7, :] * 2.0 ** -168                                                # exact, < 2**-144
    slack = 1 - 2.0 ** -50                       # covers the roundings of the tests' own sums
    s1 = g0 + g1                                 # Fast2Sum: g0 = 0 or g0 >= 2**-48 > g1 >= 0
    r1 = g1 - (s1 - g0)
    sure = np.abs(r1) + ((g2 + g3) + E) < _half_gap(s1) * slack
    s2, r2 = _two_sum(r1, g2)
    sure &= s2 != 0
    sure &= np.abs(r2 + g3) + E < _half_gap(s2) * slack
    return s1, s2, sure


# ---------------------------------------------------------------- fallback --

def _rational_times_scale(square, div):
    """sqrt(square) * scale as a Fraction when it is rational (square a Fraction >= 0), else None."""
    v2 = square / div ** 2 if div >= 1 else square / -div          # (value * scale)**2
    n, d = math.isqrt(v2.numerator), math.isqrt(v2.denominator)
    return Fraction(n, d) if n * n == v2.numerator and d * d == v2.denominator else None


def _round_fraction(f):
    """(RN(f), RN(f - RN(f))) for a Fraction f, exactly."""
    hi = float(f)                                  # Fraction -> float rounds to nearest (even)
    return hi, float(f - Fraction(hi))


def _ziv(Q, i, div, part):
    """(hi, lo) of part 0 (cos) or 1 (sin) of e^(2 pi i i / Q) * scale (not mant), from
    interval enclosures at doubling precision until both ends round alike."""
    prec = 2 * FRAC
    with _MPMATH:
        iv = mpmath.iv
        old = iv.prec
        try:
            while True:
                iv.prec = prec
                scale = 1 / iv.mpf(div) if div >= 1 else 1 / iv.sqrt(iv.mpf(-div))
                v = iv.cos_sin(iv.pi * (2 * i) / Q)[part] * scale
                a, b = (libmp.to_float(end, rnd="n") for end in v._mpi_)
                if a == b:
                    r = (v - a)._mpi_
                    lo = libmp.to_float(r[0], rnd="n")
                    if libmp.to_float(r[1], rnd="n") == lo:
                        return a, lo
                if prec > 1 << 16:
                    raise ArithmeticError(f"root {i}/{Q}: no separation from a rounding boundary")
                prec *= 2
        finally:
            iv.prec = old


def _exact_cases(Q, div):
    """(i, part, value) for the octant's values that are rational once scaled: the squares
    cos**2 and sin**2 are rational exactly where cos 2 theta is (Niven: 2 theta a multiple of
    pi/3 or pi/2, i.e. theta = 0, pi/6, pi/4 in the octant), and the scaled value is rational
    when its square is the square of a rational.  These never separate from a rounding
    boundary in floating point (1/2 is a float), so they are rounded from Fractions."""
    squares = [(0, 0, Fraction(1)), (0, 1, Fraction(0)), (Q // 8, 0, Fraction(1, 2)), (Q // 8, 1, Fraction(1, 2))]
    if Q % 12 == 0:
        squares += [(Q // 12, 0, Fraction(3, 4)), (Q // 12, 1, Fraction(1, 4))]
    cases = []
    for i, part, square in squares:
        v = _rational_times_scale(square, div)
        if v is not None:
            cases.append((i, part, v))
    return cases


# ------------------------------------------------------------------ tables --

_OCTANTS = {}
_OCTANTS_LOCK = threading.Lock()
OCTANTS_CACHED = 8               # octant tables kept (least recently used dropped)


def octant(Q, div=1):
    """(hi, lo), each (2, Q/8 + 1) float64: rows cos and sin of 2 pi i / Q times scale,
    i = 0..Q/8, each part correctly rounded and its remainder rounded (Q a multiple of 8).
    Cached per (Q, div)."""
    key = (Q, div)
    with _OCTANTS_LOCK:
        if key in _OCTANTS:
            _OCTANTS[key] = _OCTANTS.pop(key)
            return _OCTANTS[key]
    table = _octant(Q, div)
    with _OCTANTS_LOCK:
        _OCTANTS[key] = table
        while len(_OCTANTS) > OCTANTS_CACHED:
            del _OCTANTS[next(iter(_OCTANTS))]
    return table


def _octant(Q, div):
    if Q % 8 or Q < 8:
        raise ValueError(f"octant tables need a multiple of 8, got {Q}")
    if div == 0 or not isinstance(div, (int, np.integer)):
        raise ValueError(f"div must be a nonzero integer, got {div!r}")
    div = int(div)
    count = Q // 8 + 1
    A, B = _split(count)
    V, eV = _fixed_table(Q, 1, B)
    U, eU = _fixed_table(Q, B, A)
    m, e, exact = _mant(div)
    if m != 1 << FRAC:                     # fold the scale's mantissa into U
        mant = _limbs([m, 0]).reshape(1, 2, K + 1)
        U, eU = _product_table(U, eU, mant, 0 if exact else 1, U.shape[0])
    E = (math.ceil(1.5 * (eU + eV)) + 2 * K) * 2.0 ** -FRAC
    hi = np.empty((2, A * B))
    lo = np.empty((2, A * B))
    sure = np.empty((2, A * B), dtype=bool)
    R = _right_matrix(V)
    rows = max(1, CHUNK // B)

    def block(a0):
        C = _columns(U[a0:a0 + rows], R, B)              # (r, 2, K + 2, B), carried
        span = slice(a0 * B, (a0 + len(C)) * B)
        outs = [x[:, span].reshape(2, len(C), B).transpose(1, 0, 2) for x in (hi, lo, sure)]
        for out, value in zip(outs, _round_columns(C, E)):
            out[...] = value

    for a0 in range(0, A, rows):                         # (worker threads measured no faster:
        block(a0)                                        # BLAS threads serve the GEMMs)
    hi, lo, sure = hi[:, :count], lo[:, :count], sure[:, :count]
    if e:          # the power of two of the scale, exact on the rounded values (|values| > 2**-300)
        np.ldexp(hi, -e, out=hi)
        np.ldexp(lo, -e, out=lo)
    for i, part, v in _exact_cases(Q, div):
        hi[part, i], lo[part, i] = _round_fraction(v)
        sure[part, i] = True
    for part, i in zip(*np.nonzero(~sure)):
        hi[part, i], lo[part, i] = _ziv(Q, int(i), div, int(part))
    hi += 0.0                                            # no -0
    lo += 0.0
    return hi, lo


def _order(N):
    """(Q, M, s): the octant table's order Q = 8 N / gcd(8, N), its last index M = Q / 8,
    and the step s = 8 / gcd(8, N) of exponent j's position t = s j in [0, Q)."""
    g = math.gcd(8, N)
    return 8 * N // g, N // g, 8 // g


def _octant_signs(o):
    """(swap, neg_c, neg_s) of octant o (an int or an int array): whether cos and sin
    trade places (octants 1, 2, 5, 6) and which of them change sign."""
    return ((o + 1) & 2) != 0, (o >= 2) & (o <= 5), o >= 4


def _unfold(tables, o, rho, sign):
    """The roots in octants o at octant positions rho (arrays) from the octant tables
    (hi and/or lo): swaps and negations only, so each part stays correctly rounded."""
    swap, neg_c, neg_s = _octant_signs(o)
    out = []
    for table in tables:
        c, s = table[0][rho], table[1][rho]
        re = np.where(swap, s, c)
        im = np.where(swap, c, s)
        z = np.empty(rho.shape, dtype=np.complex128)
        z.real = np.where(neg_c, -re, re) + 0.0      # +0.0: a zero cos stays +0 (as ever)
        z.imag = sign * (np.where(neg_s, -im, im) + 0.0)
        out.append(z)
    return out


def roots_at(N, j, sign, div=1):
    """(hi, lo) complex128 arrays shaped like the integer array j: w_N^j = exp(sign 2 pi i j / N)
    times scale (see ``roots``), each part correctly rounded, and the rounded remainders."""
    Q, M, step = _order(N)
    h, l = octant(Q, div)
    t = (np.asarray(j, dtype=np.int64) % N) * step
    o = t // M
    r = t - o * M
    rho = np.where(o & 1, M - r, r)
    return _unfold((h, l), o, rho, sign)


def roots(N, sign, div=1):
    """complex128 (N,): exp(sign 2 pi i j / N) / d, j = 0..N-1, parts correctly rounded.

    ``div``: 1 (no scaling), a positive d (times 1/d), or -d (times 1/sqrt(d)):
    the normalizations of numpy.fft folded into the constants.
    """
    return _table(N, sign, div, 1)[0]


def root_parts(N, sign, div=1):
    """(hi, lo): hi = the rounded roots, lo = the rounded remainders (root - hi), j = 0..N-1.

    hi + lo carries each root to about 106 bits: the FFT uses both so that its
    constants add no rounding error of float64 size.
    """
    return _table(N, sign, div, 2)


@lru_cache(maxsize=16)
def _table(N, sign, div, parts):
    """The N roots, (hi,) or (hi, lo), built by octant slices: within octant o the
    positions rho run by a constant step (up, or down in odd octants), so each part is a
    strided view of the octant table, swapped and negated as a whole (_unfold's
    operations with o fixed: the same values, no index arrays over all N)."""
    Q, M, step = _order(N)
    tables = octant(Q, div)[:parts]
    out = [np.empty(N, dtype=np.complex128) for _ in range(parts)]
    for o in range(8):
        j0 = -(-o * M // step)                       # first j with t = step j in octant o
        j1 = min(N, -(-(o + 1) * M // step))
        if j1 <= j0:
            continue
        t0 = step * j0 - o * M
        n = j1 - j0
        last = t0 + (n - 1) * step                   # rho = t0 + step i (even o), M - that (odd)
        window = slice(t0, last + 1, step) if o % 2 == 0 else slice(M - last, M - t0 + 1, step)
        swap, neg_c, neg_s = _octant_signs(o)
        for dst, table in zip(out, tables):
            c, s = table[0][window], table[1][window]
            if o % 2:
                c, s = c[::-1], s[::-1]
            re, im = (s, c) if swap else (c, s)
            dst.real[j0:j1] = (-re if neg_c else re) + 0.0       # +0.0: a zero cos stays +0 (as _unfold)
            dst.imag[j0:j1] = sign * ((-im if neg_s else im) + 0.0)
    return tuple(out)


def dft_matrix(N, sign, div=1, part=0):
    """F[k, n] = w_N^(k n) / div: the length-N DFT as a matrix (complex128, N x N).

    part=0: the rounded entries; part=1: their rounded remainders.
    """
    w = root_parts(N, sign, div)[part]
    idx = np.outer(np.arange(N), np.arange(N)) % N
    return w[idx]


def stage2_matrices(N1, N2, sign, div=1, part=0):
    """G[k1, k2, n2] = w_N^(n2 (k1 + N1 k2)) / div, N = N1 N2: the twiddles folded in.

    Stage 2 of the six-step transform for output k = k1 + N1 k2 is
    X[k] = sum_n2 G[k1, k2, n2] Y[k1, n2]: one small matrix per row k1, so the
    twiddle scaling costs no rounding of its own.
    """
    N = N1 * N2
    w = root_parts(N, sign, div)[part]
    k1 = np.arange(N1)[:, None, None]
    k2 = np.arange(N2)[None, :, None]
    n2 = np.arange(N2)[None, None, :]
    return w[(n2 * (k1 + N1 * k2)) % N]
