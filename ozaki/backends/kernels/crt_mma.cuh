// The CRT sums on the tensor cores: for the 32 outputs of a warp, the limbs
// S_l = sum_i r_i c_il of every output as one int8 product
//
//     T (32 x 4 LP) = R (32 x NMOD, the residues, s8) . Cb (NMOD x 4 LP, u8),
//     Cb[i][4 l + b] = byte b of the 32-bit limb c_il,   S_l = sum_b T[4 l + b] 2**(8 b),
//
// mma.sync m16n8k32 (s8 x u8 -> s32).  The sums are exact: |r_i| <= 128 and the bytes
// <= 255, so |T| < NMOD 2**15 (int32), and |S_l| < NMOD 2**39 is an integer of float64
// (the same integer that kulisch.cuh's crt_add forms with NMOD x LP float64 FMAs, so
// crt_lift gives the same limbs: the bits do not change).  Any residue representative
// with |r| <= 128 lifts to the same value.
//
// Each warp owns a CrtWarp of shared memory: the residue rows of its 32 outputs (one
// row per lane, moduli along the row) and the byte sums.  The constant fragments of Cb
// (CRT_BFRAG, from cupy_backend._constant_tables) are read once per thread into registers.
#pragma once

#include "kulisch.cuh"

#define CRT_KS ((NMOD + 31) / 32)          // k32 steps over the moduli
#define CRT_NT ((4 * LP + 7) / 8)          // n8 tiles over the limbs' bytes
#define CRT_ROW (CRT_KS * 32 + 16)         // bytes per residue row (16-byte aligned; ldmatrix rows in distinct banks)
#define CRT_TROW (CRT_NT * 8 + 1)          // ints per row of byte sums (odd: the row reads spread over the banks)
#define CRT_WORDS ((NMOD + 3) / 4)         // packed residue words per output

struct CrtWarp {
    __align__(16) signed char tile[32 * CRT_ROW];
    int sums[32 * CRT_TROW];
};

__device__ __forceinline__ unsigned crt_smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void crt_ldmatrix_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(crt_smem_addr(p)));
}

__device__ __forceinline__ void crt_mma_s8u8(int* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// This lane's fragments of Cb: b[ks][nt][0] holds rows (moduli) 32 ks + 4 tig .. + 3 of
// column 8 nt + gid, b[ks][nt][1] the rows 16 further (the m16n8k32 B layout).
__device__ __forceinline__ void crt_fragments(unsigned (&b)[CRT_KS][CRT_NT][2], int lane) {
#pragma unroll
    for (int ks = 0; ks < CRT_KS; ++ks)
#pragma unroll
        for (int nt = 0; nt < CRT_NT; ++nt)
#pragma unroll
            for (int h = 0; h < 2; ++h) b[ks][nt][h] = CRT_BFRAG[((ks * CRT_NT + nt) * 2 + h) * 32 + lane];
}

// The residue r (|r| <= 128) of modulus i into byte i of this lane's packed row.
__device__ __forceinline__ void crt_pack(unsigned (&w)[CRT_WORDS], int r, int i) {
    w[i >> 2] |= (unsigned)(r & 0xFF) << (8 * (i & 3));
}

// S (the LP limb sums of this lane's output) from the 32 lanes' packed residue rows.
// Every lane of the warp calls it (mma.sync is warp-wide).
__device__ __forceinline__ void crt_sums(CrtWarp& sm, const unsigned (&w)[CRT_WORDS],
                                         const unsigned (&b)[CRT_KS][CRT_NT][2], int lane, double (&S)[LP]) {
    unsigned* row = reinterpret_cast<unsigned*>(sm.tile + lane * CRT_ROW);
#pragma unroll
    for (int j = 0; j < CRT_WORDS; ++j) row[j] = w[j];
#pragma unroll
    for (int j = CRT_WORDS; j < CRT_KS * 8; ++j) row[j] = 0;   // moduli past NMOD: zero rows of R
    __syncwarp();
    const int gid = lane >> 2, tig = lane & 3;
    const int lr = (lane & 7) + ((lane >> 3) & 1) * 8;     // ldmatrix.x4: the m16n8k32 A fragment
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
        int acc[CRT_NT][4];
#pragma unroll
        for (int nt = 0; nt < CRT_NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[nt][e] = 0;
#pragma unroll
        for (int ks = 0; ks < CRT_KS; ++ks) {
            unsigned a[4];
            crt_ldmatrix_x4(a, sm.tile + (mt * 16 + lr) * CRT_ROW + ks * 32 + (lane >> 4) * 16);
#pragma unroll
            for (int nt = 0; nt < CRT_NT; ++nt) crt_mma_s8u8(acc[nt], a, b[ks][nt]);
        }
#pragma unroll
        for (int nt = 0; nt < CRT_NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                sm.sums[(mt * 16 + gid + 8 * (e >> 1)) * CRT_TROW + nt * 8 + 2 * tig + (e & 1)] = acc[nt][e];
    }
    __syncwarp();
    const int* t = sm.sums + lane * CRT_TROW;
#pragma unroll
    for (int l = 0; l < LP; ++l) {
        long long s = (long long)t[4 * l] + ((long long)t[4 * l + 1] << 8) + ((long long)t[4 * l + 2] << 16)
                      + ((long long)t[4 * l + 3] << 24);
        S[l] = (double)s;                                  // |s| < 2**46: exact
    }
    __syncwarp();                                          // the tile and sums are free again
}
