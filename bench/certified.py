"""Where certified mode's time goes on the GPU: the product at certified's moduli count
(accurate mode, no certification) beside the certified product under several recompute
cost models, with what each recomputed.

    python -m bench.certified --n 16384 --calls 32 35 38 41 --out FILE.json

``--calls``: log2 of scheme.CERTIFY_CALL (a recompute block's fixed cost in multiply-adds);
the largest also times one block of every failing row and column (CERTIFY_ROWS = (n,)).
"""

import argparse

import numpy as np

import ozaki
from ozaki import scheme
from bench import common
from bench.gemm import draw


def run(n, family, calls, repeats):
    import cupy
    rng = np.random.default_rng(20261203)
    A, B = (cupy.asarray(draw(rng, family, (n, n))) for _ in range(2))
    m = scheme.default_num_moduli("certified", n)
    rows = []
    t, _ = common.time_gpu(lambda: A @ B, warmup=1, repeats=repeats)
    rows.append({"what": "native", "ms": t})
    t, _ = common.time_gpu(lambda: ozaki.matmul(A, B, mode="accurate", num_moduli=m), warmup=1, repeats=repeats)
    rows.append({"what": f"accurate:{m}", "ms": t})
    variants = [(c, scheme.CERTIFY_ROWS) for c in calls] + [(max(calls), (n,))]
    old = scheme.CERTIFY_CALL, scheme.CERTIFY_ROWS
    try:
        for call, R in variants:
            scheme.CERTIFY_CALL, scheme.CERTIFY_ROWS = 2 ** call, R
            t, _ = common.time_gpu(lambda: ozaki.matmul(A, B, mode="certified"), warmup=1, repeats=repeats)
            rows.append({"what": f"certified call=2^{call} rows={R}", "ms": t, **scheme.certify_counts})
    finally:
        scheme.CERTIFY_CALL, scheme.CERTIFY_ROWS = old
    for r in rows:
        extra = "".join(f" {k} {r[k]}" for k in ("failing", "recomputed", "blocks") if k in r)
        print(f"{n} {family:6s} {r['what']:44s} {r['ms']:9.2f} ms  x{rows[0]['ms'] / r['ms']:5.2f}{extra}", flush=True)
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
    ap.add_argument("--calls", type=int, nargs="+", default=[32, 35, 38, 41])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="only profile one certified product with cProfile (run with CUDA_LAUNCH_BLOCKING=1)")
    ap.add_argument("--out", default="bench/results/certified.json")
    a = ap.parse_args(argv)
    if a.profile:
        return profile(a.n, a.families[0])
    rows = [r for f in a.families for r in run(a.n, f, a.calls, a.repeats)]
    common.write_json(a.out, {"meta": common.meta(), "rows": rows})


if __name__ == "__main__":
    main()
