"""The Kulisch accumulator: exact fixed-point integers as int64 limb arrays.

A value is held as ``limbs``, an int64 array of shape ``(L, ...)``: limb ``l``
weighs ``2**(32*l)``.  Between operations a limb may hold any int64 (carries
are deferred, which is what makes sums of many terms cheap); ``normalize``
brings every limb but the top one into [0, 2**32) and leaves the sign in the top
limb (two's complement across limbs).  Nothing here ever rounds, except
``round_to`` (``round_to_float64``), which rounds once, to nearest even,
directly at the precision and exponent of the result in the target format
(float64 or float32; subnormals included; overflow gives inf).

These are small pure functions on plain numpy arrays; the GPU epilogue kernel
(ozaki/backends/kernels/epilogue.cu) implements the same steps in CUDA.
"""

import numpy as np

__all__ = ["LIMB_BITS", "num_limbs", "from_int", "to_int", "normalize", "negate",
           "shift_limbs", "round_to", "round_to_float64", "rounding_format"]

LIMB_BITS = 32
_MASK = (1 << LIMB_BITS) - 1


def num_limbs(bits):
    """Limbs that hold a signed integer of magnitude below 2**bits, with room for the sign."""
    return bits // LIMB_BITS + 1


def from_int(x, L):
    """Python int -> normalized limbs (a length-L int64 vector)."""
    if not -(1 << (LIMB_BITS * L - 1)) <= x < (1 << (LIMB_BITS * L - 1)):
        raise OverflowError(f"{x} does not fit {L} limbs")
    out = np.empty(L, dtype=np.int64)
    for l in range(L - 1):
        out[l] = x & _MASK
        x >>= LIMB_BITS
    out[L - 1] = x
    return out


def to_int(limbs):
    """Limbs (normalized or not) of one value -> Python int (for tests and references)."""
    return sum(int(v) << (LIMB_BITS * l) for l, v in enumerate(np.asarray(limbs).tolist()))


def normalize(limbs):
    """Propagate carries: limbs 0..L-2 into [0, 2**32), the sign in the top limb.

    Works on the array in place and returns it.  Limbs may hold any value with
    |limb| < 2**62 on entry.
    """
    for l in range(limbs.shape[0] - 1):
        carry = limbs[l] >> LIMB_BITS            # arithmetic shift: floor division
        limbs[l] &= _MASK
        limbs[l + 1] += carry
    return limbs


def negate(limbs):
    """-x for normalized limbs, normalized."""
    return normalize(-limbs)


def shift_limbs(limbs, by, L):
    """x * 2**(32*by) in L limbs (by >= 0; the caller sizes L)."""
    out = np.zeros((L,) + limbs.shape[1:], dtype=np.int64)
    out[by:by + limbs.shape[0]] = limbs
    return out


def _bit_length32(v):
    """Bit length of values in [0, 2**32) (exact: they are exact in float64)."""
    return np.frexp(v.astype(np.float64))[1].astype(np.int64)


def rounding_format(dtype):
    """(precision, lsb_min) of a binary float format: the bits of its significand
    and the exponent of its least subnormal's bit (float64: 53, -1074; float32: 24, -149)."""
    info = np.finfo(dtype)
    return info.nmant + 1, info.minexp - info.nmant


def round_to(limbs, exponent, dtype=np.float64, residual=False):
    """Round the exact value ``int(limbs) * 2**exponent`` to ``dtype``, once.

    ``limbs`` normalized, shape (L, ...); ``exponent`` an int64 array broadcastable
    to ``limbs.shape[1:]``; ``dtype`` float64 or float32 (any binary format of at
    most 53 bits, rounding_format).  Round to nearest, ties to even, at the precision
    the result has at its own exponent in that format (fewer bits for its
    subnormals); values at or beyond the format's overflow threshold give +-inf.
    A zero value gives +0.0.  The rounded value is formed in float64, where it is
    exact (at most 54 significant bits, exponent within float64's range or
    beyond it as inf), and its cast to ``dtype`` is exact too: no double rounding.

    ``residual``: also return x - RN(x) rounded once to float64 (exact mode by Ziv's
    strategy decides from it whether a truncated product's rounding is the exact
    product's), NaN where it is not formed: results that overflow, and float64
    results in the subnormal range (lsb at the least subnormal's), where it may lie
    below float64's own range.
    """
    dtype = np.dtype(dtype)
    precision, lsb_min = rounding_format(dtype)
    L = limbs.shape[0]
    shape = limbs.shape[1:]
    negative = limbs[L - 1] < 0
    mag = np.where(negative, negate(limbs.copy()), limbs)
    # Two zero limbs below, so that a three-limb window always exists.
    mag = np.concatenate([np.zeros((2,) + shape, dtype=np.int64), mag])
    exponent = np.broadcast_to(np.asarray(exponent, dtype=np.int64), shape) - 2 * LIMB_BITS

    nonzero = mag != 0
    top = (mag.shape[0] - 1) - np.argmax(nonzero[::-1], axis=0)   # highest nonzero limb
    is_zero = ~nonzero.any(axis=0)
    top = np.where(is_zero, 2, top)
    l2 = np.take_along_axis(mag, top[None], 0)[0].astype(np.uint64)
    l1 = np.take_along_axis(mag, (top - 1)[None], 0)[0].astype(np.uint64)
    l0 = np.take_along_axis(mag, (top - 2)[None], 0)[0].astype(np.uint64)
    bl = _bit_length32(l2)                                      # 1..32 (0 only for zero)
    bl = np.maximum(bl, 1)
    ubl = bl.astype(np.uint64)
    # T: the top 64 bits of the magnitude, its leading bit set.
    T = (l2 << (np.uint64(64) - ubl)) | (l1 << (np.uint64(32) - ubl)) | (l0 >> ubl)
    below = np.arange(mag.shape[0]).reshape((-1,) + (1,) * len(shape)) < (top - 2)
    sticky = ((l0 & ((np.uint64(1) << ubl) - np.uint64(1))) != 0) | (nonzero & below).any(axis=0)

    E = exponent + LIMB_BITS * (top - 2) + bl                   # the value is T * 2**E (plus sticky)
    lsb = np.maximum(E + 64 - precision, lsb_min)               # exponent of the result's last bit
    d = lsb - E                                                 # bits of T to drop, >= 64 - precision
    dc = np.minimum(d, 64).astype(np.uint64)
    q = (T >> np.uint64(1)) >> (dc - np.uint64(1))
    rem = T - ((q << (dc - np.uint64(1))) << np.uint64(1))
    half = np.uint64(1) << (dc - np.uint64(1))
    up = (rem > half) | ((rem == half) & (sticky | ((q & np.uint64(1)) == 1)))
    q = q + up.astype(np.uint64)
    q = np.where(d > 64, np.uint64(0), q)                       # below half the least subnormal
    with np.errstate(over="ignore"):         # beyond the format's range: inf, as IEEE overflow
        out = np.ldexp(q.astype(np.float64), lsb.astype(np.int32) if lsb.size else lsb).astype(dtype)
    out = np.where(is_zero, dtype.type(0), out)
    out = np.where(negative, -out, out)
    if not residual:
        return out
    return out, _residual(mag, exponent, q, lsb, negative, is_zero, out, lsb_min, dtype)


def _residual(mag, exponent, q, lsb, negative, is_zero, out, lsb_min, dtype):
    """x - q 2**lsb rounded to float64, for round_to's magnitude limbs ``mag`` of x
    (kernels/rounding.cuh, residual_of): q's three 32-bit chunks taken off at limb
    (lsb - exponent) // 32, the difference rounded by round_to.  Where lsb < exponent,
    x has at most the format's bits and is its own rounding (0)."""
    sh = np.maximum(lsb - exponent, 0)
    limb = sh >> 5
    off = (sh & 31).astype(np.uint64)
    lo = q << off                                               # bits 0..63 of q 2**off (wrapping)
    c0 = (lo & np.uint64(_MASK)).astype(np.int64)
    c1 = (lo >> np.uint64(32)).astype(np.int64)
    c2 = np.where(off > 0, q >> np.where(off > 0, np.uint64(64) - off, np.uint64(1)), np.uint64(0)).astype(np.int64)
    rows = np.arange(mag.shape[0]).reshape((-1,) + (1,) * (mag.ndim - 1))
    diff = mag - (np.where(rows == limb, c0, 0) + np.where(rows == limb + 1, c1, 0) + np.where(rows == limb + 2, c2, 0))
    d = round_to(normalize(diff), exponent, np.float64)
    rho = np.where(negative, -d, d)
    # ``exponent`` counts the two zero limbs round_to put below; the device's test is on
    # the caller's exponent (and +0 for an x that is its own rounding, as there)
    rho = np.where(lsb < exponent + 2 * LIMB_BITS, 0.0, rho)
    unformed = ~np.isfinite(out) | ((lsb == lsb_min) & (np.dtype(dtype) == np.float64))
    return np.where(is_zero, 0.0, np.where(unformed, np.nan, rho))


def round_to_float64(limbs, exponent):
    """``round_to(limbs, exponent, numpy.float64)``."""
    return round_to(limbs, exponent, np.float64)


# Accumulator sizes (limbs) the exact residual kernel is compiled for
# (kernels/exact_dot.cu); a wider window takes the ozaki product instead.
EXACT_DOT_DIGITS = (8, 16, 32, 64)


def exact_dot_window(low_products, low_b, top_products, top_b, terms):
    """(base, digits) of a fixed-point accumulator that holds b - sum of ``terms`` products
    exactly (kernels/exact_dot.cuh), or None when it needs more than EXACT_DOT_DIGITS[-1]
    limbs.

    low_products: a lower bound of every product's last bit exponent (the least last
    bit of A's nonzero entries plus that of x's), None without nonzero products;
    low_b likewise for b; top_products, top_b: exponents with every |product| below
    2**top_products and every |b_i| below 2**top_b.  base is a multiple of LIMB_BITS at
    or below every term's last bit; the limbs reach past the largest possible sum
    (terms + 1 terms, with its sign) by a limb.
    """
    lows = [v for v in (low_products, low_b) if v is not None]
    if not lows:
        return 0, EXACT_DOT_DIGITS[0]
    base = min(lows) // LIMB_BITS * LIMB_BITS
    tops = [t for t, low in ((top_products, low_products), (top_b, low_b)) if low is not None]
    top = max(tops) + (terms + 1).bit_length() + 1
    digits = -(-(top - base) // LIMB_BITS) + 1
    fits = [d for d in EXACT_DOT_DIGITS if d >= digits]
    return (base, fits[0]) if fits else None
