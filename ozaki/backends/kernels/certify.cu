// Certified mode's per-entry test in one pass over the result (scheme._certify;
// certify.cuh holds the test): a thread per entry forms the error bound Delta from
// its row's and column's factors, keeps the entry when every part is proved
// faithful or its row or column holds a NaN/inf (IEEE decides it), and otherwise
// marks it in ``bad`` and counts it for its matrix.  The same test in CuPy
// elementwise operations took ~80 ms of a certified 16384^2 product on the H200
// (bound 53, test 29: a dozen temporaries of m n float64; run fa469aa).
//
// Compile-time: OUT_T, the parts' type (double or float); RESIDUAL: the test is
// exact mode's (correctly_rounded, on the epilogue's rounding residuals rho0, rho1)
// instead of certified's (faithful).

#include "certify.cuh"

#ifndef OUT_T
#define OUT_T double
#endif

// float -> double from the bits: subnormals kept (the device may flush float
// arithmetic's), as cupy_backend.widen.
__device__ __forceinline__ double widened(double x) { return x; }
__device__ __forceinline__ double widened(float x) {
    int b = __float_as_int(x);
    int e = (b >> 23) & 0xFF;
    if (e != 0) return (double)x;                  // normal, inf, NaN: exact conversion
    double v = ldexp((double)(b & 0x7FFFFF), -149);
    return b < 0 ? -v : v;
}

extern "C" __global__ void uncertified(const OUT_T* __restrict__ c0, const OUT_T* __restrict__ c1, int parts,
                                       long long rows, long long cols, long long count,
                                       const double* __restrict__ S_a, const long long* __restrict__ e_a,
                                       const long long* __restrict__ beta_a, const bool* __restrict__ exact_a,
                                       const bool* __restrict__ ieee_a,
                                       const double* __restrict__ S_b, const long long* __restrict__ e_b,
                                       const long long* __restrict__ beta_b, const bool* __restrict__ exact_b,
                                       const bool* __restrict__ ieee_b,
                                       double K, bool* __restrict__ bad, int* __restrict__ failing,
                                       const double* __restrict__ rho0, const double* __restrict__ rho1) {
    // Entry v of the (batch, rows, cols) stack: matrix g, row g rows + i of the
    // factors of A, column g cols + j of those of B.
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < count;
         v += (long long)gridDim.x * blockDim.x) {
        long long per = rows * cols;
        long long g = v / per, rest = v - g * per;
        long long i = g * rows + rest / cols, j = g * cols + rest % cols;
        bool fail = false;
        if (!(ieee_a[i] || ieee_b[j])) {
            BoundSide a = {S_a[i], e_a[i], beta_a[i], exact_a[i]};
            BoundSide b = {S_b[j], e_b[j], beta_b[j], exact_b[j]};
            double delta = error_bound(a, b, K);
#ifdef RESIDUAL
            fail = !correctly_rounded<OUT_T>(widened(c0[v]), rho0[v], delta)
                || (parts == 2 && !correctly_rounded<OUT_T>(widened(c1[v]), rho1[v], delta));
#else
            fail = !faithful<OUT_T>(widened(c0[v]), delta) || (parts == 2 && !faithful<OUT_T>(widened(c1[v]), delta));
#endif
        }
        bad[v] = fail;
        if (fail) atomicAdd(failing + g, 1);
    }
}
