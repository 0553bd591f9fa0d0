"""The pipeline's reads of device values on the host, in one place.

A GPU call stops for the host wherever a decision depends on the data: exact
mode's slicing (the rows' spans), the IEEE flags, an FFT's special rows.  Every
such read goes through ``read``.  Outside a speculation it is the plain
transfer (numpy arrays pass through).  Inside one (graphs.speculated: a call
replayed as a CUDA graph with the decisions of an earlier call of the same
shape) it returns the value recorded then, and queues a device-side check that
the new value is one the recorded decisions also serve (``bounds``); the graph's
one read at its end says whether every check held, and the call runs again
eagerly where one did not.
"""

import threading

import numpy as np

_local = threading.local()


def active():
    """The speculation of this thread's current call (graphs.Speculation), or None."""
    return getattr(_local, "speculation", None)


class speculating:
    """Context: ``read`` and ``keep`` go to ``speculation`` inside it (None: plain reads)."""

    def __init__(self, speculation):
        self.speculation = speculation

    def __enter__(self):
        self.old = active()
        _local.speculation = self.speculation
        return self.speculation

    def __exit__(self, *exc):
        _local.speculation = self.old


def read(x, bounds=None, widen=None):
    """``x`` (a device or host array) as a numpy array.

    ``bounds``: a function of the value read (a numpy array) giving (lo, hi), arrays
    of x's shape, such that every value with lo <= x <= hi (elementwise) leads the
    caller to the same results as this one: exact mode's plan holds any spans up to
    what its slices and moduli carry.  None: only the same value does.  ``widen``: under
    a speculation, the value to decide by instead of the one read (one that serves it
    and nearby values too: exact mode plans for a few bits more than the data spans).
    """
    speculation = active()
    if speculation is None or isinstance(x, np.ndarray) or not hasattr(x, "get"):
        return x.get() if hasattr(x, "get") else np.asarray(x)
    return speculation.read(x, bounds, widen)


def keep(value):
    """Keep ``value`` (a cached constant a call reads by address) alive as long as the
    graph being captured, if one is: a byte-bounded cache may drop it while the graph
    still reads it.  Returns value."""
    speculation = active()
    if speculation is not None:
        speculation.keep(value)
    return value
