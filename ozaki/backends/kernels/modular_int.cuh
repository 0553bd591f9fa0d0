// Modular arithmetic on the integer pipes, for the residue GEMM's INTEGER_MOD epilogue
// (residue_gemm.cu): Hopper converts int32 <-> float64 at 16 a clock an SM, which modular.cuh's
// FP64-pipe arithmetic would need around every int32 accumulator.
#pragma once

// The residue of an int32 x with |x| <= 2**31 - 2**14 modulo p (2 <= p <= 256) in the same
// symmetric range, on the integer pipes (the residue GEMM's INTEGER_MOD epilogue), given
// negp = -p, m = floor(2**32 / p) and c = ceil(2**31 / p) p + h.  u = x + c lies in
// (0, 2**32) and u = x + h (mod p); q = umulhi(u, m) is floor(u / p) or one less (u m / 2**32
// lies in (u / p - 1, u / p]), so r = u - q p is in [0, 2 p), and r - h, less p where
// r >= p, is the residue.  (-p comes negated from the table: given p, ptxas negated each
// quotient instead, one more instruction an accumulator.)
__device__ __forceinline__ int mod_symmetric_int(int x, int negp, unsigned m, unsigned c) {
    unsigned u = (unsigned)x + c;
    int r = (int)(u + __umulhi(u, m) * (unsigned)negp);
    int p = -negp;
    return r - (p >> 1) - (r >= p ? p : 0);
}
