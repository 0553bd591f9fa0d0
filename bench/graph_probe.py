"""Small products eager against replayed as CUDA graphs (ozaki/backends/graphs.py), beside
cuBLAS, on the same inputs: ms a call (CUDA events, median after warm-up) and whether the
bits agree.

    python -m bench.graph_probe [--out FILE]
    python -m bench.graph_probe --exact-stacks 4096x64 256x64
        # exact-mode stacks through graphs and eager: each call's time, the graph counters
        # and why a capture failed
"""

import argparse

import numpy as np

SHAPES = ((1, 256), (1, 512), (1, 1024), (256, 64), (1024, 64), (4096, 64), (256, 128), (64, 256), (16, 512))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out", default=None)
    ap.add_argument("--exact-stacks", nargs="*", default=None, metavar="BxN",
                    help="only exact-mode stacks of B products N^3, through graphs and eager: seven calls "
                         "each way, their times, graphs.stats and graphs._refused")
    ap.add_argument("--profile", type=int, default=0, metavar="CALLS",
                    help="then CALLS replays of a 512^2 product under cProfile, the top functions by own time")
    a = ap.parse_args(argv)
    import cupy

    import ozaki
    from bench import common
    from ozaki.backends import graphs
    rng = np.random.default_rng(1)
    if a.exact_stacks is not None:
        exact_stacks(a.exact_stacks, rng)
        return
    rows = []
    for batch, n in SHAPES:
        shape = (batch, n, n) if batch > 1 else (n, n)
        A, B = (cupy.asarray(rng.standard_normal(shape)) for _ in range(2))
        t_native, _ = common.time_gpu(lambda: A @ B, repeats=a.repeats)
        graphs.ENABLED = False
        try:
            eager = ozaki.matmul(A, B)
            t_eager, _ = common.time_gpu(lambda: ozaki.matmul(A, B), repeats=a.repeats)
        finally:
            graphs.ENABLED = True
        t_graph, _ = common.time_gpu(lambda: ozaki.matmul(A, B), repeats=a.repeats)
        replayed = ozaki.matmul(A, B)
        same = bool(cupy.array_equal(eager.view(cupy.int64), replayed.view(cupy.int64)))
        row = {"batch": batch, "n": n, "native_ms": t_native, "eager_ms": t_eager, "graph_ms": t_graph,
               "captured": len(graphs._graphs), "same_bits": same}
        rows.append(row)
        print(f"{batch:5d} x {n:4d}^3  native {t_native:7.3f} ms | eager {t_eager:7.3f} ms x{t_native / t_eager:6.3f} | "
              f"graph {t_graph:7.3f} ms x{t_native / t_graph:6.3f} | {t_eager / t_graph:5.2f}x faster | "
              f"bits {'==' if same else '!='}", flush=True)
        graphs.clear()
        del A, B, eager, replayed
        cupy.get_default_memory_pool().free_all_blocks()
    if a.profile:
        import cProfile
        import pstats
        A = cupy.asarray(rng.standard_normal((512, 512)))
        for _ in range(3):
            ozaki.matmul(A, A)
        prof = cProfile.Profile()
        prof.runcall(lambda: [ozaki.matmul(A, A) for _ in range(a.profile)])
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    if a.out:
        common.write_json(a.out, {"meta": common.meta(), "rows": rows})


def exact_stacks(specs, rng):
    """Exact-mode stacks through graphs, then eager (graphs off): the time of each of seven
    calls on fresh N(0,1) data (the first eager, the second captures), the counters and
    refusals, and the medians of the last four calls each way."""
    import cupy

    import ozaki
    from bench import common
    from ozaki.backends import graphs
    for spec in specs:
        batch, n = (int(v) for v in spec.split("x"))
        medians = {}
        for label, enabled in (("graphs", True), ("eager", False)):
            graphs.clear()
            graphs.ENABLED = enabled
            times = []
            try:
                for _ in range(7):
                    A, B = (cupy.asarray(rng.standard_normal((batch, n, n))) for _ in range(2))
                    t, _ = common.time_gpu(lambda: ozaki.matmul(A, B, mode="exact"), repeats=1, warmup=0)
                    times.append(t)
            finally:
                graphs.ENABLED = True
            medians[label] = float(np.median(times[-4:]))
            print(f"exact stack {batch} x {n}^3, {label}: " + " ".join(f"{t:.2f}" for t in times)
                  + f" ms; graphs {dict(graphs.stats)}; refused {list(graphs._refused.values())}", flush=True)
        print(f"exact stack {batch} x {n}^3: graphs {medians['graphs']:.3f} ms, eager {medians['eager']:.3f} ms, "
              f"{medians['eager'] / medians['graphs']:.2f}x", flush=True)
        graphs.clear()


if __name__ == "__main__":
    main()
