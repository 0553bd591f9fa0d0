// Epilogue in one pass: reduce the int32/int64 GEMM products modulo p, CRT each
// slice pair into exact 32-bit limbs, add the pairs into a Kulisch accumulator
// at their shifts, round once to float64 at 2**(beta_a[i] + beta_b[j]).
// Complex products (COMPLEX): each pair brings the three Karatsuba products
// P1 = Ar Br, P2 = Ai Bi, P3 = (Ar + Ai)(Br + Bi), and the kernel forms
// Re = P1 - P2 and Im = P3 - P1 - P2 itself (exact in float64), reducing and
// rounding both: the products are read once, no int64 copies.
//
// The same steps as ozaki/crt/reconstruct.py (reconstruct) and
// ozaki/crt/kulisch.py (normalize, round_to_float64).  Compile-time sizes:
//   PROD_T  the element type of the products (int or long long)
//   NMOD    the number of moduli; LP limbs of one CRT value, LACC of the accumulator
//   SINGLE_PAIR  defined when there is one slice pair (fast/accurate modes)
//   COMPLEX      defined for complex products (three inputs, two outputs a pair)
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

#ifdef COMPLEX
#define NIN 3
#define NOUT 2
#else
#define NIN 1
#define NOUT 1
#endif

extern "C" __global__ void epilogue(const PROD_T* const* __restrict__ prods,  // (npairs * NIN) pointers
                                    int npairs, long long rows, long long cols,
                                    long long mod_stride, long long row_stride,
                                    const int* __restrict__ shifts,         // (npairs,) in limbs
                                    const long long* __restrict__ beta_a,
                                    const long long* __restrict__ beta_b,
                                    double* __restrict__ out0, double* __restrict__ out1,
                                    long long out_stride) {
    // Every product array has shape (NMOD, rows, cols) with the same strides (in
    // elements; the last axis contiguous): they come from one GEMM routine.
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < rows * cols;
         v += (long long)gridDim.x * blockDim.x) {
        long long row = v / cols;
        long long col = v - row * cols;
        long long idx = row * row_stride + col;
        long long acc[NOUT][LACC];
#pragma unroll
        for (int o = 0; o < NOUT; ++o)
#pragma unroll
            for (int l = 0; l < LACC; ++l) acc[o][l] = 0;
        for (int pair = 0; pair < npairs; ++pair) {
            // S = sum_i r_i c_i in float64 limbs.  r_i = x - p rint(x / p) is some
            // residue of the product x with |r_i| <= 1.5 p (|x| < 2**53: the
            // rounded quotient is off by at most one), so |r_i c_il| < 2**41 and
            // the at most 49 terms of a limb stay below 2**47: exact.
            double S[NOUT][LP];
#pragma unroll
            for (int o = 0; o < NOUT; ++o)
#pragma unroll
                for (int l = 0; l < LP; ++l) S[o][l] = 0.0;
            const PROD_T* p[NIN];
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = prods[pair * NIN + h] + idx;
#pragma unroll
            for (int i = 0; i < NMOD; ++i) {
                double x[NOUT];
#ifdef COMPLEX
                // |P| < 2**51 (k 2**14 with k below 2**37): the differences are exact.
                double p1 = to_double(p[0][i * mod_stride]), p2 = to_double(p[1][i * mod_stride]);
                x[0] = p1 - p2;
                x[1] = to_double(p[2][i * mod_stride]) - p1 - p2;
#else
                x[0] = to_double(p[0][i * mod_stride]);
#endif
#pragma unroll
                for (int o = 0; o < NOUT; ++o) {
                    double t = fma(x[o], MOD_INV[i], MAGIC) - MAGIC;
                    double r = fma(-t, MOD_P[i], x[o]);
#pragma unroll
                    for (int l = 0; l < LP; ++l) S[o][l] = fma(r, CRT_C[i][l], S[o][l]);
                }
            }
#ifdef SINGLE_PAIR
            const int sh = 0;                            // keeps acc in registers
#else
            int sh = shifts[pair];
#endif
#pragma unroll
            for (int o = 0; o < NOUT; ++o) {
                double Sf = 0.0;
#pragma unroll
                for (int l = 0; l < LP; ++l) Sf = fma(S[o][l], LIMB_WEIGHT[l], Sf);
                // |C'| <= P/2 - P/2**20 keeps S / P 2**-20 off a half-integer; the
                // float64 error of Sf / P is below 2**-36: the quotient is exact.
                double q = fma(Sf, CRT_INV_P, MAGIC) - MAGIC;
                // |q| < 2**13 and P's limbs < 2**32: S_l - q P_l < 2**48, exact.
#pragma unroll
                for (int l = 0; l < LP; ++l) acc[o][sh + l] += to_int64(fma(-q, CRT_P[l], S[o][l]));
            }
        }
        long long e = beta_a[row] + beta_b[col];
        long long at = row * out_stride + col;
        normalize(acc[0], LACC);
        out0[at] = round_to_float64<LACC>(acc[0], e);
#ifdef COMPLEX
        normalize(acc[1], LACC);
        out1[at] = round_to_float64<LACC>(acc[1], e);
#endif
    }
}
