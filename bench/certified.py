"""Where certified mode's time goes on the GPU: cuBLAS DGEMM, accurate mode at its default
count and at each moduli count asked (the product without certification), and the
certified product at that count, with the entries that failed the per-entry test and
were recomputed one by one (kernels/exact_dot.cu's exact_entries), and the test's pass
(kernels/certify.cu) and the recomputation timed alone.  Exact mode both ways: by
its slices alone, and by the test (scheme.EXACT_BY_TEST: certified's moduli, the
epilogue's rounding residuals, the entries not proved correctly rounded recomputed),
whose bits must agree.

    python -m bench.certified --n 16384 --families normal phi1 phi3 --moduli 20 21 22 --out FILE.json
"""

import argparse

import numpy as np

import ozaki
from ozaki import scheme
from bench import common
from bench.gemm import draw


def run(n, family, moduli, repeats):
    import cupy
    from ozaki.backends import cupy_backend
    rng = np.random.default_rng(20261203)
    A, B = (cupy.asarray(draw(rng, family, (n, n))) for _ in range(2))
    rows = []
    t, _ = common.time_gpu(lambda: A @ B, warmup=1, repeats=repeats)
    rows.append({"family": family, "what": "native", "ms": t})

    def paired(f):
        """f's time and native's, timed in alternation (common.time_paired)."""
        t, t_native = common.time_paired(f, lambda: A @ B, warmup=1, repeats=repeats)
        return {"ms": t, "native_ms": t_native}

    rows.append({"family": family, "what": f"accurate:{scheme.default_num_moduli('accurate', n)}",
                 **paired(lambda: ozaki.matmul(A, B))})
    for m in moduli:
        rows.append({"family": family, "what": f"accurate:{m}",
                     **paired(lambda: ozaki.matmul(A, B, mode="accurate", num_moduli=m))})
        rows.append({"family": family, "what": f"certified:{m}",
                     **paired(lambda: ozaki.matmul(A, B, mode="certified", num_moduli=m)), **scheme.certify_counts})
    default = scheme.EXACT_BY_TEST
    try:
        scheme.EXACT_BY_TEST = False
        rows.append({"family": family, "what": "exact (slices)", **paired(lambda: ozaki.matmul(A, B, mode="exact"))})
        slices = ozaki.matmul(A, B, mode="exact")
        scheme.EXACT_BY_TEST = True
        row = paired(lambda: ozaki.matmul(A, B, mode="exact"))
        tested = ozaki.matmul(A, B, mode="exact")
        rows.append({"family": family, "what": "exact (by test)", **row, **scheme.certify_counts,
                     "same_bits": bool(cupy.array_equal(slices.view(cupy.int64), tested.view(cupy.int64)))})
    finally:
        scheme.EXACT_BY_TEST = default
    del slices, tested
    # the two certification steps alone, at the last count: the test's pass over C and the
    # exact dot products of the failing entries
    m = moduli[-1]
    Bt = cupy.ascontiguousarray(B.T)
    plan = scheme.make_plan(cupy, A, Bt, "accurate", m, cupy_backend)
    C = [ozaki.matmul(A, B, mode="accurate", num_moduli=m)[None]]
    def bound_sides():
        return tuple(scheme.bound_side(cupy_backend, X, beta, plan.nearest)
                     for X, beta in ((A, plan.beta_a), (Bt, plan.beta_b)))
    sides = bound_sides()
    t, _ = common.time_gpu(bound_sides, warmup=1, repeats=repeats)
    rows.append({"family": family, "what": "bound sides", "ms": t})
    ieee = tuple((f & 1) != 0 for f in plan.flags)
    t, _ = common.time_gpu(lambda: cupy_backend.uncertified(C, *sides, *ieee, n), warmup=1, repeats=repeats)
    rows.append({"family": family, "what": f"test pass:{m}", "ms": t})
    bad, _ = cupy_backend.uncertified(C, *sides, *ieee, n)
    i, j = cupy.nonzero(bad[0])
    if i.size:
        t, _ = common.time_gpu(lambda: cupy_backend.exact_entries(A, Bt, i, j, 1, np.float64), warmup=1,
                               repeats=repeats)
        rows.append({"family": family, "what": f"exact entries:{m}", "ms": t, "entries": int(i.size)})
    for r in rows:
        extra = "".join(f" {k} {r[k]}" for k in ("failing", "recomputed", "blocks", "entries", "same_bits") if k in r)
        native = r.get("native_ms", rows[0]["ms"])      # paired where timed so (common.time_paired)
        print(f"{n} {family:6s} {r['what']:20s} {r['ms']:9.2f} ms  x{native / r['ms']:5.2f}{extra}", flush=True)
    return rows


def profile(n, family):
    import cProfile
    import pstats
    import cupy
    rng = np.random.default_rng(20261203)
    A, B = (cupy.asarray(draw(rng, family, (n, n))) for _ in range(2))
    ozaki.matmul(A, B, mode="certified")
    cupy.cuda.Device().synchronize()
    prof = cProfile.Profile()
    prof.runcall(lambda: (ozaki.matmul(A, B, mode="certified"), cupy.cuda.Device().synchronize()))
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--families", nargs="+", default=["normal"])
    ap.add_argument("--moduli", type=int, nargs="+", default=[20, 21, 22])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="only profile one certified product with cProfile (run with CUDA_LAUNCH_BLOCKING=1)")
    ap.add_argument("--out", default="bench/results/certified.json")
    a = ap.parse_args(argv)
    if a.profile:
        return profile(a.n, a.families[0])
    rows = [r for f in a.families for r in run(a.n, f, a.moduli, a.repeats)]
    common.write_json(a.out, {"meta": common.meta(), "rows": rows})


if __name__ == "__main__":
    main()
