"""IEEE specials and signed zeros of the transforms, against a brute-force reference: every
output part is the IEEE sum (Python floats, left to right) of its terms x_n * const, the
constants' parts from numpy's cos/sin with the exact zeros (w = +-1, +-i) left out, as in
numpy's butterflies; and against numpy itself where its butterflies give the same."""

import math
from functools import reduce

import numpy as np
import pytest

import ozaki.fft as of


def _parts(N, sign):
    """cos and sign * sin of 2 pi k n / N as (N, N) float arrays, exact zeros where the root
    is +-1 or +-i (the float values there are below 1e-15; every other part is above 1e-7)."""
    j = np.outer(np.arange(N), np.arange(N)) % N
    c = np.cos(2 * np.pi * j / N)
    s = sign * np.sin(2 * np.pi * j / N)
    c[np.abs(c) < 1e-12] = 0.0
    s[np.abs(s) < 1e-12] = 0.0
    return c, s


def _ieee_sum(terms):
    return reduce(lambda a, b: a + b, terms) if terms else 0.0


def reference(x, kind, N, sign):
    """The IEEE sums of the exact terms (their magnitudes matter only through the specials'
    and zeros' signs, so the constants' rounding does not)."""
    c, s = _parts(N, sign)
    if kind == "c2r":
        m = N // 2 + 1
        out = []
        for n in range(N):
            terms = [float(x[k].real) * c[k, n] for k in range(m) if c[k, n] != 0]
            terms += [-(float(x[k].imag) * s[k, n]) for k in range(1, (N + 1) // 2) if s[k, n] != 0]
            out.append(_ieee_sum(terms))
        return np.array(out)
    xr = np.asarray(x).real.astype(float)
    xi = np.asarray(x).imag.astype(float) if kind == "c2c" else None
    width = N if kind == "c2c" else N // 2 + 1
    out = np.empty(width, complex)
    for k in range(width):
        re = [xr[n] * c[k, n] for n in range(N) if c[k, n] != 0]
        im = [xr[n] * s[k, n] for n in range(N) if s[k, n] != 0]
        if xi is not None:
            re += [-(xi[n] * s[k, n]) for n in range(N) if s[k, n] != 0]
            im += [xi[n] * c[k, n] for n in range(N) if c[k, n] != 0]
        out[k] = complex(_ieee_sum(re), 0)
        out.imag[k] = _ieee_sum(im)
    return out


def same_specials(got, want):
    """NaN where the reference is NaN, the same infinities, and (where the reference is zero)
    the same sign of zero; finite nonzero values are not compared here."""
    for g, w in zip(np.ravel(got).view(float) if np.iscomplexobj(got) else got,
                    np.ravel(want).view(float) if np.iscomplexobj(want) else want):
        if math.isnan(w):
            assert math.isnan(g)
        elif math.isinf(w):
            assert g == w
        elif w == 0 and g == 0:
            assert math.copysign(1, g) == math.copysign(1, w)


@pytest.mark.parametrize("N", [1, 2, 3, 4, 5, 8, 12, 16, 64, 100, 331, 480])
def test_infinities_and_nans(rng, N):
    for trial in range(3):
        x = rng.standard_normal(N) + 1j * rng.standard_normal(N)
        for _ in range(1 + trial):
            where = rng.integers(0, N)
            value = [np.inf, -np.inf, np.nan][rng.integers(0, 3)]
            if rng.integers(0, 2):
                x.real[where] = value
            else:
                x.imag[where] = value
        same_specials(of.fft(x), reference(x, "c2c", N, -1))
        same_specials(of.ifft(x, norm="ortho"), reference(x, "c2c", N, 1))
        r = x.real.copy()
        same_specials(of.rfft(r), reference(r, "r2c", N, -1))
        same_specials(of.irfft(x[:N // 2 + 1], N), reference(x[:N // 2 + 1], "c2r", N, 1))


def test_one_inf_as_numpy():
    """inf at DC (not NaN), as numpy's butterflies give it (numpy's own Bluestein, for prime
    lengths, gives NaN there, and its radix-3 and -5 butterflies give NaN at other bins where
    the exact sums are finite: numpy is matched at DC, the reference everywhere); the DC's
    imaginary part is finite (exactly 0 where the plan is one product; within 2**-100 of the
    terms otherwise)."""
    for N in (4, 5, 8, 30, 64, 331, 480):
        x = np.arange(1.0, N + 1)
        x[N // 3] = np.inf
        got, want = of.fft(x), np.fft.fft(x)
        assert got[0].real == np.inf and abs(got[0].imag) < 1e-20 * N * N
        if N <= 64:
            assert want[0] == complex(np.inf, 0) and got[0] == complex(np.inf, 0)
        if N in (4, 5, 8):                        # lengths where numpy's butterflies agree
            assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(np.isnan(got), np.isnan(want))
        same_specials(got, reference(x, "c2c", N, -1))


def test_signed_zeros_as_numpy():
    for x in ([-0., -0.], [-0.], [-0., -0., -0.], [0., -0.]):
        x = np.array(x)
        for fn in ("fft", "rfft"):
            got, want = getattr(of, fn)(x), getattr(np.fft, fn)(x)
            assert np.array_equal(np.signbit(got.view(float)), np.signbit(want.view(float))), (fn, x, got, want)


@pytest.mark.parametrize("N", [1, 2, 3, 4, 6, 7, 8, 12])
def test_zero_rows_mixed_signs(rng, N):
    """Rows of zeros with random signs (the adversarial case: every output checked term by term)."""
    for _ in range(6):
        x = np.zeros(N, complex)
        x.real = np.where(rng.integers(0, 2, N), -0.0, 0.0)
        x.imag = np.where(rng.integers(0, 2, N), -0.0, 0.0)
        same_specials(of.fft(x), reference(x, "c2c", N, -1))
        same_specials(of.ifft(x), reference(x, "c2c", N, 1))
        same_specials(of.rfft(x.real), reference(x.real, "r2c", N, -1))
        h = x[:N // 2 + 1]
        same_specials(of.irfft(h, N), reference(h, "c2r", N, 1))


@pytest.mark.parametrize("N", [16, 100, 331, 480])
def test_zero_rows_uniform_signs_in_batches(rng, N):
    """Batches (few and many rows) mixing ordinary rows with uniform-sign zero rows."""
    for rows in (3, 20):
        x = rng.standard_normal((rows, N)) + 1j * rng.standard_normal((rows, N))
        picks = rng.choice(rows, 2, replace=False)
        x[picks[0]] = complex(-0.0, -0.0)
        x[picks[1]].real = -0.0
        x[picks[1]].imag = 0.0
        got = of.fft(x)
        for r in picks:
            same_specials(got[r], reference(x[r], "c2c", N, -1))
        others = [r for r in range(rows) if r not in picks]
        assert np.allclose(got[others], np.fft.fft(x[others]), rtol=1e-12, atol=1e-12 * N)


def test_tiny_rows_keep_the_products_zero_signs():
    """Rows with entries below specials.TINY keep the zero signs their products give (the
    sign rule of the exact sums, applied by the products there): an all -0 imaginary part
    gives -0 at DC as numpy does, and as the same row scaled out of the tiny range gives."""
    x = np.full(64, 1e-300 + 0j)
    x.imag = -0.0
    big = x.copy()
    big.real *= 2.0 ** 600
    assert np.signbit(of.fft(x).imag[0]) and np.signbit(of.fft(big).imag[0])
    assert np.signbit(np.fft.fft(x).imag[0])

