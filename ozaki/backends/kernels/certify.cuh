// The per-entry test of certified mode: the device side of scheme.error_bounds and
// scheme.certified_entries, the same float64 operations in the same order, each
// rounded once (__dadd_rn/__dmul_rn are never contracted into an fma), so that the
// GPU certifies exactly the entries the CPU does: which entries are recomputed
// decides bits.  Written as plain functions so that tests can build them for the
// host (tests/backends/test_certify_cuh.py) and compare them with numpy's.
#pragma once

#include "rounding.cuh"              // Format<F>

// What the bound needs of a row of A (or a column of B): sum |x| <= S 2**-e (the
// integer-ceiling sum), the digits' error bound 2**beta, and whether the digits are
// exact (no error: beta at or below the least subnormal, or an all-zero row).
struct BoundSide {
    double S;
    long long e;
    long long beta;
    bool exact;
};

// ldexp at an exponent clipped to +-2200 (scheme.error_bounds' ``scaled``).
__device__ __forceinline__ double scaled(double x, long long exponent) {
    long long c = exponent < -2200 ? -2200 : (exponent > 2200 ? 2200 : exponent);
    return ldexp(x, (int)c);
}

// Delta >= |A B - C' 2**(beta_i + beta_j)| for the entry of row a and column b of a
// product of K terms (scheme.error_bounds):
//   (2**(beta_b - e_a) S_a + 2**(beta_a - e_b) S_b + K 2**(beta_a + beta_b)) (1 + 2**-48) + 2**-1071.
__device__ __forceinline__ double error_bound(BoundSide a, BoundSide b, double K) {
    double t1 = b.exact ? 0.0 : scaled(a.S, b.beta - a.e);
    double t2 = a.exact ? 0.0 : scaled(b.S, a.beta - b.e);
    double t3 = (a.exact || b.exact) ? 0.0 : scaled(K, a.beta + b.beta);
    return __dadd_rn(__dmul_rn(__dadd_rn(__dadd_rn(t1, t2), t3), 1.0 + 0x1p-48), 0x1p-1071);
}

// The smaller gap beside |C| = a (finite, >= 0) to its neighbours in the format F
// (scheme.gaps): the spacing below a power of two is half the one above; zero's is
// the least subnormal.
template <typename F>
__device__ __forceinline__ double gap(double a) {
    constexpr int PREC = Format<F>::PREC, LSB_MIN = Format<F>::LSB_MIN;
    if (a == 0.0) return ldexp(1.0, LSB_MIN);
    // a = mant 2**e, mant in [0.5, 1) (frexp's, from the bits: subnormals too)
    unsigned long long bits = (unsigned long long)__double_as_longlong(a);
    int biased = (int)(bits >> 52);
    unsigned long long fraction = bits & 0xFFFFFFFFFFFFFULL;
    int e = biased ? biased - 1022 : (64 - __clzll((long long)fraction)) - 1074;
    bool half = biased ? fraction == 0 : (fraction & (fraction - 1)) == 0;      // mant == 0.5
    double up = ldexp(1.0, e - PREC > LSB_MIN ? e - PREC : LSB_MIN);
    bool below = half && e - PREC - 1 >= LSB_MIN;
    return below ? 0.5 * up : up;
}

// Whether the entry c (widened exactly to double), with error bound delta, is proved
// faithful (scheme.certified_entries): 2 delta below the smaller gap beside it.  A
// non-finite c from finite inputs (overflow) is not.
template <typename F>
__device__ __forceinline__ bool faithful(double c, double delta) {
    double a = fabs(c);
    if (!isfinite(a)) return false;
    return __dmul_rn(2.0, delta) < gap<F>(a);
}

// Whether the entry c with rounding residual rho (the epilogue's x - RN(x) of the
// truncated product x, rounding.cuh) is proved correctly rounded, the exact product
// lying within delta of x (scheme.rounded_entries, exact mode by Ziv's strategy):
// (|rho| + delta)(1 + 2**-50) below half the smaller gap beside c, so that no value
// within delta of x crosses a rounding boundary of c.  A NaN rho (not formed), a
// non-finite c or a zero c is not (the bound leaves a zero's sign open).
template <typename F>
__device__ __forceinline__ bool correctly_rounded(double c, double rho, double delta) {
    double a = fabs(c);
    if (!isfinite(a) || a == 0.0) return false;
    return __dmul_rn(__dadd_rn(fabs(rho), delta), 1.0 + 0x1p-50) < __dmul_rn(0.5, gap<F>(a));
}
