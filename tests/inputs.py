"""Input families for the tests: random, wide-exponent, adversarial."""

import numpy as np


def normal(rng, shape):
    return rng.standard_normal(shape)


def wide(rng, shape, spread):
    """N(0,1) times 2**U{-spread..spread}: exponents over a 2*spread range."""
    return rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape)).astype(float)


def phi(rng, shape, p):
    """GEMMul8's test matrices: (U(0,1) - 0.5) * exp(p * N(0,1))."""
    return (rng.random(shape) - 0.5) * np.exp(p * rng.standard_normal(shape))


def residue_rows(rng, rows=37, k=203):
    """(x, beta) for the residue kernel's tests (kernels/residues.cu picks a way per group
    of eight columns by the group's largest shift s over the bottom beta): wide
    exponents, zeros, subnormals and inf (row 0), all-ones mantissas (row 1), s > 76 (row
    2: the two-step path), s <= 24 at the row's largest (row 3: three pieces), 24 < s <=
    76 (row 4: five pieces), full mantissas at s = 30..76 over beta = 0 (row 5); random
    bottoms in the other rows.  k = 203 is not a multiple of the groups."""
    from ozaki.backends import numpy_backend
    x = wide(rng, (rows, k), 300)
    x[0, :5] = [0.0, -0.0, 5e-324, -2.2250738585072014e-308, np.inf]
    x[1] = np.nextafter(2.0 ** rng.integers(-40, 40, k), 0) * rng.choice([-1, 1], k)
    beta = rng.integers(-1100, 40, rows)
    beta[2] = -60
    e = numpy_backend.split(x)[2]
    beta[3] = e[3].max()
    beta[4] = e[4].max() - 76
    x[5] = np.ldexp(rng.integers(2 ** 52, 2 ** 53, k).astype(np.float64), rng.integers(30, 77, k)) \
        * rng.choice([-1, 1], k)
    beta[5] = 0
    return x, beta


def bit_range_rows(rng, shape):
    """Rows for exact mode's per-row bit ranges (row_bits): the whole exponent range,
    subnormals, signed zeros, NaN and inf; with entries, row 0 all zeros and row 1 (mod the
    rows) all NaN (no nonzero / nothing finite)."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-1100, 1000, shape))
    sub = rng.random(shape) < 0.1
    x[sub] = 5e-324 * rng.integers(1, 1 << 20, shape)[sub]
    x[rng.random(shape) < 0.1] = -0.0
    x[rng.random(shape) < 0.05] = np.inf
    x[rng.random(shape) < 0.05] = np.nan
    if shape[1]:
        x[0] = 0.0
        x[1 % shape[0]] = np.nan
    return x


def subnormal_heavy(rng, shape):
    x = rng.standard_normal(shape) * 2.0 ** -1060
    x[rng.random(shape) < 0.3] = rng.standard_normal() * 2.0 ** -1022
    return x


def huge(rng, shape):
    """Entries near the top of the range: products overflow float64 unless cancelled exactly."""
    return rng.standard_normal(shape) * 2.0 ** 1020


def cancelling(rng, m, k, n):
    """A @ B whose terms cancel: B's columns pair +x and -x against duplicated A columns."""
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-30, 30, (m, k)))
    A[:, k // 2:2 * (k // 2)] = A[:, :k // 2]
    B = rng.standard_normal((k, n))
    B[k // 2:2 * (k // 2)] = -B[:k // 2]
    B[-1] *= 2.0 ** -60
    return A, B


def sprinkle_zeros(rng, x, fraction=0.3):
    x = x.copy()
    mask = rng.random(x.shape) < fraction
    x[mask] = np.where(rng.random(mask.sum()) < 0.5, 0.0, -0.0)
    return x


def ceiling_rows(rng, shape):
    """Rows for the ceilings c = ceil(|x| 2**e): the whole exponent range (rows whose
    maximum is subnormal, where 2**e is past double's range, and rows up to 2**1024, where
    the smaller entries' |x| 2**e underflow), subnormals, signed zeros, NaN and inf, and
    entries exactly at powers of two and just above them (the ceilings' edges)."""
    rows, k = shape
    x = bit_range_rows(rng, shape)
    if k:
        x[2 % rows] = 5e-324 * rng.integers(-(1 << 20), 1 << 20, k)        # subnormal maxima
        x[3 % rows] = np.ldexp(1.0, 1023) * rng.uniform(-1.99, 1.99, k)
        x[3 % rows, ::3] = 5e-324                                            # underflow under 2**1024's scale
        x[4 % rows] = np.ldexp(rng.choice([1.0, -1.0], k), rng.integers(-40, 40, k))
        x[5 % rows] = np.nextafter(x[4 % rows], np.inf)
    return x


def sprinkle_specials(rng, x, fraction=0.05):
    x = x.copy()
    mask = rng.random(x.shape) < fraction
    x[mask] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], mask.sum())
    return x


def symmetric_residues(x, ps):
    """x mod p in the residues' range [-floor(p/2), p - 1 - floor(p/2)], the moduli ps
    broadcast against x (object arithmetic: exact for any integers)."""
    ps = np.asarray(ps, dtype=object)
    return (np.asarray(x, dtype=object) + ps // 2) % ps - ps // 2


def zero_sign_rows(rng, kind, N, rows, lone=(-1.5, 2.0)):
    """Input rows of an FFT of ``kind`` ("c2c", "r2c", "c2r": N // 2 + 1 entries, else N)
    for the sign rule of its zero parts: zeros of random signs, the first quarter of the
    rows -0, the second +0, and from three quarters on one nonzero entry a row (drawn from
    ``lone``), in every part; complex, real for r2c."""
    length = N // 2 + 1 if kind == "c2r" else N
    q = rows // 4
    parts = [np.where(rng.random((rows, length)) < 0.5, -0.0, 0.0) for _ in range(2)]
    for p in parts:
        p[:q], p[q:2 * q] = -0.0, 0.0
        pick = np.arange(rows - q, rows)
        p[pick, rng.integers(0, length, len(pick))] = rng.choice(lone, len(pick))
    if kind == "r2c":
        return parts[0]
    data = np.empty((rows, length), dtype=np.complex128)
    data.real, data.imag = parts                          # the zeros' signs as drawn
    return data
