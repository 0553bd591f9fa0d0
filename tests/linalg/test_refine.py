"""Refinement pieces: the exact residual is exact, the double-double update is exact, the
state machine stops as Demmel et al. and LAPACK do, bounds are inf when untrusted."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ozaki.linalg import refine
from ozaki.linalg._backend import Namespace

NS = Namespace(gpu=False)


def _exact_residual_fractions(a, b, hi, lo):
    n, k = b.shape
    return [[Fraction(b[i, j]) - sum(Fraction(a[i, l]) * (Fraction(hi[l, j]) + Fraction(lo[l, j]))
                                     for l in range(n)) for j in range(k)] for i in range(n)]


def _wide(rng, shape, spread):
    return rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape).astype(float))


@pytest.mark.parametrize("spread", [0, 30, 200])
def test_exact_residual_is_the_exact_residual_rounded_once(rng, spread):
    n, k = 9, 3
    a = _wide(rng, (n, n), spread)
    hi = _wide(rng, (n, k), spread)
    lo = hi * 2.0 ** -60 * rng.standard_normal((n, k))
    b = a @ hi + _wide(rng, (n, k), spread) * 1e-10      # near cancellation, as in refinement
    cols = [2, 0]                                          # a subset of columns, reordered
    left = refine.residual_operand(NS, a, b)
    r = refine.exact_residual(NS, left, [hi[:, cols], lo[:, cols]], cols)
    exact = _exact_residual_fractions(a, b[:, cols], hi[:, cols], lo[:, cols])
    want = np.array([[float(v) for v in row] for row in exact])      # float(Fraction) rounds to nearest
    assert r.shape == (n, 2)
    assert np.array_equal(r, want)
    r1 = refine.exact_residual(NS, refine.residual_operand(NS, a, b, parts=1), [hi[:, cols]], cols)
    exact = _exact_residual_fractions(a, b[:, cols], hi[:, cols], 0 * lo[:, cols])
    assert np.array_equal(r1, np.array([[float(v) for v in row] for row in exact]))


@pytest.mark.parametrize("cols", [[0, 1, 2], [1], [2, 1]])
def test_exact_residual_of_every_column_or_some(rng, cols):
    # every column in order takes the selection -I made on the device; others an index array
    n = 7
    a = _wide(rng, (n, n), 30)
    b = rng.standard_normal((n, 3))
    hi = rng.standard_normal((n, len(cols)))
    lo = hi * 2.0 ** -60
    r = refine.exact_residual(NS, refine.residual_operand(NS, a, b), [hi, lo], cols)
    exact = _exact_residual_fractions(a, b[:, cols], hi, lo)
    assert np.array_equal(r, np.array([[float(v) for v in row] for row in exact]))


def test_exact_residual_of_the_exact_solution_is_zero():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = np.array([[1.0], [-2.0]])
    b = a @ x                                              # exact in float64
    r = refine.exact_residual(NS, refine.residual_operand(NS, a, b), [x, np.zeros_like(x)], [0])
    assert np.array_equal(r, np.zeros((2, 1)))


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e300, 1e300, allow_nan=False), st.floats(-1e300, 1e300, allow_nan=False),
       st.floats(-1e300, 1e300, allow_nan=False))
def test_dd_add_keeps_the_exact_sum(h, d, t):
    lo = math.ulp(h) / 4 * (1 if t >= 0 else -1) if h else 0.0     # a normalized (hi, lo)
    hi, lo2 = refine.dd_add(np.array([h]), np.array([lo]), np.array([d]))
    exact = Fraction(h) + Fraction(lo) + Fraction(d)
    got = Fraction(float(hi[0])) + Fraction(float(lo2[0]))
    # TwoSum/FastTwoSum are exact; only adding lo into the error term rounds (relative 2^-53 of it)
    assert abs(got - exact) <= abs(Fraction(lo)) * Fraction(1, 2 ** 52) + abs(exact) * Fraction(1, 2 ** 104)
    assert float(hi[0]) == float(got)                     # hi is the sum rounded to nearest
    assert abs(lo2[0]) <= math.ulp(hi[0]) / 2


def test_track_converges_then_stops_on_componentwise_convergence():
    t = refine.Track()
    assert t.step(1.0, 1e-8, 1e-8)                      # working: applied
    assert not t.done and t.x_state == refine.WORKING and t.z_state == refine.WORKING
    assert t.step(1.0, 1e-17, 1e-17)                    # both below EPS: converged, still applied
    assert t.x_state == refine.CONVERGED and t.z_state == refine.CONVERGED and t.done
    assert t.final_dx_x == 1e-17 and t.dxrat_max == 0.0


def test_track_no_progress_freezes_x_and_gives_no_bound():
    t = refine.Track()
    assert t.step(1.0, 1e-6, 1e-6)
    assert t.step(1.0, 1e-7, 1e-7)                      # ratio 0.1
    assert not t.step(1.0, 0.8e-7, 0.8e-7)              # ratio 0.8 > RTHRESH: not applied, stop
    assert t.x_state == refine.NO_PROGRESS and t.done
    assert t.normwise_bound() == math.inf


def test_track_at_the_iteration_limit_bounds_from_the_contraction():
    t = refine.Track()
    for k in range(refine.ITHRESH):
        t.step(1.0, 1e-3 * 0.4 ** k, 1e-3 * 0.4 ** k)    # contracting by 0.4, never below EPS
    t.finish()
    assert t.x_state == refine.WORKING
    assert t.normwise_bound() == pytest.approx(1e-3 * 0.4 ** 9 / 0.6)


def test_track_divergence_gives_no_bound():
    t = refine.Track()
    t.step(1.0, 1e-3, 1e-3)
    assert not t.step(1.0, 2e-3, 2e-3)
    assert t.normwise_bound() == math.inf


def test_track_componentwise_unstable_when_a_component_is_zero():
    t = refine.Track()
    t.step(1.0, 1e-17, math.inf)                         # x converged, some x_i = 0 with dx_i != 0
    assert t.x_state == refine.CONVERGED and t.z_state == refine.UNSTABLE
    assert not t.done                                    # unstable gets a second look
    t.step(1.0, 1e-18, math.inf)
    assert t.done and t.componentwise_bound() == math.inf


def test_error_bounds_floor_trust_and_rcond_threshold():
    t = refine.Track()
    t.step(1.0, 1e-17, 1e-17)
    norm, comp = refine.error_bounds([t], 100, rcond_norm=1e-3, rcond_comp=[1e-3])
    floor = 10 * refine.EPS
    assert norm[0, 0] == 1.0 and norm[0, 1] == floor and norm[0, 2] == 1e-3
    assert comp[0, 0] == 1.0 and comp[0, 1] == floor
    norm, comp = refine.error_bounds([t], 100, rcond_norm=1e-20, rcond_comp=[1e-20])
    assert norm[0, 0] == 0.0 and norm[0, 1] == math.inf
    assert comp[0, 0] == 0.0 and comp[0, 1] == math.inf
    slow = refine.Track()
    slow.step(1.0, 1e-3, 1e-3)
    slow.finish()                                        # 1e-3 is no converged answer: untrusted
    norm, comp = refine.error_bounds([slow], 100, rcond_norm=1e-3, rcond_comp=[1e-3])
    assert norm[0, 0] == 0.0 and norm[0, 1] == math.inf
