"""python -m ozaki [demo|verify|bench] ...

    demo    [--n N] [--backend cpu|gpu]   multiply in each mode, show accuracy and time vs native
    verify  [--profile short|full] [--report DIR] [--bench-results JSON]
            the accuracy verification suite; exit status 1 on any failure
    bench   gemm|zgemm|fft [args...]      the GPU benchmarks (bench/ in the source tree), JSON out
"""

import argparse
import sys
import time

import numpy as np

import ozaki
from ozaki import reference


def _default_backend():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "gpu"
    except Exception:
        pass
    return "cpu"


def demo(n, backend, samples=30):
    rng = np.random.default_rng(2026)
    xp = np
    if backend == "gpu":
        import cupy as xp
    sync = (lambda: xp.cuda.Device().synchronize()) if backend == "gpu" else (lambda: None)
    print(f"ozaki {ozaki.__version__} demo: {n}x{n} @ {n}x{n} float64 on the {backend} backend")
    print(f"{'inputs':14s} {'method':22s} {'moduli':>6s} {'time ms':>9s} {'vs native':>9s} "
          f"{'DMMCH ratio':>12s} {'max ulp':>9s}")
    entries = [(int(i), int(j)) for i, j in zip(rng.integers(0, n, samples), rng.integers(0, n, samples))]
    families = {"N(0,1)": lambda s: rng.standard_normal(s),
                "exp(2 N(0,1))": lambda s: (rng.random(s) - 0.5) * np.exp(2 * rng.standard_normal(s))}
    for fname, gen in families.items():
        A, B = gen((n, n)), gen((n, n))
        dA, dB = xp.asarray(A), xp.asarray(B)

        def timed(f):
            f()
            sync()
            t = time.perf_counter()
            out = f()
            sync()
            return out, (time.perf_counter() - t) * 1e3

        C, t_native = timed(lambda: dA @ dB)
        rows = [("native matmul", "-", C, t_native)]
        for mode in ozaki.MODES:
            C, t = timed(lambda: ozaki.matmul(dA, dB, mode=mode))
            m = ozaki.default_num_moduli(mode, n) if mode != "exact" else "auto"
            rows.append((f"ozaki {mode}", m, C, t))
        for name, m, C, t in rows:
            C = C.get() if hasattr(C, "get") else C
            ratio = reference.dmmch_ratio(C, A, B, entries)
            ulps = reference.ulp_error(C, A, B, entries).max()
            print(f"{fname:14s} {name:22s} {str(m):>6s} {t:9.1f} {t_native / t:8.2f}x "
                  f"{ratio:12.3g} {ulps:9.3g}")
    print("DMMCH ratio = max |C - exact| / (eps |A||B|) and ulp error, exact (fractions), "
          f"on {samples} sampled entries; 'exact' is correctly rounded (<= 0.5 ulp).")
    from . import verify
    rows = verify.run("short", gpu=backend == "gpu")
    failed = [r for r in rows if r.status == "fail"]
    counted = [r for r in rows if r.status in ("pass", "fail")]
    print(f"verification suite (short profile; python -m ozaki verify for the table): "
          f"{len(counted) - len(failed)} passed, {len(failed)} failed")
    for r in failed:
        print(f"  FAILED {r.case} {r.mode} {r.check}: {r.figure:.3g} (native {r.native:.3g})")
    return 1 if failed else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and not argv[0].startswith("-") else "demo"
    rest = argv[1:] if argv and argv[0] == command else argv
    if command == "verify":
        from . import verify
        ap = argparse.ArgumentParser(prog="python -m ozaki verify", description=verify.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("--profile", choices=sorted(verify.PROFILES), default="short")
        ap.add_argument("--report", help="write verify.json, verify.md and plots into this folder")
        ap.add_argument("--bench-results", help="a bench/gemm JSON for the TFLOPS-vs-n plot")
        ap.add_argument("--seed", type=int, default=None)
        ap.add_argument("--no-gpu", action="store_true", help="skip the GPU-vs-CPU checks")
        a = ap.parse_args(rest)
        return verify.main(a.profile, a.report, a.bench_results, a.seed, gpu=not a.no_gpu)
    if command == "bench":
        if not rest or rest[0] not in ("gemm", "zgemm", "fft"):
            print("usage: python -m ozaki bench gemm|zgemm|fft [args]", file=sys.stderr)
            return 2
        try:
            from bench import fft as bench_fft, gemm as bench_gemm
        except ImportError:
            print("ozaki bench needs the source tree's bench/ folder on the path (run from the repository)",
                  file=sys.stderr)
            return 2
        if rest[0] == "fft":
            bench_fft.main(rest[1:])
        else:     # zgemm: the GEMM benchmark on complex N(0,1) inputs against cuBLAS ZGEMM
            extra = ["--families", "complex", "--no-emulated"] if rest[0] == "zgemm" else []
            bench_gemm.main(extra + rest[1:])
        return 0
    if command != "demo":
        print(__doc__, file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(prog="python -m ozaki demo", description="multiply in each mode, "
                                 "show accuracy and time against native matmul")
    ap.add_argument("--n", type=int, default=None, help="matrix size (default 256 CPU, 4096 GPU)")
    ap.add_argument("--backend", choices=["cpu", "gpu"], default=None)
    a = ap.parse_args(rest)
    backend = a.backend or _default_backend()
    return demo(a.n or (4096 if backend == "gpu" else 256), backend)


if __name__ == "__main__":
    sys.exit(main())
