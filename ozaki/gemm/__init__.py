"""The low-precision GEMM substrates.

The int8 substrate lives in the backends (``ozaki.backends.numpy_backend.gemm``:
float64 BLAS, exact below 2**53; ``ozaki.backends.cupy_backend.gemm``: cuBLAS
gemmEx INT8 -> INT32).  The fp8 substrate is not built yet.
"""
__all__ = []
