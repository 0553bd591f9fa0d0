// Epilogue in one pass (the unfused path; fused.cu does it on chip): reduce the GEMM products
// (int32/int64, or their int8 residues from residue_gemm.cu) modulo p, CRT each
// slice pair into exact 32-bit limbs, add the pairs into a Kulisch accumulator
// at their shifts, round once to OUT_T at 2**(beta_a[i] + beta_b[j]).
// The outputs (and residuals) lie out_stride apart a row and out_step a column: 2 for a
// complex result's parts written in place (out1 = out0 + 1), no copy into the complex array.
// Complex products (COMPLEX): each pair brings the three Karatsuba products
// P1 = Ar Br, P2 = Ai Bi, P3 = (Ar + Ai)(Br + Bi), and the kernel forms
// Re = P1 - P2 and Im = P3 - P1 - P2 itself (exact in float64), reducing and
// rounding both: the products are read once, no int64 copies.
//
// The same steps as ozaki/crt/reconstruct.py (reconstruct) and
// ozaki/crt/kulisch.py (normalize, round_to).  Compile-time sizes:
//   PROD_T  the element type of the products (signed char: residues; int or long long)
//   NMOD    the number of moduli; LP limbs of one CRT value, LACC of the accumulator
//   SINGLE_PAIR  defined when there is one slice pair (fast/accurate modes)
//   COMPLEX      defined for complex products (three inputs, two outputs a pair)
//   OUT_T        the output type, double (default) or float: the format rounded to
//   RESIDUAL     defined: also each output's rounding residual x - RN(x), as double,
//                into rho0 / rho1 (rounding.cuh; exact mode's test, Ziv's strategy)
//   STACKED      defined: the rows hold a stack of matrices of matrix_rows rows each, one
//                after another, and beta_b the stack's columns, cols a matrix: row r's
//                columns scale by beta_b[(r / matrix_rows) cols + col] (a stack of small
//                products in one launch, not one a matrix)
//   INTERLEAVED  (with STACKED, VEC 1) the stack's INTERLEAVED matrices are the column classes
//                of one output: column c of matrix g is its column c INTERLEAVED + g, row r of
//                every matrix its row r (scheme._quarter_product's four products of a DFT:
//                written where they belong, no transposing copy); consecutive threads take
//                consecutive columns of one matrix, so the reads stay together
//   VEC          adjacent outputs of a row a thread (1, the default; 2 or 4 with
//                SINGLE_PAIR): one aligned load of VEC products a stack and modulus,
//                and each modulus' constants and 64-bit addresses shared by the VEC
//                outputs.  One output a thread is issue-bound (728 SASS instructions
//                an output at 14 moduli, of them 222 integer address operations and
//                96 constant loads: 7.75 ms at n = 16384 against 3.6 at the copy
//                roof, run 54dc438).  The host picks VEC where cols, the strides and
//                the base pointers are multiples of it (cupy_backend._epilogue_vec).
//   CRT_MMA      defined: the CRT sums on the tensor cores (crt_mma.cuh; cupy_backend: NEW_KERNELS
//                epilogue_mma): one slice pair of int8 residues (the residue GEMM's), real or
//                complex, up to 32 moduli, VEC 1; a warp lifts 32 outputs of a row at a time:
//                cols a multiple of 32, the strides of 4 and the bases aligned to 4 bytes (the
//                host's choice: a lane's four outputs are one aligned load).
//                Needs the CRT digits' tables (constant_tables(m, crt=True, digits=True)).
// and the constant tables MOD_P, MOD_INV, CRT_C (NMOD x LP limbs of c_i),
// CRT_P (LP limbs of P) and CRT_INV_P from cupy_backend._constant_tables.

#ifndef PROD_T
#define PROD_T int
#endif

#include "kulisch.cuh"
#include "crt_mma.cuh"

#ifdef COMPLEX
#define NIN 3
#define NOUT 2
#else
#define NIN 1
#define NOUT 1
#endif

#ifndef VEC
#define VEC 1
#endif
// int8 residues (PROD_T signed char): BYTE_CONVERT 1 converts them by I2F after Karatsuba's
// differences in integers (0: to_double's exact float64 trick, as int32/int64 products);
// BYTE_REDUCE 0 skips reduce_mod of a complex product's differences (cupy_backend.epilogue:
// OZAKI_EPILOGUE_BYTES="convert,reduce" sets both, for bench/device_run.sh's comparison).
#ifndef BYTE_CONVERT
#define BYTE_CONVERT 1
#endif
#ifndef BYTE_REDUCE
#define BYTE_REDUCE 1
#endif
#if VEC != 1 && !defined(SINGLE_PAIR)
#error "VEC > 1 needs SINGLE_PAIR (one Kulisch accumulator a output in registers)"
#endif
#if defined(INTERLEAVED) && (VEC != 1 || !defined(STACKED))
#error "INTERLEAVED needs STACKED and VEC 1"
#endif
#if defined(CRT_MMA) && (!defined(SINGLE_PAIR) || VEC != 1 || !defined(CRT_ND) || NMOD > CRT_KM)
#error "CRT_MMA takes one slice pair of int8 residues (VEC 1) and the CRT digits' tables"
#endif

// VEC adjacent products, loaded at once (their address a multiple of the pack's size).
template <typename T, int N> struct alignas(sizeof(T) * N) Pack { T v[N]; };

// EPILOGUE_BLOCKS: blocks of 128 threads an SM that ptxas must fit (4: 128 registers a
// thread; cupy_backend sets 4 for one slice pair of int8 residues, OZAKI_EPILOGUE_BLOCKS
// another), and the products loaded by __ldg; unset, ptxas's own choice.  The loads' lead
// to their use is what it changes: complex, 25 moduli, one pair, interleaved, ptxas 13.0,
// before the __ldg loads: 79 registers and 16 instructions
// by default, 96 and 118 at 5 blocks, 116 and 247 (every modulus' loads before the
// arithmetic) at 4; fftn 1024^3's epilogue took 371 ms without, 210 with 4 (H100, run
// 3d22402 with the quarter turns).  With __ldg: 124 and 245 at 4.
#ifdef EPILOGUE_BLOCKS
#define EPILOGUE_BOUNDS __launch_bounds__(128, EPILOGUE_BLOCKS)
#else
#define EPILOGUE_BOUNDS
#endif

extern "C" __global__ void EPILOGUE_BOUNDS epilogue(const PROD_T* p0, const PROD_T* p1, const PROD_T* p2,   // one pair's
                                    const PROD_T* const* __restrict__ prods,  // (npairs * NIN) pointers
                                    int npairs, long long rows, long long cols,
                                    long long mod_stride, long long row_stride,
                                    const int* __restrict__ shifts,         // (npairs,) in limbs
                                    const long long* __restrict__ beta_a,
                                    const long long* __restrict__ beta_b,
                                    OUT_T* __restrict__ out0, OUT_T* __restrict__ out1,
                                    long long out_stride, long long out_step,
                                    double* __restrict__ rho0, double* __restrict__ rho1,
                                    long long matrix_rows) {
#ifdef CRT_MMA
    // A warp lifts 32 outputs of a row at a time, all lanes together (crt_digit_sums' warp
    // shuffles through shared memory): the columns c0 .. c0 + 31 of rows r, r + R, ... (cols %
    // 32 == 0, and the grid R x cols / 32 warps: the host's choice, so that no
    // division is left in the loop); lane u rounds and writes column c0 + u.
    __shared__ int scratch_all[128 / 32 * 32 * DROW];             // blocks of 128 threads (cupy_backend)
    const int lane = threadIdx.x & 31;
    int* scratch = scratch_all + (threadIdx.x >> 5) * 32 * DROW;
    DigitFragments bfrag;
    load_crt_digits(bfrag, lane);
    const long long chunks = cols / 32;
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long R = ((long long)gridDim.x * blockDim.x >> 5) / chunks;
    const long long c0 = 32 * (w % chunks), col = c0 + lane;
    for (long long r = w / chunks; r < rows; r += R) {
        static_assert(sizeof(PROD_T) == 1, "CRT_MMA reads int8 residues");
        const long long idx = r * row_stride + c0 + 4 * (lane >> 2);          // the lane's four outputs to gather
        auto words = [&](const PROD_T* p) {                                     // one stack's residue words
            return [=](int i) { return __ldg(reinterpret_cast<const unsigned*>(p + idx + i * mod_stride)); };
        };
        long long acc[NOUT][LACC];
#pragma unroll
        for (int o = 0; o < NOUT; ++o)
#pragma unroll
            for (int l = 0; l < LACC; ++l) acc[o][l] = 0;
        double S[CRT_LD];
#ifdef COMPLEX
        // The digit sums are linear in the residues: Re's are P1's less P2's, Im's P3's less both
        // (|D| < 3 * 32 * 2**14 < 2**21), the same S as the Karatsuba differences' (unreduced).
        ResidueFragments x;
        DigitSums d1 = {}, d2 = {};
        residue_fragments(words(p0), lane, x);
        digit_products(x, bfrag, d1);
        residue_fragments(words(p1), lane, x);
        digit_products(x, bfrag, d2);
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int nt = 0; nt < DIGIT_TILES; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int a1 = d1[t][nt][e], a2 = d2[t][nt][e];
                    d2[t][nt][e] = a1 - a2;                   // Re
                    d1[t][nt][e] = -(a1 + a2);                // P3's products start from it: Im
                }
        fold_digit_sums(d2, lane, scratch, S);
        crt_lift<CRT_LD>(S, acc[0], 0);
        residue_fragments(words(p2), lane, x);
        digit_products(x, bfrag, d1);
        fold_digit_sums(d1, lane, scratch, S);
        crt_lift<CRT_LD>(S, acc[1], 0);
#else
        crt_digit_sums(words(p0), lane, bfrag, scratch, S);
        crt_lift<CRT_LD>(S, acc[0], 0);
#endif
#ifdef STACKED
        const long long g = (unsigned)r / (unsigned)matrix_rows;          // (rows < 2**31: the host's)
        const long long e = beta_a[r] + beta_b[g * cols + col];
#else
        const long long e = beta_a[r] + beta_b[col];
#endif
#ifdef INTERLEAVED
        // matrix g's row r - g matrix_rows, column col: the output's row, column col INTERLEAVED + g
        const long long out_at = (r - g * matrix_rows) * out_stride + (col * INTERLEAVED + g) * out_step;
#else
        const long long out_at = r * out_stride + col * out_step;
#endif
        store_rounded<LACC>(acc[0], e, out0 + out_at, rho0 + out_at);
#ifdef COMPLEX
        store_rounded<LACC>(acc[1], e, out1 + out_at, rho1 + out_at);
#endif
    }
#else
    // Every product array has shape (NMOD, rows, cols) with the same strides (in
    // elements; the last axis contiguous): they come from one GEMM routine.
    const long long groups = cols / VEC;                  // cols % VEC == 0 (the host's choice)
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < rows * groups;
         v += (long long)gridDim.x * blockDim.x) {
#ifdef INTERLEAVED
        // consecutive threads take consecutive columns of one matrix (its products' bytes
        // read together; the outputs land INTERLEAVED apart): with the matrices' outputs of
        // one column together instead, the reads of a warp spread over four rows and the
        // epilogue of a batch of 4096 x 1024 points took 0.544 ms against 0.335 stacked
        // (H200, run 4edd3fb)
        const long long r = v / (groups * INTERLEAVED);          // the output's row
        const long long gc = v - r * (groups * INTERLEAVED);
        const long long g = gc / groups;                         // the matrix
        long long row = g * matrix_rows + r;                     // matrix g's row r
        long long col = gc - g * groups;
        const long long c = col * INTERLEAVED + g;               // the output's column
#else
        long long row = v / groups;
        long long col = (v - row * groups) * VEC;
#endif
        long long idx = row * row_stride + col;
        long long acc[VEC][NOUT][LACC];
#pragma unroll
        for (int u = 0; u < VEC; ++u)
#pragma unroll
            for (int o = 0; o < NOUT; ++o)
#pragma unroll
                for (int l = 0; l < LACC; ++l) acc[u][o][l] = 0;
        // With SINGLE_PAIR this loop keeps its run-time bound (always 1): ptxas then issues the
        // moduli's loads far ahead of their use (complex, 25 moduli, not interleaved: 144
        // instructions from a load to its first use on average, 96 registers; 248 with
        // EPILOGUE_BLOCKS 4 and its __ldg loads).  A compile-time bound cuts that lead to
        // about 20, with or without EPILOGUE_BLOCKS (ptxas 13.0, bench.sass), and the epilogue
        // ran 19% slower (H200, run 98cb4f1, with fewer instructions: a batch of 4096 x 1024,
        // 0.335 -> 0.399 ms).
        for (int pair = 0; pair < npairs; ++pair) {
            // S = sum_i r_i c_i in float64 limbs.  r_i = x - p rint(x / p) is some
            // residue of the product x with |r_i| <= 1.5 p (|x| < 2**53: the
            // rounded quotient is off by at most one), or a real product's int8
            // residue as it is (|r_i| <= 128), so |r_i c_il| < 2**41 and the at
            // most 49 terms of a limb stay below 2**47: exact.
            double S[VEC][NOUT][LP];
#pragma unroll
            for (int u = 0; u < VEC; ++u)
#pragma unroll
                for (int o = 0; o < NOUT; ++o)
#pragma unroll
                    for (int l = 0; l < LP; ++l) S[u][o][l] = 0.0;
            const PROD_T* p[NIN];
#ifdef SINGLE_PAIR
            const PROD_T* one[3] = {p0, p1, p2};          // parameters: no table to copy to the device
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = one[h] + idx;
#else
#pragma unroll
            for (int h = 0; h < NIN; ++h) p[h] = prods[pair * NIN + h] + idx;
#endif
#pragma unroll
            for (int i = 0; i < NMOD; ++i) {
                Pack<PROD_T, VEC> y[NIN];
#pragma unroll
                for (int h = 0; h < NIN; ++h) {
#ifdef EPILOGUE_BLOCKS
                    // under the launch bounds: __ldg, for int8 residues a sign-extending byte
                    // load, no PRMT (complex, 25 moduli, 4 blocks: 1,944 -> 1,864 SASS
                    // instructions an output, the loads' lead kept; without the bounds it cuts
                    // the lead 144 -> 33 with BYTE_CONVERT 1: ptxas 13.0)
                    if constexpr (VEC == 1)
                        y[h].v[0] = __ldg(p[h] + i * mod_stride);
                    else
#endif
                        y[h] = *reinterpret_cast<const Pack<PROD_T, VEC>*>(p[h] + i * mod_stride);
                }
#pragma unroll
                for (int u = 0; u < VEC; ++u) {
                    double x[NOUT];
                    if constexpr (sizeof(PROD_T) == 1 && BYTE_CONVERT) {
                        // int8 residues: Karatsuba's differences in integers, converted by I2F
                        // (one issue slot; to_double's three: 2,248 -> SASS instructions a complex
                        // output at 25 moduli, ptxas 13.0)
                        const int p1 = y[0].v[u], p2 = y[1].v[u];
#ifdef COMPLEX
                        x[0] = (double)(p1 - p2);
                        x[1] = (double)(y[2].v[u] - p1 - p2);
#else
                        x[0] = (double)p1;
#endif
                    } else {
#ifdef COMPLEX
                        // |P| < 2**51 (k 2**14 with k below 2**37): the differences are exact.
                        double p1 = to_double(y[0].v[u]), p2 = to_double(y[1].v[u]);
                        x[0] = p1 - p2;
                        x[1] = to_double(y[2].v[u]) - p1 - p2;
#else
                        x[0] = to_double(y[0].v[u]);
#endif
                    }
#pragma unroll
                    for (int o = 0; o < NOUT; ++o)   // int8 residues of a real product are within
                        // crt_add's range as they are, and so are their Karatsuba differences
                        // (|x| <= 384) where BYTE_REDUCE is 0.  (That made fftn 256^3's complex
                        // epilogue 3.5 -> 5.3 ms on the H200 with to_double's conversions, runs
                        // 7a7d6fa, bdda360: ptxas then scheduled the byte loads with fewer registers.)
                        crt_add(S[u][o], (sizeof(PROD_T) == 1 && (NIN == 1 || !BYTE_REDUCE)) ? x[o] : reduce_mod(x[o], i),
                                i);
                }
            }
#ifdef SINGLE_PAIR
            const int sh = 0;                            // keeps acc in registers
#else
            int sh = shifts[pair];
#endif
#pragma unroll
            for (int u = 0; u < VEC; ++u)
#pragma unroll
                for (int o = 0; o < NOUT; ++o) crt_lift(S[u][o], acc[u][o], sh);
        }
        long long ea = beta_a[row];
#ifdef STACKED
        const long long* bb = beta_b + (row / matrix_rows) * cols;
#else
        const long long* bb = beta_b;
#endif
#pragma unroll
        for (int u = 0; u < VEC; ++u) {
            long long e = ea + bb[col + u];
#ifdef INTERLEAVED
            long long at = r * out_stride + c * out_step;
#else
            long long at = row * out_stride + (col + u) * out_step;
#endif
            // (written out, not kulisch.cuh's store_rounded: the same arithmetic, but ptxas then
            // schedules these builds differently, and their speeds were measured as they are)
#ifdef RESIDUAL
            normalize(acc[u][0], LACC);
            out0[at] = round_to<LACC, OUT_T, true>(acc[u][0], e, rho0 + at);
#else
            out0[at] = rounded<LACC>(acc[u][0], e);
#endif
#ifdef COMPLEX
#ifdef RESIDUAL
            normalize(acc[u][1], LACC);
            out1[at] = round_to<LACC, OUT_T, true>(acc[u][1], e, rho1 + at);
#else
            out1[at] = rounded<LACC>(acc[u][1], e);
#endif
#endif
        }
    }
#endif
}
