"""kernel_tables' CRT digits (the fused kernel's CRT sum on the tensor cores, fused.cu CRT_MMA),
checked against the CRT constants computed here from the moduli with Python's integers, PTX's
documented fragment layouts, and the kernel's integer arithmetic in exact integers (no GPU)."""

import math
import random
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ozaki import crt
from ozaki.backends import kernel_tables
from tests import inputs
from tests.backends import host_build

MODULI_COUNTS = list(range(1, kernel_tables.CRT_DIGITS_MAX_MODULI + 1))
MAGIC = 6755399441055744.0                 # 1.5 * 2**52, as modular.cuh


def crt_of(m):
    """P, the c_i and P's 32-bit limbs from the moduli alone (not crt_constants)."""
    ps = [int(p) for p in crt.moduli(m)]
    P = math.prod(ps)
    cs = [(P // p) * pow(P // p, -1, p) % P for p in ps]
    return ps, P, cs


def digit_value(row):
    return sum(int(d) * 256 ** i for i, d in enumerate(row))


@pytest.mark.parametrize("m", MODULI_COUNTS)
def test_digits_are_the_crt_constants(m):
    """Each row of digits is c_i or c_i - P, at most P / 2 in magnitude, in balanced base 256."""
    ps, P, cs = crt_of(m)
    D = kernel_tables.crt_digits(m)
    assert D.shape[0] == m
    assert D.min() >= -128 and D.max() <= 127
    for row, c in zip(D, cs):
        v = digit_value(row)
        assert (v - c) % P == 0 and 2 * abs(v) <= P
    # no digit column wasted: the top one holds a nonzero digit
    assert np.any(D[:, -1] != 0)


@pytest.mark.parametrize("m", MODULI_COUNTS)
def test_fragments_follow_ptx_layout(m):
    """B fragments of mma.m16n8k16 / m16n8k32 .s8 (PTX ISA, "Matrix fragments for mma.m16n8k16
    / k32", integer types): lane = 4 groupID + threadID_in_group; register b_r's byte i is
    B[row = 16 r + 4 threadID_in_group + i][col = groupID].  Decoded back into the digit matrix."""
    D = kernel_tables.crt_digits(m)
    F = kernel_tables.crt_digit_fragments(m)
    ntiles, kregs, lanes = F.shape
    assert lanes == 32 and kregs == (1 if m <= 16 else 2) and ntiles == -(-D.shape[1] // 8)
    B = np.full((16 * kregs, 8 * ntiles), 999, dtype=np.int64)
    for nt in range(ntiles):
        for r in range(kregs):
            for lane in range(32):
                group, thread = divmod(lane, 4)
                word = int(F[nt, r, lane])
                for i in range(4):
                    byte = (word >> (8 * i)) & 0xFF
                    B[16 * r + 4 * thread + i, 8 * nt + group] = byte - 256 if byte > 127 else byte
    want = np.zeros_like(B)
    want[:m, :D.shape[1]] = D
    assert np.array_equal(B, want)


def lifted(residues, m):
    """The fused kernel's CRT_MMA arithmetic on one output's int8 residues, exactly as the
    device runs it: the digit sums (int32), the limbs S_l folded in int32 and one float64
    FMA, crt_lift's Sf (exact products by powers of two, RN adds), q = RN(Sf / P + MAGIC) -
    MAGIC, and S_l - q P_l: the integer sum of those limbs, with the ranges each step needs."""
    D = kernel_tables.crt_digits(m)
    k = crt.crt_constants(m)
    ld = -(-D.shape[1] // 4)
    nd = 4 * ld
    sums = [sum(int(r) * int(D[i, d]) for i, r in enumerate(residues)) if d < D.shape[1] else 0
            for d in range(nd)]
    assert all(abs(s) <= 2 ** 19 for s in sums)                         # int32, with room
    S = []
    for l in range(ld):
        lo = sums[4 * l] + 256 * sums[4 * l + 1]
        hi = sums[4 * l + 2] + 256 * sums[4 * l + 3]
        assert abs(lo) < 2 ** 31 and abs(hi) < 2 ** 31                  # the int32 folds
        s = float(hi) * 65536.0 + float(lo)                              # exact: |s| < 2**44
        assert s == hi * 65536 + lo and abs(s) < 2 ** 44
        S.append(s)
    S += [0.0] * (k.L - ld)
    Sf = 0.0
    for l in range(ld):
        Sf = Sf + S[l] * 2.0 ** (32 * l)                                 # fma(S_l, 2**32l, Sf)
    t = Fraction(Sf) * Fraction(1.0 / k.P_float) + Fraction(MAGIC)      # fma(Sf, 1/P, MAGIC): rounds once
    q = float(round(t)) - MAGIC                                         # (ulp 1 there; ties to even)
    P = math.prod(int(p) for p in crt.moduli(m))
    total = 0
    for l in range(k.L):
        P_l = (P >> (32 * l)) & 0xFFFFFFFF
        v = S[l] - q * P_l                                               # fma(-q, P_l, S_l): exact
        assert v == S[l] - int(q) * P_l and abs(v) < 2 ** 51             # to_int64's range
        total += int(v) << (32 * l)
    return total


def residues_of(value, m):
    """The symmetric residues the fused kernel keeps (int8: 128 mod 256 is -128)."""
    return [int(r) for r in inputs.symmetric_residues(value, [int(p) for p in crt.moduli(m)])]


def plan_bound(m):
    """The largest integer within the plans' bound P/2 - P/2**20 on a CRT value."""
    P = math.prod(int(p) for p in crt.moduli(m))
    return (P * 2 ** 19 - P) // 2 ** 20


@pytest.mark.parametrize("m", MODULI_COUNTS)
def test_lift_of_the_digit_sums_is_exact(rng, m):
    """Values at the plans' bound P/2 - P/2**20 (both signs), near zero and spread between,
    come back exactly through the kernel's arithmetic."""
    bound = plan_bound(m)
    rnd = random.Random(int(rng.integers(2 ** 62)))
    values = [0, 1, -1, bound, -bound, bound - 1, -bound + 1, bound // 2, -(bound // 3)]
    values += [rnd.randint(-bound, bound) for _ in range(40)]
    for v in values:
        assert lifted(residues_of(v, m), m) == v, v


@settings(max_examples=300, deadline=None)
@given(st.integers(1, kernel_tables.CRT_DIGITS_MAX_MODULI), st.data())
def test_lift_property(m, data):
    bound = plan_bound(m)
    v = data.draw(st.integers(-bound, bound))
    assert lifted(residues_of(v, m), m) == v


def test_too_many_moduli_is_refused():
    with pytest.raises(ValueError, match="1 to 32 moduli"):
        kernel_tables.crt_digit_fragments(33)


@pytest.mark.parametrize("m", [1, 8, 16, 17, 25, 32])
def test_table_as_the_compiler_reads_it(tmp_path_factory, m):
    """crt_digit_source compiled by the host's C++ compiler prints the fragments back."""
    source = host_build.PRELUDE + kernel_tables.crt_digit_source(m) + r"""
int main() {
    printf("%d %d %d\n", CRT_KM, CRT_ND, CRT_LD);
    for (int a = 0; a < CRT_ND / 8; ++a)
        for (int b = 0; b < CRT_KM / 16; ++b)
            for (int l = 0; l < 32; ++l) printf("%u\n", CRT_BFRAG[a][b][l]);
}
"""
    exe = host_build.build(tmp_path_factory, source, f"crt_digits_{m}")
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split()
    F = kernel_tables.crt_digit_fragments(m)
    D = kernel_tables.crt_digits(m)
    assert [int(v) for v in out[:3]] == [16 * F.shape[1], 8 * F.shape[0], -(-D.shape[1] // 4)]
    assert [int(v) for v in out[3:]] == F.reshape(-1).tolist()
