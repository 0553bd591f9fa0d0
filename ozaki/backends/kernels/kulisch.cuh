// Kulisch limbs, the CRT lift and the one rounding: the device side of
// ozaki/crt/kulisch.py and ozaki/crt/reconstruct.py, shared by epilogue.cu
// (products read from memory) and fused.cu (residues kept on chip).
//
// Compile-time: NMOD moduli, LP limbs of one CRT value, and the constant
// tables MOD_P, MOD_INV, CRT_C (NMOD x LP limbs of c_i), CRT_P (LP limbs of P)
// and CRT_INV_P from cupy_backend._constant_tables; OUT_T, the output type
// (double, the default, or float), which the kernels' final writes use.
#pragma once

#include "modular.cuh"

#ifndef OUT_T
#define OUT_T double
#endif

// 2**(32 l), the weights of the limbs (LP <= 12 for the 49 moduli of the table).
__constant__ double LIMB_WEIGHT[12] = {0x1p0, 0x1p32, 0x1p64, 0x1p96, 0x1p128, 0x1p160, 0x1p192,
                                       0x1p224, 0x1p256, 0x1p288, 0x1p320, 0x1p352};

// Integer <-> double without the quarter-rate conversion instructions.
__device__ __forceinline__ double to_double(int v) {            // exact
    return __hiloint2double(0x43300000, v ^ 0x80000000) - 4503601774854144.0;   // 2**52 + 2**31
}
__device__ __forceinline__ double to_double(long long v) { return (double)v; }
__device__ __forceinline__ long long to_int64(double x) {      // x an integer, |x| < 2**51
    return __double_as_longlong(x + MAGIC) - __double_as_longlong(MAGIC);
}

// x - p rint(x / p) for an integer x with |x| < 2**53: a residue of x with
// |r| <= 1.5 p (the rounded quotient is off by at most one), and |r| <= p / 2
// when |x| < 2**35, where the quotient is exact.
__device__ __forceinline__ double reduce_mod(double x, int i) {
    double t = fma(x, MOD_INV[i], MAGIC) - MAGIC;
    return fma(-t, MOD_P[i], x);
}

// S_l += r c_il: |r c_il| < 2**41 for |r| <= 1.5 p, so the at most 49 terms
// of a limb stay below 2**47: exact in float64.
__device__ __forceinline__ void crt_add(double* S, double r, int i) {
#pragma unroll
    for (int l = 0; l < LP; ++l) S[l] = fma(r, CRT_C[i][l], S[l]);
}

// acc[sh + l] += the limbs of S - q P, q = rint(S / P): the value of the
// residues lifted into (-P/2, P/2].  |C'| <= P/2 - P/2**20 keeps S / P 2**-20
// off a half-integer; the float64 error of Sf / P is below 2**-36, so the
// quotient is exact.  |q| < 2**13 and P's limbs < 2**32: S_l - q P_l < 2**48.
__device__ __forceinline__ void crt_lift(const double* S, long long* acc, int sh) {
    double Sf = 0.0;
#pragma unroll
    for (int l = 0; l < LP; ++l) Sf = fma(S[l], LIMB_WEIGHT[l], Sf);
    double q = fma(Sf, CRT_INV_P, MAGIC) - MAGIC;
#pragma unroll
    for (int l = 0; l < LP; ++l) acc[sh + l] += to_int64(fma(-q, CRT_P[l], S[l]));
}

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

// RN(int(a) * 2**exponent) in the format F, rounded once, for normalized
// limbs a; a is overwritten.  The rounded value is formed in a double, where
// it is exact (at most PREC + 1 <= 54 bits; beyond double's range only if it
// overflows F too), so its conversion to F is exact: no double rounding.
// L is a compile-time constant at every call, so the loops unroll and the
// limbs stay in registers (no run-time index into a[]).
template <int L, typename F = double>
__device__ __forceinline__ F round_to(long long* a, long long exponent) {
    constexpr int PREC = Format<F>::PREC, LSB_MIN = Format<F>::LSB_MIN;
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
    if (top < 0) return F(0);
    int bl = 64 - __clzll(l2);                     // 1..32
    unsigned long long T = (l2 << (64 - bl)) | (l1 << (32 - bl)) | (l0 >> bl);
    sticky |= (l0 & ((1ULL << bl) - 1)) != 0;
    long long E = exponent + 32LL * (top - 2) + bl;   // value = T * 2**E (+ sticky)
    long long lsb = E + (64 - PREC) > LSB_MIN ? E + (64 - PREC) : LSB_MIN;
    long long d = lsb - E;                          // >= 64 - PREC
    unsigned long long q = 0;
    if (d <= 64) {
        q = (T >> 1) >> (d - 1);
        unsigned long long rem = T - ((q << (d - 1)) << 1);
        unsigned long long half = 1ULL << (d - 1);
        if (rem > half || (rem == half && (sticky || (q & 1ULL)))) q += 1;
    }
    if constexpr (sizeof(F) == 4) {
        // float32 subnormals (lsb at its least) from their bits: q 2**-149 has the
        // bits q, also where rounding carried into the least normal (q = 2**23, 2**24).
        // A double -> float conversion would flush them to zero where the device
        // compiles float arithmetic with flush-to-zero (seen on the H200, 896b51e).
        if (lsb == LSB_MIN)
            return __int_as_float((int)q | (negative ? (int)0x80000000 : 0));
    }
    int ilsb = lsb > 4096 ? 4096 : (int)lsb;
    double r = ldexp((double)q, ilsb);
    return (F)(negative ? -r : r);                  // exact (round to nearest: inf past F's range)
}
