"""FFTs on the exact emulated GEMMs: numpy.fft-compatible functions and a scipy.fft backend.

    >>> import numpy as np, ozaki.fft
    >>> X = ozaki.fft.fft(np.random.default_rng(0).random(1024) - 0.5)
    >>> import scipy.fft
    >>> with scipy.fft.set_backend(ozaki.fft):
    ...     Y = scipy.fft.fft(np.ones(16))

The transform is Bailey's six-step algorithm on ozaki.matmul: for N = N1 N2,
stage 1 is one GEMM with the N1-point DFT matrix over all columns; stage 2 is
one small GEMM per row k1 whose matrix has the twiddles w_N^(n2 k1) (and the
norm's scaling) folded in, so no rounding happens between the two but the one
of the stage-1 output.  With fewer than FOLD_MIN_ROWS transforms the per-row
matrices would be matrix-vector shaped, so stage 2 is one GEMM with the
N2-point DFT after an error-free twiddle product (P + E, Dekker and Knuth),
again with no rounding in between.  Lengths up to 256 are one direct DFT GEMM; N1, N2 <= 256
cover every length whose factors allow it up to 65536; longer lengths recurse
on stage 2 with an explicit (rounded) twiddle multiplication.  Lengths with no
such factorization run as a direct DFT GEMM up to 4096 points and through
Bluestein's chirp-z beyond (a power-of-two convolution on the six-step
transform; L2 error about 1.3-1.9e-16 against numpy's 3.6-6.4e-16 for
N = 4099..8198).  Every constant is a root of unity computed by mpmath and
rounded once (ozaki.fft.twiddles).

Precision knob: ``mode`` and ``num_moduli`` (keyword-only) are passed to the
GEMMs; the default ``mode="exact"`` rounds each stage's output once, exactly.
"""


from functools import lru_cache

import numpy as np

from . import twiddles

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn",
           "algorithm", "__ua_domain__", "__ua_function__"]

DIRECT_MAX = 256          # one DFT GEMM at or below this length; the six-step radix bound
DIRECT_ANY_MAX = 4096     # lengths without a usable factorization: direct DFT GEMM up to here


def _xp(a):
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return np


@lru_cache(maxsize=None)
def _factor(N):
    """(N1, N2) with N = N1 N2 and N1 <= DIRECT_MAX, or None if there is none.

    Two stages (N2 <= DIRECT_MAX too) when possible, the most balanced pair:
    a small N2 makes stage 2's per-row N2 x N2 products thin (512 = 256 x 2
    would multiply by 2 x 2 matrices).  Else the largest N1 whose N2 factors.
    """
    divisors = [N1 for N1 in range(min(N - 1, DIRECT_MAX), 1, -1) if N % N1 == 0]
    two_stage = [(N1, N // N1) for N1 in divisors if N // N1 <= DIRECT_MAX]
    if two_stage:
        return min(two_stage, key=lambda f: (abs(f[0] - f[1]), -f[0]))
    deeper = [(N1, N // N1) for N1 in divisors if _factor(N // N1) is not None]
    return deeper[0] if deeper else None


def algorithm(N):
    """How N points are transformed: "direct" (one DFT GEMM), "six-step" or "bluestein"."""
    if N <= DIRECT_MAX:
        return "direct"
    if _factor(N) is not None:
        return "six-step"
    return "direct" if N <= DIRECT_ANY_MAX else "bluestein"


def _matmul(a, b, opts):
    from .. import matmul
    return matmul(a, b, **opts)


def _transform(x, sign, div, opts):
    """DFT of each row of x (B, N) complex128: sum_n x[n] w^(sign k n) / div.

    With mode="exact" (the default) every GEMM carries the constants as hi + lo
    pairs and stage 1's output as its rounded value plus its exact rounded
    remainder (one more exact GEMM: [F, -I] [x; Y]), so the only rounding of
    float64 size is the last one.  Other modes use the rounded constants alone.
    """
    xp = _xp(x)
    B, N = x.shape
    split = opts.get("mode") == "exact"
    factors = None if N <= DIRECT_MAX else _factor(N)
    if factors is None:
        if N > DIRECT_ANY_MAX:
            return _bluestein(x, sign, div, opts)
        F = [xp.asarray(twiddles.dft_matrix(N, sign, div, part)) for part in range(1 + split)]
        return _matmul(xp.concatenate([x] * len(F), axis=1), xp.concatenate(F), opts)   # F symmetric
    N1, N2 = factors
    # stage 1: Y[k1, (b, n2)] = sum_n1 F1[k1, n1] x[b, N2 n1 + n2]
    X1 = x.reshape(B, N1, N2).transpose(1, 0, 2).reshape(N1, B * N2)
    F1 = [xp.asarray(twiddles.dft_matrix(N1, sign, 1, part)) for part in range(1 + split)]
    Y = _matmul(xp.concatenate(F1, axis=1), xp.concatenate([X1] * len(F1)), opts)
    Ys = [Y]
    if split:       # the exact remainder of stage 1, rounded: RN(F1 X1 - Y)
        eye = xp.eye(N1, dtype=xp.complex128)
        Ys.append(_matmul(xp.concatenate(F1 + [-eye], axis=1), xp.concatenate([X1, X1, Y]), opts))
    Ys = [y.reshape(N1, B, N2) for y in Ys]
    if N2 <= DIRECT_MAX and split and B < FOLD_MIN_ROWS and _in_split_range(xp, Ys[0]):
        # stage 2 for few rows: the folded per-row matrices would make B x N2 by N2 x N2
        # products (matrix-vector shaped for one transform); instead the twiddle product
        # is formed exactly as P + E (error-free transformations) and one GEMM applies
        # the N2-point DFT to all rows: Z = [P, P, C] [F2_hi; F2_lo; F2_hi] with
        # C = E + Y_hi tw_lo + Y_rem tw_hi, so the output is again rounded once
        # (the omitted terms are below 2**-100 of the sum, as in the folded path).
        idx = _twiddle_exponents(N1, N2)
        tw = [xp.asarray(part[idx])[:, None, :] for part in twiddles.root_parts(N, sign)]
        P, E = _times_exactly(Ys[0], tw[0])
        C = E + _times(Ys[0], tw[1]) + _times(Ys[1], tw[0])
        F2 = [xp.asarray(twiddles.dft_matrix(N2, sign, div, part)) for part in range(2)]
        rows = xp.concatenate([P, P, C], axis=2).reshape(N1 * B, 3 * N2)
        Z = _matmul(rows, xp.concatenate(F2 + [F2[0]]), opts).reshape(N1, B, N2)     # F2 symmetric
    elif N2 <= DIRECT_MAX:
        # stage 2, twiddles folded in: Z[k1, b, k2] = sum_n2 G[k1, k2, n2] Y[k1, b, n2]
        G = [xp.asarray(twiddles.stage2_matrices(N1, N2, sign, div, part)).transpose(0, 2, 1)
             for part in range(1 + split)]
        if split:   # G_hi Y + G_lo Y + G_hi Y_rem (G_lo Y_rem is below 2**-100 of the sum)
            Z = _matmul(xp.concatenate([Ys[0], Ys[0], Ys[1]], axis=2), xp.concatenate(G + [G[0]], axis=1), opts)
        else:
            Z = _matmul(Ys[0], G[0], opts)
    else:
        # long stage 2: an explicit twiddle product (rounded), then N2-point transforms
        tw = xp.asarray(twiddles.roots(N, sign)[_twiddle_exponents(N1, N2)])
        Y = Ys[0] + Ys[1] if split else Ys[0]
        Z = _transform(_times(Y, tw[:, None, :]).reshape(N1 * B, N2), sign, div, opts).reshape(N1, B, N2)
    return Z.transpose(1, 2, 0).reshape(B, N)                    # k = k1 + N1 k2


def _twiddle_exponents(N1, N2):
    """(N1, N2): the exponents n2 k1 mod N of the twiddles w_N between the stages."""
    return (np.arange(N1)[:, None] * np.arange(N2)[None, :]) % (N1 * N2)


def bluestein_length(N):
    """The convolution length of Bluestein's algorithm for N points: the power of two
    at or above 2N - 1 (the six-step transform's cheapest and most exact lengths:
    many of their roots of unity are exact)."""
    return 1 << (2 * N - 2).bit_length()


@lru_cache(maxsize=16)
def _chirp(N, sign, div=1):
    """c_n = exp(sign i pi n**2 / N) / div (numpy's norm scale as in twiddles.roots), n < N,
    each part correctly rounded: the roots of unity of order 2N at n**2 mod 2N."""
    n = np.arange(N, dtype=np.int64)
    return twiddles.roots(2 * N, sign, div)[(n * n) % (2 * N)]


def _chirp_spectrum(xp, N, M, sign, opts):
    """FFT_M of b, b_j = conj(c_|j|) for |j| < N wrapped around M (the convolution kernel)."""
    device = xp.cuda.Device().id if xp.__name__ == "cupy" else None
    key = (xp.__name__, device, N, M, sign, tuple(sorted(opts.items())))
    if key in _SPECTRA:
        _SPECTRA[key] = _SPECTRA.pop(key)                 # most recently used last
    else:
        b = np.zeros(M, dtype=np.complex128)
        cc = np.conj(_chirp(N, sign))
        b[:N] = cc
        b[M - N + 1:] = cc[1:][::-1]
        _SPECTRA[key] = _transform(xp.asarray(b)[None], -1, 1, opts)[0]
        while len(_SPECTRA) > SPECTRA_CACHED:
            del _SPECTRA[next(iter(_SPECTRA))]            # the least recently used
    return _SPECTRA[key]


# Bluestein kernel spectra kept, least recently used dropped first: each is
# bluestein_length(N) complex128 values on its backend and device.
SPECTRA_CACHED = 8
_SPECTRA = {}


def _bluestein(x, sign, div, opts):
    """Bluestein's chirp-z for lengths with no usable factorization: with
    n k = (n**2 + k**2 - (k - n)**2) / 2, X_k = c_k sum_n (x_n c_n) conj(c_(k-n)),
    a convolution of length M = bluestein_length(N) done by two six-step
    transforms (the kernel's spectrum is computed once and cached).  Four
    rounded steps more than a six-step transform: x c, the spectra product,
    and the output chirp (which carries the norm's scale) are float64 products.
    """
    xp = _xp(x)
    B, N = x.shape
    M = bluestein_length(N)
    a = xp.zeros((B, M), dtype=xp.complex128)
    a[:, :N] = _times(x, xp.asarray(_chirp(N, sign)))
    A = _transform(a, -1, 1, opts)
    y = _transform(_times(A, _chirp_spectrum(xp, N, M, sign, opts)[None]), 1, M, opts)
    return _times(y[:, :N], xp.asarray(_chirp(N, sign, div))[None])


def _times(a, b):
    """a * b for complex arrays, each real operation a pass of its own: the textbook
    (ar br - ai bi) + i (ar bi + ai br), rounded after every step.  A fused
    complex multiply (CuPy's kernels may contract to FMAs, numpy's do not) would
    round differently, and the GPU must return the CPU's bits."""
    xp = _xp(a)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    out = xp.empty(xp.broadcast_shapes(a.shape, b.shape), dtype=xp.complex128)
    out.real = xp.subtract(xp.multiply(ar, br), xp.multiply(ai, bi))
    out.imag = xp.add(xp.multiply(ar, bi), xp.multiply(ai, br))
    return out


# Fewer rows than this per transform take stage 2 as one GEMM after an exact
# twiddle product (measured on the CPU: one 16384-point transform 11.3 s folded,
# about 1 s this way); more rows keep the folded per-row matrices.
FOLD_MIN_ROWS = 16


def _split_veltkamp(a):
    """a = hi + lo exactly with 26-bit halves (Dekker); |a| < 2**996."""
    c = a * 134217729.0
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    """(p, e): p = fl(a b) and a b = p + e exactly (Dekker, no FMA: every backend alike)."""
    p = a * b
    ah, al = _split_veltkamp(a)
    bh, bl = _split_veltkamp(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a, b):
    """(s, e): s = fl(a + b) and a + b = s + e exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _times_exactly(a, b):
    """(P, E) for complex arrays: P = _times(a, b) bit for bit and a b = P + E up to the
    rounding of E itself (below 2**-100 of |a b| when the products neither overflow nor
    underflow: see _in_split_range)."""
    xp = _xp(a)
    h1, l1 = _two_prod(a.real, b.real)
    h2, l2 = _two_prod(a.imag, b.imag)
    h3, l3 = _two_prod(a.real, b.imag)
    h4, l4 = _two_prod(a.imag, b.real)
    re, e_re = _two_sum(h1, -h2)
    im, e_im = _two_sum(h3, h4)
    P = xp.empty(re.shape, dtype=xp.complex128)
    E = xp.empty(re.shape, dtype=xp.complex128)
    P.real, P.imag = re, im
    E.real, E.imag = e_re + (l1 - l2), e_im + (l3 + l4)
    return P, E


def _in_split_range(xp, Y):
    """Whether the error-free products are exact for Y times roots of unity: finite, the
    largest part below 2**900 (no overflow in Dekker's split) and above 2**-900 (the
    errors of the largest products stay normal).  One host synchronization."""
    top = float(xp.max(xp.maximum(xp.abs(Y.real), xp.abs(Y.imag)))) if Y.size else 0.0
    return 2.0 ** -900 < top < 2.0 ** 900


def _div(norm, N, inverse):
    if norm in (None, "backward"):
        return N if inverse else 1
    if norm == "ortho":
        return -N
    if norm == "forward":
        return 1 if inverse else N
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _complex_input(a):
    xp = _xp(a)
    a = xp.asarray(a)
    if a.dtype.kind not in "biufc":
        raise TypeError(f"ozaki.fft: unsupported dtype {a.dtype}")
    if a.dtype.kind == "c" and a.dtype.itemsize > 16 or a.dtype.kind == "f" and a.dtype.itemsize > 8:
        raise TypeError(f"ozaki.fft: dtype {a.dtype} does not fit complex128 exactly")
    return a.astype(np.complex128)


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


def _c2c(a, n, axis, norm, inverse, opts):
    a = _complex_input(a)
    xp = _xp(a)
    if a.ndim == 0:
        raise ValueError("ozaki.fft: input must have at least one dimension")
    axis = _axis(axis, a.ndim)
    n = a.shape[axis] if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    a = xp.moveaxis(_resize(a, n, axis), axis, -1)
    shape = a.shape
    x = xp.ascontiguousarray(a).reshape(-1, n)
    out = _transform(x, 1 if inverse else -1, _div(norm, n, inverse), opts) if x.shape[0] else x
    return xp.moveaxis(out.reshape(shape), -1, axis)


def _axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _opts(mode, num_moduli):
    return {"mode": mode, "num_moduli": num_moduli}


def fft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """One-dimensional discrete Fourier transform, as ``numpy.fft.fft``."""
    return _out(_c2c(a, n, axis, norm, False, _opts(mode, num_moduli)), out)


def ifft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """One-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifft``."""
    return _out(_c2c(a, n, axis, norm, True, _opts(mode, num_moduli)), out)


def _out(result, out):
    if out is None:
        return result
    out[...] = result
    return out


def _nd_axes(a, s, axes):
    """numpy.fft's rules for s and axes."""
    ndim = _xp(a).asarray(a).ndim
    if axes is None:
        axes = list(range(ndim)) if s is None else list(range(ndim - len(s), ndim))
    axes = [_axis(ax, ndim) for ax in axes]
    if s is None:
        s = [None] * len(axes)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return list(s), axes


def fftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-dimensional discrete Fourier transform, as ``numpy.fft.fftn``."""
    s, axes = _nd_axes(a, s, axes)
    for n, ax in zip(s, axes):
        a = _c2c(a, n, ax, norm, False, _opts(mode, num_moduli))
    return _out(_complex_input(a), out)


def ifftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifftn``."""
    s, axes = _nd_axes(a, s, axes)
    for n, ax in zip(s, axes):
        a = _c2c(a, n, ax, norm, True, _opts(mode, num_moduli))
    return _out(_complex_input(a), out)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Two-dimensional discrete Fourier transform, as ``numpy.fft.fft2``."""
    return fftn(a, s, axes, norm, out, mode=mode, num_moduli=num_moduli)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, mode="exact", num_moduli=None):
    """Two-dimensional inverse discrete Fourier transform, as ``numpy.fft.ifft2``."""
    return ifftn(a, s, axes, norm, out, mode=mode, num_moduli=num_moduli)


def _real_input(a):
    xp = _xp(a)
    a = xp.asarray(a)
    if a.dtype.kind == "c":
        raise TypeError("ozaki.fft.rfft: input must be real")
    return a


def rfft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """DFT of real input, the n//2 + 1 non-negative frequencies, as ``numpy.fft.rfft``."""
    a = _real_input(a)
    xp = _xp(a)
    full = _c2c(a, n, axis, norm, False, _opts(mode, num_moduli))
    axis = _axis(axis, full.ndim)
    index = [slice(None)] * full.ndim
    index[axis] = slice(0, full.shape[axis] // 2 + 1)
    return _out(xp.ascontiguousarray(full[tuple(index)]), out)


def irfft(a, n=None, axis=-1, norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of rfft: real output of length n (default 2 (m - 1)), as ``numpy.fft.irfft``.

    The input is read as the non-negative half of a Hermitian spectrum: the
    imaginary parts of the zero (and, for even n, the Nyquist) bin are ignored.
    """
    a = _complex_input(a)
    xp = _xp(a)
    axis = _axis(axis, a.ndim)
    n = 2 * (a.shape[axis] - 1) if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of data points ({n}) specified")
    half = xp.moveaxis(_resize(a, n // 2 + 1, axis), axis, -1).copy()
    half[..., 0] = half[..., 0].real
    if n % 2 == 0:
        half[..., -1] = half[..., -1].real
    mirror = xp.conj(half[..., 1:(n + 1) // 2][..., ::-1])
    full = xp.concatenate([half, mirror], axis=-1)
    result = _c2c(full, n, -1, norm, True, _opts(mode, num_moduli)).real
    return _out(xp.ascontiguousarray(xp.moveaxis(result, -1, axis)), out)


def rfftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """N-dimensional DFT of real input, as ``numpy.fft.rfftn``."""
    a = _real_input(a)
    s, axes = _nd_axes(a, s, axes)
    a = rfft(a, s[-1], axes[-1], norm, mode=mode, num_moduli=num_moduli)
    for n, ax in zip(s[:-1], axes[:-1]):
        a = _c2c(a, n, ax, norm, False, _opts(mode, num_moduli))
    return _out(a, out)


def irfftn(a, s=None, axes=None, norm=None, out=None, *, mode="exact", num_moduli=None):
    """Inverse of rfftn, as ``numpy.fft.irfftn``."""
    s, axes = _nd_axes(a, s, axes)
    for n, ax in zip(s[:-1], axes[:-1]):
        a = _c2c(a, n, ax, norm, True, _opts(mode, num_moduli))
    last = s[-1]
    if last is None:
        last = 2 * (_xp(a).asarray(a).shape[axes[-1]] - 1)
    return _out(irfft(a, last, axes[-1], norm, mode=mode, num_moduli=num_moduli), out)


# scipy.fft backend: ``with scipy.fft.set_backend(ozaki.fft): scipy.fft.fft(x)``
__ua_domain__ = "numpy.scipy.fft"
_BACKEND = {f.__name__: f for f in (fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfftn, irfftn)}


def __ua_function__(method, args, kwargs):
    fn = _BACKEND.get(method.__name__)
    if fn is None:
        return NotImplemented
    kwargs = dict(kwargs)
    kwargs.pop("overwrite_x", None)
    kwargs.pop("workers", None)
    if kwargs.pop("plan", None) is not None:
        return NotImplemented
    return fn(*args, **kwargs)
