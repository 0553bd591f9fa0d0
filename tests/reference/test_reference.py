"""The references themselves, checked against mpmath at high precision."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ozaki import reference

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=8))
@settings(max_examples=200, deadline=None)
def test_exact_dot_matches_mpmath(pairs):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    with mpmath.workprec(5000):        # enough for every float64 product sum exactly
        s = mpmath.fsum(mpmath.mpf(x) * mpmath.mpf(y) for x, y in pairs)
        want = float(mpmath.mpf(s)) if s != 0 else None
    got = reference.exact_dot(a, b)
    if want is None:
        assert got == 0
    elif abs(s) >= mpmath.mpf(2) ** 1024 * (1 - mpmath.mpf(2) ** -54):
        assert math.isinf(got) and (got > 0) == (s > 0)
    elif abs(s) < mpmath.mpf(2) ** -1022:
        # mpmath's float() does not round subnormals once; compare to the exact value directly
        assert abs(mpmath.mpf(got) - s) <= mpmath.mpf(2) ** -1075
    else:
        assert got == want


def test_specials():
    nan, inf = math.nan, math.inf
    assert math.isnan(reference.exact_dot([inf, 1.0], [0.0, 1.0]))
    assert math.isnan(reference.exact_dot([inf, -inf], [1.0, 1.0]))
    assert reference.exact_dot([inf, 2.0], [1.0, -5.0]) == inf
    assert math.isnan(reference.exact_dot([nan], [0.0]))
    assert math.copysign(1, reference.exact_dot([-0.0, 0.0], [1.0, -0.0])) < 0
    assert math.copysign(1, reference.exact_dot([1.0, -1.0], [1.0, 1.0])) > 0
    assert math.copysign(1, reference.exact_dot([], [])) > 0


def test_scaled_integers_floor_magnitude():
    X = np.array([[2.75, -2.75, 0.5]])
    assert reference.scaled_integers(X, [0], 1) == [[2, -2, 0]]
    assert reference.scaled_integers(X, [-2], 1) == [[11, -11, 2]]


def test_metrics():
    A = np.array([[1.0, 2.0 ** -60]])
    B = np.array([[1.0], [1.0]])
    assert reference.dmmch_ratio(A @ B, A, B) > 0           # native drops 2**-60
    assert reference.dmmch_ratio(np.array([[1.0 + 2.0 ** -52]]), A, B) > 1
    assert reference.ulp_error(np.array([[1.0]]), A, B)[0] == 2.0 ** -60 / 2.0 ** -52


def test_dft_bins_and_l2():
    x = np.array([1.0, 2.0, 0.0, -1.0]) + 0j
    ref = reference.dft_bins(x, [0, 1, 2, 3])
    assert [complex(r) for r in ref] == [2, 1 - 3j, 0, 1 + 3j]
    assert reference.l2_error(np.fft.fft(x), ref, [0, 1, 2, 3]) < 1e-16
    y = np.fft.fft(x)
    y[1] += 1e-6
    assert 1e-8 < reference.l2_error(y, ref, [0, 1, 2, 3]) < 1e-6


def test_is_faithful():
    from ozaki.reference import is_faithful
    up, down = np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0)
    assert is_faithful(1.0, [1.0, 2.0 ** -60], [1.0, 1.0]) and is_faithful(up, [1.0, 2.0 ** -60], [1.0, 1.0])
    assert not is_faithful(down, [1.0, 2.0 ** -60], [1.0, 1.0])
    assert is_faithful(1.0, [1.0, 2.0 ** -60], [1.0, -1.0]) and is_faithful(down, [1.0, 2.0 ** -60], [1.0, -1.0])
    assert is_faithful(3.0, [1.0, 2.0], [1.0, 1.0]) and not is_faithful(np.nextafter(3.0, 4.0), [1.0, 2.0], [1.0, 1.0])
    assert is_faithful(np.inf, [1e308, 1e308], [10.0, 10.0])
    assert not is_faithful(np.finfo(float).max, [1e308, 1e308], [10.0, 10.0])
    assert is_faithful(np.nan, [np.inf], [0.0]) and not is_faithful(0.0, [np.inf], [0.0])


def _mp_value(N, j, dps=50):
    """cos and sin of 2 pi j / N straight from mpmath, at more digits than the table."""
    with mpmath.workdps(dps):
        r = mpmath.mpf(2 * j) / N
        return mpmath.cospi(r), mpmath.sinpi(r)


@pytest.mark.parametrize("N", [1, 2, 3, 5, 8, 12, 1024, 4096])
def test_twiddle_table_matches_mpmath(N, rng):
    cos_hi, cos_lo, sin_hi, sin_lo = reference.twiddle_table(N)
    assert all(a.shape == (N,) and a.dtype == np.float64 and not a.flags.writeable
               for a in (cos_hi, cos_lo, sin_hi, sin_lo))
    quadrants = [j for j in (0, N // 4, N // 2, 3 * N // 4) if 4 * j % N == 0]
    js = sorted(set(range(N)) if N <= 64 else set(rng.integers(0, N, 200).tolist()) | set(quadrants))
    with mpmath.workdps(50):
        for j in js:
            for hi, lo, want in zip((cos_hi[j], sin_hi[j]), (cos_lo[j], sin_lo[j]), _mp_value(N, j)):
                assert hi == float(want), (N, j)
                err = abs(mpmath.mpf(hi) + mpmath.mpf(lo) - want)
                assert err <= mpmath.mpf(2) ** -100 * max(abs(want), 1), (N, j, err)
    for j in quadrants:                        # the exact values: 0 and +-1, nothing in lo
        c, s = _mp_value(N, j)
        assert (cos_hi[j], sin_hi[j]) == (float(c), float(s)) and cos_lo[j] == sin_lo[j] == 0
        assert {abs(cos_hi[j]), abs(sin_hi[j])} == {0.0, 1.0}
        assert math.copysign(1, cos_hi[j] if cos_hi[j] == 0 else sin_hi[j]) > 0       # +0.0


def test_twiddle_table_memoized():
    assert reference.twiddle_table(40) is reference.twiddle_table(np.int64(40), 36)


def _signal(rng, N, kind):
    x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
    if kind == "wide":                         # entries scaled by 2**-40 .. 2**40
        x *= 2.0 ** rng.integers(-40, 41, N)
    elif kind == "cancel":                     # a large constant: every bin but 0 cancels it
        x = x * 2.0 ** -20 + (3.0 - 5.0j) * 2.0 ** 20
    elif kind == "real":
        x = x.real
    return x


@pytest.mark.parametrize("N", [1, 2, 7, 64, 1000, 4096])
@pytest.mark.parametrize("kind", ["uniform", "wide", "cancel", "real"])
def test_dft_bins_exact_sum_matches_mpmath(N, kind, rng):
    x = _signal(rng, N, kind)
    ks = sorted(set([0, N - 1] + rng.integers(0, N, 2).tolist()))
    scale = np.abs(x.real).sum() + np.abs(x.imag).sum()
    for sign in (-1, 1):
        got = reference.dft_bins_exact_sum(x, ks, sign)
        want = reference.dft_bins(x, ks, sign, dps=40)
        with mpmath.workdps(40):
            top = max(abs(w) for w in want)
            for k, g, w in zip(ks, got, want):
                assert isinstance(g, mpmath.mpc)
                err = abs(g - w)
                # the documented bound: 2**-104 sum |parts| (dps 40 adds ~1e-40 of it)
                assert err <= 2.0 ** -100 * scale, (N, kind, sign, k, err)
                if kind != "cancel":           # bins of their own size: relative to the largest
                    assert err <= 1e-28 * top, (N, kind, sign, k, err / top)


@pytest.mark.parametrize("N", [2, 64, 1000, 4096])
def test_dft_bins_exact_sum_exact_zeros(N, rng):
    """x of period N/2: the odd bins are 0; 8 | N (or N = 2): the table's halves are exact
    negatives, so every piece cancels and the sum is exactly 0."""
    half = rng.random(N // 2) - 0.5 + 1j * (rng.random(N // 2) - 0.5)
    x = np.concatenate([half, half]) * 2.0 ** rng.integers(-40, 41)
    ks = [1, N - 1] + [2 * int(k) + 1 for k in rng.integers(0, N // 2, 3)]
    for sign in (-1, 1):
        assert all(v == 0 for v in reference.dft_bins_exact_sum(x, ks, sign))
        with mpmath.workdps(40):
            assert all(abs(v) <= 1e-35 * np.abs(x).sum() for v in reference.dft_bins(x, ks, sign))


def test_dft_bins_exact_sum_small_cases():
    x = np.array([1.0, 2.0, 0.0, -1.0])
    assert [complex(v) for v in reference.dft_bins_exact_sum(x, [0, 1, 2, 3])] == [2, 1 - 3j, 0, 1 + 3j]
    assert [complex(v) for v in reference.dft_bins_exact_sum(x, [1, 3], sign=1)] == [1 + 3j, 1 - 3j]
    assert complex(reference.dft_bins_exact_sum([2.5 - 1j], [0])[0]) == 2.5 - 1j
    # a bin far below float64's resolution of its terms survives whole: 1 + 2**-80 - 1
    v = reference.dft_bins_exact_sum(np.array([1.0, 2.0 ** -80, -1.0]), [0])[0]
    with mpmath.workprec(200):
        assert v == mpmath.mpf(2) ** -80
    with pytest.raises(ValueError):
        reference.dft_bins_exact_sum(x, [0], sign=2)
