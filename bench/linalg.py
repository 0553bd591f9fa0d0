"""Dense linear algebra: ozaki.linalg against cuSOLVER (through cupy), same inputs, one run.

    python -m bench.linalg --sizes 4096 8192 16384 --out bench/results/linalg.json
    python -m bench.linalg --backend cpu --sizes 256      # the same on numpy/LAPACK, small n

For each n, on the device: A = U diag(s) V^T with 2-norm condition number
--cond (default 1e10; U, V from QR of Gaussian matrices), an SPD S = U diag(s)
U^T of the same condition, x0 ~ N(0, 1) and b = A x0 rounded once (ozaki exact
product).  Rows (median of CUDA-event timings after warm-up):

    solve      cupy.linalg.solve vs ozaki.linalg.solve (refinement on exact
               residuals), once per factorization (--factorizations): "ozaki"
               is solve's default, factorization="vendor" (cuSOLVER's getrf of
               the equilibrated matrix), "ozaki f=ozaki" the blocked LU on ozaki
               updates: time, HPL rate 2/3 n^3 / t, forward error, HPL scaled
               residual, refinement iterations
    solve_pos  cupy.linalg.solve vs ozaki.linalg.solve(assume_a="pos") on S (potrf
               or the blocked Cholesky)
    lu         cupyx.scipy.linalg.lu_factor (getrf) vs ozaki.linalg.lu_factor
               (--lu-blocks: more ozaki rows at other panel widths)
    cholesky   cupy.linalg.cholesky (potrf) vs ozaki.linalg.cholesky
    stages     one ozaki solve in parts, per factorization: the equilibrated
               factorization, the rcond estimate, one solve with the factors,
               the refinement (in all and per iteration) and within it the
               preparation of its exact residuals' left operand and one exact
               residual; and one triangular solve with one column (U of the LU)
               as solve runs it and by blocked substitution with the
               --substitution-blocks (diagonal blocks on the vendor's TRSM,
               native products between them)
    residual   one exact residual b - A x (ozaki exact product [A | b] @ [x; -1],
               and the double-double one [A | A | b] @ [x_hi; x_lo; -1])

Forward error: max|x - x*| / max|x*| for the exact solution x* of the rounded
system A x = b (x0 is not x*: b's rounding moves the solution by up to cond * eps).
It is measured as e = A^-1 r(x) with r(x) = b - A x exact (rounded once) and
A^-1 applied by cuSOLVER's LU: e's own relative error is about cond * eps *
growth (1e-6..1e-4 at cond 1e10), so the figure is good to a few digits
(tests/linalg/test_bench_linalg.py checks it against exact references).
HPL scaled residual: ||A x - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n),
eps = 2^-53 as HPL's; HPL accepts < 16.
"""

import argparse
import math
import time

import numpy as np

DEFAULT_SIZES = (4096, 8192, 16384)
HPL_EPS = 2.0 ** -53


def hpl_rate(n, ms):
    """HPL's TFLOPS figure: 2/3 n^3 (+ 2 n^2, the solves) floating-point operations in ms milliseconds."""
    return (2.0 / 3.0 * n ** 3 + 2.0 * n ** 2) / (ms * 1e-3) / 1e12


def cholesky_rate(n, ms):
    """n^3 / 3 operations in ms milliseconds, TFLOPS."""
    return (n ** 3 / 3.0) / (ms * 1e-3) / 1e12


def hpl_scaled_residual(r_inf, a_inf, x_inf, b_inf, n, eps=HPL_EPS):
    """||r||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)."""
    den = eps * (a_inf * x_inf + b_inf) * n
    return float(r_inf / den) if den else math.inf


def exact_residual(xp, a, b, x):
    """b - A x, exact and rounded once: one exact-mode ozaki product [A | b] @ [x; -1]."""
    import ozaki
    b2 = b.reshape(-1, 1)
    x2 = x.reshape(-1, 1)
    left = xp.concatenate([a, b2], axis=1)
    right = xp.concatenate([x2, -xp.ones((1, 1))], axis=0)
    return (-ozaki.matmul(left, right, mode="exact")).reshape(b.shape)


def forward_error(xp, x, correction):
    """max|e| / max|x*| with x* = x + e, for the correction e = A^-1 (b - A x) (both 1-D)."""
    xs = xp.abs(x + correction).max()
    return float(xp.abs(correction).max() / xs) if float(xs) else math.inf


def accuracy(xp, a, b, x, lu_solve, a_inf, b_inf):
    """(forward error, HPL scaled residual) of a solution x; lu_solve applies A^-1 (native LU)."""
    r = exact_residual(xp, a, b, x)
    fe = forward_error(xp, x, lu_solve(r))
    res = hpl_scaled_residual(float(xp.abs(r).max()), a_inf, float(xp.abs(x).max()), b_inf, a.shape[0])
    return fe, res


def system(xp, n, cond, seed):
    """(A, S, b, b_s): general and SPD matrices of 2-norm condition ``cond`` and right-hand sides
    b = A x0, b_s = S x0 rounded once, x0 ~ N(0, 1) (all built with xp, on its device)."""
    import ozaki
    from ozaki.linalg import matrices
    rng = np.random.default_rng(seed)
    a = matrices.random_cond(n, cond, rng, xp=xp)
    s = matrices.random_cond(n, cond, rng, xp=xp, spd=True)
    x0 = xp.asarray(rng.standard_normal((n, 1)))
    b = ozaki.matmul(a, x0, mode="exact")[:, 0]
    b_s = ozaki.matmul(s, x0, mode="exact")[:, 0]
    return a, s, b, b_s


class Native:
    """The vendor's solvers and a timer, for cupy (cuSOLVER, CUDA events) or numpy (LAPACK, perf_counter)."""

    def __init__(self, backend):
        self.gpu = backend == "gpu"
        if self.gpu:
            import cupy
            import cupyx.scipy.linalg as csl
            self.xp, self.sl = cupy, csl
        else:
            import scipy.linalg as sl
            self.xp, self.sl = np, sl

    def solve(self, a, b):
        return self.xp.linalg.solve(a, b)

    def lu_factor(self, a):
        return self.sl.lu_factor(a, check_finite=False)

    def lu_solve(self, lu, b):
        return self.sl.lu_solve(lu, b, check_finite=False)

    def cholesky(self, a):
        return self.xp.linalg.cholesky(a)

    def time(self, fn, warmup, repeats):
        """Median milliseconds of fn() after warm-up."""
        if self.gpu:
            from bench import common
            return common.time_gpu(fn, warmup=warmup, repeats=repeats)[0]
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
        return float(np.median(times))

    def free(self):
        if self.gpu:
            self.xp.get_default_memory_pool().free_all_blocks()


def stages(nat, a, b, repeats, factorization="vendor", substitution_blocks=()):
    """Milliseconds of the parts of one ozaki.linalg.solve(a, b, factorization=...) (each timed
    alone, median), and of one triangular solve with one column (see the module docstring)."""
    from ozaki.linalg import basic, condest, decomp_lu, refine, triangular
    from ozaki.linalg._backend import namespace
    ns = namespace(a)
    b2 = b.reshape(-1, 1)

    def factor():
        return basic._factor(ns, "gen", a, False, False, None, (), factorization)

    t_factor = nat.time(factor, 0, repeats)
    op, f = factor()
    t_rcond = nat.time(lambda: condest.rcond_1(ns, op, f), 0, repeats)
    x0 = f.solve(b2)
    t_first = nat.time(lambda: f.solve(b2), 0, repeats)
    t_refine = nat.time(lambda: refine.refine(ns, op, b2, f, x0), 0, repeats)
    _, tracks = refine.refine(ns, op, b2, f, x0)
    iterations = tracks[0].iterations
    parts = [x0, x0 * 2.0 ** -60]

    def first_residual():                    # the left operand is prepared at its first product
        left = refine.residual_operand(ns, op, b2, parts=2)
        refine.exact_residual(ns, left, parts, [0])
        return left

    t_first_residual = nat.time(first_residual, 0, repeats)
    left = first_residual()
    t_residual = nat.time(lambda: refine.exact_residual(ns, left, parts, [0]), 0, repeats)
    lu, _ = decomp_lu.decompose(ns, a, factorization=factorization)
    t_triangular = nat.time(lambda: triangular.trsm(ns, lu, b2, lower=False), 1, repeats)
    by_block = {str(nb): nat.time(lambda: triangular.substitute(ns, lu, b2, lower=False, block_size=nb), 1, repeats)
                for nb in substitution_blocks}
    return {"factor_ms": t_factor, "rcond_ms": t_rcond, "first_solve_ms": t_first, "refine_ms": t_refine,
            "iterations": iterations, "refine_per_iteration_ms": t_refine / max(iterations, 1),
            "prepare_ms": t_first_residual - t_residual, "residual_ms": t_residual,
            "triangular_ms": t_triangular, "substitution_block": ns.substitution_block, "substitution_ms": by_block}


def residual_times(nat, a, b, repeats):
    """Milliseconds of one exact residual, x a float64 and a double-double, and of native A @ x."""
    from ozaki.linalg import refine
    from ozaki.linalg._backend import namespace
    ns = namespace(a)
    xp = nat.xp
    x = nat.solve(a, b).reshape(-1, 1)
    lo = x * 2.0 ** -60
    b2 = b.reshape(-1, 1)
    one, two = refine.residual_operand(ns, a, b2, 1), refine.residual_operand(ns, a, b2, 2)
    residuals = refine.Residuals(ns, a, b2)
    raw = xp.concatenate([a, b2], axis=1)                 # the same left factor, not prepared
    # the warm-up call makes the prepared factors' residues (once per solve in refine)
    return {"exact_ms": nat.time(lambda: refine.exact_residual(ns, one, [x], [0]), 1, repeats),
            "exact_dd_ms": nat.time(lambda: refine.exact_residual(ns, two, [x, lo], [0]), 1, repeats),
            "exact_unprepared_ms": nat.time(lambda: refine.exact_residual(ns, raw, [x], [0]), 0, repeats),
            "native_gemv_ms": nat.time(lambda: a @ x, 1, repeats),
            # what refine runs: on the GPU the exact dot kernel (A's exponent range read once per solve)
            "residuals_dd_ms": nat.time(lambda: residuals([x, lo], [0]), 1, repeats),
            "residuals_setup_ms": nat.time(lambda: refine.Residuals(ns, a, b2), 1, repeats)}


# the row label of ozaki.linalg.solve with each factorization ("ozaki": solve's default)
SOLVE_IMPLS = {"vendor": "ozaki", "ozaki": "ozaki f=ozaki"}


def run(sizes, cond=1e10, backend="gpu", warmup=1, repeats=3, seed=20261204, ops=("solve", "solve_pos", "lu",
                                                                                    "cholesky"), lu_blocks=(),
        factorizations=("vendor", "ozaki"), substitution_blocks=()):
    """The benchmark rows (dicts) for each size; prints each row as it comes."""
    import ozaki.linalg as ol
    nat = Native(backend)
    xp = nat.xp
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        a, s, b, b_s = system(xp, n, cond, seed)
        a_inf, s_inf = float(xp.abs(a).sum(axis=1).max()), float(xp.abs(s).sum(axis=1).max())
        lu_a = nat.lu_factor(a)
        made = time.perf_counter() - t0

        def add(op, impl, ms, rate, **extra):
            native = next((r["ms"] for r in rows if r["n"] == n and r["op"] == op and r["impl"] == "native"), ms)
            row = {"n": n, "op": op, "impl": impl, "cond": cond, "ms": ms, "tflops": rate,
                   "speedup": native / ms, **extra}
            rows.append(row)
            print_row(row)

        for op in ops:
            if op in ("solve", "solve_pos"):
                m, rhs, m_inf = (a, b, a_inf) if op == "solve" else (s, b_s, s_inf)
                lu_m = lu_a if op == "solve" else nat.lu_factor(m)
                b_inf = float(xp.abs(rhs).max())
                kind = "gen" if op == "solve" else "pos"
                ms = nat.time(lambda: nat.solve(m, rhs), warmup, repeats)
                fe, res = accuracy(xp, m, rhs, nat.solve(m, rhs), lambda r: nat.lu_solve(lu_m, r), m_inf, b_inf)
                add(op, "native", ms, hpl_rate(n, ms), fwd_err=fe, hpl_residual=res)
                for fac in factorizations:
                    ms = nat.time(lambda: ol.solve(m, rhs, assume_a=kind, factorization=fac), warmup, repeats)
                    x, info = ol.solve(m, rhs, assume_a=kind, full_output=True, factorization=fac)
                    fe, res = accuracy(xp, m, rhs, x, lambda r: nat.lu_solve(lu_m, r), m_inf, b_inf)
                    add(op, SOLVE_IMPLS[fac], ms, hpl_rate(n, ms), fwd_err=fe, hpl_residual=res,
                        iterations=int(info.iterations), err_bnd_norm=float(info.err_bnds_norm[1]),
                        err_bnd_comp=float(info.err_bnds_comp[1]), rcond=float(info.rcond), factorization=fac)
                    nat.free()
            elif op == "lu":
                ms = nat.time(lambda: nat.lu_factor(a), warmup, repeats)
                add(op, "native", ms, hpl_rate(n, ms))
                ms = nat.time(lambda: ol.lu_factor(a), warmup, repeats)
                add(op, "ozaki", ms, hpl_rate(n, ms))
                for nb in lu_blocks:
                    ms = nat.time(lambda: ol.lu_factor(a, block_size=nb), warmup, repeats)
                    add(op, f"ozaki nb={nb}", ms, hpl_rate(n, ms), block_size=nb)
            elif op == "stages":
                for fac in factorizations:
                    st = stages(nat, a, b, repeats, fac, substitution_blocks)
                    add(op, SOLVE_IMPLS[fac], st["factor_ms"] + st["rcond_ms"] + st["first_solve_ms"] + st["refine_ms"],
                        hpl_rate(n, st["factor_ms"]), factorization=fac, **st)
                    nat.free()
            elif op == "residual":
                rt = residual_times(nat, a, b, repeats)
                add(op, "native", rt["native_gemv_ms"], 2.0 * n * n / rt["native_gemv_ms"] / 1e9)
                add(op, "ozaki", rt["exact_ms"], 2.0 * n * n / rt["exact_ms"] / 1e9, **rt)
            elif op == "cholesky":
                ms = nat.time(lambda: nat.cholesky(s), warmup, repeats)
                add(op, "native", ms, cholesky_rate(n, ms))
                ms = nat.time(lambda: ol.cholesky(s, lower=True), warmup, repeats)
                add(op, "ozaki", ms, cholesky_rate(n, ms))
            nat.free()
        print(f"  (n={n}: inputs built in {made:.1f} s)", flush=True)
        del a, s, b, b_s, lu_a
        nat.free()
    return rows


def print_row(r):
    extra = ""
    if "fwd_err" in r:
        extra = f"  fwd err {r['fwd_err']:9.2e}  hpl resid {r['hpl_residual']:9.3g}"
        if "iterations" in r:
            extra += f"  it {r['iterations']}  bound {r['err_bnd_norm']:.1e}"
    elif "factor_ms" in r:
        blocks = "".join(f"  nb={nb} {ms:.2f}" for nb, ms in r["substitution_ms"].items())
        extra = (f"  factor {r['factor_ms']:.1f}  rcond {r['rcond_ms']:.1f}  solve {r['first_solve_ms']:.2f}"
                 f"  refine {r['refine_ms']:.1f} ms ({r['iterations']} it, {r['refine_per_iteration_ms']:.1f} per it;"
                 f" prepare {r['prepare_ms']:.1f}, residual {r['residual_ms']:.2f})"
                 f"  U solve {r['triangular_ms']:.2f}{blocks} ms")
    elif "exact_dd_ms" in r:
        unprepared = r.get("exact_unprepared_ms", float("nan"))
        extra = (f"  exact {r['exact_ms']:.2f} (unprepared {unprepared:.2f})  exact dd {r['exact_dd_ms']:.2f}"
                 f"  refine's dd {r.get('residuals_dd_ms', float('nan')):.2f}"
                 f" (set-up {r.get('residuals_setup_ms', float('nan')):.2f})  dgemv {r['native_gemv_ms']:.2f} ms")
    print(f"{r['n']:6d} {r['op']:9s} {r['impl']:13s} {r['ms']:10.2f} ms {r['tflops']:7.2f} TFLOPS "
          f"x{r['speedup']:5.2f}{extra}", flush=True)


def summary(rows):
    """Per n and op: ozaki's time over native's and native's forward error over ozaki's."""
    out = []
    for (n, op) in sorted({(r["n"], r["op"]) for r in rows if r["op"] not in ("stages", "residual")}):
        nat = next((r for r in rows if r["n"] == n and r["op"] == op and r["impl"] == "native"), None)
        oz = next((r for r in rows if r["n"] == n and r["op"] == op and r["impl"] == "ozaki"), None)
        if nat is None or oz is None:
            continue
        item = {"n": n, "op": op, "time_ratio": oz["ms"] / nat["ms"]}
        if "fwd_err" in oz:
            item["error_gain"] = nat["fwd_err"] / oz["fwd_err"] if oz["fwd_err"] else math.inf
        out.append(item)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES),
                    help="matrix orders n (default 4096 8192 16384; 32768 fits the H200 too)")
    ap.add_argument("--cond", type=float, default=1e10, help="2-norm condition number of the matrices")
    ap.add_argument("--ops", nargs="+", default=["solve", "solve_pos", "lu", "cholesky", "stages", "residual"],
                    choices=["solve", "solve_pos", "lu", "cholesky", "stages", "residual"])
    ap.add_argument("--lu-blocks", type=int, nargs="*", default=[],
                    help="also time ozaki.linalg.lu_factor with these panel widths")
    ap.add_argument("--factorizations", nargs="+", default=["vendor", "ozaki"], choices=["vendor", "ozaki"],
                    help="solve's factorizations for the solve, solve_pos and stages rows (default both)")
    ap.add_argument("--substitution-blocks", type=int, nargs="*", default=[512, 1024, 2048],
                    help="stages: also time the one-column triangular solve by blocked substitution with these "
                         "block sizes (default 512 1024 2048)")
    ap.add_argument("--backend", choices=["gpu", "cpu"], default="gpu",
                    help="gpu: cupy/cuSOLVER (default); cpu: numpy/LAPACK, for small n")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--out", help="write the rows as JSON here")
    a = ap.parse_args(argv)
    rows = run(a.sizes, a.cond, a.backend, a.warmup, a.repeats, a.seed, tuple(a.ops), tuple(a.lu_blocks),
               tuple(a.factorizations), tuple(a.substitution_blocks))
    summ = summary(rows)
    print("\n     n op        ozaki/native time  native/ozaki fwd err")
    for s in summ:
        gain = f"{s['error_gain']:12.3g}" if "error_gain" in s else f"{'-':>12s}"
        print(f"{s['n']:6d} {s['op']:9s} {s['time_ratio']:17.2f} {gain}")
    if a.out:
        from bench import common
        common.write_json(a.out, {"meta": {**common.meta(), "backend": a.backend, "cond": a.cond},
                                  "rows": rows, "summary": summ})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
