"""IEEE semantics of the transforms: NaN, infinities and signed zeros.

Every output part is defined as IEEE arithmetic on the exact terms of its DFT
sum x_n w^(kn) / div (Re = xr c - xi s, Im = xr s + xi c, c and s the parts
of w^(kn) / div), where a constant part that is exactly zero (w^(kn) = +-1
or +-i) contributes no term at all, as in the butterflies of numpy's
pocketfft:

* a part with a NaN term, or with both +inf and -inf terms, is NaN; else a
  part with an infinite term is that infinity (finite terms cannot cancel
  it); so a signal with one inf has inf at DC, and a NaN spreads only where
  its constants are nonzero;
* a part whose exact sum is zero is -0 exactly when every term is -0 (an
  x = -0 times a positive constant, +0 times a negative one; so
  fft([-0., -0.]) is [-0 + 0j, 0 + 0j] as numpy gives), else +0 (exact
  cancellation, and parts with no term at all, such as the imaginary part of
  an rfft's DC bin).

The finite transform (stages.py) runs on the data with non-finite entries
read as zeros, and its products give zero signs by their own rule (constants
that are exactly zero count there as terms); ``finish`` then sets the parts
that have special terms, and the sign of every part that came out zero.  Both
are integer work on the exponents kn mod N (whether cos and sin of
2 pi kn / N are positive, negative or zero), for the affected parts only: a
zero part is settled by a nonzero entry with a nonzero constant, and
otherwise term by term (the backends' ``zero_signs``: the GPU scans each
zero's terms until one is not -0; numpy tries two witnesses per row as
arrays first, and rows of zeros of one sign per part by a closed form).  A
zero that may be an underflow (a row with nonzero entries below 2**-800,
whose exact sums could round to zero) keeps the sign the products gave it:
the sign of its exact value.
"""

import numpy as np

from ..backends.numpy_backend import angle_signs as _signs

CHUNK = 1 << 22          # exponents formed at once
TINY = 2.0 ** -800       # rows with nonzero entries this small keep their zeros' signs


def _xp_of(a):
    return type(a).__module__.split(".")[0] == "cupy" and __import__("cupy") or np


def _host(a):
    return a.get() if type(a).__module__.split(".")[0] == "cupy" else np.asarray(a)


# The terms of each output part: (input part, constant part, negated), the input parts being
# 0 = real, 1 = imaginary (c2r: imaginary parts of bins 1..(N-1)//2 only).
_TERMS = {"c2c": [[(0, "c", False), (1, "s", True)], [(0, "s", False), (1, "c", False)]],
          "r2c": [[(0, "c", False)], [(0, "s", False)]],
          "c2r": [[(0, "c", False), (1, "s", True)]]}


def _inputs(row, kind, N):
    """Per input part: (positions, values) of the entries that have terms."""
    if kind == "r2c":
        return [(np.arange(len(row)), np.asarray(row, dtype=np.float64))]
    parts = [(np.arange(len(row)), row.real)]
    if kind == "c2r":
        k = np.arange(1, (N + 1) // 2)
        parts.append((k, row.imag[k]))
    else:
        parts.append((np.arange(len(row)), row.imag))
    return parts


def _constant_signs(n, k, ctype, N, sign):
    """Signs of the constant part ``ctype`` for entries n (m,) and outputs k (p,): (m, p)."""
    c, s = _signs(np.outer(n, k) % N, N)
    return c if ctype == "c" else s * np.int8(sign)


def prepare(x, kind, N):
    """(x with non-finite entries read as zeros, fix or None) for the 2-D rows x of a
    transform of kind "c2c", "r2c" or "c2r" (length N).  fix["tiny"]: the rows with
    entries below TINY, fix["any_tiny"] whether there is one, fix["real"] whether every
    imaginary part of the (cleaned) rows is zero; one host sync for the three answers."""
    xp = _xp_of(x)
    if x.size == 0:
        return x, None
    if kind == "c2r":
        read, imag = [x.real, x.imag[:, 1:(N + 1) // 2]], (0, 0)     # what numpy's irfft reads
    elif x.dtype.kind == "c":
        read, imag = ([x.view(xp.float64)], (2,)) if x.flags.c_contiguous else ([x.real, x.imag], (0, 1))
    else:
        read, imag = [x], (0,)
    from .. import backend_for
    bad, tiny, found = backend_for(x).row_specials(read, TINY, imag)
    any_bad = bool(found & 1)
    real = x.dtype.kind != "c" or not found & 4
    if any_bad:
        if x.dtype.kind == "c":
            clean = xp.empty_like(x)
            clean.real = xp.where(xp.isfinite(x.real), x.real, 0)
            clean.imag = xp.where(xp.isfinite(x.imag), x.imag, 0)
            x = clean
            real = None                  # a non-finite imaginary part was read as zero: unknown
        else:
            x = xp.where(xp.isfinite(x), x, 0)
    return x, {"bad": bad if any_bad else None, "tiny": tiny, "any_tiny": bool(found & 2),
               "real": None if kind == "c2r" else real}


def finish(out, fix, kind, N, sign, original):
    """Set the special parts and the signs of the zero parts of the transform ``out`` of the
    2-D rows ``original`` (the input as given, non-finite entries included)."""
    if fix is None or out.size == 0:
        return out
    xp = _xp_of(out)
    if fix["bad"] is not None:                                   # rows with NaN or inf (rare)
        rows = np.flatnonzero(_host(fix["bad"]))
        data = _host(original[xp.asarray(rows)])
        result = _host(out[xp.asarray(rows)]).copy()
        for i in range(len(rows)):
            result[i] = _specials_row(result[i], data[i], kind, N, sign)
        out[xp.asarray(rows)] = xp.asarray(result)
    # The zero parts, where the data lies (a real signal's transform has zero parts in
    # every row): the backend's zero_signs, in place on the output parts (one pass).
    from .. import backend_for
    backend = backend_for(out)
    inputs = _inputs_2d(original, kind, N)
    backend.zero_signs([out] if kind == "c2r" else [out.real, out.imag], fix["tiny"],
                       [[(inputs[p][0], inputs[p][1], ctype == "s", negated) for p, ctype, negated in terms]
                        for terms in _TERMS[kind]], N, sign)
    return out


def _inputs_2d(data, kind, N):
    """Per input part: (offset, values (rows, entries), a view) of the entries that have
    terms, entry e sitting at position offset + e."""
    if kind == "r2c":
        return [(0, data)]
    if kind == "c2r":
        return [(0, data.real), (1, data.imag[:, 1:(N + 1) // 2])]
    return [(0, data.real), (0, data.imag)]


def _specials_row(current, row, kind, N, sign):
    inputs = _inputs(row, kind, N)
    values = [current] if kind == "c2r" else [current.real.copy(), current.imag.copy()]
    k = np.arange(len(values[0]))
    for o, terms in enumerate(_TERMS[kind]):
        pos = np.zeros(len(k), dtype=bool)
        neg = np.zeros(len(k), dtype=bool)
        nan = np.zeros(len(k), dtype=bool)
        for part, ctype, negated in terms:
            n, v = inputs[part]
            special = ~np.isfinite(v)
            n, v = n[special], v[special]
            step = max(1, CHUNK // max(len(k), 1))
            for i in range(0, len(n), step):
                t = _constant_signs(n[i:i + step], k, ctype, N, sign)
                vs = np.sign(v[i:i + step])[:, None] * (-1 if negated else 1)
                isnan = np.isnan(v[i:i + step])[:, None]
                nan |= (isnan & (t != 0)).any(axis=0)
                pos |= (~isnan & (vs * t > 0)).any(axis=0)
                neg |= (~isnan & (vs * t < 0)).any(axis=0)
        special = nan | pos | neg
        values[o][special] = np.where(nan | (pos & neg), np.nan, np.where(pos, np.inf, -np.inf))[special]
    if kind == "c2r":
        return values[0]
    out = np.empty(len(values[0]), dtype=np.complex128)
    out.real, out.imag = values
    return out
