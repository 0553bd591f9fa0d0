// The fp8 substrate's two passes around its digit GEMMs (ozaki/gemm/fp8.py), one launch
// each per modulus instead of a dozen CuPy passes (split in int16, a byte table gather into
// a zero-padded copy, two concatenations; three int64 casts and the sum):
//
//   digit_operands  the int8 residues r of one side (batch matrices of m rows x k, rows
//                   ld apart) as the e4m3 bytes of their digits, r = 16 x + y,
//                   y = ((r + 8) mod 16) - 8: X = x, Y = y and XY = [x | y] (A's side,
//                   order_xy 1) or [y | x] (B's, order_xy 0), each matrix zero-padded to
//                   m_pad x kpad (XY: 2 kpad), as cuBLASLt's FP8 GEMMs read them (the
//                   zero bytes are e4m3 +0)
//   recombine       out = 256 XX + 16 XY + YY (+ out when ADD, the next K chunk) from the
//                   three FP32 digit products, exact integers (fp8.recombine), into one
//                   modulus' products at any row and matrix stride
//
// Compile-time: E4M3_INIT, fp8.E4M3_CODES's bytes of the integers -16..16 (the digits' -8..8
// as e4m3, the rest 0x7F, NaN, so a stray one shows); OUT_T
// (int or long long) and ADD for recombine.

__constant__ unsigned char E4M3[33] = E4M3_INIT;     // E4M3[v + 16]: the byte of v

// A block a padded row (one division a row, none a byte), four columns a thread: one
// 32-bit store to each output (kpad is a multiple of 16).
extern "C" __global__ void digit_operands(const signed char* __restrict__ r, long long ld, long long m,
                                          long long batch, long long k, long long m_pad, long long kpad,
                                          int order_xy, unsigned int* __restrict__ X,
                                          unsigned int* __restrict__ Y, unsigned int* __restrict__ XY) {
    for (long long row = blockIdx.x; row < batch * m_pad; row += gridDim.x) {
        long long g = row / m_pad, i = row - g * m_pad;
        const signed char* src = r + (g * m + i) * ld;
        const bool live = i < m;
        for (long long col = 4 * threadIdx.x; col < kpad; col += 4 * blockDim.x) {
            unsigned int wx = 0, wy = 0;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                int v = (live && col + c < k) ? src[col + c] : 0;
                int y = ((v + 8) & 15) - 8;          // (v + 8) mod 16 - 8, in [-8, 7]
                int x = (v - y) >> 4;                // exact: v - y is a multiple of 16; in [-8, 8]
                wx |= (unsigned int)E4M3[x + 16] << (8 * c);
                wy |= (unsigned int)E4M3[y + 16] << (8 * c);
            }
            long long at = (row * kpad + col) / 4, at2 = (row * 2 * kpad + col) / 4;
            X[at] = wx;
            Y[at] = wy;
            XY[at2] = order_xy ? wx : wy;
            XY[at2 + kpad / 4] = order_xy ? wy : wx;
        }
    }
}

#ifndef OUT_T
#define OUT_T int
#endif

// XX, XY, YY: (batch, m, n) float32 at (matrix, row) strides in elements; out likewise.
// A block a row.
extern "C" __global__ void recombine(const float* __restrict__ XX, const float* __restrict__ XY,
                                     const float* __restrict__ YY, long long in_matrix, long long in_row,
                                     long long batch, long long m, long long n,
                                     OUT_T* __restrict__ out, long long out_matrix, long long out_row) {
    for (long long row = blockIdx.x; row < batch * m; row += gridDim.x) {
        long long g = row / m, i = row - g * m;
        const long long src0 = g * in_matrix + i * in_row;
        OUT_T* dst = out + g * out_matrix + i * out_row;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            long long src = src0 + j;
            // Each FP32 sum is an integer of magnitude <= 2**24 (fp8.K_CHUNK), so the casts
            // are exact; the sum in 64 bits (256 |XX| alone reaches 2**14 k), whose value, the
            // product of residues, fits OUT_T (int32 for k <= fp8.INT32_K).
            long long v = 256LL * (long long)XX[src] + 16LL * (long long)XY[src] + (long long)YY[src];
#ifdef ADD
            v += dst[j];
#endif
            dst[j] = (OUT_T)v;
        }
    }
}
