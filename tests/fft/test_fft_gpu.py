"""ozaki.fft on cupy arrays: the CPU's bits on every plan (direct, six-step with few and many
rows, Bluestein's exact and rounded paths, the real products) and with IEEE specials.
Skipped without a CUDA device (tests/conftest.py)."""

import numpy as np
import pytest

import ozaki.fft as of
from tests import inputs

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    """These tests watch each path's kernels: every call eager (no CUDA graph replays them;
    test_fft_graphs.py checks the replays)."""
    from ozaki.backends import graphs
    monkeypatch.setattr(graphs, "ENABLED", False)


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
         ("ihfft", (3, 40), {}), ("fftn", (4, 6, 10), {}), ("fft", (1, 1 << 17), {}),
         ("ifft", (2, 3 << 16), {"norm": "ortho"}), ("rfftn", (5, 4, 18), {"axes": (0, 0, 2), "s": (3, 6, 16)})]


@pytest.mark.parametrize("name, shape, kw", CASES)
def test_same_bits_as_cpu(rng, name, shape, kw):
    cupy = pytest.importorskip("cupy")
    x = rng.standard_normal(shape)
    if name not in ("rfft", "ihfft", "rfftn"):
        x = x + 1j * rng.standard_normal(shape)
    fn = getattr(of, name)
    _same_bits(fn(cupy.asarray(x), **kw), fn(x, **kw))


@pytest.mark.parametrize("block_points", [1 << 26, 2048, 640])
def test_axes_by_blocks_same_bits_as_cpu(rng, monkeypatch, block_points):
    """Blocks of rows of every axis read and written through the backend's tiled transposes
    (cupy_backend.contiguous / assign): sides off the tile size, one block, blocks of whole
    slabs and blocks that miss them."""
    cupy = pytest.importorskip("cupy")
    from ozaki.fft import interface
    monkeypatch.setattr(interface, "BLOCK_POINTS", block_points)
    x = rng.standard_normal((40, 33, 36)) + 1j * rng.standard_normal((40, 33, 36))
    for fn in (of.fftn, of.ifftn):
        _same_bits(fn(cupy.asarray(x)), fn(x))
    _same_bits(of.rfftn(cupy.asarray(x.real)), of.rfftn(x.real))
    _same_bits(of.fft(cupy.asarray(x), axis=0), of.fft(x, axis=0))


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
def test_zero_signs_kernel_matches_numpy(rng, monkeypatch, N):
    """The GPU's zero_signs (kernels/zero_terms.cu, a thread per entry scanning the terms)
    against numpy's term-by-term rule on every zero entry and against numpy's zero_signs
    (witnesses and closed form first), in place on the real part of a complex output (a
    strided view), on the FFT's terms of each kind as the specials read them (strided
    views): rows of -0, rows of +0, zero rows of random signs, lone nonzero entries,
    sign +-1; tiny rows, nonzero and NaN outputs left alone.  Then both parts of a complex
    output at once, in one launch, as numpy_backend's zero_signs of the two parts."""
    cupy = pytest.importorskip("cupy")
    from ozaki.backends import cupy_backend, numpy_backend
    from ozaki.fft import specials
    rows = 40
    for kind in ("c2c", "r2c", "c2r"):
        data = inputs.zero_sign_rows(rng, kind, N, rows)
        views, on_gpu = specials._inputs_2d(data, kind, N), specials._inputs_2d(cupy.asarray(data), kind, N)
        tiny = rng.random(rows) < 0.1
        tiny[:10] = False
        for sign in (-1, 1):
            for terms in specials._TERMS[kind]:
                cpu_terms = [(views[q][0], views[q][1], ctype == "s", negated) for q, ctype, negated in terms]
                gpu_terms = [(on_gpu[q][0], on_gpu[q][1], ctype == "s", negated) for q, ctype, negated in terms]
                out = np.empty((rows, N), dtype=np.complex128)
                out.real = np.where(rng.random((rows, N)) < 0.7, 0.0, 2.5)
                out.real[rng.random((rows, N)) < 0.05] = np.nan
                out.real[:10, 0] = 0.0                     # output 0 of the -0 rows: -0 where it has a term
                out.imag = np.where(rng.random((rows, N)) < 0.5, -0.0, np.nan)
                want = out.copy()
                r, k = np.nonzero((want.real == 0) & ~tiny[:, None])
                want.real[r, k] = np.where(numpy_backend.zero_terms_negative(cpu_terms, r, k, N, sign), -0.0, 0.0)
                cpu = out.copy()
                numpy_backend.zero_signs([cpu.real], tiny, [cpu_terms], N, sign)
                _same_bits(cupy.asarray(want), cpu)
                gpu = cupy.asarray(out)
                cupy_backend.zero_signs([gpu.real], cupy.asarray(tiny), [gpu_terms], N, sign)
                _same_bits(gpu, want)
                assert not (np.signbit(want.real) != np.signbit(out.real))[tiny].any()
        if kind != "c2r":
            # both output parts in one launch (.real and .imag side by side), each by its terms
            terms = [[(on_gpu[q][0], on_gpu[q][1], ctype == "s", negated) for q, ctype, negated in ts]
                     for ts in specials._TERMS[kind]]
            cpu_terms = [[(views[q][0], views[q][1], ctype == "s", negated) for q, ctype, negated in ts]
                         for ts in specials._TERMS[kind]]
            out = np.where(rng.random((rows, N)) < 0.7, 0.0, 2.5) + 1j * np.where(rng.random((rows, N)) < 0.7,
                                                                                   -0.0, np.nan)
            out.imag[rng.random((rows, N)) < 0.3] = 0.0
            cpu = out.copy()
            numpy_backend.zero_signs([cpu.real, cpu.imag], tiny, cpu_terms, N, -1)
            gpu = cupy.asarray(out)
            launches, real_kernel = [], cupy_backend._kernel

            def counted(*args):
                kern = real_kernel(*args)
                return lambda *launch: launches.append(1) or kern(*launch)
            monkeypatch.setattr(cupy_backend, "_kernel", counted)
            monkeypatch.setenv("OZAKI_NEW_KERNELS", "zero_signs_parts")
            cupy_backend.zero_signs([gpu.real, gpu.imag], cupy.asarray(tiny), terms, N, -1)
            monkeypatch.undo()
            assert len(launches) == 1
            _same_bits(gpu, cpu)
            gpu = cupy.asarray(out)                          # the same bits a launch a part
            monkeypatch.setenv("OZAKI_NEW_KERNELS", "none")
            cupy_backend.zero_signs([gpu.real, gpu.imag], cupy.asarray(tiny), terms, N, -1)
            monkeypatch.undo()
            _same_bits(gpu, cpu)
        # the -0 rows' output 0 (the last terms': c2c's Im, xi cos 0; c2r's xr cos 0) is -0
        assert kind == "r2c" or np.signbit(want.real[:10, 0]).all()


@pytest.mark.parametrize("rows, length", [(1, 1 << 20), (3, 5), (70000, 24), (600, 1500)])
def test_row_specials_kernel_matches_numpy(rng, rows, length):
    """The rows' NaN/inf and tiny-entry flags on the device (kernels/row_specials.cu) equal
    numpy's: a long row over many blocks, more rows than a grid's y dimension, complex data
    read as one float64 view and as strided real/imaginary views, c2r's imaginary slice; and
    the OR of the rows' flags, with the bit of a nonzero imaginary part, for complex rows and
    for real rows stored complex."""
    cupy = pytest.importorskip("cupy")
    from ozaki.backends import cupy_backend, numpy_backend
    from ozaki.fft import specials
    x = rng.standard_normal((rows, length)) + 1j * rng.standard_normal((rows, length))
    for value, count in ((np.nan, 3), (np.inf, 2), (-np.inf, 2), (1e-300, 3), (-5e-324, 2), (0.0, 5)):
        r, c = rng.integers(0, rows, count), rng.integers(0, length, count)
        x.real[r, c] = value
        x.imag[rng.integers(0, rows, count), rng.integers(0, length, count)] = value
    half = max(1, length // 2)

    def views(a, xp):
        return [[a.view(xp.float64)], [a.real, a.imag], [a.real, a.imag[:, 1:half]], [a.real]]

    imags = [(2,), (0, 1), (0, 0), (0,)]                 # which entries of each view are imaginary parts
    for data in (x, x.real + 0j):                        # the second: real rows, specials and all
        d = cupy.asarray(data)
        for cpu, gpu, imag in zip(views(data, np), views(d, cupy), imags):
            for im in (None, imag):
                want = numpy_backend.row_specials(cpu, specials.TINY, im)
                got = cupy_backend.row_specials(gpu, specials.TINY, im)
                for w, g in zip(want[:2], got[:2]):
                    assert np.array_equal(g.get(), w)
                assert got[2] == want[2] == (int(want[0].any()) | int(want[1].any()) << 1
                                             | (4 if im in ((2,), (0, 1)) and (data.imag != 0).any() else 0))
                assert want[0].any() and want[1].any() and (rows < 8 or not want[0].all())


@pytest.mark.parametrize("spread", [0, 200, 900])
def test_times_kernels_match_numpy(rng, spread):
    """stages.times and times_exactly on the device (one kernel each) give numpy's bits,
    broadcasting as the six-step stages use them; operands with wide exponents, zeros of
    both signs and products that underflow or cancel."""
    import cupy
    from ozaki.fft import stages
    shape_a, shape_b = (6, 5, 64), (6, 1, 64)
    a = inputs.wide(rng, shape_a, spread) + 1j * inputs.wide(rng, shape_a, spread)
    b = inputs.wide(rng, shape_b, spread) + 1j * inputs.wide(rng, shape_b, spread)
    a.real[0, 0, :8] = [0.0, -0.0, 1e-300, -1e-300, 3.0, 2.0 ** -1074, 1.0, -0.0]
    b.imag[0, 0, :8] = [-0.0, 0.0, 1e-300, 1e300, 1.0 / 3.0, 2.0 ** 900, -1.0, 0.0]
    a[1, 1] = b[1, 0] * (1 + 2.0 ** -40)                  # near-cancelling parts
    with np.errstate(all="ignore"):                       # overflows to inf, inf - inf
        cpu = [stages.times(a, b)] + list(stages.times_exactly(a, b))
    gpu = [stages.times(cupy.asarray(a), cupy.asarray(b))] + list(stages.times_exactly(cupy.asarray(a),
                                                                                         cupy.asarray(b)))
    for c, g in zip(cpu, gpu):
        _same_bits(g, c)


@pytest.mark.parametrize("m", [16, 25, 42])
def test_butterfly4_kernel_matches_numpy(rng, monkeypatch, m):
    """cupy_backend.butterfly4 (kernels/residues.cu) == numpy_backend.butterfly4: random
    residues with rows of the extremes, and the halves of residues_of_parts' stacks (planes
    apart as the product reads them)."""
    cupy = pytest.importorskip("cupy")
    from ozaki.backends import cupy_backend, numpy_backend
    for sign in (-1, 1):
        re = rng.integers(-128, 128, size=(m, 37, 256)).astype(np.int8)
        im = rng.integers(-128, 128, size=(m, 37, 256)).astype(np.int8)
        re[:, 0], im[:, 0], re[:, 1], im[:, 1] = -128, -128, 127, -128
        got = cupy_backend.butterfly4(cupy.asarray(re), cupy.asarray(im), m, sign)
        want = numpy_backend.butterfly4(re, im, m, sign)
        assert all(np.array_equal(g.get(), w) for g, w in zip(got, want))
    # rows whose digits take each of the pass's three ways at beta = -80: shifts up to 24
    # (three pieces), 25..76 (five pieces, the wide builds; else the table) and past 76 (the
    # table), and rows of all three mixed, within a column's eight digits too
    scale = np.array([-10, -10, 10, 10, 60, 60, 0, 0, 0])[:, None]
    mixed = np.arange(9)[:, None] >= 6
    x = rng.standard_normal((9, 1024)) * 2.0 ** (scale + np.where(mixed, rng.integers(-30, 60, (9, 1024)), 0))
    y = rng.standard_normal((9, 1024)) * 2.0 ** (scale + np.where(mixed, rng.integers(-30, 60, (9, 1024)), 0))
    beta = np.full(9, -80, dtype=np.int64)
    parts = cupy_backend.residues_of_parts([cupy.asarray(x), cupy.asarray(y)], cupy.asarray(beta), None, m)
    got = cupy_backend.butterfly4(parts[0], parts[1], m, -1)
    cpu = numpy_backend.residues_of_parts([x, y], beta, None, m)
    want = numpy_backend.butterfly4(cpu[0], cpu[1], m, -1)
    assert all(np.array_equal(g.get(), w) for g, w in zip(got, want))
    # formed in the residue pass (residues.cu QUARTERS) and after it, halves of [Re | Im] rows
    xy = np.concatenate([x, y], axis=1)
    builds, kernel = [], cupy_backend._residues_kernel           # QUARTERS of each pass
    monkeypatch.setattr(cupy_backend, "_residues_kernel", lambda *a: builds.append(a[5]) or kernel(*a))
    for sign in (-1, 1):
        want = numpy_backend.residues_of_parts([x, y], beta, None, m, quarter=sign)
        d = cupy.asarray(xy)
        pairs = cupy.asarray(x + 1j * y).view(cupy.float64)
        # the butterflies formed in the residue pass, then by butterfly4 after it
        for kernels, build in (("all", True), ("residue_parts", False)):
            monkeypatch.setenv("OZAKI_NEW_KERNELS", kernels)
            for parts in ([d[:, :1024], d[:, 1024:]], [pairs[:, 0::2], pairs[:, 1::2]]):
                builds.clear()
                got = cupy_backend.residues_of_parts(parts, cupy.asarray(beta), None, m, quarter=sign)
                assert all(np.array_equal(g.get(), w) for g, w in zip(got, want)), (sign, kernels)
                assert builds == [build], (kernels, builds)


@pytest.mark.parametrize("path", ["auto", "fused", "cublas", "cutlass"])
def test_quarter_turns_same_bits_as_cpu(rng, monkeypatch, path):
    """Direct products with the quarter turns (scheme._quarter_product) on every product path,
    whole and blocked over rows: the CPU's bits, which are the one-product bits
    (tests/fft/test_fft.py), and the quarter-turn path ran on the GPU (from its
    QUARTER_MIN, 1024 points by default, and here at any size and from 256 points)."""
    cupy = pytest.importorskip("cupy")
    import ozaki
    from ozaki import scheme
    import inspect
    from ozaki.backends import cupy_backend
    monkeypatch.setenv("OZAKI_NEW_KERNELS", "all")       # quarter_products, residue_quarters, ...
    monkeypatch.setattr(cupy_backend, "QUARTER_POINTS_MIN", 0)     # these products are smaller
    monkeypatch.setattr(cupy_backend, "QUARTER_MIN", 256)          # the 256-point rows too
    calls, run = [], scheme._quarter_product

    def spy(*args, **kwargs):
        calls.append(inspect.signature(run).bind(*args, **kwargs).arguments["backend"].name)
        return run(*args, **kwargs)
    monkeypatch.setattr(scheme, "_quarter_product", spy)
    for N, rows in ((256, 16), (1024, 40)):
        x = inputs.wide(rng, (rows, N), 30) + 1j * inputs.wide(rng, (rows, N), 30)
        for mode in ("exact", "fast"):
            for workspace in (None, 3 << 20):
                with ozaki.config(path=path, workspace=workspace):
                    _same_bits(of.fft(cupy.asarray(x), mode=mode), of.fft(x, mode=mode))
                    _same_bits(of.ifft(cupy.asarray(x), norm="ortho", mode=mode), of.ifft(x, norm="ortho", mode=mode))
    assert "cupy" in calls and "numpy" in calls
    x = rng.standard_normal((4, 256, 256)) + 1j * rng.standard_normal((4, 256, 256))
    with ozaki.config(path=path):
        _same_bits(of.fftn(cupy.asarray(x), axes=(1, 2)), of.fftn(x, axes=(1, 2)))
