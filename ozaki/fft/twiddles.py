"""DFT constants: roots of unity from mpmath at high precision, each part rounded once.

w_N^j = exp(sign 2 pi i j / N) * scale is evaluated at ``PRECISION`` bits and
its real and imaginary parts are each rounded to the nearest float64 (mpmath's
conversion of a value far from a tie is correctly rounded; at 200 bits a tie
cannot be reached by these transcendental values).  Matrices are gathered from
the length-N table by exponent, so every entry is one correctly rounded root.
"""

from functools import lru_cache

import mpmath
import numpy as np

PRECISION = 200


def roots(N, sign, div=1):
    """complex128 (N,): exp(sign 2 pi i j / N) / d, j = 0..N-1, parts correctly rounded.

    ``div``: 1 (no scaling), a positive d (times 1/d), or -d (times 1/sqrt(d)):
    the normalizations of numpy.fft folded into the constants.
    """
    return root_parts(N, sign, div)[0]


@lru_cache(maxsize=64)
def root_parts(N, sign, div=1):
    """(hi, lo): hi = the rounded roots, lo = the rounded remainder (root - hi).

    hi + lo carries each root to about 106 bits: the FFT uses both so that its
    constants add no rounding error of float64 size.
    """
    # cos and sin (times the scale) of 2 pi j / N, each correctly rounded; with N
    # a multiple of 8 only the first octant is evaluated and the rest follows by
    # exact symmetries (swaps and negations keep correct rounding).
    count = N // 8 + 1 if N % 8 == 0 else N
    c, t, c_lo, t_lo = (np.zeros(count) for _ in range(4))
    with mpmath.workprec(PRECISION):
        scale = 1 / mpmath.sqrt(mpmath.mpf(-div)) if div < 0 else 1 / mpmath.mpf(div)
        step = 2 * mpmath.pi / N
        for j in range(count):
            if 4 * j % N == 0:          # 0, pi/2, pi, 3 pi/2: exact
                cv, tv = [(1, 0), (0, 1), (-1, 0), (0, -1)][4 * j // N]
                cv, tv = cv * scale, tv * scale
            else:
                cv, tv = mpmath.cos(step * j) * scale, mpmath.sin(step * j) * scale
            c[j], t[j] = float(cv), float(tv)
            c_lo[j], t_lo[j] = float(cv - c[j]), float(tv - t[j])
    return _unfold(N, c, t, sign), _unfold(N, c_lo, t_lo, sign)


def _unfold(N, c, t, sign):
    """cos, sin on the first octant (N % 8 == 0) or everywhere -> the N roots, by exact symmetries."""
    if N % 8 == 0:
        j = np.arange(N)
        q = N // 4
        jj = np.minimum(j % (N // 2), N // 2 - j % (N // 2))      # fold into [0, N/4]
        first = jj <= N // 8
        near = np.minimum(jj, N // 8)
        far = np.minimum(np.abs(q - jj), N // 8)
        base_c = np.where(first, c[near], t[far])
        base_s = np.where(first, t[near], c[far])
        # quadrant signs: cos is negative on (N/4, 3N/4), sin on (N/2, N)
        c = np.where((j > q) & (j < 3 * q), -base_c, base_c)
        t = np.where(j > 2 * q, -base_s, base_s)
    out = np.empty(N, dtype=np.complex128)
    out.real = c
    out.imag = sign * t
    return out


def dft_matrix(N, sign, div=1, part=0):
    """F[k, n] = w_N^(k n) / div: the length-N DFT as a matrix (complex128, N x N).

    part=0: the rounded entries; part=1: their rounded remainders.
    """
    w = root_parts(N, sign, div)[part]
    idx = np.outer(np.arange(N), np.arange(N)) % N
    return w[idx]


def stage2_matrices(N1, N2, sign, div=1, part=0):
    """G[k1, k2, n2] = w_N^(n2 (k1 + N1 k2)) / div, N = N1 N2: the twiddles folded in.

    Stage 2 of the six-step transform for output k = k1 + N1 k2 is
    X[k] = sum_n2 G[k1, k2, n2] Y[k1, n2]: one small matrix per row k1, so the
    twiddle scaling costs no rounding of its own.
    """
    N = N1 * N2
    w = root_parts(N, sign, div)[part]
    k1 = np.arange(N1)[:, None, None]
    k2 = np.arange(N2)[None, :, None]
    n2 = np.arange(N2)[None, None, :]
    return w[(n2 * (k1 + N1 * k2)) % N]
