"""The scipy.fft backend: ``with scipy.fft.set_backend(ozaki.fft): scipy.fft.fft(x)``.

scipy's signatures and argument rules (scipy.fft._pocketfft: float16 computed
as float32, all-unique axes, ``s[i] == -1`` for the whole axis, ``workers``
and ``overwrite_x`` accepted and unused) on the same exact transforms.
scipy's hfft/ihfft family is its own (the forward-sign c2r and the
inverse-sign r2c); dct, dst and their inverses, and a precomputed ``plan``,
are declined (NotImplemented: scipy then tries its other backends, or raises
under ``only=True``).
"""

import operator

import numpy as np

from . import interface

__ua_domain__ = "numpy.scipy.fft"


def _asfarray(x):
    """scipy's: float16 as float32, integers and bools as float64."""
    x = interface._asarray(x)
    if x.dtype == np.float16:
        return x.astype(np.float32)
    if x.dtype.kind not in "fc":
        return x.astype(np.float64)
    return x


def _workers(workers):
    if workers is not None and operator.index(workers) == 0:
        raise ValueError("workers must not be zero")


def _one(kind, forward, name):
    def transform(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None,
                  mode="exact", num_moduli=None):
        _workers(workers)
        x = _asfarray(x)
        if n is None and kind != "c2r" and x.shape[axis] < 1:
            raise ValueError(f"invalid number of data points ({x.shape[axis]}) specified")
        return interface._raw(x, n, axis, kind, forward, norm, None, interface._opts(mode, num_moduli), name)
    transform.__name__ = name
    return transform


def _shape_and_axes(x, s, axes):
    """scipy's _init_nd_shape_and_axes."""
    noshape, noaxes = s is None, axes is None
    if not noaxes:
        axes = [axes] if np.ndim(axes) == 0 else list(axes)
        axes = [operator.index(a) for a in axes]
        axes = [a + x.ndim if a < 0 else a for a in axes]
        if any(a >= x.ndim or a < 0 for a in axes):
            raise ValueError("axes exceeds dimensionality of input")
        if len(set(axes)) != len(axes):
            raise ValueError("all axes must be unique")
    if not noshape:
        s = [s] if np.ndim(s) == 0 else list(s)
        s = [operator.index(n) for n in s]
        if axes and len(axes) != len(s):
            raise ValueError("when given, axes and shape arguments have to be of the same length")
        if noaxes:
            if len(s) > x.ndim:
                raise ValueError("shape requires more axes than are present")
            axes = list(range(x.ndim - len(s), x.ndim))
        s = [x.shape[a] if n == -1 else n for n, a in zip(s, axes)]
    elif noaxes:
        s, axes = list(x.shape), list(range(x.ndim))
    else:
        s = [x.shape[a] for a in axes]
    if any(n < 1 for n in s):
        raise ValueError(f"invalid number of data points ({s}) specified")
    return list(s), list(axes)


def _many(kind, forward, name):
    def transform(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None,
                  mode="exact", num_moduli=None):
        _workers(workers)
        x = _asfarray(x)
        opts = interface._opts(mode, num_moduli)
        shape, axes = _shape_and_axes(x, s, axes)
        if not axes:
            raise ValueError("at least 1 axis must be transformed")
        if kind == "c2r" and s is None:
            shape[-1] = (x.shape[axes[-1]] - 1) * 2
        if kind == "c2c":
            for n, ax in zip(shape[::-1], axes[::-1]):
                x = interface._raw(x, n, ax, "c2c", forward, norm, None, opts, name)
            return x
        if kind == "r2c":
            x = interface._raw(x, shape[-1], axes[-1], "r2c", forward, norm, None, opts, name)
            for n, ax in zip(shape[-2::-1], axes[-2::-1]):
                x = interface._raw(x, n, ax, "c2c", forward, norm, None, opts, name)
            return x
        for n, ax in zip(shape[:-1], axes[:-1]):
            x = interface._raw(x, n, ax, "c2c", forward, norm, None, opts, name)
        return interface._raw(x, shape[-1], axes[-1], "c2r", forward, norm, None, opts, name)
    transform.__name__ = name
    return transform


def _two(many):
    def transform(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None,
                  mode="exact", num_moduli=None):
        return many(x, s, axes, norm, overwrite_x, workers, plan=plan, mode=mode, num_moduli=num_moduli)
    transform.__name__ = many.__name__[:-1] + "2"          # fftn -> fft2
    return transform


_FUNCTIONS = {}
for _name, _kind, _forward in [("fft", "c2c", True), ("ifft", "c2c", False), ("rfft", "r2c", True),
                               ("irfft", "c2r", False), ("hfft", "c2r", True), ("ihfft", "r2c", False)]:
    _FUNCTIONS[_name] = _one(_kind, _forward, _name)
    _FUNCTIONS[_name + "n"] = _many(_kind, _forward, _name + "n")
    _FUNCTIONS[_name + "2"] = _two(_FUNCTIONS[_name + "n"])


def __ua_function__(method, args, kwargs):
    fn = _FUNCTIONS.get(method.__name__)
    if fn is None or kwargs.get("plan") is not None:
        return NotImplemented
    return fn(*args, **kwargs)
