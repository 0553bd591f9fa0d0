"""The exact references agree with each other and with mpmath at high precision."""

from fractions import Fraction

import numpy as np
import pytest

from ozaki.linalg import matrices, reference


@pytest.mark.parametrize("make", [lambda r: matrices.random_cond(14, 1e12, r), lambda r: matrices.hilbert(9),
                                  lambda r: matrices.graded(12, 20, r)])
def test_bareiss_refined_and_mpmath_agree(rng, make):
    a = make(rng)
    b = rng.standard_normal((a.shape[0], 2))
    xb = reference.solve_bareiss(a, b)
    xr = reference.solve_refined(a, b)
    xm = reference.solve_mpmath(a, b, dps=100)
    for i in range(a.shape[0]):
        for j in range(2):
            exact = xb[i][j]
            assert abs(xr[i][j] - exact) <= abs(exact) * Fraction(1, 10 ** 30)
            assert abs(reference.as_fraction(xm[i][j]) - exact) <= abs(exact) * Fraction(1, 10 ** 40)


def test_bareiss_is_exact():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = reference.solve_bareiss(a, np.array([1.0, 0.0]))
    assert x == [Fraction(3, 5), Fraction(-1, 5)]
    with pytest.raises(ZeroDivisionError):
        reference.solve_bareiss(np.ones((2, 2)), np.ones(2))


def test_refined_falls_back_on_hard_matrices(rng):
    a = matrices.hilbert(13)                          # cond ~ 1e18: LAPACK corrections do not converge
    b = rng.standard_normal(13)
    assert reference.solve_refined(a, b) == reference.solve_bareiss(a, b)


def test_errors_figures():
    xs = [[Fraction(1, 3)], [Fraction(2)], [Fraction(0)]]
    x = np.array([[1 / 3], [2.0], [0.0]])
    e = reference.errors(x, xs)
    assert e["max_ulp"][0] < 0.5 and e["rounded"][0] == 1.0 and e["componentwise"][0] == float(
        abs(Fraction(1 / 3) - Fraction(1, 3)) / Fraction(1 / 3))
    x2 = x.copy()
    x2[1, 0] = np.nextafter(2.0, 3.0)
    e2 = reference.errors(x2, xs)
    assert e2["max_ulp"][0] == 1.0 and e2["rounded"][0] == pytest.approx(2 / 3)
    assert e2["normwise"][0] == pytest.approx(2.0 ** -51 / np.nextafter(2.0, 3.0))
    x3 = x.copy()
    x3[2, 0] = 1e-300
    assert reference.errors(x3, xs)["componentwise"][0] == 1.0
    assert reference.errors(x3, xs)["max_ulp"][0] == float("inf")
