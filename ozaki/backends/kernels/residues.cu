// Scaling and residue split in one pass: float64 rows -> int8 residues of every modulus.
//
// The same arithmetic as ozaki/backends/numpy_backend.py (split, digits,
// residues): the slice digit of |x| above 2**beta[row] (rounded to nearest
// when ``nearest``, else truncated), modulo 2**width when width > 0, as
// q * 2**s with q < 2**53; its residue modulo p, negated for negative x, in the
// symmetric range [-floor(p/2), ceil(p/2) - 1].
//
// x holds ``rows`` rows of k entries ``es`` doubles apart (1, or 2 for a complex operand's
// parts read in place from its interleaved (Re, Im) pairs: cupy_backend._residue_rows), row r
// at x + r * ld: ``ld`` is x.strides[0] / 8, any signed value, not only >= k: 2 k for a
// complex operand's parts (the halves of its [Re | Im] rows, read in place), negative
// for reversed rows (x[::-1]; x points at the first row read), zero for a broadcast
// row; k for a single row.  Rows may overlap: they are only read.  out has shape
// (NMOD, rows, kpad), row-major (PARTS 2: three such stacks, see PARTS); columns
// k..kpad-1 are zero so that the int8 GEMMs can run on a padded inner dimension.  Each
// thread does eight consecutive columns of one row (PARTS 2: four of each part) and writes
// their eight bytes per modulus (in two four-byte halves on the five-piece path): one read
// of x, one write of every residue (PARTS 2 and five pieces: the real half's bytes read
// back by the thread that wrote them).
//
// Compile-time: NMOD and the constant tables MOD_P, MOD_INV and MOD_ROW (p, 1/p,
// 2**(26 j) mod p for j = 1..4) from cupy_backend._constant_tables; the modular
// arithmetic runs on the FP64 pipe without conversion instructions.

#define MAX_SHIFT 2304
#define PER_THREAD 8
// WIDE_DIGITS (cupy_backend._wide_digits: from 21 moduli, or a CRT bound wide for k,
// or slices wider than 2**77): digits up to 2**129 by five pieces instead of the
// two-step path.  Without it the kernel keeps the three-piece path's 72 registers (PARTS 2:
// 80; the wide build: 80, under its launch bounds below).
#ifndef WIDE_DIGITS
#define WIDE_DIGITS 0
#endif

// MODULI_UNROLL (cupy_backend._residues_kernel): the three-piece loop over the moduli
// unrolled that many at a time (constants at a run-time index below NMOD).  Fully
// unrolled, ptxas (CUDA 13.0) keeps 72 registers from 16 moduli on but 116-160 at 11-15
// (it interleaves the moduli), where one block of 256 threads an SM fits: the residue
// pass at n = 16384 took 8.04 ms at 14 moduli against 4.73 at 16 (runs 5e6f825, df12626).
#ifndef MODULI_UNROLL
#define MODULI_UNROLL NMOD
#endif

// PARTS (cupy_backend.residues_of_parts): 2 for a complex operand's real and imaginary
// rows read together (x and x_im, rows the same ld apart): a thread does COLS = 4 columns
// of both and writes the residues of each and of their sums (Karatsuba's Ar + Ai, as
// add_residues) into three stacks (NMOD, rows, kpad) one after another: one pass, where
// add_residues read both stacks again after two residue launches (60 of fftn 1024^3's
// 1090 ms on the H100, run 6cbae98).
#ifndef PARTS
#define PARTS 1
#endif
#define COLS (PER_THREAD / PARTS)
// QUARTERS 1 (with PARTS 2; cupy_backend.residues_of_parts' ``quarter``): the radix-4
// butterflies of the residues (butterfly4 below) formed as they are made, for
// scheme._quarter_product: a thread does one column j < q = kpad / 4 of a row, its eight
// digits the real and imaginary parts at j, q + j, 2 q + j and 3 q + j, and writes z_s's
// three residues (Re, Im, sum) at row s rows + row, column j of the three stacks: the
// residues are written once, not written, read and written again by butterfly4.
#ifndef QUARTERS
#define QUARTERS 0
#endif
#if QUARTERS && PARTS != 2
#error "QUARTERS needs PARTS 2"
#endif

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

// A digit q 2**s (q < 2**53) as pieces v_j of 26 bits, x = sum_j v_j 2**(26 j),
// signed alike; NP pieces hold digits below 2**(26 NP).
// Three pieces (s <= 24): from the low 64 bits of q 2**s and q's top, fixed shifts;
// the general shifts of more pieces cost the three-piece path registers (82 -> 174 at
// 49 moduli).
template <int NP>
__device__ __forceinline__ void pieces(unsigned long long q, int s, bool negative, double (&v)[NP]) {
    const double sign = negative ? -1.0 : 1.0;
    if constexpr (NP == 3) {
        unsigned long long w = q << s;                               // the low 64 bits suffice for v1, v0
        v[2] = sign * u32_to_double((unsigned int)(q >> (52 - s)));
        v[1] = sign * u32_to_double((unsigned int)((w >> 26) & 0x3FFFFFFULL));
        v[0] = sign * u32_to_double((unsigned int)(w & 0x3FFFFFFULL));
    } else {
#pragma unroll
        for (int j = 0; j < NP; ++j) {
            int sh = 26 * j - s;                   // bit 26 j of x is bit sh of q
            unsigned long long t = sh >= 0 ? (sh < 64 ? q >> sh : 0ULL) : (-sh < 64 ? q << -sh : 0ULL);
            v[j] = sign * u32_to_double((unsigned int)(t & 0x3FFFFFFULL));
        }
    }
}

// The residue of x = sum_j v_j 2**(26 j) modulo a modulus p whose constants c are
// p, 1/p and 2**(26 j) mod p for j = 1..NP-1 (a row of MOD_ROW).  |x mod-folded| =
// |sum_j v_j c_j| < 2**26 (1 + 4 * 255) < 2**36 for NP <= 5, so x / p < 2**29:
// the float64 error of x * (1/p) is below 2**-24, while x / p is at least 1/(2p)
// >= 2**-9 from a half-integer (p odd) or exactly one (p = 256); the rounded
// quotient is exact and the remainder lands in [-p/2, p/2] with no fix-up; only
// p = 256 can give +128, whose int8 byte (the caller's low byte of r + MAGIC) is
// that of -128, the symmetric residue: no test at run time (it cost the five-piece
// loop, whose constants are not compile-time, two compares and a select a digit).
template <int NP>
__device__ __forceinline__ double residue_of_pieces(const double (&v)[NP], const double* c) {
    double x = v[0];
#pragma unroll
    for (int j = 1; j < NP; ++j) x = fma(v[j], c[1 + j], x);
    double t = fma(x, c[1], MAGIC) - MAGIC;
    return fma(-t, c[0], x);
}

// v mod p in the symmetric range for |v| <= 2048 (a butterfly's sums of residues):
// v - p round(v / p) with the quotient as (v M + 2**19) >> 20, M = round(2**20 / p).  Exact:
// its error, below 2048 / 2**21, is less than the 1 / (2 p) by which v / p misses a
// half-integer for odd p, and p = 256 gives floor((v + 128) / 256): numpy's symmetric range.
__device__ __forceinline__ signed char near_residue(int v, int p, int M) {
    return (signed char)(v - p * ((v * M + (1 << 19)) >> 20));
}

// The radix-4 butterflies of one column's residues mod p_i (numpy_backend.butterfly4):
// a[r], b[r] the real and imaginary parts' residues of x_(q r + j); z[h][s] the residues of
// Re z_s, Im z_s and their sum, z_s = sum_r (sign i)**(r s) x_(q r + j).  |z| <= 4 * 128.
__device__ __forceinline__ void butterfly(const int (&a)[4], const int (&b)[4], int sign, int i,
                                          signed char (&z)[3][4]) {
    const int p = (int)MOD_P[i], M = (int)rint(0x1p20 * MOD_INV[i]);
    const int ur = a[0] + a[2], ui = b[0] + b[2], vr = a[1] + a[3], vi = b[1] + b[3];
    const int dr = a[0] - a[2], di = b[0] - b[2];
    const int er = sign * (a[1] - a[3]), ei = sign * (b[1] - b[3]);
    // z1 = d + (sign i) e, z3 = d - (sign i) e
    const int zr[4] = {ur + vr, dr - ei, ur - vr, dr + ei};
    const int zi[4] = {ui + vi, di + er, ui - vi, di - er};
#pragma unroll
    for (int t = 0; t < 4; ++t) {
        z[0][t] = near_residue(zr[t], p, M);
        z[1][t] = near_residue(zi[t], p, M);
        z[2][t] = near_residue(zr[t] + zi[t], p, M);
    }
}

template <int CH> struct Bytes;
template <> struct Bytes<8> { typedef uint2 type; };
template <> struct Bytes<4> { typedef unsigned int type; };

// (x + y) mod p in the symmetric range, x and y in it (add_residues' and PARTS' sums).
__device__ __forceinline__ signed char add_mod(int a, int b, int p, int h) {
    int v = a + b;
    return (signed char)(v > p - 1 - h ? v - p : (v < -h ? v + p : v));
}

// Stores the CH residue bytes of a thread's digits J0 .. J0 + CH - 1 for modulus i, dst
// the thread's first column in plane 0.  PARTS 1: the digits are columns, at
// dst + i plane + J0.  PARTS 2: digits 0 .. COLS - 1 are the real part's columns and
// COLS .. 2 COLS - 1 the imaginary part's, into the first and the second stack (NMOD
// planes apart), and their sums into the third: from these bytes when they hold both
// parts (CH = 8), else (CH = 4, the five-piece path) the imaginary half's with the real
// half's bytes read back (this thread's own store, just before).
template <int CH, int J0>
__device__ __forceinline__ void put(signed char* dst, long long plane, int i, const signed char (&c)[CH],
                                    int sign) {
#if QUARTERS
    // digits 0..3: the real part's quarters, 4..7 the imaginary part's; z_s at dst + s rows q
    // (rows q = plane / 4) of each stack.  Five pieces (CH = 4): the real half's bytes parked
    // where z_0..z_3's real parts go, read back by the imaginary half (this thread's own).
    static_assert(CH == 8 || CH == 4, "QUARTERS: four quarters of each part");
    const long long stack = (long long)NMOD * plane, quarter = plane / 4;
    signed char* at = dst + i * plane;
    if constexpr (CH == 4 && J0 == 0) {
#pragma unroll
        for (int r = 0; r < 4; ++r) at[r * quarter] = c[r];
    } else {
        int a[4], b[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            if constexpr (CH == 8) { a[r] = c[r]; b[r] = c[4 + r]; }
            else { a[r] = at[r * quarter]; b[r] = c[r]; }
        }
        signed char z[3][4];
        butterfly(a, b, sign, i, z);
#pragma unroll
        for (int h = 0; h < 3; ++h)
#pragma unroll
            for (int t = 0; t < 4; ++t) at[h * stack + t * quarter] = z[h][t];
    }
#elif PARTS == 1
    union { signed char c[CH]; typename Bytes<CH>::type u; } pack;
#pragma unroll
    for (int j = 0; j < CH; ++j) pack.c[j] = c[j];
    *reinterpret_cast<typename Bytes<CH>::type*>(dst + i * plane + J0) = pack.u;
#else
    static_assert(COLS == 4 && (CH == 8 || CH == 4), "PARTS 2: four columns of each part");
    const long long stack = (long long)NMOD * plane;
    union { signed char c[4]; unsigned int u; } re, im, sum;
    if constexpr (CH == 4 && J0 == 0) {                 // the real half alone
#pragma unroll
        for (int j = 0; j < 4; ++j) re.c[j] = c[j];
        *reinterpret_cast<unsigned int*>(dst + i * plane) = re.u;
    } else {
        if constexpr (CH == 8) {
#pragma unroll
            for (int j = 0; j < 4; ++j) { re.c[j] = c[j]; im.c[j] = c[4 + j]; }
            *reinterpret_cast<unsigned int*>(dst + i * plane) = re.u;
        } else {
            re.u = *reinterpret_cast<const unsigned int*>(dst + i * plane);
#pragma unroll
            for (int j = 0; j < 4; ++j) im.c[j] = c[j];
        }
        const int p = (int)MOD_P[i], h = p / 2;
#pragma unroll
        for (int j = 0; j < 4; ++j) sum.c[j] = add_mod(re.c[j], im.c[j], p, h);
        *reinterpret_cast<unsigned int*>(dst + stack + i * plane) = im.u;
        *reinterpret_cast<unsigned int*>(dst + 2 * stack + i * plane) = sum.u;
    }
#endif
}

// The residues of digits J0 .. J0 + CH - 1 of a thread's PER_THREAD (each below
// 2**(26 NP)) into dst, a plane apart per modulus: a CH-byte store per modulus (put).
// ``rows``: the moduli's constants (MOD_ROW's rows): the constant table itself for three
// pieces, whose unrolled loop reads them as instruction operands; a copy in shared
// memory for five, whose loop over the moduli reads them at a run-time index (from the
// constant bank instead: no faster, 18.3 against 18.1 ms at n = 16384, runs 8447b65 and
// d7e9515).
template <int NP, int CH, int J0>
__device__ __forceinline__ void residues_by_pieces(const unsigned long long (&q)[PER_THREAD],
                                                   const int (&s)[PER_THREAD], const bool (&neg)[PER_THREAD],
                                                   signed char* dst, long long plane, const double (*rows)[8],
                                                   int sign) {
    double v[CH][NP];
#pragma unroll
    for (int j = 0; j < CH; ++j) pieces<NP>(q[J0 + j], s[J0 + j], neg[J0 + j], v[j]);
    // (five pieces: a loop over the moduli; unrolled, the compiler held all of their
    // constants in registers at once, 194 registers and spills.  Three pieces: unrolled
    // MODULI_UNROLL at a time, NMOD by default; see that define.)
    constexpr int UNROLL = NP > 3 ? 1 : MODULI_UNROLL;
#pragma unroll UNROLL
    for (int i = 0; i < NMOD; ++i) {
        signed char c[CH];
#pragma unroll
        for (int j = 0; j < CH; ++j)
            c[j] = (signed char)__double2loint(residue_of_pieces<NP>(v[j], rows[i]) + MAGIC);
        put<CH, J0>(dst, plane, i, c, sign);
    }
}

// Three blocks of 256 threads (cupy_backend._grid) an SM for the wide build: at its
// 94-96 registers only two fit (25% occupancy, 22 moduli at n = 8192 under ncu, run
// f282980: latency-bound, 59% of issue slots busy; the narrow build, 72 registers, 37.5%).
// RESIDUES_BLOCKS sets another count (cupy_backend's OZAKI_RESIDUES_QUARTER_BLOCKS, for the
// QUARTERS build, which spills at 3: 80 registers, 168 / 1,360 bytes of local stores / loads
// at 25 moduli; at 2, 128 registers and none, ptxas 13.0, bench.sass).
#ifndef RESIDUES_BLOCKS
#define RESIDUES_BLOCKS 3
#endif
#if WIDE_DIGITS
#define RESIDUES_BOUNDS __launch_bounds__(256, RESIDUES_BLOCKS)
#else
#define RESIDUES_BOUNDS
#endif
extern "C" __global__ void RESIDUES_BOUNDS residues(const double* __restrict__ x, long long ld,
                                    long long rows, long long k, long long kpad, const long long* __restrict__ beta, int width,
                                    int nearest,
                                    const double* __restrict__ pow2,     // (NMOD, MAX_SHIFT)
                                    signed char* __restrict__ out,       // (PARTS 2: three stacks)
                                    const double* __restrict__ x_im,     // PARTS 2: the imaginary rows
                                    int sign,                            // QUARTERS: the butterflies' sign
                                    long long es) {                      // entries es doubles apart
#if WIDE_DIGITS
    __shared__ double wide_rows[NMOD][8];
    for (int c = threadIdx.x; c < NMOD * 8; c += blockDim.x) wide_rows[c / 8][c % 8] = MOD_ROW[c / 8][c % 8];
    __syncthreads();
#endif
    long long groups = QUARTERS ? kpad / 4 : kpad / COLS;   // QUARTERS: q columns, one a thread
    long long total = rows * groups;
    long long plane = rows * kpad;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        long long row = t / groups;
        long long col = (t - row * groups) * (QUARTERS ? 1 : COLS);
        long long b = beta[row];
        bool neg[PER_THREAD];
        unsigned long long q[PER_THREAD];
        int s[PER_THREAD];
        int smax = 0;                   // the largest shift: the pieces the digits need
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            const double* part = (PARTS == 2 && j >= COLS) ? x_im : x;
            long long c = QUARTERS ? col + (j % COLS) * groups : col + j % COLS;
            double v = (c < k) ? part[row * ld + c * es] : 0.0;
            digit(v, b, width, nearest, neg[j], q[j], s[j]);
            smax = max(smax, s[j]);
        }
        signed char* dst = out + (QUARTERS ? row * groups : row * kpad) + col;
        if (smax <= 24) {
            // below 2**77: the fast and accurate modes' digits at up to 21 moduli
            residues_by_pieces<3, 8, 0>(q, s, neg, dst, plane, MOD_ROW, sign);
#if WIDE_DIGITS
        } else if (smax <= 76) {
            // below 2**129: accurate mode's from 22 moduli on (three pieces took the
            // two-step path below: 24.1 ms at n = 16384, run 6872fbd), and exact mode's
            // slices up to that width.  15.65 ms at 22 moduli (run df12626) against the
            // three pieces' 4.73 at 16: ncu (f282980) counts 2.2x the instructions for
            // 1.375x the moduli, latency-bound.  No better: the moduli unrolled by four
            // (19.4 ms, run ae0bef0), eight-byte stores (18.4, c4e5735), the fold in
            // 64-bit integers (20.9, 2288d26).  Four digits at a time: eight digits of
            // five pieces, 40 doubles, would take 80 registers.
            residues_by_pieces<5, 4, 0>(q, s, neg, dst, plane, wide_rows, sign);
            residues_by_pieces<5, 4, 4>(q, s, neg, dst, plane, wide_rows, sign);
#endif
        } else {
            // Larger digits (exact-mode slices): (q mod p)(2**s mod p), reduced again.
#pragma unroll 1
            for (int i = 0; i < NMOD; ++i) {
                double p = MOD_P[i], h = floor(0.5 * p);
                const double* tab = pow2 + (long long)i * MAX_SHIFT;
                signed char c[PER_THREAD];
#pragma unroll
                for (int j = 0; j < PER_THREAD; ++j) {
                    double qd = neg[j] ? -(double)q[j] : (double)q[j];
                    double r = mod_symmetric(mod_symmetric(qd, p, MOD_INV[i], h) * tab[s[j]], p, MOD_INV[i], h);
                    c[j] = (signed char)__double2loint(r + MAGIC);
                }
                put<PER_THREAD, 0>(dst, plane, i, c, sign);
            }
        }
    }
}

// Karatsuba's sums: (x + y) mod p_i in the symmetric range for residue stacks
// (NMOD, rows, kpad) of int8, as numpy_backend.add_residues (both addends in the
// range, so one correction by p suffices).  Modulus i = blockIdx.y; each plane
// holds ``plane`` bytes at i * x_plane, i * y_plane and i * plane; with
// ``vector`` (every plane 16-byte aligned, ``plane`` a multiple of 16, as the
// residues kernel's padded stacks are) a thread adds 16 bytes at a time.
// (CuPy's elementwise kernel, broadcasting the moduli, ran at about 0.6 TB/s
// on the H200.)
extern "C" __global__ void add_residues(const signed char* __restrict__ x, long long x_plane,
                                        const signed char* __restrict__ y, long long y_plane,
                                        long long plane, int vector, signed char* __restrict__ out) {
    const int i = blockIdx.y;
    const int p = (int)MOD_P[i], h = p / 2;
    x += i * x_plane;
    y += i * y_plane;
    out += i * plane;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (vector) {
        for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < plane / 16; t += stride) {
            union { int4 v; signed char c[16]; } a, b, s;
            a.v = reinterpret_cast<const int4*>(x)[t];
            b.v = reinterpret_cast<const int4*>(y)[t];
#pragma unroll
            for (int j = 0; j < 16; ++j) s.c[j] = add_mod(a.c[j], b.c[j], p, h);
            reinterpret_cast<int4*>(out)[t] = s.v;
        }
    } else {
        for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < plane; t += stride)
            out[t] = add_mod(x[t], y[t], p, h);
    }
}

// The radix-4 butterflies (decimation in frequency) of a complex operand's residues, as
// numpy_backend.butterfly4: z_s = sum_r (sign i)**(r s) x_(q r + j) mod p_i for s = 0..3,
// from the residue stacks re and im (NMOD planes ``in_plane`` bytes apart, rows ``ld``
// bytes apart, columns q r + j), into three stacks (NMOD, 4 rows, q) of Re z, Im z and
// their sums, one after another; row s rows + row holds z_s of that row.  Modulus
// i = blockIdx.y; a thread does four columns j of one row (four-byte loads and stores: q
// and ld multiples of 4, the planes 4-byte aligned; the host checks).  (QUARTERS above
// forms them with the residues; this pass serves residues made apart.)
extern "C" __global__ void butterfly4(const signed char* __restrict__ re, const signed char* __restrict__ im,
                                      long long in_plane, long long ld, long long rows, long long q, int sign,
                                      signed char* __restrict__ out) {
    const int i = blockIdx.y;
    re += i * in_plane;
    im += i * in_plane;
    const long long plane = 4 * rows * q;                 // one modulus' plane of an output stack
    const long long stack = (long long)NMOD * plane;
    out += i * plane;
    const long long groups = q / 4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < rows * groups; t += stride) {
        const long long row = t / groups, j = (t - row * groups) * 4;
        union Word { unsigned int u; signed char c[4]; };
        Word a[4], b[4], z[3][4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            a[r].u = *reinterpret_cast<const unsigned int*>(re + row * ld + r * q + j);
            b[r].u = *reinterpret_cast<const unsigned int*>(im + row * ld + r * q + j);
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            int ac[4], bc[4];
            signed char zc[3][4];
#pragma unroll
            for (int r = 0; r < 4; ++r) { ac[r] = a[r].c[c]; bc[r] = b[r].c[c]; }
            butterfly(ac, bc, sign, i, zc);
#pragma unroll
            for (int h = 0; h < 3; ++h)
#pragma unroll
                for (int t2 = 0; t2 < 4; ++t2) z[h][t2].c[c] = zc[h][t2];
        }
#pragma unroll
        for (int h = 0; h < 3; ++h)
#pragma unroll
            for (int s = 0; s < 4; ++s)
                *reinterpret_cast<unsigned int*>(out + h * stack + (s * rows + row) * q + j) = z[h][s].u;
    }
}
