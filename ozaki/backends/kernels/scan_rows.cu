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
//   ROW_BITS  top[r], lsb[r]: every nonzero finite |x| < 2**top and a multiple of
//             2**lsb (its lowest set bit's exponent); 0, 0 for rows without one
//             (numpy_backend.row_bits: exact mode's plan, in the same read as the flags)
// Everything is an integer or a maximum: the result does not depend on the
// order of the reduction, so it matches numpy bit for bit.  A row is a block
// of 256 threads, or part of a warp when rows are short (ROW_THREADS 4..32).

#define THREADS 256
// Threads per row: 256, or for short rows a power of two from 4 to 32 (a warp holds
// 32 / ROW_THREADS rows; cupy_backend gives a thread about 8 entries: rows of 64 entries a
// warp each cost 314 warp instructions a row, the reductions' and the setup's, for the
// stack of 4096 x 64^2 on the H100, run 0b16e61); 1 (a thread a row) is the host build's
// (tests/backends/test_scan_rows_host.py), never launched.
#ifndef ROW_THREADS
#define ROW_THREADS 256
#endif
#define ROWS_PER_BLOCK (THREADS / ROW_THREADS)

// The reductions over one row's threads: warp shuffles when a row is a warp or part of one
// (lane ^ s, s < ROW_THREADS, stays in the row's aligned group of lanes; every lane of the
// warp takes part, idle rows too), else a shared-memory tree over the block (one row a block).
template <typename T, typename Op>
__device__ __forceinline__ T row_reduce(T v, T* scratch, Op op) {
#if ROW_THREADS == 1
    (void)scratch; (void)op;
    return v;
#elif ROW_THREADS <= 32
    static_assert((ROW_THREADS & (ROW_THREADS - 1)) == 0, "ROW_THREADS: a power of two");
    (void)scratch;
    for (int s = ROW_THREADS / 2; s > 0; s >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, s));
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
struct MinBits { __device__ long long operator()(long long a, long long b) const { return a < b ? a : b; } };
struct MaxBits { __device__ long long operator()(long long a, long long b) const { return a > b ? a : b; } };

#ifdef ROW_BITS
#define ROW_BITS_NONE (1LL << 30)
// |x| = m 2**e (m < 2**53, the implicit bit added for normals); m = 0 for zeros, NaN and inf
__device__ __forceinline__ long long bits_mantissa(double x, long long* e) {
    long long b = __double_as_longlong(x);
    long long biased = (b >> 52) & 0x7FF, frac = b & ((1LL << 52) - 1);
    *e = biased ? biased - 1075 : -1074;
    return biased == 0x7FF ? 0 : (biased ? (frac | (1LL << 52)) : frac);
}
#endif

extern "C" __global__ void scan_rows(const double* __restrict__ x, long long rows, long long k, long long kpad,
                                     double* __restrict__ amax, signed char* __restrict__ flags,
                                     long long* __restrict__ e_out, signed char* __restrict__ hat,
                                     long long* __restrict__ sumsq,
                                     long long* __restrict__ top_out, long long* __restrict__ lsb_out) {
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
#ifdef ROW_BITS
    long long low = ROW_BITS_NONE, high = -ROW_BITS_NONE;
#endif
    for (long long j = lane; j < kk; j += ROW_THREADS) {
        double v = row[j];
        if (!isfinite(v)) f |= 1;
        else {
            if (v == 0.0) f |= 2;
            m = fmax(m, fabs(v));
        }
#ifdef ROW_BITS
        long long e, mant = bits_mantissa(v, &e);
        if (mant) {
            low = min(low, e + __ffsll(mant) - 1);
            high = max(high, e + 64 - __clzll(mant));
        }
#endif
    }
    m = row_reduce(m, smax, MaxOp());
    f = row_reduce(f, sflag, OrOp());
    if (active && lane == 0) { amax[r] = m; flags[r] = (signed char)f; }
#ifdef ROW_BITS
    low = row_reduce(low, ssum, MinBits());
    high = row_reduce(high, ssum, MaxBits());
    if (active && lane == 0) {
        const bool none = low == ROW_BITS_NONE;
        top_out[r] = none ? 0 : high;
        lsb_out[r] = none ? 0 : low;
    }
#endif
#if CEIL_BITS > 0
    int fe;
    frexp(m, &fe);
    if (m == 0.0) fe = 0;
    int e = CEIL_BITS - fe;
    if (active && lane == 0) e_out[r] = e;
    // ceil(|v| 2**e) by two multiplications by powers of two instead of ldexp's routine a
    // value (the stack of 4096 x 64^2's scan ran 157 instructions an entry with it, H100,
    // run 0b16e61).  e lies in [CEIL_BITS - 1024, CEIL_BITS + 1074]: 2**e may not be a double,
    // its halves s1 = 2**(e/2), s2 = 2**(e - e/2) are.  The products are exact wherever
    // |v| 2**e >= 2**-1022 (the intermediate lies between |v| and |v| 2**e; nothing
    // overflows, |v| 2**e < 2**CEIL_BITS); below it they, like ldexp, round to at most
    // 2**-1022, whose ceiling is 0 or 1, which the max with 1 makes 1 either way.
    const int e1 = e / 2;
    const double s1 = __longlong_as_double((long long)(1023 + e1) << 52);
    const double s2 = __longlong_as_double((long long)(1023 + e - e1) << 52);
    auto ceiling = [s1, s2](double v) {
        return (isfinite(v) && v != 0.0) ? fmax(ceil(fabs(v) * s1 * s2), 1.0) : 0.0;
    };
    long long acc = 0;
    const long long kp = active ? kpad : 0;
#ifdef HAT_HALVES
    const long long half = k / 2;
    for (long long j = lane; j < kp; j += ROW_THREADS)
        hat[r * kpad + j] = (signed char)(int)(j < half ? ceiling(row[j]) + ceiling(row[j + half]) : 0.0);
#else
    for (long long j = lane; j < kp; j += ROW_THREADS) {
        double c = ceiling(j < k ? row[j] : 0.0);
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
