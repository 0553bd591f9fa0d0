"""The moduli's constants as C source for the kernels (kernels/*.cu): compile-time
tables written as exact hexadecimal literals; and the residue GEMM's run-time table
(residue_gemm_table).  Plain text and no CuPy, so that the
host builds of the kernels in tests/ read the very tables the GPU's compiles read."""

import functools

import numpy as np

from ..crt import crt_constants
from ..crt import moduli as _moduli


def doubles(values):
    """A C initializer of doubles as exact hexadecimal literals."""
    return "{" + ", ".join(float(v).hex() for v in values) + "}"


def array(name, values):
    """A __constant__ double array definition (float(v).hex() literals)."""
    return f"__constant__ double {name} = {doubles(values)};\n"


@functools.lru_cache(maxsize=None)
def constant_tables(m, crt=False):
    """The moduli's constants as compile-time tables, so the kernels' fully
    unrolled loops read them as constant-bank operands instead of loads:
    MOD_P, MOD_INV (1/p rounded), MOD_ROW[i] (p_i, 1/p_i, 2**(26 j) mod p_i for j = 1..4), and
    with ``crt`` the CRT limbs CRT_C[i][l], CRT_P[l], CRT_INV_P and P's bits (CRT_P_BITS), and
    MOD_INT[i], residue_gemm_table's row of p_i as unsigned ints (the fused kernel's reduction
    on the integer pipes, FUSED_INT_MOD)."""
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
    return src


def residue_gemm_table(moduli):
    """int32 (len(moduli), 3): per modulus -p, m = floor(2**32 / p) and c = ceil(2**31 / p) p
    + floor(p / 2), the last two as the bits of uint32 (kernels/modular_int.cuh's
    mod_symmetric_int, which the residue GEMM's INTEGER_MOD epilogue runs)."""
    ps = [int(p) for p in moduli]
    if any(not 2 <= p <= 256 for p in ps):
        raise ValueError(f"the residue GEMM's integer reduction takes moduli 2..256, not {ps}")
    rows = [((1 << 32) - p, (1 << 32) // p, -(-(1 << 31) // p) * p + p // 2) for p in ps]
    return np.array(rows, dtype=np.uint32).view(np.int32).reshape(len(ps), 3)
