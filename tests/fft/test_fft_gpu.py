"""ozaki.fft on cupy arrays: the CPU's bits on every plan (direct, six-step with few and many
rows, Bluestein's exact and rounded paths, the real products) and with IEEE specials.
Skipped without a CUDA device (tests/conftest.py)."""

import numpy as np
import pytest

import ozaki.fft as of

pytestmark = pytest.mark.gpu


def _same_bits(gpu, cpu):
    got = gpu.get()
    assert got.shape == cpu.shape and got.dtype == cpu.dtype
    nan = np.isnan(got) | np.isnan(cpu)
    assert np.array_equal(np.isnan(got), np.isnan(cpu))
    assert np.array_equal(np.where(nan, 0, got).view(np.uint8), np.where(nan, 0, cpu).view(np.uint8))


CASES = [("fft", (1, 16), {}), ("fft", (1, 100), {}), ("fft", (20, 100), {}), ("ifft", (3, 480), {"norm": "ortho"}),
         ("fft", (1, 331), {}), ("fft", (2, 4099), {}), ("fft", (2, 1024), {}), ("fft", (1, 4096), {}),
         ("fft", (1, 509), {"mode": "accurate"}), ("rfft", (20, 200), {}), ("rfft", (1, 300), {}),
         ("irfft", (20, 101), {"n": 200}), ("irfft", (1, 151), {"n": 300}), ("hfft", (3, 40), {}),
         ("ihfft", (3, 40), {}), ("fftn", (4, 6, 10), {}), ("rfftn", (5, 4, 18), {"axes": (0, 0, 2), "s": (3, 6, 16)})]


@pytest.mark.parametrize("name, shape, kw", CASES)
def test_same_bits_as_cpu(rng, name, shape, kw):
    cupy = pytest.importorskip("cupy")
    x = rng.standard_normal(shape)
    if name not in ("rfft", "ihfft", "rfftn"):
        x = x + 1j * rng.standard_normal(shape)
    fn = getattr(of, name)
    _same_bits(fn(cupy.asarray(x), **kw), fn(x, **kw))


def test_specials_same_bits_as_cpu(rng):
    cupy = pytest.importorskip("cupy")
    x = rng.standard_normal((6, 30)) + 1j * rng.standard_normal((6, 30))
    x[0, 3] = np.inf
    x[1].imag[7] = -np.inf
    x[2, 0] = np.nan
    x[3] = complex(-0.0, 0.0)
    x[4].real[::2] = -0.0
    x[4].real[1::2] = 0.0
    x[4].imag[:] = -0.0
    for fn in (of.fft, of.ifft):
        _same_bits(fn(cupy.asarray(x)), fn(x))
    _same_bits(of.rfft(cupy.asarray(x.real)), of.rfft(x.real))
    _same_bits(of.irfft(cupy.asarray(x[:, :16]), 30), of.irfft(x[:, :16], 30))


def test_zero_signs_same_bits_as_cpu(rng):
    """The sign rule of zero parts runs on the device: real data as complex (zero parts in
    every row), rows of zeros of mixed signs (settled term by term), one-sign zero rows
    (the closed form), a lone nonzero entry (the witnesses), and an fftn of real data."""
    cupy = pytest.importorskip("cupy")
    x = rng.standard_normal((8, 24)) + 0j
    x[1] = np.where(rng.random(24) < 0.5, -0.0, 0.0) + 1j * np.where(rng.random(24) < 0.5, -0.0, 0.0)
    x[2] = complex(-0.0, -0.0)
    x[3] = 0.0
    x[3, 5] = 2.0
    x[4].imag = np.where(rng.random(24) < 0.5, -0.0, 0.0)
    for fn in (of.fft, of.ifft):
        _same_bits(fn(cupy.asarray(x)), fn(x))
    _same_bits(of.rfft(cupy.asarray(x.real)), of.rfft(x.real))
    _same_bits(of.irfft(cupy.asarray(x[:, :13]), 24), of.irfft(x[:, :13], 24))
    cube = rng.random((8, 8, 8)) - 0.5 + 0j
    _same_bits(of.fftn(cupy.asarray(cube)), of.fftn(cube))


@pytest.mark.parametrize("N", [1, 2, 7, 24, 25, 4096])
def test_zero_signs_kernel_matches_numpy(rng, N):
    """The GPU's zero_signs (kernels/zero_terms.cu, a thread per entry scanning the terms)
    against numpy's (witnesses, closed form, then term by term), in place on the real and
    imaginary parts of a complex output (strided views): zero rows of random signs, rows of
    one sign, rows built so that every term of one part is -0, a few nonzero entries, both
    constant kinds, negated terms, sign +-1, an offset-1 part (c2r's imaginary parts), one-
    and two-term parts, tiny rows left alone, nonzero and NaN outputs untouched."""
    cupy = pytest.importorskip("cupy")
    from ozaki.backends import cupy_backend, numpy_backend
    rows, entries = 40, max(N - 1, 1)
    built_k = rng.integers(0, N, 10)                     # rows 10..19: all terms -0 at these k

    def values(offset, sine, negated, sign):
        v = np.where(rng.random((rows, entries)) < 0.5, -0.0, 0.0)
        v[rng.random((rows, entries)) < 0.02] = 1.5       # a few nonzero entries
        v[:5], v[5:10] = -0.0, 0.0
        n = offset + np.arange(entries)
        for q, k in enumerate(built_k):
            c, s = numpy_backend.angle_signs((k * n) % N, N)
            t = s * sign if sine else c
            v[10 + q] = np.where((t < 0) != (not negated), -0.0, 0.0)
        return v

    tiny = rng.random(rows) < 0.1
    for sign in (-1, 1):
        for sine, negated, offset in [(False, False, 0), (True, False, 0), (True, True, 1), (False, True, 1)]:
            terms = [(offset, values(offset, sine, negated, sign), sine, negated),
                     (0, values(0, not sine, not negated, sign), not sine, not negated)]
            for used in (terms[:1], terms):
                out = np.where(rng.random((rows, N)) < 0.7, 0.0, 2.5) + 1j * np.where(rng.random((rows, N)) < 0.5,
                                                                                         -0.0, np.nan)
                out.real[rng.random((rows, N)) < 0.05] = np.nan
                cpu = out.copy()
                numpy_backend.zero_signs(cpu.real, tiny, used, N, sign)
                gpu = cupy.asarray(out)
                views = []                                     # the entries as strided views, as the FFT's
                for o, v, s, n in used:
                    z = np.full(v.shape, 7.0 + 0j)
                    z.real = v
                    views.append((o, cupy.asarray(z).real, s, n))
                cupy_backend.zero_signs(gpu.real, cupy.asarray(tiny), views, N, sign)
                _same_bits(gpu, cpu)
                changed = np.signbit(cpu.real) != np.signbit(out.real)
                assert not changed[tiny].any()
                assert changed.any() or N <= 2                 # the rule reaches entries to flip
