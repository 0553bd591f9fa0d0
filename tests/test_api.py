"""numpy.matmul / numpy.dot conventions: shapes, batching, dtypes, out=, axes=, errors, options."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki import reference
from tests.bits import same_bits


def exact_np(a, b):
    """Reference with numpy.matmul's shape rules, entries exact-then-rounded."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    out = np.empty(batch + (a2.shape[-2], b2.shape[-1]))
    for idx in np.ndindex(*batch):
        x = np.broadcast_to(a2, batch + a2.shape[-2:])[idx]
        y = np.broadcast_to(b2, batch + b2.shape[-2:])[idx]
        out[idx] = reference.exact_matmul(x, y)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5, 3)),
                                   ((4, 5), (3, 5, 2)), ((2, 1, 4, 5), (3, 5, 2)), ((1, 3), (3, 1)),
                                   ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((3, 4, 0), (0, 2))])
def test_shapes_like_numpy(rng, sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    got = ozaki.matmul(a, b, mode="exact")
    assert got.shape == np.matmul(a, b).shape
    assert got.dtype == np.float64
    assert same_bits(got, exact_np(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32, np.uint16, np.bool_, np.int64])
def test_exactly_convertible_dtypes_with_floats(rng, dtype):
    """A float64 operand with one of a type float64 holds exactly: float64, the exact product rounded once."""
    a = (rng.standard_normal((4, 6)) * 10).astype(dtype)
    b = rng.standard_normal((6, 3))
    for x, y in ((a, b), (b.T, a.T)):
        got = ozaki.matmul(x, y, mode="exact")
        assert got.dtype == np.float64
        assert same_bits(got, reference.exact_matmul(x.astype(float), y.astype(float)))


def test_narrow_float_result_types(rng):
    """A float16 result type: the exact product rounded once to float64 (no float16
    emulation); float32: rounded once to float32 (tests/test_float32.py)."""
    a, b = rng.standard_normal((4, 6)).astype(np.float16), rng.standard_normal((6, 3)).astype(np.float16)
    got = ozaki.matmul(a, b, mode="exact")
    assert got.dtype == np.float64
    assert same_bits(got, reference.exact_matmul(a.astype(float), b.astype(float)))
    got = ozaki.matmul(a.astype(np.float32), b, mode="exact")
    assert got.dtype == np.float32
    assert same_bits(got, reference.exact_matmul(a, b, dtype=np.float32))


def test_refused_dtypes():
    with pytest.raises(TypeError, match="cannot hold exactly"):
        ozaki.matmul(np.ones((2, 2), np.clongdouble), np.ones((2, 2)))
    with pytest.raises(TypeError, match="2\\*\\*53"):
        ozaki.matmul(np.array([[2 ** 60]], dtype=np.int64), np.ones((1, 1)))
    with pytest.raises(TypeError, match="cannot hold exactly"):
        ozaki.matmul(np.ones((2, 2), np.longdouble), np.ones((2, 2)))
    with pytest.raises(TypeError, match="unsupported dtype"):
        ozaki.matmul(np.array([["a"]]), np.ones((1, 1)))
    with pytest.raises(TypeError, match="unsupported dtype"):
        ozaki.matmul(np.ones((2, 2), object), np.ones((2, 2), object))
    with pytest.raises(TypeError, match="unsupported dtype"):
        ozaki.dot(np.ones((2, 2), object), 2.0)


def test_shape_errors():
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        ozaki.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="not have enough dimensions"):
        ozaki.matmul(np.float64(2.0), np.ones((1, 1)))
    with pytest.raises(ValueError, match="could not be broadcast"):
        ozaki.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))
    for sa, sb in [((1,), (2,)), ((2, 1), (2,)), ((2,), (1, 2)), ((1, 2), (3, 1)), ((1,), ()), ((), (1,)),
                   ((2, 2, 1), (3, 1, 2))]:
        with pytest.raises(ValueError) as theirs:
            np.matmul(np.ones(sa), np.ones(sb))
        with pytest.raises(ValueError) as ours:
            ozaki.matmul(np.ones(sa), np.ones(sb))
        assert str(ours.value) == str(theirs.value).split("  and requested shape")[0]


def test_option_errors():
    a = np.ones((2, 2))
    with pytest.raises(ValueError, match="mode"):
        ozaki.matmul(a, a, mode="precise")
    with pytest.raises(ValueError, match="num_moduli"):
        ozaki.matmul(a, a, num_moduli=0)
    with pytest.raises(ValueError, match="num_moduli"):
        ozaki.matmul(a, a, num_moduli=50)
    with pytest.raises(TypeError, match="num_moduli"):
        ozaki.matmul(a, a, num_moduli=2.5)
    with pytest.raises(ValueError, match="substrate"):
        ozaki.matmul(a, a, substrate="int4")
    with pytest.raises(TypeError):
        with ozaki.config(precision=3):
            pass


def test_config_context(rng):
    a, b = rng.standard_normal((5, 7)) * 1e-8, rng.standard_normal((7, 3))
    a[0, 0] = 1e8
    with ozaki.config(mode="exact"):
        inside = ozaki.matmul(a, b)
        assert ozaki.get_config()["mode"] == "exact"
    assert ozaki.get_config()["mode"] == "accurate"
    assert same_bits(inside, reference.exact_matmul(a, b))
    with ozaki.config(mode="fast", num_moduli=2):
        coarse = ozaki.matmul(a, b)
    assert not same_bits(coarse, inside)


def test_dot_like_numpy(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4, 2))
    got = ozaki.dot(a, b, mode="exact")
    assert got.shape == np.dot(a, b).shape
    ref = np.array([[[[reference.exact_dot(a[i, j], b[k, :, l]) for l in range(2)] for k in range(5)]
                     for j in range(3)] for i in range(2)])
    assert same_bits(got, ref)
    v = rng.standard_normal(4)
    assert ozaki.dot(v, v, mode="exact") == reference.exact_dot(v, v)
    assert ozaki.dot(3.0, np.array([1.0, 2.0])).tolist() == [3.0, 6.0]
    with pytest.raises(ValueError, match="not aligned"):
        ozaki.dot(a, rng.standard_normal((5, 3, 2)))


# --- integer and bool operands: numpy's result types, exact values ------------------------------

INT_TYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def int_reference(a, b):
    """numpy.matmul's integer/bool result from exact Python-int products (object arrays), wrapped."""
    rt = np.result_type(a.dtype, b.dtype)
    exact = np.matmul(a.astype(object), b.astype(object))
    if rt == np.bool_:
        return np.asarray(exact != 0, dtype=bool) if np.ndim(exact) else np.bool_(exact != 0)
    bits = 8 * rt.itemsize
    signed = rt.kind == "i"

    def wrap(v):
        v = int(v) % 2 ** bits
        return v - 2 ** bits if signed and v >= 2 ** (bits - 1) else v
    return np.vectorize(wrap, otypes=[object])(exact).astype(rt)


def random_ints(rng, dtype, shape, top=None):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if top is None else (max(info.min, -top), min(info.max, top))
    return rng.integers(lo, hi, shape, dtype=dtype, endpoint=True)


@settings(max_examples=60, deadline=None)
@given(ta=st.sampled_from(INT_TYPES), tb=st.sampled_from(INT_TYPES), m=st.integers(1, 4),
       k=st.integers(0, 40), n=st.integers(1, 4), small=st.booleans(), seed=st.integers(0, 2 ** 32))
def test_integer_products_like_numpy(ta, tb, m, k, n, small, seed):
    rng = np.random.default_rng(seed)
    a = random_ints(rng, ta, (2, m, k), 100 if small else None)
    b = random_ints(rng, tb, (k, n), 100 if small else None)
    if np.result_type(a.dtype, b.dtype).kind == "f":      # uint64 with a signed type: numpy goes to float64
        return
    got = ozaki.matmul(a, b)
    want = int_reference(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    with np.errstate(over="ignore"):
        assert np.array_equal(got, np.matmul(a, b))


def test_integer_extremes_and_options(rng):
    info = np.iinfo(np.int64)
    a = np.array([[info.min, info.max, -1, 1]] * 3, dtype=np.int64)
    b = np.array([[info.max], [info.min], [info.max], [info.min]], dtype=np.int64)
    assert np.array_equal(ozaki.matmul(a, b), int_reference(a, b))
    # integers are always exact: a coarse mode changes nothing
    a, b = random_ints(rng, np.int32, (5, 300)), random_ints(rng, np.int32, (300, 4))
    assert np.array_equal(ozaki.matmul(a, b, mode="fast", num_moduli=2), int_reference(a, b))
    got = ozaki.matmul([[1, 2], [3, 4]], [[5], [6]])
    assert got.dtype == np.array(1).dtype and got.tolist() == [[17], [39]]


def test_bool_products(rng):
    a, b = rng.random((3, 6, 5)) < 0.3, rng.random((5, 4)) < 0.3
    got = ozaki.matmul(a, b)
    assert got.dtype == np.bool_
    assert np.array_equal(got, np.matmul(a, b))
    assert np.array_equal(got, np.einsum("gik,kj->gijk", a, b).any(axis=-1))
    assert got.view(np.uint8).max(initial=0) <= 1
    v = a[0, 0]
    assert type(ozaki.matmul(v, v)) is np.bool_ and ozaki.matmul(v, v) == bool(np.any(v & v))
    assert np.array_equal(ozaki.dot(a[0], b), np.dot(a[0], b))


def test_scalars_for_vector_products(rng):
    v = rng.standard_normal(7)
    w = rng.standard_normal(7) + 1j * rng.standard_normal(7)
    for f in (ozaki.matmul, ozaki.dot):
        r = f(v, v, mode="exact")
        assert type(r) is np.float64 and r == reference.exact_dot(v, v)
        assert type(f(w, w)) is np.complex128
        assert type(f(np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16))) is np.int16
    assert type(ozaki.dot(np.array(2.0), np.array(3.0))) is np.float64


# --- out= ------------------------------------------------------------------------------------

def test_matmul_out(rng):
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 2))
    want = ozaki.matmul(a, b, mode="exact")
    assert same_bits(want, exact_np(a, b))
    out = np.full((3, 4, 2), np.nan)
    assert ozaki.matmul(a, b, out=out, mode="exact") is out and same_bits(out, want)
    out = np.full((3, 4, 2), np.nan)
    assert ozaki.matmul(a, b, out, mode="exact") is out and same_bits(out, want)      # positional
    big = np.full((3, 8, 2), np.nan)
    view = big[:, ::2]                                                                   # strided
    assert ozaki.matmul(a, b, out=view, mode="exact") is view and same_bits(big[:, ::2], want)
    assert np.isnan(big[:, 1::2]).all()
    wide = np.zeros((2, 3, 4, 2))                                                        # loop dims broadcast
    ozaki.matmul(a, b, out=wide, mode="exact")
    assert same_bits(wide[0], want) and same_bits(wide[1], want)
    c = np.zeros((3, 4, 2), dtype=np.complex128)                                         # same_kind upcast
    ozaki.matmul(a, b, out=(c,), mode="exact")
    assert same_bits(c.real, want) and not c.imag.any()
    sq = rng.standard_normal((4, 4))                                                    # out aliases an input
    want = ozaki.matmul(sq, sq, mode="exact")
    ozaki.matmul(sq, sq, out=sq, mode="exact")
    assert same_bits(sq, want)
    o = np.zeros(())
    v = rng.standard_normal(6)
    assert ozaki.matmul(v, v, out=o, mode="exact") is o and o == reference.exact_dot(v, v)


@pytest.mark.parametrize("out, error", [
    (np.zeros((4, 2), np.int32), TypeError),            # float64 -> int32 is not same_kind
    (np.zeros((4, 3)), ValueError),                     # core dimension
    (np.zeros((5, 2)), ValueError),
    (np.zeros((2,)), ValueError),                       # too few dimensions
    (np.zeros((3, 4, 2))[:, :, :1], ValueError),
    ([[0.0, 0.0]] * 4, TypeError),                      # not an array
])
def test_matmul_out_errors_like_numpy(out, error):
    a, b = np.ones((4, 5)), np.ones((5, 2))
    with pytest.raises(error) as theirs:
        np.matmul(a, b, out=out)
    before = np.array(out, copy=True)
    with pytest.raises(error) as ours:
        ozaki.matmul(a, b, out=out)
    assert np.array_equal(np.asarray(out), before)              # nothing written on failure
    if error is TypeError and isinstance(out, np.ndarray):
        assert str(ours.value) == str(theirs.value)
    complex_out = np.zeros((4, 2))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'matmul' output from dtype\\('complex128'\\)"):
        ozaki.matmul(a + 1j, b, out=complex_out)
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        ozaki.matmul(np.ones((0, 1, 1)), np.ones((0, 1, 1)), out=np.ones((1, 1, 1)))


def test_dot_out(rng):
    f, v = rng.standard_normal((64, 16)), rng.standard_normal((16, 8))
    r = np.empty((64, 8))
    assert ozaki.dot(f, v, r, mode="exact") is r and same_bits(r, exact_np(f, v))
    assert ozaki.dot(f, v, out=r) is r
    a3 = rng.standard_normal((2, 3, 16))
    r3 = np.empty((2, 3, 8))
    assert ozaki.dot(a3, v, r3, mode="exact") is r3 and same_bits(r3, exact_np(a3, v))
    s = np.empty(())
    x = rng.standard_normal(16)
    got = ozaki.dot(x, x, s, mode="exact")
    assert got == s == reference.exact_dot(x, x)
    for bad in (np.empty((64, 7)), np.empty((64, 8), np.float32), np.empty((8, 64)).T, np.empty((64, 16))[:, ::2],
                np.empty((1, 64, 8)), np.empty(64), np.empty((64, 8), np.complex128)):
        with pytest.raises(ValueError) as theirs:
            np.dot(f, v, bad)
        with pytest.raises(ValueError) as ours:
            ozaki.dot(f, v, bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="'out' must be an array"):
        ozaki.dot(f, v, [0.0])
    with pytest.raises(TypeError, match="return arrays must be of ArrayType"):
        ozaki.matmul(f, v, out=[0.0], axes=[(0, 1), (0, 1), (0, 1)])


# --- axes= -----------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_matmul_axes_like_numpy(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32)))
    nd_a, nd_b = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    m, k, n = (int(v) for v in rng.integers(1, 5, 3))
    loop = tuple(int(v) for v in rng.integers(1, 3, max(nd_a, nd_b) - 2)) if max(nd_a, nd_b) > 2 else ()
    shape_a = (loop[len(loop) - (nd_a - 2):] if nd_a > 2 else ()) + ((m, k) if nd_a > 1 else (k,))
    shape_b = (loop[len(loop) - (nd_b - 2):] if nd_b > 2 else ()) + ((k, n) if nd_b > 1 else (k,))
    core_a, core_b = min(nd_a, 2), min(nd_b, 2)
    out_core = (nd_a > 1) + (nd_b > 1)
    out_nd = len(loop) + out_core
    pa = data.draw(st.permutations(range(nd_a)))
    pb = data.draw(st.permutations(range(nd_b)))
    po = data.draw(st.permutations(range(out_nd)))
    # operands stored with their axes permuted; the axes argument says where the core dims went
    a = np.transpose(rng.standard_normal(shape_a), pa)      # a's axis j is the natural axis pa[j]
    b = np.transpose(rng.standard_normal(shape_b), pb)
    ax_a = tuple(pa.index(i) for i in range(nd_a - core_a, nd_a))
    ax_b = tuple(pb.index(i) for i in range(nd_b - core_b, nd_b))
    ax_o = tuple(po[-out_core:]) if out_core else ()
    neg = data.draw(st.booleans())
    axes = [tuple(x - nd if neg else x for x in ax) for ax, nd in ((ax_a, nd_a), (ax_b, nd_b))] + [ax_o]
    axes = [ax[0] if len(ax) == 1 and data.draw(st.booleans()) else ax for ax in axes]
    want = np.matmul(a, b, axes=axes)
    got = ozaki.matmul(a, b, axes=axes, mode="exact")
    assert np.shape(got) == want.shape
    natural = exact_np(np.moveaxis(a, ax_a, tuple(range(-core_a, 0))), np.moveaxis(b, ax_b, tuple(range(-core_b, 0))))
    ref = np.moveaxis(natural, tuple(range(-out_core, 0)), ax_o) if out_core else natural
    assert same_bits(np.asarray(got), ref)
    out = np.full(want.shape, np.nan)
    assert ozaki.matmul(a, b, out=out, axes=axes, mode="exact") is out and same_bits(out, ref)


@pytest.mark.parametrize("a_shape, b_shape, axes", [
    ((2, 2), (2, 2), [(0, 1), (0, 1)]),
    ((2, 2), (2, 2), [(0, 1), (0, 1), (0,)]),
    ((2, 2), (2, 2), [(0, 1), (0, 5), (0, 1)]),
    ((2, 2), (2, 2), [(0, 0), (0, 1), (0, 1)]),
    ((2, 2), (2, 2), [(0, 1), (0, 1), (0, 1), (0, 1)]),
    ((2, 2), (2, 2), (0, 1)),
    ((2, 2), (2, 2), [0, (0, 1), (0, 1)]),
    ((2, 2), (2, 2), [[0, 1], (0, 1), (0, 1)]),
    ((3,), (3, 2), [0, (0, 1), 1]),
    ((2, 2), (2, 2), [(1.0, 0), (0, 1), (0, 1)]),
])
def test_matmul_axes_errors_like_numpy(a_shape, b_shape, axes):
    a, b = np.ones(a_shape), np.ones(b_shape)
    with pytest.raises(Exception) as theirs:
        np.matmul(a, b, axes=axes)
    with pytest.raises(Exception) as ours:
        ozaki.matmul(a, b, axes=axes)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


# --- dot shapes, numpy's errors ---------------------------------------------------------------

@pytest.mark.parametrize("sa, sb", [((2, 4, 3), (4,)), ((2, 3), (4, 2)), ((2, 3), (4,)), ((3,), (4,)),
                                    ((3,), (4, 2)), ((2, 3, 4), (5, 3, 2)), ((2, 3), (2, 4, 3))])
def test_dot_alignment_errors_like_numpy(sa, sb):
    with pytest.raises(ValueError) as theirs:
        np.dot(np.ones(sa), np.ones(sb))
    with pytest.raises(ValueError) as ours:
        ozaki.dot(np.ones(sa), np.ones(sb))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("sa, sb", [((2, 3, 4), (4,)), ((4,), (3, 4, 2)), ((2, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)),
                                    ((), (3, 2)), ((2, 3), ()), ((), ()), ((0, 4), (3, 4, 0))])
def test_dot_shapes_exact(rng, sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    got = np.asarray(ozaki.dot(a, b, mode="exact"))
    want = np.dot(a, b)
    assert got.shape == np.shape(want)
    ref = np.zeros(np.shape(want))
    if a.ndim == 0 or b.ndim == 0:
        ref = a * b                                   # one IEEE product per entry: exact then rounded once
    else:
        bt = np.moveaxis(b, -2, 0) if b.ndim > 1 else b
        for idx in np.ndindex(*ref.shape):
            ia, ib = idx[:a.ndim - 1], idx[a.ndim - 1:]
            col = bt[(slice(None),) + ib] if b.ndim > 1 else bt
            ref[idx] = reference.exact_dot(a[ia], col)
    assert same_bits(got, np.asarray(ref))


# --- options -----------------------------------------------------------------------------------

@pytest.mark.parametrize("options, error", [
    (dict(mode="bogus"), ValueError), (dict(num_moduli=-7), ValueError), (dict(num_moduli=50), ValueError),
    (dict(num_moduli=2.5), TypeError), (dict(substrate="int4"), ValueError), (dict(path="fastest"), ValueError),
    (dict(workspace=0), ValueError), (dict(workspace="1G"), TypeError), (dict(precision=3), TypeError),
])
def test_config_checks_at_once(options, error):
    with pytest.raises(error):
        ozaki.config(**options)            # no `with`: the call itself raises
    assert ozaki.get_config() == {"mode": "accurate", "num_moduli": None, "substrate": "int8",
                                  "workspace": None, "path": "auto"}


def test_options_checked_on_every_path():
    B = np.ones((3, 2))
    for a in (np.array(2.0), np.ones(3), np.ones((4, 3)), np.ones((2, 4, 3)), np.ones((2, 3), np.int8),
              np.ones(3, bool)):
        with pytest.raises(ValueError, match="mode"):
            ozaki.dot(a, B, mode="bogus", num_moduli=-7)
        with pytest.raises(ValueError, match="num_moduli"):
            ozaki.dot(a, B, num_moduli=-7)
        if a.ndim:
            with pytest.raises(ValueError, match="mode"):
                ozaki.matmul(a, B, mode="bogus")
            with pytest.raises(ValueError, match="substrate"):
                ozaki.matmul(a, B, substrate="bogus")


def test_config_reaches_the_scheme(monkeypatch, rng):
    seen = []
    real = ozaki.scheme.matmul_stack

    def spy(A, B, mode, num_moduli, backend, workspace=None, substrate="int8", path="auto", out_dtype=None):
        seen.append((mode, num_moduli, workspace, substrate, path))
        return real(A, B, mode, num_moduli, backend, workspace, substrate, path, out_dtype)
    monkeypatch.setattr(ozaki.scheme, "matmul_stack", spy)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    with ozaki.config(mode="fast", num_moduli=12, substrate="fp8", workspace=10 ** 6, path="cublas"):
        ozaki.matmul(a, b)
        ozaki.dot(a, b, substrate="int8")
    ozaki.matmul(a, b)
    assert seen == [("fast", 12, 10 ** 6, "fp8", "cublas"), ("fast", 12, 10 ** 6, "int8", "cublas"),
                    ("accurate", None, None, "int8", "auto")]


def test_config_per_thread():
    """One config object entered by two threads at once: each thread gets its own defaults back."""
    import threading
    cm = ozaki.config(mode="exact")
    entered, release = threading.Barrier(2), threading.Event()
    seen = {}

    def worker(name, outer):
        with ozaki.config(num_moduli=outer):
            with cm:
                entered.wait()
                seen[name + " inside"] = ozaki.get_config()
                if name == "a":
                    release.wait()
            seen[name + " after"] = ozaki.get_config()
            if name == "b":
                release.set()
    threads = [threading.Thread(target=worker, args=("a", 7)), threading.Thread(target=worker, args=("b", 9))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["a inside"]["mode"] == seen["b inside"]["mode"] == "exact"
    assert (seen["a after"]["mode"], seen["a after"]["num_moduli"]) == ("accurate", 7)
    assert (seen["b after"]["mode"], seen["b after"]["num_moduli"]) == ("accurate", 9)


def test_config_nests_and_decorates():
    @ozaki.config(mode="exact")
    def inner():
        return ozaki.get_config()["mode"]
    cm = ozaki.config(num_moduli=10)
    with cm:
        with ozaki.config(mode="fast"):
            assert ozaki.get_config()["mode"] == "fast" and ozaki.get_config()["num_moduli"] == 10
            assert inner() == "exact"
            assert ozaki.get_config()["mode"] == "fast"
        with cm:                                   # re-entered
            assert ozaki.get_config()["num_moduli"] == 10
        assert ozaki.get_config()["num_moduli"] == 10
    assert ozaki.get_config()["num_moduli"] is None and ozaki.get_config()["mode"] == "accurate"


# --- the README's examples ---------------------------------------------------------------------

def _readme_python_blocks():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_first_example_runs_on_the_cpu(monkeypatch, capsys):
    """The README's first python block, as written, on a machine without CuPy."""
    first = _readme_python_blocks()[0]
    assert "cupy" not in first
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)      # `import cupy` would fail here
    namespace = {}
    exec(compile(first, "README.md (first python block)", "exec"), namespace)
    A, B, E = namespace["A"], namespace["B"], namespace["E"]
    assert E.shape == (512, 128) and type(namespace["s"]) is np.float64
    ours, native = (float(v) for v in capsys.readouterr().out.split())
    assert ours <= max(native, 1.0)


@pytest.mark.gpu
def test_readme_gpu_example():
    blocks = _readme_python_blocks()
    namespace = {}
    exec(compile(blocks[0], "README.md (first python block)", "exec"), namespace)
    exec(compile(blocks[1], "README.md (GPU block)", "exec"), namespace)


@pytest.mark.gpu
def test_cupy_conventions(rng):
    """On cupy arrays: out= and axes= as on numpy, integer/bool results exact, dot's checks, 0-d results."""
    import cupy
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 2))
    da, db = cupy.asarray(a), cupy.asarray(b)
    want = ozaki.matmul(a, b, mode="exact")
    out = cupy.full((3, 4, 2), cupy.nan)
    assert ozaki.matmul(da, db, out=out, mode="exact") is out and same_bits(cupy.asnumpy(out), want)
    with pytest.raises(TypeError):
        ozaki.matmul(da, db, out=np.empty((3, 4, 2)))
    with pytest.raises(ValueError, match="core dimension"):
        ozaki.matmul(da, db, out=cupy.empty((3, 4, 3)))
    moved = ozaki.matmul(da, cupy.ascontiguousarray(db.T), axes=[(1, 2), (1, 0), (0, 2)], mode="exact")
    assert isinstance(moved, cupy.ndarray)
    assert same_bits(cupy.asnumpy(moved), np.moveaxis(want, (-2, -1), (0, 2)))
    v = rng.standard_normal(6)
    r = ozaki.matmul(cupy.asarray(v), cupy.asarray(v), mode="exact")
    assert isinstance(r, cupy.ndarray) and r.shape == () and float(r) == reference.exact_dot(v, v)
    for ta, tb in ((np.int8, np.int8), (np.int64, np.int32), (np.uint64, np.uint8), (np.bool_, np.bool_),
                   (np.bool_, np.int16)):
        x, y = random_ints(rng, ta, (2, 3, 70)), random_ints(rng, tb, (70, 4))
        got = ozaki.matmul(cupy.asarray(x), cupy.asarray(y))
        want_int = int_reference(x, y)
        assert got.dtype == want_int.dtype and np.array_equal(cupy.asnumpy(got), want_int)
    f, g = cupy.asarray(rng.standard_normal((2, 3, 8))), cupy.asarray(rng.standard_normal((8, 5)))
    o = cupy.empty((2, 3, 5))
    assert ozaki.dot(f, g, o, mode="exact") is o
    assert same_bits(cupy.asnumpy(o), exact_np(cupy.asnumpy(f), cupy.asnumpy(g)))
    with pytest.raises(ValueError, match="not acceptable"):
        ozaki.dot(f, g, cupy.empty((2, 3, 5), dtype=cupy.float32))
    with pytest.raises(TypeError):
        ozaki.dot(f, g, np.empty((2, 3, 5)))
    assert float(ozaki.dot(cupy.asarray(2.0), cupy.asarray(3.0))) == 6.0
