import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings, strategies as st

from ozaki.crt import kulisch


def rounded(x, e):
    """Python's correctly rounded float of x * 2**e (the independent reference)."""
    f = Fraction(x) * Fraction(2) ** e
    if f == 0:
        return 0.0
    try:
        return float(f)
    except OverflowError:
        return math.inf if f > 0 else -math.inf


def same(a, b):
    return a == b and math.copysign(1, a) == math.copysign(1, b) or (math.isnan(a) and math.isnan(b))


big_ints = st.integers(-2 ** 400, 2 ** 400) | st.builds(
    lambda b, s, d: s * ((1 << b) + d), st.integers(50, 300), st.sampled_from([1, -1]),
    st.integers(-3, 3))                       # just around powers of two: ties, carries


@given(st.lists(big_ints, min_size=1, max_size=8), st.integers(-1500, 1100))
@settings(max_examples=400, deadline=None)
def test_round_to_float64_matches_fractions(xs, e):
    L = kulisch.num_limbs(max(abs(x) for x in xs).bit_length() + 1)
    limbs = np.stack([kulisch.from_int(x, L) for x in xs], axis=1)
    exps = np.array([e - i for i in range(len(xs))])
    got = kulisch.round_to_float64(limbs, exps)
    for i, x in enumerate(xs):
        assert same(float(got[i]), rounded(x, e - i)), (x, e - i)


@given(st.integers(1, 2 ** 60), st.integers(-1140, -1000))
@settings(max_examples=200, deadline=None)
def test_round_subnormal_once(x, e):
    """Results in the subnormal range are rounded once at their own exponent."""
    L = kulisch.num_limbs(x.bit_length() + 1)
    got = kulisch.round_to_float64(kulisch.from_int(x, L).reshape(L, 1), np.array([e]))[0]
    assert same(float(got), rounded(x, e))


def test_ties_to_even_and_overflow():
    cases = [((1 << 53) + 1, 0), ((1 << 53) + 3, 0), ((1 << 54) + 2, 0), (3, -1076),
             (1, -1075), (3, -1075), ((1 << 53) - 1, 971), ((1 << 54) - 1, 970), (1, 1024), (-1, 1024)]
    for x, e in cases:
        L = kulisch.num_limbs(abs(x).bit_length() + 1)
        got = kulisch.round_to_float64(kulisch.from_int(x, L).reshape(L, 1), np.array([e]))[0]
        assert same(float(got), rounded(x, e)), (x, e)


@given(st.lists(st.integers(-2 ** 62 + 1, 2 ** 62 - 1), min_size=2, max_size=6))
def test_normalize_keeps_value(raw):
    limbs = np.array(raw, dtype=np.int64)
    value = kulisch.to_int(limbs)
    kulisch.normalize(limbs)
    assert kulisch.to_int(limbs) == value
    assert (limbs[:-1] >= 0).all() and (limbs[:-1] < 2 ** 32).all()


@given(st.integers(-2 ** 200, 2 ** 200), st.integers(0, 4))
def test_shift_and_negate(x, by):
    L = kulisch.num_limbs(abs(x).bit_length() + 1)
    limbs = kulisch.from_int(x, L).reshape(L, 1)
    assert kulisch.to_int(kulisch.negate(limbs.copy())[:, 0]) == -x
    assert kulisch.to_int(kulisch.shift_limbs(limbs, by, L + by)[:, 0]) == x << (32 * by)


def same32(a, b):
    return np.array(a, np.float32).view(np.uint32) == np.array(b, np.float32).view(np.uint32)


@given(st.lists(big_ints, min_size=1, max_size=8), st.integers(-450, 200))
@settings(max_examples=400, deadline=None)
def test_round_to_float32_matches_fractions(xs, e):
    """One rounding straight to float32 (its precision, subnormals from 2**-149, overflow at
    2**128), against reference.round_fraction32 (float32 neighbours compared exactly)."""
    from ozaki.reference import round_fraction32
    L = kulisch.num_limbs(max(abs(x) for x in xs).bit_length() + 1)
    limbs = np.stack([kulisch.from_int(x, L) for x in xs], axis=1)
    exps = np.array([e - i for i in range(len(xs))])
    got = kulisch.round_to(limbs, exps, np.float32)
    assert got.dtype == np.float32
    for i, x in enumerate(xs):
        assert same32(got[i], round_fraction32(Fraction(x) * Fraction(2) ** (e - i))), (x, e - i)


def test_float32_ties_subnormals_overflow():
    from ozaki.reference import round_fraction32
    cases = [((1 << 24) + 1, 0), ((1 << 24) + 3, 0), (((1 << 24) + 1) << 40 | 1, -40), (3, -151), (1, -150),
             (3, -150), (1, -151), ((1 << 24) - 1, 104), ((1 << 25) - 1, 103), (1, 128), (-1, 128),
             ((1 << 23) + 1, -149 - 23), (-((1 << 53) + 1), -60)]
    for x, e in cases:
        L = kulisch.num_limbs(abs(x).bit_length() + 1)
        got = kulisch.round_to(kulisch.from_int(x, L).reshape(L, 1), np.array([e]), np.float32)[0]
        assert same32(got, round_fraction32(Fraction(x) * Fraction(2) ** e)), (x, e)
    assert kulisch.rounding_format(np.float64) == (53, -1074)
    assert kulisch.rounding_format(np.float32) == (24, -149)
