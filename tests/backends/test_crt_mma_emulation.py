"""The CRT sum on the tensor cores (crt_mma.cuh: fused.cu's and epilogue.cu's CRT_MMA) emulated byte
for byte for one warp, on the host: the residue tiles' bytes with RES_SKEW, each lane's word loads,
__byte_perm's transpose, mma.sync m16n8k16 / m16n8k32 .s8 with the fragment layouts coded from the
PTX ISA (independent of kernel_tables' encoder), the digit sums' scratch, the int32 folds and
crt_lift with correctly rounded FMAs; every output of the row must lift to its integer CRT value.
The epilogue's form reads the residues from strided stacks in memory and combines a complex
product's three (its test caught a wrong sign of the combination and a wrong lane grouping, each
planted). (Written by a review of the kernel; it caught a wrong byte-permute selector, swapped k32 A
registers, a wrong scratch row and a wrong fold weight, each planted.)"""

import math
import random
from fractions import Fraction

import pytest

from ozaki import crt
from ozaki.backends import kernel_tables as kt
from tests import inputs

MAGIC = 6755399441055744.0


def _rf(x):
    x = Fraction(x)
    return x.numerator / x.denominator   # int/int true division: correctly rounded in CPython
def fma(a, b, c):
    return _rf(Fraction(a) * Fraction(b) + Fraction(c))

def byte_perm(x, y, s):
    b = list(x.to_bytes(4, 'little')) + list(y.to_bytes(4, 'little'))
    return int.from_bytes(bytes(b[(s >> (4 * n)) & 7] for n in range(4)), 'little')

def kernel_selectors():
    """The selectors of fused.cu's transpose_bytes, in the order it uses them (t0, t1, t2, t3,
    w0, w1, w2, w3), read from the kernel's source so that the emulation runs the kernel's own."""
    import os
    import re
    path = os.path.join(os.path.dirname(kt.__file__), "kernels", "crt_mma.cuh")
    text = open(path).read()
    body = text[text.index("void transpose_bytes"):]
    body = body[:body.index("}")]
    return [int(v, 16) for v in re.findall(r"__byte_perm\([^)]*?(0x[0-9a-fA-F]+)\)", body)]


SELECTORS = kernel_selectors()


def transpose(w):
    s = SELECTORS
    assert len(s) == 8
    t0, t1 = byte_perm(w[0], w[1], s[0]), byte_perm(w[2], w[3], s[1])
    t2, t3 = byte_perm(w[0], w[1], s[2]), byte_perm(w[2], w[3], s[3])
    return [byte_perm(t0, t1, s[4]), byte_perm(t0, t1, s[5]), byte_perm(t2, t3, s[6]), byte_perm(t2, t3, s[7])]


def s8(b): return b - 256 if b > 127 else b
def sbytes(w): return [s8(v) for v in w.to_bytes(4, 'little')]

def mma(km, A_frag, B_frag, C_frag=None):
    """PTX mma.m16n8k{16,32}.row.col.s32.s8.s8.s32, per-lane fragments -> per-lane D (4 ints)."""
    A = [[None] * km for _ in range(16)]
    B = [[None] * 8 for _ in range(km)]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        elems = [e for w in A_frag[lane] for e in sbytes(w)]          # a0..a(n)
        for i, v in enumerate(elems):
            if km == 16:   # a0..a7: row g for i<4 else g+8; col 4t+(i&3)
                row = g if i < 4 else g + 8; col = 4 * t + (i & 3)
            else:          # a0..a15: row g for i<4 or 8<=i<12, else g+8; col 4t+(i&3) (+16 for i>=8)
                row = g if (i < 4 or 8 <= i < 12) else g + 8
                col = 4 * t + (i & 3) + (16 if i >= 8 else 0)
            assert A[row][col] is None; A[row][col] = v
        belems = [e for w in B_frag[lane] for e in sbytes(w)]
        for i, v in enumerate(belems):
            row = 4 * t + (i & 3) + (16 if i >= 4 else 0); col = g
            assert B[row][col] is None; B[row][col] = v
    assert all(v is not None for r in A for v in r) and all(v is not None for r in B for v in r)
    D = [[sum(A[i][k] * B[k][j] for k in range(km)) for j in range(8)] for i in range(16)]
    out = []
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        out.append([D[g][2 * t], D[g][2 * t + 1], D[g + 8][2 * t], D[g + 8][2 * t + 1]])
    return out

def int32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v

def digit_tables(m):
    """(KM, ND, LD, fragments) of the kernel's CRT digit tables for m moduli."""
    src = kt.crt_digit_source(m)
    KM = int(src.split('#define CRT_KM ')[1].split()[0]); ND = int(src.split('#define CRT_ND ')[1].split()[0])
    LD = int(src.split('#define CRT_LD ')[1].split()[0])
    return KM, ND, LD, kt.crt_digit_fragments(m)


def residue_fragments(m, word):
    """crt_mma.cuh residue_fragments for the 32 lanes: word(lane, i) is the lane's word of modulus i."""
    KM = digit_tables(m)[0]
    X = []
    for lane in range(32):
        t = lane & 3
        xs = []
        for kr in range(KM // 16):
            xs.append(transpose([word(lane, min(16 * kr + 4 * t + j, m - 1)) for j in range(4)]))
        X.append(xs)
    return X


def digit_products(m, X, C=None):
    """crt_mma.cuh digit_products: per lane d[tt][nt] (4 ints each) = the fragments times the digits,
    plus C (the same shape) where given."""
    KM, ND, _, F = digit_tables(m)
    d = [[[None] * (ND // 8) for _ in range(2)] for _ in range(32)]
    for tt in range(2):
        for nt in range(ND // 8):
            if KM == 16:
                Af = [[X[l][0][2 * tt], X[l][0][2 * tt + 1]] for l in range(32)]
                Bf = [[int(F[nt, 0, l])] for l in range(32)]
            else:
                Af = [[X[l][0][2 * tt], X[l][0][2 * tt + 1], X[l][1][2 * tt], X[l][1][2 * tt + 1]] for l in range(32)]
                Bf = [[int(F[nt, 0, l]), int(F[nt, 1, l])] for l in range(32)]
            D = mma(KM, Af, Bf)
            for lane in range(32):
                d[lane][tt][nt] = [v + (C[lane][tt][nt][e] if C else 0) for e, v in enumerate(D[lane])]
    return d


def fold_and_lift(m, d, limit=2 ** 19):
    """crt_mma.cuh fold_digit_sums (the scratch rows, each value written once) and kulisch.cuh
    crt_lift<LD>: per lane the lifted integer."""
    _, ND, LD, _ = digit_tables(m)
    k = crt.crt_constants(m); LP = k.L
    DROW = ND + 2
    scratch = [None] * (32 * DROW)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for tt in range(2):
            for nt in range(ND // 8):
                row = (4 * g + 2 * tt) * DROW + 8 * nt + 2 * t
                for e, off in ((0, 0), (1, 1), (2, DROW), (3, DROW + 1)):
                    assert scratch[row + off] is None
                    scratch[row + off] = d[lane][tt][nt][e]
                    assert abs(d[lane][tt][nt][e]) <= limit
    results = []
    for lane in range(32):
        mine = lane * DROW
        S = []
        for l in range(LP):
            if l < LD:
                lo = [scratch[mine + 4 * l], scratch[mine + 4 * l + 1]]
                hi = [scratch[mine + 4 * l + 2], scratch[mine + 4 * l + 3]]
                lo_i = lo[0] + 256 * lo[1]; hi_i = hi[0] + 256 * hi[1]
                assert int32(lo_i) == lo_i and int32(hi_i) == hi_i
                S.append(fma(float(hi_i), 65536.0, float(lo_i)))
                assert S[-1] == hi_i * 65536 + lo_i
            else:
                S.append(0.0)
        # crt_lift<LD>
        Sf = 0.0
        for l in range(LD):
            Sf = fma(S[l], 2.0 ** (32 * l), Sf)
        INV_P = 1.0 / k.P_float
        q = fma(Sf, INV_P, MAGIC) - MAGIC
        acc = []
        for l in range(LP):
            Pl = float(k.P_limbs[l])
            v = fma(-q, Pl, S[l]) if l < LD else -q * Pl
            assert v == S[l] - int(q) * int(k.P_limbs[l]) and abs(v) < 2 ** 51
            acc.append(int(v))
        results.append(sum(a << (32 * l) for l, a in enumerate(acc)))
    return results


def warp_crt(m, nout, tile, values, r, c0, o):
    """fused.cu's crt_sum_mma: values[o][c] the integer CRT values of outputs (row r, col c),
    their residues in the block's residue tiles (RES_SKEW apart).  Returns per-lane lifted ints."""
    BM, BN = tile
    RES_ROW = BN + 4; RES_TILE = BM * RES_ROW; SKEW = 8 // nout
    ps = crt.moduli(m)
    ntiles = m * nout
    smem = bytearray(ntiles * (RES_TILE + SKEW))
    def RES_AT(t): return t * (RES_TILE + SKEW)
    for i, p in enumerate(ps):
        for oo in range(nout):
            for c in range(BN):
                v = values[oo][c]
                smem[RES_AT(i * nout + oo) + r * RES_ROW + c] = int(inputs.symmetric_residues(v, int(p))) & 0xFF

    def word(lane, i):
        addr = RES_AT(i * nout + o) + r * RES_ROW + c0 + 4 * (lane >> 2)
        assert addr % 4 == 0
        return int.from_bytes(smem[addr:addr + 4], 'little')
    return fold_and_lift(m, digit_products(m, residue_fragments(m, word)))


def epilogue_warp(m, stacks, r, c0, row_stride, mod_stride):
    """epilogue.cu's CRT_MMA loop body for one warp: ``stacks`` the flat int8 residue stacks (one
    real, or the Karatsuba P1, P2, P3) at these strides; the lane's four outputs from r row_stride
    + c0 + 4 gid, modulus i mod_stride on.  Returns per output part the per-lane lifted ints."""
    def words(stack):
        def word(lane, i):
            at = r * row_stride + c0 + 4 * (lane >> 2) + i * mod_stride
            assert at % 4 == 0
            return int.from_bytes(bytes(stack[at:at + 4]), 'little')
        return word
    if len(stacks) == 1:
        return [fold_and_lift(m, digit_products(m, residue_fragments(m, words(stacks[0]))))]
    d1 = digit_products(m, residue_fragments(m, words(stacks[0])))
    d2 = digit_products(m, residue_fragments(m, words(stacks[1])))
    re = [[[[a - b for a, b in zip(x, y)] for x, y in zip(X, Y)] for X, Y in zip(L1, L2)] for L1, L2 in zip(d1, d2)]
    neg = [[[[-(a + b) for a, b in zip(x, y)] for x, y in zip(X, Y)] for X, Y in zip(L1, L2)] for L1, L2 in zip(d1, d2)]
    im = digit_products(m, residue_fragments(m, words(stacks[2])), C=neg)
    return [fold_and_lift(m, re, 2 ** 20), fold_and_lift(m, im, 3 * 2 ** 19)]


def bound(m):
    P = math.prod(int(p) for p in crt.moduli(m))
    return (P * 2 ** 19 - P) // 2 ** 20


@pytest.mark.parametrize("m", [1, 2, 8, 13, 16, 17, 24, 25, 32])
@pytest.mark.parametrize("nout", [1, 2])
@pytest.mark.parametrize("tile", [(32, 32), (64, 64)])
def test_warp_lifts_every_output(m, nout, tile):
    rng = random.Random(1000 * m + 10 * nout + tile[0])
    b = bound(m)
    bm, bn = tile
    vals = [[rng.choice([b, -b, 0, 1, -1, rng.randint(-b, b), rng.randint(-b, b) >> rng.randrange(b.bit_length() + 1)])
             for _ in range(bn)] for _ in range(nout)]
    r, c0 = rng.randrange(bm), 32 * rng.randrange(bn // 32)
    for o in range(nout):
        assert warp_crt(m, nout, tile, vals, r, c0, o) == vals[o][c0:c0 + 32]


@pytest.mark.parametrize("m", [1, 2, 13, 16, 17, 25, 32])
@pytest.mark.parametrize("complex_", [False, True])
def test_epilogue_warp_lifts_every_output(m, complex_):
    """epilogue.cu's CRT_MMA from memory: residue stacks (m, rows, cols) at a padded row stride and
    modulus stride, one warp's 32 columns of a row lifted to their integer values; complex: the
    Karatsuba three's digit sums combined (Re = P1 - P2, Im = P3's products from -(P1 + P2))."""
    import numpy as np
    rng = random.Random(100 * m + complex_)
    b = bound(m)
    rows, cols, pad = 3, 64, 8
    row_stride = cols + pad
    mod_stride = rows * row_stride + 4
    ps = np.array([int(p) for p in crt.moduli(m)])[:, None]

    def draw():
        return [rng.choice([b, -b, 0, 1, -1, rng.randint(-b, b), rng.randint(-b, b) >> rng.randrange(b.bit_length() + 1)])
                for _ in range(rows * cols)]

    def stack(residues):                                   # (m, rows * cols) -> flat int8 bytes, padding 0x55
        flat = np.full(m * mod_stride, 0x55, dtype=np.uint8)
        for i in range(m):
            for rr in range(rows):
                flat[i * mod_stride + rr * row_stride:i * mod_stride + rr * row_stride + cols] = \
                    np.array(residues[i][rr * cols:(rr + 1) * cols], dtype=np.int64).astype(np.int8).view(np.uint8)
        return flat

    parts = [draw() for _ in range(2 if complex_ else 1)]
    if complex_:
        P1 = inputs.symmetric_residues(np.array([[rng.randint(-128, 127) for _ in range(rows * cols)] for _ in range(m)],
                                                dtype=object), ps)
        P2 = inputs.symmetric_residues(P1 - np.array(parts[0], dtype=object)[None, :], ps)
        P3 = inputs.symmetric_residues(np.array(parts[1], dtype=object)[None, :] + P1 + P2, ps)
        stacks = [stack(P.tolist()) for P in (P1, P2, P3)]
    else:
        stacks = [stack(inputs.symmetric_residues(np.array(parts[0], dtype=object)[None, :], ps).tolist())]
    for r in range(rows):
        for c0 in (0, 32):
            got = epilogue_warp(m, stacks, r, c0, row_stride, mod_stride)
            for o, values in enumerate(parts):
                assert got[o] == values[r * cols + c0:r * cols + c0 + 32], (o, r, c0)
