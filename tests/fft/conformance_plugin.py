"""pytest plugin for tests/fft/test_conformance.py: runs numpy's or scipy's own FFT tests
(from the installed packages, unmodified) against ozaki.fft.

OZAKI_CONFORMANCE=numpy rebinds numpy.fft's functions to ozaki.fft's before the test
module is imported (its parametrize lists capture them at import); =scipy installs
ozaki.fft as scipy.fft's global backend with only=True, so nothing falls back to
scipy's pocketfft.  (scipy.fft.set_backend is thread-local: the thread-safety tests'
worker threads would escape it; set_global_backend holds in every thread, and the
forkserver preload below in every worker process of test_multiprocess.)
"""

import os

NUMPY_NAMES = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
               "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def pytest_configure(config):
    import ozaki.fft
    target = os.environ.get("OZAKI_CONFORMANCE")
    if target == "numpy":
        import numpy.fft
        for name in NUMPY_NAMES:
            setattr(numpy.fft, name, getattr(ozaki.fft, name))
    elif target == "scipy":
        import multiprocessing

        import scipy.fft
        scipy.fft.set_global_backend(ozaki.fft, only=True)
        multiprocessing.set_forkserver_preload(["tests.fft.conformance_scipy_backend"])
    else:
        raise RuntimeError(f"OZAKI_CONFORMANCE must be numpy or scipy, got {target!r}")
