"""Chinese remainder reconstruction into Kulisch limbs, exactly.

For moduli p_1..p_m with product P, let M_i = P / p_i and c_i = M_i (M_i^-1 mod p_i).
Then x = sum_i r_i c_i (mod P) for residues r_i = x mod p_i.  We form the sum
S = sum_i r_i c_i exactly in limbs (symmetric |r_i| <= 128, so no carry is
needed until the end), and lift it into (-P/2, P/2] by subtracting q P with
q = rint(S / P).  The quotient is computed in float64 from the limbs; it is
exact because every caller guarantees |x| <= moduli.crt_bound(m) = P/2 - P/2**20:
S / P is then at least 2**-20 short of a half-integer, while its float64 error
is below m * 128 * (L + 2) * 2**-52 < 2**-36 (|S| < 128 m P; L + 2 roundings).
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import kulisch
from .moduli import moduli as _moduli

__all__ = ["CRTConstants", "crt_constants", "symmetric", "remainder_near", "reconstruct"]


@dataclass(frozen=True)
class CRTConstants:
    moduli: tuple          # p_i
    P: int                 # their product
    L: int                 # limbs of the reconstructed value
    c_limbs: np.ndarray    # (m, L) int64: limbs of c_i, in [0, P)
    P_limbs: np.ndarray    # (L,) int64: limbs of P
    P_float: float         # float64(P), for the quotient estimate


@lru_cache(maxsize=None)
def crt_constants(m):
    """The CRT constants of the first ``m`` moduli of the table."""
    ps = _moduli(m)
    P = 1
    for p in ps:
        P *= p
    L = kulisch.num_limbs(P.bit_length() + 8)     # room for S = sum r_i c_i before the lift
    c = []
    for p in ps:
        Mi = P // p
        c.append(Mi * pow(Mi, -1, p) % P)
    c_limbs = np.stack([kulisch.from_int(ci, L) for ci in c])
    return CRTConstants(ps, P, L, c_limbs, kulisch.from_int(P, L), float(P))


def symmetric(v, p):
    """v mod p in the symmetric range [-floor(p/2), ceil(p/2) - 1] (int8 for p <= 256)."""
    h = p // 2
    return (v + h) % p - h


def remainder_near(f, p, scratch=None):
    """f - p rint(f / p), in place, for a float64 array f of integers below 2**53 (exact):
    a residue of f with |r| <= 1.5 p, the float64 quotient being off by at most one (and
    exactly rint(f / p), so |r| <= p / 2, when |f| < 2**35).  The GPU kernels' reduction.
    ``scratch``: an array like f for the quotient (one is made if None)."""
    q = np.multiply(f, 1.0 / p, out=scratch)
    np.rint(q, out=q)
    q *= p
    f -= q
    return f


def reconstruct(residues, m):
    """Exact x from its residues modulo the first ``m`` moduli; normalized limbs.

    ``residues``: integer array of shape (m, ...), any representatives below
    2**53 in magnitude (they are reduced here).  The true value must satisfy |x| <= crt_bound(m).
    """
    k = crt_constants(m)
    r = np.stack([remainder_near(residues[i].astype(np.float64), p).astype(np.int64)
                  for i, p in enumerate(k.moduli)])
    # S_l = sum_i r_i c_il: |r_i c_il| < 2**9 * 2**32, at most 49 terms: no overflow.
    S = np.tensordot(k.c_limbs.T, r, axes=(1, 0))
    Sf = sum(S[l].astype(np.float64) * 2.0 ** (kulisch.LIMB_BITS * l) for l in range(k.L))
    q = np.rint(Sf / k.P_float).astype(np.int64)
    S -= k.P_limbs.reshape((-1,) + (1,) * q.ndim) * q
    return kulisch.normalize(S)
