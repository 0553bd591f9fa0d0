"""How each length is transformed, and the constant matrices of every plan, cached.

``choose(N, rows)`` picks the algorithm of a transform of ``rows`` rows of
length N.  On the emulated products a call costs about one fixed overhead
(planning, residues, CRT: ~1-2 ms on the CPU), plus work per residue of the
operands (the constant matrix's residues are formed on every call) and per
output (the CRT epilogue, ~1-3 us per complex output on the CPU), so:

* N <= SMALL_DIRECT (64): one product with the DFT matrix ("direct").
* N <= DIRECT_MAX (256): direct for FOLD_MIN_ROWS rows or more (fewest
  outputs); for fewer rows six-step when N factors (two small constant
  matrices instead of one N x N: one 256-point transform 40 ms -> 8 ms).
* longer N: six-step when N = N1 N2 with N1 <= 256 and N2 factoring again;
  else direct up to DIRECT_ANY_MAX, Bluestein beyond.

The row count matters only through FOLD_MIN_ROWS (and stage 2's path, the
same threshold), so a batch split into blocks of at least FOLD_MIN_ROWS rows
gives the whole batch's bits (ozaki.dask relies on it).

Constants (twiddles.py: correctly rounded hi + lo) are kept per array module
and device in a byte-bounded cache, least recently used dropped first.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import twiddles

DIRECT_MAX = 256          # the six-step radix bound; direct DFT for many rows up to here
SMALL_DIRECT = 64         # direct at any row count up to here
DIRECT_ANY_MAX = 4096     # lengths without a usable factorization: direct DFT up to here
FOLD_MIN_ROWS = 16        # rows from which stage 2 folds its twiddles (and 65..256 go direct)
CACHE_BYTES = 1 << 30     # constants kept per array module and device


@dataclass(frozen=True)
class Plan:
    algorithm: str        # "direct", "six-step" or "bluestein"
    N1: int = 0
    N2: int = 0


@lru_cache(maxsize=None)
def factor(N):
    """(N1, N2) with N = N1 N2 and N1 <= DIRECT_MAX, or None if there is none.

    Two stages (N2 <= DIRECT_MAX too) when possible, the most balanced pair:
    a small N2 makes stage 2's per-row N2 x N2 products thin (512 = 256 x 2
    would multiply by 2 x 2 matrices).  Else the largest N1 whose N2 factors.
    """
    divisors = [N1 for N1 in range(min(N - 1, DIRECT_MAX), 1, -1) if N % N1 == 0]
    two_stage = [(N1, N // N1) for N1 in divisors if N // N1 <= DIRECT_MAX]
    if two_stage:
        return min(two_stage, key=lambda f: (abs(f[0] - f[1]), -f[0]))
    deeper = [(N1, N // N1) for N1 in divisors if factor(N // N1) is not None]
    return deeper[0] if deeper else None


@lru_cache(maxsize=4096)
def choose(N, rows):
    """The Plan for ``rows`` transforms of length N (only rows >= FOLD_MIN_ROWS matters)."""
    many = rows >= FOLD_MIN_ROWS
    f = factor(N) if N > SMALL_DIRECT else None
    if N <= SMALL_DIRECT or (N <= DIRECT_MAX and (many or f is None)):
        return Plan("direct")
    if f is not None:
        return Plan("six-step", *f)
    return Plan("direct") if N <= DIRECT_ANY_MAX else Plan("bluestein")


def algorithm(N, rows=FOLD_MIN_ROWS):
    """How ``rows`` transforms of N points run: "direct" (one DFT product), "six-step" or
    "bluestein" (the default row count is a batch: lengths up to 256 are then direct)."""
    return choose(int(N), max(1, int(rows))).algorithm


def bluestein_length(N):
    """The convolution length of Bluestein's algorithm for N points: the power of two
    at or above 2N - 1 (the six-step transform's cheapest and most exact lengths:
    many of their roots of unity are exact)."""
    return 1 << (2 * N - 2).bit_length()


# ------------------------------------------------------------------ cache --

_CACHE = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _device_key(xp):
    if xp.__name__ == "cupy":
        return ("cupy", xp.cuda.Device().id)
    return ("numpy",)


def cached(xp, key, build):
    """The arrays ``build()`` returns, moved to xp's current device, kept under ``key``."""
    full = _device_key(xp) + key
    with _CACHE_LOCK:
        if full in _CACHE:
            _CACHE.move_to_end(full)
            return _CACHE[full]
    value = build()
    value = tuple(xp.asarray(v) for v in value) if isinstance(value, tuple) else xp.asarray(value)
    with _CACHE_LOCK:
        _CACHE[full] = value
        _CACHE.move_to_end(full)
        total = sum(_nbytes(v) for v in _CACHE.values())
        while total > CACHE_BYTES and len(_CACHE) > 1:
            _, old = _CACHE.popitem(last=False)
            total -= _nbytes(old)
    return value


def _nbytes(v):
    return sum(a.nbytes for a in v) if isinstance(v, tuple) else v.nbytes


def clear_cache():
    with _CACHE_LOCK:
        _CACHE.clear()


# -------------------------------------------------------------- constants --

def _dft_parts(N, sign, div, split):
    """The N-point DFT matrix F[k, n] = w^(kn) / div: [hi] or [hi, lo] (host arrays)."""
    hi, lo = twiddles.root_parts(N, sign, div)
    idx = np.outer(np.arange(N), np.arange(N)) % N
    return [hi[idx]] + ([lo[idx]] if split else [])


def direct(xp, N, sign, div, split):
    """Right operand of a direct c2c product: F, or [F_hi; F_lo] for [x, x] @ it."""
    return cached(xp, ("direct", N, sign, div, split),
                  lambda: np.concatenate(_dft_parts(N, sign, div, split), axis=0))


def real_direct(xp, N, sign, div, split):
    """Right operand of a direct r2c product: [Re F | Im F] over the N // 2 + 1 output
    columns (stacked hi over lo when split)."""
    m = N // 2 + 1

    def build():
        parts = [np.concatenate([F[:, :m].real, F[:, :m].imag], axis=1) for F in _dft_parts(N, sign, div, split)]
        return np.concatenate(parts, axis=0)
    return cached(xp, ("real", N, sign, div, split), build)


def hermitian_direct(xp, N, sign, div, split):
    """Right operand of a direct c2r product: rows c_k Re w^(kn) / div for the bins
    k = 0..N // 2 and -c_k Im w^(kn) / div for k = 1..(N - 1) // 2, c_k = 2 for the
    bins that stand for a conjugate pair and 1 for bin 0 and the Nyquist bin (times 2
    is exact, so every entry stays correctly rounded); stacked hi over lo when split."""
    m = N // 2 + 1
    odd = (N - 1) // 2

    def build():
        weight = np.full((m, 1), 2.0)
        weight[0] = 1.0
        if N % 2 == 0:
            weight[-1] = 1.0
        parts = [np.concatenate([F[:m].real * weight, -2.0 * F[1:1 + odd].imag], axis=0)
                 for F in _dft_parts(N, sign, div, split)]
        return np.concatenate(parts, axis=0)
    return cached(xp, ("hermitian", N, sign, div, split), build)


def stage1(xp, N1, sign, split):
    """Left operands of stage 1: (F1) or ([F1_hi, F1_lo], [F1_hi, F1_lo, -I]) for the
    product with [X; X] and the exact remainder with [X; X; Y]."""
    def build():
        parts = _dft_parts(N1, sign, 1, split)
        if not split:
            return (parts[0],)
        return (np.concatenate(parts, axis=1),
                np.concatenate(parts + [-np.eye(N1, dtype=np.complex128)], axis=1))
    return cached(xp, ("stage1", N1, sign, split), build)


def stage2_few(xp, N2, sign, div):
    """[F2_hi; F2_lo; F2_hi]: stage 2 for few rows, after the error-free twiddle product."""
    def build():
        hi, lo = _dft_parts(N2, sign, div, True)
        return np.concatenate([hi, lo, hi], axis=0)
    return cached(xp, ("stage2_few", N2, sign, div), build)


def stage2_folded(xp, N1, N2, sign, div, split):
    """Stage 2 with the twiddles folded in: G[k1] (N2 x N2) with
    G[k1, n2, k2] = w_N^(n2 (k1 + N1 k2)) / div, or [G_hi; G_lo; G_hi] along n2."""
    def build():
        N = N1 * N2
        k1 = np.arange(N1)[:, None, None]
        n2 = np.arange(N2)[None, :, None]
        k2 = np.arange(N2)[None, None, :]
        hi, lo = twiddles.root_parts(N, sign, div)
        idx = (n2 * (k1 + N1 * k2)) % N
        if not split:
            return hi[idx]
        return np.concatenate([hi[idx], lo[idx], hi[idx]], axis=1)
    return cached(xp, ("stage2_folded", N1, N2, sign, div, split), build)


def twiddle_grid(xp, N1, N2, sign, split):
    """The twiddles w_N^(k1 n2) between the stages, (N1, N2): (hi,) or (hi, lo)."""
    def build():
        N = N1 * N2
        j = np.arange(N1, dtype=np.int64)[:, None] * np.arange(N2, dtype=np.int64)[None, :]
        hi, lo = twiddles.roots_at(N, j, sign)
        return (hi, lo) if split else (hi,)
    return cached(xp, ("twiddles", N1, N2, sign, split), build)


def chirp(xp, N, sign, div=1):
    """c_n = exp(sign i pi n**2 / N) / div (numpy's norm scale as in twiddles.roots), n < N,
    each part correctly rounded: the roots of unity of order 2N at n**2 mod 2N."""
    def build():
        n = np.arange(N, dtype=np.int64)
        return twiddles.roots_at(2 * N, (n * n) % (2 * N), sign, div)[0]
    return cached(xp, ("chirp", N, sign, div), build)
