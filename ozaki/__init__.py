"""ozaki: FP64 matrix products emulated exactly on INT8 tensor-core GEMMs (Ozaki Scheme II).

    >>> import numpy as np, ozaki
    >>> A = np.random.default_rng(0).standard_normal((64, 32))
    >>> B = np.random.default_rng(1).standard_normal((32, 16))
    >>> C = ozaki.matmul(A, B, mode="exact")      # the correctly rounded exact product

Inputs may be numpy arrays (CPU backend) or cupy arrays (GPU backend); the
result has the input's array type, and both backends give bit-identical
results for the same inputs and mode.
"""

import contextlib
import threading

import numpy as np

from . import crt, reference, scheme
from .gemm import SUBSTRATES
from .scheme import MODES, default_num_moduli

__all__ = ["matmul", "dot", "config", "get_config", "MODES", "default_num_moduli",
           "crt", "reference", "scheme", "backend_for"]

__version__ = "0.1.0"


_state = threading.local()


def get_config():
    """The current defaults: a dict with 'mode' and 'num_moduli'."""
    if not hasattr(_state, "config"):
        _state.config = {"mode": "accurate", "num_moduli": None, "workspace": None, "path": "auto"}
    return dict(_state.config)


@contextlib.contextmanager
def config(**options):
    """Set defaults for ``matmul``/``dot`` inside a ``with`` block.

    mode, num_moduli: as for ``matmul``; workspace: bytes the residues and
    products of one block may take (None: half the free device memory on the
    GPU, 1 GiB on the CPU); larger products are blocked over rows and columns.
    path: how the GPU runs a product, "auto" (default: the measured crossover
    table in ozaki.scheme.PATHS picks), "fused" (one kernel: int8 tensor-core
    products of every modulus, CRT and rounding on chip) or "cublas" (a cuBLAS
    int8 GEMM per modulus, then the epilogue pass).  The bits are the same.
    """
    unknown = set(options) - {"mode", "num_moduli", "workspace", "path"}
    if unknown:
        raise TypeError(f"config() got unexpected options {sorted(unknown)}")
    if "path" in options and options["path"] not in scheme.PATHS:
        raise ValueError(f"path must be one of {scheme.PATHS}, got {options['path']!r}")
    old = get_config()
    _state.config = {**old, **options}
    try:
        yield
    finally:
        _state.config = old


def backend_for(x):
    """The backend module for an array: numpy arrays -> CPU, cupy arrays -> GPU."""
    if type(x).__module__.split(".")[0] == "cupy":
        from .backends import cupy_backend
        return cupy_backend
    from .backends import numpy_backend
    return numpy_backend


_EXACT_KINDS = {"b", "f", "i", "u"}


def _as_exact_dtype(x, name):
    """Convert like numpy would to float64 (complex: complex128), refusing what would change values."""
    dt = x.dtype
    if dt == np.float64 or dt == np.complex128:
        return x
    if dt.kind == "c":
        if dt.itemsize > 16:
            raise TypeError(f"ozaki.matmul: {name} has dtype {dt}, which complex128 cannot hold exactly")
        return x.astype(np.complex128)
    if dt.kind not in _EXACT_KINDS:
        raise TypeError(f"ozaki.matmul: {name} has unsupported dtype {dt}")
    if dt.kind == "f" and dt.itemsize > 8:
        raise TypeError(f"ozaki.matmul: {name} has dtype {dt}, which float64 cannot hold exactly")
    if dt.kind in "iu" and dt.itemsize == 8:
        xp = np if isinstance(x, np.ndarray) else __import__("cupy")
        if x.size and bool(xp.any(xp.abs(x.astype(xp.float64)) > 2.0 ** 53)):
            raise TypeError(f"ozaki.matmul: {name} ({dt}) has integers beyond 2**53, "
                            "which float64 cannot hold exactly")
    return x.astype(np.float64)


def _check_options(mode, num_moduli, substrate):
    cfg = get_config()
    mode = cfg["mode"] if mode is None else mode
    num_moduli = cfg["num_moduli"] if num_moduli is None else num_moduli
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if substrate not in SUBSTRATES:
        raise ValueError(f"substrate must be one of {SUBSTRATES}, got {substrate!r}")
    if num_moduli is not None:
        if isinstance(num_moduli, bool) or not isinstance(num_moduli, (int, np.integer)):
            raise TypeError(f"num_moduli must be an int or None, got {type(num_moduli).__name__}")
        num_moduli = int(num_moduli)
        if not 1 <= num_moduli <= crt.max_num_moduli():
            raise ValueError(f"num_moduli must be in [1, {crt.max_num_moduli()}], got {num_moduli}")
    return mode, num_moduli


def _operands(a, b):
    kinds = {type(v).__module__.split(".")[0] == "cupy" for v in (a, b)}
    if len(kinds) == 2:
        raise TypeError("ozaki.matmul: operands must both be numpy or both be cupy arrays")
    if kinds == {False}:
        a, b = np.asarray(a), np.asarray(b)
    return a, b


def matmul(a, b, /, *, mode=None, num_moduli=None, substrate="int8"):
    """Matrix product of two arrays, emulated in FP64 on exact int8 GEMMs.

    Follows ``numpy.matmul``: 1-D operands are promoted to matrices and the
    added dimension removed afterwards; leading dimensions broadcast as a
    stack of matrices.

    Parameters
    ----------
    a, b : array_like (numpy) or cupy.ndarray
        float64 or complex128, or a dtype they hold exactly (bool, ints up to
        32 bits, float16/32, int64 within 2**53, complex64).  A complex operand
        makes the product complex: three int8 GEMMs per modulus (Karatsuba),
        real and imaginary parts each rounded once from their exact value.
    mode : {"fast", "accurate", "exact"}, optional
        "exact" returns the correctly rounded exact product; "accurate"
        (default) and "fast" keep as many input bits as ``num_moduli`` allows.
    num_moduli : int, optional
        Moduli per product (1..49); None picks the mode's default.
    substrate : {"int8", "fp8"}
        The low-precision GEMM: int8 residues (default), or e4m3 digits of
        them with FP32 accumulation (ozaki.gemm.fp8; cuBLASLt FP8 through
        PyTorch on cupy arrays).  The same bits either way.

    Returns
    -------
    ndarray of float64 (complex128 for complex inputs), of the inputs' array type.

    Raises
    ------
    ValueError
        0-d operands, mismatched core dimensions, unbroadcastable stacks, bad options.
    TypeError
        Unsupported or lossy dtypes, mixed numpy/cupy operands.
    """
    mode, num_moduli = _check_options(mode, num_moduli, substrate)
    a, b = _operands(a, b)
    for i, v in enumerate((a, b)):
        if v.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions "
                             "(has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    a = _as_exact_dtype(a, "a")
    b = _as_exact_dtype(b, "b")
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        a, b = a.astype(np.complex128), b.astype(np.complex128)
    backend = backend_for(a)
    xp = backend.xp
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature (n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} is different from "
                         f"{a2.shape[-1]})")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    m, n = a2.shape[-2], b2.shape[-1]
    count = int(np.prod(batch, dtype=np.int64))
    a3 = xp.broadcast_to(a2, batch + a2.shape[-2:]).reshape((count,) + a2.shape[-2:])
    b3 = xp.broadcast_to(b2, batch + b2.shape[-2:]).reshape((count,) + b2.shape[-2:])
    cfg = get_config()
    out = scheme.matmul_stack(a3, b3, mode, num_moduli, backend, cfg["workspace"], substrate, cfg["path"])
    out = out.reshape(batch + (m, n))
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def dot(a, b, /, *, mode=None, num_moduli=None, substrate="int8"):
    """Dot product of two arrays, as ``numpy.dot``, emulated like ``matmul``.

    0-d operands multiply elementwise; N-D operands sum
    over the last axis of ``a`` and the second-to-last of ``b``.
    """
    a, b = _operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        # One product per entry: IEEE multiplication already rounds it once.
        return _as_exact_dtype(a, "a") * _as_exact_dtype(b, "b")
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, mode=mode, num_moduli=num_moduli, substrate=substrate)
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-2]} (dim {b.ndim - 2})")
    k = a.shape[-1]
    a2 = a.reshape(-1, k)
    bm = b.reshape(-1, k, b.shape[-1]) if b.ndim > 1 else b.reshape(1, k, 1)
    bt = bm.transpose(1, 0, 2).reshape(k, -1)
    c = matmul(a2, bt, mode=mode, num_moduli=num_moduli, substrate=substrate)
    shape = a.shape[:-1] + (b.shape[:-2] + b.shape[-1:] if b.ndim > 1 else ())
    return c.reshape(shape)
