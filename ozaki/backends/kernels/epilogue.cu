// Epilogue in one pass: reduce the int32/int64 GEMM products modulo p, CRT each
// slice pair into exact 32-bit limbs, add the pairs into a Kulisch accumulator
// at their shifts, round once to float64 at 2**(beta_a[i] + beta_b[j]).
//
// The same steps as ozaki/crt/reconstruct.py (reconstruct) and
// ozaki/crt/kulisch.py (normalize, round_to_float64).  Compile-time sizes:
//   PROD_T  the element type of the products (int or long long)
//   NMOD    the number of moduli; LP limbs of one CRT value, LACC of the accumulator
//   VEC     consecutive outputs of a row per thread (4 or 2: one vector load per
//           modulus, int32 products only)
//   SINGLE_PAIR  defined when there is one slice pair (fast/accurate modes)
// and the constant tables MOD_P, MOD_INV, CRT_C (NMOD x LP limbs of c_i),
// CRT_P (LP limbs of P) and CRT_INV_P from cupy_backend._constant_tables.

#ifndef PROD_T
#define PROD_T int
#endif

#include "modular.cuh"

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

__device__ __forceinline__ void normalize(long long* a, int L) {
    for (int l = 0; l < L - 1; ++l) {
        long long carry = a[l] >> 32;              // arithmetic shift: floor division
        a[l] &= 0xFFFFFFFFLL;
        a[l + 1] += carry;
    }
}

// RN(int(a) * 2**exponent) for normalized limbs a; a is overwritten.
// L is a compile-time constant at every call, so the loops unroll and the
// limbs stay in registers (no run-time index into a[]).
template <int L>
__device__ __forceinline__ double round_to_float64(long long* a, long long exponent) {
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
    if (top < 0) return 0.0;
    int bl = 64 - __clzll(l2);                     // 1..32
    unsigned long long T = (l2 << (64 - bl)) | (l1 << (32 - bl)) | (l0 >> bl);
    sticky |= (l0 & ((1ULL << bl) - 1)) != 0;
    long long E = exponent + 32LL * (top - 2) + bl;   // value = T * 2**E (+ sticky)
    long long lsb = E + 11 > -1074 ? E + 11 : -1074;
    long long d = lsb - E;                          // >= 11
    unsigned long long q = 0;
    if (d <= 64) {
        q = (T >> 1) >> (d - 1);
        unsigned long long rem = T - ((q << (d - 1)) << 1);
        unsigned long long half = 1ULL << (d - 1);
        if (rem > half || (rem == half && (sticky || (q & 1ULL)))) q += 1;
    }
    int ilsb = lsb > 4096 ? 4096 : (int)lsb;
    double r = ldexp((double)q, ilsb);
    return negative ? -r : r;
}

extern "C" __global__ void epilogue(const PROD_T* __restrict__ prod,   // (npairs, NMOD, rows, cols)
                                    int npairs, long long rows, long long cols,
                                    long long pair_stride, long long mod_stride, long long row_stride,
                                    const int* __restrict__ shifts,         // (npairs,) in limbs
                                    const long long* __restrict__ beta_a,
                                    const long long* __restrict__ beta_b,
                                    double* __restrict__ out, long long out_stride) {
    // Strides in elements: the products may be a view (a padded modulus stride,
    // an output tile); the last axis is contiguous.
    long long groups = cols / VEC;                  // cols is a multiple of VEC
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < rows * groups;
         v += (long long)gridDim.x * blockDim.x) {
        long long row = v / groups;
        long long col0 = (v - row * groups) * VEC;
        long long idx = row * row_stride + col0;
        long long acc[VEC][LACC];
#pragma unroll
        for (int e = 0; e < VEC; ++e)
#pragma unroll
            for (int l = 0; l < LACC; ++l) acc[e][l] = 0;
        for (int pair = 0; pair < npairs; ++pair) {
            // S = sum_i r_i c_i in float64 limbs.  r_i = x - p rint(x / p) is some
            // residue of the product x with |r_i| <= 1.5 p (|x| < 2**53: the
            // rounded quotient is off by at most one), so |r_i c_il| < 2**41 and
            // the at most 49 terms of a limb stay below 2**47: exact.
            double S[VEC][LP];
#pragma unroll
            for (int e = 0; e < VEC; ++e)
#pragma unroll
                for (int l = 0; l < LP; ++l) S[e][l] = 0.0;
            const PROD_T* pp = prod + (long long)pair * pair_stride + idx;
#pragma unroll
            for (int i = 0; i < NMOD; ++i) {
                PROD_T x[VEC];
#if VEC == 4
                int4 w = *reinterpret_cast<const int4*>(pp + (long long)i * mod_stride);
                x[0] = w.x; x[1] = w.y; x[2] = w.z; x[3] = w.w;
#elif VEC == 2
                int2 w = *reinterpret_cast<const int2*>(pp + (long long)i * mod_stride);
                x[0] = w.x; x[1] = w.y;
#else
#pragma unroll
                for (int e = 0; e < VEC; ++e) x[e] = pp[(long long)i * mod_stride + e];
#endif
#pragma unroll
                for (int e = 0; e < VEC; ++e) {
                    double xd = to_double(x[e]);
                    double t = fma(xd, MOD_INV[i], MAGIC) - MAGIC;
                    double r = fma(-t, MOD_P[i], xd);
#pragma unroll
                    for (int l = 0; l < LP; ++l) S[e][l] = fma(r, CRT_C[i][l], S[e][l]);
                }
            }
#ifdef SINGLE_PAIR
            const int sh = 0;                            // keeps acc in registers
#else
            int sh = shifts[pair];
#endif
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                double Sf = 0.0;
#pragma unroll
                for (int l = 0; l < LP; ++l) Sf = fma(S[e][l], LIMB_WEIGHT[l], Sf);
                // |C'| <= P/2 - P/2**20 keeps S / P 2**-20 off a half-integer; the
                // float64 error of Sf / P is below 2**-36: the quotient is exact.
                double q = fma(Sf, CRT_INV_P, MAGIC) - MAGIC;
                // |q| < 2**13 and P's limbs < 2**32: S_l - q P_l < 2**48, exact.
#pragma unroll
                for (int l = 0; l < LP; ++l) acc[e][sh + l] += to_int64(fma(-q, CRT_P[l], S[e][l]));
            }
        }
        long long ba = beta_a[row];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            normalize(acc[e], LACC);
            out[row * out_stride + col0 + e] = round_to_float64<LACC>(acc[e], ba + beta_b[col0 + e]);
        }
    }
}
