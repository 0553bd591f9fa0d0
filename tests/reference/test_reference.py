"""The references themselves, checked against mpmath at high precision."""

import math

import mpmath
import numpy as np
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
