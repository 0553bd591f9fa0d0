"""ozaki.dask: products on dask arrays have the bits of ozaki.matmul at any chunking.

Every test draws fresh inputs (the ``rng`` fixture prints its seed) and fresh
uneven chunkings; k is always split, and a and b are split differently along k.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import ozaki                                              # noqa: E402
import ozaki.dask as od                                   # noqa: E402
from ozaki import reference                               # noqa: E402

from . import inputs                                      # noqa: E402

MODES = ("fast", "accurate", "exact")


def bits(x):
    x = np.ascontiguousarray(x)
    return x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64) if x.dtype.kind in "fc" else x


def assert_same_bits(C, R):
    assert C.shape == R.shape and C.dtype == R.dtype, (C.shape, C.dtype, R.shape, R.dtype)
    differ = bits(C) != bits(R)
    assert not differ.any(), f"{int(differ.sum())} entries differ, e.g. {C.ravel()[np.flatnonzero(differ)[:3]]} " \
                             f"vs {R.ravel()[np.flatnonzero(differ)[:3]]}"


def uneven(rng, size, most=5):
    """A random chunking of ``size`` into 1..most uneven pieces (size-1 pieces allowed)."""
    if size <= 1:
        return (size,)
    cuts = np.unique(rng.integers(1, size, rng.integers(1, most)))
    edges = [0, *cuts.tolist(), size]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def split_k(rng, k):
    """Two different chunkings of k with at least two pieces each (when k > 1)."""
    first = uneven(rng, k)
    while k > 1 and len(first) < 2:
        first = uneven(rng, k)
    return first, uneven(rng, k)


def chunked(rng, A, B):
    m, k = A.shape
    n = B.shape[1]
    ka, kb = split_k(rng, k)
    return (da.from_array(A, chunks=(uneven(rng, m), ka)),
            da.from_array(B, chunks=(kb, uneven(rng, n))))


def family(rng, name, shape, complex_=False):
    def draw():
        if name == "normal":
            return inputs.normal(rng, shape)
        if name == "wide":                   # exponents over 400 binades: exact mode slices
            return inputs.wide(rng, shape, 200)
        if name == "phi":
            return inputs.phi(rng, shape, 2.0)
        if name == "subnormal":
            return inputs.subnormal_heavy(rng, shape)
        if name == "huge":
            return inputs.huge(rng, shape)
        if name == "zeros":
            return inputs.sprinkle_zeros(rng, inputs.wide(rng, shape, 20), 0.4)
        if name == "specials":
            return inputs.sprinkle_specials(rng, inputs.wide(rng, shape, 20), 0.08)
        raise ValueError(name)
    x = draw()
    if complex_:
        with np.errstate(invalid="ignore"):
            y = draw()
            z = np.empty(shape, dtype=np.complex128)
            z.real, z.imag = x, y
        return z
    return x


def exact_reference(A, B):
    """The correctly rounded exact product, per part for complex (each part is a real
    product of 2k terms: reference.complex_as_real)."""
    if np.iscomplexobj(A) or np.iscomplexobj(B):
        (xr, yr), (xi, yi) = reference.complex_as_real(A, B)
        out = np.empty((A.shape[0], B.shape[1]), dtype=np.complex128)
        out.real, out.imag = reference.exact_matmul(xr, yr), reference.exact_matmul(xi, yi)
        return out
    return reference.exact_matmul(A, B)


# ------------------------------------------------------------------- matmul --

@pytest.mark.parametrize("complex_", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("mode", MODES)
def test_bits_at_any_chunking(rng, mode, complex_):
    """Three products of random shapes and families, each under a fresh uneven chunking."""
    for name in rng.choice(["normal", "wide", "phi", "zeros"], 3, replace=False):
        m, k, n = rng.integers(2, 40, 3)
        A, B = family(rng, name, (m, k), complex_), family(rng, name, (k, n), complex_)
        R = ozaki.matmul(A, B, mode=mode)
        a, b = chunked(rng, A, B)
        C = od.matmul(a, b, mode=mode)
        assert isinstance(C, da.Array)
        assert C.chunks == (a.chunks[0], b.chunks[1])
        assert_same_bits(C.compute(scheduler="threads"), R)
        if mode == "exact":
            assert_same_bits(R, exact_reference(A, B))


@pytest.mark.parametrize("complex_", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("name", ["subnormal", "huge", "zeros", "specials"])
def test_adversarial(rng, name, complex_):
    """Subnormals, overflow, signed zeros, NaN/inf (whole zero and NaN rows included):
    the IEEE state of the terms is ORed over the k chunks, as on the whole arrays."""
    m, k, n = rng.integers(3, 25, 3)
    A, B = family(rng, name, (m, k), complex_), family(rng, name, (k, n), complex_)
    if name in ("zeros", "specials"):
        A[rng.integers(m)] = -0.0 if name == "zeros" else np.nan
        B[:, rng.integers(n)] = 0.0
    a, b = chunked(rng, A, B)
    for mode in MODES:
        with np.errstate(all="ignore"):
            R = ozaki.matmul(A, B, mode=mode)
        assert_same_bits(od.matmul(a, b, mode=mode).compute(scheduler="threads"), R)
    with np.errstate(all="ignore"):                 # the exact product's own IEEE rules
        assert_same_bits(R, exact_reference(A, B))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("name", ["normal", "wide", "phi", "subnormal", "zeros", "specials"])
def test_float32_results(rng, dtype, name):
    """float32/complex64 operands: ozaki.matmul's float32/complex64 result (rounded once to
    float32, float32's default moduli count) at any chunking; mixed with float64/complex128: those."""
    m, k, n = rng.integers(3, 30, 3)
    with np.errstate(all="ignore"):
        A = family(rng, name, (m, k), dtype == np.complex64).astype(dtype)
        B = family(rng, name, (k, n), dtype == np.complex64).astype(dtype)
    a, b = chunked(rng, A, B)
    for mode in MODES:
        with np.errstate(all="ignore"):
            R = ozaki.matmul(A, B, mode=mode)
            assert R.dtype == dtype
            C = od.matmul(a, b, mode=mode)
            assert C.dtype == dtype
            assert_same_bits(C.compute(scheduler="threads"), R)
    wide = np.result_type(dtype, np.float64)                # float64 or complex128
    with np.errstate(all="ignore"):
        assert_same_bits(od.matmul(a, b.astype(wide), mode="accurate").compute(),
                         ozaki.matmul(A, B.astype(wide), mode="accurate"))


def test_signed_zeros_split_over_chunks():
    """-0 needs every term -0 in every chunk; one +0 term in one chunk makes it +0;
    inf and -inf in different chunks make NaN; inf times 0 in one chunk makes NaN."""
    A = np.array([[-0.0, -0.0, 0.0, 1.0],
                  [-0.0, -0.0, -0.0, -0.0],
                  [np.inf, 1.0, 1.0, -np.inf],
                  [np.inf, 1.0, 1.0, 1.0]])
    B = np.array([[0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    a = da.from_array(A, chunks=(1, (1, 2, 1)))
    b = da.from_array(B, chunks=((2, 1, 1), 1))
    for mode in MODES:
        C = od.matmul(a, b, mode=mode).compute(scheduler="sync")
        assert_same_bits(C, ozaki.matmul(A, B, mode=mode))
        assert_same_bits(C, exact_reference(A, B))


def test_many_k_chunks(rng):
    """More k chunks than one level of the tree reduction (split_every 4) and past the
    int16 partials' 255 chunks (int32 then): 300 chunks of one."""
    A, B = family(rng, "wide", (3, 300)), family(rng, "wide", (300, 2))
    a, b = da.from_array(A, chunks=(3, 1)), da.from_array(B, chunks=(1, 2))
    for mode in MODES:
        assert_same_bits(od.matmul(a, b, mode=mode).compute(scheduler="sync"), ozaki.matmul(A, B, mode=mode))


@pytest.mark.parametrize("mode", MODES)
def test_num_moduli(rng, mode):
    m, k, n = 9, 40, 7
    A, B = family(rng, "phi", (m, k)), family(rng, "phi", (k, n))
    a, b = chunked(rng, A, B)
    for nm in ((12, 20) if mode != "exact" else (30, 49)):
        assert_same_bits(od.matmul(a, b, mode=mode, num_moduli=nm).compute(scheduler="threads"),
                         ozaki.matmul(A, B, mode=mode, num_moduli=nm))
    with ozaki.config(mode=mode, num_moduli=20 if mode != "exact" else 40):
        assert_same_bits(od.matmul(a, b).compute(scheduler="threads"), ozaki.matmul(A, B))


def test_exact_sizes_are_lazy():
    """Exact mode's sizes depend on the data: building the graph reads none of it
    (a block that raises is never run), and too few moduli raise when computed."""
    def boom(x):
        raise AssertionError("the graph was computed while being built")
    a = da.ones((8, 8), chunks=4).map_blocks(boom, dtype=np.float64)
    for mode in MODES:
        assert isinstance(od.matmul(a, a, mode=mode), da.Array)
    A = np.ldexp(1.0, np.arange(-100, 100, 25))[None, :].repeat(3, axis=0)
    x = da.from_array(A, chunks=(2, 3))
    lazy = od.matmul(x, x.T, mode="exact", num_moduli=2)
    with pytest.raises(ValueError, match="exact mode"):
        lazy.compute(scheduler="sync")


def test_shapes_and_mixed_operands(rng):
    """1-D operands, broadcast stacks, a numpy operand beside a dask one, empty shapes."""
    A = family(rng, "normal", (2, 1, 6, 11))
    B = family(rng, "wide", (3, 11, 5))
    a = da.from_array(A, chunks=(1, 1, 4, 5))
    b = da.from_array(B, chunks=(2, 6, 3))
    for mode in MODES:       # one plan per matrix, as the scheme's stacks (accurate: maxima per matrix)
        assert_same_bits(od.matmul(a, b, mode=mode).compute(scheduler="threads"), ozaki.matmul(A, B, mode=mode))
    v = family(rng, "normal", (11,))
    dv = da.from_array(v, chunks=4)
    M = A[0, 0]
    assert_same_bits(od.matmul(a[0, 0], dv).compute(), ozaki.matmul(M, v))
    assert_same_bits(od.matmul(dv, B[0]).compute(), ozaki.matmul(v, B[0]))
    assert_same_bits(od.matmul(a[0, 0], B[0]).compute(), ozaki.matmul(M, B[0]))       # numpy b
    assert_same_bits(od.matmul(M.astype(np.float32), b[0]).compute(), ozaki.matmul(M.astype(np.float32), B[0]))
    Z = family(rng, "zeros", (7, 9))
    W = family(rng, "zeros", (9, 5))
    z = da.from_array(Z, chunks=((3, 0, 4), (4, 0, 5)))       # empty chunks along m, k and n
    w = da.from_array(W, chunks=((4, 0, 5), (2, 0, 3)))
    for mode in MODES:
        got = od.matmul(z, w, mode=mode)
        assert got.chunks == ((3, 0, 4), (2, 0, 3))
        assert_same_bits(got.compute(scheduler="sync"), ozaki.matmul(Z, W, mode=mode))
    for shape_a, shape_b in (((0, 4), (4, 3)), ((3, 0), (0, 2)), ((3, 4), (4, 0))):
        za, zb = np.zeros(shape_a), np.ones(shape_b)
        got = od.matmul(da.from_array(za), da.from_array(zb)).compute()
        assert_same_bits(got, np.zeros((shape_a[0], shape_b[1])))


def test_errors():
    a = da.ones((4, 3), chunks=2)
    with pytest.raises(ValueError, match="mismatch"):
        od.matmul(a, a)
    with pytest.raises(ValueError, match="mode"):
        od.matmul(a, a.T, mode="fastest")
    with pytest.raises(ValueError, match="num_moduli"):
        od.matmul(a, a.T, num_moduli=0)
    with pytest.raises(TypeError, match="dtype"):
        od.matmul(a.astype(np.longdouble), a.T)
    with pytest.raises(ValueError, match="dimensions"):
        od.matmul(da.ones(()), a)
    big = da.from_array(np.array([[2 ** 60, 1]], dtype=np.int64), chunks=1)
    with pytest.raises(TypeError, match="2\\*\\*53"):
        od.matmul(big, da.ones((2, 1), chunks=1)).compute(scheduler="sync")


def test_integer_operands_follow_numpy(rng):
    A = rng.integers(-2 ** 40, 2 ** 40, (5, 7))
    B = rng.integers(-2 ** 20, 2 ** 20, (7, 3))
    got = od.matmul(da.from_array(A, chunks=(2, 3)), da.from_array(B, chunks=(4, 2))).compute()
    assert got.dtype == np.int64 and np.array_equal(got, A @ B)


# ---------------------------------------------------------------- schedulers --

def _one_of_each(rng):
    """A real and a complex product with zeros and specials, chunked unevenly."""
    cases = []
    for complex_ in (False, True):
        m, k, n = rng.integers(5, 20, 3)
        A = family(rng, "specials" if complex_ else "zeros", (m, k), complex_)
        B = family(rng, "wide", (k, n), complex_)
        cases.append((A, B, *chunked(rng, A, B)))
    return cases


def test_processes_scheduler(rng):
    for A, B, a, b in _one_of_each(rng):
        outs = dask.compute(*[od.matmul(a, b, mode=mode) for mode in MODES], scheduler="processes", num_workers=2)
        for mode, C in zip(MODES, outs):
            with np.errstate(all="ignore"):
                assert_same_bits(C, ozaki.matmul(A, B, mode=mode))


def test_distributed_scheduler(rng):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        for A, B, a, b in _one_of_each(rng):
            outs = client.compute([od.matmul(a, b, mode=mode) for mode in MODES], sync=True)
            for mode, C in zip(MODES, outs):
                with np.errstate(all="ignore"):
                    assert_same_bits(C, ozaki.matmul(A, B, mode=mode))


# ---------------------------------------------------------------------- FFT --

def test_fft_along_unchunked_axis(rng):
    """Block by block along the other axes: the bits of ozaki.fft on the whole array when
    each block holds at least ozaki.fft.FOLD_MIN_ROWS transforms (lengths above 256
    choose their stage-2 path by the number of rows) or the length is a direct one."""
    from ozaki import fft as offt
    rows = offt.FOLD_MIN_ROWS
    x = family(rng, "normal", (2 * rows + 3, 300), complex_=True)          # 300 = 15 x 20: six-step
    dx = da.from_array(x, chunks=((rows + 1, rows + 2), -1))
    assert_same_bits(od.fft(dx).compute(), offt.fft(x))
    assert_same_bits(od.ifft(dx, n=40, norm="ortho").compute(), offt.ifft(x, n=40, norm="ortho"))
    y = family(rng, "normal", (12, 7, 48))
    dy = da.from_array(y, chunks=(5, 3, -1))
    assert_same_bits(od.rfft(dy).compute(), offt.rfft(y))
    spectrum = offt.rfft(y)
    dz = da.from_array(spectrum, chunks=(4, 7, -1))
    assert_same_bits(od.irfft(dz, n=48).compute(), offt.irfft(spectrum, n=48))
    dw = da.from_array(y, chunks=(5, -1, -1))
    assert_same_bits(od.fftn(dw, axes=(1, 2)).compute(), offt.fftn(y, axes=(1, 2)))
    assert_same_bits(od.ifft2(dw, s=(6, 40)).compute(), offt.ifft2(y, s=(6, 40)))
    assert_same_bits(od.rfftn(dw, axes=(1, 2)).compute(), offt.rfftn(y, axes=(1, 2)))
    assert_same_bits(od.fft(da.from_array(y, chunks=(-1, 3, 16)), axis=0).compute(), offt.fft(y, axis=0))
    assert od.fft(dx).chunks == dx.chunks and od.rfft(dy).chunks[-1] == (25,)


def test_fft_chunked_axis_raises():
    x = da.ones((8, 64), chunks=(4, 32))
    with pytest.raises(ValueError, match="axis 1 is split into 2 chunks"):
        od.fft(x)
    with pytest.raises(ValueError, match="axis 0 is split"):
        od.fftn(x, axes=(0,))
    with pytest.raises(ValueError, match="out of bounds"):
        od.fft(x.rechunk({1: -1}), axis=2)


# ---------------------------------------------------------------------- GPU --

@pytest.mark.gpu
@pytest.mark.parametrize("complex_,single", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["float64", "complex128", "float32", "complex64"])
def test_cupy_chunks(rng, complex_, single):
    """cupy chunks (the cupy backend's steps, the one-pass residue kernel, the GPU epilogue):
    the bits of ozaki.matmul on the whole cupy arrays, and of the CPU; k split unevenly.
    ``single``: float32/complex64 operands and results (the epilogue built with OUT_T=float)."""
    import cupy
    for name, (m, k, n) in (("phi", (300, 1000, 200)), ("specials", (70, 90, 60)), ("wide", (50, 70, 40))):
        A, B = family(rng, name, (m, k), complex_), family(rng, name, (k, n), complex_)
        if single:
            narrow = np.complex64 if complex_ else np.float32
            with np.errstate(all="ignore"):
                A, B = A.astype(narrow), B.astype(narrow)
        dA, dB = cupy.asarray(A), cupy.asarray(B)
        ka, kb = split_k(rng, k)
        a = da.from_array(dA, chunks=(uneven(rng, m), ka), asarray=False)
        b = da.from_array(dB, chunks=(kb, uneven(rng, n)), asarray=False)
        for mode in MODES:
            C = od.matmul(a, b, mode=mode)
            assert type(C._meta).__module__.startswith("cupy")
            got = C.compute(scheduler="threads", num_workers=1)
            assert isinstance(got, cupy.ndarray)
            with np.errstate(all="ignore"):
                assert_same_bits(cupy.asnumpy(got), cupy.asnumpy(ozaki.matmul(dA, dB, mode=mode)))
                assert_same_bits(cupy.asnumpy(got), ozaki.matmul(A, B, mode=mode))


@pytest.mark.gpu
def test_cupy_fft():
    import cupy
    from ozaki import fft as offt
    x = cupy.asarray(np.random.default_rng().standard_normal((40, 300)))
    dx = da.from_array(x, chunks=(20, -1), asarray=False)
    assert_same_bits(cupy.asnumpy(od.fft(dx).compute(scheduler="threads", num_workers=1)),
                     cupy.asnumpy(offt.fft(x)))


def test_ozaki_matmul_and_dot_take_dask_arrays(rng):
    """ozaki.matmul / ozaki.dot on dask operands stay lazy and give ozaki.matmul's bits."""
    import ozaki
    A = rng.standard_normal((45, 70)) * np.exp2(rng.integers(-40, 40, (45, 70)))
    B = rng.standard_normal((70, 33))
    dA, dB = da.from_array(A, chunks=(20, 29)), da.from_array(B, chunks=(17, 11))
    for mode in ("fast", "accurate", "exact"):
        C = ozaki.matmul(dA, dB, mode=mode)
        assert isinstance(C, da.Array)
        want = ozaki.matmul(A, B, mode=mode)
        assert np.array_equal(C.compute().view(np.int64), want.view(np.int64))
        assert np.array_equal(ozaki.dot(dA, B, mode=mode).compute().view(np.int64), want.view(np.int64))
    with pytest.raises(TypeError, match="dask"):
        ozaki.matmul(dA, dB, out=np.empty((45, 33)))
