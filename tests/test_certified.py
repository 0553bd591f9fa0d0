"""Certified mode: every entry faithful, checked against exact Fractions; the error bound
bounds the truncation error of accurate mode's integers, checked in Python ints."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki import reference, scheme
from ozaki.backends import numpy_backend
from tests import inputs


def all_faithful(C, A, B):
    bad = [(i, j) for i in range(C.shape[0]) for j in range(C.shape[1]) if not reference.is_faithful(C[i, j], A[i], B[:, j])]
    assert not bad, f"{len(bad)} entries not faithful, first {bad[:3]}"


def test_the_accurate_modes_losses_are_certified_away():
    A = np.array([[1.0, 1e-20, 3.0], [2.0, 1e-10, 1e-17]])
    C = ozaki.matmul(A, np.eye(3), mode="certified")
    assert np.array_equal(C, A)                      # exact values are floats: faithful means equal
    assert not np.array_equal(ozaki.matmul(A, np.eye(3), mode="accurate"), A)


@pytest.mark.parametrize("spread", [0, 20, 60, 300, 1000])
def test_faithful_on_wide_exponent_ranges(rng, spread):
    A, B = inputs.wide(rng, (24, 40), spread), inputs.wide(rng, (40, 20), spread)
    all_faithful(ozaki.matmul(A, B, mode="certified"), A, B)


def test_faithful_on_adversarial_families(rng):
    cases = [inputs.cancelling(rng, 12, 50, 9),
             (inputs.subnormal_heavy(rng, (10, 30)), inputs.normal(rng, (30, 8))),
             (inputs.huge(rng, (8, 30)), inputs.huge(rng, (30, 8))),
             (inputs.sprinkle_specials(rng, inputs.wide(rng, (12, 30), 40)),
              inputs.sprinkle_zeros(rng, inputs.wide(rng, (30, 10), 40)))]
    for A, B in cases:
        all_faithful(ozaki.matmul(A, B, mode="certified"), A, B)


def near_midpoint(rng, m, k, n):
    """Row 0 times column j is c + s u/2 + t u 2**-60 exactly (c a float, u its ulp on the
    side of s, s and t random signs, powers of two among the c: binade boundaries), the
    other rows random: exact values within 2**-60 ulp of a rounding midpoint."""
    A, B = inputs.normal(rng, (m, k)), inputs.normal(rng, (k, n))
    A[0] = 0.0
    A[0, :3] = 1.0
    for j in range(n):
        c = float(rng.standard_normal()) * 2.0 ** int(rng.integers(-40, 40))
        if j % 3 == 0:
            c = math.copysign(2.0 ** int(rng.integers(-40, 40)), c)
        s, t = rng.choice([-1.0, 1.0]), rng.choice([-1.0, 1.0])
        u = abs(np.nextafter(c, c + s * abs(c)) - c)        # the gap beside c on the side of s
        B[:3, j] = [c, s * u / 2, t * u * 2.0 ** -60]
    return A, B


def test_faithful_near_rounding_midpoints(rng):
    A, B = near_midpoint(rng, 6, 40, 7)
    all_faithful(ozaki.matmul(A, B, mode="certified"), A, B)


@settings(max_examples=30, deadline=None)
@given(spread=st.integers(0, 1100), m=st.integers(1, 9), k=st.integers(1, 40), n=st.integers(1, 9),
       seed=st.integers(0, 2 ** 32 - 1), complex_=st.booleans())
def test_faithful_property(spread, m, k, n, seed, complex_):
    rng = np.random.default_rng(seed)
    A, B = inputs.wide(rng, (m, k), spread), inputs.wide(rng, (k, n), spread)
    if complex_:
        A2, B2 = inputs.wide(rng, (m, k), spread), inputs.wide(rng, (k, n), spread)
        C = ozaki.matmul(A + 1j * A2, B + 1j * B2, mode="certified")
        (xr, yr), (xi, yi) = reference.complex_as_real(A + 1j * A2, B + 1j * B2)
        all_faithful(C.real, xr, yr)
        all_faithful(C.imag, xi, yi)
    else:
        all_faithful(ozaki.matmul(A, B, mode="certified"), A, B)


def test_stacks_are_certified_per_matrix(rng):
    A = inputs.wide(rng, (5, 12, 30), 200)
    B = inputs.wide(rng, (5, 30, 7), 200)
    C = ozaki.matmul(A, B, mode="certified")
    for g in range(5):
        all_faithful(C[g], A[g], B[g])


def bounds(A, Bt, plan):
    """scheme.error_bounds of a 2-D product under ``plan``, (m, n)."""
    sa = scheme.bound_side(numpy_backend, A, plan.beta_a, plan.nearest)
    sb = scheme.bound_side(numpy_backend, Bt, plan.beta_b, plan.nearest)
    return scheme.error_bounds(np, [x[:, None] for x in sa], [x[None, :] for x in sb], A.shape[1])


@pytest.mark.parametrize("nearest_mode,spread", [("accurate", 5), ("accurate", 200), ("fast", 30),
                                                 ("accurate", 1000)])
def test_error_bound_holds(rng, nearest_mode, spread):
    """|A B - A'B' 2**(beta_i + beta_j)| <= Delta exactly (Python ints and Fractions), on a plan
    with few moduli so that the truncation is large."""
    A, B = inputs.wide(rng, (9, 33), spread), inputs.wide(rng, (33, 6), spread)
    Bt = np.ascontiguousarray(B.T)
    plan = scheme.make_plan(np, A, Bt, nearest_mode, 8, numpy_backend)
    delta = bounds(A, Bt, plan)
    Ai = reference.scaled_integers(A, plan.beta_a, axis=1, nearest=plan.nearest)
    Bi = reference.scaled_integers(B, plan.beta_b, axis=0, nearest=plan.nearest)
    for i in range(9):
        for j in range(6):
            exact = reference.exact_sum(A[i].tolist(), B[:, j].tolist())
            scaled = Fraction(sum(Ai[i][k] * Bi[k][j] for k in range(33))) \
                * Fraction(2) ** (int(plan.beta_a[i]) + int(plan.beta_b[j]))
            d = float(delta[i, j])                    # inf (overflow): holds, and the entry is recomputed
            assert math.isinf(d) or abs(exact - scaled) <= Fraction(d), (i, j)


@pytest.mark.parametrize("spread", [0, 300, 2000])
def test_bound_side_sums_cover_the_rows(rng, spread):
    """bound_side's S 2**-e >= sum |x| over each row's finite entries, exactly (Fractions),
    on rows with subnormals, NaN/inf, zeros and a row of zeros."""
    X = inputs.sprinkle_specials(rng, inputs.wide(rng, (12, 77), spread), 0.05)
    X[3] = 0.0
    X[4, :40] = 2.0 ** -1074
    S, e, _, exact = scheme.bound_side(numpy_backend, X, np.zeros(12, dtype=np.int64), False)
    for r in range(12):
        total = sum(Fraction(abs(v)) for v in X[r].tolist() if math.isfinite(v))
        assert total <= Fraction(float(S[r])) * Fraction(2) ** -int(e[r]), r
        assert bool(exact[r]) == (total == 0), r


def test_bound_is_backend_order_free(rng):
    """The bound uses integer sums: permuting the inner dimension gives the same bits."""
    A, B = inputs.wide(rng, (7, 50), 30), inputs.wide(rng, (50, 5), 30)
    p = rng.permutation(50)
    Bt = np.ascontiguousarray(B.T)
    plan = scheme.make_plan(np, A, Bt, "accurate", 12, numpy_backend)
    d1 = bounds(A, Bt, plan)
    d2 = bounds(np.ascontiguousarray(A[:, p]), np.ascontiguousarray(Bt[:, p]), plan)
    assert np.array_equal(d1, d2)


def test_certified_moduli_default():
    assert scheme.default_num_moduli("certified", 4096) == scheme.default_num_moduli("accurate", 4096) + \
        scheme.CERTIFIED_EXTRA_MODULI


def test_recomputed_by_row_blocks(rng, monkeypatch):
    """Failing entries spread over many rows: recomputed block by block (two failing rows
    per block here), each block with its own failing columns, and still faithful; the
    counts say how many entries failed and how many were recomputed."""
    monkeypatch.setattr(scheme, "CERTIFY_ROWS", (2,))
    A, B = inputs.wide(rng, (9, 40), 300), inputs.wide(rng, (40, 7), 300)
    C = ozaki.matmul(A, B, mode="certified")
    all_faithful(C, A, B)
    counts = scheme.certify_counts
    assert counts["entries"] == 63
    assert 0 < counts["failing"] <= counts["recomputed"] <= 63
    assert counts["recomputed"] <= 2 * 7 * counts["blocks"]        # at most two rows (of 7 columns) a block


def test_counts_add_over_the_pieces_of_a_stack(rng):
    """A stack too big for the workspace runs in pieces; certify_counts covers all of them."""
    A, B = inputs.wide(rng, (4, 9, 40), 300), inputs.wide(rng, (4, 40, 7), 300)
    with ozaki.config(workspace=4096):
        C = ozaki.matmul(A, B, mode="certified")
    for g in range(4):
        all_faithful(C[g], A[g], B[g])
    assert scheme.certify_counts["entries"] == 4 * 9 * 7


def test_recompute_blocks_cover_the_failures(rng):
    """The blocks cover every failing entry, once per row; a block per failing row when
    calls cost nothing, one block of all failing rows and columns when they cost much."""
    bad = rng.random((300, 50)) < 0.01
    bad[7] = False
    for call, R in ((0, 1), (2 ** 60, 300)):
        old = scheme.CERTIFY_CALL, scheme.CERTIFY_ROWS
        scheme.CERTIFY_CALL, scheme.CERTIFY_ROWS = call, (1, 300)
        try:
            _, blocks = scheme._recompute_blocks(np, bad, 100)
        finally:
            scheme.CERTIFY_CALL, scheme.CERTIFY_ROWS = old
        covered = np.zeros_like(bad)
        seen = np.concatenate([r for r, _ in blocks])
        assert np.array_equal(seen, np.flatnonzero(bad.any(axis=1)))
        assert all(r.size <= R for r, _ in blocks)
        for r, c in blocks:
            covered[np.ix_(r, c)] = True
        assert not (bad & ~covered).any()
        if call == 0:
            assert sum(r.size * c.size for r, c in blocks) == bad.sum()
        else:
            assert len(blocks) == 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gaps_are_nextafters(rng, dtype):
    """scheme.gaps (float64 arithmetic only) equals the smaller numpy nextafter gap in C's
    own format on zeros, subnormals, binade edges, the largest finite value and random bits."""
    fi = np.finfo(dtype)
    ints = np.int64 if dtype == np.float64 else np.int32
    edges = np.array([0.0, fi.smallest_subnormal, 2 * fi.smallest_subnormal, fi.tiny, 2 * fi.tiny,
                      np.nextafter(fi.tiny, dtype(0)), 1.0, 2.0, 3.0, fi.max / 2, np.nextafter(fi.max, dtype(0)),
                      fi.max], dtype=dtype)
    bits = rng.integers(0, np.iinfo(ints).max, 4096, dtype=np.int64).astype(ints).view(dtype)
    a = np.abs(np.concatenate([edges, bits, np.ldexp(dtype(1), np.arange(fi.minexp - fi.nmant, fi.maxexp))
                               .astype(dtype)]))
    a = a[np.isfinite(a)]
    with np.errstate(over="ignore"):
        up = np.nextafter(a, dtype(np.inf)) - a
        down = a - np.nextafter(a, dtype(0))
    want = np.where(a == 0, up, np.minimum(up, down)).astype(np.float64)
    assert np.array_equal(scheme.gaps(np, a.astype(np.float64), fi), want)


def exact_entries_from_fractions(A_rows, Bt_rows, rows, cols, parts, out_dtype, zero_signs=True):
    """A backend's exact_entries (kernels/exact_dot.cu's contract) from the Fraction
    reference: part 1 of complex rows [re | im] negates the imaginary terms, part 2
    pairs each half with the other half of B^T's row."""
    half = A_rows.shape[1] // 2
    values = []
    for part in ((0,) if parts == 1 else (1, 2)):
        out = []
        for r, c in zip(np.asarray(rows).tolist(), np.asarray(cols).tolist()):
            a, b = A_rows[r], Bt_rows[c]
            if part == 1:
                a = np.concatenate([a[:half], -a[half:]])
            elif part == 2:
                b = np.concatenate([b[half:], b[:half]])
            v = reference.exact_dot(a, b, out_dtype)
            out.append(v if zero_signs or v != 0 else 0.0)
        values.append(np.array(out, dtype=out_dtype))
    return values


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_failing_entries_recomputed_one_by_one(rng, monkeypatch, dtype):
    """A backend with exact_entries recomputes each failing entry alone: the same bits as
    the exact-mode blocks (both the correctly rounded entry, signed zeros included) on a
    stack of wide-range matrices with zero rows and columns; every entry faithful."""
    spread = 40 if dtype == np.float32 else 300          # float32: within its range
    A, B = inputs.wide(rng, (3, 9, 40), spread), inputs.wide(rng, (3, 40, 7), spread)
    if dtype == np.complex128:
        A = A + 1j * inputs.wide(rng, A.shape, spread)
        B = B - 1j * inputs.wide(rng, B.shape, spread)
    A[0, 2] = -0.0
    B[1, :, 3] = 0.0
    A[2, 4, 20:] = -A[2, 4, :20]                         # an exact zero: always fails the test
    B[2, 20:, 5] = B[2, :20, 5]
    A, B = A.astype(dtype), B.astype(dtype)
    blocks = ozaki.matmul(A, B, mode="certified")
    assert scheme.certify_counts["blocks"] > 0
    monkeypatch.setattr(numpy_backend, "exact_entries", exact_entries_from_fractions, raising=False)
    one_by_one = ozaki.matmul(A, B, mode="certified")
    counts = scheme.certify_counts
    assert counts["blocks"] == 0 and 0 < counts["failing"] == counts["recomputed"]
    assert blocks.tobytes() == one_by_one.tobytes()
    real = np.float32 if dtype == np.float32 else np.float64
    for g in range(3):
        products = reference.complex_as_real(A[g], B[g]) if dtype == np.complex128 else [(A[g], B[g])]
        for part, (x, y) in enumerate(products):
            c = one_by_one[g].imag if part else one_by_one[g].real
            assert all(reference.is_faithful(c[i, j], x[i], y[:, j], real) for i in range(9) for j in range(7))
