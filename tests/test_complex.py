"""Complex products: real and imaginary parts each the correctly rounded (exact mode) or
scaled-integer-exact (fast/accurate) value, through three residue GEMMs per modulus."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ozaki
from ozaki import reference, scheme
from ozaki.backends import numpy_backend
from tests import inputs


def same_bits(x, y):
    x, y = np.asarray(x, np.complex128), np.asarray(y, np.complex128)
    return x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))


def crandn(rng, shape, spread=0):
    return inputs.wide(rng, shape, spread) + 1j * inputs.wide(rng, shape, spread)


def exact_complex(A, B):
    """Re = [Ar, -Ai] @ [Br; Bi], Im = [Ar, Ai] @ [Bi; Br], each exact then rounded."""
    (xr, yr), (xi, yi) = reference.complex_as_real(A, B)
    re, im = reference.exact_matmul(xr, yr), reference.exact_matmul(xi, yi)
    out = np.empty(re.shape, complex)
    out.real, out.imag = re, im
    return out


def scaled_complex(A, B, mode, nm):
    Ac = np.hstack([A.real, A.imag])
    Bc = np.hstack([B.real.T, B.imag.T])
    p = scheme.make_plan(np, Ac, Bc, mode, nm, numpy_backend, parts=2)
    (xr, yr), (xi, yi) = reference.complex_as_real(A, B)
    re = reference.scaled_matmul(xr, yr, p.beta_a, p.beta_b, nearest=p.nearest)
    im = reference.scaled_matmul(xi, yi, p.beta_a, p.beta_b, nearest=p.nearest)
    out = np.empty(re.shape, complex)
    out.real, out.imag = re, im
    return out


@pytest.mark.parametrize("mode,nm", [("exact", None), ("accurate", None), ("accurate", 6), ("fast", None),
                                     ("fast", 9)])
@pytest.mark.parametrize("spread", [0, 20, 300])
def test_complex_bit_for_bit(rng, mode, nm, spread):
    m, k, n = rng.integers(1, 12, 3)
    A, B = crandn(rng, (m, k), spread), crandn(rng, (k, n), spread)
    C = ozaki.matmul(A, B, mode=mode, num_moduli=nm)
    assert C.dtype == np.complex128
    ref = exact_complex(A, B) if mode == "exact" else scaled_complex(A, B, mode, nm)
    assert same_bits(C, ref)


def test_complex_stacks_and_views_exact(rng):
    """Stacks (each side batched, and broadcast) and operands that are views (transposed,
    strided, reversed): the rows the pipeline reads are the [Re | Im] joined rows and
    their halves (scheme.operand_rows), whatever the layout; each matrix exact."""
    A, B = crandn(rng, (3, 9, 14), 20), crandn(rng, (3, 14, 7), 20)
    C = ozaki.matmul(A, B, mode="exact")
    for g in range(3):
        assert same_bits(C[g], exact_complex(A[g], B[g]))
    C = ozaki.matmul(A, B[1], mode="exact")
    assert all(same_bits(C[g], exact_complex(A[g], B[1])) for g in range(3))
    X, Y = crandn(rng, (20, 12), 8), crandn(rng, (30, 17), 8)
    for a, b in [(X.T, Y[::-1][:20, ::2]), (X[::-2], Y.T[:12, 3:13]), (np.asfortranarray(X), Y[:12])]:
        assert same_bits(ozaki.matmul(a, b, mode="exact"), exact_complex(a, b))


@pytest.mark.parametrize("dtype", [np.complex128, np.float64, np.complex64, np.float32])
@pytest.mark.parametrize("shape_a,shape_b", [((3, 0, 5), (3, 5, 4)), ((3, 4, 0), (3, 0, 5)),
                                             ((3, 4, 5), (3, 5, 0)), ((3, 0, 0), (3, 0, 0)),
                                             ((3, 4, 0), (0, 5)), ((2, 1, 4, 0), (3, 0, 2))])
def test_empty_stacks(dtype, shape_a, shape_b):
    """Empty stacks of batch > 1 (m, k or n zero), real and complex, plain and prepared
    (their rows made by scheme.operand_rows at explicit sizes: reshape(-1, 0) fails):
    numpy.matmul's shape and dtype, and its zeros."""
    A, B = np.ones(shape_a, dtype), np.ones(shape_b, dtype)
    ref = np.matmul(A, B)
    got = [ozaki.matmul(A, B)]
    for mode in ("fast", "exact") if A.ndim == B.ndim == 3 else ():   # a 3-D Prepared needs a 3-D other
        got.append(ozaki.matmul(ozaki.prepare(A, side="left", mode=mode), B, mode=mode))
        got.append(ozaki.matmul(A, ozaki.prepare(B, side="right", mode=mode), mode=mode))
    for C in got:
        assert C.shape == ref.shape and C.dtype == ref.dtype
        assert np.array_equal(C, ref)
    if A.ndim == B.ndim == 3:
        for X, side, rows, k in ((A, "left", A.shape[0] * A.shape[1], A.shape[2]),
                                 (B, "right", B.shape[0] * B.shape[2], B.shape[1])):
            parts, joined = scheme.operand_rows(numpy_backend, X.astype(np.result_type(X, np.float64)), side)
            assert [p.shape for p in parts] == [(rows, k)] * (2 if X.dtype.kind == "c" else 1)
            assert joined.shape == (rows, k * len(parts))


def test_complex_cancellation_exact(rng):
    # (1 + 2**-60 i)(1 - 2**-60 i) = 1 + 2**-120: only exact arithmetic keeps the last term
    A = np.array([[1 + 2.0 ** -60 * 1j]])
    B = np.array([[1 - 2.0 ** -60 * 1j]])
    C = ozaki.matmul(A, B, mode="exact")
    assert C[0, 0] == complex(float(1 + Fraction(2) ** -120), 0.0)
    A = np.array([[3.0 + 1e-300j, 1e300 + 0j]])
    B = np.array([[1e-300 + 3.0j], [1e-300 + 0j]])
    assert same_bits(ozaki.matmul(A, B, mode="exact"), exact_complex(A, B))


def test_mixed_real_complex_and_complex64(rng):
    A = rng.standard_normal((4, 5))
    B = crandn(rng, (5, 3)).astype(np.complex64)
    C = ozaki.matmul(A, B, mode="exact")
    assert C.dtype == np.complex128
    assert same_bits(C, exact_complex(A.astype(complex), B.astype(np.complex128)))


def test_complex_specials_and_zeros(rng):
    A = crandn(rng, (6, 7))
    B = crandn(rng, (7, 5))
    A[0, 0] = complex(np.inf, 0)
    A[1, :] = 0
    B[2, 1] = complex(0, np.nan)
    C = ozaki.matmul(A, B, mode="exact")
    assert same_bits(C, exact_complex(A, B))


def test_complex_accuracy_vs_native(rng):
    A, B = crandn(rng, (32, 512)), crandn(rng, (512, 32))
    e = [(int(i), int(j)) for i, j in zip(rng.integers(0, 32, 20), rng.integers(0, 32, 20))]
    for part, (Ac, Bc) in zip(("re", "im"), reference.complex_as_real(A, B)):
        native = getattr(A @ B, "real" if part == "re" else "imag")
        ours = getattr(ozaki.matmul(A, B), "real" if part == "re" else "imag")
        assert reference.dmmch_ratio(ours, Ac, Bc, e) <= max(reference.dmmch_ratio(native, Ac, Bc, e), 0.5)


def test_complex_blocked(rng):
    A, B = crandn(rng, (21, 30), 10), crandn(rng, (30, 17), 10)
    whole = ozaki.matmul(A, B, mode="accurate")
    with ozaki.config(workspace=20000):
        assert same_bits(ozaki.matmul(A, B, mode="accurate"), whole)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_complex_property_exact(data):
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    parts = [data.draw(hnp.arrays(np.float64, s, elements=finite)) for s in [(m, k)] * 2 + [(k, n)] * 2]
    A, B = parts[0] + 1j * parts[1], parts[2] + 1j * parts[3]
    A.imag, B.imag = parts[1], parts[3]       # keep exact parts (1j * inf would make NaN)
    assert same_bits(ozaki.matmul(A, B, mode="exact"), exact_complex(A, B))
