"""ozaki.fft: numpy.fft conventions, accuracy against an mpmath DFT, the scipy.fft backend."""

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki.fft as of
from ozaki.fft import twiddles
from ozaki.reference import dft_bins as mp_dft_bins, dft_bins_exact_sum, l2_error


@pytest.mark.parametrize("N, rows", [(N, 1) for N in (16, 64, 256, 1024, 4096, 12, 100, 360, 1000, 97, 331, 480,
                                                      502, 509)]
                         + [(N, 20) for N in (16, 64, 256, 1024, 12, 100, 360, 1000, 97, 331, 480, 502, 509)])
@pytest.mark.parametrize("kind", ["uniform", "impulse", "wide"])
def test_accuracy_never_worse_than_numpy(rng, N, kind, rows):
    """Single transforms and batches (their plans differ: six-step or Bluestein for one row of
    some lengths, direct products for batches): L2 against an mpmath DFT on sampled bins."""
    if kind == "uniform":
        x = rng.random((rows, N)) - 0.5 + 1j * (rng.random((rows, N)) - 0.5)
    elif kind == "impulse":
        x = np.zeros((rows, N), complex)
        x[:, rng.integers(0, N)] = 1.0 + 0.5j
        x[:, rng.integers(0, N)] += 1e-3
    else:
        x = (rng.random((rows, N)) - 0.5) * np.exp2(rng.integers(-40, 40, (rows, N))) + 0j
    ks = sorted({0, 1, N - 1, N // 2} | {int(k) for k in rng.integers(0, N, 20)})
    ours_all, native_all = of.fft(x), np.fft.fft(x)
    for r in {0, rows - 1}:
        ref = mp_dft_bins(x[r], ks)
        ours = l2_error(ours_all[r], ref, ks)
        native = l2_error(native_all[r], ref, ks)
        assert ours <= max(native, 1e-17), (ours, native)
        if kind == "uniform":
            assert ours <= 1.0e-16


@pytest.mark.parametrize("N", [30, 100, 398, 509, 1024])
@pytest.mark.parametrize("rows", [1, 20])
def test_real_transforms_accuracy(rng, N, rows):
    """rfft (real products where direct) and irfft (the Hermitian real product, or the c2c
    transform of the extended spectrum) against mpmath sums."""
    import mpmath
    x = rng.random((rows, N)) - 0.5
    ks = sorted({0, 1, N // 2} | {int(k) for k in rng.integers(0, N // 2 + 1, 10)})
    ref = mp_dft_bins(x[0], ks)
    assert l2_error(of.rfft(x)[0], ref, ks) <= max(l2_error(np.fft.rfft(x)[0], ref, ks), 1e-16)
    X = np.fft.rfft(x)
    full = np.concatenate([X[0], np.conj(X[0, 1:(N + 1) // 2][::-1])])
    ns = sorted({0, 1, N - 1} | {int(n) for n in rng.integers(0, N, 10)})
    with mpmath.workdps(40):
        ref = [v / N for v in mp_dft_bins(full, ns, sign=1)]
    assert l2_error(of.irfft(X, N)[0], ref, ns) <= max(l2_error(np.fft.irfft(X, N)[0], ref, ns), 1e-16)


def test_blocks_give_the_batch_bits(rng):
    """ozaki.dask's contract: blocks of at least FOLD_MIN_ROWS rows, or lengths up to
    SMALL_DIRECT, give the bits of the whole batch."""
    rows = of.FOLD_MIN_ROWS
    for N in (48, 200, 300, 480):
        x = rng.standard_normal((2 * rows + 3, N)) + 1j * rng.standard_normal((2 * rows + 3, N))
        whole = of.fft(x)
        parts = np.concatenate([of.fft(x[:rows + 1]), of.fft(x[rows + 1:])])
        assert np.array_equal(whole.view(np.int64), parts.view(np.int64))
    small = rng.standard_normal((5, of.SMALL_DIRECT))
    assert np.array_equal(of.rfft(small)[2:3].view(np.int64), of.rfft(small[2:3]).view(np.int64))


def test_roundtrip(rng):
    for N in (64, 1000, 4096):
        x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
        err = np.linalg.norm(of.ifft(of.fft(x)) - x) / np.linalg.norm(x)
        native = np.linalg.norm(np.fft.ifft(np.fft.fft(x)) - x) / np.linalg.norm(x)
        assert err <= max(native, 1e-16)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_numpy_conventions_1d(rng, norm):
    x = rng.standard_normal((3, 40)) + 1j * rng.standard_normal((3, 40))
    r = rng.standard_normal((5, 24))
    cases = [(of.fft(x, norm=norm), np.fft.fft(x, norm=norm)),
             (of.ifft(x, norm=norm), np.fft.ifft(x, norm=norm)),
             (of.fft(x, n=50, axis=0, norm=norm), np.fft.fft(x, n=50, axis=0, norm=norm)),
             (of.fft(x, n=17, norm=norm), np.fft.fft(x, n=17, norm=norm)),
             (of.rfft(r, norm=norm), np.fft.rfft(r, norm=norm)),
             (of.rfft(r, n=31, axis=0, norm=norm), np.fft.rfft(r, n=31, axis=0, norm=norm)),
             (of.irfft(x, norm=norm), np.fft.irfft(x, norm=norm)),
             (of.irfft(x, n=45, norm=norm), np.fft.irfft(x, n=45, norm=norm)),
             (of.irfft(x, n=12, axis=0, norm=norm), np.fft.irfft(x, n=12, axis=0, norm=norm))]
    for got, want in cases:
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_numpy_conventions_nd(rng, norm):
    x = rng.standard_normal((4, 6, 10)) + 1j * rng.standard_normal((4, 6, 10))
    r = rng.standard_normal((4, 6, 10))
    cases = [(of.fft2(x, norm=norm), np.fft.fft2(x, norm=norm)),
             (of.ifft2(x, s=(5, 8), norm=norm), np.fft.ifft2(x, s=(5, 8), norm=norm)),
             (of.fftn(x, norm=norm), np.fft.fftn(x, norm=norm)),
             (of.fftn(x, axes=(0, 2), norm=norm), np.fft.fftn(x, axes=(0, 2), norm=norm)),
             (of.ifftn(x, s=(3, 7), axes=(1, 0), norm=norm), np.fft.ifftn(x, s=(3, 7), axes=(1, 0), norm=norm)),
             (of.rfftn(r, norm=norm), np.fft.rfftn(r, norm=norm)),
             (of.rfftn(r, s=(5, 9), axes=(1, 2), norm=norm), np.fft.rfftn(r, s=(5, 9), axes=(1, 2), norm=norm)),
             (of.irfftn(x, norm=norm), np.fft.irfftn(x, norm=norm)),
             (of.irfftn(x, s=(4, 6, 9), axes=(0, 1, 2), norm=norm),
              np.fft.irfftn(x, s=(4, 6, 9), axes=(0, 1, 2), norm=norm))]
    for got, want in cases:
        assert got.shape == want.shape
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_errors():
    with pytest.raises(ValueError, match="Invalid number"):
        of.fft(np.ones(4), n=0)
    with pytest.raises(ValueError, match="norm"):
        of.fft(np.ones(4), norm="sideways")
    with pytest.raises(ValueError, match="out of bounds"):
        of.fft(np.ones(4), axis=1)
    with pytest.raises(TypeError, match="real"):
        of.rfft(np.ones(4, complex))
    with pytest.raises(ValueError, match="different lengths"):
        of.fftn(np.ones((2, 2)), s=(2,), axes=(0, 1))
    assert [of.algorithm(n) for n in (256, 4096 * 16, 4093, 4099)] == ["direct", "six-step", "direct", "bluestein"]
    assert [of.algorithm(n, rows=1) for n in (48, 256, 509)] == ["direct", "six-step", "bluestein"]


def test_twiddles_correctly_rounded():
    """Every root is mpmath's value at 300 bits, rounded once (0, +-1, +-i exactly)."""
    for N, div in [(8, 1), (24, 1), (96, 96), (1000, -1000), (1024, 1), (12, 12)]:
        w = twiddles.roots(N, -1, div)
        with mpmath.workprec(300):
            scale = 1 / mpmath.sqrt(-div) if div < 0 else mpmath.mpf(1) / div
            for j in range(N):
                c = mpmath.cos(2 * mpmath.pi * j / N) * scale
                s = -mpmath.sin(2 * mpmath.pi * j / N) * scale
                c = 0.0 if abs(c) < 1e-80 else float(c)
                s = 0.0 if abs(s) < 1e-80 else float(s)
                assert (w[j].real, w[j].imag) == (c, s), (N, j)


def test_stage2_matrices_are_roots():
    G = twiddles.stage2_matrices(4, 8, -1)
    w = twiddles.roots(32, -1)
    for k1 in range(4):
        for k2 in range(8):
            for n2 in range(8):
                assert G[k1, k2, n2] == w[(n2 * (k1 + 4 * k2)) % 32]


def test_scipy_backend(rng):
    scipy_fft = pytest.importorskip("scipy.fft")
    x = rng.standard_normal(64) + 1j * rng.standard_normal(64)
    with scipy_fft.set_backend(of):
        got = scipy_fft.fft(x)
        got_r = scipy_fft.irfft(x[:33], 64)
    assert np.array_equal(got, of.fft(x))
    assert np.array_equal(got_r, of.irfft(x[:33], 64))
    assert of.__ua_function__(scipy_fft.dct, (x.real,), {}) is NotImplemented


@given(st.integers(1, 300), st.sampled_from([None, "ortho", "forward"]))
@settings(max_examples=25, deadline=None)
def test_property_matches_numpy(n, norm):
    x = np.random.default_rng(n).standard_normal(n) + 0.5j
    assert np.allclose(of.fft(x, norm=norm), np.fft.fft(x, norm=norm), rtol=1e-12, atol=1e-12 * n)


def test_twiddle_remainders():
    """hi + lo carries each root to ~106 bits; lo is the rounded remainder."""
    hi, lo = twiddles.root_parts(360, 1, -360)
    with mpmath.workprec(300):
        for j in range(0, 360, 7):
            exact = mpmath.expjpi(2 * mpmath.mpf(j) / 360) / mpmath.sqrt(360)
            assert float(exact.real - mpmath.mpf(hi[j].real)) == lo[j].real
            assert float(exact.imag - mpmath.mpf(hi[j].imag)) == lo[j].imag
            assert abs(exact - (mpmath.mpc(hi[j]) + mpmath.mpc(lo[j]))) < mpmath.mpf(2) ** -104


@pytest.mark.parametrize("N, div", [(360, -360), (1024, 1), (1024, 1024), (97, 1), (48, -48)])
def test_product_roots(N, div):
    """The products' constants (plans.product_roots): hi the correctly rounded root, lo on
    the grid 2**(e - 104) (2**e <= the largest part < 2**(e + 1)), and hi + lo within
    2**-104 of the largest part of the root (mpmath at 300 bits, every j); conjugate roots
    stay conjugate, exact roots (1, -1, +-i; div 1) keep lo = 0; and 1024 points' columns
    span at most 106 bits (where twiddles' remainders reach 119)."""
    from ozaki.fft import plans
    hi, lo = plans.product_roots(N, 1, div)
    assert np.array_equal(hi, twiddles.root_parts(N, 1, div)[0])
    top = max(np.abs(hi.real).max(), np.abs(hi.imag).max())
    grid = 2.0 ** (np.frexp(top)[1] - 1 - plans.PRODUCT_ROOT_BITS)
    assert np.all(np.mod(lo.real, grid) == 0) and np.all(np.mod(lo.imag, grid) == 0)
    assert np.array_equal(lo[1:], np.conj(lo[1:][::-1]))                 # w^(N-j) = conj(w^j)
    with mpmath.workprec(300):
        scale = 1 / mpmath.sqrt(-div) if div < 0 else mpmath.mpf(1) / div
        bound = mpmath.mpf(top) * mpmath.mpf(2) ** -104
        for j in range(N):
            exact = mpmath.expjpi(2 * mpmath.mpf(j) / N) * scale
            err = exact - (mpmath.mpc(hi[j]) + mpmath.mpc(lo[j]))
            assert max(abs(err.real), abs(err.imag)) < bound, j
            if (4 * j) % N == 0 and div == 1:
                assert lo[j] == 0, j
    if N == 1024:                       # every part a multiple of the grid: columns span <= 106 bits
        assert np.all(np.mod(hi.real, grid) == 0) and np.all(np.mod(hi.imag, grid) == 0)
        assert np.frexp(top)[1] - np.log2(grid) <= 106
        assert np.mod(twiddles.root_parts(N, 1, div)[1].real, grid).any()   # twiddles' lo are not


@settings(max_examples=60, deadline=None)
@given(N=st.integers(1, 5000), sign=st.sampled_from([-1, 1]), norm=st.sampled_from(["backward", "ortho", "forward"]))
def test_product_roots_property(N, sign, norm):
    """For any length, sign and scale: hi is twiddles' hi, lo is twiddles' remainder moved by
    at most half the grid onto it (exact rationals), and conjugate roots stay conjugate."""
    from fractions import Fraction
    from ozaki.fft import plans
    div = {"backward": 1, "ortho": -N, "forward": N}[norm]
    hi, lo = plans.product_roots(N, sign, div)
    hi0, lo0 = twiddles.root_parts(N, sign, div)
    assert np.array_equal(hi, hi0)
    top = max(np.abs(hi.real).max(), np.abs(hi.imag).max())
    grid = 2.0 ** (np.frexp(top)[1] - 1 - plans.PRODUCT_ROOT_BITS)
    for got, was in ((lo.real, lo0.real), (lo.imag, lo0.imag)):
        assert np.all(np.mod(got, grid) == 0)
        assert max(abs(Fraction(g) - Fraction(w)) for g, w in zip(got, was)) <= Fraction(grid) / 2
    assert np.array_equal(lo[1:], np.conj(lo[1:][::-1]))


def test_rounded_constants_path(rng):
    x = rng.standard_normal(512) + 0j
    assert np.allclose(of.fft(x, mode="accurate"), np.fft.fft(x), rtol=1e-12, atol=1e-11)


def test_bluestein_never_worse_than_numpy(rng):
    """A prime above 4096: no six-step factorization, Bluestein's chirp-z (M = 8192) on its
    exact path (one float64 rounding).  Forward against an mpmath DFT; the inverse with
    norm="forward" (sign and scale) against numpy's; and the rounded path (mode="accurate")
    within numpy's error class."""
    N = 4099
    assert of.algorithm(N) == "bluestein"
    x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
    ks = sorted({0, 1, N - 1, N // 2} | {int(k) for k in rng.integers(0, N, 8)})
    ref = mp_dft_bins(x, ks)
    ours, numpy_l2 = l2_error(of.fft(x), ref, ks), l2_error(np.fft.fft(x), ref, ks)
    assert ours <= numpy_l2 and ours <= 1.0e-16, ours
    inv = of.ifft(x, norm="forward")
    assert np.linalg.norm(inv - np.fft.ifft(x, norm="forward")) <= 1e-15 * np.linalg.norm(inv)
    # the rounded path on the same bins: no worse than numpy (25 seeds: at most 0.55 of numpy's
    # L2, 1.7e-16 median; a fixed 2.5e-16 failed on about one seed in a hundred, at 3.1e-16
    # beside numpy's 7.3e-16)
    assert l2_error(of.fft(x, mode="accurate"), ref, ks) <= numpy_l2


def test_bluestein_spectra_cache_is_bounded(monkeypatch):
    """The rounded path's kernel spectra (modes other than exact) are cached per length, least
    recently used dropped past SPECTRA_CACHED, and a cached spectrum gives the same bits as a
    fresh one."""
    from ozaki.fft import bluestein as fft_module
    monkeypatch.setattr(fft_module, "_SPECTRA", {})
    monkeypatch.setattr(fft_module, "SPECTRA_CACHED", 2)
    x = np.exp(1j * np.arange(12)) - 0.25
    first = of.fft(x, n=509, mode="accurate")
    for n in (521, 523, 509, 541):
        assert of.algorithm(n, rows=1) == "bluestein"
        of.fft(x, n=n, mode="accurate")
        assert len(fft_module._SPECTRA) <= 2
    assert [k[2] for k in fft_module._SPECTRA] == [509, 541]             # 509 used again, kept
    assert np.array_equal(of.fft(x, n=509, mode="accurate").view(np.int64), first.view(np.int64))


def test_constants_cache_budget_per_device(monkeypatch):
    """The constants cache drops a device's least recently used entries past that device's
    budget and never touches another device's; the newest entry stays even when it alone
    passes the budget; a GPU's budget is a fraction of its memory (at least CACHE_BYTES)."""
    from collections import OrderedDict
    from ozaki.fft import plans
    monkeypatch.setattr(plans, "_CACHE", OrderedDict())
    monkeypatch.setattr(plans, "CACHE_BYTES", 3000)
    monkeypatch.setattr(plans, "_device_memory", lambda device_id: 80_000)
    gpu = ("cupy", 0)
    plans._CACHE[gpu + ("old",)] = np.zeros(1000, dtype=np.uint8)     # another device's entry
    for name in "abcd":
        plans._kept(np, (name,), lambda: np.zeros(1000, dtype=np.uint8))
    assert [k for k in plans._CACHE if k[0] == "numpy"] == [("numpy", "b"), ("numpy", "c"), ("numpy", "d")]
    plans._kept(np, ("b",), lambda: None)                               # used again: kept longer
    plans._kept(np, ("e",), lambda: np.zeros(1000, dtype=np.uint8))
    assert [k for k in plans._CACHE if k[0] == "numpy"] == [("numpy", "d"), ("numpy", "b"), ("numpy", "e")]
    plans._kept(np, ("big",), lambda: np.zeros(5000, dtype=np.uint8))
    assert [k for k in plans._CACHE if k[0] == "numpy"] == [("numpy", "big")]
    assert gpu + ("old",) in plans._CACHE
    assert plans._budget(gpu) == 10_000 and plans._budget(("numpy",)) == 3000
    plans._trim(gpu)
    assert gpu + ("old",) in plans._CACHE


def test_twiddle_products_round_every_step(rng):
    """The FFT's elementwise complex products are (ar br - ai bi) + i (ar bi + ai br) with every
    operation rounded, as Python floats compute it: the same bits on any BLAS, SIMD or GPU."""
    from ozaki.fft.stages import times as _times
    a = rng.standard_normal(200) * np.exp2(rng.integers(-30, 30, 200)) + 1j * rng.standard_normal(200)
    b = rng.standard_normal(200) + 1j * rng.standard_normal(200) * np.exp2(rng.integers(-30, 30, 200))
    got = _times(a, b)
    for x, y, z in zip(a, b, got):
        re = float(x.real) * float(y.real) - float(x.imag) * float(y.imag)
        im = float(x.real) * float(y.imag) + float(x.imag) * float(y.real)
        assert (z.real, z.imag) == (re, im)


def test_error_free_twiddle_products(rng):
    """P + E is the exact complex product (Fractions) to 2**-100, and P is _times's rounding."""
    from fractions import Fraction
    from ozaki.fft.stages import times as _times, times_exactly as _times_exactly
    a = (rng.standard_normal(300) + 1j * rng.standard_normal(300)) * np.exp2(rng.integers(-300, 300, 300))
    b = np.exp(1j * rng.random(300) * 6.3)
    P, E = _times_exactly(a, b)
    assert np.array_equal(P.view(np.int64), _times(a, b).view(np.int64))
    for x, y, p, e in zip(a, b, P, E):
        F = Fraction
        re = F(x.real) * F(y.real) - F(x.imag) * F(y.imag)
        im = F(x.real) * F(y.imag) + F(x.imag) * F(y.real)
        size = abs(F(x.real)) + abs(F(x.imag))
        assert abs(F(p.real) + F(e.real) - re) <= size * F(2) ** -100
        assert abs(F(p.imag) + F(e.imag) - im) <= size * F(2) ** -100


@pytest.mark.parametrize("N", [1024, 4096, 360])
def test_few_rows_stage2_as_accurate_as_folded(rng, N, monkeypatch):
    """One transform (stage 2 as one GEMM after exact twiddle products) against the folded
    per-row matrices: both within the promise, against an mpmath DFT."""
    x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
    ks = sorted({0, 1, N - 1} | {int(k) for k in rng.integers(0, N, 10)})
    ref = mp_dft_bins(x, ks)
    few = l2_error(of.fft(x), ref, ks)
    from ozaki.fft import stages
    monkeypatch.setattr(stages, "FOLD_MIN_ROWS", 0)
    folded = l2_error(of.fft(x), ref, ks)
    assert few <= 1.0e-16 and folded <= 1.0e-16 and few <= 2 * folded + 1e-17, (few, folded)


@pytest.mark.parametrize("N, inverse, norm, kind", [(1 << 17, False, None, "uniform"),
                                                    (3 << 16, True, "ortho", "wide")])
def test_long_lengths_rounded_once(rng, N, inverse, norm, kind):
    """Beyond 65536 points stage 2 recurses (N2 > DIRECT_MAX): the twiddle product between
    the stages is formed exactly and the inner transforms take it with its remainder, so
    each output part is still the correctly rounded exact sum, up to 2**-100 of its terms.
    Checked against dft_bins_exact_sum (within 2**-104 of the terms of the true DFT): the
    part is RN of the reference, or, where the reference lies within 2**-98 of the terms'
    sum of a rounding boundary, either neighbour of it.  (2**17 points: before the exact
    carry, 20 of 32 sampled parts were not RN of the reference.)"""
    if kind == "uniform":
        x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
    else:
        x = (rng.random(N) - 0.5) * np.exp2(rng.integers(-30, 30, N)) + 1j * (rng.random(N) - 0.5)
    assert of.algorithm(N, rows=1) == "six-step" and N > of.DIRECT_MAX ** 2
    y = (of.ifft if inverse else of.fft)(x, norm=norm)
    ks = sorted({0, 1, N - 1} | {int(k) for k in rng.integers(0, N, 9)})
    ref, scale = assert_rounded_once(x, y, ks, 1 if inverse else -1, norm)
    assert l2_error(y, [r * scale for r in ref], ks) <= 1e-16


def assert_rounded_once(x, y, ks, sign, norm=None):
    """Each part of bins ``ks`` of y, the transform of the 1-D x under ``norm`` (None or
    "ortho"), is RN of the exact DFT's (dft_bins_exact_sum, within 2**-104 of the terms of
    the true DFT), or, where that reference lies within 2**-98 of the terms' sum of a
    rounding boundary, either neighbour of it.  Returns the reference bins (unscaled) and
    the norm's scale (at 2200 bits)."""
    import mpmath
    ref = dft_bins_exact_sum(x, ks, sign=sign)
    terms = float(np.sum(np.abs(x.real) + np.abs(x.imag)))
    with mpmath.workprec(2200):
        scale = 1 / mpmath.sqrt(len(x)) if norm == "ortho" else mpmath.mpf(1)
        slack = mpmath.mpf(terms) * scale * mpmath.mpf(2) ** -98
        for k, r in zip(ks, ref):
            for part, got in ((r.real * scale, y[k].real), (r.imag * scale, y[k].imag)):
                allowed = {float(part), float(part - slack), float(part + slack)}
                assert got in allowed, (k, got, float(part))
    return ref, scale


def _quarter_spy(monkeypatch):
    """A list that grows by one at every scheme._quarter_product."""
    from ozaki import scheme
    calls, run = [], scheme._quarter_product

    def spy(*args, **kwargs):
        calls.append(1)
        return run(*args, **kwargs)
    monkeypatch.setattr(scheme, "_quarter_product", spy)
    return calls


@pytest.mark.parametrize("N, sign, div", [(256, -1, 1), (256, 1, 256), (512, -1, -512), (1024, 1, 1)])
def test_quarter_turn_product_correctly_rounded(rng, monkeypatch, N, sign, div):
    """A product with the exact pair of the N-point DFT matrix as four quarter-size products
    on butterflied residues (scheme._quarter_product) is the correctly rounded exact sum
    x (F_hi + F_lo), entry by entry against exact rationals (reference.exact_dot), on
    rows of wide exponents, a cancelling row and a row of tiny entries."""
    import ozaki
    from ozaki import reference
    from ozaki.fft import plans
    from tests import inputs
    calls = _quarter_spy(monkeypatch)
    rows = 5
    x = inputs.wide(rng, (rows, N), 40) + 1j * inputs.wide(rng, (rows, N), 40)
    x[1, N // 2:] = -x[1, :N // 2] * (1 + 2.0 ** -50)           # cancellation across the quarters
    x[2] *= 2.0 ** -1040                                          # subnormal-range entries
    x[3, rng.integers(0, N, N // 3)] = 0
    hi, lo = plans.direct(np, N, sign, div, True)
    F = plans.prepared(np, ("quarter-test", N, sign, div), (hi, lo), "right", {"mode": "exact"}, quarter=sign)
    assert F.quarter == sign
    C = ozaki.matmul(x, F)
    assert len(calls) == 1
    for i, k in zip(rng.integers(0, rows, 48), rng.integers(0, N, 48)):
        xr, xi = x[i].real, x[i].imag
        fr = [hi[:, k].real, lo[:, k].real]
        fi = [hi[:, k].imag, lo[:, k].imag]
        re = reference.exact_dot(np.concatenate([xr, -xi, xr, -xi]), np.concatenate([fr[0], fi[0], fr[1], fi[1]]))
        im = reference.exact_dot(np.concatenate([xr, xi, xr, xi]), np.concatenate([fi[0], fr[0], fi[1], fr[1]]))
        assert C[i, k].real == re and C[i, k].imag == im, (i, k)


@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_quarter_turns_give_the_one_product_bits(rng, monkeypatch, mode):
    """fft and ifft of batches (direct products) with the quarter turns and without
    (scheme.QUARTER_MIN past N): the same bits, whole and blocked over rows (a small
    workspace), for every norm; the quarter-turn path ran."""
    import ozaki
    from ozaki import scheme
    calls = _quarter_spy(monkeypatch)
    for N, rows in ((256, 16), (1024, 17)):
        x = inputs_wide_complex(rng, (rows, N))
        for fn, norm in ((of.fft, None), (of.ifft, "ortho"), (of.fft, "forward")):
            for workspace in (None, 3 << 20):
                with ozaki.config(workspace=workspace):
                    monkeypatch.setattr(scheme, "QUARTER_MIN", 1 << 30)
                    one = fn(x, norm=norm, mode=mode)
                    before = len(calls)
                    monkeypatch.setattr(scheme, "QUARTER_MIN", 256)
                    four = fn(x, norm=norm, mode=mode)
                assert len(calls) > before
                assert np.array_equal(one.view(np.uint64), four.view(np.uint64)), (N, norm, workspace)


def test_quarter_turns_from_the_backends_points(rng, monkeypatch):
    """A backend's QUARTER_POINTS_MIN (the GPU's: smaller products run faster as one) keeps
    products of fewer points (rows times the transform's N) on one product, and from it on
    they take the quarter turns: the same bits either side; the product's rows count, not
    those of the blocks a small workspace cuts it into."""
    import ozaki
    from ozaki.backends import numpy_backend
    for workspace in (None, 3 << 20):
        with ozaki.config(workspace=workspace):
            _one_product_then_quarter_turns(monkeypatch, inputs_wide_complex(rng, (24, 1024)), numpy_backend,
                                            "QUARTER_POINTS_MIN", 24 * 1024 + 1, 24 * 1024)


def _one_product_then_quarter_turns(monkeypatch, x, owner, name, off, on):
    """fft(x) with owner.name set to ``off`` (the quarter turns not taken), then to ``on``
    (taken): the same bits; the second result."""
    calls = _quarter_spy(monkeypatch)
    monkeypatch.setattr(owner, name, off, raising=False)
    one = of.fft(x)
    assert not calls
    monkeypatch.setattr(owner, name, on)
    four = of.fft(x)
    assert calls
    assert np.array_equal(one.view(np.uint64), four.view(np.uint64))
    return four


def test_batches_to_2048_points_direct_by_quarter_turns(rng, monkeypatch):
    """Complex batches of a multiple of 64 points up to plans.QUARTER_DIRECT_MAX are direct,
    costed as quarter turns (2048 was six-step); 4096 points stay six-step (their constants
    pass the host cache), and so do carried rows (their product is not the quarter turns).
    A 16 x 2048 batch in exact mode runs the quarter turns, gives the one product's bits,
    and each sampled part (every column class mod 4) is RN of the exact DFT
    (dft_bins_exact_sum: or a neighbour, where the reference lies within 2**-98 of the
    terms' sum of a rounding boundary)."""
    from ozaki import scheme
    from ozaki.fft import plans
    assert of.algorithm(2048) == "direct" and of.algorithm(1984) == "direct"
    assert of.algorithm(4096) == "six-step" and of.algorithm(2040) == "six-step"      # 2040: not 64 m
    assert plans.choose(2048, 1) != plans.Plan("direct")                            # one row: fixed costs
    assert plans.choose(2048, 16, "c2c", True) != plans.Plan("direct")              # carried rows
    N, rows = 2048, 16
    x = inputs_wide_complex(rng, (rows, N))
    x[3, N // 2:] = -x[3, :N // 2]                                    # cancellation across the quarters
    y = _one_product_then_quarter_turns(monkeypatch, x, scheme, "QUARTER_MIN", 1 << 30, 256)
    ks = sorted({0, 1, 2, 3, N // 4, N - 2, N - 1} | {int(k) for k in rng.integers(0, N, 4)})
    for r in (0, 3, rows - 1):
        assert_rounded_once(x[r], y[r], ks, -1)


def inputs_wide_complex(rng, shape):
    from tests import inputs
    return inputs.wide(rng, shape, 30) + 1j * inputs.wide(rng, shape, 30)


def test_quarter_turns_symmetry_checked():
    """plans.quarter_turns: the products' DFT matrices have the quarter turns bit for bit
    (every length a multiple of 4, both signs, each norm's scale); other lengths have none."""
    from ozaki.fft import plans
    for N in (4, 64, 256, 1000, 1024, 4096):
        for sign in (-1, 1):
            for div in (1, N, -N):
                assert plans.quarter_turns(N, sign, div) == sign
                hi, lo = plans.direct(np, N, sign, div, True)
                q = N // 4
                turn = np.array([1, sign * 1j, -1, -sign * 1j])[np.arange(N) % 4]    # (sign i)**k, column k
                for part in (hi, lo):
                    assert np.array_equal(part[q:2 * q], turn * part[:q])
                for r in range(4):          # every quarter: rows q r + j are (sign i)**(r k) times rows j
                    for part in (hi, lo):
                        assert np.array_equal(part[r * q:(r + 1) * q], turn[(r * np.arange(N)) % N] * part[:q])
    assert plans.quarter_turns(30, -1, 1) is None and plans.quarter_turns(1022, 1, 1) is None


def test_quarter_turns_refused_without_the_symmetry(monkeypatch):
    """plans.quarter_turns checks the roots it is given: one root's lo off its quarter turn
    (or hi) and it answers None."""
    from ozaki.fft import plans
    good = plans.product_roots

    def broken(part):
        def roots(N, sign, div):
            hi, lo = (v.copy() for v in good(N, sign, div))
            (hi if part == "hi" else lo)[N // 4 + 3] *= 1 + 2.0 ** -40          # not a turn of root 3
            return hi, lo
        return roots
    for part in ("hi", "lo"):
        plans.quarter_turns.cache_clear()
        monkeypatch.setattr(plans, "product_roots", broken(part))
        assert plans.quarter_turns(256, -1, 1) is None
    plans.quarter_turns.cache_clear()
    monkeypatch.setattr(plans, "product_roots", good)
    assert plans.quarter_turns(256, -1, 1) == -1


def test_quarter_turns_with_a_prepared_left_operand_and_more_moduli(rng, monkeypatch):
    """A prepared left operand (its residues made apart, butterflied in the product) gives
    the one-product bits; a product that needs more moduli remakes the quarter matrices'
    residues and drops the fewer moduli's (the kept bytes do not grow with each count)."""
    import ozaki
    from ozaki import scheme
    from ozaki.fft import plans
    calls = _quarter_spy(monkeypatch)
    N = 256
    F = plans.prepared(np, ("quarter-left-test", N), plans.direct(np, N, -1, 1, True), "right", {"mode": "exact"},
                       quarter=-1)
    x = rng.standard_normal((8, N)) + 1j * rng.standard_normal((8, N))
    A = ozaki.prepare(x, "left", mode="exact")
    four = ozaki.matmul(A, F)
    assert len(calls) == 1
    monkeypatch.setattr(scheme, "QUARTER_MIN", 1 << 30)
    one = ozaki.matmul(x, F)
    assert np.array_equal(four.view(np.uint64), one.view(np.uint64))
    monkeypatch.setattr(scheme, "QUARTER_MIN", 256)
    sizes = []
    for spread in (10, 200, 600):                  # wider rows: more moduli each time
        wide = inputs_wide_complex(rng, (8, N)) * 2.0 ** rng.integers(-spread, spread, (8, N))
        ozaki.matmul(wide, F)
        sizes.append(F.nbytes)
    quarter_keys = [k for k in F._ready.residue_stacks if k[0] == "quarter"]
    assert len(quarter_keys) == 1 and len(calls) == 4
    assert sizes[-1] < 2 * sizes[0]
