"""kernels/modular_int.cuh's mod_symmetric_int (the residue GEMM's INTEGER_MOD epilogue) built for the
host with a C++ compiler, with kernel_tables.residue_gemm_table's constants, against Python's
exact integers: the symmetric residue of every accumulator the GEMM can give (|x| <= 2**31 -
2**14: K <= cupy_backend.K_CHUNK inner products of int8 residues), for every modulus of the
CRT table, 2 and 256.  Skipped when no C++ compiler is found."""

import subprocess

import numpy as np
import pytest

from ozaki import crt
from ozaki.backends.kernel_tables import residue_gemm_table
from tests.backends import host_build

SOURCE = host_build.PRELUDE + r"""
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
#include "modular_int.cuh"
int main() {
    int negp, x; unsigned m, c;
    while (std::scanf("%d %u %u %d", &negp, &m, &c, &x) == 4) std::printf("%d\n", mod_symmetric_int(x, negp, m, c));
    return 0;
}
"""

LIMIT = 2 ** 31 - 2 ** 14           # |K 2**14| for K < 2**17


def symmetric(x, p):
    r = x % p
    return r - p if r > p - 1 - p // 2 else r


def accumulators(rng, p):
    """The range's ends, the residues' boundaries near them and near zero (x = k p + h and its
    neighbours, where the quotient's correction flips), and random values."""
    h = p // 2
    edges = [-LIMIT, -LIMIT + 1, LIMIT - 1, LIMIT, 0, 1, -1, h, -h, p - 1 - h, p - h, -h - 1]
    for k in (-(LIMIT // p) - 1, -(LIMIT // p), -1, 0, 1, LIMIT // p - 1, LIMIT // p):
        edges += [k * p + d for d in (-h - 1, -h, -h + 1, h - 2, h - 1, h, h + 1, 0)]
    edges = [x for x in edges if abs(x) <= LIMIT]
    return edges + [int(v) for v in rng.integers(-LIMIT, LIMIT + 1, 300)]


def test_table_constants():
    """-p, floor(2**32 / p) and ceil(2**31 / p) p + floor(p / 2) as int32 / uint32 bits; moduli past
    2..256 refused (their residues do not fit int8)."""
    table = residue_gemm_table([2, 255, 256])
    assert table[:, 0].tolist() == [-2, -255, -256]
    assert table[:, 1:].view(np.uint32).tolist() == [[2 ** 31, 2 ** 31 + 1], [2 ** 32 // 255, 8421505 * 255 + 127],
                                                     [2 ** 24, 2 ** 31 + 128]]
    for bad in ([1], [257], [0, 7]):
        with pytest.raises(ValueError, match="2..256"):
            residue_gemm_table(bad)


def test_mod_symmetric_int_is_exact(tmp_path_factory, rng):
    exe = host_build.build(tmp_path_factory, SOURCE, "modular_int.cuh")
    moduli = sorted(set(crt.moduli(49)) | {2, 3, 128, 256})
    table = residue_gemm_table(moduli)
    lines, want = [], []
    for p, negp, (m, c) in zip(moduli, table[:, 0].tolist(), table[:, 1:].view(np.uint32).tolist()):
        for x in accumulators(rng, p):
            lines.append(f"{negp} {m} {c} {x}")
            want.append(symmetric(x, p))
    done = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    got = [int(v) for v in done.stdout.split()]
    assert len(got) == len(want)
    bad = [(line, g, w) for line, g, w in zip(lines, got, want) if g != w]
    assert not bad, bad[:5]


@pytest.mark.parametrize("m", [8, 16, 49])
def test_fused_kernels_table_is_the_residue_gemms(tmp_path_factory, m):
    """kernel_tables.constant_tables' MOD_INT (the fused kernel's FUSED_INT_MOD reduction), as
    the C compiler reads it, row for row residue_gemm_table's constants of the same moduli."""
    from ozaki.backends.kernel_tables import constant_tables
    source = host_build.PRELUDE + constant_tables(m, crt=True) + r"""
int main() {
    for (const auto& row : MOD_INT) std::printf("%d %u %u\n", (int)row[0], row[1], row[2]);
    return 0;
}
"""
    exe = host_build.build(tmp_path_factory, source, f"mod_int_table_{m}")
    got = [[int(v) for v in line.split()] for line in subprocess.run([exe], capture_output=True, text=True,
                                                                      check=True).stdout.splitlines()]
    table = residue_gemm_table(crt.moduli(m))
    assert got == [[negp, mm, c] for negp, (mm, c) in zip(table[:, 0].tolist(), table[:, 1:].view(np.uint32).tolist())]
