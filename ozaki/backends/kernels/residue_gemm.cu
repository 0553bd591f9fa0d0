// The residue GEMM: every modulus' int8 product in one CUTLASS launch (Hopper wgmma mainloop,
// TMA loads, warp-specialized), with an epilogue that reduces each int32 accumulator modulo its
// modulus and stores the symmetric residue as int8.
//
// Why: the cuBLAS path writes every modulus' int32 products to memory and the CRT epilogue reads
// them back; a stage of the FFT moved ~900 bytes per point per axis that way, two thirds of it
// that round trip (run 2534520).  The residue is all the CRT needs, and it fits a byte, so the
// GEMM's output traffic and the epilogue's input traffic drop 4x.  The mainloop is CUTLASS's own
// (one GEMM mainloop, the modular reduction a swappable epilogue node: CUTLASS's epilogue visitor
// tree), so this runs at the library's int8 rate.
//
// Layout (the residue stacks of cupy_backend.gemm): A (L, M, K) and B^T (L, N, K), K contiguous,
// rows lda/ldb bytes apart and planes batch_a/batch_b bytes apart; D (L, M, N) int8, row stride
// ldd (a multiple of 16: TMA stores need 16-byte aligned strides).  Batch l uses modulus
// moduli[l] (and inverses[l] = 1/moduli[l], rounded), float64; with INTEGER_MOD, ``moduli`` is
// an int32 table (L, 3) instead, row l: -p, m and c of modular_int.cuh's mod_symmetric_int, and
// ``inverses`` is not read.  K * 128 * 128 < 2**31 keeps the int32 accumulators exact
// (K <= 131071; |acc| <= K 2**14 <= 2**31 - 2**14, mod_symmetric_int's range).
//
// Built by ozaki/backends/native.py with nvcc (-arch=sm_90a) into a shared library, loaded with
// ctypes: CUTLASS's TMA descriptors are made on the host, which NVRTC's device-only code cannot.

#include <cstdint>
#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"

#include "modular.cuh"
#include "modular_int.cuh"

using namespace cute;

// The tile: 256 x 128 outputs on two cooperative consumer warpgroups, 128 inner bytes a
// stage.  The fastest of three builds measured on the H200 (run 3ca144a: against 128 x 128
// cooperative and 128 x 128 ping-pong) on every shape tried, square and FFT stages alike,
// when the FFT's products ran at K = 1024 and the epilogue reduced on the FP64 pipe.
// PINGPONG 1: two consumer warpgroups on tiles of their own, one's epilogue beside the
// other's mainloop (the quarter turns' K = 256 leaves a tile's mainloop as short as its
// epilogue).  native.RESIDUE_GEMM_TILES names the builds (OZAKI_RESIDUE_GEMM_TILE picks one).
#ifndef TILE_M
#define TILE_M 256
#endif
#ifndef TILE_N
#define TILE_N 128
#endif
#ifndef TILE_K
#define TILE_K 128
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
// How the persistent CTAs walk the tiles (native.RESIDUE_GEMM_TILES' "-swizzle8" and "-cluster2"
// builds, for the big squares, not yet measured).  CUTLASS's scheduler, unswizzled, takes the
// tiles of a 16384^2 product down whole columns of 64 tiles (raster along M where there are more
// tile columns than rows): a wave of 132 CTAs then streams all of A's 268 MB from memory, about 5
// ms a modulus at 3.35 TB/s against 6.4 of int8 work, where the residue GEMM ran 1.10 POPS to
// cuBLAS's 1.37 (134 against 110 ms at 16 moduli).  SWIZZLE s: strips s tiles wide, so a wave
// reuses s B panels and a few A panels through L2.  CLUSTER_M 2: two CTAs along M share each B
// tile by TMA multicast.  The products' bits are the same whatever the order.
#ifndef SWIZZLE
#define SWIZZLE 1
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif

namespace ozaki {

// r = x mod p in the residues' symmetric range [-h, p - 1 - h], h = floor(p / 2) ([-128, 127] for
// 256, [-(p-1)/2, (p-1)/2] for odd p), so every r fits int8: modular.cuh's mod_symmetric on the
// FP64 pipe, the accumulator (|x| < 2**31) exact in float64, p and 1/p per batch from the tree.
// INTEGER_MOD 1: the same residue on the integer pipes (modular_int.cuh's mod_symmetric_int:
// a multiply-high and five simple operations), without the int32 -> float64 -> int8
// conversions, which run at 16 a clock an SM on Hopper: the float64 build's epilogue issues
// two of them and about seven FP64 operations an accumulator, 128 accumulators a thread a
// tile, about as many cycles as a 256 x 128 tile's mainloop at K = 256 (the FFT's quarter
// products).  fftn 1024^3 808.7 -> 745.7 ms with it (H100, run 4e93d24, the same bits).
#ifndef INTEGER_MOD
#define INTEGER_MOD 0
#endif

template <class T>
struct SymmetricMod;

template <int N>
struct SymmetricMod<cutlass::Array<double, N>> {
    CUTLASS_DEVICE cutlass::Array<double, N>
    operator()(cutlass::Array<double, N> const& x, cutlass::Array<double, N> const& p,
               cutlass::Array<double, N> const& invp) const {
        cutlass::Array<double, N> r;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) r[i] = mod_symmetric(x[i], p[i], invp[i], floor(0.5 * p[i]));
        return r;
    }
};

template <int N>
struct SymmetricMod<cutlass::Array<int32_t, N>> {
    CUTLASS_DEVICE cutlass::Array<int32_t, N>
    operator()(cutlass::Array<int32_t, N> const& x, cutlass::Array<int32_t, N> const& p,
               cutlass::Array<int32_t, N> const& m, cutlass::Array<int32_t, N> const& c) const {   // p: -p
        cutlass::Array<int32_t, N> r;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) r[i] = mod_symmetric_int(x[i], p[i], (unsigned)m[i], (unsigned)c[i]);
        return r;
    }
};

using TileShape = Shape<Int<TILE_M>, Int<TILE_N>, Int<TILE_K>>;
using ClusterShape = Shape<Int<CLUSTER_M>, _1, _1>;
using LayoutA = cutlass::layout::RowMajor;       // (M, K), K contiguous
using LayoutB = cutlass::layout::ColumnMajor;    // (K, N) stored as B^T (N, K), K contiguous
using LayoutD = cutlass::layout::RowMajor;       // (M, N)
constexpr int kAlign = 16;                       // int8 elements per 16 bytes
#if PINGPONG
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#else
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#endif

#if INTEGER_MOD
// D = SymmetricMod(acc, -p[l], m[l], c[l]): the accumulator and three per-batch int32 scalars,
// a table row (stride 3 along L) each.
using PerBatch = cutlass::epilogue::fusion::Sm90ScalarBroadcast<int32_t, Stride<_0, _0, int64_t>>;
using Residue = cutlass::epilogue::fusion::Sm90EVT<
    cutlass::epilogue::fusion::Sm90Compute<SymmetricMod, int8_t, int32_t, cutlass::FloatRoundStyle::round_to_nearest>,
    cutlass::epilogue::fusion::Sm90AccFetch, PerBatch, PerBatch, PerBatch>;
#else
// D = SymmetricMod(acc, p[l], 1/p[l]): the accumulator and two per-batch scalars (stride 1 along L).
using PerBatch = cutlass::epilogue::fusion::Sm90ScalarBroadcast<double, Stride<_0, _0, int64_t>>;
using Residue = cutlass::epilogue::fusion::Sm90EVT<
    cutlass::epilogue::fusion::Sm90Compute<SymmetricMod, int8_t, double, cutlass::FloatRoundStyle::round_to_nearest>,
    cutlass::epilogue::fusion::Sm90AccFetch, PerBatch, PerBatch>;
#endif

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, int32_t, double,
    void, LayoutD, kAlign, int8_t, LayoutD, kAlign,
    EpilogueSchedule, Residue>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, int8_t, LayoutA, kAlign, int8_t, LayoutB, kAlign,
    int32_t, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

}  // namespace ozaki

// Returns 0 on success, else a cutlass::Status (>= 1) or 1000 + a cudaError_t.
extern "C" int ozaki_residue_gemm(const int8_t* A, long long lda, long long batch_a,
                                  const int8_t* B, long long ldb, long long batch_b,
                                  int8_t* D, long long ldd, long long batch_d,
                                  const void* moduli, const void* inverses, int M, int N, int K, int L,
                                  void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    using namespace ozaki;
    typename Kernel::StrideA sa = make_stride(static_cast<int64_t>(lda), _1{}, static_cast<int64_t>(batch_a));
    typename Kernel::StrideB sb = make_stride(static_cast<int64_t>(ldb), _1{}, static_cast<int64_t>(batch_b));
    typename Kernel::StrideD sd = make_stride(static_cast<int64_t>(ldd), _1{}, static_cast<int64_t>(batch_d));
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {M, N, K, L},
        {A, sa, B, sb},
        {{}, nullptr, sd, D, sd}};
#if INTEGER_MOD
    // The visitor tree's arguments: {accumulator fetch, -p, m and c per batch (columns of the
    // table), the reduction}.
    auto per_batch = make_stride(_0{}, _0{}, int64_t(3));
    const int32_t* table = static_cast<const int32_t*>(moduli);
    args.epilogue.thread = {{}, {{0}, {table}, {per_batch}}, {{0}, {table + 1}, {per_batch}},
                            {{0}, {table + 2}, {per_batch}}, {}};
#else
    // The visitor tree's arguments: {accumulator fetch, p per batch, 1/p per batch, the reduction}.
    auto per_batch = make_stride(_0{}, _0{}, int64_t(1));
    args.epilogue.thread = {{}, {{0.0}, {static_cast<const double*>(moduli)}, {per_batch}},
                            {{0.0}, {static_cast<const double*>(inverses)}, {per_batch}}, {}};
#endif
    args.scheduler.max_swizzle_size = SWIZZLE;
    Gemm gemm;
    cutlass::Status status = gemm.can_implement(args);
    if (status != cutlass::Status::kSuccess) return static_cast<int>(status);
    if (Gemm::get_workspace_size(args) > workspace_bytes) return 2000;
    status = gemm.initialize(args, workspace, stream);
    if (status != cutlass::Status::kSuccess) return static_cast<int>(status);
    status = gemm.run(stream);
    if (status != cutlass::Status::kSuccess) return static_cast<int>(status);
    cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : 1000 + static_cast<int>(err);
}

extern "C" size_t ozaki_residue_gemm_workspace(int M, int N, int K, int L) {
    using namespace ozaki;
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K, L}, {}, {}};
    return Gemm::get_workspace_size(args);
}
