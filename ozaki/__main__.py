"""python -m ozaki [demo] [--n N] [--backend cpu|gpu]: multiply in each mode, show accuracy and time."""

import argparse
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
    idx = tuple(np.array(entries).T)
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ozaki", description=__doc__)
    ap.add_argument("command", nargs="?", default="demo", choices=["demo"])
    ap.add_argument("--n", type=int, default=None, help="matrix size (default 256 CPU, 4096 GPU)")
    ap.add_argument("--backend", choices=["cpu", "gpu"], default=None)
    a = ap.parse_args(argv)
    backend = a.backend or _default_backend()
    demo(a.n or (4096 if backend == "gpu" else 256), backend)


if __name__ == "__main__":
    main()
