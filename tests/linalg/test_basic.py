"""solve (refined on exact residuals), inv and det against exact references.

The promise: forward error <= 4 eps (relative, max norm) for condition numbers
up to 1e13, where numpy.linalg.solve loses about cond * eps; the returned error
bounds hold on every test (error <= bound, per right-hand side, both norms).
"""

import warnings

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings, strategies as st
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

import ozaki.linalg as ol
from ozaki.linalg import matrices, reference
from ozaki.linalg._backend import Namespace

EPS = np.finfo(np.float64).eps            # 2**-52


def assert_close(x, want, tol):
    """max |x - want| <= tol * max |want|: normwise, as backward-stable solvers agree."""
    assert np.abs(np.asarray(x) - want).max() <= tol * np.abs(want).max()


def _solve_checked(a, b, **kw):
    """solve with full_output; asserts the bounds hold; returns (x, info, our errors, numpy's errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)
        x, info = ol.solve(a, b, full_output=True, **kw)
        op = a.T if kw.get("transposed") else a
        xs = reference.solve(op if kw.get("assume_a", "gen") == "gen" else _op(a, kw), b)
        native = np.linalg.solve(op if kw.get("assume_a", "gen") == "gen" else _op(a, kw), b)
    e = reference.errors(x, xs)
    en = reference.errors(native, xs)
    bn = np.atleast_2d(info.err_bnds_norm)
    bc = np.atleast_2d(info.err_bnds_comp)
    assert (e["normwise"] <= bn[:, 1]).all(), (e["normwise"], bn)
    assert (e["componentwise"] <= bc[:, 1]).all(), (e["componentwise"], bc)
    assert ((bn[:, 0] == 1) == np.isfinite(bn[:, 1])).all()
    return x, info, e, en


def _op(a, kw):
    """The matrix a "sym"/"pos"/triangular solve works with (its referenced part)."""
    kind = kw.get("assume_a")
    lower = kw.get("lower", False)
    if kind in ("sym", "pos"):
        t = np.tril(a) if lower else np.triu(a)
        s = t + (np.tril(a, -1) if lower else np.triu(a, 1)).T
        return s
    if kind == "upper triangular":
        t = np.triu(a)
        return t.T if kw.get("transposed") else t
    if kind == "lower triangular":
        t = np.tril(a)
        return t.T if kw.get("transposed") else t
    return a.T if kw.get("transposed") else a


@pytest.mark.parametrize("factorization", ["vendor", "ozaki"])
@pytest.mark.parametrize("cond", [1e2, 1e6, 1e10, 1e13])
@pytest.mark.parametrize("n", [8, 33, 96])
def test_refined_solve_is_accurate_to_4_eps_up_to_cond_1e13(rng, n, cond, factorization):
    a = matrices.random_cond(n, cond, rng)
    b = rng.standard_normal((n, 3))
    x, info, e, en = _solve_checked(a, b, block_size=16, factorization=factorization)
    assert e["normwise_ref"].max() <= 4 * EPS
    assert (info.err_bnds_norm[:, 0] == 1).all()           # and the bound says so
    if cond >= 1e10:
        # numpy's LU without refinement loses about cond * eps
        assert en["normwise_ref"].max() > 1e3 * 4 * EPS


@pytest.mark.parametrize("cond", [1e10, 1e13])
def test_refined_solutions_are_almost_always_correctly_rounded(rng, cond):
    a = matrices.random_cond(40, cond, rng)
    b = rng.standard_normal((40, 4))
    x, info, e, _ = _solve_checked(a, b)
    assert e["rounded"].mean() >= 0.95
    assert e["max_ulp"].max() <= 1.0


@pytest.mark.parametrize("kind", ["gen", "pos"])
@pytest.mark.parametrize("cond", [1e10, 1e13])
def test_both_factorizations_give_the_same_refined_bits(rng, kind, cond):
    # the factorization only supplies corrections: refined, both land on the correctly
    # rounded solution, so where either is correctly rounded the other has the same bits
    n = 64
    a = matrices.random_cond(n, cond, rng, spd=kind == "pos")
    b = rng.standard_normal((n, 3))
    xs = reference.solve(a, b)
    rounded = {}
    for factorization in ("vendor", "ozaki"):
        x, info, e, _ = _solve_checked(a, b, assume_a=kind, block_size=16, factorization=factorization)
        assert e["normwise_ref"].max() <= 4 * EPS
        rounded[factorization] = (x, np.array([[float(x[i, j]) == float(xs[i][j]) for j in range(3)]
                                               for i in range(n)]))
    (xv, rv), (xo, ro) = rounded["vendor"], rounded["ozaki"]
    assert rv.mean() >= 0.95 and ro.mean() >= 0.95
    assert np.array_equal(xv[rv | ro], xo[rv | ro])


def test_default_factorization_follows_refine(rng, monkeypatch):
    calls = []
    real = Namespace.getrf
    monkeypatch.setattr(Namespace, "getrf", lambda self, a, overwrite=False: calls.append(a.shape) or
                        real(self, a, overwrite))
    a = matrices.random_cond(20, 1e3, rng)
    b = rng.standard_normal(20)
    ol.solve(a, b, block_size=8)                      # refined: the vendor's getrf on the whole matrix
    assert calls == [(20, 20)]
    calls.clear()
    ol.solve(a, b, refine=False, block_size=8)        # unrefined: the blocked LU, getrf on its panels
    assert calls == [(20, 8), (12, 8), (4, 4)]
    calls.clear()
    ol.solve(a, b, factorization="ozaki", block_size=8)
    assert calls == [(20, 8), (12, 8), (4, 4)]
    x = ol.solve(a, b, refine=False, factorization="vendor")
    assert calls[-1] == (20, 20)
    assert_close(x, np.linalg.solve(a, b), 1e-11)


@pytest.mark.parametrize("name,a,kind", [
    ("hilbert 10", matrices.hilbert(10), "gen"),
    ("hilbert 11 pos", matrices.hilbert(11), "pos"),
    ("pascal 14 pos", matrices.pascal(14), "pos"),
    ("pascal 12 sym", matrices.pascal(12), "sym"),
    ("kahan 40", matrices.kahan(40), "upper triangular"),
    ("kahan 40 gen", matrices.kahan(40), "gen"),
])
def test_classic_ill_conditioned_matrices(rng, name, a, kind):
    n = a.shape[0]
    b = np.concatenate([rng.standard_normal((n, 2)), a[:, :1]], axis=1)   # last: x* = e_1
    x, info, e, en = _solve_checked(a, b, assume_a=kind)
    assert e["normwise_ref"].max() <= 4 * EPS, (name, e)


def test_graded_matrices_componentwise(rng):
    a = matrices.graded(48, 12, rng)
    b = a @ rng.standard_normal((48, 2))
    x, info, e, en = _solve_checked(a, b, block_size=8)
    assert e["normwise_ref"].max() <= 4 * EPS
    assert e["componentwise"].max() <= 4 * EPS


@pytest.mark.parametrize("cond", [1e8, 1e12])
def test_badly_scaled_rows_and_columns(rng, cond):
    # rows 2^+-30 apart: the equilibration makes the ozaki updates see tame data
    a = matrices.random_cond(30, cond, rng)
    for scaled in (a * np.exp2(rng.integers(-30, 31, 30))[:, None], a * np.exp2(rng.integers(-30, 31, 30))):
        x, info, e, _ = _solve_checked(scaled, rng.standard_normal((30, 2)), block_size=6)
        assert e["normwise_ref"].max() <= 4 * EPS


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")       # the scaled copy's 1-norm rcond
def test_power_of_two_row_scaling_changes_no_bit(rng):
    a = matrices.random_cond(25, 1e11, rng)
    b = rng.standard_normal((25, 2))
    d = np.exp2(rng.integers(-40, 41, 25))[:, None]
    assert np.array_equal(ol.solve(d * a, d * b, block_size=7), ol.solve(a, b, block_size=7))


def test_beyond_the_promise_the_bounds_still_hold(rng):
    # cond 1e15..1e17 and Hilbert 13: refinement may fail; then the bound must say so (inf)
    for a in (matrices.random_cond(24, 1e15, rng), matrices.random_cond(24, 1e17, rng), matrices.hilbert(13)):
        b = rng.standard_normal((a.shape[0], 2))
        _solve_checked(a, b)
    _solve_checked(matrices.hilbert(13), rng.standard_normal((13, 1)), assume_a="pos")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), log_cond=st.floats(0, 14), nrhs=st.integers(1, 3),
       kind=st.sampled_from(["gen", "pos", "sym", "lower triangular"]), nb=st.integers(2, 16),
       transposed=st.booleans(), lower=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_property_error_below_bound_and_4_eps(n, log_cond, nrhs, kind, nb, transposed, lower, seed):
    rng = np.random.default_rng(seed)
    spd = kind == "pos"
    a = matrices.random_cond(n, 10.0 ** log_cond, rng, spd=spd or kind == "sym")
    if kind == "lower triangular":
        a = np.tril(rng.standard_normal((n, n))) + np.diag(np.exp2(rng.integers(-20, 20, n)).astype(float))
    elif kind in ("pos", "sym"):
        # only the referenced triangle may be read: garbage in the other one
        junk = rng.standard_normal((n, n)) * 1e3
        a = np.where(np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool)), a, junk)
    b = rng.standard_normal((n, nrhs))
    x, info, e, _ = _solve_checked(a, b, assume_a=kind, lower=lower, transposed=transposed, block_size=nb)
    if log_cond <= 13 and kind != "lower triangular":
        assert e["normwise_ref"].max() <= 4 * EPS


def test_vector_rhs_and_info_shapes(rng):
    a = matrices.random_cond(12, 1e8, rng)
    b = rng.standard_normal(12)
    x, info = ol.solve(a, b, full_output=True)
    assert x.shape == (12,)
    assert info.err_bnds_norm.shape == (3,) and info.err_bnds_comp.shape == (3,)
    assert info.iterations.shape == () and info.rcond.shape == ()
    assert np.array_equal(x, ol.solve(a, b[:, None])[:, 0])


def test_stacks_broadcast_like_numpy(rng):
    a = np.stack([matrices.random_cond(10, 1e9, rng) for _ in range(2)])[:, None]     # (2, 1, 10, 10)
    b = rng.standard_normal((3, 10, 2))                                              # (3, 10, 2)
    x, info = ol.solve(a, b, full_output=True)
    assert x.shape == (2, 3, 10, 2) == np.linalg.solve(a, b).shape
    assert info.err_bnds_norm.shape == (2, 3, 2, 3) and info.iterations.shape == (2, 3, 2)
    for i in range(2):
        for j in range(3):
            assert np.array_equal(x[i, j], ol.solve(a[i, 0], b[j]))
    xv = ol.solve(a, b[0, :, 0])                                                     # 1-D b: a vector
    assert xv.shape == (2, 1, 10)


def test_refine_false_is_the_plain_blocked_solve(rng):
    a = matrices.random_cond(20, 1e3, rng)
    b = rng.standard_normal((20, 2))
    x = ol.solve(a, b, refine=False, block_size=4)
    assert_close(x, np.linalg.solve(a, b), 1e-11)


def test_exact_solutions_come_back_exactly():
    # integer data with an integer solution: refinement ends on a zero residual
    a = matrices.pascal(10)
    x0 = np.arange(1.0, 11.0)[:, None]
    b = a @ x0                                                 # exact in float64
    x, info = ol.solve(a, b, assume_a="pos", full_output=True)
    assert np.array_equal(x, x0)
    assert info.err_bnds_norm[0, 1] == max(10, np.sqrt(10)) * 2.0 ** -53


def test_zero_rhs_and_trivial_sizes():
    x, info = ol.solve(np.eye(3) * 2, np.zeros((3, 2)), full_output=True)
    assert np.array_equal(x, np.zeros((3, 2))) and not np.signbit(x).any()
    assert (info.err_bnds_norm[:, 0] == 1).all()
    assert ol.solve(np.array([[4.0]]), np.array([2.0])).tolist() == [0.5]
    assert ol.solve(np.zeros((0, 0)), np.zeros(0)).shape == (0,)
    assert ol.solve(np.zeros((2, 0, 0)), np.zeros((2, 0, 3))).shape == (2, 0, 3)


@pytest.mark.parametrize("scale", [2.0 ** 500, 2.0 ** -500])
def test_extreme_scaling_keeps_accuracy(rng, scale):
    a = matrices.random_cond(16, 1e8, rng)
    b = rng.standard_normal((16, 1))
    for aa, bb in ((a * scale, b * scale), (a, b * scale), (a * scale, b)):    # x ~ 1, scale, 1 / scale
        x, info, e, _ = _solve_checked(aa, bb)
        assert e["normwise_ref"].max() <= 4 * EPS


def test_integer_and_float32_inputs_are_converted_exactly():
    a = np.array([[3, 1], [1, 2]], dtype=np.int32)
    b = np.array([9, 8], dtype=np.float32)
    assert np.allclose(ol.solve(a, b), np.linalg.solve(a.astype(float), b.astype(float)))


@pytest.mark.parametrize("factorization", ["vendor", "ozaki"])
def test_singular_and_indefinite_with_either_factorization(factorization):
    singular = "A singular matrix detected: slice\\(s\\) \\[0\\] are singular."
    for a in (np.zeros((3, 3)), np.array([[1.0, 2.0], [2.0, 4.0]]),                 # rank 1, exact zero pivot
              np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 1.0], [0.0, 0.0, 5.0]])):      # a zero column
        with pytest.raises(LinAlgError, match=singular):
            ol.solve(a, np.ones(a.shape[0]), factorization=factorization)
        with pytest.raises(LinAlgError, match=singular):
            ol.solve(a, np.ones(a.shape[0]), transposed=True, factorization=factorization)
    stack = np.stack([np.eye(2), np.ones((2, 2))])
    with pytest.raises(LinAlgError, match="slice\\(s\\) \\[1\\] are singular"):
        ol.solve(stack, np.ones(2), factorization=factorization)
    with pytest.raises(LinAlgError, match="^2-th leading minor of the array is not positive definite"):
        ol.solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones(2), assume_a="pos", factorization=factorization)
    a = np.diag([4.0, 1.0, -1.0])
    a[0, 2] = 7.0                                                          # only in the upper triangle
    with pytest.raises(LinAlgError, match="^3-th leading minor"):
        ol.solve(a, np.ones(3), assume_a="pos", factorization=factorization)
    a[2, 2] = 1.0                                      # now the lower triangle (diagonal) is definite
    assert ol.solve(a, np.ones(3), assume_a="pos", lower=True, factorization=factorization).tolist() == [0.25, 1, 1]


def test_errors_as_scipy():
    with pytest.raises(LinAlgError):
        ol.solve(np.zeros((3, 3)), np.ones(3))
    with pytest.raises(LinAlgError):
        ol.solve(np.array([[1.0, 2.0], [2.0, 4.0]]), np.ones(2))            # rank 1, exact zero pivot
    with pytest.raises(LinAlgError, match="not positive definite"):
        ol.solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones(2), assume_a="pos")
    with pytest.raises(ValueError, match="factorization"):
        ol.solve(np.eye(2), np.ones(2), factorization="cusolver")
    with pytest.raises(LinAlgError):
        ol.solve(np.triu(np.ones((3, 3))) - np.eye(3), np.ones(3), assume_a="upper triangular")
    with pytest.raises(ValueError, match="square"):
        ol.solve(np.ones((3, 4)), np.ones(3))
    with pytest.raises(ValueError, match="incompatible"):
        ol.solve(np.eye(3), np.ones(4))
    with pytest.raises(ValueError, match="incompatible"):
        ol.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(ValueError, match="infs or NaNs"):
        ol.solve(np.array([[1.0, np.nan], [0.0, 1.0]]), np.ones(2))
    with pytest.raises(ValueError, match="recognized"):
        ol.solve(np.eye(2), np.ones(2), assume_a="banded")
    with pytest.raises(ValueError, match="refine"):
        ol.solve(np.eye(2), np.ones(2), refine=False, full_output=True)
    with pytest.raises(TypeError):
        ol.solve(np.eye(2) * 1j, np.ones(2))
    with pytest.raises(TypeError):
        ol.solve(np.eye(2, dtype=np.longdouble), np.ones(2))


def test_ill_conditioning_warns_as_scipy():
    with pytest.warns(LinAlgWarning, match="ill-conditioned"):
        ol.solve(matrices.hilbert(14), np.ones(14))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ol.solve(matrices.hilbert(6), np.ones(6))


def test_inv(rng):
    a = matrices.random_cond(40, 1e4, rng)
    ai = ol.inv(a, block_size=8)
    assert np.allclose(ai, scipy.linalg.inv(a), rtol=1e-9, atol=1e-9 * np.abs(ai).max())
    assert np.abs(ai @ a - np.eye(40)).max() < 1e-9
    stack = np.stack([a, 2 * a])
    assert np.array_equal(ol.inv(stack, block_size=8)[1], ol.inv(2 * a, block_size=8))
    with pytest.raises(LinAlgError, match="singular"):
        ol.inv(np.ones((3, 3)))
    with pytest.warns(LinAlgWarning):
        ol.inv(matrices.hilbert(14))
    assert ol.inv(np.zeros((0, 0))).shape == (0, 0)


def test_det(rng):
    a = rng.standard_normal((30, 30))
    assert ol.det(a, block_size=7) == pytest.approx(scipy.linalg.det(a), rel=1e-10)
    p = np.eye(5)[[1, 0, 2, 4, 3]]                                 # two swaps: det +1
    assert ol.det(p) == 1.0 and ol.det(p[[1, 0, 2, 3, 4]]) == -1.0
    assert ol.det(matrices.pascal(8)) == pytest.approx(1.0, rel=1e-6)
    assert ol.det(np.ones((4, 4))) == 0.0
    assert ol.det(np.zeros((0, 0))) == 1.0
    d = ol.det(np.stack([a, 2 * a]), block_size=7)
    assert d.shape == (2,) and d[1] == pytest.approx(2.0 ** 30 * d[0], rel=1e-10)
