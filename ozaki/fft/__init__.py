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

Plans (``algorithm(N, rows, kind)`` says which): lengths up to 48 are one
direct DFT product; longer ones are direct, six-step (N = N1 N2, N1, N2 <=
256; beyond 65536 stage 2 recurses on exact twiddle products) or
Bluestein's chirp-z, whichever a cost model of the products picks: batches
(16 rows or more) count the work per row (one product with the N x N matrix
has one CRT epilogue per point, six-step three), single transforms count the
fixed and constant costs of each product (one 509-point transform: 73 ms by
Bluestein's exact path instead of 0.75 s by its 509 x 509 matrix).  Real
transforms (rfft, irfft, hfft, ihfft, and fft/ifft of real rows) of direct
lengths are real products: a third of the complex work.  The plans are the
same on every backend, and depend on the row count only through the
16-row threshold.

Precision: ``mode`` and ``num_moduli`` (keyword-only) are passed to the
products; the default ``mode="exact"`` rounds each stage's output once and
carries its exactly computed, rounded remainder into the next (Bluestein's
elementwise products are error-free pairs), so the only float64-sized
rounding is the last one, for every length that factors into parts of at
most 256 (a long stage 2 takes its twiddle product as an exact pair too) and
for unfactorable lengths up to 32768 (beyond: Bluestein's rounded path).  What is dropped is
below 2**-100 of the terms' sizes |x_n w^(kn)| (the products' constants carry each root to
2**-104 of its size, plans.product_roots), so results that are exactly zero come out as
zero only where the plan is one product.  NaN, inf and signed zeros follow IEEE
arithmetic on the exact sums (specials.py).
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
