// int8 tensor-core products (mma.sync .s8) and the CRT sum on them, for the kernels that lift
// int8 residues: fused.cu (its mainloop, and its CRT_MMA epilogue from shared memory) and
// epilogue.cu (CRT_MMA: the residue GEMM's int8 residues read from memory).
//
// The CRT sum S = sum_i r_i c_i' is an integer product: the int8 residues of 32 outputs (the
// rows) times the balanced base-256 digits D of the c_i' (|c_i'| <= P / 2, the same residue
// mod P as c_i; kernel_tables.crt_digits), the moduli the inner dimension (m16n8k16, or k32
// from 17 moduli).  Each digit sum D_d = sum_i r_i D_id is exact in int32 (|D_d| <= 32 *
// 128**2 = 2**19 for one stack, 3 * 2**19 for a complex product's combined three), and the limbs
// S_l = (D_4l + 2**8 D_4l+1) + 2**16 (D_4l+2 + 2**8 D_4l+3) (|S_l| < 2**46) go to kulisch.cuh's
// crt_lift as the float64 sums do: the same lifted value, hence the same bits.  The tables
// CRT_KM, CRT_ND, CRT_LD and CRT_BFRAG come from kernel_tables.crt_digit_source
// (constant_tables(m, crt=True, digits=True)).
#pragma once

// An int as a double by the conversion instruction: one issue slot where kulisch.cuh's
// to_double takes three (the kernels are issue-bound; its conversions, two an
// output and modulus, stay well under the conversion pipe's quarter rate).
__device__ __forceinline__ double exact_double(int v) { return __int2double_rn(v); }

__device__ __forceinline__ void mma_s8(int* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// m16n8k16: A two registers (rows gid, gid + 8; k 4 tig .. 4 tig + 3), B one (k 4 tig .. +3, n gid).
__device__ __forceinline__ void mma_s8_k16(int* c, const unsigned* a, unsigned b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(b));
}

#ifdef CRT_ND
#define DROW (CRT_ND + 2)               // a row of digit sums: int2 stores and loads without bank conflicts

// Four words, byte b of word j the residue of output b for modulus j, transposed in place
// (eight byte permutes): byte j of word b.
__device__ __forceinline__ void transpose_bytes(unsigned (&w)[4]) {
    unsigned t0 = __byte_perm(w[0], w[1], 0x5140), t1 = __byte_perm(w[2], w[3], 0x5140);
    unsigned t2 = __byte_perm(w[0], w[1], 0x7362), t3 = __byte_perm(w[2], w[3], 0x7362);
    w[0] = __byte_perm(t0, t1, 0x5410);
    w[1] = __byte_perm(t0, t1, 0x7632);
    w[2] = __byte_perm(t2, t3, 0x5410);
    w[3] = __byte_perm(t2, t3, 0x7632);
}

// The three steps of the CRT sum for 32 outputs (a warp's, all lanes together), on a lane's
// B fragments of the digit matrix (DigitFragments), its residues' A fragments and its digit sums.
#define DIGIT_TILES (CRT_ND / 8)
typedef unsigned DigitFragments[DIGIT_TILES][CRT_KM / 16];
typedef unsigned ResidueFragments[CRT_KM / 16][4];
typedef int DigitSums[2][DIGIT_TILES][4];

// Lane ``lane``'s B fragments of the digit matrix, read once by a warp before its sums.
__device__ __forceinline__ void load_crt_digits(DigitFragments& bfrag, int lane) {
#pragma unroll
    for (int nt = 0; nt < DIGIT_TILES; ++nt)
#pragma unroll
        for (int kr = 0; kr < CRT_KM / 16; ++kr) bfrag[nt][kr] = CRT_BFRAG[nt][kr][lane];
}

// 1. The residues as A fragments.  ``word(i)`` gives the residues of outputs 4 gid .. 4 gid + 3
// for modulus i (i < NMOD) as one word, byte b output 4 gid + b; a lane asks for moduli
// 16 kr + 4 tig .. + 3, and the four words are transposed into the A fragments of two m16
// tiles: output 4 gid + 2 t + h is row gid + 8 h of tile t.
template <class Word>
__device__ __forceinline__ void residue_fragments(Word word, int lane, ResidueFragments& x) {
    const int tig = lane & 3;
#pragma unroll
    for (int kr = 0; kr < CRT_KM / 16; ++kr) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int i = 16 * kr + 4 * tig + j;
            x[kr][j] = word(i < NMOD ? i : NMOD - 1);   // past the moduli: any residue, its digits are zero
        }
        transpose_bytes(x[kr]);
    }
}

// 2. d = the residues times the digits, plus d (the digit sums are linear in the residues:
// a complex product's Karatsuba differences are differences of the parts' sums).
__device__ __forceinline__ void digit_products(const ResidueFragments& x, const DigitFragments& bfrag,
                                               DigitSums& d) {
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int nt = 0; nt < DIGIT_TILES; ++nt) {
#if CRT_KM == 16
            const unsigned a[2] = {x[0][2 * t], x[0][2 * t + 1]};
            mma_s8_k16(d[t][nt], a, bfrag[nt][0]);
#else
            const unsigned a[4] = {x[0][2 * t], x[0][2 * t + 1], x[1][2 * t], x[1][2 * t + 1]};
            const unsigned b[2] = {bfrag[nt][0], bfrag[nt][1]};
            mma_s8(d[t][nt], a, b);
#endif
        }
}

// 3. The digit sums through ``scratch`` (32 rows of DROW int32, the warp's own), so that lane u
// holds output u's, folded into the 32-bit limbs of S: S_l = (D_4l + 2**8 D_4l+1) + 2**16
// (D_4l+2 + 2**8 D_4l+3), exact for |D| < 2**22 (|S_l| < 2**47).
__device__ __forceinline__ void fold_digit_sums(const DigitSums& d, int lane, int* scratch, double (&S)[CRT_LD]) {
    const int gid = lane >> 2, tig = lane & 3;
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int nt = 0; nt < DIGIT_TILES; ++nt) {
            // rows gid, gid + 8 of tile t: outputs 4 gid + 2 t, 4 gid + 2 t + 1; digits 8 nt + 2 tig, + 1
            int* row = scratch + (4 * gid + 2 * t) * DROW + 8 * nt + 2 * tig;
            *reinterpret_cast<int2*>(row) = make_int2(d[t][nt][0], d[t][nt][1]);
            *reinterpret_cast<int2*>(row + DROW) = make_int2(d[t][nt][2], d[t][nt][3]);
        }
    __syncwarp();
    const int* mine = scratch + lane * DROW;
#pragma unroll
    for (int l = 0; l < CRT_LD; ++l) {
        int2 lo = *reinterpret_cast<const int2*>(mine + 4 * l), hi = *reinterpret_cast<const int2*>(mine + 4 * l + 2);
        S[l] = fma(exact_double(hi.x + 256 * hi.y), 65536.0, exact_double(lo.x + 256 * lo.y));
    }
    __syncwarp();                                       // read before the next sum overwrites it
}

// The 32-bit limbs of S for 32 outputs of one residue stack (``word`` as residue_fragments'):
// lane u receives output u's.
template <class Word>
__device__ __forceinline__ void crt_digit_sums(Word word, int lane, const DigitFragments& bfrag,
                                               int* scratch, double (&S)[CRT_LD]) {
    ResidueFragments x;
    residue_fragments(word, lane, x);
    DigitSums d = {};
    digit_products(x, bfrag, d);
    fold_digit_sums(d, lane, scratch, S);
}
#endif
