"""The low-precision GEMM substrates: exact products of int8 residue matrices.

    int8  the backends' own ``gemm`` (numpy: float64 BLAS, exact below 2**53;
          cupy: cuBLAS gemmEx INT8 -> INT32)
    fp8   ozaki.gemm.fp8: each residue split into two e4m3-exact digits, three
          FP32-accumulated GEMMs per modulus (XX, XY, YY), recombined exactly;
          the backend supplies ``gemm_fp32_digits`` (numpy: float32 BLAS;
          cupy: cuBLASLt FP8 e4m3 -> FP32 through torch._scaled_mm).

Both give the same integer products, so the substrate never changes a result's bits.
"""

from . import fp8

SUBSTRATES = ("int8", "fp8")

__all__ = ["SUBSTRATES", "fp8", "product"]


def product(backend, substrate, Ra, Rbt, batch=1):
    """Exact integer products of residue stacks (b, batch*m, k), (b, batch*n, k) on ``substrate``."""
    if substrate == "int8":
        return backend.gemm(Ra, Rbt, batch)
    if substrate == "fp8":
        return fp8.gemm(backend, Ra, Rbt, batch)
    raise ValueError(f"substrate must be one of {SUBSTRATES}, got {substrate!r}")
