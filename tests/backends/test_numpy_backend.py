"""The CPU backend's steps against Python-integer references."""

import numpy as np
import pytest

from ozaki import crt, reference
from ozaki.backends import numpy_backend
from tests import inputs


@pytest.mark.parametrize("nearest", [False, True])
@pytest.mark.parametrize("spread", [0, 40, 600])
def test_residues_are_those_of_the_scaled_integers(rng, nearest, spread):
    """residues(x) = sign(x) round_or_floor(|x| / 2**beta) mod p, for every modulus, from Python ints.

    Bottoms are drawn so that the digits range from 0 to far beyond 2**53 (shifts s > 24 take
    the integer path, the rest the float64 one); subnormals, zeros and all-ones mantissas included.
    """
    rows, k = 9, 31
    x = inputs.wide(rng, (rows, k), spread) if spread else inputs.normal(rng, (rows, k))
    x[0, :4] = [0.0, -0.0, 5e-324, -2.2250738585072014e-308]
    x[1] = np.nextafter(2.0 ** rng.integers(-30, 30, k), 0) * rng.choice([-1, 1], k)
    top = numpy_backend.split(x)[2].max(axis=1)           # exponent of the largest lsb in the row
    beta = top + rng.integers(-80, 60, rows)
    beta[2] = 0                                           # digits at the ties of p = 256 (128 mod 256)
    x[2, :5] = [128.0, 384.0, -128.0, 640.0, -2.0 ** 40 - 128.0]
    m = 49
    got = numpy_backend.residues(x, beta, None, m, nearest)
    ints = reference.scaled_integers(x, beta, 1, nearest)
    for i, p in enumerate(crt.moduli(m)):
        want = np.array([[crt.symmetric(v % p, p) for v in row] for row in ints])
        assert np.array_equal(got[i], want), p


def test_add_residues_every_pair():
    """(x + y) mod p, symmetric, for every pair of residues of every modulus, against Python ints."""
    from ozaki import crt
    m = 49
    ps = crt.moduli(m)
    lo = np.array([-(p // 2) for p in ps])
    x = np.zeros((m, 256, 256), dtype=np.int8)
    y = np.zeros((m, 256, 256), dtype=np.int8)
    for i, p in enumerate(ps):
        r = np.arange(p) + lo[i]                     # the whole symmetric range
        x[i, :p, :p] = r[:, None]
        y[i, :p, :p] = r[None, :]
    got = numpy_backend.add_residues(x, y, m)
    for i, p in enumerate(ps):
        h = p // 2
        want = [[(int(a) + int(b) + h) % p - h for b in y[i, 0, :p]] for a in x[i, :p, 0]]
        assert np.array_equal(got[i, :p, :p], np.array(want)), p


@pytest.mark.parametrize("N", [1, 2, 3, 8, 25, 64])
def test_zero_signs_shortcuts_agree_with_the_terms(rng, N):
    """zero_signs settles zeros by witnesses and by the closed form of one-sign zero rows
    before any term-by-term scan: on the FFT's terms (c2c, r2c, c2r rows of zeros of each
    sign, mixed signs, lone nonzero entries; sign +-1) its signs equal those of
    zero_terms_negative run on every zero part, and it leaves tiny rows and nonzero parts
    alone."""
    from ozaki.fft import specials
    rows = 60
    for kind in ("c2c", "r2c", "c2r"):
        data = inputs.zero_sign_rows(rng, kind, N, rows)
        if kind != "r2c":
            data.imag[15:30] = -data.imag[15:30]              # +0 real parts beside -0 imaginary ones
        views = specials._inputs_2d(data, kind, N)
        for sign in (-1, 1):
            for terms in specials._TERMS[kind]:
                used = [(views[p][0], views[p][1], ctype == "s", negated) for p, ctype, negated in terms]
                part = np.where(rng.random((rows, N)) < 0.8, rng.choice([0.0, -0.0], (rows, N)), 3.0)
                tiny = rng.random(rows) < 0.1
                got = part.copy()
                numpy_backend.zero_signs(got, tiny, used, N, sign)
                r, k = np.nonzero((part == 0) & ~tiny[:, None])
                want = part.copy()
                want[r, k] = np.where(numpy_backend.zero_terms_negative(used, r, k, N, sign), -0.0, 0.0)
                assert np.array_equal(got.view(np.int64), want.view(np.int64))
                assert (got[tiny].view(np.int64) == part[tiny].view(np.int64)).all()
