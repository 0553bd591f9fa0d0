"""The dense linear-algebra dwarf's rows for the verification suite (``python -m ozaki verify``).

``verify_cases(profile, rng, gpu)`` returns dicts with ozaki.verify.Row's
fields (case, mode, moduli, check, figure, native, status, backend), checking
against exact references (ozaki.linalg.reference, Fractions):

    forward error   solve with refinement, max over right-hand sides of
                    max|x - x*| / max|x*|; pass when <= 4 eps (the promise,
                    for condition numbers up to 1e13); native is numpy.linalg.solve
    bounds hold     max of error / returned bound over both norms and all
                    right-hand sides (SolveInfo.err_bnds_*); pass when <= 1
    LU backward     ||A[perm] - L U||_max / (n eps ||A||_max) of the blocked LU
                    (small blocks, so the ozaki updates run); pass when <= n
    gpu == cpu bits refined solutions of the GPU and the CPU, entries that
                    differ among those the CPU rounded correctly (needs CUDA)
"""

import math
import warnings

import numpy as np
from scipy.linalg import LinAlgWarning

from . import matrices, reference
from .decomp_lu import LUFactor
from .basic import solve
from ._backend import Namespace

EPS = np.finfo(np.float64).eps          # 2**-52: "4 eps" is 2**-50

PROFILES = {
    "short": dict(n=16, nrhs=2, conds=(1e2, 1e10, 1e13), hilbert=(8,), pascal=(12,), kahan=(20,), block=4),
    "full": dict(n=48, nrhs=3, conds=(1e2, 1e6, 1e10, 1e12, 1e13), hilbert=(8, 10, 11), pascal=(12, 14),
                 kahan=(30, 60), block=8),
}


def _systems(p, rng):
    """(name, a, assume_a) of the profile; none shaped by the code under test."""
    n = p["n"]
    out = [(f"cond {c:.0e} n={n}", matrices.random_cond(n, c, rng), "gen") for c in p["conds"]]
    out.append((f"spd cond 1e12 n={n}", matrices.random_cond(n, 1e12, rng, spd=True), "pos"))
    out.append((f"graded n={n}", matrices.graded(n, 12, rng), "gen"))
    out += [(f"hilbert {k}", matrices.hilbert(k), "pos") for k in p["hilbert"]]
    out += [(f"pascal {k}", matrices.pascal(k), "pos") for k in p["pascal"]]
    out += [(f"kahan {k}", matrices.kahan(k), "upper triangular") for k in p["kahan"]]
    return out


def _row(case, check, figure, native, ok, backend="cpu"):
    return dict(case=case, mode="exact", moduli="auto", check=check, figure=float(figure),
                native=float(native), status="pass" if ok else "fail", backend=backend)


def _bound_ratio(err, bound):
    """max err / bound, 0 where both vanish."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(err == 0, 0.0, err / bound)
    return float(np.max(r)) if r.size else 0.0


def check_solve(p, rng):
    rows = []
    for name, a, kind in _systems(p, rng):
        n = a.shape[0]
        b = rng.standard_normal((n, p["nrhs"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LinAlgWarning)      # graded: normwise cond ~ 1e19, expected
            x, info = solve(a, b, assume_a=kind, full_output=True, block_size=p["block"])
        xs = reference.solve(a, b)
        e = reference.errors(x, xs)
        native = reference.errors(np.linalg.solve(a, b), xs)["normwise_ref"].max()
        fe = e["normwise_ref"].max()
        rows.append(_row(name, "forward error", fe, native, fe <= 4 * EPS))
        ratio = max(_bound_ratio(e["normwise"], info.err_bnds_norm[:, 1]),
                    _bound_ratio(e["componentwise"], info.err_bnds_comp[:, 1]))
        rows.append(_row(name, "bounds hold", ratio, math.nan, ratio <= 1))
    return rows


def check_lu(p, rng):
    n, nb = p["n"], p["block"]
    ns = Namespace(gpu=False)
    rows = []
    for name, a in (("lu normal", rng.standard_normal((n, n))), ("lu graded", matrices.graded(n, 12, rng))):
        f = LUFactor.factor(ns, a, nb)
        lower = np.tril(f.lu, -1) + np.eye(n)
        err = np.abs(a[f.perm] - lower @ np.triu(f.lu)).max() / (n * EPS * np.abs(a).max())
        rows.append(_row(name, "LU backward", err, math.nan, err <= n))
    return rows


def check_gpu(p, rng):
    """GPU vs CPU refined solutions, on the entries the CPU rounded correctly."""
    from ..backends import gpu_available
    if not gpu_available():
        return []
    import cupy
    rows = []
    for name, a, kind in _systems(p, rng)[:3]:
        b = rng.standard_normal((a.shape[0], p["nrhs"]))
        x_cpu = solve(a, b, assume_a=kind, block_size=p["block"])
        x_gpu = cupy.asnumpy(solve(cupy.asarray(a), cupy.asarray(b), assume_a=kind, block_size=p["block"]))
        xs = reference.solve(a, b)
        rounded = np.array([[float(x_cpu[i, j]) == float(xs[i][j]) for j in range(b.shape[1])]
                            for i in range(a.shape[0])])
        diff = int(((x_cpu != x_gpu) & rounded).sum())
        rows.append(_row(name, "gpu == cpu bits", diff, math.nan, diff == 0, backend="cupy"))
    return rows


def verify_cases(profile="short", rng=None, gpu=True):
    """The linear-algebra rows of the verification suite (dicts with ozaki.verify.Row's fields)."""
    p = PROFILES[profile]
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    rows = check_solve(p, rng) + check_lu(p, rng)
    if gpu:
        rows += check_gpu(p, rng)
    return rows
