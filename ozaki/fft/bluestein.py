"""Bluestein's chirp-z transform for lengths with no (cheap) factorization.

With n k = (n**2 + k**2 - (k - n)**2) / 2,
X_k = (c_k / div) sum_n (x_n c_n) K_(k-n), c_n = exp(sign i pi n**2 / N),
K_j = conj(c_|j|): a cyclic convolution of length M = plans.bluestein_length(N)
(a power of two >= 2N - 1), M = M1 M2, done as a forward and an inverse
M-point six-step transform around the product with the kernel's spectrum.

Exact mode (``transform``, M <= EXACT_MAX): one rounding of float64 size, as
the six-step transform.  Every intermediate is carried as its rounded value
plus its exactly computed, rounded remainder, and every elementwise product as
an error-free pair (stages.times_exactly, from hi + lo factors: to about
2**-104 of the product):

    a = x c                     error-free (c = c_hi + c_lo)
    Y = F_M1 a                  stage 1 (zero rows skipped): product, remainder
    A = F_M2 (Y tw)             error-free twiddle product; product, remainder
    V = A Khat                  error-free (Khat = FFT_M(K) as hi + lo, by the
                                same steps on the kernel, once per length)
    Y' = F_M2^-1 V              the inverse with its input index k = k1 + M1 k2
                                split the other way round, so V's rows serve as
                                they are: product, remainder
    y = F_M1^-1 (Y' tw')        error-free twiddle product; product, remainder
    X = y c / (M div)           error-free, then the one rounding: X = fl(P + E)
                                (the sum of the pair rounds its value once)

Eight products of small shared matrices (one 509-point transform: ~0.15 s
instead of ~0.8 s direct), their hi + lo constants taken as exact pairs
(scheme.prepare_pair through stages.matmul: the data not doubled).  What is dropped is below 2**-100 of the terms,
as in the six-step transform.

Other modes, longer convolutions (M > EXACT_MAX), and data outside the
error-free products' range (|x| near 2**1000 or below 2**-900) take the
rounded chirp-z (``rounded``): four float64 rounding steps more than a
six-step transform (x c, the spectra product, the output chirp, and the
convolution's own transforms), L2 error 1.3-1.9e-16 for N = 4099..8198
(numpy.fft: 3.6-6.4e-16).  The kernel spectra of the rounded path are kept,
least recently used dropped past SPECTRA_CACHED.
"""

import threading

import numpy as np

from . import plans, stages, twiddles

EXACT_MAX = plans.BLUESTEIN_EXACT_MAX   # the exact path's convolution lengths (two stages)

# Bluestein kernel spectra kept (rounded path), least recently used dropped first: each is
# bluestein_length(N) complex128 values on its backend and device.
SPECTRA_CACHED = 8
_SPECTRA = {}
_LOCK = threading.Lock()
_EXACT = {"mode": "exact", "num_moduli": None}
LIFT = stages.LIFT         # remainders enter the products lifted by 2**53 (see stages.LIFT)


def exact_ok(N, opts):
    """Whether N points take the exact path in these modes."""
    M = plans.bluestein_length(N)
    f = plans.factor(M)
    return stages.split_mode(opts) and M <= EXACT_MAX and f is not None and f[1] <= plans.DIRECT_MAX


def transform(x, sign, div, opts):
    """The N-point transform of the rows of x (B, N) complex128 by the chirp-z convolution."""
    xp = stages.xp_of(x)
    B, N = x.shape
    if not exact_ok(N, opts) or not stages.in_split_range(xp, x):
        return rounded(x, sign, div, opts)
    M = plans.bluestein_length(N)
    M1, M2 = plans.factor(M)
    C = _constants(xp, N, sign, div)
    ch, cl = plans.chirp_parts(xp, N, sign)
    P, E = stages.times_exactly(x, ch[None])              # a = x c = P + D to 2**-104 of |a|
    D = E + stages.times(x, cl[None])
    A, A_rem = _forward(xp, P, D, M1, M2, C, opts)        # (M1, B, M2) each: A[k1, b, k2]
    if A is None or not stages.in_split_range(xp, A):
        return rounded(x, sign, div, opts)
    V, V_lo = _dd_times(xp, A, A_rem, *C["kernel"])
    Y, Y_rem = _shared(xp, V, V_lo, C["F2inv"], opts)     # (M1 k1, B, M2 j1)
    Y, Y_rem = Y.transpose(2, 1, 0), Y_rem.transpose(2, 1, 0)        # (M2 j1, B, M1 k1)
    if not stages.in_split_range(xp, Y):
        return rounded(x, sign, div, opts)
    T, T_lo = _dd_times(xp, Y, Y_rem, *C["tw_inv"])
    y, y_rem = _shared(xp, T, T_lo, C["F1inv"], opts)     # (M2 j1, B, M1 j2)
    P, E = _dd_times(xp, y, y_rem, *C["chirp_out"])
    X = P + E                                             # the one rounding
    return X.transpose(1, 2, 0).reshape(B, M)[:, :N]      # m = j1 + M2 j2


def _shared(xp, h, l, F, opts):
    """(F h, its remainder) for the rows of h + l (R, B, L) with one shared matrix: F the
    exact pairs ([F_hi; F_hi / LIFT], [F_lo; 0]) for [h, l LIFT] and, for its remainder,
    ([F_hi; F_hi / LIFT; -I], [F_lo; 0; 0]) for [h, l LIFT, y] (stages.matmul)."""
    R, B, L = h.shape
    rows = xp.concatenate([h, l * LIFT], axis=2).reshape(R * B, 2 * L)
    y = stages.matmul(rows, F[0], opts)
    y_rem = stages.matmul(xp.concatenate([rows, y], axis=1), F[1], opts)
    return y.reshape(R, B, -1), y_rem.reshape(R, B, -1)


def _forward(xp, Ph, Pl, M1, M2, C, opts):
    """The forward M-point transform of the zero-padded rows Ph + Pl (B, L <= M) as
    (A, A_rem), each (M1, B, M2) holding A[k1 + M1 k2] at [k1, b, k2]; None when the
    twiddle products would leave the error-free range."""
    B, L = Ph.shape
    n1 = -(-L // M2)                                      # stage-1 rows that hold data

    def columns(v):                                       # (B, L) -> (n1, B M2)
        if n1 * M2 > L:
            v = xp.concatenate([v, xp.zeros((B, n1 * M2 - L), dtype=v.dtype)], axis=1)
        return v.reshape(B, n1, M2).transpose(1, 0, 2).reshape(n1, B * M2)

    h, l = columns(Ph), columns(Pl * LIFT)
    F1, F1_rem = C["F1"][n1]
    Y = stages.matmul(F1, xp.concatenate([h, l]), opts)
    Y_rem = stages.matmul(F1_rem, xp.concatenate([h, l, Y]), opts)
    Y, Y_rem = Y.reshape(M1, B, M2), Y_rem.reshape(M1, B, M2)
    if not stages.in_split_range(xp, Y):
        return None, None
    T, T_lo = _dd_times(xp, Y, Y_rem, *C["tw"])
    return _shared(xp, T, T_lo, C["F2"], opts)


def _dd_times(xp, ah, al, bh, bl):
    """(hi, lo) with hi + lo = (ah + al)(bh + bl) to about 2**-104 of |a b| (complex:
    hi = times(ah, bh) and its exact error, plus the rounded cross terms; al bl, below
    2**-106, is dropped).  Elementwise operations only: the same bits on every backend."""
    P, E = stages.times_exactly(ah, bh)
    return P, E + (stages.times(ah, bl) + stages.times(al, bh))


def _dft_shared(n, sign):
    """An n-point DFT shared by rows, as the exact pairs ([F_hi; F_hi / LIFT], [F_lo; 0]) and
    the same with -I (and 0) appended (_shared)."""
    hi, lo = twiddles.root_parts(n, sign)
    idx = np.outer(np.arange(n), np.arange(n)) % n
    F = np.concatenate([hi[idx], hi[idx] / LIFT], axis=0)               # symmetric: rows n, columns k
    F_lo = np.concatenate([lo[idx], np.zeros((n, n), dtype=np.complex128)], axis=0)
    zero = np.zeros((n, n), dtype=np.complex128)
    return (F, F_lo), (np.concatenate([F, -np.eye(n, dtype=np.complex128)], axis=0),
                       np.concatenate([F_lo, zero], axis=0))


def _host_constants(N, sign, div):
    """The exact path's constants, on the host (see the module docstring)."""
    M = plans.bluestein_length(N)
    M1, M2 = plans.factor(M)
    C = {}
    hi, lo = twiddles.root_parts(M1, -1)
    idx = np.outer(np.arange(M1), np.arange(M1)) % M1
    F1h, F1l = hi[idx], lo[idx]
    C["F1"] = {}
    for n1 in {-(-N // M2), M1}:                          # the data's rows, the kernel's rows
        F1 = np.concatenate([F1h[:, :n1], F1h[:, :n1] / LIFT], axis=1)   # pairs for [h; l] and [h; l; Y]
        F1_lo = np.concatenate([F1l[:, :n1], np.zeros((M1, n1), dtype=np.complex128)], axis=1)
        zero = np.zeros((M1, M1), dtype=np.complex128)
        C["F1"][n1] = ((F1, F1_lo), (np.concatenate([F1, -np.eye(M1, dtype=np.complex128)], axis=1),
                                     np.concatenate([F1_lo, zero], axis=1)))
    k1 = np.arange(M1, dtype=np.int64)
    j = np.arange(M2, dtype=np.int64)
    C["tw"] = tuple(t[:, None, :] for t in twiddles.roots_at(M, k1[:, None] * j[None, :], -1))    # [k1, ., n2]
    C["tw_inv"] = tuple(t[:, None, :] for t in twiddles.roots_at(M, j[:, None] * k1[None, :], 1))  # [j1, ., k1]
    C["F2"], C["F2inv"], C["F1inv"] = _dft_shared(M2, -1), _dft_shared(M2, 1), _dft_shared(M1, 1)
    # the kernel's spectrum Khat = FFT_M(K), K_j = conj(c_|j|), as hi + lo
    ch, cl = plans.chirp_parts(np, N, sign)
    K = np.zeros((2, M), dtype=np.complex128)
    for part, c in enumerate((ch, cl)):
        K[part, :N] = np.conj(c)
        K[part, M - N + 1:] = np.conj(c[1:])[::-1]
    C["kernel"] = _forward(np, K[:1], K[1:], M1, M2, C, _EXACT)           # (M1, 1, M2) each
    # the output chirp with the scale, c_m / (M div) at [j1, ., j2], m = j1 + M2 j2 (0 past N)
    sh, sl = plans.chirp_parts(np, N, sign, div)
    m = j[:, None] + M2 * k1[None, :]
    inside = m < N
    C["chirp_out"] = tuple(np.where(inside, t[np.where(inside, m, 0)], 0)[:, None, :] / M for t in (sh, sl))
    return C


def _constants(xp, N, sign, div):
    key = ("bluestein", N, sign, div)
    return plans.cached_tree(xp, key, lambda: _host_constants(N, sign, div))


# ------------------------------------------------------------ rounded path --

def chirp_spectrum(xp, N, M, sign, opts):
    """FFT_M of b, b_j = conj(c_|j|) for |j| < N wrapped around M (the convolution kernel)."""
    device = xp.cuda.Device().id if xp.__name__ == "cupy" else None
    key = (xp.__name__, device, N, M, sign, tuple(sorted(opts.items())))
    from ..backends import host
    with _LOCK:
        if key in _SPECTRA:
            _SPECTRA[key] = _SPECTRA.pop(key)                 # most recently used last
            return host.keep(_SPECTRA[key])                   # a graph reading it keeps it
    b = xp.zeros(M, dtype=xp.complex128)
    cc = xp.conj(plans.chirp(xp, N, sign))
    b[:N] = cc
    b[M - N + 1:] = cc[1:][::-1]
    from ..scheme import zero_signs_settled_elsewhere
    # kept for later calls: the same bits whatever the caller; its host reads are the
    # constant's, no decision of a call a graph replays
    with zero_signs_settled_elsewhere(False), host.speculating(None):
        spectrum = stages.transform(b[None], -1, 1, opts)[0]
    host.keep(spectrum)
    with _LOCK:
        _SPECTRA[key] = spectrum
        while len(_SPECTRA) > SPECTRA_CACHED:
            del _SPECTRA[next(iter(_SPECTRA))]            # the least recently used
    return spectrum


def rounded(x, sign, div, opts):
    """The chirp-z transform with every step rounded: x c, two M-point transforms and the
    spectra product, the output chirp (carrying the norm's scale)."""
    xp = stages.xp_of(x)
    B, N = x.shape
    M = plans.bluestein_length(N)
    a = xp.zeros((B, M), dtype=xp.complex128)
    a[:, :N] = stages.times(x, plans.chirp(xp, N, sign))
    A = stages.transform(a, -1, 1, opts)
    y = stages.transform(stages.times(A, chirp_spectrum(xp, N, M, sign, opts)[None]), 1, M, opts)
    return stages.times(y[:, :N], plans.chirp(xp, N, sign, div)[None])
