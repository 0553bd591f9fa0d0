"""The moduli's constants as C source for the kernels (kernels/*.cu): compile-time
tables written as exact hexadecimal literals; and the residue GEMM's run-time table
(residue_gemm_table).  Plain text and no CuPy, so that the
host builds of the kernels in tests/ read the very tables the GPU's compiles read."""

import functools

import numpy as np

from ..crt import crt_constants, kulisch
from ..crt import moduli as _moduli


# The fused kernel's tiles (BM, BN, WARPS_M, WARPS_N, BK, STAGES: compile-time defines of
# kernels/fused.cu), first choice first, for short and long inner dimensions: how
# cupy_backend picks among them, and the measurements behind them, are beside its copy.
FUSED_TILES = {"short": ((32, 32, 2, 2, 64, 4),),
               "long": ((128, 64, 4, 2, 128, 2), (64, 64, 2, 2, 64, 3), (32, 32, 2, 2, 64, 4))}


def doubles(values):
    """A C initializer of doubles as exact hexadecimal literals."""
    return "{" + ", ".join(float(v).hex() for v in values) + "}"


def array(name, values):
    """A __constant__ double array definition (float(v).hex() literals)."""
    return f"__constant__ double {name} = {doubles(values)};\n"


@functools.lru_cache(maxsize=None)
def constant_tables(m, crt=False, digits=False):
    """The moduli's constants as compile-time tables, so the kernels' fully
    unrolled loops read them as constant-bank operands instead of loads:
    MOD_P, MOD_INV (1/p rounded), MOD_ROW[i] (p_i, 1/p_i, 2**(26 j) mod p_i for j = 1..4), and
    with ``crt`` the CRT limbs CRT_C[i][l], CRT_P[l], CRT_INV_P and P's bits (CRT_P_BITS), and
    MOD_INT[i], residue_gemm_table's row of p_i as unsigned ints (the fused kernel's reduction
    on the integer pipes, FUSED_INT_MOD); with ``digits`` also the CRT constants' balanced
    base-256 digits as the tensor cores' B fragments (crt_digit_source: the fused kernel's
    CRT_MMA)."""
    ps = _moduli(m)
    src = (array("MOD_P[]", ps) + array("MOD_INV[]", [1.0 / p for p in ps])
           + f"__constant__ double MOD_ROW[{m}][8] = "
           + "{" + ", ".join(doubles([p, 1.0 / p] + [pow(2, 26 * j, p) for j in range(1, 5)] + [0, 0])
                             for p in ps) + "};\n")
    if crt:
        k = crt_constants(m)
        src += (f"__constant__ double CRT_C[{m}][{k.L}] = {{{', '.join(doubles(row) for row in k.c_limbs)}}};\n"
                + array("CRT_P[]", k.P_limbs)
                + f"#define CRT_INV_P {(1.0 / k.P_float).hex()}\n"
                + f"#define CRT_P_BITS {k.P.bit_length()}\n"
                + f"__constant__ unsigned MOD_INT[{m}][3] = "
                + "{" + ", ".join("{" + ", ".join(f"{v}u" for v in row) + "}"
                                  for row in residue_gemm_table(ps).view(np.uint32).tolist()) + "};\n")
    if digits:
        src += crt_digit_source(m)
    return src


# The fused kernel's CRT sum on the tensor cores (fused.cu CRT_MMA) takes the moduli as the
# inner dimension of one m16n8k16 or m16n8k32 product.
CRT_DIGITS_MAX_MODULI = 32


@functools.lru_cache(maxsize=None)
def crt_digits(m):
    """int64 (m, nd): the CRT constants c_i as balanced base-256 digits, c_i' = sum_d D[i, d]
    256**d with D in [-128, 127] and c_i' = c_i or c_i - P, whichever has |c_i'| <= P / 2:
    the same residue mod P, so S' = sum_i r_i c_i' lifts to the same value as S, and every
    digit sum sum_i r_i D[i, d] of int8 residues is exact in int32 (|.| <= 32 * 128**2)."""
    k = crt_constants(m)
    cs = [kulisch.to_int(row) for row in k.c_limbs]
    signed = [c if 2 * c <= k.P else c - k.P for c in cs]
    rows = []
    for c in signed:
        row = []
        while c:
            d = (c + 128) % 256 - 128
            row.append(d)
            c = (c - d) // 256
        rows.append(row)
    nd = max(len(row) for row in rows)
    return np.array([row + [0] * (nd - len(row)) for row in rows], dtype=np.int64)


@functools.lru_cache(maxsize=None)
def crt_sum_fits(tile, m):
    """Whether fused.cu's CRT sum on the tensor cores (its CRT_ON_TENSOR_CORES gate) takes this
    tile (BM, BN, WARPS_M, WARPS_N, BK, STAGES) at m moduli and one slice pair: rows of 32
    outputs, and each warp's 32 rows of CRT_ND + 2 int32 digit sums within the pipeline
    buffers (STAGES x (BM + BN) rows of BK + 16 bytes); elsewhere the kernel keeps the float64
    sums (tests/backends/test_fused_builds.py holds this to the preprocessed gate)."""
    bm, bn, wm, wn, bk, stages = tile
    if not 1 <= m <= CRT_DIGITS_MAX_MODULI or bn % 32:
        return False
    nd = 8 * -(-crt_digits(m).shape[1] // 8)
    return wm * wn * 32 * (nd + 2) * 4 <= stages * (bm + bn) * (bk + 16)


def crt_digit_fragments(m):
    """uint32 (nd8 / 8, km / 16, 32): lane l's B fragment of the digit matrix (moduli x digits,
    zero-padded to km = 16 or 32 moduli and nd8, a multiple of 8, digits) for each n8 tile and
    16 moduli, as PTX's m16n8k16 / m16n8k32 .s8 layouts place it: byte j of the word is
    D[16 kr + 4 (l % 4) + j, 8 nt + l // 4]."""
    if not 1 <= m <= CRT_DIGITS_MAX_MODULI:
        raise ValueError(f"the CRT sum on the tensor cores takes 1 to {CRT_DIGITS_MAX_MODULI} moduli, not {m}")
    D = crt_digits(m)
    km, nd8 = (16 if m <= 16 else 32), -(-D.shape[1] // 8) * 8
    padded = np.zeros((km, nd8), dtype=np.int64)
    padded[:m, :D.shape[1]] = D
    lane = np.arange(32)
    gid, tig = lane // 4, lane % 4
    frags = np.zeros((nd8 // 8, km // 16, 32), dtype=np.uint32)
    for nt in range(nd8 // 8):
        for kr in range(km // 16):
            for j in range(4):
                byte = padded[16 * kr + 4 * tig + j, 8 * nt + gid] & 0xFF
                frags[nt, kr] |= (byte << (8 * j)).astype(np.uint32)
    return frags


def crt_digit_source(m):
    """crt_digit_fragments as the kernel reads it: CRT_KM moduli and CRT_ND digits (padded),
    CRT_LD 32-bit limbs the digit sums fold into (4 digits a limb), CRT_BFRAG."""
    frags = crt_digit_fragments(m)
    nd = crt_digits(m).shape[1]
    ld = -(-nd // 4)
    if ld > crt_constants(m).L:
        raise ValueError(f"{m} moduli: {ld} limbs of digit sums exceed the CRT value's {crt_constants(m).L}")
    nt, kr, _ = frags.shape
    body = ", ".join("{" + ", ".join("{" + ", ".join(f"{v}u" for v in frags[a, b]) + "}" for b in range(kr)) + "}"
                     for a in range(nt))
    return (f"#define CRT_KM {16 * kr}\n#define CRT_ND {8 * nt}\n#define CRT_LD {ld}\n"
            f"__device__ const unsigned CRT_BFRAG[{nt}][{kr}][32] = {{{body}}};\n")


def residue_gemm_table(moduli):
    """int32 (len(moduli), 3): per modulus -p, m = floor(2**32 / p) and c = ceil(2**31 / p) p
    + floor(p / 2), the last two as the bits of uint32 (kernels/modular_int.cuh's
    mod_symmetric_int, which the residue GEMM's INTEGER_MOD epilogue runs)."""
    ps = [int(p) for p in moduli]
    if any(not 2 <= p <= 256 for p in ps):
        raise ValueError(f"the residue GEMM's integer reduction takes moduli 2..256, not {ps}")
    rows = [((1 << 32) - p, (1 << 32) // p, -(-(1 << 31) // p) * p + p // 2) for p in ps]
    return np.array(rows, dtype=np.uint32).view(np.int32).reshape(len(ps), 3)
