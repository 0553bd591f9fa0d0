"""ozaki.fft.twiddles: the roots of unity bit for bit against mpmath (and Fractions for the
rational values), on fresh random lengths, scales and samples, and the fixed-point error
bound that the fast path's correct rounding rests on."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ozaki.fft import twiddles

PREC = 400        # reference bits: an irrational part would have to lie within 2**-400 of a
                  # rounding boundary to fool the reference


def _scale(div):
    return mpmath.mpf(1) / div if div > 0 else 1 / mpmath.sqrt(-div)


def _rational_value(j, N, div, part, approx):
    """The part (cos or sin of 2 pi j / N times the scale) as a Fraction when it is rational,
    else None: cos**2 = (1 + cos 4 pi t) / 2 and sin**2 = (1 - cos 4 pi t) / 2 with t = j / N
    are rational exactly when cos 4 pi t is (Niven: 0, +-1/2, +-1), and the scaled part is
    rational when its square is the square of a rational; ``approx`` gives the sign."""
    u = Fraction(2 * j % N, N)                                    # 4 pi t = 2 pi u
    c4 = {Fraction(0): 1, Fraction(1, 6): Fraction(1, 2), Fraction(1, 4): 0, Fraction(1, 3): Fraction(-1, 2),
          Fraction(1, 2): -1, Fraction(2, 3): Fraction(-1, 2), Fraction(3, 4): 0,
          Fraction(5, 6): Fraction(1, 2)}.get(u)
    if c4 is None:
        return None
    square = (1 + Fraction(c4)) / 2 if part == 0 else (1 - Fraction(c4)) / 2
    square = square / div ** 2 if div > 0 else square / -div
    n, d = math.isqrt(square.numerator), math.isqrt(square.denominator)
    if n * n != square.numerator or d * d != square.denominator:
        return None
    return Fraction(n, d) * (-1 if approx < 0 else 1)


def reference(N, j, sign, div):
    """(hi, lo) of w_N^j = exp(sign 2 pi i j / N) * scale, each part rounded from mpmath at
    PREC bits (or exactly, for the rational values)."""
    out = []
    with mpmath.workprec(PREC):
        w = mpmath.expjpi(2 * mpmath.mpf(j % N) / N) * _scale(div)
        for part, v in enumerate((w.real, sign * w.imag)):
            f = _rational_value(j, N, div, part, v)
            if f is not None:
                hi = float(f)
                out.append((hi, float(f - Fraction(hi))))
            else:
                hi = float(v)
                out.append((hi, float(v - hi)))
    return out


def check(N, js, sign, div):
    hi, lo = twiddles.roots_at(N, np.asarray(js), sign, div)
    for j, h, l in zip(js, hi, lo):
        (rh, rl), (ih, il) = reference(N, int(j), sign, div)
        assert (h.real, l.real) == (rh, rl), (N, j, sign, div, "real", h.real, rh, l.real, rl)
        assert (h.imag, l.imag) == (ih, il), (N, j, sign, div, "imag", h.imag, ih, l.imag, il)
        # zeros: cos parts +0 (as the mpmath tables always gave); sin parts sign * (+0)
        if h.real == 0:
            assert not math.copysign(1, h.real) < 0
        if h.imag == 0:
            assert math.copysign(1, h.imag) == sign


@pytest.mark.parametrize("N", [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 30, 36, 60, 64, 96, 100, 120, 360])
@pytest.mark.parametrize("div", [1, "N", "-N", -4, -9, 3])
def test_every_root_of_small_lengths(N, div):
    div = {"N": N, "-N": -N}.get(div, div)
    check(N, range(N), -1, div)
    check(N, range(N), 1, div)


@given(st.integers(1, 1 << 18), st.sampled_from([-1, 1]), st.sampled_from(["1", "N", "-N", "d"]),
       st.integers(1, 10 ** 6))
@settings(max_examples=30, deadline=None)
def test_random_lengths_and_scales(N, sign, which, d):
    div = {"1": 1, "N": N, "-N": -N, "d": d}[which]
    rng = np.random.default_rng(N + d)
    js = list({0, 1, N - 1, N // 2, N // 3, N // 4, N // 8, N // 12} | {int(j) for j in rng.integers(0, N, 12)})
    check(N, js, sign, div)


def test_long_tables_sampled(rng):
    """Fresh samples of the 2**24- and (2**24 + 2)-point constants (octant tables of 2**21 + 1
    and 2**26 + 1 entries: the deepest recursion) and the chirp length of a Bluestein prime."""
    for N, div in [(1 << 24, 1), (1 << 24, -(1 << 24)), ((1 << 24) + 2, 1), (2 * 4099, 4099)]:
        js = [int(j) for j in rng.integers(0, N, 40)] + [1, N - 1, N // 8 + 1]
        check(N, js, -1, div)


def test_root_parts_and_matrices_are_gathers():
    """The tables (octants as strided views, twiddles._table) are roots_at's gathers bit for
    bit, signed zeros included: every N up to 80 (steps 8, 4, 2, 1 into the octant table,
    odd octants read backwards) and some longer, both signs, three scales."""
    for N in list(range(1, 81)) + [96, 100, 360, 1000, 1026, 4097]:
        for sign in (-1, 1):
            for div in (1, -N, 3):
                hi, lo = twiddles.root_parts(N, sign, div)
                h2, l2 = twiddles.roots_at(N, np.arange(N), sign, div)
                assert np.array_equal(hi.view(np.int64), h2.view(np.int64)), (N, sign, div)
                assert np.array_equal(lo.view(np.int64), l2.view(np.int64)), (N, sign, div)
    G = twiddles.stage2_matrices(4, 8, -1)
    w = twiddles.roots(32, -1)
    k1, k2, n2 = np.meshgrid(np.arange(4), np.arange(8), np.arange(8), indexing="ij")
    assert np.array_equal(G, w[(n2 * (k1 + 4 * k2)) % 32])
    F = twiddles.dft_matrix(12, 1, 12, part=1)
    assert np.array_equal(F, twiddles.root_parts(12, 1, 12)[1][np.outer(np.arange(12), np.arange(12)) % 12])


def test_fixed_point_error_bound(rng):
    """The proof's bound: the unrounded fixed-point values X~ lie within E of the true
    cos/sin (checked exactly, X~ as a Fraction against mpmath), and the bound is tight
    enough to decide almost every rounding."""
    Q = 1 << 20
    count = Q // 8 + 1
    A, B = twiddles._split(count)
    V, eV = twiddles._fixed_table(Q, 1, B)
    U, eU = twiddles._fixed_table(Q, B, A)
    E_units = math.ceil(1.5 * (eU + eV)) + 2 * twiddles.K
    assert E_units < 2 ** 10                         # E < 2**-134
    R = twiddles._right_matrix(V)
    # the bound decides almost every rounding (the rest go to the slow mpmath fallback)
    C = twiddles._columns(U[:64], R, B)
    assert twiddles._round_columns(C, E_units * 2.0 ** -twiddles.FRAC)[2].mean() > 1 - 1e-4
    rows = [int(a) for a in rng.integers(0, A, 3)]
    with mpmath.workprec(PREC):
        for a in rows:
            C = twiddles._columns(U[a:a + 1], R, B)[0]                    # (2, K + 2, B)
            for b in [int(b) for b in rng.integers(0, B, 20)]:
                i = a * B + b
                exact = mpmath.expjpi(2 * mpmath.mpf(i) / Q)
                for part, v in enumerate((exact.real, exact.imag)):
                    approx = sum(Fraction(int(C[part, s, b])) / 2 ** (24 * s) for s in range(twiddles.K + 2))
                    err = abs(mpmath.mpf(approx.numerator) / approx.denominator - v)
                    assert err <= mpmath.mpf(E_units) * mpmath.mpf(2) ** -twiddles.FRAC, (i, part)


def test_fallback_decides_every_rounding(monkeypatch):
    """With the fast path told that its error bound is huge, every value goes through the
    mpmath-interval fallback (Ziv): the results must not change."""
    fast = twiddles._octant(4000, -4000)
    monkeypatch.setattr(twiddles, "_round_columns", _pessimist(twiddles._round_columns))
    slow = twiddles._octant(4000, -4000)
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def _pessimist(round_columns):
    def wrapped(C, E):
        hi, lo, sure = round_columns(C, E)
        return hi, lo, np.zeros_like(sure)
    return wrapped


def test_exact_values():
    """The rational parts have remainder 0 exactly (mpmath at any precision leaves a tiny
    nonzero one): 1/2 at pi/6, and with ortho scales sqrt(3)/2 / sqrt(3) and sqrt(2)/2 / sqrt(8)."""
    for N, div, j, part, value in [(12, 1, 1, 1, Fraction(1, 2)), (24, 3, 2, 1, Fraction(1, 6)),
                                   (3, -3, 1, 1, Fraction(1, 2)), (8, -8, 1, 0, Fraction(1, 4)),
                                   (96, -9, 8, 1, Fraction(1, 6)), (36, 36, 3, 1, Fraction(1, 72))]:
        hi, lo = twiddles.root_parts(N, 1, div)
        h, l = (hi[j].real, lo[j].real) if part == 0 else (hi[j].imag, lo[j].imag)
        assert h == float(value) and l == float(value - Fraction(float(value))), (N, div, j)


def test_errors():
    with pytest.raises(ValueError, match="multiple of 8"):
        twiddles.octant(12)
    with pytest.raises(ValueError, match="nonzero integer"):
        twiddles.octant(16, 0)
