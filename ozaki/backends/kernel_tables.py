"""The moduli's constants as C source for the kernels (kernels/*.cu): compile-time
tables written as exact hexadecimal literals.  Plain text and no CuPy, so that the
host builds of the kernels in tests/ read the very tables the GPU's compiles read."""

import functools

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
    with ``crt`` the CRT limbs CRT_C[i][l], CRT_P[l] and CRT_INV_P."""
    ps = _moduli(m)
    src = (array("MOD_P[]", ps) + array("MOD_INV[]", [1.0 / p for p in ps])
           + f"__constant__ double MOD_ROW[{m}][8] = "
           + "{" + ", ".join(doubles([p, 1.0 / p] + [pow(2, 26 * j, p) for j in range(1, 5)] + [0, 0])
                             for p in ps) + "};\n")
    if crt:
        k = crt_constants(m)
        src += (f"__constant__ double CRT_C[{m}][{k.L}] = {{{', '.join(doubles(row) for row in k.c_limbs)}}};\n"
                + array("CRT_P[]", k.P_limbs)
                + f"#define CRT_INV_P {(1.0 / k.P_float).hex()}\n")
    return src
