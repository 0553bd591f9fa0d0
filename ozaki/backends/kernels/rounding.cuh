// Normalizing signed 32-bit limbs and the one rounding: shared by kulisch.cuh
// (the CRT epilogues) and exact_dot.cuh (exact residuals).  No constant tables.
#pragma once

__device__ __forceinline__ void normalize(long long* a, int L) {
    for (int l = 0; l < L - 1; ++l) {
        long long carry = a[l] >> 32;              // arithmetic shift: floor division
        a[l] &= 0xFFFFFFFFLL;
        a[l + 1] += carry;
    }
}

// The output formats of round_to: the bits of the significand and the
// exponent of the least subnormal's bit (ozaki/crt/kulisch.py, rounding_format).
template <typename F> struct Format;
template <> struct Format<double> { static constexpr int PREC = 53, LSB_MIN = -1074; };
template <> struct Format<float> { static constexpr int PREC = 24, LSB_MIN = -149; };

template <int L, typename F = double, bool WITH_RESIDUAL = false>
__device__ __forceinline__ F round_to(long long* a, long long exponent, double* residual = nullptr);

// q 2**lsb for an integer q < 2**54 (exact in a double) and lsb >= -1074, rounded once: the
// value itself wherever it is a double (normal, or a subnormal multiple of 2**-1074), inf
// past the range.  Two multiplications by powers of two, not ldexp's routine (about 40
// instructions an output, in every epilogue): with lsb capped at 2046 (any value that far
// up overflows either way), l1 = lsb / 2 and lsb - l1 lie in [-537, 1023], so both powers
// are normal doubles, q 2**l1 is exact (q < 2**54), and the second product rounds once.
// (rounded_window's ROUND_CONVERT passes a q of up to 2**64, already rounded to 53 bits, and
// lsb >= -1085: the powers are then at least 2**-543, still normal, q 2**l1 is exact wherever
// the result is finite, and the result is normal, so exact.)
__device__ __forceinline__ double times_pow2(double q, long long lsb) {
    const int l = lsb > 2046 ? 2046 : (int)lsb;
    const int l1 = l / 2;
    return q * __longlong_as_double((long long)(1023 + l1) << 52) * __longlong_as_double((long long)(1023 + l - l1) << 52);
}

// x - q 2**lsb for the magnitude limbs a of x = int(a) 2**exponent, rounded to double
// (the helper of round_to's residual; a is overwritten).  q 2**lsb is a multiple of
// 2**exponent unless lsb < exponent, where x has at most PREC bits and is its own
// rounding.  Its three 32-bit chunks are taken off at limb sh / 32, the loop over every
// limb (predicated, unrolled) keeping the limbs in registers.
template <int L, typename F>
__device__ __forceinline__ double residual_of(long long* a, long long exponent, unsigned long long q,
                                              long long lsb, bool negative) {
    constexpr int LSB_MIN = Format<F>::LSB_MIN;
    double r = times_pow2((double)q, lsb);
    double zero = (double)(sizeof(F) - sizeof(F));
    if (isinf((F)r) || (sizeof(F) == 8 && lsb == LSB_MIN)) return zero / zero;     // NaN
    if (lsb < exponent) return 0.0;
    long long sh = lsb - exponent;
    long long limb = sh >> 5;
    int off = (int)(sh & 31);
    unsigned long long lo = q << off;                               // bits 0..63 of q 2**off
    long long c0 = (long long)(lo & 0xFFFFFFFFULL), c1 = (long long)(lo >> 32);
    long long c2 = off ? (long long)(q >> (64 - off)) : 0;          // bits 64..95 (q < 2**54)
#pragma unroll
    for (int l = 0; l < L; ++l)
        a[l] -= (l == limb ? c0 : 0) + (l == limb + 1 ? c1 : 0) + (l == limb + 2 ? c2 : 0);
    normalize(a, L);
    double d = round_to<L, double, false>(a, exponent);
    return negative ? -d : d;
}

// The rounding of a magnitude (T + s) 2**E, T < 2**64 with its top bit set and 0 <= s < 1,
// s > 0 exactly when ``sticky``: the q with RN = q 2**lsb in the format F (lsb set here,
// the least subnormal's exponent at the least), ties to even.  Shared by round_to and
// round_two_words, which find the window (T, sticky, E) two ways.
template <typename F>
__device__ __forceinline__ unsigned long long round_window(unsigned long long T, bool sticky, long long E,
                                                           long long& lsb) {
    constexpr int PREC = Format<F>::PREC, LSB_MIN = Format<F>::LSB_MIN;
    lsb = E + (64 - PREC) > LSB_MIN ? E + (64 - PREC) : LSB_MIN;
    long long d = lsb - E;                          // >= 64 - PREC
    unsigned long long q = 0;
    if (d <= 64) {
        q = (T >> 1) >> (d - 1);
        unsigned long long rem = T - ((q << (d - 1)) << 1);
        unsigned long long half = 1ULL << (d - 1);
        if (rem > half || (rem == half && (sticky || (q & 1ULL)))) q += 1;
    }
    return q;
}

// q 2**lsb with its sign, in F: formed in a double, where it is exact (at most PREC + 1 <= 54
// bits; beyond double's range only if it overflows F too), so its conversion to F is exact.
template <typename F>
__device__ __forceinline__ F signed_rounded(unsigned long long q, long long lsb, bool negative) {
    if constexpr (sizeof(F) == 4) {
        // float32 subnormals (lsb at its least) from their bits: q 2**-149 has the
        // bits q, also where rounding carried into the least normal (q = 2**23, 2**24).
        // A double -> float conversion would flush them to zero where the device
        // compiles float arithmetic with flush-to-zero (seen on the H200, 896b51e).
        if (lsb == Format<F>::LSB_MIN)
            return __int_as_float((int)q | (negative ? (int)0x80000000 : 0));
    }
    double r = times_pow2((double)q, lsb);
    return (F)(negative ? -r : r);                  // exact (round to nearest: inf past F's range)
}

// The rounding of the magnitude (T + s) 2**E as round_window's, signed and in F, the value itself.
// ROUND_CONVERT (cupy_backend: NEW_KERNELS round_convert): where the result is a normal number of
// F (or overflows), by the conversion instruction: T with the sticky bit ORed into its last bit has
// 64 >= PREC + 2 bits, so rounding it to PREC bits rounds the whole value (to odd, then to
// nearest: the same RN), and the scaling by 2**E is exact there (times_pow2).  Results below F's
// least normal keep round_window.
template <typename F>
__device__ __forceinline__ F rounded_window(unsigned long long T, bool sticky, long long E, bool negative) {
#ifdef ROUND_CONVERT
    constexpr int PREC = Format<F>::PREC, LSB_MIN = Format<F>::LSB_MIN;
    if (E >= LSB_MIN + PREC - 64) {                 // 2**(E + 63) <= the value: at least F's least normal
        const unsigned long long odd = T | (sticky ? 1ULL : 0ULL);
        double r;
        if constexpr (sizeof(F) == 4) r = times_pow2((double)__ull2float_rn(odd), E);
        else r = times_pow2(__ull2double_rn(odd), E);
        return (F)(negative ? -r : r);              // exact, or inf past F's range
    }
#endif
    long long lsb;
    unsigned long long q = round_window<F>(T, sticky, E, lsb);
    return signed_rounded<F>(q, lsb, negative);
}

// RN(int(a) * 2**exponent) in the format F, rounded once, for normalized
// limbs a; a is overwritten.
// L is a compile-time constant at every call, so the loops unroll and the
// limbs stay in registers (no run-time index into a[]).
//
// With WITH_RESIDUAL (exact mode by Ziv's strategy: scheme._by_test), also
// *residual = x - RN(x) rounded once to double (ozaki/crt/kulisch.py's
// round_to(residual=True)): q 2**lsb subtracted from the magnitude's limbs, the
// difference rounded by the same code.  NaN where it is not formed: results
// that overflow, and double results in the subnormal range, where the residual
// may lie below double's own.
template <int L, typename F, bool WITH_RESIDUAL>
__device__ __forceinline__ F round_to(long long* a, long long exponent, double* residual) {
    bool negative = a[L - 1] < 0;
    if (negative) {
#pragma unroll
        for (int l = 0; l < L; ++l) a[l] = -a[l];
        normalize(a, L);
    }
    // Slide a three-limb window up the limbs; keep the one at the top nonzero limb.
    int top = -1;
    unsigned long long l2 = 0, l1 = 0, l0 = 0, prev1 = 0, prev2 = 0;
    bool sticky = false, below = false;
#pragma unroll
    for (int l = 0; l < L; ++l) {
        unsigned long long cur = (unsigned long long)a[l];
        if (cur != 0) { top = l; l2 = cur; l1 = prev1; l0 = prev2; sticky = below; }
        below |= (prev2 != 0);
        prev2 = prev1;
        prev1 = cur;
    }
    if (top < 0) {
        if constexpr (WITH_RESIDUAL) *residual = 0.0;
        return F(0);
    }
    int bl = 64 - __clzll(l2);                     // 1..32
    unsigned long long T = (l2 << (64 - bl)) | (l1 << (32 - bl)) | (l0 >> bl);
    sticky |= (l0 & ((1ULL << bl) - 1)) != 0;
    long long E = exponent + 32LL * (top - 2) + bl;   // value = T * 2**E (+ sticky)
    if constexpr (WITH_RESIDUAL) {
        long long lsb;
        unsigned long long q = round_window<F>(T, sticky, E, lsb);
        *residual = residual_of<L, F>(a, exponent, q, lsb, negative);
        return signed_rounded<F>(q, lsb, negative);
    } else {
        return rounded_window<F>(T, sticky, E, negative);
    }
}

// RN(x * 2**exponent) in F for x = sum_l a[l] 2**(32 l) in signed limbs that need not be
// normalized (|a[l]| < 2**62), when |x| < 2**127: a single slice pair's CRT value lifted
// into (-P/2, P/2] with P < 2**128 (16 moduli or fewer; kernel_tables' CRT_P_BITS).  The
// limbs are summed modulo 2**128 into two 64-bit words, which then hold x itself (a limb
// past the fourth adds a multiple of 2**128), and the window is found by two clz instead of
// normalize and round_to's walk up every limb: the same bits as normalize + round_to.
template <int L, typename F = double>
__device__ __forceinline__ F round_two_words(const long long* a, long long exponent) {
    unsigned long long lo = 0, hi = 0;
#pragma unroll
    for (int l = 0; l < (L < 4 ? L : 4); ++l) {     // a[l] 2**(32 l) as 128-bit two's complement
        const long long x = a[l];
        unsigned long long tlo, thi;
        if (l == 0) { tlo = (unsigned long long)x; thi = (unsigned long long)(x >> 63); }
        else if (l == 1) { tlo = (unsigned long long)x << 32; thi = (unsigned long long)(x >> 32); }
        else if (l == 2) { tlo = 0; thi = (unsigned long long)x; }
        else { tlo = 0; thi = (unsigned long long)x << 32; }
        lo += tlo;
        hi += thi + (lo < tlo ? 1ULL : 0ULL);
    }
    const bool negative = (long long)hi < 0;
    if (negative) {                                 // the magnitude: -x = ~x + 1
        lo = ~lo + 1;
        hi = ~hi + (lo == 0 ? 1ULL : 0ULL);
    }
    if ((hi | lo) == 0) return F(0);
    int lz;                                         // leading zeros of the 128-bit magnitude
    unsigned long long T;
    bool sticky;
    if (hi != 0) {
        lz = __clzll((long long)hi);
        T = lz ? (hi << lz) | (lo >> (64 - lz)) : hi;
        sticky = (lo << lz) != 0;
    } else {
        lz = 64 + __clzll((long long)lo);
        T = lo << (lz - 64);
        sticky = false;
    }
    return rounded_window<F>(T, sticky, exponent + 64 - lz, negative);   // x = T 2**(64 - lz) (+ sticky)
}
