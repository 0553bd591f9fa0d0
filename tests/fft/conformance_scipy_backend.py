"""Imported at start-up by the worker processes of the scipy conformance run (multiprocessing's
forkserver preload, set by conformance_plugin.py): scipy's conftest makes workers start from a
fresh forkserver, which would not have ozaki.fft as scipy.fft's backend otherwise."""

import scipy.fft

import ozaki.fft

scipy.fft.set_global_backend(ozaki.fft, only=True)
