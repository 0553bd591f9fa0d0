// One pass over each row of X (rows x k, row-major): the row maximum, flags,
// and the integer ceilings the scaling plans use.
//
// The same arithmetic as ozaki/backends/numpy_backend.py (scan_rows):
//   amax[r]   max |x| over the finite entries of the row
//   flags[r]  bit 0: the row has a NaN or inf; bit 1: it has a zero (+0 or -0)
//   CEIL_BITS > 0: e[r] = CEIL_BITS - frexp_exponent(amax), c = ceil(|x| 2**e)
//             (1 for nonzero values that underflow; 0 for zeros and non-finite),
//             so 0 <= c <= 2**CEIL_BITS; then
//   WRITE_HAT   hat[r, j] = c as int8 (CEIL_BITS = 6), zero-padded to kpad; with
//               HAT_HALVES (complex rows [Re | Im], CEIL_BITS = 5) the halves' ceilings
//               added instead, hat[r, j] = c[j] + c[j + k / 2], j < k / 2 (kpad: of k / 2)
//   SUM_SQUARES sumsq[r] = sum c**2 in int64: exact, so order-free
//   SUM_CEILINGS sumsq[r] = sum c instead (certified mode's bound of sum |x|)
// Everything is an integer or a maximum: the result does not depend on the
// order of the reduction, so it matches numpy bit for bit.  A row is a block
// of 256 threads, or a warp when rows are short (ROW_THREADS 32).
//
// SCAN_VALS > 0 (k <= ROW_THREADS * SCAN_VALS, 0 < CEIL_BITS <= 19, no HAT_HALVES):
// each value is read once.  Until the row's maximum is known a thread keeps each of
// its values as one 32-bit word: q = ceil(|x| 2**(CEIL_BITS - fx)), fx its own frexp
// exponent (so 2**(CEIL_BITS - 1) <= q <= 2**CEIL_BITS), and fx; then
// c = ceil(q / 2**(fe - fx)), fe the maximum's exponent, since ceil(ceil(y) / 2**s) =
// ceil(y / 2**s) for s >= 0: the ceiling of two passes bit for bit (and 1 where
// |x| 2**e is below 1, as there).  The second pass re-read each row from memory: two
// scans of 16384^2 operands took 3.03 ms on the H100 against 1.3 at the copy roof
// (run 024cda9).  SCAN_VALS 0: the two passes.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef SCAN_VALS
#define SCAN_VALS 0
#endif
#if SCAN_VALS > 0 && (CEIL_BITS < 1 || CEIL_BITS > 19 || defined(HAT_HALVES))
#error "scan_rows: SCAN_VALS needs 0 < CEIL_BITS <= 19 and no HAT_HALVES"
#endif
// the word of a finite nonzero value: q (20 bits) and fx + WORD_BIAS (12 bits); 0 for the rest
#define WORD_BIAS 1100
// Threads per row: 256, or 32 for short rows (a warp a row, 8 rows a block).
#ifndef ROW_THREADS
#define ROW_THREADS 256
#endif
#define ROWS_PER_BLOCK (THREADS / ROW_THREADS)

// The reductions over one row's threads: warp shuffles when a row is a warp,
// else a shared-memory tree over the block (one row a block).
template <typename T, typename Op>
__device__ __forceinline__ T row_reduce(T v, T* scratch, Op op) {
#if ROW_THREADS == 32
    for (int s = 16; s > 0; s >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, s));
    return v;
#else
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + s]);
        __syncthreads();
    }
    v = scratch[0];
    __syncthreads();
    return v;
#endif
}

struct MaxOp { __device__ double operator()(double a, double b) const { return fmax(a, b); } };
struct OrOp { __device__ int operator()(int a, int b) const { return a | b; } };
struct SumOp { __device__ long long operator()(long long a, long long b) const { return a + b; } };

extern "C" __global__ void scan_rows(const double* __restrict__ x, long long rows, long long k, long long kpad,
                                     double* __restrict__ amax, signed char* __restrict__ flags,
                                     long long* __restrict__ e_out, signed char* __restrict__ hat,
                                     long long* __restrict__ sumsq) {
    __shared__ double smax[THREADS];
    __shared__ int sflag[THREADS];
    __shared__ long long ssum[THREADS];
    const int lane = threadIdx.x % ROW_THREADS;
    long long r = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / ROW_THREADS;
    const bool active = r < rows;          // a partial last block: the idle rows still reduce
    const double* row = x + (active ? r : 0) * k;
    const long long kk = active ? k : 0;
    double m = 0.0;
    int f = 0;
#if SCAN_VALS > 0
    unsigned int word[SCAN_VALS];
#pragma unroll
    for (int i = 0; i < SCAN_VALS; ++i) {
        const long long j = lane + (long long)i * ROW_THREADS;
        const double v = j < kk ? row[j] : 0.0;
        unsigned int w = 0;
        if (!isfinite(v)) f |= 1;
        else if (v == 0.0) f |= (j < kk) ? 2 : 0;
        else {
            m = fmax(m, fabs(v));
            int fx;
            frexp(v, &fx);
            w = (unsigned int)ceil(ldexp(fabs(v), CEIL_BITS - fx)) | ((unsigned int)(fx + WORD_BIAS) << 20);
        }
        word[i] = w;
    }
#else
    for (long long j = lane; j < kk; j += ROW_THREADS) {
        double v = row[j];
        if (!isfinite(v)) f |= 1;
        else {
            if (v == 0.0) f |= 2;
            m = fmax(m, fabs(v));
        }
    }
#endif
    m = row_reduce(m, smax, MaxOp());
    f = row_reduce(f, sflag, OrOp());
    if (active && lane == 0) { amax[r] = m; flags[r] = (signed char)f; }
#if CEIL_BITS > 0
    auto ceiling = [](double v, int e) {
        return (isfinite(v) && v != 0.0) ? fmax(ceil(ldexp(fabs(v), e)), 1.0) : 0.0;
    };
    int fe;
    frexp(m, &fe);
    if (m == 0.0) fe = 0;
    int e = CEIL_BITS - fe;
    if (active && lane == 0) e_out[r] = e;
    long long acc = 0;
    const long long kp = active ? kpad : 0;
#if SCAN_VALS > 0
#pragma unroll
    for (int i = 0; i < SCAN_VALS; ++i) {
        const long long j = lane + (long long)i * ROW_THREADS;
        const unsigned int w = word[i];
        const int s = fe - ((int)(w >> 20) - WORD_BIAS);          // >= 0: |x| <= the maximum
        const unsigned int q = w & 0xFFFFFu;
        const unsigned int c = w == 0 ? 0u : (s > 20 ? 1u : (q + (1u << s) - 1u) >> s);
#ifdef WRITE_HAT
        if (j < kk) hat[r * kpad + j] = (signed char)c;
#endif
#if defined(SUM_SQUARES)
        acc += (long long)c * c;
#elif defined(SUM_CEILINGS)
        acc += (long long)c;
#endif
    }
#ifdef WRITE_HAT
    for (long long j = kk + lane; j < kp; j += ROW_THREADS) hat[r * kpad + j] = 0;    // the padding
#endif
#elif defined(HAT_HALVES)
    const long long half = k / 2;
    for (long long j = lane; j < kp; j += ROW_THREADS)
        hat[r * kpad + j] = (signed char)(int)(j < half ? ceiling(row[j], e) + ceiling(row[j + half], e) : 0.0);
#else
    for (long long j = lane; j < kp; j += ROW_THREADS) {
        double c = ceiling(j < k ? row[j] : 0.0, e);
#ifdef WRITE_HAT
        hat[r * kpad + j] = (signed char)(int)c;
#endif
#if defined(SUM_SQUARES)
        long long ci = (long long)c;
        acc += ci * ci;
#elif defined(SUM_CEILINGS)
        acc += (long long)c;
#endif
    }
#endif
#if defined(SUM_SQUARES) || defined(SUM_CEILINGS)
    acc = row_reduce(acc, ssum, SumOp());
    if (active && lane == 0) sumsq[r] = acc;
#endif
#endif
    (void)smax; (void)sflag; (void)ssum;
}
