"""What a GPU run would pay, counted on the CPU: products, backend passes, launches, host syncs.

    python -m bench.counts                 # the FFT shapes and a refinement at n = 4096
    python -m bench.counts --fft 2^16      # one FFT case (names: FFT_CASES); --linalg 1024 for a smaller solve

On the GPU every ozaki product costs ~1.2-1.5 ms of host work (the plan's ~60
CuPy operations) before its kernels, and every host synchronization stalls the
stream, so these counts say much of the GPU time of small products.  The
pipeline's named backend steps are wrapped and counted (their own insides are
not: the CPU backend's are numpy, the GPU backend's kernels); a host sync is a
device value turned into a Python value by int(), float() or bool() in the
modules that run on device arrays (shadowed in their globals), by
``specials._host`` (a device -> host copy), by the linalg namespace's
``asnumpy``, by the ``.tolist()`` of scheme._needing_fixups, by
``scheme.to_host_ints`` (one transfer of several values), by the backend's
``flags_found`` read on the host (its one 4-byte read), or by ``row_specials`` (the GPU's
reads its rows' flags' bits: one 4-byte read; run 8b1f31d's batch of 4096 x 1024 made two
device-to-host copies a call, this one and exact mode's plan).

Columns: products (ozaki product pipelines run: product_finite calls),
residues (backend residue passes: ``residues`` + ``add_residues``), gemm
(backend ``gemm``/``fused_product`` calls; the cuBLAS path issues one per
modulus or one over all moduli, the fused path one launch), epilogue
(backend ``epilogue`` calls), scans (``scan_rows`` + ``split``), syncs.
"""

import argparse
import contextlib
import importlib
import sys
import time

import numpy as np

STEPS = {"residues": ("residues", "add_residues", "fp8_operands"),
         "gemm": ("gemm", "gemm_fp32_digits", "fp8_products", "fp8_recombine", "fused_product"),
         "epilogue": ("epilogue",), "scans": ("scan_rows", "split")}
# the modules whose code runs on device arrays (the backends excluded: their insides are kernels;
# ozaki/__init__ too: its device syncs are for integer operands, its int() of shapes are host values)
SYNC_MODULES = ("ozaki.scheme", "ozaki.fft.interface", "ozaki.fft.stages", "ozaki.fft.specials",
                "ozaki.fft.bluestein", "ozaki.linalg.refine", "ozaki.linalg.basic", "ozaki.linalg.decomp_lu",
                "ozaki.linalg.triangular", "ozaki.linalg.condest", "ozaki.linalg.equilibrate")
COLUMNS = ("products", "residues", "gemm", "epilogue", "scans", "syncs")


class Counter:
    def __init__(self):
        self.counts = dict.fromkeys(COLUMNS, 0)
        self.depth = 0                         # inside a backend step: its work is the step's
        self.sites = {}                        # sync -> count per calling line (--sites)

    def add(self, key, n=1):
        if self.depth == 0:
            self.counts[key] += n
            if key == "syncs":
                f = sys._getframe(2)
                site = f"{f.f_code.co_filename.split('ozaki/')[-1]}:{f.f_lineno}"
                self.sites[site] = self.sites.get(site, 0) + n


def _device_value(x):
    return isinstance(x, (np.ndarray, np.generic))


@contextlib.contextmanager
def counting():
    """Count the pipeline's steps and host syncs inside the block; yields the Counter."""
    from ozaki import scheme
    from ozaki.backends import numpy_backend
    from ozaki.fft import specials
    from ozaki.linalg import _backend
    c = Counter()
    undo = []

    def patch(obj, name, new):
        old = getattr(obj, name, None)
        undo.append((obj, name, old))
        setattr(obj, name, new)

    def step(key, f, inside=True):
        def wrapped(*a, **k):
            c.add(key)
            c.depth += inside
            try:
                return f(*a, **k)
            finally:
                c.depth -= inside
        return wrapped

    for key, names in STEPS.items():
        for name in names:
            if hasattr(numpy_backend, name):
                patch(numpy_backend, name, step(key, getattr(numpy_backend, name)))
    patch(scheme, "product_finite", step("products", scheme.product_finite, inside=False))

    def syncing(kind):
        """A stand-in for the builtin ``kind`` that counts device values converted (a class,
        so that isinstance(x, int) and dtype=bool still read it as the builtin)."""
        def convert(cls, x=0, *rest):
            if _device_value(x):
                c.add("syncs")
            return kind(x, *rest)
        meta = type("Counting", (type,), {"__instancecheck__": lambda cls, x: isinstance(x, kind),
                                           "__call__": convert})
        return meta(kind.__name__, (), {"dtype": np.dtype(kind)})

    for mod_name in SYNC_MODULES:
        mod = importlib.import_module(mod_name)
        for kind in (int, float, bool):
            patch(mod, kind.__name__, syncing(kind))
    host = specials._host
    patch(specials, "_host", lambda a: (c.add("syncs"), host(a))[1])
    asnumpy = _backend.Namespace.asnumpy
    patch(_backend.Namespace, "asnumpy", lambda self, x: (c.add("syncs"), asnumpy(self, x))[1])
    if hasattr(scheme, "to_host_ints"):      # the pipeline's own transfers (after prepared operands)
        to_host = scheme.to_host_ints

        def to_host_ints(xp, values, *speculation):
            if any(not isinstance(v, int) for v in values):
                c.add("syncs")
            return to_host(xp, values, *speculation)
        patch(scheme, "to_host_ints", to_host_ints)
    flags_found = numpy_backend.flags_found

    def counted_flags_found(flags_a, flags_b, host=True):
        if host:                               # else to_host_ints brings it, counted there
            c.add("syncs")
        return flags_found(flags_a, flags_b, host)
    patch(numpy_backend, "flags_found", counted_flags_found)
    row_specials = numpy_backend.row_specials

    def counted_row_specials(*args, **kw):
        c.add("syncs")                         # cupy_backend.row_specials' int(...) of its flags
        return row_specials(*args, **kw)
    patch(numpy_backend, "row_specials", counted_row_specials)
    needing = scheme._needing_fixups

    def needing_fixups(xp, C, found):
        if found & 2 and not found & 1 and not getattr(scheme._zero_signs, "elsewhere", False):
            c.add("syncs")                     # its flatnonzero(...).tolist() (not where the FFT settles them)
        return needing(xp, C, found)
    patch(scheme, "_needing_fixups", needing_fixups)
    try:
        yield c
    finally:
        for obj, name, old in reversed(undo):
            if old is None:                    # a shadowed builtin
                delattr(obj, name)
            else:
                setattr(obj, name, old)


FFT_CASES = {"2^16": ("fft", (1 << 16,)), "2^20": ("fft", (1 << 20,)), "128^3": ("fftn", (128,) * 3),
             "256^3": ("fftn", (256,) * 3), "rfft 2^20": ("rfft", (1 << 20,)),
             "batch 256x1024": ("fft", (256, 1024))}


def fft_counts(name, repeats=2):
    """Counts of the last of ``repeats`` calls (the first builds and caches the constants)."""
    import ozaki.fft
    fn, shape = FFT_CASES[name]
    rng = np.random.default_rng(16)
    x = rng.standard_normal(shape)
    if fn != "rfft":
        x = x + 1j * rng.standard_normal(shape)
    for _ in range(repeats - 1):
        getattr(ozaki.fft, fn)(x)
    t = time.perf_counter()
    with counting() as c:
        getattr(ozaki.fft, fn)(x)
    return c.counts, time.perf_counter() - t


def linalg_counts(n=4096, cond=1e10):
    """Per refinement iteration of ozaki.linalg.solve at order n: the counts of the
    refinement (exact residuals, corrections, metrics) divided by its iterations."""
    import ozaki.linalg
    from ozaki.linalg import matrices, refine
    a = matrices.random_cond(n, cond, seed=17)
    b = np.random.default_rng(18).standard_normal((n, 1))
    inner = refine.refine
    got = {}

    def counted_refine(*args, **kw):
        t = time.perf_counter()
        with counting() as c:
            x, tracks = inner(*args, **kw)
        got["counts"], got["time"] = c.counts, time.perf_counter() - t
        got["iterations"] = max(t.iterations for t in tracks)
        return x, tracks
    refine.refine = counted_refine
    try:
        ozaki.linalg.solve(a, b)
    finally:
        refine.refine = inner
    it = max(got["iterations"], 1)
    return {k: v / it for k, v in got["counts"].items()}, got["time"] / it, got["iterations"]



def _row(label, counts, seconds, extra=""):
    cells = " | ".join(f"{counts[k]:g}" for k in COLUMNS)
    return f"| {label} | {cells} | {seconds * 1e3:.0f} ms{extra} |"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fft", nargs="*", default=list(FFT_CASES), choices=list(FFT_CASES), help=f"FFT cases: {list(FFT_CASES)}")
    p.add_argument("--linalg", type=int, default=4096, help="order of the solve (0: none)")
    args = p.parse_args(argv)
    print("| call | " + " | ".join(COLUMNS) + " | CPU time |")
    print("|---" * (len(COLUMNS) + 2) + "|")
    for name in args.fft:
        counts, seconds = fft_counts(name)
        print(_row(f"fft {name}" if not name.startswith("rfft") else name, counts, seconds), flush=True)
    if args.linalg:
        counts, seconds, iterations = linalg_counts(args.linalg)
        print(_row(f"refine n={args.linalg}, per iteration", counts, seconds, f" ({iterations} iterations)"))


if __name__ == "__main__":
    main()
