"""ozaki.fft's numpy.fft interface: numpy 2's argument rules, out=, dtypes, the helper
functions, and the scipy.fft backend's extra functions, against numpy and scipy themselves."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki.fft as of


def close(got, want, tol=1e-12):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    scale = max(float(np.abs(want).max()), 1.0) if want.size else 1.0
    assert np.allclose(got, want, rtol=tol, atol=tol * scale)


def test_repeated_axes_in_numpys_order():
    x = np.ones((2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = of.rfftn(x, axes=(0, 0, 1), s=(10, 20, 40))
    assert got.shape == np.fft.rfftn(x, axes=(0, 0, 1), s=(10, 20, 40)).shape == (10, 21)
    close(got, np.fft.fft(np.fft.fft(np.fft.rfft(x, axis=1, n=40), axis=0, n=20), axis=0, n=10))
    y = np.random.default_rng(1).standard_normal((4, 5)) + 0j
    close(of.fftn(y, s=(10, 20), axes=(0, 0)), np.fft.fftn(y, s=(10, 20), axes=(0, 0)))
    close(of.irfftn(y, s=(6, 7, 8), axes=(1, 0, 1)), np.fft.irfftn(y, s=(6, 7, 8), axes=(1, 0, 1)))


@pytest.mark.parametrize("fn", ["fftn", "ifftn", "fft2", "ifft2", "rfftn", "irfftn", "rfft2", "irfft2"])
def test_s_minus_one_and_deprecations(fn, rng):
    x = rng.standard_normal((6, 10))
    ours, numpys = getattr(of, fn), getattr(np.fft, fn)
    close(ours(x, s=(-1, 5), axes=(0, 1)), numpys(x, s=(-1, 5), axes=(0, 1)))
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None` if `s`"):
        got = ours(x, s=(-1, 5), axes=None)
    with pytest.warns(DeprecationWarning):
        want = numpys(x, s=(-1, 5), axes=None)
    close(got, want)
    with pytest.warns(DeprecationWarning, match="array containing `None` values to `s`"):
        got = ours(x, s=(None, 4), axes=(0, 1))
    with pytest.warns(DeprecationWarning):
        want = numpys(x, s=(None, 4), axes=(0, 1))
    close(got, want)


def test_out_argument(rng):
    x = rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))
    out = np.zeros((6, 8), complex)
    assert of.fft(x, out=out) is out
    close(out, np.fft.fft(x))
    fortran = np.zeros((8, 6), complex).T
    assert of.fft(x, axis=0, out=fortran) is fortran
    close(fortran, np.fft.fft(x, axis=0))
    y = x.copy()
    assert of.fft(y, out=y) is y                                  # in place: computed first
    close(y, np.fft.fft(x))
    r = rng.standard_normal((6, 8))
    out = np.zeros((6, 5), complex)
    assert of.rfft(r, out=out) is out
    close(out, np.fft.rfft(r))
    out = np.zeros((6, 8))
    assert of.irfft(np.fft.rfft(r), 8, out=out) is out
    close(out, np.fft.irfft(np.fft.rfft(r), 8))
    out = np.zeros((6, 8), np.complex64)                          # same_kind: complex128 -> complex64
    of.fft(x, out=out)
    close(out, np.fft.fft(x).astype(np.complex64), 1e-6)


def test_out_errors_as_numpy():
    x = np.arange(30.)
    for fn in (of.fft, np.fft.fft):
        with pytest.raises(TypeError, match="must be of ArrayType"):
            fn(x, out="")
        with pytest.raises(ValueError, match="has wrong shape"):
            fn(x, out=np.zeros_like(x).reshape(5, -1))
        with pytest.raises(TypeError, match="Cannot cast"):
            fn(x, out=np.zeros_like(x, dtype=float))                # a float out drops nothing silently
    x3 = np.ones((10, 5, 6)) + 0j
    for fn in (of.fftn, np.fft.fftn):
        with pytest.raises(ValueError, match="has wrong shape"):
            fn(x3, out=np.zeros_like(x3), s=(3, 3, 3), axes=(0, 1, 2))
    with pytest.raises(ValueError, match="wrong shape"):
        of.fft(np.ones((4, 6)), out=np.zeros((5, 6), complex))    # numpy's ufunc refuses it too


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_hermitian_and_2d_functions(rng, norm):
    x = rng.standard_normal((5, 14)) + 1j * rng.standard_normal((5, 14))
    r = rng.standard_normal((6, 9))
    close(of.hfft(x, norm=norm), np.fft.hfft(x, norm=norm))
    close(of.hfft(x, 27, norm=norm), np.fft.hfft(x, 27, norm=norm))
    close(of.ihfft(r, norm=norm), np.fft.ihfft(r, norm=norm))
    close(of.ihfft(r, 13, axis=0, norm=norm), np.fft.ihfft(r, 13, axis=0, norm=norm))
    close(of.rfft2(r, norm=norm), np.fft.rfft2(r, norm=norm))
    close(of.irfft2(x, s=(4, 11), norm=norm), np.fft.irfft2(x, s=(4, 11), norm=norm))


def test_helpers_same_values_as_numpy():
    for n in (1, 2, 7, 8, 31):
        for d in (1.0, 0.1, 3):
            assert np.array_equal(of.fftfreq(n, d), np.fft.fftfreq(n, d))
            assert np.array_equal(of.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    x = np.arange(60).reshape(3, 4, 5)
    for axes in (None, 0, 1, (0, 2), [2, 1]):
        assert np.array_equal(of.fftshift(x, axes), np.fft.fftshift(x, axes))
        assert np.array_equal(of.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    with pytest.raises(ValueError, match="integer"):
        of.fftfreq(4.0)


@pytest.mark.parametrize("dtype, out", [(np.float32, np.complex64), (np.float16, np.complex64),
                                        (np.complex64, np.complex64), (np.int16, np.complex128),
                                        (np.bool_, np.complex128), (np.float64, np.complex128)])
def test_dtypes_as_numpy_2(dtype, out):
    x = (np.arange(12) % 5).astype(dtype)
    assert of.fft(x).dtype == np.fft.fft(x).dtype == out
    if np.dtype(dtype).kind != "c":
        assert of.rfft(x).dtype == np.fft.rfft(x).dtype
        assert np.array_equal(of.rfft(x), of.rfft(x.astype(np.float64)).astype(of.rfft(x).dtype))
    assert of.irfft(x).dtype == np.fft.irfft(x).dtype
    # computed in float64 (exact conversion), rounded once more to single precision
    assert np.array_equal(of.fft(x), of.fft(x.astype(np.result_type(x, 1j))).astype(out))


def test_extended_precision_refused():
    with pytest.raises(TypeError, match="extended precision"):
        of.fft(np.ones(4, np.longdouble))


def test_scipy_backend_extras(rng):
    scipy_fft = pytest.importorskip("scipy.fft")
    x = rng.standard_normal((6, 10)) + 1j * rng.standard_normal((6, 10))
    r = rng.standard_normal((6, 10))
    want = {name: getattr(scipy_fft, name)(arg, **kw) for name, arg, kw in
            [("hfft2", x, {}), ("hfftn", x, {"s": (4, 9)}), ("ihfft2", r, {}), ("ihfftn", r, {"axes": (0,)}),
             ("hfft", x, {"n": 11}), ("ihfft", r, {"norm": "ortho"}), ("fftn", x, {"s": (-1, 7)}),
             ("irfftn", x, {"workers": 2})]}
    with scipy_fft.set_backend(of, only=True):
        for name, arg, kw in [("hfft2", x, {}), ("hfftn", x, {"s": (4, 9)}), ("ihfft2", r, {}),
                              ("ihfftn", r, {"axes": (0,)}), ("hfft", x, {"n": 11}), ("ihfft", r, {"norm": "ortho"}),
                              ("fftn", x, {"s": (-1, 7)}), ("irfftn", x, {"workers": 2})]:
            close(getattr(scipy_fft, name)(arg, **kw), want[name])
        with pytest.raises(ValueError, match="unique"):
            scipy_fft.fftn(x, axes=(0, 0))
        with pytest.raises(NotImplementedError, match="No selected backends"):
            scipy_fft.dct(r)                                      # declined: dct/dst are not emulated
    assert of.__ua_function__(scipy_fft.fft, (x,), {"plan": object()}) is NotImplemented


@st.composite
def nd_case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    k = draw(st.integers(1, ndim))
    axes = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=k, max_size=k))
    s = draw(st.one_of(st.none(), st.lists(st.sampled_from([-1, 1, 2, 3, 5, 8]), min_size=k, max_size=k)))
    norm = draw(st.sampled_from([None, "ortho", "forward"]))
    fn = draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]))
    return shape, axes, s, norm, fn


@given(nd_case(), st.integers(0, 2 ** 32 - 1))
@settings(max_examples=40, deadline=None)
def test_property_nd_matches_numpy(case, seed):
    """Random shapes, axes (repeats included), s (with -1) and norms: numpy's shapes, dtypes
    and values (or numpy's exception type)."""
    shape, axes, s, norm, fn = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if fn != "rfftn":
        x = x + 1j * rng.standard_normal(shape)
    try:
        want = getattr(np.fft, fn)(x, s=s, axes=axes, norm=norm)
    except Exception as e:            # noqa: BLE001 - the same kind of error is expected
        with pytest.raises(type(e)):
            getattr(of, fn)(x, s=s, axes=axes, norm=norm)
        return
    close(getattr(of, fn)(x, s=s, axes=axes, norm=norm), want)


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(0, 5000), length=st.integers(1, 3000), points=st.integers(1, 1 << 16))
def test_row_blocks_cover_evenly(rows, length, points):
    """The blocks of an axis' rows: contiguous, covering every row once, each within
    the point budget (or 2 FOLD_MIN_ROWS rows) and, when there are several, of at
    least FOLD_MIN_ROWS rows (the whole batch's plan)."""
    from ozaki.fft import interface
    old = interface.BLOCK_POINTS
    interface.BLOCK_POINTS = points
    try:
        blocks = interface.row_blocks(rows, length)
    finally:
        interface.BLOCK_POINTS = old
    assert blocks[0].start == 0 and blocks[-1].stop == rows
    assert all(b.stop == c.start for b, c in zip(blocks, blocks[1:]))
    sizes = [b.stop - b.start for b in blocks]
    per_block = max(2 * of.FOLD_MIN_ROWS, points // length)
    assert max(sizes) <= per_block
    if len(blocks) > 1:
        assert min(sizes) >= of.FOLD_MIN_ROWS and max(sizes) - min(sizes) <= 1


def test_blocked_axes_give_the_whole_bits(rng, monkeypatch):
    """Transforms cut into row blocks (here forced small) give the unblocked bits in exact
    mode, specials and signed zeros included, for every kind."""
    from ozaki.fft import interface
    x = rng.standard_normal((37, 6, 40)) + 1j * rng.standard_normal((37, 6, 40))
    x[3, 2, 5] = np.inf
    x[20, 1, :] = -0.0
    x[30, 4, 7] = np.nan
    real = x.real.copy()
    cases = [(of.fftn, x), (of.ifft, x), (of.rfftn, real), (of.irfft, x), (of.hfft, x)]
    whole = [fn(data) for fn, data in cases]
    monkeypatch.setattr(interface, "BLOCK_POINTS", 40 * 2 * of.FOLD_MIN_ROWS)
    assert len(interface.row_blocks(37 * 6, 40)) > 1
    for (fn, data), ref in zip(cases, whole):
        got = fn(data)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        assert np.array_equal(got.view(np.int64), ref.view(np.int64))       # NaN payloads too


def test_axes_read_and_written_by_blocks(rng, monkeypatch):
    """transform_axis reads the rows of a moved axis and writes the result block by block:
    through a (rows, L) view, through slabs of the first axis (a 1024^3 fftn's middle axis:
    no moved-axis copy of the whole array and no second result), or from one contiguous
    copy where the blocks do not fall on slabs; every way gives the one-block bits and
    layout (C, Fortran, strided and transposed inputs)."""
    from ozaki.fft import interface
    base = rng.standard_normal((8, 32, 40)) + 1j * rng.standard_normal((8, 32, 40))
    base[2, 3, 4], base[5, 0, :] = np.nan, -0.0
    inputs = [base, np.asfortranarray(base), base[:, ::2, :], base.transpose(2, 0, 1)]
    calls = [lambda x, ax: of.fft(x, axis=ax), lambda x, ax: of.ifft(x, n=24, axis=ax, norm="ortho"),
             lambda x, ax: of.irfft(x, n=20, axis=ax), lambda x, ax: of.rfft(x.real.astype(np.float32), axis=ax)]
    want = [[f(x, ax) for x in inputs for ax in range(3)] for f in calls]
    ways = []
    read = interface._Rows.read

    def counted(self, rows):
        ways.append("whole" if not self.writable else "view" if self.flat is not None else "slabs")
        return read(self, rows)
    monkeypatch.setattr(interface._Rows, "read", counted)
    for points in (32 * 160, 24 * 33, 1 << 26):       # two blocks of 4 slabs on (8, 40) rows; unaligned; one
        monkeypatch.setattr(interface, "BLOCK_POINTS", points)
        for f, refs in zip(calls, want):
            for got, ref, (x, ax) in zip((f(x, ax) for x in inputs for ax in range(3)), refs,
                                         ((x, ax) for x in inputs for ax in range(3))):
                assert got.dtype == ref.dtype and got.shape == ref.shape and got.strides == ref.strides
                assert np.array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(ref).view(np.uint8))
    assert {"view", "slabs", "whole"} <= set(ways), set(ways)
