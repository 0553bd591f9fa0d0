// ozaki.fft.specials.prepare's row flags in one pass: per row of a 2-D float64
// view (entry e of row r at x[r * ld + e * stride]), bit 0 when the row holds a
// NaN or an infinity, bit 1 when it holds a nonzero entry below ``tiny`` in
// magnitude, bit 2 when it holds a nonzero imaginary part (``imag``: 0, no entry is
// one; 1, every entry is; 2, the odd entries are, a complex row read as its float64
// pairs): the rows are not real, so stages.transform cannot take its real product;
// OR-ed into flags[r] (zeroed by the caller, so that the views of one row, such as
// c2r's real parts and imaginary slice, add theirs).
//
// Blocks run along a row (x) and over rows (y, grid-stride), so one long row
// spreads over many blocks as many short rows do.  (CuPy's per-row reductions
// give a row one block: a 2^20-point transform's all/any took 0.8 ms each on
// the H200, run e27fb53.)

extern "C" __global__ void row_specials(const double* __restrict__ x, long long rows, long long entries,
                                        long long ld, long long stride, double tiny, int* __restrict__ flags,
                                        int imag) {
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        int f = 0;
        for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < entries;
             e += (long long)gridDim.x * blockDim.x) {
            double v = x[r * ld + e * stride];
            double a = fabs(v);
            const bool imaginary = imag == 1 || (imag == 2 && (e & 1));
            f |= (isfinite(v) ? 0 : 1) | ((a < tiny && a > 0.0) ? 2 : 0) | ((imaginary && v != 0.0) ? 4 : 0);
        }
        f = __reduce_or_sync(0xffffffffu, f);
        if ((threadIdx.x & 31) == 0 && f) atomicOr(flags + r, f);
    }
}
