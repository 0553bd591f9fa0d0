"""bench/linalg.py: its figures on the CPU against exact references, and a CPU run end to end."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

from bench import linalg as bl
from ozaki.linalg import reference


def test_hpl_figures():
    assert bl.hpl_rate(1000, 1000.0) == pytest.approx((2 / 3 * 1e9 + 2e6) / 1e12)
    assert bl.cholesky_rate(3000, 1000.0) == pytest.approx(9e-3)
    assert bl.hpl_scaled_residual(2.0 ** -53 * 10, 1.0, 1.0, 0.0, 10) == pytest.approx(1.0)
    assert bl.hpl_scaled_residual(1.0, 0.0, 0.0, 0.0, 3) == float("inf")


@pytest.mark.parametrize("cond", [1e6, 1e10])
def test_forward_error_figure_matches_the_exact_one(cond):
    a, s, b, b_s = bl.system(np, 40, cond, 7)
    lu = scipy.linalg.lu_factor(a)
    xs = reference.solve(a, b)
    for x, hpl_ok in ((np.linalg.solve(a, b), True), (np.linalg.solve(a, b) * (1 + 1e-9), False)):
        fe, res = bl.accuracy(np, a, b, x, lambda r: scipy.linalg.lu_solve(lu, r),
                              np.abs(a).sum(axis=1).max(), np.abs(b).max())
        exact = reference.errors(x, xs)["normwise_ref"][0]
        assert fe == pytest.approx(exact, rel=1e-2)
        assert (0 < res < 16) == hpl_ok                  # LAPACK passes HPL's test, a 1e-9 error does not
    assert np.array_equal(s, s.T)


def test_cpu_run_end_to_end(tmp_path):
    out = tmp_path / "linalg.json"
    assert bl.main(["--backend", "cpu", "--sizes", "40", "--repeats", "1", "--warmup", "0",
                    "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    rows = data["rows"]
    both = ("ozaki", "ozaki f=ozaki")                       # solve's default (vendor factors) and the blocked ones
    assert {(r["op"], r["impl"]) for r in rows} == ({(op, impl) for op in ("solve", "solve_pos", "lu", "cholesky",
                                                                           "residual")
                                                     for impl in ("native", "ozaki")}
                                                    | {("stages", i) for i in both}
                                                    | {("solve", both[1]), ("solve_pos", both[1])})
    for impl, fac in zip(both, ("vendor", "ozaki")):
        st = next(r for r in rows if r["op"] == "stages" and r["impl"] == impl)
        assert st["factorization"] == fac
        assert st["iterations"] >= 2 and st["refine_ms"] > 0 and st["factor_ms"] > 0
        assert st["refine_per_iteration_ms"] == pytest.approx(st["refine_ms"] / st["iterations"])
        assert st["residual_ms"] > 0 and st["triangular_ms"] > 0
        assert set(st["substitution_ms"]) == {"512", "1024", "2048"} and min(st["substitution_ms"].values()) > 0
    for op in ("solve", "solve_pos"):
        nat = next(r for r in rows if r["op"] == op and r["impl"] == "native")
        for impl, fac in zip(both, ("vendor", "ozaki")):
            oz = next(r for r in rows if r["op"] == op and r["impl"] == impl)
            assert oz["factorization"] == fac
            assert oz["fwd_err"] <= 4 * np.finfo(float).eps < 1e3 * 4 * np.finfo(float).eps < nat["fwd_err"]
            assert oz["fwd_err"] <= oz["err_bnd_norm"] and oz["iterations"] >= 1
    assert data["meta"]["backend"] == "cpu" and data["summary"]


def test_cpu_run_one_factorization_and_other_substitution_blocks(tmp_path):
    out = tmp_path / "linalg.json"
    assert bl.main(["--backend", "cpu", "--sizes", "40", "--repeats", "1", "--warmup", "0", "--ops", "stages",
                    "--factorizations", "ozaki", "--substitution-blocks", "8", "40", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["op"], r["impl"], r["factorization"]) for r in rows] == [("stages", "ozaki f=ozaki", "ozaki")]
    assert set(rows[0]["substitution_ms"]) == {"8", "40"}


def test_help_works_without_cupy():
    code = ("import sys; sys.modules['cupy'] = None; sys.modules['cupyx'] = None\n"
            "from bench import linalg\nlinalg.main(['--help'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--sizes" in r.stdout and "4096 8192 16384" in r.stdout
