from fractions import Fraction
from math import gcd, prod

import pytest

from ozaki import crt


def test_table_is_pairwise_coprime_and_int8():
    table = crt.moduli(crt.max_num_moduli())
    assert crt.check_table()
    for i, p in enumerate(table):
        assert 2 <= p <= 256
        assert all(gcd(p, q) == 1 for q in table[:i])
    assert table[:4] == (256, 255, 253, 251)


def test_greedy_is_maximal():
    # No number <= 256 can be added: every candidate shares a factor with the table.
    table = crt.moduli(crt.max_num_moduli())
    for c in range(2, 257):
        if c not in table:
            assert any(gcd(c, p) > 1 for p in table)


def test_check_table_rejects():
    with pytest.raises(AssertionError):
        crt.check_table([256, 254])
    with pytest.raises(AssertionError):
        crt.check_table([257])


@pytest.mark.parametrize("m", [1, 2, 8, 16, 49])
def test_usable_bits(m):
    P = prod(crt.moduli(m))
    assert crt.product(m) == P
    L = crt.usable_bits(m)
    bound = crt.crt_bound(m)
    assert 2 ** L <= bound < 2 ** (L + 1)
    # The quotient rint(S / P) needs |x| / P at least 2**-20 short of 1/2.
    assert Fraction(bound, P) <= Fraction(1, 2) - Fraction(1, 2 ** 20)
    assert crt.crt_bound_float(m) <= bound
    assert crt.num_moduli_for_bits(L) <= m


def test_bad_counts():
    with pytest.raises(ValueError):
        crt.moduli(0)
    with pytest.raises(ValueError):
        crt.moduli(crt.max_num_moduli() + 1)
    with pytest.raises(ValueError, match="needs more than"):
        crt.num_moduli_for_bits(10_000)
