"""The test matrices are what they claim to be."""

import math

import numpy as np
import pytest

from ozaki.linalg import matrices


@pytest.mark.parametrize("cond", [1e2, 1e8, 1e13])
def test_random_cond_has_the_condition_number(rng, cond):
    a = matrices.random_cond(30, cond, rng)
    assert np.linalg.cond(a) == pytest.approx(cond, rel=1e-2)
    s = matrices.random_cond(30, cond, rng, spd=True)
    assert np.array_equal(s, s.T)
    assert np.linalg.cond(s) == pytest.approx(cond, rel=1e-2)
    assert np.linalg.eigvalsh(s).min() > 0


def test_classics():
    h = matrices.hilbert(5)
    assert h[2, 3] == 1 / 6 and np.array_equal(h, h.T)
    p = matrices.pascal(6)
    assert p[5, 5] == math.comb(10, 5) and round(np.linalg.det(p)) == 1
    assert np.allclose(np.linalg.inv(p), np.round(np.linalg.inv(p)), atol=1e-6)
    with pytest.raises(ValueError):
        matrices.pascal(29)
    k = matrices.kahan(30)
    assert np.array_equal(k, np.triu(k)) and np.linalg.cond(k) > 1e5


def test_graded_spans_the_decades(rng):
    g = matrices.graded(40, 12, rng)
    rows = np.abs(g).max(axis=1)
    assert rows.max() / rows.min() > 1e10
    assert sorted(matrices.families(8, 1)) == ["cond1e10", "cond1e13", "cond1e2", "cond1e6", "graded"]
