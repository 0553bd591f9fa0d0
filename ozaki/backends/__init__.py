"""Backends: the same named pipeline steps (split, residues, gemm, epilogue) for numpy and cupy."""


def gpu_available():
    """Whether CuPy imports and sees a CUDA device (the GPU checks run only then)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
