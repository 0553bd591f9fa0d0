// Exact residuals r_i = RN(b_i - sum_j a_ij (x0_j + x1_j)), rounded once: one
// warp per row, each lane summing its columns' products exactly into its own
// fixed-point accumulator in shared memory (exact_dot.cuh), the lanes' digits
// added by shuffles, one rounding (rounding.cuh).  The refinement of
// ozaki.linalg needs one per iteration; reading A once at memory speed, it
// replaces an exact-mode ozaki product whose operand [A | A | b] had to be
// prepared (85 ms at n = 16384 on the H200) and multiplied (17 ms).
//
// Compile-time: DIGITS (accumulator digits of 32 bits, the window from
// crt.kulisch.exact_dot_window), WARPS (rows per block at a time).
// A exact zero comes out +0 (ozaki.linalg makes every exact-zero residual +0).

#include "rounding.cuh"
#include "exact_dot.cuh"

extern "C" __global__ void __launch_bounds__(WARPS * 32)
exact_residual(const double* __restrict__ A, long long row_stride, long long col_stride, long long rows,
               long long cols, const double* __restrict__ x0, const double* __restrict__ x1, int parts,
               const double* __restrict__ b, long long base, double* __restrict__ r) {
    extern __shared__ long long digits_all[];                 // WARPS x DIGITS x 32
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long* acc = digits_all + (long long)warp * DIGITS * 32 + lane;     // digit d at acc[32 d]
    for (long long row = (long long)blockIdx.x * WARPS + warp; row < rows; row += (long long)gridDim.x * WARPS) {
#pragma unroll
        for (int d = 0; d < DIGITS; ++d) acc[32 * d] = 0;
        const double* a_row = A + row * row_stride;
        for (long long j = lane; j < cols; j += 32) {
            double a = a_row[j * col_stride];
            if (a == 0.0) continue;
            add_product(acc, 32, DIGITS, a, x0[j], base, true);
            if (parts == 2) add_product(acc, 32, DIGITS, a, x1[j], base, true);
        }
        if (lane == 0) add_value(acc, 32, DIGITS, b[row], base, false);
        long long total[DIGITS];
#pragma unroll
        for (int d = 0; d < DIGITS; ++d) {
            long long v = acc[32 * d];
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
            total[d] = v;
        }
        if (lane == 0) {
            normalize(total, DIGITS);
            r[row] = round_to<DIGITS, double>(total, base);
        }
        __syncwarp();
    }
}

// Exact entries of a product, each rounded once to OUT_T: entry e is
// RN(sum_t a_t b_t) over row rows[e] of A and row cols[e] of B^T (both K long,
// read in place), one warp per entry, as exact_residual.  Certified mode
// recomputes its failing entries so (scheme._certify), instead of exact-mode
// products over blocks of failing rows and columns.
// part: 0 a real product; for a complex one (rows [re | im], K = 2 half) 1 its
// real part, the terms a_t b_t negated for t >= half (Re = Ar Br - Ai Bi), or 2 its
// imaginary part, a_t b_(t + half mod K) (Im = Ar Bi + Ai Br).
// zero_signs: an exact zero is -0 when every term is -0 (IEEE's sum of the exact
// terms, as scheme.signed_zeros), else +0.
#ifndef OUT_T
#define OUT_T double
#endif

extern "C" __global__ void __launch_bounds__(WARPS * 32)
exact_entries(const double* __restrict__ A, const double* __restrict__ Bt, long long K, long long half,
              const long long* __restrict__ rows, const long long* __restrict__ cols, long long count, int part,
              long long base, int zero_signs, OUT_T* __restrict__ out) {
    extern __shared__ long long digits_all[];                 // WARPS x DIGITS x 32
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long* acc = digits_all + (long long)warp * DIGITS * 32 + lane;     // digit d at acc[32 d]
    for (long long e = (long long)blockIdx.x * WARPS + warp; e < count; e += (long long)gridDim.x * WARPS) {
#pragma unroll
        for (int d = 0; d < DIGITS; ++d) acc[32 * d] = 0;
        const double* a_row = A + rows[e] * K;
        const double* b_row = Bt + cols[e] * K;
        bool minus_zeros = true;                  // every term of this lane -0
        for (long long t = lane; t < K; t += 32) {
            double a = a_row[t];
            long long u = (part == 2) ? (t < half ? t + half : t - half) : t;
            double b = b_row[u];
            bool negate = part == 1 && t >= half;
            if (a == 0.0 || b == 0.0) {
                minus_zeros &= (signbit(a) != signbit(b)) != negate;
                continue;
            }
            minus_zeros = false;
            add_product(acc, 32, DIGITS, a, b, base, negate);
        }
        minus_zeros = __all_sync(0xffffffffu, minus_zeros);
        long long total[DIGITS];
#pragma unroll
        for (int d = 0; d < DIGITS; ++d) {
            long long v = acc[32 * d];
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
            total[d] = v;
        }
        if (lane == 0) {
            normalize(total, DIGITS);
            OUT_T r = round_to<DIGITS, OUT_T>(total, base);
            out[e] = (r == OUT_T(0) && zero_signs && minus_zeros) ? -OUT_T(0) : r;
        }
        __syncwarp();
    }
}
