"""Moduli tables for Ozaki Scheme II.

The table is generated, not typed in: walk down from 256 and keep every number
that is coprime to all numbers kept so far.  Every modulus is at most 256, so
its symmetric residues fit int8 ([-128, 127] for 256, [-127, 127] for the odd
ones), and the first ``m`` entries give the largest product P that ``m``
pairwise-coprime int8 moduli can give under a greedy choice (GEMMul8 uses the
same table).
"""

from functools import lru_cache
import math
from math import gcd, prod

__all__ = ["MAX_MODULUS", "moduli", "max_num_moduli", "product", "crt_bound", "crt_bound_float",
           "usable_bits", "num_moduli_for_bits", "check_table"]

MAX_MODULUS = 256

# The CRT step lifts the sum S = sum_i r_i c_i into (-P/2, P/2] with a
# quotient q = rint(S / P) computed in float64.  S / P is off an integer by
# |x| / P, and its float64 error is below 2**-36 (reconstruct.py), so the
# quotient is exact whenever |x| / P stays 2**-20 short of 1/2: every mode
# keeps |C'| <= crt_bound(m) = P/2 - P/2**20.
CRT_SLACK_BITS = 20


@lru_cache(maxsize=None)
def _greedy_table():
    chosen = []
    for p in range(MAX_MODULUS, 1, -1):
        if all(gcd(p, q) == 1 for q in chosen):
            chosen.append(p)
    return tuple(chosen)


def max_num_moduli():
    """How many moduli the table holds."""
    return len(_greedy_table())


def moduli(m):
    """The first ``m`` moduli of the table, a tuple of Python ints."""
    table = _greedy_table()
    if not 1 <= m <= len(table):
        raise ValueError(f"num_moduli must be in [1, {len(table)}], got {m}")
    return table[:m]


def product(m):
    """P, the product of the first ``m`` moduli (a Python int)."""
    return prod(moduli(m))


@lru_cache(maxsize=None)
def crt_bound(m):
    """The largest |x| (a Python int) that the CRT of ``m`` moduli reconstructs exactly."""
    P = product(m)
    return (P >> 1) - (P >> CRT_SLACK_BITS) - 1          # <= P/2 - P/2**20


@lru_cache(maxsize=None)
def crt_bound_float(m):
    """crt_bound(m) as a float64, rounded down (so x <= this bounds x <= crt_bound)."""
    b = crt_bound(m)
    f = float(b)
    return math.nextafter(f, 0.0) if int(f) > b else f


def usable_bits(m):
    """Bits L such that an integer product bounded by 2**L reconstructs exactly: 2**L <= crt_bound(m)."""
    return crt_bound(m).bit_length() - 1


def num_moduli_for_bits(bits):
    """The fewest moduli whose usable_bits reach ``bits``; ValueError if none."""
    for m in range(1, max_num_moduli() + 1):
        if usable_bits(m) >= bits:
            return m
    raise ValueError(
        f"a product bound of 2**{bits} needs more than the {max_num_moduli()} "
        f"moduli of the table ({usable_bits(max_num_moduli())} usable bits)")


def check_table(table=None):
    """Assert that ``table`` (default: the full table) is pairwise coprime and fits int8."""
    table = _greedy_table() if table is None else tuple(table)
    for i, p in enumerate(table):
        if not 2 <= p <= MAX_MODULUS:
            raise AssertionError(f"modulus {p} does not give int8 residues")
        for q in table[:i]:
            if gcd(p, q) != 1:
                raise AssertionError(f"moduli {q} and {p} are not coprime")
    return True
