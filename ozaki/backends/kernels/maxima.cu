// The row and column maxima of a stack of non-negative int32 matrices (batch, m, n), rows
// ld apart and matrices mstride apart (accurate mode's bound M = ceil(|A|) ceil(|B|)^T,
// scheme.plan_accurate), in one pass over M: a block covers ROWS rows of 256 columns, a
// thread a column; a row's maximum is a warp's shuffle reduction then one atomicMax a
// warp, a column's a thread's running maximum then one atomicMax a block.  The maxima
// start at zero (M >= 0) and the result is order-free.  Taking them with two CuPy
// reductions read M twice, the column one strided: 0.26 ms at n = 8192 (run a9b41de).

#define ROWS 32

extern "C" __global__ void maxima(const int* __restrict__ M, long long batch, long long m, long long n,
                                  long long ld, long long mstride, int* __restrict__ row_max,
                                  int* __restrict__ col_max) {
    const long long col_blocks = (n + blockDim.x - 1) / blockDim.x;
    const long long row_blocks = (m + ROWS - 1) / ROWS;
    const long long tiles = batch * row_blocks * col_blocks;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        long long g = t / (row_blocks * col_blocks), rest = t - g * (row_blocks * col_blocks);
        long long i0 = (rest / col_blocks) * ROWS, j = (rest % col_blocks) * blockDim.x + threadIdx.x;
        const bool live = j < n;
        const int* src = M + g * mstride + j;
        int col = 0;
        for (int r = 0; r < ROWS && i0 + r < m; ++r) {          // uniform a block
            int v = live ? src[(i0 + r) * ld] : 0;
            col = max(col, v);
#pragma unroll
            for (int s = 16; s > 0; s >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, s));
            if ((threadIdx.x & 31) == 0) atomicMax(row_max + g * m + i0 + r, v);
        }
        if (live) atomicMax(col_max + g * n + j, col);
    }
}
