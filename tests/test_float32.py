"""float32 and complex64 results: numpy's result types, each entry the exact product of the
(exactly widened) inputs rounded once to float32.

The references are ozaki.reference's: exact sums in Fractions, rounded by
round_fraction32 (the float32 neighbours of the exact value, found with
numpy.nextafter and compared exactly): nothing of the code under test.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki import reference, scheme
from ozaki.backends import numpy_backend
from tests import inputs
from tests.bits import same_bits

F32 = np.float32


def exact32(A, B):
    return reference.exact_matmul(A, B, dtype=F32)


def exact_c64(A, B):
    """The complex64 reference: real and imaginary parts each the exact sum of their
    2k real terms, rounded once to float32."""
    (xr, yr), (xi, yi) = reference.complex_as_real(A, B)
    out = np.empty((A.shape[0], B.shape[1]), np.complex64)
    out.real, out.imag = exact32(xr, yr), exact32(xi, yi)
    return out


def f32(x):
    """float64 values as float32 (warnings of values that overflow to inf silenced)."""
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(F32)


# --- the rounding itself: ties, subnormals, overflow -------------------------------------------

def near_ties(rng, m, kind):
    """Rows of A and a column of B whose exact products sit at a float32 midpoint c + ulp/2,
    or a little (2**-60 ulp) off it, where rounding to float64 first and then to float32
    goes wrong: terms c * 1 + (ulp/2) * 1 + (s ulp 2**-30) * 2**-30, s in {-1, 0, 1}.
    ``kind`` "subnormal": c a float32 subnormal, terms c * 1 + 2**-75 * 2**-75 + s 2**-75 * 2**-100."""
    s = {"tie": np.zeros(m), "above": np.ones(m), "below": -np.ones(m)}.get(kind, rng.choice([-1.0, 0.0, 1.0], m))
    if kind == "subnormal":
        c = f32(rng.integers(1, 2 ** 23, m) * 2.0 ** -149)
        A = np.stack([c, np.full(m, 2.0 ** -75), s * 2.0 ** -75], axis=1)
        B = np.array([[1.0], [2.0 ** -75], [2.0 ** -100]])
    else:
        c = f32(rng.uniform(1, 2, m) * np.exp2(rng.integers(-20, 20, m)))
        ulp = np.spacing(c).astype(np.float64)
        A = np.stack([c, ulp / 2, s * ulp * 2.0 ** -30], axis=1)
        B = np.array([[1.0], [1.0], [2.0 ** -30]])
    return f32(A), f32(B)


@pytest.mark.parametrize("kind", ["tie", "above", "below", "subnormal", "mixed"])
@pytest.mark.parametrize("mode", ["exact", "certified"])
def test_near_ties_rounded_once(rng, kind, mode):
    A, B = near_ties(rng, 40, kind)
    C = ozaki.matmul(A, B, mode=mode)
    ref = exact32(A, B)
    if mode == "exact":
        assert same_bits(C, ref)
    else:
        for i in range(A.shape[0]):
            assert reference.is_faithful(C[i, 0], A[i], B[:, 0], F32)
    if kind in ("above", "below", "subnormal"):     # where double rounding goes wrong, the answer did not
        via64 = ozaki.matmul(A.astype(np.float64), B.astype(np.float64), mode="exact").astype(F32)
        assert (via64 != ref).any() or kind == "subnormal"


def test_subnormal_results_and_underflow(rng):
    """Products 2**-80 x 2**-70 and below: float32 subnormals at their own spacing, and
    values under half the least subnormal to zero, with the sign of the exact value."""
    A = f32(rng.standard_normal((12, 9)) * np.exp2(rng.integers(-90, -60, (12, 9))))
    B = f32(rng.standard_normal((9, 7)) * np.exp2(rng.integers(-90, -60, (9, 7))))
    for mode in ("exact", "certified", "accurate"):
        C = ozaki.matmul(A, B, mode=mode)
        assert C.dtype == F32
        if mode == "exact":
            assert same_bits(C, exact32(A, B))
    C = ozaki.matmul(A, B, mode="exact")
    assert (np.abs(C[C != 0]) < np.finfo(F32).tiny).any()      # the test reaches subnormals
    tiny = f32([[2.0 ** -75, -2.0 ** -75]])
    got = ozaki.matmul(tiny, f32([[2.0 ** -75], [2.0 ** -76]]), mode="exact")      # 2**-151: to +0
    assert same_bits(got, f32([[0.0]])) and same_bits(got, exact32(tiny, f32([[2.0 ** -75], [2.0 ** -76]])))
    neg = ozaki.matmul(f32([[-2.0 ** -75]]), f32([[2.0 ** -76]]), mode="exact")     # -2**-151: to -0
    assert same_bits(neg, f32([[-0.0]]))


def test_overflow_to_inf_and_the_threshold(rng):
    """float32 overflow follows RNE with unbounded exponent: max + ulp/2 is a tie that goes
    to inf, a little below it stays max; 2**130 finite in float64 is inf in float32."""
    big = float(np.finfo(F32).max)
    half_ulp = 2.0 ** 103
    cases = [([big, half_ulp], [1.0, 1.0]),                 # the tie: inf
             ([big, half_ulp, -2.0 ** 40], [1.0, 1.0, 1.0]),  # just below it: max
             ([2.0 ** 70, -2.0 ** 70], [2.0 ** 60, 2.0 ** 60]),   # cancels to 0 exactly
             ([2.0 ** 70, 1.0], [2.0 ** 60, -1.0]),         # 2**130 - 1: inf
             ([-2.0 ** 70, 2.0 ** 69], [2.0 ** 60, 2.0 ** 60])]   # -2**129: -inf
    for a, b in cases:
        A, B = f32([a]), f32(b).reshape(-1, 1)
        C = ozaki.matmul(A, B, mode="exact")
        assert same_bits(C, exact32(A, B)), (a, b, C)
    assert ozaki.matmul(f32([[big, half_ulp]]), f32([[1.0], [1.0]]), mode="exact")[0, 0] == np.inf
    assert ozaki.matmul(f32([[big, half_ulp, -2.0 ** 40]]), f32([[1.0], [1.0], [1.0]]), mode="exact")[0, 0] == big
    A, B = f32(rng.standard_normal((8, 10)) * 2.0 ** 66), f32(rng.standard_normal((10, 6)) * 2.0 ** 64)
    for mode in ("exact", "accurate", "fast", "certified"):
        C = ozaki.matmul(A, B, mode=mode)
        assert np.isinf(C).any()
        assert same_bits(np.isinf(C), np.isinf(exact32(A, B)))


@pytest.mark.parametrize("spread", [0, 20, 60])
def test_exact_mode_bits(rng, spread):
    for m, k, n in [(1, 1, 1), (7, 13, 5), (33, 64, 17)]:
        A, B = f32(inputs.wide(rng, (m, k), spread)), f32(inputs.wide(rng, (k, n), spread))
        assert same_bits(ozaki.matmul(A, B, mode="exact"), exact32(A, B))


def test_cancellation(rng):
    A, B = inputs.cancelling(rng, 10, 40, 6)
    A, B = f32(A), f32(B)
    assert same_bits(ozaki.matmul(A, B, mode="exact"), exact32(A, B))


def test_signed_zeros_and_specials(rng):
    A = inputs.sprinkle_zeros(rng, f32(rng.standard_normal((14, 12))), 0.5)
    B = inputs.sprinkle_zeros(rng, f32(rng.standard_normal((12, 9))), 0.5)
    A[0] = -0.0
    B[:, 0] = 0.0
    A[1, :] = f32(rng.standard_normal(12))
    A[1, 0] = -0.0
    for mode in ("exact", "accurate", "fast", "certified"):
        C = ozaki.matmul(A, B, mode=mode)
        assert same_bits(C, exact32(A, B)) or mode != "exact"
        assert same_bits(np.signbit(C[C == 0]), np.signbit(exact32(A, B)[C == 0]))
    A = inputs.sprinkle_specials(rng, f32(rng.standard_normal((16, 20))))
    B = inputs.sprinkle_zeros(rng, f32(rng.standard_normal((20, 11))))
    for mode in ("exact", "accurate"):
        C, ref = ozaki.matmul(A, B, mode=mode), exact32(A, B)
        special = ~np.isfinite(ref)
        assert same_bits(C[special], ref[special])
        if mode == "exact":
            assert same_bits(C, ref)


def test_scaled_modes_are_their_own_integers_rounded_once(rng):
    """fast/accurate/certified return RN32(A'B' 2**(beta_i + beta_j)) for the plan's
    integers, the plan using float32's default moduli count."""
    A, B = f32(inputs.wide(rng, (9, 70), 30)), f32(inputs.wide(rng, (70, 6), 30))
    A64, Bt64 = A.astype(np.float64), np.ascontiguousarray(B.astype(np.float64).T)
    for mode in ("fast", "accurate"):
        plan = scheme.make_plan(np, A64, Bt64, mode, None, numpy_backend, out_dtype=F32)
        assert plan.num_moduli == scheme.default_num_moduli(mode, 70, F32) == 9
        ref = reference.scaled_matmul(A, B, plan.beta_a, plan.beta_b, nearest=plan.nearest, dtype=F32)
        assert same_bits(ozaki.matmul(A, B, mode=mode), ref)


def test_default_moduli_and_override(rng):
    assert scheme.default_num_moduli("accurate", 16384, F32) == 9
    assert scheme.default_num_moduli("fast", 16384, F32) == 9
    assert scheme.default_num_moduli("accurate", 2 ** 20, F32) == 9
    assert scheme.default_num_moduli("certified", 64, np.complex64) == 9 + scheme.CERTIFIED_EXTRA_MODULI
    assert scheme.default_num_moduli("accurate", 64, np.complex128) == 16
    A, B = f32(inputs.phi(rng, (20, 300), 2)), f32(inputs.phi(rng, (300, 10), 2))
    assert same_bits(ozaki.matmul(A, B), ozaki.matmul(A, B, num_moduli=9))
    C4 = ozaki.matmul(A, B, num_moduli=4)                  # num_moduli still overrides: coarser
    assert not same_bits(C4, ozaki.matmul(A, B)) and C4.dtype == F32
    with ozaki.config(num_moduli=20):                      # many moduli: every bit kept
        assert same_bits(ozaki.matmul(A, B, mode="accurate"), exact32(A, B))


def test_complex64(rng):
    A = f32(inputs.wide(rng, (9, 15), 10)) + 1j * f32(inputs.wide(rng, (9, 15), 10))
    B = f32(inputs.wide(rng, (15, 4), 10)) + 1j * f32(inputs.wide(rng, (15, 4), 10))
    A, B = A.astype(np.complex64), B.astype(np.complex64)
    C = ozaki.matmul(A, B, mode="exact")
    assert C.dtype == np.complex64 and same_bits(C, exact_c64(A, B))
    Br = f32(inputs.normal(rng, (15, 4)))                  # complex64 x float32 -> complex64
    C = ozaki.matmul(A, Br, mode="exact")
    assert C.dtype == np.complex64 and same_bits(C, exact_c64(A, Br.astype(np.complex64)))
    A[0, 0] = complex(np.inf, 0)
    A[1, :] = 0
    C = ozaki.matmul(A, B, mode="exact")
    assert same_bits(C, exact_c64(A, B))
    for mode in ("fast", "accurate", "certified"):
        assert ozaki.matmul(A, B, mode=mode).dtype == np.complex64


def test_certified_is_faithful(rng):
    A, B = f32(inputs.wide(rng, (8, 50), 40)), f32(inputs.wide(rng, (50, 7), 40))
    C = ozaki.matmul(A, B, mode="certified")
    for i in range(8):
        for j in range(7):
            assert reference.is_faithful(C[i, j], A[i], B[:, j], F32), (i, j)


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 12), st.integers(1, 5), st.data())
def test_exact_property(m, k, n, data):
    """Any float32 inputs (subnormals, the extremes, mixed signs): exact mode is the
    correctly rounded float32 of the exact product."""
    A = np.array(data.draw(st.lists(finite32, min_size=m * k, max_size=m * k)), F32).reshape(m, k)
    B = np.array(data.draw(st.lists(finite32, min_size=k * n, max_size=k * n)), F32).reshape(k, n)
    assert same_bits(ozaki.matmul(A, B, mode="exact"), exact32(A, B))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 60), st.integers(1, 6), st.integers(1, 30), st.integers(1, 6), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(["fast", "accurate", "certified"]))
def test_scaled_modes_property(spread, m, k, n, seed, mode):
    """fast/accurate: their own integers rounded once to float32; certified: faithful."""
    rng = np.random.default_rng(seed)
    A, B = f32(inputs.wide(rng, (m, k), spread)), f32(inputs.wide(rng, (k, n), spread))
    C = ozaki.matmul(A, B, mode=mode)
    assert C.dtype == F32
    if mode == "certified":
        assert all(reference.is_faithful(C[i, j], A[i], B[:, j], F32) for i in range(m) for j in range(n))
        return
    plan = scheme.make_plan(np, A.astype(np.float64), np.ascontiguousarray(B.T.astype(np.float64)), mode, None,
                            numpy_backend, out_dtype=F32)
    assert same_bits(C, reference.scaled_matmul(A, B, plan.beta_a, plan.beta_b, nearest=plan.nearest, dtype=F32))


# --- numpy's dtypes and shapes -----------------------------------------------------------------

PAIRS = [(np.float32, np.float32), (np.float32, np.float64), (np.float32, np.int8), (np.float32, np.int16),
         (np.float32, np.int32), (np.float32, np.uint16), (np.float32, np.bool_), (np.float16, np.float32),
         (np.int16, np.float32), (np.complex64, np.float32), (np.complex64, np.complex64),
         (np.complex64, np.float64), (np.float32, np.complex128), (np.complex64, np.int8), (np.float16, np.complex64)]


@pytest.mark.parametrize("da,db", PAIRS)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,)),
                                    ((2, 1, 3, 4), (5, 4, 2))])
def test_result_dtype_and_shape_are_numpys(rng, da, db, shapes):
    a = (rng.standard_normal(shapes[0]) * 4).astype(da)
    b = (rng.standard_normal(shapes[1]) * 4).astype(db)
    want = np.matmul(a, b)
    got = ozaki.matmul(a, b, mode="exact")
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.shape(got) == np.shape(want) and type(got) is type(want)
    if got.dtype == F32 and a.ndim == b.ndim == 2:
        assert same_bits(got, exact32(a, b))
    dot = ozaki.dot(a, b) if a.ndim <= 2 and b.ndim <= 2 else None
    if dot is not None:
        assert np.asarray(dot).dtype == np.asarray(np.dot(a, b)).dtype and type(dot) is type(np.dot(a, b))


def test_vector_dot_is_a_float32_scalar(rng):
    x, y = f32(rng.standard_normal(50)), f32(rng.standard_normal(50))
    for got in (ozaki.matmul(x, y, mode="exact"), ozaki.dot(x, y, mode="exact")):
        assert type(got) is np.float32
        assert got == exact32(x[None], y[:, None])[0, 0]
    s = ozaki.dot(f32(3.0), f32([1.5, 2.0]))               # 0-d: numpy's float32 products
    assert s.dtype == F32 and same_bits(s, np.dot(f32(3.0), f32([1.5, 2.0])))


def test_out_arguments(rng):
    A, B = f32(rng.standard_normal((5, 7))), f32(rng.standard_normal((7, 3)))
    ref = exact32(A, B)
    out = np.empty((5, 3), F32)
    assert ozaki.matmul(A, B, out=out, mode="exact") is out and same_bits(out, ref)
    out = np.empty((5, 3), F32)
    assert ozaki.dot(A, B, out, mode="exact") is out and same_bits(out, ref)
    wide = np.empty((5, 3), np.float64)                    # same_kind: the float32 result, widened
    ozaki.matmul(A, B, out=wide, mode="exact")
    assert same_bits(wide, ref.astype(np.float64))
    with pytest.raises(ValueError, match="not acceptable"):
        ozaki.dot(A, B, np.empty((5, 3), np.float64))      # dot's out: exactly the result's dtype
    narrow = np.empty((5, 3), F32)                         # a float64 result into float32 out: numpy casts
    ozaki.matmul(A.astype(np.float64), B, out=narrow, mode="exact")
    assert same_bits(narrow, reference.exact_matmul(A, B).astype(F32))
    with pytest.raises(TypeError, match="same_kind"):
        ozaki.matmul(A.astype(np.complex64), B, out=np.empty((5, 3), F32))
    cout = np.empty((2, 5, 3), np.complex64)
    ozaki.matmul(A.astype(np.complex64), B, out=cout, mode="exact")          # broadcast over the loop
    assert same_bits(cout[1], exact_c64(A.astype(np.complex64), B.astype(np.complex64)))


def test_empty_and_stacks(rng):
    assert ozaki.matmul(np.empty((0, 3), F32), np.empty((3, 2), F32)).dtype == F32
    z = ozaki.matmul(np.empty((2, 0), np.complex64), np.empty((0, 2), F32))
    assert z.dtype == np.complex64 and same_bits(z, np.zeros((2, 2), np.complex64))
    A, B = f32(inputs.wide(rng, (3, 6, 9), 20)), f32(inputs.wide(rng, (9, 4), 20))
    C = ozaki.matmul(A, B, mode="exact")
    assert C.dtype == F32 and all(same_bits(C[g], exact32(A[g], B)) for g in range(3))


def test_small_workspace_blocks_keep_the_bits(rng):
    A, B = f32(inputs.wide(rng, (40, 30), 10)), f32(inputs.wide(rng, (30, 50), 10))
    whole = ozaki.matmul(A, B)
    with ozaki.config(workspace=20000):
        assert same_bits(ozaki.matmul(A, B), whole)
    assert same_bits(ozaki.matmul(A, B, mode="exact"), exact32(A, B))


# --- the independent reference itself ----------------------------------------------------------

def test_round_fraction32_against_known_values():
    r = reference.round_fraction32
    assert same_bits(r(Fraction(1, 3)), F32(1 / 3))
    assert same_bits(r(Fraction(2) ** -150), F32(0.0))                       # tie to even: 0
    assert same_bits(r(-Fraction(2) ** -150), F32(-0.0))
    assert same_bits(r(Fraction(3) * Fraction(2) ** -151), F32(2.0 ** -149))
    assert r(Fraction(2) ** 128 - Fraction(2) ** 103) == np.inf               # the overflow tie
    assert r(Fraction(2) ** 128 - Fraction(2) ** 103 - 1) == np.finfo(F32).max
    assert r(1 + Fraction(2) ** -24) == 1 and r(1 + Fraction(3) * Fraction(2) ** -24) == 1 + 2.0 ** -22
    assert r(-Fraction(10) ** 60) == -np.inf and same_bits(r(Fraction(0), -1.0), F32(-0.0))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2 ** 80), st.integers(-260, 60), st.sampled_from([1, -1]))
def test_round_fraction32_matches_integer_rounding(x, e, sign):
    """Against a second, integer-only rounding: shift to float32's precision, round half even."""
    f = sign * Fraction(x) * Fraction(2) ** e
    top = x.bit_length() + e                               # 2**(top-1) <= |f| < 2**top
    lsb = max(top - 24, -149)
    num, den = (x << max(e - lsb, 0)), 1 << max(lsb - e, 0)
    q, rem = divmod(num, den)
    if 2 * rem > den or (2 * rem == den and q % 2):
        q += 1
    want = math.inf if q * 2.0 ** lsb >= 2.0 ** 128 else q * 2.0 ** lsb
    assert same_bits(reference.round_fraction32(f), F32(math.copysign(want, sign)))
