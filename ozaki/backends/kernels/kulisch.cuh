// Kulisch limbs and the CRT lift (the one rounding: rounding.cuh): the device side of
// ozaki/crt/kulisch.py and ozaki/crt/reconstruct.py, shared by epilogue.cu
// (products read from memory) and fused.cu (residues kept on chip).
//
// Compile-time: NMOD moduli, LP limbs of one CRT value, and the constant
// tables MOD_P, MOD_INV, CRT_C (NMOD x LP limbs of c_i), CRT_P (LP limbs of P)
// and CRT_INV_P from cupy_backend._constant_tables; OUT_T, the output type
// (double, the default, or float), which the kernels' final writes use.
#pragma once

#include "modular.cuh"
#include "rounding.cuh"

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

// S_l += r c_il: |r c_il| < 2**41 for |r| < 2**9 (a residue reduce_mod left within
// 1.5 p <= 384 of zero, or an int8 residue's Karatsuba difference, |r| <= 3 * 128), so
// the at most 49 terms of a limb stay below 2**47: exact in float64.
__device__ __forceinline__ void crt_add(double* S, double r, int i) {
#pragma unroll
    for (int l = 0; l < LP; ++l) S[l] = fma(r, CRT_C[i][l], S[l]);
}

// acc[sh + l] += the limbs of S - q P, q = rint(S / P): the value of the
// residues lifted into (-P/2, P/2].  |C'| <= P/2 - P/2**20 keeps S / P 2**-20
// off a half-integer; the float64 error of Sf / P is below 2**-34, so the
// quotient is exact.  |q| <= sum |r_i| < 49 * 384 < 2**15 and P's limbs < 2**32:
// S_l - q P_l < 2**48.  N <= LP limbs of S (the fused kernel's CRT_MMA: its digit sums
// fold into CRT_LD limbs; the limbs past them are zero and take only -q P_l).
template <int N = LP>
__device__ __forceinline__ void crt_lift(const double* S, long long* acc, int sh) {
    static_assert(N <= LP, "S has at most the CRT value's limbs");
    double Sf = 0.0;
#pragma unroll
    for (int l = 0; l < N; ++l) Sf = fma(S[l], LIMB_WEIGHT[l], Sf);
    double q = fma(Sf, CRT_INV_P, MAGIC) - MAGIC;
#pragma unroll
    for (int l = 0; l < LP; ++l) acc[sh + l] += to_int64(l < N ? fma(-q, CRT_P[l], S[l]) : -q * CRT_P[l]);
}

// One output part's L Kulisch limbs rounded once to OUT_T at 2**e (no residual: RESIDUAL's
// builds round with round_to).  With TWO_WORDS (cupy_backend: NEW_KERNELS two_words), where
// the limbs hold one slice pair's CRT value (SINGLE_PAIR, or NPAIRS 1) and P < 2**128
// (CRT_P_BITS, kernel_tables: 16 moduli or fewer), round_two_words: two 64-bit words and two
// clz instead of normalizing the limbs and walking up them (the fused kernel's lift and
// rounding: about 210 of its 878 instructions an output at 16 moduli, run 559ff26).
#if defined(TWO_WORDS) && (defined(SINGLE_PAIR) || (defined(NPAIRS) && NPAIRS == 1)) && defined(CRT_P_BITS) \
    && !defined(RESIDUAL)
#if CRT_P_BITS <= 128
#define ROUND_TWO_WORDS
#endif
#endif
template <int L>
__device__ __forceinline__ OUT_T rounded(long long* acc, long long e) {
#ifdef ROUND_TWO_WORDS
    return round_two_words<L, OUT_T>(acc, e);
#else
    normalize(acc, L);
    return round_to<L, OUT_T>(acc, e);
#endif
}

// One output part's L Kulisch limbs rounded once to OUT_T at 2**e and stored at ``out``
// (with RESIDUAL, the rounding's residual at ``rho``).
template <int L>
__device__ __forceinline__ void store_rounded(long long* acc, long long e, OUT_T* out, double* rho) {
#ifdef RESIDUAL
    normalize(acc, L);
    *out = round_to<L, OUT_T, true>(acc, e, rho);
#else
    *out = rounded<L>(acc, e);
#endif
}
