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


def _complex_rows(rng, k):
    """Joined complex rows [Re | Im] (2 k columns) for scan_rows' halves: zeros (+0 and -0),
    subnormals (the smallest, whose ceilings underflow to 1), exponents over +-1000, both
    parts of an entry just below the row's power of two (ceilings 2**5 + 2**5 = 64, the
    largest sum), the maximum in one half only, NaN/inf rows and sprinkled specials."""
    rows = []
    rows.append(np.zeros(2 * k))
    rows.append(np.where(rng.random(2 * k) < 0.5, -0.0, 0.0))
    rows.append(inputs.subnormal_heavy(rng, 2 * k))
    rows.append(np.full(2 * k, 5e-324) * rng.choice([-1, 1], 2 * k))
    rows.append(inputs.wide(rng, 2 * k, 1000))
    top = np.nextafter(2.0 ** rng.integers(-1070, 1024), 0)          # just below 2**e: ceiling 2**5
    rows.append(np.concatenate([np.full(k, top), np.full(k, -top)]))
    rows.append(np.concatenate([inputs.normal(rng, k) * 2.0 ** 1000, inputs.subnormal_heavy(rng, k)]))
    rows.append(np.concatenate([np.zeros(k), inputs.wide(rng, k, 40)]))
    rows.append(np.full(2 * k, np.nan))
    rows.append(np.concatenate([np.full(k, np.inf), -inputs.normal(rng, k)]))
    rows.append(np.concatenate([inputs.normal(rng, k), np.full(k, -np.inf)]))
    rows.append(np.full(2 * k, 1.7976931348623157e308))
    x = np.stack(rows + [inputs.sprinkle_specials(rng, inputs.wide(rng, 2 * k, 300), 0.2) for _ in range(6)])
    x[-1, 0] = np.nextafter(2.0, 0)                                   # a row whose largest ceilings add to 64
    x[-1, k] = -np.nextafter(2.0, 0)
    x[-1, np.isfinite(x[-1]) & (np.abs(x[-1]) >= 2.0)] = 1.0
    return x


@pytest.mark.parametrize("k", [1, 2, 7, 16, 33])
def test_scan_rows_halves(rng, k):
    """hat with ``halves`` (complex rows [Re | Im], ceil_bits = 5 as scheme.plan_accurate takes it)
    is the rows' 5-bit ceilings of each half added, hat[:, :k] + hat[:, k:] of the plain scan of
    the whole rows (one exponent per row), as int8 without wrapping: at most 2**6 = 64, reached;
    the other outputs those of the plain scan."""
    x = _complex_rows(rng, k)
    plain = numpy_backend.scan_rows(x, 5, hat=True)
    amax, flags, e, hat, sumsq = numpy_backend.scan_rows(x, 5, hat=True, halves=True)
    want = plain[3][:, :k].astype(np.int64) + plain[3][:, k:].astype(np.int64)
    assert hat.dtype == np.int8 and hat.shape == (x.shape[0], k)
    assert np.array_equal(hat.astype(np.int64), want)
    assert want.min() >= 0 and want.max() == 64
    assert plain[3].max() == 32 and (plain[3] >= 0).all()
    for got, ref in zip((amax, flags, e), plain[:3]):
        assert np.array_equal(got, ref)
    assert sumsq is None
    # the ceilings themselves, one entry at a time: max(ceil(|x| 2**e), 1) for finite nonzero x
    for r in range(x.shape[0]):
        for j in range(2 * k):
            v = x[r, j]
            c = 0 if v == 0 or not np.isfinite(v) else max(int(np.ceil(np.ldexp(abs(v), int(e[r])))), 1)
            assert plain[3][r, j] == c, (r, j)


def test_scan_rows_halves_combinations(rng):
    """halves with sum_squares or sum_ceilings raises ValueError (as cupy_backend's); halves
    without hat does nothing."""
    x = _complex_rows(rng, 5)
    for kw in ({"sum_squares": True}, {"sum_ceilings": True}, {"sum_squares": True, "hat": True}):
        with pytest.raises(ValueError, match="halves=True does not combine"):
            numpy_backend.scan_rows(x, 5, halves=True, **kw)
    for ceil_bits in (0, 5):
        got, bare = numpy_backend.scan_rows(x, ceil_bits, halves=True), numpy_backend.scan_rows(x, ceil_bits)
        for g, b in zip(got, bare):
            assert (g is None and b is None) or np.array_equal(g, b)


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
                numpy_backend.zero_signs([got], tiny, [used], N, sign)
                r, k = np.nonzero((part == 0) & ~tiny[:, None])
                want = part.copy()
                want[r, k] = np.where(numpy_backend.zero_terms_negative(used, r, k, N, sign), -0.0, 0.0)
                assert np.array_equal(got.view(np.int64), want.view(np.int64))
                assert (got[tiny].view(np.int64) == part[tiny].view(np.int64)).all()


def test_epilogue_of_no_rows():
    """A product stack with no rows (real and complex, a stack of matrices) gives outputs of no
    rows and its columns, and residuals of the same shape (the GPU's CRT_MMA test compares with it)."""
    P = np.zeros((16, 0, 64), dtype=np.int8)
    outs = numpy_backend.epilogue([(P,)], [0], 16, np.zeros(0, np.int64), np.zeros(64, np.int64), residual=True)
    assert [o.shape for o in outs] == [(0, 64), (0, 64)]
    outs = numpy_backend.epilogue([(P, P, P)], [0], 16, np.zeros(0, np.int64), np.zeros(2 * 64, np.int64), matrices=2)
    assert [o.shape for o in outs] == [(0, 64), (0, 64)]
