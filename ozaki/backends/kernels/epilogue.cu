// Epilogue in one pass (the unfused path; fused.cu does it on chip): reduce the GEMM products
// (int32/int64, or their int8 residues from residue_gemm.cu) modulo p, CRT each
// slice pair into exact 32-bit limbs, add the pairs into a Kulisch accumulator
// at their shifts, round once to OUT_T at 2**(beta_a[i] + beta_b[j]).
// Complex products (COMPLEX): each pair brings the three Karatsuba products
// P1 = Ar Br, P2 = Ai Bi, P3 = (Ar + Ai)(Br + Bi), and the kernel forms
// Re = P1 - P2 and Im = P3 - P1 - P2 itself (exact in float64), reducing and
// rounding both: the products are read once, no int64 copies.
//
// The same steps as ozaki/crt/reconstruct.py (reconstruct) and
// ozaki/crt/kulisch.py (normalize, round_to).  Compile-time sizes:
//   PROD_T  the element type of the products (signed char: residues; int or long long)
//   NMOD    the number of moduli; LP limbs of one CRT value, LACC of the accumulator
//   SINGLE_PAIR  defined when there is one slice pair (fast/accurate modes)
//   COMPLEX      defined for complex products (three inputs, two outputs a pair)
//   OUT_T        the output type, double (default) or float: the format rounded to
//   CRT_MMA      defined: the kernel epilogue_mma, whose CRT sums run on the tensor cores
//                (crt_mma.cuh; with its CRT_BFRAG table), instead of epilogue
// and the constant tables MOD_P, MOD_INV, CRT_C (NMOD x LP limbs of c_i),
// CRT_P (LP limbs of P) and CRT_INV_P from cupy_backend._constant_tables.

#ifndef PROD_T
#define PROD_T int
#endif

#include "kulisch.cuh"
#ifdef CRT_MMA
#include "crt_mma.cuh"
#endif

#ifdef COMPLEX
#define NIN 3
#define NOUT 2
#else
#define NIN 1
#define NOUT 1
#endif

extern "C" __global__ void epilogue(const PROD_T* p0, const PROD_T* p1, const PROD_T* p2,   // one pair's
                                    const PROD_T* const* __restrict__ prods,  // (npairs * NIN) pointers
                                    int npairs, long long rows, long long cols,
                                    long long mod_stride, long long row_stride,
                                    const int* __restrict__ shifts,         // (npairs,) in limbs
                                    const long long* __restrict__ beta_a,
                                    const long long* __restrict__ beta_b,
                                    OUT_T* __restrict__ out0, OUT_T* __restrict__ out1,
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
#ifdef SINGLE_PAIR
            const PROD_T* one[3] = {p0, p1, p2};          // parameters: no table to copy to the device
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = one[h] + idx;
#else
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = prods[pair * NIN + h] + idx;
#endif
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
                for (int o = 0; o < NOUT; ++o) crt_add(S[o], reduce_mod(x[o], i), i);
            }
#ifdef SINGLE_PAIR
            const int sh = 0;                            // keeps acc in registers
#else
            int sh = shifts[pair];
#endif
#pragma unroll
            for (int o = 0; o < NOUT; ++o) crt_lift(S[o], acc[o], sh);
        }
        long long e = beta_a[row] + beta_b[col];
        long long at = row * out_stride + col;
        normalize(acc[0], LACC);
        out0[at] = round_to<LACC, OUT_T>(acc[0], e);
#ifdef COMPLEX
        normalize(acc[1], LACC);
        out1[at] = round_to<LACC, OUT_T>(acc[1], e);
#endif
    }
}

#ifdef CRT_MMA
// The symmetric residue (in [-h, p - 1 - h], h = floor(p / 2): |r| <= 128) of the
// integer x, exact in float64 (|x| < 2**53).
__device__ __forceinline__ int residue_int(double x, int i) {
    return __double2loint(mod_symmetric(x, MOD_P[i], MOD_INV[i], floor(0.5 * MOD_P[i])) + MAGIC);
}

// epilogue's steps with the CRT sums on the tensor cores (crt_mma.cuh): each warp takes
// 32 consecutive outputs, every lane forms its output's residues (a product read as it
// lies; int8 residues from the residue GEMM need no reduction in a real product), the
// warp turns the 32 rows of residues into limb sums with one int8 product, and every lane
// lifts, adds the pairs, rounds and writes its output as epilogue does.  The same
// parameters, the same bits.
#define MMA_WARPS 4
#define MMA_MIN_BLOCKS 4                  // at most 128 registers: the unrolled loads would take ~250
extern "C" __global__ void __launch_bounds__(MMA_WARPS * 32, MMA_MIN_BLOCKS)
epilogue_mma(const PROD_T* p0, const PROD_T* p1, const PROD_T* p2,
             const PROD_T* const* __restrict__ prods, int npairs, long long rows, long long cols,
             long long mod_stride, long long row_stride, const int* __restrict__ shifts,
             const long long* __restrict__ beta_a, const long long* __restrict__ beta_b,
             OUT_T* __restrict__ out0, OUT_T* __restrict__ out1, long long out_stride) {
    __shared__ CrtWarp warps[MMA_WARPS];
    const int lane = threadIdx.x & 31;
    CrtWarp& sm = warps[threadIdx.x >> 5];
    unsigned b[CRT_KS][CRT_NT][2];
    crt_fragments(b, lane);
    const long long total = rows * cols;
    const long long chunks = (total + 31) / 32;
    for (long long chunk = (long long)blockIdx.x * MMA_WARPS + (threadIdx.x >> 5); chunk < chunks;
         chunk += (long long)gridDim.x * MMA_WARPS) {
        // The whole warp stays in the loop (the products are warp-wide); a lane past the
        // end reads the last output again and writes nothing.
        const long long v = chunk * 32 + lane;
        const bool valid = v < total;
        const long long vv = valid ? v : total - 1;
        const long long row = vv / cols, col = vv - row * cols;
        const long long idx = row * row_stride + col;
        long long acc[NOUT][LACC];
#pragma unroll
        for (int o = 0; o < NOUT; ++o)
#pragma unroll
            for (int l = 0; l < LACC; ++l) acc[o][l] = 0;
        for (int pair = 0; pair < npairs; ++pair) {
            const PROD_T* p[NIN];
#ifdef SINGLE_PAIR
            const PROD_T* one[3] = {p0, p1, p2};
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = one[h] + idx;
#else
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = prods[pair * NIN + h] + idx;
#endif
            unsigned w[NOUT][CRT_WORDS];
#pragma unroll
            for (int o = 0; o < NOUT; ++o)
#pragma unroll
                for (int j = 0; j < CRT_WORDS; ++j) w[o][j] = 0;
#pragma unroll
            for (int i = 0; i < NMOD; ++i) {
#ifdef COMPLEX
                double q1 = to_double(p[0][i * mod_stride]), q2 = to_double(p[1][i * mod_stride]);
                crt_pack(w[0], residue_int(q1 - q2, i), i);
                crt_pack(w[1], residue_int(to_double(p[2][i * mod_stride]) - q1 - q2, i), i);
#else
                if (sizeof(PROD_T) == 1)
                    crt_pack(w[0], (int)p[0][i * mod_stride], i);       // already a residue, |r| <= 128
                else
                    crt_pack(w[0], residue_int(to_double(p[0][i * mod_stride]), i), i);
#endif
            }
#ifdef SINGLE_PAIR
            const int sh = 0;
#else
            const int sh = shifts[pair];
#endif
#pragma unroll
            for (int o = 0; o < NOUT; ++o) {
                double S[LP];
                crt_sums(sm, w[o], b, lane, S);
                crt_lift(S, acc[o], sh);
            }
        }
        if (!valid) continue;
        long long e = beta_a[row] + beta_b[col];
        long long at = row * out_stride + col;
        normalize(acc[0], LACC);
        out0[at] = round_to<LACC, OUT_T>(acc[0], e);
#ifdef COMPLEX
        normalize(acc[1], LACC);
        out1[at] = round_to<LACC, OUT_T>(acc[1], e);
#endif
    }
}
#endif
