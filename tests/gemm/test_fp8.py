"""The fp8 substrate: e4m3-exact digits, FP32-exact sums, the int8 substrate's integers."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki import reference
from ozaki.backends import numpy_backend
from ozaki.gemm import fp8
from tests import inputs


def e4m3_exact(v):
    """Whether the integer v is an FP8 e4m3 value: at most 4 significant bits (1 implicit + 3),
    magnitude at most 448 (the format's largest finite value)."""
    magnitude = odd = abs(int(v))
    if magnitude == 0:
        return True
    while odd % 2 == 0:
        odd //= 2
    return odd < 16 and magnitude <= 448


def test_every_residue_splits_into_e4m3_digits():
    r = np.arange(-128, 128, dtype=np.int8)
    x, y = fp8.split_digits(r)
    assert np.array_equal(16 * x.astype(int) + y, r.astype(int))
    for v in np.concatenate([x, y]):
        assert e4m3_exact(v), v
    assert (fp8.MAX_X, fp8.MAX_Y, fp8.DIGIT_PRODUCT_MAX) == (8, 8, 64)
    # a Hopper tensor-core segment of the largest terms stays within its measured exact range
    assert fp8.SEGMENT * fp8.DIGIT_PRODUCT_MAX <= fp8.TENSOR_CORE_EXACT // 2


def decode_e4m3(byte):
    """The value of an e4m3 (fn) byte, from the format's definition (no NaN/inf needed here)."""
    sign = -1 if byte & 0x80 else 1
    e, mantissa = (byte >> 3) & 0xF, byte & 0x7
    if e == 0:                                               # subnormal: 2**-6 * m / 8
        return sign * mantissa * 2.0 ** -9
    return sign * (8 + mantissa) * 2.0 ** (e - 10)


def test_e4m3_codes_decode_to_the_digits():
    for v in range(-16, 17):
        assert decode_e4m3(fp8.e4m3_bits(v)) == v
    for v in range(-8, 9):
        assert fp8.E4M3_CODES[v & 0xFF] == fp8.e4m3_bits(v)
    assert fp8.E4M3_CODES[100] == 0x7F and fp8.E4M3_CODES[(-100) & 0xFF] == 0x7F     # no digit: NaN
    for v in (17, 18, -19, 100):
        with pytest.raises(ValueError, match="e4m3"):
            fp8.e4m3_bits(v)


def test_chunk_keeps_fp32_sums_exact():
    """The XY GEMM sums 2 K_CHUNK terms of the largest digit product: at or below 2**24, where
    float32 is exact; checked on float32 BLAS with every term at the maximum and of one sign."""
    assert 2 * fp8.K_CHUNK * fp8.DIGIT_PRODUCT_MAX <= 2 ** 24
    assert 2 * (fp8.K_CHUNK + 16) * fp8.DIGIT_PRODUCT_MAX > 2 ** 24      # and is not needlessly short
    k = 2 * fp8.K_CHUNK
    a = np.full((1, 2, k), 8, dtype=np.int8)
    b = np.full((1, 3, k), -8, dtype=np.int8)
    b[0, 2, ::2] = 8                                                        # cancelling partial sums
    got = numpy_backend.gemm_fp32_digits(a, b)
    assert got[0, 0, 0, 0] == -64 * k and got[0, 0, 0, 2] == 0


@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([1, 7, 64, fp8.K_CHUNK + 5]), st.integers(0, 2 ** 32))
@settings(max_examples=25, deadline=None)
def test_gemm_equals_int8_substrate(m, n, k, seed):
    """The recombined digit products are the int8 residues' exact products, across a K chunk."""
    rng = np.random.default_rng(seed)
    Ra = rng.integers(-128, 128, (3, m, k)).astype(np.int8)
    Rbt = rng.integers(-128, 128, (3, n, k)).astype(np.int8)
    Ra[0] = -128                                             # the extremes, all of one sign
    Rbt[0] = -128
    want = numpy_backend.gemm(Ra, Rbt)
    assert np.array_equal(fp8.gemm(numpy_backend, Ra, Rbt), want)


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_matmul_same_bits_as_int8(rng, mode):
    A, B = inputs.wide(rng, (9, 40), 30), inputs.wide(rng, (40, 7), 30)
    A[0, 0], B[1, 1] = 0.0, -0.0
    C8 = ozaki.matmul(A, B, mode=mode)
    Cf = ozaki.matmul(A, B, mode=mode, substrate="fp8")
    assert np.array_equal(C8.view(np.int64), Cf.view(np.int64))
    if mode == "exact":
        assert np.array_equal(Cf.view(np.int64), reference.exact_matmul(A, B).view(np.int64))


def test_complex_same_bits_as_int8(rng):
    A = inputs.normal(rng, (5, 12)) + 1j * inputs.normal(rng, (5, 12))
    B = inputs.normal(rng, (12, 4)) - 1j * inputs.normal(rng, (12, 4))
    C8, Cf = ozaki.matmul(A, B), ozaki.matmul(A, B, substrate="fp8")
    assert np.array_equal(C8.view(np.int64), Cf.view(np.int64))
