// Exact sums of products of doubles in a fixed-point accumulator: the terms of
// exact_dot.cu, written as plain functions so that tests can build them for the
// host (tests/backends/test_exact_dot_cuh.py) and check them against fractions.
//
// A double is m 2**lsb exactly (m < 2**53 an integer, lsb >= -1074), so a
// product a x is the 106-bit integer m_a m_x times 2**(lsb_a + lsb_x).  The
// accumulator holds signed 32-bit digits in int64 containers, digit d weighing
// 2**(base + 32 d), where base is at or below every term's lsb (the caller's
// window, cupy_backend.exact_window); a term adds its at most five digits
// without carries, so containers take 2**30 terms before they could overflow.
// Digit d of one accumulator lives at acc[d * stride] (a warp interleaves its
// lanes' accumulators in shared memory).
#pragma once

struct Exact {
    unsigned long long m;       // the integer significand
    int lsb;                    // the exponent of its last bit
    bool negative;
};

__device__ __forceinline__ Exact exact_of(double v) {
    unsigned long long bits = (unsigned long long)__double_as_longlong(v);
    int biased = (int)((bits >> 52) & 0x7FF);
    unsigned long long fraction = bits & 0xFFFFFFFFFFFFFULL;
    Exact e;
    e.negative = (bits >> 63) != 0;
    e.m = biased ? (fraction | (1ULL << 52)) : fraction;
    e.lsb = biased ? biased - 1075 : -1074;
    return e;
}

// acc += sign * (hi 2**64 + lo) * 2**offset (offset >= 0 from base, hi < 2**42),
// digits at or above ``digits`` skipped (the window's top keeps them zero).
__device__ __forceinline__ void add_shifted(long long* acc, int stride, int digits, unsigned long long hi,
                                            unsigned long long lo, long long offset, bool negative) {
    int q = (int)(offset >> 5), s = (int)(offset & 31);
    unsigned long long l0 = lo << s;
    unsigned long long h0 = (hi << s) | (s ? lo >> (64 - s) : 0ULL);
    unsigned long long h1 = s ? hi >> (64 - s) : 0ULL;
    unsigned long long d[5] = {l0 & 0xFFFFFFFFULL, l0 >> 32, h0 & 0xFFFFFFFFULL, h0 >> 32, h1};
#pragma unroll
    for (int t = 0; t < 5; ++t) {
        if (q + t < digits && d[t] != 0) {
            long long v = (long long)d[t];
            acc[(q + t) * stride] += negative ? -v : v;
        }
    }
}

// acc += sign * a x exactly (subnormals and all: integer arithmetic only).
__device__ __forceinline__ void add_product(long long* acc, int stride, int digits, double a, double x,
                                            long long base, bool negate) {
    Exact ea = exact_of(a), ex = exact_of(x);
    if (ea.m == 0 || ex.m == 0) return;
    unsigned long long lo = ea.m * ex.m;
    unsigned long long hi = __umul64hi(ea.m, ex.m);
    add_shifted(acc, stride, digits, hi, lo, (long long)ea.lsb + ex.lsb - base, (ea.negative != ex.negative) != negate);
}

// acc += sign * v exactly.
__device__ __forceinline__ void add_value(long long* acc, int stride, int digits, double v, long long base,
                                          bool negate) {
    Exact e = exact_of(v);
    if (e.m == 0) return;
    add_shifted(acc, stride, digits, 0ULL, e.m, (long long)e.lsb - base, e.negative != negate);
}
