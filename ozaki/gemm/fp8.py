"""The fp8 substrate: int8 residue products from e4m3 digits and FP32 accumulation.

FP8 e4m3 holds every integer in [-16, 16] exactly, FP32 every integer below
2**24.  A symmetric residue r in [-128, 127] is split as r = 16 x + y with
y = ((r + 8) mod 16) - 8 in [-8, 7] and x in [-8, 8]; then

    r_a r_b = 256 x_a x_b + 16 (x_a y_b + y_a x_b) + y_a y_b = 256 XX + 16 XY + YY

three GEMMs of e4m3-exact digits, the middle one over the inner dimension
twice ([x_a | y_a] times [y_b | x_b]).  Every term is a product of two digits,
at most DIGIT_PRODUCT_MAX = 64 in magnitude.

Why not Karatsuba ((x_a + y_a)(x_b + y_b), digits up to 15, terms up to 225,
three GEMMs of length K): measured on the H200 (bench/fp8.py,
bench/results/2026-12-02-af166c3/fp8_exactness.txt), cuBLASLt FP8 with fast
accumulation off is not exact once partial sums pass 2**14: 128 terms of 225
(28800) came out 32 short, and the error grew by 32 for every further 128
terms, while 128 terms summing to 14464 and every random-digit product were
exact.  That is Hopper's FP8 tensor-core accumulation keeping about 14 bits
over segments of 128 products, each segment then added in FP32.  With terms
of at most 64, a segment of SEGMENT = 128 terms stays within
SEGMENT * 64 = 2**13, inside that limit with a bit to spare, and the FP32
sum of a length-L product (L = K for XX, YY; 2K for XY) is an integer of
magnitude at most 64 L <= 2**24 for K <= K_CHUNK.

Everything here is small pure functions; the backend runs the digit GEMMs
(``gemm_fp32_digits``).
"""

import numpy as np

__all__ = ["split_digits", "digit_bounds", "K_CHUNK", "e4m3_bits", "e4m3_codes", "E4M3_CODES", "recombine", "gemm"]

FP32_EXACT = 2 ** 24            # every integer of magnitude <= 2**24 is a float32
SEGMENT = 128                   # products a Hopper FP8 tensor core sums before FP32 (measured)
TENSOR_CORE_EXACT = 2 ** 14     # partial sums it kept exact (measured)


def split_digits(r, xp=np):
    """(x, y) int8 with r = 16 x + y, y in [-8, 7], x in [-8, 8], for int8 residues r."""
    r = r.astype(xp.int16)
    y = (r + 8) % 16 - 8
    return ((r - y) // 16).astype(xp.int8), y.astype(xp.int8)


def digit_bounds():
    """The largest |x|, |y| and |digit product| over every int8 residue, by enumeration."""
    r = np.arange(-128, 128)
    x, y = split_digits(r)
    x, y = x.astype(np.int64), y.astype(np.int64)
    products = np.abs(np.concatenate([np.outer(u, v).ravel() for u in (x, y) for v in (x, y)]))
    return int(abs(x).max()), int(abs(y).max()), int(products.max())


MAX_X, MAX_Y, DIGIT_PRODUCT_MAX = digit_bounds()
assert max(MAX_X, MAX_Y) <= 16, "digits must be e4m3-exact"
assert SEGMENT * DIGIT_PRODUCT_MAX <= TENSOR_CORE_EXACT // 2, "tensor-core segments must stay exact"
# The inner length whose FP32 sums stay exact: the XY GEMM sums 2K terms of at
# most 64, 2 K 64 <= 2**24, rounded down to 16.
K_CHUNK = (FP32_EXACT // (2 * DIGIT_PRODUCT_MAX)) // 16 * 16


def e4m3_bits(v):
    """The FP8 e4m3 (fn) byte of the integer v, |v| <= 16: sign, 4 exponent bits
    (bias 7), 3 mantissa bits; ValueError where e4m3 does not hold v exactly."""
    v = int(v)
    magnitude = abs(v)
    if magnitude == 0:
        return 0x00
    e = magnitude.bit_length() - 1                  # 2**e <= |v| < 2**(e + 1)
    mantissa = (magnitude << 3 >> e) - 8            # 3 bits after the implicit one
    if magnitude > 16 or (mantissa + 8) << e != magnitude << 3:
        raise ValueError(f"{v} is not an e4m3-exact digit")
    return (0x80 if v < 0 else 0) | (e + 7) << 3 | mantissa


def e4m3_codes(limit):
    """The e4m3 byte of every integer v with |v| <= limit (<= 16), indexed by v's int8
    byte (its uint8 view); other bytes map to 0x7F (NaN), so a stray one shows."""
    codes = np.full(256, 0x7F, dtype=np.uint8)
    for v in range(-limit, limit + 1):
        codes[v & 0xFF] = e4m3_bits(v)
    return codes


E4M3_CODES = e4m3_codes(max(MAX_X, MAX_Y))      # the digits' bytes


def recombine(XX, XY, YY, xp=np):
    """256 XX + 16 XY + YY in int64 from the three float32 digit products."""
    XX, XY, YY = (v.astype(xp.int64) for v in (XX, XY, YY))
    return 256 * XX + 16 * XY + YY


# Residue products |r_a r_b| <= 2**14: a length-k sum fits int32 below this k.
INT32_K = (2 ** 31 - 1) // 2 ** 14


def gemm(backend, Ra, Rbt, batch=1):
    """Exact products (batch, b, m, n) of int8 residues through the digit GEMMs, K cut into
    K_CHUNK pieces; the same integers as the int8 substrate (int32 when they fit
    for every input, k <= INT32_K, else int64).  One modulus at a time, so the
    FP32 digit products and their recombination take one modulus's memory.  The
    backend's steps: ``fp8_operands`` (each side's digits, split_digits, in the layout
    its GEMMs read), ``fp8_products`` (XX, XY, YY) and ``fp8_recombine`` (recombine,
    written into the modulus' products or added to them for the next chunk)."""
    xp = backend.xp
    b, rows, k = Ra.shape
    m, n = rows // batch, Rbt.shape[1] // batch
    out = xp.empty((batch, b, m, n), dtype=xp.int32 if k <= INT32_K else xp.int64)
    if out.size == 0 or k == 0:
        out[...] = 0
        return out
    for i in range(b):
        for k0 in range(0, max(k, 1), K_CHUNK):
            Da = backend.fp8_operands(Ra[i, :, k0:k0 + K_CHUNK], "a", batch)
            Db = backend.fp8_operands(Rbt[i, :, k0:k0 + K_CHUNK], "b", batch)
            backend.fp8_recombine(*backend.fp8_products(Da, Db, batch), out[:, i], add=k0 > 0)
    return out
