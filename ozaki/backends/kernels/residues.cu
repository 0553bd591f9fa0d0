// Scaling and residue split in one pass: float64 rows -> int8 residues of every modulus.
//
// The same arithmetic as ozaki/backends/numpy_backend.py (split, digits,
// residues): the slice digit of |x| above 2**beta[row] (rounded to nearest
// when ``nearest``, else truncated), modulo 2**width when width > 0, as q * 2**s with q < 2**53; its residue (q mod p)(2**s mod p) mod p,
// negated for negative x, in the symmetric range [-floor(p/2), ceil(p/2) - 1].
//
// out has shape (nmod, rows, kpad), row-major; columns k..kpad-1 are zero so
// that the int8 GEMMs can run on a padded inner dimension.
// Each thread does four consecutive columns of one row and writes a char4 per
// modulus: one read of x, one write of every residue, nothing else.  The
// modular arithmetic runs on the FP64 pipe without conversion instructions
// (which run at a quarter rate on Hopper and were the bottleneck).

#define MAX_SHIFT 2304
// NMOD, the number of moduli, is defined at compile time.

#include "modular.cuh"

__device__ __forceinline__ void digit(double x, long long beta, int width, int nearest,
                                      bool &negative, unsigned long long &q, int &s) {
    long long bits = __double_as_longlong(x);
    negative = bits < 0;
    int biased = (int)((bits >> 52) & 0x7FF);
    unsigned long long mant = (unsigned long long)(bits & ((1LL << 52) - 1));
    long long e;
    if (biased == 0) { e = -1074; }
    else if (biased == 0x7FF) { mant = 0; e = 0; }      // NaN/inf: zero here, fixed up later
    else { mant |= (1ULL << 52); e = biased - 1075; }
    long long d = e - beta;
    long long right = d < 0 ? -d : 0;
    if (right > 63) right = 63;
    // nearest (accurate mode, width 0): half up on the magnitude, still < 2**53
    q = (nearest && right > 0) ? ((mant >> (right - 1)) + 1) >> 1 : mant >> right;
    long long sh = d > 0 ? d : 0;
    if (width > 0) {
        long long keep = width - sh;
        if (keep <= 0) q = 0;
        else if (keep < 53) q &= (1ULL << keep) - 1;
    }
    if (q == 0) sh = 0;
    s = (int)(sh < MAX_SHIFT ? sh : MAX_SHIFT - 1);
}

extern "C" __global__ void residues(const double* __restrict__ x, long long rows, long long k,
                                    long long kpad, const long long* __restrict__ beta, int width,
                                    int nearest,
                                    const double* __restrict__ moduli,
                                    const double* __restrict__ inv_moduli,
                                    const double* __restrict__ pow2,     // (NMOD, MAX_SHIFT)
                                    signed char* __restrict__ out) {
    long long quads = kpad / 4;
    long long total = rows * quads;
    long long plane = rows * kpad;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        long long row = t / quads;
        long long col = (t - row * quads) * 4;
        long long b = beta[row];
        bool neg[4];
        unsigned long long q[4];
        int s[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            double v = (col + j < k) ? x[row * k + col + j] : 0.0;
            digit(v, b, width, nearest, neg[j], q[j], s[j]);
        }
        // Digits below 2**77 (s <= 24: every digit of the fast and accurate
        // modes at the default counts) split exactly as hi 2**32 + lo with
        // hi < 2**45: then hi (2**32 mod p) + lo < 2**53 is one exact FMA, and a
        // single reduction per modulus remains.  Larger digits take two.
        double qd[4], hi[4], lo[4];
        bool split[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            split[j] = s[j] <= 24;
            unsigned long long h = q[j] >> (32 - (split[j] ? s[j] : 0));
            unsigned long long l = (q[j] << (split[j] ? s[j] : 0)) & 0xFFFFFFFFULL;
            hi[j] = neg[j] ? -(double)h : (double)h;
            lo[j] = neg[j] ? -(double)l : (double)l;
            qd[j] = neg[j] ? -(double)q[j] : (double)q[j];
        }
#pragma unroll 1
        for (int i = 0; i < NMOD; ++i) {       // not unrolled: keeps the registers few
            double p = moduli[i];
            double h = floor(0.5 * p);
            double invp = inv_moduli[i];
            const double* tab = pow2 + (long long)i * MAX_SHIFT;
            double c32 = tab[32];
            char r4[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                double r = split[j]
                    ? mod_symmetric(fma(hi[j], c32, lo[j]), p, invp, h)
                    // (x mod p)(2**s mod p) < 2**15 in magnitude: exact, then reduce again.
                    : mod_symmetric(mod_symmetric(qd[j], p, invp, h) * tab[s[j]], p, invp, h);
                r4[j] = (char)__double2loint(r + MAGIC);
            }
            *reinterpret_cast<char4*>(out + i * plane + row * kpad + col) =
                make_char4(r4[0], r4[1], r4[2], r4[3]);
        }
    }
}
