"""FFT benchmark: cuFFT (cupy.fft) vs ozaki.fft on the same inputs, one run, CUDA events.

    python -m bench.fft --sizes 1048576 --cubes 256 --out bench/results/fft.json
    python -m bench.fft --cubes 512 --real-cubes 512 --batches 4096x1024 --sizes 16777216

Each row also splits one transform's time over the pipeline steps (residues,
GEMMs, epilogue, ...: bench.common.step_split), the rest being the FFT's own
twiddle products and transposes.  Errors: benchFFT's L2 relative error of sampled bins against an mpmath DFT at
40 digits (1-D only; a 3-D bin would need N^3 terms); past --max-l2-size the rows record the sampled bins'
values and ``python -m bench.fft_l2 FILE`` computes their reference (reference.dft_bins_exact_sum) offline.
"""

import argparse

import numpy as np

import ozaki.fft as ozaki_fft
from bench import common
from ozaki.reference import dft_bins, l2_error


def rel_diff(ours, cufft):
    """||ours - cuFFT|| / ||cuFFT||, where no mpmath reference is affordable."""
    import cupy
    return float(cupy.linalg.norm(ours - cufft) / cupy.linalg.norm(cufft))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1 << 20])
    ap.add_argument("--cubes", type=int, nargs="*", default=[256])
    ap.add_argument("--batches", nargs="*", default=[], metavar="BxN",
                    help="batches of B 1-D transforms of N points (one fft along the last axis)")
    ap.add_argument("--real-cubes", type=int, nargs="*", default=[], metavar="N",
                    help="rfftn of real N^3 data against cupy.fft.rfftn")
    ap.add_argument("--bins", type=int, default=16,
                    help="bins sampled per 1-D size (recorded; bench.fft_l2 makes their reference offline)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-l2-size", type=int, default=1 << 16,
                    help="longest transform whose sampled bins get the mpmath reference here (O(N) mpmath "
                         "operations each); the longer ones' come from bench.fft_l2")
    ap.add_argument("--single", action="store_true",
                    help="largest transforms: one run, timed and split, whose result gives the error")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="only profile one N^3 fftn with cProfile (run with CUDA_LAUNCH_BLOCKING=1 so "
                         "that GPU time lands on the Python call that launched it)")
    ap.add_argument("--path", choices=["auto", "fused", "cublas", "cutlass"], default="auto",
                    help="the GPU path of the transforms' products (ozaki.config(path=...))")
    ap.add_argument("--epilogue", type=float, default=None, metavar="W",
                    help="the plans' cost-model weight of one output's epilogue (ozaki.fft.plans.EPILOGUE), "
                         "to measure which algorithm the GPU prefers; the rows name their plans")
    ap.add_argument("--mode", default=None, metavar="MODE[:MODULI]",
                    help="the transforms' mode and moduli count (default: ozaki.fft's, exact), to measure "
                         "what a faster mode gives in time and in the L2 error of the 1-D rows")
    ap.add_argument("--fresh", type=int, default=0, metavar="K",
                    help="time batches and 1-D sizes over K fresh draws of the same kind, called in turn "
                         "(a CUDA graph's speculation then checks new data each call)")
    ap.add_argument("--out", default="bench/results/fft.json")
    a = ap.parse_args(argv)
    if a.epilogue is not None:
        from ozaki.fft import plans
        plans.EPILOGUE = a.epilogue
        plans.choose.cache_clear()
    import cupy
    import ozaki
    with ozaki.config(path=a.path):
        return run(a, cupy)


SEED = 5


def signal(N):
    """The 1-D rows' input: complex, parts uniform in [-0.5, 0.5), from its own seed
    (SEED, N), so that bench.fft_l2 can make it again."""
    rng = np.random.default_rng([SEED, N])
    return rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)


def run(a, cupy):
    rng = np.random.default_rng(5)
    rows = []
    if a.mode:
        import functools
        import types
        mode, num_moduli = common.mode_spec(a.mode)
        of = types.SimpleNamespace(algorithm=ozaki_fft.algorithm, **{
            name: functools.partial(getattr(ozaki_fft, name), mode=mode, num_moduli=num_moduli)
            for name in ("fft", "fftn", "rfftn")})
    else:
        of = ozaki_fft
    if a.profile:
        import cProfile
        import pstats
        d = cupy.asarray(rng.random((a.profile,) * 3) - 0.5 + 0j)
        of.fftn(d)
        cupy.cuda.Device().synchronize()
        prof = cProfile.Profile()
        prof.runcall(lambda: (of.fftn(d), cupy.cuda.Device().synchronize()))
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        return

    def record(row):                   # written after every row: a later size may run out of time
        from ozaki.backends import graphs
        row["graphs"] = dict(graphs.stats)     # captured, replayed, missed so far (CUDA graphs)
        row["graphs_refused"] = sorted(set(graphs._refused.values()))
        rows.append(row)
        print(f"{row['shape']} {row.get('kind', '')}: cuFFT {row['cufft_ms']:.4f} ms, ozaki {row['ozaki_ms']:.4f} ms, "
              f"{row['ozaki_ms'] / row['cufft_ms']:.1f}x; graphs {row['graphs']} refused {row['graphs_refused']}",
              flush=True)
        print(row, flush=True)
        common.write_json(a.out, {"meta": common.meta(), "mode": a.mode or "exact", "rows": rows})

    def timed(f, d, g=None, draw=None):
        """(cuFFT ms, ours ms, our time split, our result); g: cuFFT's function (default by ndim);
        draw: makes another input like d (--fresh)."""
        g = g or (cupy.fft.fftn if d.ndim > 1 else cupy.fft.fft)
        t_cufft, _ = common.time_gpu(lambda: g(d), repeats=a.repeats)
        if a.single:                   # one run: its split, time and error (first call: compiles included)
            split, result = common.step_split(lambda: f(d))
            return t_cufft, split["total"], split, result
        if a.fresh and draw is not None:
            import itertools
            inputs = itertools.cycle([d] + [draw() for _ in range(a.fresh - 1)])
            t_ours, _ = common.time_gpu(lambda: f(next(inputs)), warmup=common.graph_warmup(), repeats=a.repeats)
        else:
            t_ours, _ = common.time_gpu(lambda: f(d), warmup=common.graph_warmup(), repeats=a.repeats)
        split, result = common.step_split(lambda: f(d))
        return t_cufft, t_ours, split, result

    for n in a.cubes:
        d = cupy.asarray(rng.random((n, n, n)) - 0.5 + 0j)
        t_cufft, t_ours, split, ours = timed(of.fftn, d)
        record({"shape": [n, n, n], "plan": of.algorithm(n, n * n), "cufft_ms": t_cufft, "ozaki_ms": t_ours,
                "ratio": t_cufft / t_ours,
                "rel_diff_to_cufft": rel_diff(ours, cupy.fft.fftn(d)), "split_ms": split})
        del d, ours
    for n in a.real_cubes:
        d = cupy.asarray(rng.random((n, n, n)) - 0.5)
        t_cufft, t_ours, split, ours = timed(of.rfftn, d, cupy.fft.rfftn)
        record({"shape": [n, n, n], "kind": "rfftn", "cufft_ms": t_cufft, "ozaki_ms": t_ours,
                "ratio": t_cufft / t_ours, "rel_diff_to_cufft": rel_diff(ours, cupy.fft.rfftn(d)), "split_ms": split})
        del d, ours
    for spec in a.batches:
        B, N = (int(v) for v in spec.lower().split("x"))
        def draw():
            return cupy.asarray(rng.random((B, N)) - 0.5 + 1j * (rng.random((B, N)) - 0.5))
        d = draw()
        t_cufft, t_ours, split, ours = timed(of.fft, d, cupy.fft.fft, draw)
        record({"shape": [B, N], "kind": "batch of fft", "plan": of.algorithm(N, B), "cufft_ms": t_cufft,
                "ozaki_ms": t_ours,
                "ratio": t_cufft / t_ours, "rel_diff_to_cufft": rel_diff(ours, cupy.fft.fft(d)), "split_ms": split})
        del d, ours
    for N in a.sizes:
        x = signal(N)
        d = cupy.asarray(x)
        t_cufft, t_ours, split, ours = timed(of.fft, d, draw=lambda: cupy.asarray(
            rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)))
        row = {"shape": [N], "cufft_ms": t_cufft, "ozaki_ms": t_ours, "ratio": t_cufft / t_ours, "split_ms": split}
        ks = [int(k) for k in np.random.default_rng([SEED, N, 1]).integers(0, N, a.bins)]
        theirs = cupy.fft.fft(d)
        # the sampled bins as exact hex floats, for a reference computed elsewhere (bench.fft_l2)
        row.update({"seed": [SEED, N], "bins": ks,
                    "ozaki_bins": [[float(v.real).hex(), float(v.imag).hex()] for v in cupy.asnumpy(ours[ks])],
                    "cufft_bins": [[float(v.real).hex(), float(v.imag).hex()] for v in cupy.asnumpy(theirs[ks])]})
        if N <= a.max_l2_size:
            ref = dft_bins(x, ks)
            row.update({"cufft_l2": l2_error(cupy.asnumpy(theirs), ref, ks),
                        "ozaki_l2": l2_error(cupy.asnumpy(ours), ref, ks),
                        "numpy_l2": l2_error(np.fft.fft(x), ref, ks)})
        row["rel_diff_to_cufft"] = rel_diff(ours, theirs)
        record(row)


if __name__ == "__main__":
    main()
