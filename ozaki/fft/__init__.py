"""FFTs on the exact emulated GEMMs: numpy.fft-compatible functions and a scipy.fft backend.

    >>> import numpy as np, ozaki.fft
    >>> X = ozaki.fft.fft(np.random.default_rng(0).random(1024) - 0.5)
    >>> import scipy.fft
    >>> with scipy.fft.set_backend(ozaki.fft):
    ...     Y = scipy.fft.fft(np.ones(16))

Every transform is a sum of exact terms x_n w^(kn) computed by ozaki.matmul
products with constant matrices of correctly rounded roots of unity
(twiddles.py: built in exact fixed point, hi + lo pairs).  The modules, each
readable on its own:

    interface.py      numpy.fft's functions: arguments, dtypes, out=, n-D loops
    scipy_backend.py  scipy.fft's backend (__ua_domain__, __ua_function__)
    helper.py         fftfreq, rfftfreq, fftshift, ifftshift
    plans.py          which algorithm each length runs, and the cached constant matrices
    stages.py         the direct and six-step (Bailey) transforms of the rows of 2-D arrays
    bluestein.py      the chirp-z transform for lengths with no usable factorization
    specials.py       IEEE semantics: NaN, inf and signed zeros of the exact sums
    twiddles.py       the roots of unity, correctly rounded

Lengths up to 64 are one direct DFT product; up to 256 direct for 16 rows
or more and six-step (when the length factors) for fewer; longer lengths
factor as N1 N2 with N1 <= 256 (two stages up to 65536; beyond, stage 2
recurses with one rounded twiddle product), else a direct DFT up to 4096
points and Bluestein's chirp-z beyond (``algorithm(N, rows)`` says which).
Real transforms (rfft, irfft, hfft, ihfft) of direct lengths are real
products: a third of the complex work.

Precision: ``mode`` and ``num_moduli`` (keyword-only) are passed to the
products; the default ``mode="exact"`` rounds each stage's output once
(stage 1's rounding remainder is computed exactly and carried into stage 2),
so the only float64-sized rounding of a two-stage or direct transform is the
last one.
"""

from . import twiddles
from .bluestein import SPECTRA_CACHED
from .helper import fftfreq, fftshift, ifftshift, rfftfreq
from .interface import (fft, fft2, fftn, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ihfft, ihfft2, ihfftn,
                        irfft, irfft2, irfftn, rfft, rfft2, rfftn)
from .plans import DIRECT_ANY_MAX, DIRECT_MAX, FOLD_MIN_ROWS, SMALL_DIRECT, algorithm, bluestein_length
from .scipy_backend import __ua_domain__, __ua_function__

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift", "algorithm", "bluestein_length",
           "__ua_domain__", "__ua_function__"]
