// The sign rule of zero DFT parts (ozaki/fft/specials.py), term by term: part
// (row r, output k) is -0 exactly when it has a term and every term is -0.
//
// The same arithmetic as numpy_backend.zero_terms_negative: a term is an entry
// v[r, e] (position n = offset + e) times the sign t of cos or sin of
// 2 pi k n / N (times ``sign`` for sin), negated for some parts; a constant that
// is exactly zero (t = 0) makes no term; a term v t is -0 when v is a zero whose
// sign differs from t's (flipped when negated).  Integer work only: the angle
// index j = k n mod N steps by k per entry.  The scan stops at the first term
// that is not -0, so a row with a nonzero entry settles a part in a few steps
// (numpy_backend finds such witnesses first, as arrays).

__device__ __forceinline__ int cos_sign(long long j, long long N) {
    long long j4 = 4 * j;
    if (j4 < N || j4 > 3 * N) return 1;
    return (j4 == N || j4 == 3 * N) ? 0 : -1;
}

__device__ __forceinline__ int sin_sign(long long j, long long N) {
    if (j == 0 || 2 * j == N) return 0;
    return 2 * j < N ? 1 : -1;
}

struct Term {
    const double* v;        // entry e of row r at v[r * ld + e * stride] (doubles)
    long long entries, offset, ld, stride;
    int sine, negated;      // the constant part: sin (1) or cos (0)
};

// Whether every term of part (r, k) of ``t`` is -0; *present: whether it has one.
__device__ __forceinline__ bool all_minus_zero(const Term& t, long long r, long long k, long long N, int sign,
                                               bool* present) {
    // sin 2 pi k n / N is zero for every n when 2 k = 0 mod N: no term (the imaginary
    // parts of a real signal's bins 0 and N/2 scanned N entries for nothing)
    if (t.sine && (2 * k) % N == 0) return true;
    long long j = (k * t.offset) % N;
    const double* row = t.v + r * t.ld;
    for (long long e = 0; e < t.entries; ++e) {
        int c = t.sine ? sin_sign(j, N) * sign : cos_sign(j, N);
        if (c != 0) {
            *present = true;
            double x = row[e * t.stride];
            bool minus_zero = x == 0.0 && ((signbit(x) != 0) != (c < 0)) != (t.negated != 0);
            if (!minus_zero) return false;
        }
        j += k;
        if (j >= N) j -= N;
    }
    return true;
}

// A zero output part at ``at`` set to -0 or +0 by the rule (terms t0 and, with two, t1);
// nonzero entries (NaN included) are left as they are.
__device__ __forceinline__ void settle(double* at, const Term& t0, const Term& t1, int terms, long long r,
                                       long long k, long long N, int sign) {
    if (*at != 0.0) return;
    bool present = false;
    bool all = all_minus_zero(t0, r, k, N, sign, &present);
    if (all && terms == 2) all = all_minus_zero(t1, r, k, N, sign, &present);
    *at = all && present ? -0.0 : 0.0;
}

// Every zero entry of the output part (rows, bins; entry (r, k) at
// part[r * part_ld + k * part_stride]) outside the tiny rows settled by its ``terms``
// terms (t0, t1), in place; with ``second`` != 0, a second part at part + second (the
// same strides: a complex array's imaginary parts beside its real ones, second = 1)
// by its ``terms2`` (t2, t3) in the same pass, so the array is read once (a launch a
// part read it twice: 41 of fftn 1024^3's 1090 ms on the H100, run 6cbae98).  One
// thread per entry, blocks along a row (x) and over rows (y, grid-stride).
#define TERM_PARAMS(n) const double* v##n, long long entries##n, long long offset##n, long long ld##n, \
                       long long stride##n, int sine##n, int negated##n
#define TERM(n) {v##n, entries##n, offset##n, ld##n, stride##n, sine##n, negated##n}
extern "C" __global__ void zero_signs(
        double* __restrict__ part, long long rows, long long bins, long long part_ld, long long part_stride,
        long long second, const bool* __restrict__ tiny,
        TERM_PARAMS(0), TERM_PARAMS(1), int terms, TERM_PARAMS(2), TERM_PARAMS(3), int terms2,
        long long N, int sign) {
    const Term t0 = TERM(0), t1 = TERM(1), t2 = TERM(2), t3 = TERM(3);
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        if (tiny[r]) continue;
        for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < bins;
             k += (long long)gridDim.x * blockDim.x) {
            double* at = part + r * part_ld + k * part_stride;
            settle(at, t0, t1, terms, r, k, N, sign);
            if (second) settle(at + second, t2, t3, terms2, r, k, N, sign);
        }
    }
}
