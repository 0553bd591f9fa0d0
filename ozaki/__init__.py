"""ozaki: FP64 matrix products emulated exactly on INT8 tensor-core GEMMs (Ozaki Scheme II).

    >>> import numpy as np, ozaki
    >>> A = np.random.default_rng(0).standard_normal((64, 32))
    >>> B = np.random.default_rng(1).standard_normal((32, 16))
    >>> C = ozaki.matmul(A, B, mode="exact")      # the correctly rounded exact product

Inputs may be numpy arrays (CPU backend) or cupy arrays (GPU backend); the
result has the input's array type, and both backends give bit-identical
results for the same inputs and mode.  ``matmul`` and ``dot`` follow
``numpy.matmul`` and ``numpy.dot`` (shapes, ``out=``, ``axes=``, scalars for
vector . vector, numpy's error types).
"""

import contextlib
import math
import operator
import threading

import numpy as np

from . import crt, reference, scheme
from .gemm import SUBSTRATES
from .scheme import MODES, Prepared, default_num_moduli

__all__ = ["matmul", "dot", "prepare", "Prepared", "config", "get_config", "MODES", "default_num_moduli",
           "crt", "reference", "scheme", "backend_for"]

__version__ = "0.1.0"

_AxisError = getattr(getattr(np, "exceptions", np), "AxisError")
_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"
_DEFAULTS = {"mode": "accurate", "num_moduli": None, "substrate": "int8", "workspace": None, "path": "auto"}

_state = threading.local()


def get_config():
    """The current defaults: a dict with 'mode', 'num_moduli', 'substrate', 'workspace' and 'path'."""
    if not hasattr(_state, "config"):
        _state.config = dict(_DEFAULTS)
    return dict(_state.config)


# --- option checks (shared by config, matmul and dot) ---------------------------------------

def _check_mode(mode):
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def _check_num_moduli(num_moduli):
    if num_moduli is None:
        return None
    if isinstance(num_moduli, bool) or not isinstance(num_moduli, (int, np.integer)):
        raise TypeError(f"num_moduli must be an int or None, got {type(num_moduli).__name__}")
    num_moduli = int(num_moduli)
    if not 1 <= num_moduli <= crt.max_num_moduli():
        raise ValueError(f"num_moduli must be in [1, {crt.max_num_moduli()}], got {num_moduli}")
    return num_moduli


def _check_substrate(substrate):
    if not isinstance(substrate, str) or substrate not in SUBSTRATES:
        raise ValueError(f"substrate must be one of {SUBSTRATES}, got {substrate!r}")
    return substrate


def _check_workspace(workspace):
    if workspace is None:
        return None
    if isinstance(workspace, bool) or not isinstance(workspace, (int, np.integer)):
        raise TypeError(f"workspace must be a number of bytes (int) or None, got {type(workspace).__name__}")
    if workspace <= 0:
        raise ValueError(f"workspace must be positive, got {workspace}")
    return int(workspace)


def _check_path(path):
    if path not in scheme.PATHS:
        raise ValueError(f"path must be one of {scheme.PATHS}, got {path!r}")
    return path


_CHECKS = {"mode": _check_mode, "num_moduli": _check_num_moduli, "substrate": _check_substrate,
           "workspace": _check_workspace, "path": _check_path}


class config(contextlib.ContextDecorator):
    """Set defaults for ``matmul``/``dot`` inside a ``with`` block (or as a decorator).

    mode, num_moduli, substrate: as for ``matmul``; workspace: bytes the
    residues and products of one block may take (None: half the free device
    memory on the GPU, 1 GiB on the CPU); larger products are blocked over rows
    and columns.  path: how the GPU runs a product, "auto" (default: the
    measured crossover table in ozaki.scheme.PATHS picks), "fused" (one kernel:
    int8 tensor-core products of every modulus, CRT and rounding on chip),
    "cublas" (a cuBLAS int8 GEMM per modulus, then the epilogue pass) or
    "cutlass" (Hopper: one CUTLASS GEMM over the moduli whose epilogue keeps
    int8 residues, then the epilogue pass; compiled with nvcc by
    ``python -m ozaki build`` or the first product that forces it, which raises
    RuntimeError where it cannot be built; "auto" takes it once built).  A
    forced path runs cuBLAS where it cannot take the product: "fused" where the
    shared memory or int32 range is exceeded (then "cutlass" when built),
    "cutlass" past an inner dimension of 131056 or on substrate="fp8".  The
    bits are the same.

    Every option is checked when ``config(...)`` is called: an unknown name
    raises TypeError, a bad value ValueError (TypeError for a wrong type).
    """

    def __init__(self, **options):
        unknown = set(options) - set(_CHECKS)
        if unknown:
            raise TypeError(f"config() got unexpected options {sorted(unknown)}")
        self._options = {name: _CHECKS[name](value) for name, value in options.items()}
        self._saved = threading.local()      # per thread: one object may be entered by several threads

    def __enter__(self):
        old = get_config()
        if not hasattr(self._saved, "stack"):
            self._saved.stack = []
        self._saved.stack.append(old)
        _state.config = {**old, **self._options}
        return get_config()

    def __exit__(self, *exc):
        _state.config = self._saved.stack.pop()
        return False


def _options(mode, num_moduli, substrate):
    """Explicit options, else the config's; every value checked (also where unused)."""
    cfg = get_config()
    mode = _check_mode(cfg["mode"] if mode is None else mode)
    num_moduli = _check_num_moduli(cfg["num_moduli"] if num_moduli is None else num_moduli)
    substrate = _check_substrate(cfg["substrate"] if substrate is None else substrate)
    return mode, num_moduli, substrate


# --- operands and dtypes ---------------------------------------------------------------------

def backend_for(x):
    """The backend module for an array: numpy arrays -> CPU, cupy arrays -> GPU."""
    if _is_cupy(x):
        from .backends import cupy_backend
        return cupy_backend
    from .backends import numpy_backend
    return numpy_backend


def _is_cupy(x):
    return type(x).__module__.split(".")[0] == "cupy"


def _is_dask(x):
    return type(x).__module__.split(".")[0] == "dask"


def _on_dask(name, a, b, out, axes, mode, num_moduli, substrate):
    """The product of chunked operands on dask's own graph (ozaki.dask), same bits."""
    if out is not None or axes is not None:
        raise TypeError(f"ozaki.{name}: out= and axes= are not supported for dask arrays")
    from . import dask as _dask
    return _dask.matmul(a, b, mode=mode, num_moduli=num_moduli, substrate=substrate)


def _xp(x):
    return __import__("cupy") if _is_cupy(x) else np


def _operands(a, b, name="matmul"):
    kinds = {_is_cupy(v) for v in (a, b)}
    if len(kinds) == 2:
        raise TypeError(f"ozaki.{name}: operands must both be numpy or both be cupy arrays")
    if kinds == {False}:
        a, b = np.asarray(a), np.asarray(b)
    return a, b


_KINDS = {"b", "i", "u", "f", "c"}


def _result_dtype(a, b, name):
    """numpy's result dtype of the product, after refusing what ozaki cannot multiply exactly.

    bool and integer results are numpy's (exact, wrapping modulo 2**bits as
    numpy's integer loops do); float and complex results are numpy's float64,
    complex128, float32 and complex64 (float32 x float32, float32 x int16,
    complex64 x float32, ...: each entry the exact product rounded once to
    float32); a float16 result (float16 x float16 or a small integer) is widened
    to float64.  The product itself always runs on the inputs widened exactly
    to float64/complex128 (_wide).
    """
    for label, x in (("a", a), ("b", b)):
        dt = x.dtype
        if dt.kind not in _KINDS:
            raise TypeError(f"ozaki.{name}: {label} has unsupported dtype {dt} "
                            "(bool, integer, float and complex dtypes up to float64/complex128 are)")
        if (dt.kind == "f" and dt.itemsize > 8) or (dt.kind == "c" and dt.itemsize > 16):
            raise TypeError(f"ozaki.{name}: {label} has dtype {dt}, which "
                            f"{'complex128' if dt.kind == 'c' else 'float64'} cannot hold exactly")
    rt = np.result_type(a.dtype, b.dtype)
    if rt.kind in "biu" or rt in (np.float32, np.complex64):
        return rt
    return _wide(rt)


def _wide(rt):
    """float64 or complex128, the dtype products of the float or complex result type rt run in."""
    return np.dtype(np.complex128 if rt.kind == "c" else np.float64)


def widened(x, dtype):
    """x as ``dtype`` (float64 or complex128), exactly for every dtype it holds: float32 and
    complex64 through the backend's ``widen`` step first (the device's float conversions
    flush float32 subnormals to zero), the rest by astype.  Used by every entry point:
    matmul/dot, ozaki.dask, ozaki.fft and ozaki.linalg."""
    if x.dtype in (np.float32, np.complex64):
        x = backend_for(x).widen(x)
    return x.astype(dtype, copy=False)


def _as_float(x, rt, name, label):
    """x as float64/complex128 (the result kind rt), refusing integers float64 cannot hold."""
    rt = _wide(rt)
    if x.dtype == rt:
        return x
    if x.dtype.kind in "iu" and x.dtype.itemsize == 8 and x.size:
        xp = _xp(x)
        if bool(xp.any(xp.abs(x.astype(xp.float64)) > 2.0 ** 53)):
            raise TypeError(f"ozaki.{name}: {label} ({x.dtype}) has integers beyond 2**53, "
                            "which float64 cannot hold exactly")
    return widened(x, rt)


# --- shapes -----------------------------------------------------------------------------------

def _shape_str(shape):
    return str(tuple(shape)).replace(" ", "").replace("'", "")


def _matmul_shapes(a, b):
    """(batch shape, core shape of the result) by numpy.matmul's rules; numpy's errors."""
    for i, v in enumerate((a, b)):
        if v.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions "
                             f"(has 0, gufunc core with signature {_SIGNATURE} requires 1)")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature {_SIGNATURE} (size {kb} is different from {ka})")
    la, lb = a.shape[:-2], b.shape[:-2]
    try:
        batch = np.broadcast_shapes(la, lb)
    except ValueError:
        remapped = [_shape_str(x.shape) + "->" + _shape_str(x.shape[:-2] + ("newaxis",) * min(x.ndim, 2))
                    for x in (a, b)]
        raise ValueError("operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {remapped[0]} {remapped[1]}") from None
    core = (a.shape[-2],) if a.ndim > 1 else ()
    core += (b.shape[-1],) if b.ndim > 1 else ()
    return batch, core


def _parse_axes(axes, a, b, out):
    """numpy's ``axes=`` for matmul: (axes of a, of b, of the output), normalized, or numpy's error."""
    ncore = (min(a.ndim, 2), min(b.ndim, 2), (a.ndim > 1) + (b.ndim > 1))
    if not isinstance(axes, list):
        raise TypeError("axes should be a list.")
    axes = list(axes)
    if len(axes) == 2 and ncore[2] == 0:
        axes.append(())
    if len(axes) != 3:
        raise ValueError("axes should be a list with an entry for all 3 inputs and outputs; entries for "
                         "outputs can only be omitted if none of them has core axes.")
    if out is not None and hasattr(out, "ndim"):
        out_ndim = out.ndim
    else:
        out_ndim = max(a.ndim - ncore[0], b.ndim - ncore[1]) + ncore[2]
    parsed = []
    for i, (item, nc, nd) in enumerate(zip(axes, ncore, (a.ndim, b.ndim, out_ndim))):
        if isinstance(item, tuple):
            items = item
        elif isinstance(item, (list, np.ndarray)):
            raise TypeError(f"matmul: axes item {i} should be a tuple.")
        else:
            if nc != 1:
                raise _AxisError(f"matmul: operand {i} has {nc} core dimensions, "
                                 "but the axes item is a single integer.")
            items = (item,)
        if len(items) != nc:
            raise _AxisError(f"matmul: operand {i} has {nc} core dimensions, but {len(items)} "
                             "dimensions are specified by axes tuple.")
        norm = []
        for ax in items:
            ax = operator.index(ax)
            if not -nd <= ax < nd:
                raise _AxisError(ax, nd)
            ax %= nd
            if ax in norm:
                raise ValueError(f"axes item {i} has value {ax} repeated")
            norm.append(ax)
        parsed.append(tuple(norm))
    return parsed


# --- the products -----------------------------------------------------------------------------

def _run(a3, b3, mode, num_moduli, substrate, backend, out_dtype=None):
    cfg = get_config()
    return scheme.matmul_stack(a3, b3, mode, num_moduli, backend, cfg["workspace"], substrate, cfg["path"],
                               out_dtype)


def _max_abs(xp, x):
    if x.size == 0:
        return 0
    if x.dtype.kind == "b":
        return int(bool(x.any()))
    return max(int(x.max()), -int(x.min()))


def _integer_stack(a3, b3, rt, substrate, backend):
    """Exact integer products of stacks, reduced into rt as numpy's integer matmul (mod 2**bits).

    The operands are cut into s-bit digits with k 2**(2s) <= 2**52, so every
    digit product is an integer below 2**53 that exact mode returns exactly;
    the digit products are recombined modulo 2**64 in uint64 arithmetic.
    """
    xp = backend.xp
    k = a3.shape[-1]
    log_k = max(k - 1, 0).bit_length()
    bits = [_max_abs(xp, x).bit_length() for x in (a3, b3)]
    wide = np.uint64 if rt == np.uint64 else np.int64
    a3, b3 = a3.astype(wide), b3.astype(wide)
    if bits[0] + bits[1] + log_k <= 52:
        digits = [[a3], [b3]]
        s = 0
    else:
        s = max(1, (52 - log_k) // 2)
        mask = wide((1 << s) - 1)

        def split(x, nbits):
            n = max(1, -(-nbits // s))
            parts = [(x >> wide(s * i)) & mask for i in range(n - 1)]
            return parts + [x >> wide(s * (n - 1))]     # the top digit keeps the sign

        digits = [split(a3, bits[0]), split(b3, bits[1])]
    na, nb = len(digits[0]), len(digits[1])
    A = xp.concatenate([d.astype(xp.float64) for d in digits[0]], axis=1)    # digit blocks of rows
    B = xp.concatenate([d.astype(xp.float64) for d in digits[1]], axis=2)    # digit blocks of columns
    P = _run(A, B, "exact", None, substrate, backend)       # entries below 2**53: exact
    m, n = a3.shape[1], b3.shape[2]
    acc = xp.zeros((a3.shape[0], m, n), dtype=np.uint64)
    for i in range(na):
        for j in range(nb):
            if s * (i + j) >= 64:
                continue
            term = P[:, i * m:(i + 1) * m, j * n:(j + 1) * n].astype(np.int64).view(np.uint64)
            acc += term * np.uint64(1 << (s * (i + j)))      # wraps modulo 2**64
    return acc.astype(rt)


def _product(a, b, batch, core, rt, mode, num_moduli, substrate, name):
    """The product in numpy.matmul's result layout batch + core (a 0-d array for vector . vector)."""
    backend = backend_for(a)
    xp = backend.xp
    if rt.kind in "fc":
        a, b = _as_float(a, rt, name, "a"), _as_float(b, rt, name, "b")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    m, n = a2.shape[-2], b2.shape[-1]
    count = math.prod(batch)

    def stack(x):                      # (count, r, c); broadcast only where the batch differs (a
        if x.shape[:-2] == batch:      # call's fixed cost: a replayed small product is host-bound)
            return x.reshape((count,) + x.shape[-2:])
        return xp.broadcast_to(x, batch + x.shape[-2:]).reshape((count,) + x.shape[-2:])
    a3, b3 = stack(a2), stack(b2)
    if rt.kind == "b":
        # counts of true terms, exact below 2**53; numpy's boolean matmul is "any term true"
        c = _run(a3.astype(xp.float64), b3.astype(xp.float64), "exact", None, substrate, backend) != 0
    elif rt.kind in "iu":
        c = _integer_stack(a3, b3, rt, substrate, backend)
    else:
        c = _run(a3, b3, mode, num_moduli, substrate, backend, rt)
    return c.reshape(batch + core)


def _check_ufunc_out(out, a, rt, batch, core):
    """numpy.matmul's checks of ``out``; returns the array to write into."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    if not isinstance(out, type(a)) or not hasattr(out, "dtype"):
        raise TypeError("return arrays must be of ArrayType" + (
            " (cupy operands need a cupy out array)" if _is_cupy(a) else ""))
    if not np.can_cast(rt, out.dtype, casting="same_kind"):
        raise TypeError(f"Cannot cast ufunc 'matmul' output from {rt!r} to {out.dtype!r} "
                        "with casting rule 'same_kind'")
    nc = len(core)
    if out.ndim < nc:
        raise ValueError(f"matmul: Output operand 0 does not have enough dimensions (has {out.ndim}, "
                         f"gufunc core with signature {_SIGNATURE} requires {nc})")
    out_core = out.shape[out.ndim - nc:]
    for i, (got, want) in enumerate(zip(out_core, core)):
        if got != want:
            raise ValueError(f"matmul: Output operand 0 has a mismatch in its core dimension {i}, with "
                             f"gufunc signature {_SIGNATURE} (size {got} is different from {want})")
    loop = out.shape[:out.ndim - nc]
    try:
        ok = np.broadcast_shapes(batch, loop) == loop
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"non-broadcastable output operand with shape {_shape_str(out.shape)} "
                         f"doesn't match the broadcast shape {_shape_str(batch + core)}")
    return out


def matmul(a, b, /, out=None, *, axes=None, mode=None, num_moduli=None, substrate=None):
    """Matrix product of two arrays, emulated in FP64 on exact int8 GEMMs.

    Follows ``numpy.matmul``: 1-D operands are promoted to matrices and the
    added dimension removed afterwards (vector @ vector gives a numpy scalar);
    leading dimensions broadcast as a stack of matrices.

    Parameters
    ----------
    a, b : array_like (numpy) or cupy.ndarray
        float64 or complex128, or a dtype they hold exactly (float16/32, ints,
        complex64; int64 within 2**53 when the other operand is a float).  A
        complex operand makes the product complex: three int8 GEMMs per modulus
        (Karatsuba), real and imaginary parts each rounded once from their
        exact value.  Where numpy's result type is float32 or complex64
        (float32 x float32, float32 x int16, complex64 x float32, ...) the
        result has it: the exact product of the inputs (widened exactly) is
        rounded once to float32, with float32's subnormals and overflow, and
        the default moduli count is float32's (fewer).  Integer and bool
        operands give numpy's integer and bool results, computed exactly
        (integers wrap modulo 2**bits as numpy's do); ``mode`` and
        ``num_moduli`` do not apply to them.
    out : ndarray, optional
        Where to write the result (positional or keyword, as numpy's ``out``):
        its core dimensions must match the result's, its leading dimensions
        the broadcast stack (or broadcast to it), and the result must cast to
        its dtype under 'same_kind'.  It is returned.
    axes : list of tuples, optional
        numpy's gufunc ``axes``: the axes of ``a``, ``b`` and the result that
        hold the matrix dimensions (an int for a vector operand).
    mode : {"fast", "accurate", "exact", "certified"}, optional
        "exact" returns the correctly rounded exact product; "certified"
        returns every entry faithful (one of the two float64, or float32,
        values bracketing the exact value), proved per entry, the entries it cannot prove
        recomputed exactly; "accurate" (default) and "fast" keep as many input
        bits as ``num_moduli`` allows (a normwise promise).
    num_moduli : int, optional
        Moduli per product (1..49); None picks the mode's default.
    substrate : {"int8", "fp8"}, optional
        The low-precision GEMM: int8 residues (default), or e4m3 digits of
        them with FP32 accumulation (ozaki.gemm.fp8; cuBLASLt FP8 through
        PyTorch on cupy arrays).  The same bits either way.

    Unset options come from ``ozaki.config``.  Either operand may be a
    ``Prepared`` one (``ozaki.prepare``): see there.

    Returns
    -------
    ndarray of numpy's result type (float64, complex128, float32, complex64,
    or numpy's integer or bool type for integer or bool inputs; a float16
    result type gives float64), of the inputs' array type; a numpy scalar for
    vector @ vector on numpy arrays.

    Raises
    ------
    ValueError
        0-d operands, mismatched core dimensions, unbroadcastable stacks, a
        wrongly shaped ``out``, bad options.
    TypeError
        Unsupported or lossy dtypes (object, strings, longdouble), mixed
        numpy/cupy operands, an ``out`` the result cannot be cast to.
    """
    if isinstance(a, Prepared) or isinstance(b, Prepared):
        return _matmul_prepared(a, b, out, axes, mode, num_moduli, substrate)
    mode, num_moduli, substrate = _options(mode, num_moduli, substrate)
    if _is_dask(a) or _is_dask(b):        # chunked operands: before _operands would compute them
        return _on_dask("matmul", a, b, out, axes, mode, num_moduli, substrate)
    a, b = _operands(a, b)
    for i, v in enumerate((a, b)):
        if v.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions "
                             f"(has 0, gufunc core with signature {_SIGNATURE} requires 1)")
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    xp = _xp(a)
    out_axes = None
    if axes is not None:
        ax_a, ax_b, out_axes = _parse_axes(axes, a, b, out)
        a = xp.moveaxis(a, ax_a, tuple(range(-len(ax_a), 0)))
        b = xp.moveaxis(b, ax_b, tuple(range(-len(ax_b), 0)))
    batch, core = _matmul_shapes(a, b)
    rt = _result_dtype(a, b, "matmul")
    target = None
    if out is not None:
        view = out
        if out_axes:
            if hasattr(out, "ndim") and isinstance(out, type(a)):
                view = xp.moveaxis(out, out_axes, tuple(range(-len(out_axes), 0)))
        target = _check_ufunc_out(view, a, rt, batch, core)
    c = _product(a, b, batch, core, rt, mode, num_moduli, substrate, "matmul")
    if target is not None:
        target[...] = c
        return out
    if out_axes:
        c = xp.moveaxis(c, tuple(range(-len(out_axes), 0)), out_axes)
    return c[()] if c.ndim == 0 and xp is np else c


def dot(a, b, out=None, *, mode=None, num_moduli=None, substrate=None):
    """Dot product of two arrays, as ``numpy.dot``, emulated like ``matmul``.

    0-d operands multiply elementwise (one IEEE product per entry, already
    rounded once); 1-D and 2-D operands follow ``matmul``; N-D operands sum
    over the last axis of ``a`` and the second-to-last of ``b`` (the only axis
    of a 1-D ``b``).  ``out`` (positional or keyword) must have exactly the
    result's dtype and shape and be C-contiguous, as numpy.dot requires.
    Options and dtypes as for ``matmul``.
    """
    mode, num_moduli, substrate = _options(mode, num_moduli, substrate)
    if (_is_dask(a) or _is_dask(b)) and max(a.ndim, b.ndim) <= 2:
        return _on_dask("dot", a, b, out, None, mode, num_moduli, substrate)
    a, b = _operands(a, b, "dot")
    xp = _xp(a)
    if out is not None and not isinstance(out, type(a)):
        raise TypeError("'out' must be an array" + (" (a cupy array for cupy operands)" if _is_cupy(a) else ""))
    rt = _result_dtype(a, b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        if rt.kind in "fc":
            a, b = _as_float(a, rt, "dot", "a"), _as_float(b, rt, "dot", "b")
        shape = np.broadcast_shapes(a.shape, b.shape)
        _check_dot_out(out, rt, shape)
        c = xp.multiply(a, b, dtype=rt) if rt.kind != "b" else xp.logical_and(a, b)
        c = xp.asarray(c)
    else:
        kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if a.shape[-1] != kb:
            dim_b = 0 if b.ndim == 1 else b.ndim - 2
            raise ValueError(f"shapes {_shape_str(a.shape)} and {_shape_str(b.shape)} not aligned: "
                             f"{a.shape[-1]} (dim {a.ndim - 1}) != {kb} (dim {dim_b})")
        shape = a.shape[:-1] + (b.shape[:-2] + b.shape[-1:] if b.ndim > 1 else ())
        _check_dot_out(out, rt, shape)
        k = a.shape[-1]
        if a.ndim <= 2 and b.ndim <= 2:
            a2, b2 = a, b
        else:
            a2 = a.reshape(-1, k)
            b2 = xp.moveaxis(b, -2, 0).reshape(k, -1) if b.ndim > 1 else b
        batch, core = _matmul_shapes(a2, b2)
        c = _product(a2, b2, batch, core, rt, mode, num_moduli, substrate, "dot").reshape(shape)
    if out is not None:
        out[...] = c
        return out[()] if out.ndim == 0 and xp is np else out
    return c[()] if c.ndim == 0 and xp is np else c


def prepare(a, side="right", *, mode=None, num_moduli=None):
    """``a`` made ready to be the same operand of many products: ``matmul(x, p)`` for
    side="right", ``matmul(p, x)`` for side="left".

    The product's work on a that does not depend on the other operand (the
    scans of its rows or columns, their power-of-two scales, the slicing, and
    the int8 residues of every modulus) is done once, at the first product, and
    kept; each product then does the other operand's share alone.  The results
    are the bits of ``matmul`` with the same mode and num_moduli.

    Parameters
    ----------
    a : numpy or cupy array, 2-D (a matrix) or 3-D (a stack of matrices)
        floating or complex: float64 or complex128, or a narrower float type
        (integers raise TypeError).  It is kept, not
        copied (float32, complex64 and narrower are kept widened exactly): do
        not change it while the Prepared is in use.  The products' result
        type is numpy's for a's dtype and the other operand's: float32 x
        float32 gives float32, rounded once as ``matmul`` rounds it.
    side : {"right", "left"}
        Whether a is the right operand (B) or the left one (A) of the products.
    mode : {"exact", "fast"}, optional
        Only these: "accurate" (and "certified") scale the rows of A and the
        columns of B together from an int8 GEMM of both, so neither side can be
        made ready alone (ValueError).  None: the ``ozaki.config`` mode.
    num_moduli : int, optional
        As for ``matmul`` (None: the mode's choice; exact mode's then follows
        the other operand's span of bits at each product).

    Returns
    -------
    Prepared, for ``matmul``: a 2-D one multiplies 2-D arrays, a 3-D one stacks
    of as many matrices (same batch; no broadcasting, ``out`` or ``axes``).
    """
    mode, num_moduli, _ = _options(mode, num_moduli, None)
    scheme.check_preparable(mode)
    if _is_dask(a):
        raise TypeError("prepare: dask arrays are not supported (prepare each block's operand)")
    a = a if _is_cupy(a) else np.asarray(a)
    if a.ndim not in (2, 3):
        raise ValueError(f"prepare: a must be 2-D or 3-D, got {a.ndim}-D")
    rt = _result_dtype(a, a, "prepare")
    if rt.kind not in "fc":
        raise TypeError(f"prepare: a must be a floating or complex array, got {a.dtype}")
    a = _as_float(a, rt, "prepare", "a")
    p = scheme.prepare(a if a.ndim == 3 else a[None], side, mode, num_moduli, backend_for(a), rt)
    p.matrix = a.ndim == 2
    return p


def _matmul_prepared(a, b, out, axes, mode, num_moduli, substrate):
    """matmul with a Prepared operand (either or both): checks, then scheme.matmul_stack."""
    p = a if isinstance(a, Prepared) else b
    if out is not None or axes is not None:
        raise TypeError("matmul with a Prepared operand takes no out= or axes=")
    for q, side in ((a, "left"), (b, "right")):
        if isinstance(q, Prepared) and q.side != side:
            raise ValueError(f"matmul: operand prepared with side={q.side!r} used as the {side} operand")
    if isinstance(a, Prepared) and isinstance(b, Prepared):
        if (a.mode, a.num_moduli) != (b.mode, b.num_moduli):
            raise ValueError("matmul: the two Prepared operands were prepared for different modes or moduli")
        if a.dtype.kind != b.dtype.kind:
            raise TypeError("matmul: a complex and a real Prepared operand (prepare both as complex)")
    if mode is not None and mode != p.mode or num_moduli is not None and num_moduli != p.num_moduli:
        raise ValueError(f"matmul: the operand was prepared for mode={p.mode!r}, num_moduli={p.num_moduli}; "
                         f"got mode={mode!r}, num_moduli={num_moduli}")
    substrate = _options(None, None, substrate)[2]
    backend = p.backend
    xp = backend.xp
    shapes, ops, typed = [], [], []
    for q in (a, b):
        if isinstance(q, Prepared):
            ops.append(q)
            typed.append(q)
            shapes.append(q.shape[1:] if q.matrix else q.shape)
            continue
        q = q if _is_cupy(q) else np.asarray(q)
        typed.append(q)
        if _is_cupy(q) != (xp is not np):
            raise TypeError("matmul: the Prepared operand and the other one must both be numpy or both cupy arrays")
        kind = _result_dtype(q, q, "matmul").kind
        if kind not in "fc":
            raise TypeError(f"matmul: with a Prepared operand the other must be floating or complex, got {q.dtype}")
        if kind == "c" and p.dtype.kind != "c":
            raise TypeError("matmul: a complex operand with a real Prepared one (prepare it as complex)")
        q = _as_float(q, np.dtype(p.dtype), "matmul", "a" if q is a else "b")
        shapes.append(q.shape)
        ops.append(q if q.ndim == 3 else q[None])
    matrix = p.matrix
    if any(len(s) != (2 if matrix else 3) for s in shapes):
        raise ValueError(f"matmul: a {'2' if matrix else '3'}-D Prepared operand needs a "
                         f"{'2' if matrix else '3'}-D other operand, got shapes {shapes}")
    if shapes[0][-1] != shapes[1][-2] or (not matrix and shapes[0][0] != shapes[1][0]):
        raise ValueError(f"matmul: shapes {_shape_str(shapes[0])} and {_shape_str(shapes[1])} do not multiply "
                         "(inner dimensions and stacks must match)")
    rt = _result_dtype(*typed, "matmul")             # numpy's (float32 x float32: float32), from the dtypes given
    cfg = get_config()
    c = scheme.matmul_stack(ops[0], ops[1], p.mode, p.num_moduli, backend, cfg["workspace"], substrate, cfg["path"],
                            rt)
    return c[0] if matrix else c


def _check_dot_out(out, rt, shape):
    if out is None:
        return
    if out.dtype != rt or out.ndim != len(shape) or not out.flags.c_contiguous:
        raise ValueError("output array is not acceptable (must have the right datatype, number of "
                         "dimensions, and be a C-Array)")
    if tuple(out.shape) != tuple(shape):
        raise ValueError("output array has wrong dimensions")
