"""numpy.fft's helper functions: sample frequencies and shifts (index arithmetic only,
the same values as numpy's; the shifts also take cupy arrays)."""

import numpy as np

from .stages import xp_of

_INTEGER = (int, np.integer)


def fftshift(x, axes=None):
    """Shift the zero-frequency component to the center of the spectrum, as
    ``numpy.fft.fftshift`` (half of every axis in ``axes``, all axes by default)."""
    xp = xp_of(x)
    x = xp.asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [dim // 2 for dim in x.shape]
    elif isinstance(axes, _INTEGER):
        shift = x.shape[axes] // 2
    else:
        shift = [x.shape[ax] // 2 for ax in axes]
    return xp.roll(x, shift, axes)


def ifftshift(x, axes=None):
    """The inverse of fftshift, as ``numpy.fft.ifftshift`` (the same for even lengths,
    one sample apart for odd ones)."""
    xp = xp_of(x)
    x = xp.asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [-(dim // 2) for dim in x.shape]
    elif isinstance(axes, _INTEGER):
        shift = -(x.shape[axes] // 2)
    else:
        shift = [-(x.shape[ax] // 2) for ax in axes]
    return xp.roll(x, shift, axes)


def fftfreq(n, d=1.0, device=None):
    """The DFT sample frequencies [0, 1, ..., -1] / (d n), as ``numpy.fft.fftfreq``
    (the same float64 values: the integers times the rounded 1 / (n d))."""
    if not isinstance(n, _INTEGER):
        raise ValueError("n should be an integer")
    _check_device(device)
    val = 1.0 / (n * d)
    results = np.empty(n, int)
    N = (n - 1) // 2 + 1
    results[:N] = np.arange(0, N, dtype=int)
    results[N:] = np.arange(-(n // 2), 0, dtype=int)
    return results * val


def rfftfreq(n, d=1.0, device=None):
    """The sample frequencies of rfft, [0, 1, ..., n // 2] / (d n), as ``numpy.fft.rfftfreq``."""
    if not isinstance(n, _INTEGER):
        raise ValueError("n should be an integer")
    _check_device(device)
    val = 1.0 / (n * d)
    return np.arange(0, n // 2 + 1, dtype=int) * val


def _check_device(device):
    if device not in (None, "cpu"):
        raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: {device}')
