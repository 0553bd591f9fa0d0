"""IEEE semantics of the transforms: NaN, infinities and signed zeros.

Every output is defined as IEEE arithmetic on the exact terms of its DFT sum
x_n w^(kn) (real and imaginary parts expanded: Re = xr c - xi s,
Im = xr s + xi c with c, s the parts of w^(kn) / div), where a constant part
that is exactly zero (w^(kn) = +-1 or +-i) contributes no term at all, as in
the butterflies of numpy's pocketfft:

* a part with a NaN term, or with both +inf and -inf terms, is NaN; else a
  part with an infinite term is that infinity (finite terms cannot cancel it);
  so a signal with one inf has inf at DC (and a NaN, NaN only where its
  constants are nonzero);
* a part whose terms are all zeros is -0 exactly when every term is -0
  (x -0 times a positive constant, +0 times a negative one), else +0; so
  fft([-0., -0.]) is [-0 + 0j, 0 + 0j] as numpy gives.

The finite transform (stages.py) runs on the data with non-finite entries
read as zeros; ``finish`` then sets the parts that have special terms, and
the signs of the outputs of rows whose entries are all zeros.  Both are
integer work on the exponents kn mod N (whether cos and sin of 2 pi kn / N
are positive, negative or zero), on the host, for the affected rows only:
O(N) per special entry, O(N) per zero row whose zeros share one sign per
part, O(N**2) per zero row of mixed signs (an adversarial input).
Other exact-zero outputs (cancellation) are +0 and underflows keep the sign
of their exact value, as ozaki.matmul's products give them.
"""

import numpy as np

CHUNK = 1 << 22          # exponents formed at once


def _host(a):
    return a.get() if hasattr(a, "get") and type(a).__module__.split(".")[0] == "cupy" else np.asarray(a)


def _signs(j, N):
    """(sign of cos 2 pi j / N, sign of sin 2 pi j / N) as int8 arrays, exactly from j in [0, N)."""
    j4 = 4 * j
    c = np.where((j4 < N) | (j4 > 3 * N), 1, np.where((j4 == N) | (j4 == 3 * N), 0, -1)).astype(np.int8)
    s = np.where((j == 0) | (2 * j == N), 0, np.where(2 * j < N, 1, -1)).astype(np.int8)
    return c, s


def prepare(x, kind, N):
    """(x with non-finite entries read as zeros, fix or None) for the 2-D rows x of a
    transform of kind "c2c", "r2c" or "c2r" (length N)."""
    xp = type(x).__module__.split(".")[0] == "cupy" and __import__("cupy") or np
    if x.size == 0:
        return x, None
    finite = xp.isfinite(x)
    if kind == "c2r":                              # imaginary parts numpy's irfft never reads
        ignored = xp.zeros(x.shape, dtype=bool)
        ignored[:, 0] = True
        if N % 2 == 0 and x.shape[1] == N // 2 + 1:
            ignored[:, -1] = True
        finite = xp.isfinite(x.real) & (xp.isfinite(x.imag) | ignored)
    bad_rows = ~finite.all(axis=1)
    zero_rows = ~(x != 0).any(axis=1) if kind != "c2r" else ~((x.real != 0).any(axis=1)
                                                             | (x.imag[:, 1:(N + 1) // 2] != 0).any(axis=1))
    if not bool(bad_rows.any()) and not bool(zero_rows.any()):
        return x, None
    bad = np.flatnonzero(_host(bad_rows))
    zero = np.flatnonzero(_host(zero_rows))
    fix = {"bad": bad, "zero": zero, "rows": _host(x[xp.asarray(np.concatenate([bad, zero]))])}
    if bad.size:
        if kind == "c2r":
            clean = xp.where(xp.isfinite(x.real), x.real, 0) + 0j
            clean.imag = xp.where(xp.isfinite(x.imag), x.imag, 0)
            x = clean
        else:
            x = xp.where(xp.isfinite(x), x, 0) if x.dtype.kind == "f" else _finite_complex(xp, x)
    return x, fix


def _finite_complex(xp, x):
    out = xp.empty_like(x)
    out.real = xp.where(xp.isfinite(x.real), x.real, 0)
    out.imag = xp.where(xp.isfinite(x.imag), x.imag, 0)
    return out


def finish(out, fix, kind, N, sign):
    """Set the special parts and the zero rows' signs in the transform ``out`` (2-D rows)."""
    if fix is None:
        return out
    xp = type(out).__module__.split(".")[0] == "cupy" and __import__("cupy") or np
    rows = fix["rows"]
    nb = len(fix["bad"])
    for r, row in zip(fix["bad"], rows[:nb]):
        current = _host(out[int(r)])
        out[int(r)] = xp.asarray(_special_row(current, row, kind, N, sign))
    for r, row in zip(fix["zero"], rows[nb:]):
        out[int(r)] = xp.asarray(_zero_row(row, kind, N, sign, out.dtype))
    return out


def _terms(row, kind, N, sign):
    """Per input entry that can contribute: (index, value, which) with which 0 for real
    parts and 1 for imaginary parts (c2r: bins 0 and N/2 have no imaginary term)."""
    if kind == "r2c":
        return [(np.arange(len(row)), row.astype(np.float64), 0)]
    parts = [(np.arange(len(row)), row.real, 0)]
    if kind == "c2r":
        k = np.arange(1, (N + 1) // 2)
        parts.append((k, row.imag[k], 1))
    else:
        parts.append((np.arange(len(row)), row.imag, 1))
    return parts


def _outputs(kind, N):
    return np.arange(N // 2 + 1 if kind == "r2c" else N)


def _term_signs(n, which, k, N, sign, kind):
    """For entries n (parts ``which``) and outputs k: the signs (-1, 0, 1) of the constant
    each entry is multiplied by in the real and the imaginary part of each output
    (c2r: the real output only; its imaginary-part terms carry -s)."""
    c, s = _signs(np.outer(n, k) % N, N)
    s = s * np.int8(sign)
    if kind == "c2r":
        return (c if which == 0 else -s), None
    if which == 0:
        return c, s                        # xr c -> Re, xr s -> Im
    return -s, c                           # -xi s -> Re, xi c -> Im


def _special_row(current, row, kind, N, sign):
    k = _outputs(kind, N)
    nparts = 1 if kind == "c2r" else 2
    pos = np.zeros((nparts, len(k)), dtype=bool)
    neg = np.zeros_like(pos)
    nan = np.zeros_like(pos)
    for n, v, which in _terms(row, kind, N, sign):
        special = ~np.isfinite(v)
        n, v = n[special], v[special]
        step = max(1, CHUNK // max(len(k), 1))
        for i in range(0, len(n), step):
            nn, vv = n[i:i + step], v[i:i + step]
            for p, t in enumerate(_term_signs(nn, which, k, N, sign, kind)[:nparts]):
                vs = np.sign(vv)[:, None]
                isnan = np.isnan(vv)[:, None]
                nan[p] |= (isnan & (t != 0)).any(axis=0)
                pos[p] |= (~isnan & (vs * t > 0)).any(axis=0)
                neg[p] |= (~isnan & (vs * t < 0)).any(axis=0)
    result = np.where(nan | (pos & neg), np.nan, np.where(pos, np.inf, np.where(neg, -np.inf, np.nan)))
    touched = nan | pos | neg
    if kind == "c2r":
        return np.where(touched[0], result[0], current)
    out = current.copy()
    out.real = np.where(touched[0], result[0], current.real)
    out.imag = np.where(touched[1], result[1], current.imag)
    return out


def _zero_row(row, kind, N, sign, dtype):
    """The transform of a row of zeros: every part +0 but where all its terms are -0."""
    k = _outputs(kind, N)
    nparts = 1 if kind == "c2r" else 2
    terms = _terms(row, kind, N, sign)
    negative = np.ones((nparts, len(k)), dtype=bool)
    present = np.zeros((nparts, len(k)), dtype=bool)
    uniform = all(len(v) == 0 or np.all(np.signbit(v)) or not np.any(np.signbit(v)) for _, v, _ in terms)
    if uniform:
        # One sign per part: only output 0 can have all terms -0 (every other output has
        # constants of both signs among its nonzero ones), and there the terms are the
        # entries of the part times 1 (cos 0) in the matching output part.
        negative[:, 1:] = False
        for n, v, which in terms:
            if len(v):
                p = 0 if kind == "c2r" else which          # xr -> Re X_0, xi -> Im X_0 (s = 0)
                if kind == "c2r" and which == 1:
                    continue                                # sin 0 = 0: no term
                present[p, 0] = True
                negative[p, 0] &= bool(np.all(np.signbit(v)))
    else:
        step = max(1, CHUNK // max(len(row), 1))
        for k0 in range(0, len(k), step):
            kk = k[k0:k0 + step]
            for n, v, which in terms:
                signbit = np.signbit(v)[:, None]
                for p, t in enumerate(_term_signs(n, which, kk, N, sign, kind)[:nparts]):
                    # a term (entry times constant t != 0) is -0 when the signs differ
                    is_term = t != 0
                    present[p, k0:k0 + step] |= is_term.any(axis=0)
                    negative[p, k0:k0 + step] &= np.all(~is_term | (signbit != (t < 0)), axis=0)
    value = np.where(negative & present, -0.0, 0.0)
    if kind == "c2r":
        return value[0]
    out = np.empty(len(k), dtype=dtype)
    out.real = value[0]
    out.imag = value[1]
    return out
