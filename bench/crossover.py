"""The fused kernel against the residue GEMM (CUTLASS) and the cuBLAS-per-modulus path, shape
by shape: the table behind cupy_backend.choose_path("auto"), and the fused kernel's own int8
rate and bytes per output.

    python -m bench.crossover --out bench/results/crossover.json

Every row times ozaki.matmul (accurate mode, default moduli) with path="fused",
path="cutlass" (where the residue GEMM is built) and path="cublas" and cupy.matmul on the
same N(0,1) inputs (CUDA events, median after warm-up; repeated shapes replay their CUDA
graph where the path allows), checks that the paths give the same bits, and times the fused kernel alone
(cupy_backend.fused_product on the residues): int8 TOPS (2 m n k per modulus and Karatsuba
part) and bytes per output (the residues it reads, re-read once per tile row/column, and
the float64 it writes) against the measured roofs (4.17 TB/s, 1.2-1.37 POPS).
"""

import argparse

import numpy as np

import ozaki
from bench import common

# (label, batch, m, k, n, complex)
CASES = [
    ("stack", 4096, 64, 64, 64, False),
    ("stack", 1024, 128, 128, 128, False),
    ("stack", 256, 256, 256, 256, False),
    ("stack", 64, 512, 512, 512, False),
    ("stack", 16, 1024, 1024, 1024, False),
    ("square", 1, 512, 512, 512, False),
    ("square", 1, 1024, 1024, 1024, False),
    ("square", 1, 2048, 2048, 2048, False),
    ("square", 1, 4096, 4096, 4096, False),
    ("square", 1, 8192, 8192, 8192, False),
    ("square", 1, 16384, 16384, 16384, False),
    ("skinny-k", 1, 16384, 256, 16384, False),
    ("skinny-k", 1, 8192, 1024, 8192, False),
    ("skinny-n", 1, 16384, 16384, 64, False),
    ("complex", 1, 1024, 1024, 1024, True),
    ("complex", 1, 2048, 2048, 2048, True),
    ("complex", 1, 4096, 4096, 4096, True),
    ("complex-stack", 256, 64, 64, 64, True),
]


def _inputs(rng, batch, m, k, n, complex_):
    shape_a = (batch, m, k) if batch > 1 else (m, k)
    shape_b = (batch, k, n) if batch > 1 else (k, n)
    A, B = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    if complex_:
        A, B = A + 1j * rng.standard_normal(shape_a), B + 1j * rng.standard_normal(shape_b)
    return A, B


def work(case):
    """batch m n k of a case (label, batch, m, k, n, complex)."""
    return case[1] * case[2] * case[3] * case[4]


def select(cases, labels=None, max_work=None):
    """The cases labelled one of ``labels`` (None: any) of at most ``max_work`` batch*m*n*k (None: any)."""
    return [c for c in cases if (labels is None or c[0] in labels) and (max_work is None or work(c) <= max_work)]


def kernel_alone(dA, dB, repeats):
    """The fused kernel on the product's residues: (ms, TOPS, bytes per output)."""
    import cupy
    from ozaki import scheme
    from ozaki.backends import cupy_backend as be
    A = dA.reshape(-1, dA.shape[-2], dA.shape[-1])
    B = dB.reshape(-1, dB.shape[-2], dB.shape[-1])
    batch, m, k = A.shape
    n = B.shape[-1]
    if cupy.iscomplexobj(A):
        return None
    A2 = cupy.ascontiguousarray(A).reshape(-1, k)
    Bt = cupy.ascontiguousarray(B.transpose(0, 2, 1)).reshape(-1, k)
    plan = scheme.make_plan(cupy, A2, Bt, "accurate", None, be, 1, batch, "fused")
    ra = [[be.residues(A2, plan.beta_a, None, plan.num_moduli, plan.nearest)]]
    rb = [[be.residues(Bt, plan.beta_b, None, plan.num_moduli, plan.nearest)]]
    t, _ = common.time_gpu(lambda: be.fused_product(ra, rb, [0], plan.num_moduli, plan.beta_a, plan.beta_b, batch),
                           warmup=2, repeats=repeats)
    bm, bn = be._fused_tile(plan.num_moduli, k, (m, n, batch))[:2]
    kp = ra[0][0].shape[-1]
    reads = plan.num_moduli * kp * (batch * m * -(-n // bn) + batch * n * -(-m // bm))
    outputs = batch * m * n
    ops = 2.0 * batch * m * n * kp * plan.num_moduli
    return t, ops / t / 1e9, (reads + 8 * outputs) / outputs


# Candidate tiles for the sweep: (BM, BN, WARPS_M, WARPS_N, BK, STAGES).  The last two: blocks
# of 32 x 32 and 64 x 32 outputs on warp tiles of 32 x 32 (one warp, two).
SWEEP_TILES = [(64, 64, 2, 2, 64, 3), (64, 64, 2, 2, 128, 2), (64, 64, 2, 2, 128, 3), (64, 64, 2, 2, 32, 4),
               (128, 64, 4, 2, 64, 3), (128, 64, 4, 2, 128, 2), (64, 64, 1, 2, 64, 3), (64, 128, 2, 4, 64, 3),
               (32, 64, 1, 2, 64, 4), (64, 64, 2, 1, 128, 2), (32, 32, 2, 2, 64, 4), (64, 64, 2, 2, 64, 5),
               (32, 32, 2, 2, 64, 8), (32, 32, 1, 1, 64, 4), (64, 32, 2, 1, 64, 4),
               (32, 32, 2, 2, 64, 3), (32, 32, 2, 2, 64, 2)]
SWEEP_CASES = [("stack", 4096, 64, 64, 64, False), ("stack", 1024, 128, 128, 128, False),
               ("stack", 256, 256, 256, 256, False),
               ("square", 1, 2048, 2048, 2048, False), ("square", 1, 8192, 8192, 8192, False)]


def sweep(repeats, cases=SWEEP_CASES):
    """The fused kernel alone under each candidate tile, on ``cases``: the rows
    (tile, case, ms, TOPS) and the best tile for short and for long inner dimensions
    (the least geometric mean of time over each class's cases, relative to the fastest)."""
    import cupy
    from ozaki.backends import cupy_backend as be
    saved = be.FUSED_TILES
    rows = []
    rng = np.random.default_rng(7)
    try:
        for label, batch, m, k, n, complex_ in cases:
            A, B = _inputs(rng, batch, m, k, n, complex_)
            dA, dB = cupy.asarray(A), cupy.asarray(B)
            for tile in SWEEP_TILES:
                be.FUSED_TILES = {key: (tile,) + saved[key] for key in saved}
                # the tile the launch takes (with the CRT sums on the tensor cores, only one whose
                # pipeline holds their digit sums): a tile it passes over is not timed
                skew = be._res_skew(1, 1, 16)
                if be._fused_tile(16, k, skew=skew, crt_moduli=16 if skew else None) != tile:
                    continue
                t, tops, _ = kernel_alone(dA, dB, repeats)
                rows.append({"tile": list(tile), "case": label, "batch": batch, "m": m, "k": k, "n": n,
                             "kernel_ms": t, "kernel_tops": tops})
                print(f"tile {str(tile):28s} {label:7s} {batch}x{m}x{k}x{n}: {t:8.3f} ms {tops:6.0f} TOPS", flush=True)
            del dA, dB
            cupy.get_default_memory_pool().free_all_blocks()
    finally:
        be.FUSED_TILES = saved
    best = {}
    for key, short in (("short", True), ("long", False)):
        cases = {(r["batch"], r["m"], r["k"], r["n"]) for r in rows if (r["k"] <= be.SHORT_K) == short}
        fastest = {c: min(r["kernel_ms"] for r in rows if (r["batch"], r["m"], r["k"], r["n"]) == c) for c in cases}
        score = {}
        for r in rows:
            c = (r["batch"], r["m"], r["k"], r["n"])
            if c in cases:
                score.setdefault(tuple(r["tile"]), []).append(np.log(r["kernel_ms"] / fastest[c]))
        complete = {t: v for t, v in score.items() if len(v) == len(cases)}
        best[key] = min(complete, key=lambda t: np.mean(complete[t])) if complete else None
    print("best tiles:", best, flush=True)
    return rows, best


def overhead(calls=40):
    """Where a small product's host time goes: cProfile of ``calls`` products (n = 512, and a
    stack 4096 x 64^3), the top functions by own time."""
    import cProfile
    import pstats
    import cupy
    rng = np.random.default_rng(3)
    for shape_a, shape_b in (((512, 512), (512, 512)), ((4096, 64, 64), (4096, 64, 64))):
        dA, dB = cupy.asarray(rng.standard_normal(shape_a)), cupy.asarray(rng.standard_normal(shape_b))
        ozaki.matmul(dA, dB)
        cupy.cuda.Device().synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            ozaki.matmul(dA, dB)
        cupy.cuda.Device().synchronize()
        prof.disable()
        print(f"== host profile, {calls} products {shape_a} @ {shape_b} ==")
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def _paths():
    from ozaki.backends import cupy_backend
    return ("fused", "cutlass", "cublas") if cupy_backend.residue_gemm_available() is True else ("fused", "cublas")


def run(cases, repeats):
    import cupy
    rows = []
    paths = _paths()
    rng = np.random.default_rng(20261203)
    for label, batch, m, k, n, complex_ in cases:
        A, B = _inputs(rng, batch, m, k, n, complex_)
        dA, dB = cupy.asarray(A), cupy.asarray(B)
        flops = (8.0 if complex_ else 2.0) * batch * m * n * k
        t_native, _ = common.time_gpu(lambda: dA @ dB, repeats=repeats)
        row = {"case": label, "batch": batch, "m": m, "k": k, "n": n, "complex": complex_,
               "native_ms": t_native, "native_tflops": flops / t_native / 1e9}
        results = {}
        for path in paths:
            with ozaki.config(path=path):
                f = lambda: ozaki.matmul(dA, dB)
                t, _ = common.time_gpu(f, warmup=common.graph_warmup(), repeats=repeats)
                results[path] = f()
            row[f"{path}_ms"] = t
            row[f"{path}_ratio"] = t_native / t
            row[f"{path}_tflops"] = flops / t / 1e9
        row["same_bits"] = all(bool(cupy.array_equal(results[p].view(cupy.int64), results["fused"].view(cupy.int64)))
                               for p in paths)
        row["winner"] = min(paths, key=lambda p: row[f"{p}_ms"])
        alone = kernel_alone(dA, dB, repeats)
        if alone:
            row["kernel_ms"], row["kernel_tops"], row["kernel_bytes_per_output"] = alone
        rows.append(row)
        print_row(row)
        del dA, dB, results
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


def print_row(r):
    shape = f"{r['batch']}x{r['m']}x{r['k']}x{r['n']}{' c' if r['complex'] else ''}"
    kern = (f" kernel {r['kernel_ms']:.3f} ms {r['kernel_tops']:.0f} TOPS {r['kernel_bytes_per_output']:.0f} B/out"
            if "kernel_ms" in r else "")
    paths = "".join(f"| {p} {r[p + '_ms']:8.3f} ms x{r[p + '_ratio']:6.3f} "
                    for p in ("fused", "cutlass", "cublas") if p + "_ms" in r)
    print(f"{r['case']:13s} {shape:24s} native {r['native_ms']:8.3f} ms {paths}| "
          f"{r['winner']:7s} bits {'==' if r['same_bits'] else '!='}{kern}", flush=True)


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", nargs="*", default=None, help="labels of CASES to run (default: all)")
    ap.add_argument("--sweep", action="store_true", help="time the kernel alone under SWEEP_TILES first")
    ap.add_argument("--profile", action="store_true", help="profile small products' host time last")
    ap.add_argument("--tiles-out", help="with --sweep: write the best tiles as OZAKI_FUSED_TILES's value here")
    ap.add_argument("--max-work", type=float, default=None,
                    help="skip cases (the sweep's too) of more than this batch*m*n*k; 2.2e9 keeps the "
                         "stacks of 64^3 and 128^3 products and n <= 1024")
    ap.add_argument("--out", default="bench/results/crossover.json")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    cases = select(CASES, a.cases, a.max_work)
    tiles, best = sweep(a.repeats, select(SWEEP_CASES, max_work=a.max_work)) if a.sweep else ([], {})
    if best.get("short") and best.get("long"):          # the cases under the tiles the sweep chose
        from ozaki.backends import cupy_backend as be
        be.FUSED_TILES = {key: (best[key],) + be.FUSED_TILES[key] for key in be.FUSED_TILES}
    if a.tiles_out and best.get("short") and best.get("long"):
        with open(a.tiles_out, "w") as f:
            f.write(";".join(",".join(str(v) for v in best[key]) for key in ("short", "long")))
    rows = run(cases, a.repeats)
    common.write_json(a.out, {"meta": common.meta(), "tiles": tiles, "best_tiles": best, "rows": rows})
    if a.profile:
        overhead()


if __name__ == "__main__":
    main()
