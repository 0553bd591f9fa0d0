"""numpy.fft's functions and scipy.fft's backend on the exact transforms (stages.py).

Signatures, argument rules, dtypes, ``out`` checks and error messages follow
numpy 2's numpy.fft (and, through ``__ua_function__``, scipy.fft's), with two
keyword-only additions: ``mode`` and ``num_moduli``, passed to the products.
float32/float16/complex64 inputs give complex64 (or float32, float16) results
as numpy 2 does: computed in float64 (the inputs convert exactly), then
rounded to the narrower type (a second rounding: the result is not always the
correctly rounded single-precision transform, but within one single-precision
rounding of it).  Integer and bool inputs convert to float64 first, as numpy's do.
Extended precision (longdouble) raises TypeError: it does not fit float64.
"""

import math
import os
import warnings

import numpy as np

from . import specials, stages

try:                                     # numpy >= 2
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:                      # numpy 1.x
    from numpy.core.multiarray import normalize_axis_index


def _xp(a):
    return stages.xp_of(a)


def _asarray(a):
    xp = _xp(a)
    return xp.asarray(a)


def _opts(mode, num_moduli):
    return {"mode": mode, "num_moduli": num_moduli}


# ------------------------------------------------------------ dtypes --

def _input(a, real_only=False):
    """(array as float64 or complex128, the input's dtype)."""
    a = _asarray(a)
    kind, size = a.dtype.kind, a.dtype.itemsize
    if kind not in "biufc":
        raise TypeError(f"ozaki.fft: unsupported dtype {a.dtype}")
    if (kind == "f" and size > 8) or (kind == "c" and size > 16):
        raise TypeError(f"ozaki.fft: dtype {a.dtype} does not fit float64/complex128 exactly "
                        "(extended precision is not supported)")
    if real_only and kind == "c":
        raise TypeError("ozaki.fft: input must be real (rfft and ihfft take real data)")
    from .. import widened
    return widened(a, np.complex128 if kind == "c" else np.float64), a.dtype


def _result_dtype(dtype, complex_out):
    """numpy 2's: result_type(dtype, 1j) for complex results, result_type(real part, 1.0) for
    real ones (so float32 and complex64 give single precision, float16 gives float16 reals)."""
    if complex_out:
        return np.result_type(dtype, 1j)
    return np.result_type(np.empty(0, dtype).real.dtype, 1.0)


def _div(norm, n, forward):
    """The scale of the transform as twiddles' ``div``: 1, n (times 1/n) or -n (1/sqrt(n))."""
    if norm is None or norm == "backward":
        return 1 if forward else n
    if norm == "ortho":
        return -n
    if norm == "forward":
        return n if forward else 1
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


_SWAP = {"backward": "forward", None: "forward", "ortho": "ortho", "forward": "backward"}


def _swap_direction(norm):
    try:
        return _SWAP[norm]
    except KeyError:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".') from None


# ------------------------------------------------------------ out= --

def _check_out(out, a, axis, n_out, name, result_dtype):
    """numpy's checks of ``out``: shape along the axis first, then the ufunc's."""
    shape = getattr(out, "shape", None)
    if shape is not None and (len(shape) != a.ndim or shape[axis] != n_out):
        raise ValueError("output array has wrong shape.")
    if type(out) is not type(a) and not (isinstance(out, np.ndarray) and isinstance(a, np.ndarray)):
        raise TypeError("return arrays must be of ArrayType")
    if not np.can_cast(result_dtype, out.dtype, casting="same_kind"):
        raise TypeError(f"Cannot cast ufunc '{name}' output from {np.dtype(result_dtype)!r} to "
                        f"{out.dtype!r} with casting rule 'same_kind'")
    want = a.shape[:axis] + (n_out,) + a.shape[axis + 1:]
    if tuple(shape) != want:
        raise ValueError(f"output array has wrong shape: {tuple(shape)} where {want} is needed.")


def _resize(a, n, axis):
    """Crop or zero-pad axis to n (numpy.fft's n / s)."""
    xp = _xp(a)
    size = a.shape[axis]
    if n == size:
        return a
    if n < size:
        index = [slice(None)] * a.ndim
        index[axis] = slice(0, n)
        return a[tuple(index)]
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, n - size)
    return xp.pad(a, pad)


# ------------------------------------------------------- one axis --

def _raw(a, n, axis, kind, forward, norm, out, opts, name):
    """numpy's _raw_fft: the 1-D transform of ``kind`` ("c2c", "r2c", "c2r") along axis.

    ``forward`` picks the sign (-1 forward, +1 inverse) and, with ``norm``, the scale.
    """
    a, dtype = _input(a, real_only=(kind == "r2c"))
    if kind == "c2r" and a.dtype.kind == "f":
        a = a.astype(np.complex128)
    if a.ndim == 0:
        raise ValueError(f"ozaki.fft.{name}: input must have at least one dimension")
    axis = normalize_axis_index(axis, a.ndim)
    if n is None:
        n = a.shape[axis] if kind != "c2r" else 2 * (a.shape[axis] - 1)
    n = int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    div = _div(norm, n, forward)
    n_out = n // 2 + 1 if kind == "r2c" else n
    result_dtype = _result_dtype(dtype, kind != "c2r")
    if out is not None:
        _check_out(out, a, axis, n_out, name, result_dtype)
    sign = -1 if forward else 1
    if out is None:                    # blocks written straight into the result (numpy keeps the layout)
        result = _xp(a).empty_like(a, shape=a.shape[:axis] + (n_out,) + a.shape[axis + 1:], dtype=result_dtype)
        return transform_axis(a, n, axis, kind, sign, div, opts, dest=result)
    out[...] = transform_axis(a, n, axis, kind, sign, div, opts)       # out may be a itself
    return out


def transform_axis(a, n, axis, kind, sign, div, opts, dest=None):
    """The transform of every 1-D slice of ``a`` (float64 or complex128) along ``axis``
    (0 <= axis < a.ndim): cropped or padded to n input points (c2r: n // 2 + 1), with
    numpy's NaN/inf and signed-zero semantics (specials.py).  Returns float64/complex128;
    or, given ``dest`` (the result's shape, sharing no memory with ``a``), writes each
    block of rows into it and returns it.  The rows are read and written block by block
    (_Rows), so neither a moved-axis copy of ``a`` nor a second whole result is made
    where the strides allow: a 1024^3 fftn (17 GB an array) fits 80 GB."""
    xp = _xp(a)
    length = n // 2 + 1 if kind == "c2r" else n
    x = xp.moveaxis(_resize(a, length, axis), axis, -1)
    count = math.prod(x.shape[:-1])      # a host int: no numpy scalar that bench.counts takes for a sync
    blocks = row_blocks(count, length)
    source = _Rows(x, blocks)
    target = None if dest is None else _Rows(xp.moveaxis(dest, axis, -1), blocks)
    if target is not None and not target.writable:
        target = None                  # no block view of dest: rows gathered, then one copy into it
    y = None
    for rows in blocks:
        block = source.read(rows)
        yb = _block(block, kind, n, sign, div, opts, axis)
        if target is not None:
            target.write(rows, yb)
        elif rows.stop - rows.start == count:
            y = yb
        else:
            if y is None:
                y = xp.empty((count,) + yb.shape[1:], dtype=yb.dtype)
            y[rows] = yb
        del yb, block
    if target is not None:
        return dest
    y = xp.moveaxis(y.reshape(x.shape[:-1] + (y.shape[-1],)), -1, axis)
    if dest is None:
        return y
    dest[...] = y
    return dest


# A block of at most this many points replays as one CUDA graph (graphs.speculated) from
# its shape's second call on, where the backend has them (the GPU): a small transform is
# host-bound (2^16 points: 0.28 ms of kernels in a 3.75 ms call, run 0f2e7d8).  A graph
# keeps its intermediates while cached, several times the block's bytes.
SPECULATE_POINTS = int(os.environ.get("OZAKI_FFT_GRAPH_POINTS", 1 << 22))


def _block(x, kind, n, sign, div, opts, axis=None):
    """The transform of the rows of ``x`` (contiguous, 2-D), specials included.  ``axis``: the
    axis the rows lie along, a graph's key apart from the shape: an fftn's axes transform data
    of one shape but not of one kind (the first reads real rows, the others complex ones)."""
    from .. import backend_for
    backend = backend_for(x)
    if not hasattr(backend, "speculated") or not 0 < x.size <= SPECULATE_POINTS:
        return _block_eager(x, kind, n, sign, div, opts)
    from .. import get_config, scheme
    key = ("fft", axis, x.shape, x.dtype.str, kind, n, sign, div, tuple(sorted(opts.items())),
           tuple(sorted(get_config().items())), scheme.QUARTER_MIN, stages.FOLD_MIN_ROWS)
    return backend.speculated(key, lambda v: (_block_eager(v, kind, n, sign, div, opts),), x)[0]


def _block_eager(x, kind, n, sign, div, opts):
    from ..scheme import zero_signs_settled_elsewhere
    x2, fix = specials.prepare(x, kind, n)
    # specials.finish sets the sign of every zero part, except in rows with entries
    # below specials.TINY, which keep the products' signs: there the products apply
    # the sign rule themselves
    tiny = fix is not None and fix["any_tiny"]
    with zero_signs_settled_elsewhere(not tiny):
        y = stages.transform(x2, sign, div, opts, kind, n, real=fix and fix["real"])
    return specials.finish(y, fix, kind, n, sign, x)


def _rows_view(x):
    """x (..., L) as a (rows, L) view, or None where its strides allow none."""
    lead = [(size, stride) for size, stride in zip(x.shape[:-1], x.strides[:-1]) if size != 1]
    if any(stride != size * inner for (_, stride), (size, inner) in zip(lead, lead[1:])):
        return None
    return x.reshape(-1, x.shape[-1])


class _Rows:
    """The 1-D slices of x (..., L), a moved-axis view, as rows read and written by
    blocks of the flattened leading index: through a (rows, L) view where the strides
    allow one, else through slabs x[i:j] of its first axis where every block is whole
    slabs (row_blocks cuts a 1024^3 array's axes at multiples of 1024 rows), else (read
    only) one contiguous copy of all of x, made at the first read."""

    def __init__(self, x, blocks):
        self.x, self.flat = x, _rows_view(x)
        self.slab = math.prod(x.shape[1:-1])
        self.slabs = self.flat is None and self.slab > 0 and all(
            b.start % self.slab == 0 and b.stop % self.slab == 0 for b in blocks)
        self.writable = self.flat is not None or self.slabs
        from .. import backend_for
        self.backend = backend_for(x)  # its contiguous / assign: tiled transposes on the GPU

    def read(self, rows):
        xp, L = _xp(self.x), self.x.shape[-1]
        if self.writable:              # a block-sized copy, contiguous (the backend's: tiled transposes)
            part = self.flat[rows] if self.flat is not None else \
                self.x[rows.start // self.slab:rows.stop // self.slab]
            return self.backend.contiguous(part).reshape(-1, L)
        if not hasattr(self, "whole"):
            self.whole = xp.ascontiguousarray(self.x).reshape(-1, L)
        return self.whole[rows]

    def write(self, rows, y):
        if self.flat is not None:
            self.backend.assign(self.flat[rows], y)
        else:
            self.backend.assign(self.x[rows.start // self.slab:rows.stop // self.slab],
                                y.reshape((-1,) + self.x.shape[1:-1] + y.shape[-1:]))


# The transforms of one axis run in blocks of rows of at most about BLOCK_POINTS
# points: a stage's temporaries (the stage-1 remainder's [X, Y], the stage-2 rows
# [Y, Y_rem], the products' residues) are several times its
# input, so a 1024^3 fftn (17 GB) taken whole asked for more than the H200's 141 GB.
# A block holds at most BLOCK_POINTS // length rows or 2 FOLD_MIN_ROWS, and the blocks
# share the rows evenly, so each has at least FOLD_MIN_ROWS rows: its plan is the whole
# batch's; in exact mode (the default) every transform is rounded
# from its own exact values and the blocks give the whole batch's bits; in the other
# modes a product's scales see the rows of its block.  The blocks depend on the shape
# only, so the CPU and the GPU cut alike.
BLOCK_POINTS = 1 << 26


def row_blocks(rows, length):
    """Slices of ``rows`` rows of ``length`` points each: blocks of at most
    max(2 FOLD_MIN_ROWS, BLOCK_POINTS // length) rows, as even as can be (so, when
    there are several, each of at least FOLD_MIN_ROWS rows)."""
    per_block = max(2 * stages.FOLD_MIN_ROWS, BLOCK_POINTS // max(length, 1))
    count = max(1, -(-rows // per_block))
    bounds = [rows * i // count for i in range(count + 1)]
    return [slice(bounds[i], bounds[i + 1]) for i in range(count)]


# ---------------------------------------------------- numpy.fft 1-D --

def fft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """One-dimensional discrete Fourier transform, as ``numpy.fft.fft``.

    X_k = sum_n a_n exp(-2 pi i k n / n_points), times the norm's scale.  With the
    default ``mode="exact"`` every output part is the correctly rounded value of its
    exact sum with the (hi + lo) roots of unity, up to a relative 2**-100 of its terms
    (see ozaki.fft); ``mode``/``num_moduli`` trade that for speed.
    """
    return _raw(a, n, axis, "c2c", True, norm, out, _opts(mode, num_moduli), "fft")


def ifft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """One-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifft``."""
    return _raw(a, n, axis, "c2c", False, norm, out, _opts(mode, num_moduli), "ifft")


def rfft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """DFT of real input, the n//2 + 1 non-negative frequencies, as ``numpy.fft.rfft``.

    Computed as a real product (a third of a complex transform's work) where the
    length is direct (see ozaki.fft.algorithm)."""
    return _raw(a, n, axis, "r2c", True, norm, out, _opts(mode, num_moduli), "rfft")


def irfft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of rfft: real output of length n (default 2 (m - 1)), as ``numpy.fft.irfft``.

    The input is read as the non-negative half of a Hermitian spectrum: the
    imaginary parts of the zero (and, for even n, the Nyquist) bin are ignored.
    """
    return _raw(a, n, axis, "c2r", False, norm, out, _opts(mode, num_moduli), "irfft")


def hfft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """FFT of a signal with Hermitian symmetry (a real spectrum), as ``numpy.fft.hfft``:
    ``irfft(conj(a), n, axis)`` with the norm's direction swapped.  (numpy ignores
    ``out`` here; it is honoured.)"""
    a = _asarray(a)
    if n is None:
        n = (a.shape[axis] - 1) * 2
    xp = _xp(a)
    return irfft(xp.conjugate(a), n, axis, _swap_direction(norm), out, mode=mode, num_moduli=num_moduli)


def ihfft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse FFT of a signal with Hermitian symmetry, as ``numpy.fft.ihfft``:
    ``conj(rfft(a, n, axis))`` with the norm's direction swapped."""
    a = _asarray(a)
    if n is None:
        n = a.shape[axis]
    xp = _xp(a)
    res = rfft(a, n, axis, _swap_direction(norm), out, mode=mode, num_moduli=num_moduli)
    return xp.conjugate(res, out=res)


# ---------------------------------------------------- numpy.fft n-D --

def _cook_nd_args(a, s=None, axes=None, invreal=False):
    """numpy 2's rules for s and axes, its DeprecationWarnings included."""
    if s is None:
        shapeless = True
        s = list(a.shape) if axes is None else [a.shape[ax] for ax in axes]
    else:
        shapeless = False
    s = list(s)
    if axes is None:
        if not shapeless:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). "
                          "In a future version of NumPy, this will raise an error and `s[i]` will "
                          "correspond to the size along the transformed axis specified by `axes[i]`. "
                          "To retain current behaviour, pass a sequence [0, ..., k-1] to `axes` for an "
                          "array of dimension k.", DeprecationWarning, stacklevel=4)
        axes = list(range(-len(s), 0))
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (a.shape[axes[-1]] - 1) * 2
    if None in s:
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 "
                      "and will raise an error in a future version of NumPy. To use the default "
                      "behaviour of the corresponding 1-D transform, pass the value matching the "
                      "default for its `n` parameter. To use the default behaviour for every axis, "
                      "the `s` argument can be omitted.", DeprecationWarning, stacklevel=4)
    # the whole input along axis i where s[i] == -1
    s = [a.shape[ax] if n == -1 else n for n, ax in zip(s, axes)]
    return s, list(axes)


def _raw_nd(a, s, axes, function, norm, out, opts):
    """numpy's _raw_fftnd: the 1-D transforms along axes[-1], ..., axes[0], in that order
    (so repeated axes apply as numpy applies them), ``out`` passed to every step."""
    a = _asarray(a)
    s, axes = _cook_nd_args(a, s, axes)
    for ii in reversed(range(len(axes))):
        a = function(a, n=s[ii], axis=axes[ii], norm=norm, out=out, **opts)
    return a


def fftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-dimensional discrete Fourier transform, as ``numpy.fft.fftn``."""
    return _raw_nd(a, s, axes, fft, norm, out, _opts(mode, num_moduli))


def ifftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifftn``."""
    return _raw_nd(a, s, axes, ifft, norm, out, _opts(mode, num_moduli))


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Two-dimensional discrete Fourier transform, as ``numpy.fft.fft2``."""
    return _raw_nd(a, s, axes, fft, norm, out, _opts(mode, num_moduli))


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Two-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifft2``
    (numpy ignores ``out`` here; it is honoured)."""
    return _raw_nd(a, s, axes, ifft, norm, out, _opts(mode, num_moduli))


def rfftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-dimensional DFT of real input, as ``numpy.fft.rfftn``: rfft along the last of
    ``axes``, then fft along the others (last to first)."""
    a = _asarray(a)
    s, axes = _cook_nd_args(a, s, axes)
    opts = _opts(mode, num_moduli)
    a = rfft(a, s[-1], axes[-1], norm, out=out, **opts)
    for ii in range(len(axes) - 2, -1, -1):
        a = fft(a, s[ii], axes[ii], norm, out=out, **opts)
    return a


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Two-dimensional DFT of real input, as ``numpy.fft.rfft2``."""
    return rfftn(a, s, axes, norm, out, mode=mode, num_moduli=num_moduli)


def irfftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of rfftn, as ``numpy.fft.irfftn``: ifft along axes[0], ..., axes[-2] (in
    that order), then irfft along the last of ``axes``."""
    a = _asarray(a)
    s, axes = _cook_nd_args(a, s, axes, invreal=True)
    opts = _opts(mode, num_moduli)
    for ii in range(len(axes) - 1):
        a = ifft(a, s[ii], axes[ii], norm, **opts)
    return irfft(a, s[-1], axes[-1], norm, out=out, **opts)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of rfft2, as ``numpy.fft.irfft2`` (numpy ignores ``out`` here; it is honoured)."""
    return irfftn(a, s, axes, norm, out, mode=mode, num_moduli=num_moduli)


# ----------------------------------------- scipy.fft's Hermitian n-D --

def hfftn(x, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-D FFT of Hermitian-symmetric input (a real spectrum), as ``scipy.fft.hfftn``:
    ``irfftn(conj(x), s, axes)`` with the norm's direction swapped."""
    x = _asarray(x)
    return irfftn(_xp(x).conjugate(x), s, axes, _swap_direction(norm), out, mode=mode, num_moduli=num_moduli)


def ihfftn(x, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of hfftn, as ``scipy.fft.ihfftn``: ``conj(rfftn(x, s, axes))`` with the
    norm's direction swapped."""
    res = rfftn(x, s, axes, _swap_direction(norm), out, mode=mode, num_moduli=num_moduli)
    return _xp(res).conjugate(res, out=res)


def hfft2(x, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """2-D FFT of Hermitian-symmetric input, as ``scipy.fft.hfft2``."""
    return hfftn(x, s, axes, norm, out, mode=mode, num_moduli=num_moduli)


def ihfft2(x, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of hfft2, as ``scipy.fft.ihfft2``."""
    return ihfftn(x, s, axes, norm, out, mode=mode, num_moduli=num_moduli)
