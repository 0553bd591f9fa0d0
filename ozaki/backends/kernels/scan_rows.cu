// One pass over each row of X (rows x k, row-major): the row maximum, flags,
// and the integer ceilings the scaling plans use.  One block per row.
//
// The same arithmetic as ozaki/backends/numpy_backend.py (scan_rows):
//   amax[r]   max |x| over the finite entries of the row
//   flags[r]  bit 0: the row has a NaN or inf; bit 1: it has a zero (+0 or -0)
//   CEIL_BITS > 0: e[r] = CEIL_BITS - frexp_exponent(amax), c = ceil(|x| 2**e)
//             (1 for nonzero values that underflow; 0 for zeros and non-finite),
//             so 0 <= c <= 2**CEIL_BITS; then
//   WRITE_HAT   hat[r, j] = c as int8 (CEIL_BITS = 6), zero-padded to kpad
//   SUM_SQUARES sumsq[r] = sum c**2 in int64: exact, so order-free
// Everything is an integer or a maximum: the result does not depend on the
// order of the reduction, so it matches numpy bit for bit.

#define THREADS 256

extern "C" __global__ void scan_rows(const double* __restrict__ x, long long k, long long kpad,
                                     double* __restrict__ amax, signed char* __restrict__ flags,
                                     long long* __restrict__ e_out, signed char* __restrict__ hat,
                                     long long* __restrict__ sumsq) {
    __shared__ double smax[THREADS];
    __shared__ int sflag[THREADS];
    __shared__ long long ssum[THREADS];
    long long r = blockIdx.x;
    const double* row = x + r * k;
    double m = 0.0;
    int f = 0;
    for (long long j = threadIdx.x; j < k; j += THREADS) {
        double v = row[j];
        if (!isfinite(v)) f |= 1;
        else {
            if (v == 0.0) f |= 2;
            m = fmax(m, fabs(v));
        }
    }
    smax[threadIdx.x] = m;
    sflag[threadIdx.x] = f;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            smax[threadIdx.x] = fmax(smax[threadIdx.x], smax[threadIdx.x + s]);
            sflag[threadIdx.x] |= sflag[threadIdx.x + s];
        }
        __syncthreads();
    }
    m = smax[0];
    if (threadIdx.x == 0) { amax[r] = m; flags[r] = (signed char)sflag[0]; }
#if CEIL_BITS > 0
    int fe;
    frexp(m, &fe);
    if (m == 0.0) fe = 0;
    int e = CEIL_BITS - fe;
    if (threadIdx.x == 0) e_out[r] = e;
    long long acc = 0;
    for (long long j = threadIdx.x; j < kpad; j += THREADS) {
        double v = j < k ? row[j] : 0.0;
        double c = 0.0;
        if (isfinite(v) && v != 0.0) c = fmax(ceil(ldexp(fabs(v), e)), 1.0);
#ifdef WRITE_HAT
        hat[r * kpad + j] = (signed char)(int)c;
#endif
#ifdef SUM_SQUARES
        long long ci = (long long)c;
        acc += ci * ci;
#endif
    }
#ifdef SUM_SQUARES
    ssum[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) ssum[threadIdx.x] += ssum[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) sumsq[r] = ssum[0];
#endif
#endif
}
