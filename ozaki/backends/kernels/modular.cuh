// Modular arithmetic on the FP64 pipe, shared by residues.cu and epilogue.cu.
// Conversion instructions run at a quarter rate on Hopper; these avoid them.
#pragma once

// x + MAGIC - MAGIC rounds |x| < 2**51 to the nearest integer on the FP64 pipe
// (no conversion instruction), and the low word of x + MAGIC is that integer.
#define MAGIC 6755399441055744.0

// The residue of the integer x (|x| < 2**53, exact in float64) modulo p, in the
// symmetric range [-h, p - 1 - h], h = p / 2.  The quotient is rounded to
// nearest, so x - t p lands within one p of the range; one step each way fixes it.
__device__ __forceinline__ double mod_symmetric(double x, double p, double invp, double h) {
    double t = fma(x, invp, MAGIC) - MAGIC;
    double r = fma(-t, p, x);
    r = r < -h ? r + p : r;
    r = r > p - 1.0 - h ? r - p : r;
    return r;
}

// An unsigned 32-bit integer as a double, exactly, on the FP64 pipe: the bits
// 2**52 + v, less 2**52.
__device__ __forceinline__ double u32_to_double(unsigned int v) {
    return __hiloint2double(0x43300000, (int)v) - 4503599627370496.0;
}
