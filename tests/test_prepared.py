"""Prepared operands (ozaki.prepare): the bits of the unprepared product, and of the exact
references, on either side, in exact and fast mode, after reuse with other data."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ozaki
from ozaki import reference, scheme
from ozaki.backends import numpy_backend
from tests import inputs

MODES = ("exact", "fast")


def same_bits(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "c" or y.dtype.kind == "c":
        return same_bits(x.real, y.real) and same_bits(x.imag, y.imag)
    return x.shape == y.shape and np.array_equal(x.astype(np.float64).view(np.int64),
                                                 y.astype(np.float64).view(np.int64))


def families(rng, m, k, n):
    """(A, B) pairs: tame, wide exponent ranges, subnormals, zeros, cancellation, huge."""
    yield inputs.normal(rng, (m, k)), inputs.normal(rng, (k, n))
    yield inputs.wide(rng, (m, k), 40), inputs.wide(rng, (k, n), 40)
    yield inputs.wide(rng, (m, k), 300), inputs.normal(rng, (k, n))
    yield inputs.subnormal_heavy(rng, (m, k)), inputs.normal(rng, (k, n)) * 2.0 ** 600
    yield inputs.sprinkle_zeros(rng, inputs.normal(rng, (m, k))), inputs.sprinkle_zeros(rng, inputs.normal(rng, (k, n)))
    yield inputs.cancelling(rng, m, k, n)
    yield inputs.huge(rng, (m, k)), inputs.normal(rng, (k, n))


def products(A, B, mode, nm=None):
    """The unprepared product and the prepared ones (right, left, both)."""
    plain = ozaki.matmul(A, B, mode=mode, num_moduli=nm)
    pa, pb = ozaki.prepare(A, "left", mode=mode, num_moduli=nm), ozaki.prepare(B, "right", mode=mode, num_moduli=nm)
    return plain, [ozaki.matmul(A, pb), ozaki.matmul(pa, B), ozaki.matmul(pa, pb)]


@pytest.mark.parametrize("mode", MODES)
def test_prepared_gives_the_unprepared_bits_on_every_family(rng, mode):
    for A, B in families(rng, 9, 37, 7):
        plain, prepared = products(A, B, mode)
        assert all(same_bits(plain, c) for c in prepared)


def test_exact_prepared_is_the_correctly_rounded_product(rng):
    for A, B in families(rng, 6, 21, 5):
        ref = reference.exact_matmul(A, B)
        for c in products(A, B, "exact")[1]:
            assert same_bits(c, ref)


def test_fast_prepared_is_the_reference_of_its_scaled_integers(rng):
    for A, B in families(rng, 6, 21, 5):
        if not (np.isfinite(A).all() and np.isfinite(B).all()):
            continue
        plan = scheme.make_plan(np, A, np.ascontiguousarray(B.T), "fast", None, numpy_backend)
        ref = reference.scaled_matmul(A, B, plan.beta_a, plan.beta_b)
        for c in products(A, B, "fast")[1]:
            assert same_bits(c, ref)


@pytest.mark.parametrize("mode", MODES)
def test_reuse_with_other_data_and_spans(rng, mode):
    """One prepared operand, data of other spans (other slicings and moduli counts): each product
    has the bits of its unprepared product."""
    B = inputs.wide(rng, (40, 12), 20)
    pb = ozaki.prepare(B, mode=mode)
    for spread in (0, 5, 60, 200, 900, 1):
        A = inputs.wide(rng, (8, 40), spread)
        assert same_bits(ozaki.matmul(A, pb), ozaki.matmul(A, B, mode=mode))


@pytest.mark.parametrize("mode", MODES)
def test_repeat_products_read_the_prepared_residues(rng, mode, monkeypatch):
    """After the first product, a product with a prepared operand forms the residues of the
    other operand only (the residue step sees A's 8 rows, never B's 12 columns), where the
    unprepared product forms both; the bits are the same."""
    A, B = inputs.normal(rng, (8, 40)), inputs.wide(rng, (40, 12), 20)
    pb = ozaki.prepare(B, mode=mode)
    ozaki.matmul(A, pb)                                   # the first product makes B's residues
    rows_seen = []
    real = numpy_backend.residues
    monkeypatch.setattr(numpy_backend, "residues", lambda X, *a, **k: rows_seen.append(X.shape[0]) or real(X, *a, **k))
    prepared = ozaki.matmul(A, pb)
    prepared_rows, rows_seen[:] = list(rows_seen), []
    plain = ozaki.matmul(A, B, mode=mode)
    assert same_bits(prepared, plain)
    assert prepared_rows and set(prepared_rows) == {8}
    assert 12 in rows_seen


@pytest.mark.parametrize("mode", MODES)
def test_complex_and_mixed(rng, mode):
    A = inputs.normal(rng, (7, 30)) + 1j * inputs.wide(rng, (7, 30), 30)
    B = inputs.normal(rng, (30, 5)) - 1j * inputs.normal(rng, (30, 5))
    plain, prepared = products(A, B, mode)
    assert all(same_bits(plain, c) for c in prepared)
    # real data with a complex prepared operand: promoted, as matmul promotes it
    pb = ozaki.prepare(B, mode=mode)
    assert same_bits(ozaki.matmul(A.real, pb), ozaki.matmul(A.real, B, mode=mode))
    with pytest.raises(TypeError, match="complex"):
        ozaki.matmul(A, ozaki.prepare(B.real, mode=mode))


@pytest.mark.parametrize("mode", MODES)
def test_specials(rng, mode):
    A = inputs.sprinkle_specials(rng, inputs.normal(rng, (8, 16)))
    B = inputs.sprinkle_zeros(rng, -np.abs(inputs.normal(rng, (16, 6))))
    A[2] = -0.0
    plain, prepared = products(A, B, mode)
    assert all(same_bits(plain, c) for c in prepared)
    plain, prepared = products(B.T.copy(), A.T.copy(), mode)
    assert all(same_bits(plain, c) for c in prepared)


@pytest.mark.parametrize("mode", MODES)
def test_stacks_pieces_and_blocks(rng, mode):
    """3-D prepared stacks; a workspace small enough to split the stack into pieces
    (Prepared windows) and the products into row/column blocks."""
    A = inputs.wide(rng, (5, 9, 24), 30)
    B = inputs.normal(rng, (5, 24, 11))
    plain = ozaki.matmul(A, B, mode=mode)
    pa, pb = ozaki.prepare(A, "left", mode=mode), ozaki.prepare(B, mode=mode)
    for workspace in (None, 40_000, 3_000):
        with ozaki.config(workspace=workspace):
            for c in (ozaki.matmul(A, pb), ozaki.matmul(pa, B), ozaki.matmul(pa, pb)):
                assert same_bits(plain, c)


def test_num_moduli_given(rng):
    A, B = inputs.normal(rng, (6, 50)), inputs.normal(rng, (50, 4))
    for mode, nm in (("fast", 14), ("exact", 30)):
        plain, prepared = products(A, B, mode, nm)
        assert all(same_bits(plain, c) for c in prepared)
    with pytest.raises(ValueError):                 # too few moduli for exact mode
        ozaki.matmul(A, ozaki.prepare(B, mode="exact", num_moduli=3))


def test_errors(rng):
    A, B = inputs.normal(rng, (6, 5)), inputs.normal(rng, (5, 4))
    for mode in ("accurate", "certified"):
        with pytest.raises(ValueError, match="couples both operands"):
            ozaki.prepare(B, mode=mode)
    with ozaki.config(mode="accurate"), pytest.raises(ValueError, match="couples"):
        ozaki.prepare(B)
    pb = ozaki.prepare(B, mode="exact")
    with pytest.raises(ValueError, match="side"):
        ozaki.matmul(pb, A)
    with pytest.raises(ValueError, match="prepared for mode"):
        ozaki.matmul(A, pb, mode="fast")
    with pytest.raises(ValueError, match="do not multiply"):
        ozaki.matmul(A.T, pb)
    with pytest.raises(ValueError, match="2-D"):
        ozaki.matmul(A[None], pb)
    with pytest.raises(TypeError, match="out"):
        ozaki.matmul(A, pb, out=np.empty((6, 4)))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        ozaki.prepare(B[0], mode="exact")
    with pytest.raises(TypeError):
        ozaki.prepare(B.astype(np.int64), mode="exact")


def test_empty(rng):
    B = np.zeros((0, 4))
    pb = ozaki.prepare(B, mode="exact")
    assert same_bits(ozaki.matmul(np.zeros((3, 0)), pb), np.zeros((3, 4)))


def test_exact_sizes_beside_fits_the_moduli():
    """Every slicing exact_sizes_beside picks keeps the slice products inside the CRT range."""
    from ozaki import crt
    for span_a in (1, 30, 53, 64, 115, 700, 2098):
        for span_b in (1, 53, 90, 300, 2098):
            for k in (1, 100, 70000):
                for fixed in (32, 64, 128, 256):
                    wa, wb, m, ta, tb = scheme.exact_sizes_beside(span_a, span_b, k, None, fixed, None)
                    assert wa == fixed and ta * wa >= span_a and tb * wb >= span_b
                    assert min(wa, span_a) + min(wb, span_b) + max(k - 1, 0).bit_length() <= crt.usable_bits(m)


@pytest.mark.parametrize("mode", MODES)
def test_float32_results_rounded_once(rng, mode):
    """float32 (and complex64) operands: prepared products have numpy's result type and the
    unprepared product's bits (float32 x float32 rounded once to float32, with float32's
    default moduli count in fast mode); exact mode's are the exact products rounded once."""
    F32 = np.float32
    with np.errstate(over="ignore"):
        for A, B in families(rng, 6, 21, 5):
            A, B = A.astype(F32), B.astype(F32)
            plain, prepared = products(A, B, mode)
            assert plain.dtype == F32 and all(c.dtype == F32 and same_bits(plain, c) for c in prepared)
            if mode == "exact":
                ref = reference.exact_matmul(A, B, dtype=F32)
                assert all(same_bits(c, ref) for c in prepared)
    A, B = inputs.normal(rng, (7, 30)).astype(F32), inputs.wide(rng, (30, 5), 20)
    pb, pa = ozaki.prepare(B, mode=mode), ozaki.prepare(A, "left", mode=mode)
    for c, plain in ((ozaki.matmul(A, pb), ozaki.matmul(A, B, mode=mode)),        # float32 x float64: float64
                     (ozaki.matmul(pa, B.astype(F32)), ozaki.matmul(A, B.astype(F32), mode=mode)),
                     (ozaki.matmul(pa, B), ozaki.matmul(A, B, mode=mode))):
        assert c.dtype == plain.dtype and same_bits(c, plain)
    Z = (A + 1j * A).astype(np.complex64)
    pz = ozaki.prepare(Z, "left", mode=mode)
    c, plain = ozaki.matmul(pz, B.astype(F32)), ozaki.matmul(Z, B.astype(F32), mode=mode)
    assert c.dtype == np.complex64 and same_bits(c, plain)
    with pytest.raises(TypeError, match="complex and a real"):
        ozaki.matmul(pz, ozaki.prepare(B, mode=mode))


def test_fast_prepared_serves_each_moduli_count(rng):
    """Fast mode's bottoms keep bits for the product's count: one prepared operand serves
    float64 products (16 moduli) and float32 ones (9) with one residue stack each."""
    A, B = inputs.normal(rng, (6, 40)), inputs.wide(rng, (40, 5), 20).astype(np.float32)
    pb = ozaki.prepare(B, mode="fast")
    for X in (A, A.astype(np.float32), A):                  # float64 x float32: float64; float32: float32
        c, plain = ozaki.matmul(X, pb), ozaki.matmul(X, B, mode="fast")
        assert c.dtype == plain.dtype == X.dtype and same_bits(c, plain)
    assert sorted(pb._ready.residue_stacks) == sorted({scheme.default_num_moduli("fast", 40),
                                                       scheme.default_num_moduli("fast", 40, np.float32)})


floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 9)), elements=floats),
       st.integers(1, 4), st.sampled_from(MODES), st.data())
def test_property_prepared_equals_unprepared(A, n, mode, data):
    B = data.draw(hnp.arrays(np.float64, (A.shape[1], n), elements=floats))
    plain, prepared = products(A, B, mode)
    assert all(same_bits(plain, c) for c in prepared)
    if mode == "exact":
        assert same_bits(prepared[0], reference.exact_matmul(A, B))


def _two_sum(a, b):
    """(hi, lo) with hi = RN(a + b) and hi + lo = a + b exactly (Knuth's TwoSum)."""
    hi = a + b
    bb = hi - a
    return hi, (a - (hi - bb)) + (b - bb)


def pair_families(rng, k, n):
    """(X, low) with X + low rounding to X (prepare_pair's contract), from TwoSum of two
    matrices: rounded remainders at every scale, wide spans, near-cancelling sums (a low
    at the bottom of a small X), subnormals, zeros in both."""
    X = inputs.normal(rng, (k, n))
    yield _two_sum(X, X * 2.0 ** -53 * rng.uniform(-1, 1, X.shape))
    yield _two_sum(X, inputs.normal(rng, (k, n)))
    yield _two_sum(inputs.sprinkle_zeros(rng, X), inputs.sprinkle_zeros(rng, inputs.normal(rng, (k, n))) * 1e-12)
    yield _two_sum(-X, X * (1 + 2.0 ** -52) + inputs.normal(rng, (k, n)) * 2.0 ** -70)
    yield _two_sum(inputs.subnormal_heavy(rng, (k, n)) * 2.0 ** 900, inputs.subnormal_heavy(rng, (k, n)) * 2.0 ** 900)
    yield _two_sum(inputs.wide(rng, (k, n), 60), inputs.wide(rng, (k, n), 60))


@pytest.mark.parametrize("side", ["right", "left"])
def test_pair_is_the_correctly_rounded_product_with_the_sums(rng, side):
    """scheme.prepare_pair's products are the correctly rounded exact products with X + low
    (checked against fractions through [A, A] @ [X; low]) and the bits of ozaki.matmul's
    exact product of those doubled operands, for every family, on either side."""
    from ozaki.backends import numpy_backend as backend
    for X, low in pair_families(rng, 23, 7):
        A = inputs.wide(rng, (5, 23), 30)
        if side == "right":
            p = scheme.prepare_pair(X[None], low[None], "right", None, backend)
            p.matrix = True
            got = ozaki.matmul(A, p)
            ref = reference.exact_matmul(np.concatenate([A, A], axis=1), np.concatenate([X, low], axis=0))
        else:
            p = scheme.prepare_pair(X.T[None], low.T[None], "left", None, backend)
            p.matrix = True
            got = ozaki.matmul(p, A.T)
            ref = reference.exact_matmul(np.concatenate([X.T, low.T], axis=1), np.concatenate([A.T, A.T], axis=0))
        assert same_bits(got, ref)


def test_pair_too_wide_for_one_slice_is_refused(rng):
    """Sums whose rows span more bits than one slice can carry beside the narrowest data
    slice: a ValueError at preparation, not a product that drops low's bits."""
    from ozaki.backends import numpy_backend as backend
    X = inputs.normal(rng, (30, 4))
    X[0, 0] = 2.0 ** 400                                  # the column's sums span 400 + 53 bits
    with pytest.raises(ValueError, match="prepare_pair"):
        scheme.prepare_pair(X[None], (X * 2.0 ** -60)[None], "right", None, backend)


def test_pair_contract_checked(rng):
    """X + low must round to X (the IEEE fix-ups read X): a low as large as X, a nonzero
    low where X is zero (X = -0 and low = 1 once gave -0 for a product of 2), a NaN or
    infinite low, mismatched shapes or dtypes: ValueError."""
    from ozaki.backends import numpy_backend as backend
    X = inputs.normal(rng, (6, 5))
    for low in (X.copy(), np.where(np.arange(5) == 2, 1.0, 0.0) * np.ones((6, 5)), X * np.nan, X * np.inf):
        Z = X.copy()
        Z[:, 2] = -0.0
        for x in (X, Z):
            if ((x + low) == x).all() and ((x != 0) | (low == 0)).all():
                continue                                  # this pair keeps the contract
            with pytest.raises(ValueError, match="round to X"):
                scheme.prepare_pair(x[None], low[None], "right", None, backend)
    with pytest.raises(ValueError, match="differ"):
        scheme.prepare_pair(X[None] + 0j, X[None] * 0, "right", None, backend)
    Z = np.array([[-0.0, 1.0], [-0.0, 1.0]])
    with pytest.raises(ValueError):
        scheme.prepare_pair(Z[None], np.array([[[1.0, 0.0], [1.0, 0.0]]]), "right", None, backend)


def test_pair_with_too_few_moduli_for_its_slice(rng):
    """ozaki.fft in exact mode with a given num_moduli (too few for a pair's one wide slice)
    runs the doubled product [x, x] @ [hi; lo]: the same bits as with the default count
    where both are exact, never an error."""
    import ozaki.fft
    x = inputs.normal(rng, (3, 64)) + 1j * inputs.normal(rng, (3, 64))
    for nm in (16, 20, 24):
        got = ozaki.fft.fft(x, mode="exact", num_moduli=nm)
        assert got.shape == x.shape and np.isfinite(got).all()
    assert same_bits(ozaki.fft.fft(x, mode="exact", num_moduli=40), ozaki.fft.fft(x))


def test_pair_complex_and_stacks(rng):
    """Complex pairs (their residues and Karatsuba sums added mod p) and stacks: the bits of
    the exact product with the doubled operands."""
    from ozaki.backends import numpy_backend as backend
    X = inputs.normal(rng, (3, 20, 6)) + 1j * inputs.wide(rng, (3, 20, 6), 40)
    low = (X.real * 2.0 ** -53 * rng.uniform(-0.5, 0.5, X.shape)
           + 1j * X.imag * 2.0 ** -53 * rng.uniform(-0.5, 0.5, X.shape))
    A = inputs.normal(rng, (3, 4, 20)) - 1j * inputs.normal(rng, (3, 4, 20))
    got = ozaki.matmul(A, scheme.prepare_pair(X, low, "right", None, backend))
    want = ozaki.matmul(np.concatenate([A, A], axis=2), np.concatenate([X, low], axis=1), mode="exact")
    assert same_bits(got, want)
    # the same operand again: its residues are kept, the bits do not change
    p = scheme.prepare_pair(X, low, "right", None, backend)
    assert same_bits(ozaki.matmul(A, p), want) and same_bits(ozaki.matmul(A, p), want)
