// The fused Ozaki product: one kernel per product (or stack of products).
//
// One block owns a BM x BN tile of outputs of one matrix of the stack.  The
// mainloop runs the int8 tensor-core products (mma.sync m16n8k32, int32
// accumulators) of every group in turn -- a group is one (slice pair,
// modulus, Karatsuba part) -- over the whole inner dimension, through a
// cp.async pipeline that flows from one group into the next.  At the end of
// each group an epilogue consumes the int32 accumulators on chip:
//
//   EPILOGUE_CRT    (the product) reduces them mod p to int8 residues kept in
//                   shared memory; after the last group every thread lifts
//                   the residues of its outputs by CRT into Kulisch limbs,
//                   adds the slice pairs at their shifts, rounds once to
//                   float64 and writes it: no int32 product reaches memory.
//   EPILOGUE_BOUND  (accurate mode's plan) keeps the row and column maxima of
//                   the product of the 6-bit ceilings, atomically merged into
//                   row_max / col_max: the bound matrix never reaches memory.
//
// Complex products (NIN = 3): the parts of a group are P1 = Ar Br, P2 = Ai Bi,
// P3 = (Ar + Ai)(Br + Bi) on the residues; Re = P1 - P2 is reduced after P2,
// and P3 accumulates on top of -(P1 + P2), so Im = P3 - P1 - P2 comes out of
// the accumulators directly (|Im| <= 3 k 2**14 < 2**31 for k <= 43690).
//
// Operands are residue stacks as cupy_backend.residues writes them: int8
// (NMOD, rows, kp), k-contiguous, kp a multiple of 16, zero past k, one stack
// per (part, slice).  One slice pair: the parts' stacks are kernel parameters
// a0..a2, b0..b2 (no table to copy to the device); several (exact mode): a
// device table of pointers, a_table[h * slices_a + t].
// Matrix g of the stack (blockIdx.z) starts at row g * a_gstride of the A
// stacks and g * b_gstride of the B stacks (0: broadcast), and writes its
// outputs at out + g * out_gstride + row * out_rstride + col.
//
// Compile-time: NMOD, NIN (1 or 3), NPAIRS (slice pairs), LP and LACC (limbs
// of one CRT value and of the accumulator), BM, BN, WARPS_M, WARPS_N, BK
// (inner-dimension bytes per pipeline stage), STAGES, one of EPILOGUE_CRT /
// EPILOGUE_BOUND (with EPILOGUE_CRT, RESIDUAL: also the outputs' rounding residuals,
// as epilogue.cu; FUSED_INT_MOD: the accumulators reduced on the integer pipes; CRT_MMA: the
// CRT sums on the tensor cores, below; RES_SKEW: bytes between consecutive residue tiles'
// banks), and the constant tables of kulisch.cuh.

#include "kulisch.cuh"
#include "crt_mma.cuh"               // mma_s8, and the CRT sum on the tensor cores (CRT_MMA)

#define THREADS (WARPS_M * WARPS_N * 32)
#define WM (BM / WARPS_M)              // a warp's tile
#define WN (BN / WARPS_N)
#define MT (WM / 16)                   // m16n8k32 tiles of a warp's tile
#define NT (WN / 8)
#define ROW (BK + 16)                  // padded shared row: ldmatrix rows fall in distinct banks
#define RES_ROW (BN + 4)               // padded row of a residue tile
#define RES_TILE (BM * RES_ROW)
#ifndef RES_SKEW
#define RES_SKEW 0
#endif
#define RES_AT(t) (res + (t) * (RES_TILE + RES_SKEW))      // residue tile t: (pair, modulus) * NOUT + part
static_assert(RES_SKEW % 4 == 0, "the residue tiles' word loads and char2 stores stay aligned");
#define NOUT (NIN == 3 ? 2 : 1)
#define GROUPS (NPAIRS * NMOD * NIN)
// Outputs a thread lifts at once in the CRT step (a divisor of its share; fewer
// where the Kulisch accumulators of several slice pairs or two parts take the registers)
// (two: four doubled the registers, 52 -> 112, for no fewer instructions an output)
#define CRT_SHARE (BM * BN / THREADS)
#define CRT_U (NPAIRS == 1 && CRT_SHARE % 2 == 0 ? 2 : 1)

static_assert(MT >= 1 && NT % 2 == 0, "a warp tile is m16 x n16 at least");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, zero-filled when ``valid`` is false.
__device__ __forceinline__ void copy16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

struct Operands {
    const signed char* a[3];           // the parts' stacks (one slice pair)
    const signed char* b[3];
    const signed char* const* a_table; // (NIN * slices_a) stacks (several slice pairs)
    const signed char* const* b_table; // (NIN * slices_b)
    long long a_plane, b_plane;        // bytes between two moduli's planes (a_rows * kp when contiguous)
    long long kp;
    int slices_b;
};

// Where the loads stand in the flattened (group, k tile) sequence: the group's
// operand tiles, its (pair, modulus, part) and the next k tile.  Advanced one
// stage at a time, the group's indices counted up rather than divided out.
struct LoadState {
    const signed char* A;
    const signed char* B;
    int group, pair, mod, h, kt;
};

__device__ __forceinline__ void seek_group(const Operands& op, LoadState& s, long long a_row0, long long b_row0) {
#if NPAIRS == 1
    const signed char* A = op.a[s.h];
    const signed char* B = op.b[s.h];
#else
    int t = s.pair / op.slices_b, u = s.pair - t * op.slices_b;
    const signed char* A = op.a_table[s.h * (NPAIRS / op.slices_b) + t];
    const signed char* B = op.b_table[s.h * op.slices_b + u];
#endif
    s.A = A + s.mod * op.a_plane + a_row0 * op.kp;
    s.B = B + s.mod * op.b_plane + b_row0 * op.kp;
    s.kt = 0;
}

// A thread's share of a stage's 16-byte copies, fixed for the whole launch:
// copy j is chunk c = threadIdx.x + j THREADS of the stage's (BM + BN) rows of
// BK / 16 chunks.  Its offsets are computed once, so that a stage costs a few
// instructions per copy instead of a division and a 64-bit product.
#define CHUNKS ((BM + BN) * (BK / 16))
#define COPIES ((CHUNKS + THREADS - 1) / THREADS)
static_assert(COPIES <= 32, "Copies::on_a holds a bit a copy");

struct Copies {
    long long src[COPIES];             // the chunk's offset in its operand tile (row * kp + kc)
    int dst[COPIES];                   // its offset in a stage's buffer
    int kc[COPIES];                    // its inner offset; -1: no such chunk or a row past the operand
    unsigned on_a;                     // bit j: copy j reads A (else B)
};

__device__ __forceinline__ Copies copies_of(long long kp, int m_left, int n_left) {
    Copies cp;
    cp.on_a = 0;
#pragma unroll
    for (int j = 0; j < COPIES; ++j) {
        int c = threadIdx.x + j * THREADS;
        int r = c / (BK / 16), kc = (c - r * (BK / 16)) * 16;
        bool on_a = r < BM;
        int rr = on_a ? r : r - BM;
        bool row = c < CHUNKS && (on_a ? rr < m_left : rr < n_left);
        cp.src[j] = (long long)rr * kp + kc;
        cp.dst[j] = r * ROW + kc;
        cp.kc[j] = row ? kc : -1;
        cp.on_a |= (on_a ? 1u : 0u) << j;
    }
    return cp;
}

// The next stage of the sequence into a shared buffer (zero-filled past the
// operands' rows and kp), then one step on.
__device__ __forceinline__ void load_stage(const Operands& op, const Copies& cp, LoadState& s, int KT,
                                           long long a_row0, long long b_row0, signed char* buf) {
    long long k0 = (long long)s.kt * BK;
#pragma unroll
    for (int j = 0; j < COPIES; ++j) {
        if (COPIES * THREADS != CHUNKS && threadIdx.x + j * THREADS >= CHUNKS) break;
        bool valid = cp.kc[j] >= 0 && k0 + cp.kc[j] < op.kp;
        const signed char* base = (cp.on_a >> j) & 1u ? s.A : s.B;
        copy16(buf + cp.dst[j], valid ? base + cp.src[j] + k0 : base, valid);
    }
    if (++s.kt == KT) {
        ++s.group;
        if (++s.h == NIN) {
            s.h = 0;
            if (++s.mod == NMOD) { s.mod = 0; ++s.pair; }
        }
        if (s.group < GROUPS) seek_group(op, s, a_row0, b_row0);
    }
}

// One stage of int8 tensor-core products into the warp's accumulators.
__device__ __forceinline__ void compute_stage(const signed char* sa, const signed char* sb, int wm, int wn,
                                              int lane, int (&acc)[MT][NT][4]) {
#pragma unroll
    for (int ks = 0; ks < BK; ks += 32) {
        unsigned a[MT][4], b[NT][2];
        // ldmatrix.x4: lanes 0-7 address rows 0-7 at k 0-15, 8-15 rows 8-15,
        // 16-23 rows 0-7 at k 16-31, 24-31 rows 8-15 at k 16-31: the m16n8k32
        // A fragment (a0..a3); for B^T rows (n) the same four give b0, b1 of
        // two n8 tiles.
        int lr = (lane & 7) + ((lane >> 3) & 1) * 8, lk = ks + (lane >> 4) * 16;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(a[mt], sa + (wm + mt * 16 + lr) * ROW + lk);
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            unsigned r[4];
            ldmatrix_x4(r, sb + (wn + nt * 8 + lr) * ROW + lk);
            b[nt][0] = r[0]; b[nt + 1][0] = r[1]; b[nt][1] = r[2]; b[nt + 1][1] = r[3];
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma_s8(acc[mt][nt], a[mt], b[nt]);
    }
}

// Fragment element e of tile (mt, nt) sits at row wm + mt*16 + gid + 8*(e/2),
// column wn + nt*8 + 2*tig + e%2 of the block's tile.
#define FRAG_ROW(mt, e) (wm + (mt) * 16 + gid + 8 * ((e) >> 1))
#define FRAG_COL(nt, e) (wn + (nt) * 8 + 2 * tig + ((e) & 1))

#ifdef EPILOGUE_CRT
#ifdef FUSED_INT_MOD
// The residues mod p_i of int32 values, as int8, on the integer pipes (cupy_backend: NEW_KERNELS
// fused_int_mod): modular_int.cuh's IMAD.HI and a few simple operations where the FP64 way below
// takes a conversion (16 a clock an SM on Hopper) and four FP64 operations an accumulator, 16
// an output at 16 moduli.  Its range, |x| <= 2**31 - 2**14, holds every accumulator here: k
// 2**14 (real), 3 k 2**14 (complex Im) within FUSED_K_MAX.
#include "modular_int.cuh"
__device__ __forceinline__ signed char residue_small(int x, int i) {
    return (signed char)mod_symmetric_int(x, (int)MOD_INT[i][0], MOD_INT[i][1], MOD_INT[i][2]);
}
#else
// The residues mod p_i of int32 values, as int8.  |x| < 2**31, so the quotient
// is exact and |r| <= p / 2; p = 256 may give +128, which is -128 in int8 (the
// same residue).
// (reduce_mod's operations, MAGIC read from the constant bank: as an immediate, the FMA takes its
// multiplier 1/p in a register, which ptxas copied out of the uniform registers for every
// accumulator where the CRT sums on the tensor cores left it 52 registers: 183 -> 202
// instructions a mainloop stage, against 188 this way; ptxas 13.0, 16 moduli, the short tile.)
__constant__ double MAGIC_BANK = MAGIC;
__device__ __forceinline__ signed char residue_small(int x, int i) {
    const double v = exact_double(x);
    const double t = fma(v, MOD_INV[i], MAGIC_BANK) - MAGIC_BANK;
    return (signed char)__double2loint(fma(-t, MOD_P[i], v) + MAGIC_BANK);
}
#endif

// The residues of a warp's accumulators into a residue tile.
__device__ __forceinline__ void store_residues(const int (&x)[MT][NT][4], int i, signed char* tile,
                                               int wm, int wn, int gid, int tig) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                char2 v;
                v.x = residue_small(x[mt][nt][e], i);
                v.y = residue_small(x[mt][nt][e + 1], i);
                *reinterpret_cast<char2*>(tile + FRAG_ROW(mt, e) * RES_ROW + FRAG_COL(nt, e)) = v;
            }
}
#endif

#if defined(CRT_MMA) && !defined(CRT_ND)
#error "CRT_MMA needs the CRT digits' tables (kernel_tables.constant_tables(m, crt=True, digits=True))"
#endif
#if defined(EPILOGUE_CRT) && defined(CRT_MMA)
// The CRT sum on the tensor cores (cupy_backend: NEW_KERNELS crt_mma; crt_mma.cuh) from the
// residue tiles.  It takes one slice pair (the Kulisch accumulator's shifts stay on the other
// step), rows of 32 outputs (BN % 32 == 0) and a warp's 32 x DROW int32 of digit sums (one
// output part at a time) in the idle pipeline buffers; any other tile keeps the float64 sums.
#if NPAIRS == 1 && NMOD <= 32 && BN % 32 == 0 && CRT_KM >= NMOD \
    && (THREADS / 32) * 32 * DROW * 4 <= STAGES * (BM + BN) * ROW
#define CRT_ON_TENSOR_CORES
#endif
#endif

#ifdef CRT_ON_TENSOR_CORES
// The 32-bit limbs of S for one output part of the 32 outputs at row r, columns c0 .. c0 + 31
// of the block's tile: lane u's output is column c0 + u.  A lane's words are four outputs'
// bytes of a residue tile (the tiles lie RES_SKEW bytes out of step, so that a quad's four
// lanes, which read four moduli, read distinct banks).
__device__ __forceinline__ void crt_sum_mma(const signed char* res, int o, int r, int c0, int lane,
                                            const DigitFragments& bfrag, int* scratch,
                                            double (&S)[CRT_LD]) {
    const int at = r * RES_ROW + c0 + 4 * (lane >> 2);
    crt_digit_sums([&](int i) { return *reinterpret_cast<const unsigned*>(RES_AT(i * NOUT + o) + at); },
                   lane, bfrag, scratch, S);
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
fused(const signed char* a0, const signed char* a1, const signed char* a2,
      const signed char* b0, const signed char* b1, const signed char* b2,
      const signed char* const* a_table, const signed char* const* b_table,
      long long a_plane, long long b_plane, long long kp, int slices_b, int m, int n,
      long long a_gstride, long long b_gstride,         // rows of the operand stacks per matrix
#ifdef EPILOGUE_CRT
      const int* __restrict__ shifts,                   // (NPAIRS,) in limbs
      const long long* __restrict__ beta_a,             // (batch * m,), by row of the A stacks
      const long long* __restrict__ beta_b,             // (batch * n,)
      OUT_T* __restrict__ out0, OUT_T* __restrict__ out1,
      long long out_gstride, long long out_rstride,
      double* __restrict__ rho0, double* __restrict__ rho1    // RESIDUAL: the rounding residuals
#else
      int* __restrict__ row_max, int* __restrict__ col_max   // (batch * m,), (batch * n,), zeroed
#endif
) {
    const Operands op = {{a0, a1, a2}, {b0, b1, b2}, a_table, b_table, a_plane, b_plane, kp, slices_b};
    extern __shared__ __align__(16) signed char smem[];
    signed char* pipe = smem;                                 // STAGES x (BM + BN) rows of ROW bytes
#ifdef EPILOGUE_CRT
    signed char* res = smem + STAGES * (BM + BN) * ROW;       // GROUPS / NIN * NOUT residue tiles
#endif
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int gid = lane >> 2, tig = lane & 3;
    const int g = blockIdx.z;
    const int i0 = blockIdx.y * BM, j0 = blockIdx.x * BN;
    const long long a_row0 = g * a_gstride + i0, b_row0 = g * b_gstride + j0;
    const int m_left = m - i0, n_left = n - j0;
    const int KT = (int)((op.kp + BK - 1) / BK);
    const int total = GROUPS * KT;

    int acc[MT][NT][4];
#if NIN == 3
    int p1[MT][NT][4];                                        // P1, kept until P2 is done
#endif
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0;

    const Copies cp = copies_of(op.kp, m_left, n_left);
    LoadState ls;
    ls.group = ls.pair = ls.mod = ls.h = 0;
    seek_group(op, ls, a_row0, b_row0);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < total) load_stage(op, cp, ls, KT, a_row0, b_row0, pipe + s * (BM + BN) * ROW);
        commit();
    }
    int ckt = 0, group = 0;              // the k tile and group the products are at
    for (int step = 0; step < total; ++step) {
        wait_pending<STAGES - 2>();
        __syncthreads();                 // stage ``step`` landed; stage step - 1 is free to refill
        int next = step + STAGES - 1;
        if (next < total) {
            load_stage(op, cp, ls, KT, a_row0, b_row0, pipe + (next % STAGES) * (BM + BN) * ROW);
        }
        commit();
        int buf = step % STAGES;
        compute_stage(pipe + buf * (BM + BN) * ROW, pipe + (buf * (BM + BN) + BM) * ROW, wm, wn, lane, acc);
        if (++ckt != KT) continue;
        ckt = 0;

        // ---- the end of a group: its epilogue on the accumulators ----
#ifdef EPILOGUE_CRT
        int pm = group / NIN;                                 // (pair, modulus)
        int i = pm % NMOD;
#if NIN == 3
        int h = group % NIN;
        if (h == 2) {                                         // Im = P3 - P1 - P2
            store_residues(acc, i, RES_AT(pm * 2 + 1), wm, wn, gid, tig);
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    int x = acc[mt][nt][e];
                    if (h == 0) p1[mt][nt][e] = x;
                    if (h == 1) { acc[mt][nt][e] = p1[mt][nt][e] - x; p1[mt][nt][e] = -(p1[mt][nt][e] + x); }
                }
        if (h == 1) {                                         // Re = P1 - P2, then P3 on -(P1 + P2)
            store_residues(acc, i, RES_AT(pm * 2), wm, wn, gid, tig);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[mt][nt][e] = p1[mt][nt][e];
            ++group;
            continue;
        }
#else
        store_residues(acc, i, RES_AT(pm), wm, wn, gid, tig);
#endif
#else   // EPILOGUE_BOUND: the row and column maxima of the (nonnegative) product
        int rmax[MT][2], cmax[NT][2];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) rmax[mt][0] = rmax[mt][1] = 0;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) cmax[nt][0] = cmax[nt][1] = 0;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    rmax[mt][e >> 1] = max(rmax[mt][e >> 1], acc[mt][nt][e]);
                    cmax[nt][e & 1] = max(cmax[nt][e & 1], acc[mt][nt][e]);
                }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                int v = rmax[mt][hf];
                v = max(v, __shfl_xor_sync(0xffffffffu, v, 1));
                v = max(v, __shfl_xor_sync(0xffffffffu, v, 2));
                int r = wm + mt * 16 + gid + 8 * hf;
                if (tig == 0 && r < m_left) atomicMax(row_max + g * (long long)m + i0 + r, v);
            }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                int v = cmax[nt][hf];
                v = max(v, __shfl_xor_sync(0xffffffffu, v, 4));
                v = max(v, __shfl_xor_sync(0xffffffffu, v, 8));
                v = max(v, __shfl_xor_sync(0xffffffffu, v, 16));
                int c = wn + nt * 8 + 2 * tig + hf;
                if (gid == 0 && c < n_left) atomicMax(col_max + g * (long long)n + j0 + c, v);
            }
#endif
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0;
        ++group;
    }

#ifdef EPILOGUE_CRT
    // ---- CRT, Kulisch sum of the slice pairs, one rounding, one write ----
    // One output's Kulisch limbs (every part) rounded once and written, where it lies in the product.
    auto write_output = [&](int r, int c, long long (&acc_l)[NOUT][LACC]) {
        if (r >= m_left || c >= n_left) return;
        long long e = beta_a[a_row0 + r] + beta_b[b_row0 + c];
        long long at = g * out_gstride + (long long)(i0 + r) * out_rstride + j0 + c;
        store_rounded<LACC>(acc_l[0], e, out0 + at, rho0 + at);
#if NOUT == 2
        store_rounded<LACC>(acc_l[1], e, out1 + at, rho1 + at);
#endif
    };
#ifdef CRT_ON_TENSOR_CORES
    wait_pending<0>();                   // (only empty groups are left) the pipeline buffers take the digit sums
    __syncthreads();
    DigitFragments bfrag;
    load_crt_digits(bfrag, lane);
    int* scratch = reinterpret_cast<int*>(pipe) + warp * 32 * DROW;
    for (int chunk = warp; chunk < BM * BN / 32; chunk += THREADS / 32) {
        const int r = chunk * 32 / BN, c0 = chunk * 32 - r * BN;
        long long acc_l[NOUT][LACC];
#pragma unroll
        for (int o = 0; o < NOUT; ++o) {
            double S[CRT_LD];
            crt_sum_mma(res, o, r, c0, lane, bfrag, scratch, S);
#pragma unroll
            for (int l = 0; l < LACC; ++l) acc_l[o][l] = 0;
            crt_lift<CRT_LD>(S, acc_l[o], 0);
        }
        write_output(r, c0 + lane, acc_l);
    }
#else
    // A thread lifts CRT_U outputs at once (v0 + u THREADS), so that each CRT
    // constant is read once for all of them: the constants do not fit the
    // uniform registers, and their loads were as many as the FMAs.
    __syncthreads();
    for (int v0 = threadIdx.x; v0 < BM * BN; v0 += CRT_U * THREADS) {
        int r[CRT_U], c[CRT_U];
#pragma unroll
        for (int u = 0; u < CRT_U; ++u) {
            r[u] = (v0 + u * THREADS) / BN;
            c[u] = v0 + u * THREADS - r[u] * BN;
        }
        if (CRT_U == 1 && (r[0] >= m_left || c[0] >= n_left)) continue;     // (several: each checked at its write)
        long long acc_l[CRT_U][NOUT][LACC];
#pragma unroll
        for (int u = 0; u < CRT_U; ++u)
#pragma unroll
            for (int o = 0; o < NOUT; ++o)
#pragma unroll
                for (int l = 0; l < LACC; ++l) acc_l[u][o][l] = 0;
#pragma unroll
        for (int pair = 0; pair < NPAIRS; ++pair) {
#pragma unroll
            for (int o = 0; o < NOUT; ++o) {
                double S[CRT_U][LP];
#pragma unroll
                for (int u = 0; u < CRT_U; ++u)
#pragma unroll
                    for (int l = 0; l < LP; ++l) S[u][l] = 0.0;
#pragma unroll
                for (int i = 0; i < NMOD; ++i) {
                    double x[CRT_U];
#pragma unroll
                    for (int u = 0; u < CRT_U; ++u) x[u] = exact_double(RES_AT((pair * NMOD + i) * NOUT + o)[r[u] * RES_ROW + c[u]]);
#pragma unroll
                    for (int l = 0; l < LP; ++l) {
                        const double c_il = CRT_C[i][l];
#pragma unroll
                        for (int u = 0; u < CRT_U; ++u) S[u][l] = fma(x[u], c_il, S[u][l]);
                    }
                }
#pragma unroll
                for (int u = 0; u < CRT_U; ++u)
#if NPAIRS == 1
                    crt_lift(S[u], acc_l[u][o], 0);
#else
                    crt_lift(S[u], acc_l[u][o], shifts[pair]);
#endif
            }
        }
#pragma unroll
        for (int u = 0; u < CRT_U; ++u) write_output(r[u], c[u], acc_l[u]);
    }
#endif
#endif
}
