"""python -m ozaki {demo,verify,bench} ...

    demo    [--n N] [--backend cpu|gpu]   multiply in each mode, show accuracy and time vs native
                                          (the default command: `python -m ozaki` alone runs it)
    verify  [--profile short|full] [--report DIR] [--bench-results JSON] [--seed S] [--no-gpu]
            the accuracy verification suite; exit status 1 on any failure
    bench   gemm|zgemm|fft|linalg|dask [args...]
            the benchmarks of the source tree's bench/ (GPU), their own options after the name
    build   compile the nvcc-built kernels (the residue GEMM, path "cutlass") into the cache;
            needs nvcc and the CUTLASS headers, no GPU; exit status 1 when they cannot be built
"""

import argparse
import importlib
import importlib.util
import os
import sys
import time
import types

import numpy as np

import ozaki
from ozaki import reference

# benchmark name -> (module under bench/, arguments put before the user's, one-line description)
BENCHMARKS = {
    "gemm": ("gemm", [], "FP64 GEMM: ozaki modes vs cuBLAS DGEMM (and its FP64 emulation), one run"),
    "zgemm": ("gemm", ["--families", "complex", "--no-emulated"], "complex GEMM vs cuBLAS ZGEMM"),
    "fft": ("fft", [], "FFT: ozaki.fft vs cuFFT, with L2 errors against an mpmath DFT"),
    "linalg": ("linalg", [], "dense linear algebra on ozaki products"),
    "dask": ("dask_gemm", [], "distributed GEMM through dask.array"),
}

GPU_INSTALL = "pip install 'ozaki[cuda12]' (CUDA 12) or 'ozaki[cuda13]' (CUDA 13)"


class _Usage(Exception):
    """A usage problem found after parsing: printed as `prog: error: ...`, exit status 2."""


def _gpu_problem():
    """None when CuPy sees a CUDA device, else why not (one line)."""
    try:
        import cupy
    except ImportError as e:
        return f"CuPy is not installed ({e}); {GPU_INSTALL}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:          # no driver, no runtime library, ...
        return f"CuPy found no usable CUDA device ({type(e).__name__}: {e})"
    return None if count > 0 else "CuPy found no CUDA device"


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _seed(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


# --- demo ------------------------------------------------------------------------------------

def demo(n, backend, samples=30, seed=None):
    from . import verify
    seed = verify.fresh_seed() if seed is None else seed
    rng = np.random.default_rng(seed)
    xp = np
    if backend == "gpu":
        import cupy as xp
    sync = (lambda: xp.cuda.Device().synchronize()) if backend == "gpu" else (lambda: None)
    print(f"ozaki {ozaki.__version__} demo: {n}x{n} @ {n}x{n} float64 on the {backend} backend (seed {seed})")
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
    print("DMMCH ratio (LAPACK's matrix-multiply test ratio) = max over entries of |C_ij - exact_ij| / "
          "(eps (|A||B|)_ij), eps = 2**-53; ulp error against the exact product; both computed exactly "
          f"(fractions) on {samples} sampled entries. 'exact' is correctly rounded (<= 0.5 ulp).")
    rows = verify.run("short", gpu=backend == "gpu", seed=seed)
    failed = [r for r in rows if r.status == "fail"]
    counted = [r for r in rows if r.status in ("pass", "fail")]
    print(f"verification suite (short profile, seed {seed}; python -m ozaki verify for the table): "
          f"{len(counted) - len(failed)} passed, {len(failed)} failed")
    for r in failed:
        print(f"  FAILED {r.case} {r.mode} {r.check}: {r.figure:.3g} (native {r.native:.3g})")
    return 1 if failed else 0


# --- bench -----------------------------------------------------------------------------------

def _bench_module(name):
    """Import bench.<name> from the source tree (the working directory, or the checkout that holds
    this ozaki package); a _Usage error that says what is missing otherwise."""
    module = BENCHMARKS[name][0]
    if importlib.util.find_spec("bench") is None:
        tree = os.path.dirname(os.path.dirname(os.path.abspath(ozaki.__file__)))
        if os.path.exists(os.path.join(tree, "bench", "__init__.py")):
            sys.path.insert(0, tree)
    spec = importlib.util.find_spec("bench")
    if spec is None:
        raise _Usage(f"bench {name} runs the source tree's bench/{module}.py, which is not importable here: "
                     "run it from a checkout of the ozaki repository (cd ozaki && python -m ozaki bench ...)")
    if importlib.util.find_spec(f"bench.{module}") is None:
        raise _Usage(f"bench {name}: bench/{module}.py is not in the source tree at "
                     f"{os.path.dirname(os.path.dirname(spec.origin))} (not written yet, or an older checkout)")
    return importlib.import_module(f"bench.{module}")


def _stub_cupy():
    """A stand-in `cupy` whose every use raises: lets a benchmark build its parser and print --help
    on a machine without CuPy (bench/fft.py imports cupy before its parser)."""
    stub = types.ModuleType("cupy")

    def missing(attr):
        raise ImportError(f"cupy.{attr}: CuPy is not installed")
    stub.__getattr__ = missing
    return stub


_ABSENT = object()


def bench(name, argv):
    mod = _bench_module(name)
    args = BENCHMARKS[name][1] + list(argv)
    wants_help = any(a in ("-h", "--help") for a in argv)
    saved_argv0 = sys.argv[0]
    sys.argv[0] = f"python -m ozaki bench {name}"           # the benchmark's usage line names the CLI
    stubbed = False
    before = sys.modules.get("cupy", _ABSENT)
    try:
        if wants_help and importlib.util.find_spec("cupy") is None:
            sys.modules["cupy"] = _stub_cupy()
            stubbed = True
        try:
            return mod.main(args) or 0
        except ImportError as e:
            if stubbed:          # the benchmark needed cupy before printing its help: say what it does
                print(f"usage: python -m ozaki bench {name} [options]\n\n{(mod.__doc__ or '').strip()}\n\n"
                      f"(its options are listed where CuPy is installed: {GPU_INSTALL})")
                return 0
            if getattr(e, "name", None) == "cupy" or "cupy" in str(e).lower():
                raise _Usage(f"bench {name} runs on a CUDA device and needs CuPy ({e}); {GPU_INSTALL}") from None
            raise
    finally:
        sys.argv[0] = saved_argv0
        if stubbed:                   # as it was: absent, or None (import refused)
            if before is _ABSENT:
                sys.modules.pop("cupy", None)
            else:
                sys.modules["cupy"] = before


# --- the argument tree -----------------------------------------------------------------------

def build_parser():
    ap = argparse.ArgumentParser(
        prog="python -m ozaki",
        description="ozaki: FP64 matrix products and FFTs emulated exactly on int8 GEMMs "
                    "(Ozaki Scheme II). Without a command, runs the demo.",
        epilog="`python -m ozaki COMMAND --help` describes a command's options.")
    ap.add_argument("--version", action="version", version=f"ozaki {ozaki.__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("demo", help="multiply in every mode; accuracy and time vs native matmul, "
                                    "then the short verification suite",
                       description="Multiply random matrices in every mode and show the accuracy "
                                   "(DMMCH ratio, ulp error, exact references) and time against native "
                                   "matmul, then run the verification suite's short profile. "
                                   "Exit status 1 when a check fails.")
    d.add_argument("--n", type=_positive_int, default=None, help="matrix size (default 256 on the CPU, 4096 on "
                                                                  "the GPU)")
    d.add_argument("--backend", choices=["cpu", "gpu"], default=None,
                   help="default: gpu when CuPy sees a CUDA device, else cpu")
    d.add_argument("--seed", type=_seed, default=None, help="random seed (default: fresh; printed)")

    from . import verify
    v = sub.add_parser("verify", help="the accuracy verification suite (exit status 1 on a failure)",
                       description=verify.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--profile", choices=sorted(verify.PROFILES), default="short")
    v.add_argument("--report", metavar="DIR", help="write verify.json, verify.md and plots into this folder")
    v.add_argument("--bench-results", metavar="JSON", help="a bench/gemm JSON for the TFLOPS-vs-n plot")
    v.add_argument("--seed", type=_seed, default=None,
                   help="random seed of the inputs (default: fresh; printed, and stored in the report)")
    v.add_argument("--no-gpu", action="store_true", help="skip the GPU-vs-CPU checks")

    b = sub.add_parser("bench", help="benchmarks from the source tree's bench/ (GPU): "
                                     + ", ".join(BENCHMARKS),
                       description="Run a benchmark of the source tree's bench/ folder (a checkout of the "
                                   "repository); the arguments after its name are the benchmark's own "
                                   "(`python -m ozaki bench fft --help` lists them).")
    bsub = b.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    for name, (module, extra, text) in BENCHMARKS.items():
        p = bsub.add_parser(name, help=f"{text} (bench/{module}.py{' ' + ' '.join(extra) if extra else ''})",
                            add_help=False, prefix_chars="\0")
        p.add_argument("args", nargs=argparse.REMAINDER)
    k = sub.add_parser("build", help="compile the nvcc-built kernels (the residue GEMM) into the cache",
                       description="Compile the kernels whose launch needs host code (the residue GEMM of "
                                   "path 'cutlass', CUTLASS on Hopper) with nvcc into the cache "
                                   "($OZAKI_KERNEL_CACHE or ~/.cache/ozaki/kernels), about a minute; "
                                   "path 'auto' uses them once built. Exit status 1 when they cannot be built.")
    ap.commands = {"demo": d, "verify": v, "bench": b, "build": k}
    return ap


def build_kernels():
    """``python -m ozaki build``: the native libraries into the cache; 0 built, 1 not.  The
    residue GEMM in both of its builds (its modular reduction on the integer pipes, the
    default, and on the FP64 pipe: cupy_backend.residue_gemm_defines), at the tile
    $OZAKI_RESIDUE_GEMM_TILE names (native.residue_gemm_tile_defines)."""
    from .backends import native
    try:
        tile = native.residue_gemm_tile_defines()
        builds = [("residue GEMM", (("INTEGER_MOD", 1),) + tile), ("residue GEMM (FP64 reduction)", tile)]
        for what, defines in builds:
            print(f"{what}: {native.build('residue_gemm.cu', defines)}")
        return 0
    except native.NativeUnavailable as exc:
        print(f"residue GEMM: not built: {exc}", file=sys.stderr)
        return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["demo"] + argv            # `python -m ozaki [--n N ...]` is the demo
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        if a.command == "demo":
            backend = a.backend
            if backend == "gpu":
                problem = _gpu_problem()
                if problem:
                    raise _Usage(f"--backend gpu: {problem}; `--backend cpu` runs on the CPU")
            backend = backend or ("gpu" if _gpu_problem() is None else "cpu")
            return demo(a.n or (4096 if backend == "gpu" else 256), backend, seed=a.seed)
        if a.command == "verify":
            from . import verify
            return verify.main(a.profile, a.report, a.bench_results, a.seed, gpu=not a.no_gpu)
        if a.command == "bench":
            if a.benchmark is None:
                raise _Usage("bench needs a benchmark name: " + ", ".join(BENCHMARKS) +
                             " (python -m ozaki bench --help)")
            return bench(a.benchmark, a.args)
        if a.command == "build":
            return build_kernels()
    except _Usage as e:
        parser = ap.commands.get(a.command, ap)
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    ap.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
