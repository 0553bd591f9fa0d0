"""Input checks and stack handling shared by ozaki.linalg's functions (numpy.linalg's rules)."""

import numpy as np

from ._backend import namespace

_EXACT_KINDS = {"b", "i", "u", "f"}

# How a matrix is factored: "ozaki", blocked with the trailing updates on ozaki
# products; "vendor", LAPACK's / cuSOLVER's getrf or potrf on the whole matrix.
FACTORIZATIONS = ("ozaki", "vendor")


def check_factorization(factorization):
    """ValueError unless ``factorization`` is one of FACTORIZATIONS."""
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"factorization must be 'ozaki' or 'vendor', got {factorization!r}")


def as_float64(ns, x, name, check_finite=True):
    """x as a float64 array of the namespace's module; refuses dtypes float64 cannot hold exactly."""
    xp = ns.xp
    x = xp.asarray(x)
    dt = x.dtype
    if dt.kind == "c":
        raise TypeError(f"ozaki.linalg: {name} is complex ({dt}); only real matrices are supported")
    if dt.kind not in _EXACT_KINDS:
        raise TypeError(f"ozaki.linalg: {name} has unsupported dtype {dt}")
    if dt.kind == "f" and dt.itemsize > 8:
        raise TypeError(f"ozaki.linalg: {name} has dtype {dt}, which float64 cannot hold exactly")
    from .. import _as_float                      # exact widening; integers beyond 2**53 refused
    x = _as_float(x, np.dtype(np.float64), "linalg", name)
    if check_finite and x.size and not bool(xp.isfinite(x).all()):
        raise ValueError("array must not contain infs or NaNs")
    return x


def square_stack(ns, a, name="a", check_finite=True):
    """a as float64 with ndim >= 2 and square trailing matrices (ValueError otherwise)."""
    a = as_float64(ns, a, name, check_finite)
    if a.ndim < 2:
        raise ValueError(f"Expected at least ndim=2, got {name}.ndim={a.ndim}")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Expected square matrix, got {name}.shape={a.shape}")
    return a


def solve_operands(a, b, check_finite=True):
    """(ns, a, b2, batch, vector) for a system a x = b, numpy.linalg.solve's broadcasting.

    b is a vector when 1-D (numpy >= 2), else a stack of (n, k) matrices; b2 is
    b with the vector as a one-column matrix.  Leading dimensions broadcast.
    """
    ns = namespace(a, b)
    a = square_stack(ns, a, "a", check_finite)
    b = as_float64(ns, b, "b", check_finite)
    if b.ndim == 0:
        raise ValueError("b must be at least 1-D")
    vector = b.ndim == 1
    b2 = b[:, None] if vector else b
    if b2.shape[-2] != a.shape[-1]:
        raise ValueError(f"incompatible shapes: a.shape={a.shape} and b.shape={b.shape}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"incompatible shapes: a.shape={a.shape} and b.shape={b.shape}: "
                         "the stack dimensions do not broadcast") from None
    return ns, a, b2, batch, vector


def stack_items(xp, x, batch):
    """The matrices of x broadcast over ``batch``, in C order of the batch index."""
    full = xp.broadcast_to(x, tuple(batch) + x.shape[-2:])
    for index in np.ndindex(*batch):
        yield index, full[index]


def working_copy(xp, a):
    """A C-contiguous float64 copy the blocked algorithms may overwrite."""
    return xp.array(a, dtype=xp.float64, order="C", copy=True)
