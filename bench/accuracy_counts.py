"""DMMCH ratio against moduli count, on the CPU: the figures behind the default counts.

    python -m bench.accuracy_counts --k 16384 --family normal --counts 13 14 15 16

A (64 x k) and B (k x 64) from one family; the exact DMMCH ratio (fractions) on
40 sampled entries for native float64 (numpy's BLAS) and each mode and count.
``--dtype float32``: float32 inputs, float32 results, native = numpy's SGEMM,
eps = 2**-24 (the figures behind scheme.FLOAT32_DEFAULTS).
"""

import argparse

import numpy as np

import ozaki
from ozaki import reference
from tests import inputs


def draw(rng, family, shape):
    if family.startswith("phi"):
        return inputs.phi(rng, shape, float(family[3:]))
    return inputs.normal(rng, shape)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--family", default="normal", help="normal or phiP (exp(P N(0,1)) spread)")
    ap.add_argument("--counts", type=int, nargs="+", default=[13, 14, 15, 16])
    ap.add_argument("--modes", nargs="+", default=["accurate", "fast"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    A, B = draw(rng, a.family, (64, a.k)).astype(a.dtype), draw(rng, a.family, (a.k, 64)).astype(a.dtype)
    eps = 2.0 ** -(np.finfo(a.dtype).nmant + 1)
    entries = [(int(i), int(j)) for i, j in zip(rng.integers(0, 64, 40), rng.integers(0, 64, 40))]
    print(f"k={a.k} {a.family}: native {reference.dmmch_ratio(A @ B, A, B, entries, eps):.3g}", flush=True)
    for mode in a.modes:
        for m in a.counts:
            C = ozaki.matmul(A, B, mode=mode, num_moduli=m)
            print(f"k={a.k} {a.family}: {mode} {m} {reference.dmmch_ratio(C, A, B, entries, eps):.3g}", flush=True)


if __name__ == "__main__":
    main()
