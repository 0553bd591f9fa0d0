"""Exact mode by Ziv's strategy (scheme._by_test / rounded_entries): accurate's scaling with
certified's moduli, the epilogue's rounding residuals, the entries the bound does not prove
correctly rounded recomputed exactly.  On the CPU the route runs where the backend has
``exact_entries`` (the GPU's), here from the Fraction reference; every entry must be the
correctly rounded exact product (reference.exact_dot, per entry), near rounding ties,
binade boundaries, cancellation, subnormals and IEEE specials included."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki import reference, scheme
from ozaki.backends import numpy_backend
from tests import inputs
from tests.test_certified import exact_entries_from_fractions


@pytest.fixture
def by_test(monkeypatch):
    monkeypatch.setattr(scheme, "EXACT_BY_TEST", True)
    monkeypatch.setattr(numpy_backend, "exact_entries", exact_entries_from_fractions, raising=False)


def reference_product(A, B):
    """The correctly rounded exact product, entry by entry (Fractions; complex per part)."""
    out_dtype = np.float32 if A.dtype in (np.float32, np.complex64) else np.float64
    if A.dtype.kind == "c":
        (xr, yr), (xi, yi) = reference.complex_as_real(A, B)
        C = np.empty((A.shape[0], B.shape[1]), dtype=np.complex128)
        C.real, C.imag = reference_product(xr, yr), reference_product(xi, yi)
        return C
    C = np.empty((A.shape[0], B.shape[1]), dtype=out_dtype)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = reference.exact_dot(A[i], B[:, j], out_dtype)
    return C


def same_bits(x, y):
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("spread", [0, 40, 300])
def test_every_entry_correctly_rounded(rng, by_test, dtype, spread):
    spread = min(spread, 40) if dtype == np.float32 else spread
    A, B = inputs.wide(rng, (11, 60), spread), inputs.wide(rng, (60, 8), spread)
    if dtype == np.complex128:
        A = A + 1j * inputs.wide(rng, A.shape, spread)
        B = B - 1j * inputs.wide(rng, B.shape, spread)
    A, B = A.astype(dtype), B.astype(dtype)
    C = ozaki.matmul(A, B, mode="exact")
    counts = dict(scheme.certify_counts)
    assert counts["entries"] == A.shape[0] * B.shape[1], "the route by test did not run"
    assert same_bits(C, reference_product(A, B).astype(C.dtype))
    slices = scheme.matmul_stack(A[None], B[None], "exact", None, numpy_backend, by_test=False)[0]
    assert same_bits(C, slices)


def test_tame_data_recomputes_few_entries(rng, by_test):
    A, B = inputs.normal(rng, (40, 300)), inputs.normal(rng, (300, 30))
    C = ozaki.matmul(A, B, mode="exact")
    assert scheme.certify_counts["failing"] < 0.05 * C.size
    assert same_bits(C, reference_product(A, B))


def test_near_ties_and_binade_boundaries(by_test):
    """Exact values within 2**-60 ulp of a rounding midpoint (either side, or on it) and
    just below a power of two: the truncated product cannot decide them, the test sends
    them to the exact recomputation."""
    u = 2.0 ** -52
    rows, cols = [], []
    for tiny in (2.0 ** -60, -(2.0 ** -60), 0.0, 2.0 ** -200):
        rows.append([1.0 + u, 1.0, tiny, 0.5])
        cols.append([1.0, u / 2, 2.0 ** -50, 0.0])       # 1 + u + u/2 (+ tiny 2**-50): a tie, nudged
        rows.append([1.0, -u / 4, tiny, 1.0])
        cols.append([1.0, 1.0, 2.0 ** -52, 0.0])         # 1 - u/4 (+ ...): just below the binade's midpoint
    A, B = np.array(rows), np.array(cols).T.copy()
    C = ozaki.matmul(A, B, mode="exact")
    assert scheme.certify_counts["failing"] >= 8        # at least the diagonal's ties went to the exact dots
    assert same_bits(C, reference_product(A, B))


def test_specials_and_signed_zeros(rng, by_test):
    A = inputs.sprinkle_specials(rng, inputs.wide(rng, (9, 30), 100), 0.05)
    B = inputs.sprinkle_specials(rng, inputs.wide(rng, (30, 7), 100), 0.05)
    A[2] = -0.0
    B[:, 3] = 0.0
    C = ozaki.matmul(A, B, mode="exact")
    slices = scheme.matmul_stack(A[None], B[None], "exact", None, numpy_backend, by_test=False)[0]
    nan = np.isnan(C)
    assert np.array_equal(nan, np.isnan(slices))
    assert np.array_equal(np.where(nan, 0, C).view(np.int64), np.where(nan, 0, slices).view(np.int64))


def test_subnormal_results(by_test, rng):
    A = inputs.subnormal_heavy(rng, (6, 20)) * 2.0 ** 40
    B = rng.standard_normal((20, 5)) * 2.0 ** -30
    C = ozaki.matmul(A, B, mode="exact")
    assert same_bits(C, reference_product(A, B))


@settings(max_examples=25, deadline=None)
@given(spread=st.integers(0, 1000), k=st.integers(1, 50), cancel=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_property_correctly_rounded(spread, k, cancel, seed):
    """Exponent spreads up to the full range, heavy cancellation (B's second half the
    negated first: exact sums near zero), fresh draws."""
    rng = np.random.default_rng(seed)
    A, B = inputs.wide(rng, (5, k), spread), inputs.wide(rng, (k, 4), spread)
    if cancel and k >= 2:
        A[:, k // 2: 2 * (k // 2)] = A[:, :k // 2]
        B[k // 2: 2 * (k // 2)] = -B[:k // 2] * (1 + 2.0 ** -40)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scheme, "EXACT_BY_TEST", True)
        mp.setattr(numpy_backend, "exact_entries", exact_entries_from_fractions, raising=False)
        with np.errstate(all="ignore"):
            C = ozaki.matmul(A, B, mode="exact")
    with np.errstate(all="ignore"):
        ref = reference_product(A, B)
    assert same_bits(C, ref)


def test_zero_results_keep_the_exact_sign(by_test):
    """A float32 result that rounds to zero from a value of either sign: the bound cannot
    decide the zero's sign, so such entries are recomputed (the review's case: -2**-209
    truncated to x = 0 came back +0)."""
    A = np.array([[-(2.0 ** -149), 2.0 ** -60], [2.0 ** -149, 2.0 ** -60]], dtype=np.float32)
    B = np.array([[2.0 ** -60, 1.0], [-(2.0 ** -149), 0.5]], dtype=np.float32)
    C = ozaki.matmul(A, B, mode="exact")
    assert same_bits(C, reference_product(A, B))
    assert np.signbit(C[0, 0]) and C[0, 0] == 0
