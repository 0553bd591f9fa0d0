"""Accuracy of the default ``accurate`` and ``fast`` modes against native float64 matmul
(and, for float32 results, native float32 matmul: SGEMM).

The DMMCH ratio |C - C_exact| / (eps |A||B|) is computed exactly (fractions) on
sampled entries (eps = 2**-53, or 2**-24 for float32); the defaults must be no
worse than numpy's BLAS on the same inputs, over the families the defaults are
promised for.
"""

import numpy as np
import pytest

import ozaki
from ozaki import reference
from tests import inputs


def entries(rng, m, n, count=40):
    return [(int(i), int(j)) for i, j in zip(rng.integers(0, m, count), rng.integers(0, n, count))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("family", ["normal", "phi0.5", "phi1", "phi2", "wide4"])
@pytest.mark.parametrize("mode", ["accurate", "fast"])
@pytest.mark.parametrize("k", [64, 1024])
def test_default_no_worse_than_native(rng, family, mode, k, dtype):
    no_worse_than_native(rng, family, mode, k, dtype)


# Draws that failed the test above once (fresh seeds), kept: phi2 at k = 1024 gave 9.75
# against native SGEMM's 3.86 with float32's former 8 accurate moduli (now 9: 0.41).
KNOWN_DRAWS = [(137071243670403996927193342850155827662, "phi2", "accurate", 1024, np.float32)]


@pytest.mark.parametrize("seed,family,mode,k,dtype", KNOWN_DRAWS)
def test_known_draws_no_worse_than_native(seed, family, mode, k, dtype):
    no_worse_than_native(np.random.default_rng(seed), family, mode, k, dtype)


def no_worse_than_native(rng, family, mode, k, dtype):
    m = n = 48
    if family == "normal":
        A, B = inputs.normal(rng, (m, k)), inputs.normal(rng, (k, n))
    elif family.startswith("phi"):
        p = float(family[3:])
        A, B = inputs.phi(rng, (m, k), p), inputs.phi(rng, (k, n), p)
    else:
        A, B = inputs.wide(rng, (m, k), 4), inputs.wide(rng, (k, n), 4)
    A, B = A.astype(dtype), B.astype(dtype)
    eps = 2.0 ** -(np.finfo(dtype).nmant + 1)
    e = entries(rng, m, n)
    native = reference.dmmch_ratio(A @ B, A, B, e, eps)
    C = ozaki.matmul(A, B, mode=mode)
    assert C.dtype == dtype
    ours = reference.dmmch_ratio(C, A, B, e, eps)
    assert ours <= max(native, 0.5), (ours, native)


def test_exact_is_half_ulp(rng):
    A, B = inputs.cancelling(rng, 20, 64, 12)
    err = reference.ulp_error(ozaki.matmul(A, B, mode="exact"), A, B)
    assert err.max() <= 0.5


def test_more_moduli_never_hurt_much(rng):
    """Error falls as moduli are added, until the exact product is reached."""
    A, B = inputs.phi(rng, (24, 256), 1), inputs.phi(rng, (256, 24), 1)
    e = entries(rng, 24, 24)
    errs = [reference.dmmch_ratio(ozaki.matmul(A, B, mode="accurate", num_moduli=m), A, B, e)
            for m in (8, 12, 16, 20)]
    assert errs[0] > errs[1] > errs[2] >= errs[3]
    # 20 moduli keep more bits than float64 holds: what is left is the final rounding,
    # at most half an ulp of C, and ulp(C) <= 2**-52 |C| <= 2 eps |A||B|: a ratio of at most 1.
    assert errs[0] > 1e6 and errs[3] <= 1.0
