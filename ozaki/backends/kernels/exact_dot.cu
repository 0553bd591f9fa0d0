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
