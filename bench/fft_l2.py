"""benchFFT's L2 error of bench.fft's 1-D rows against a high-precision reference, offline.

    python -m bench.fft_l2 bench/results/<run>/fft.json [--out fft_l2.json]

bench.fft records, per 1-D row, its input's seed and the sampled bins' values (hex
floats, exact) of ozaki.fft and cuFFT; this remakes the input (bench.fft.signal),
computes those bins with ozaki.reference.dft_bins_exact_sum (mpmath roots of unity
and exact float64 sums, ~2**-104 of sum |x_n|: fit for N = 2**24, where dft_bins'
O(N) mpmath operations a bin are out of reach) and prints and writes, per row, the
L2 errors of ozaki, cuFFT and numpy.fft (computed here) with the seconds taken.
Rows of N <= --mpmath-max also get the pure-mpmath dft_bins reference as a
cross-check: its L2 errors and the two references' largest difference.
"""

import argparse
import json
import os
import time

import numpy as np

from bench import common
from bench.fft import SEED, signal
from ozaki.reference import dft_bins, dft_bins_exact_sum, l2_error

SUSPECT = 1e-10            # an L2 error this large means a remade input that differs from the GPU's


def recorded(pairs, ks):
    """{k: complex} of a row's recorded bins ([[re hex, im hex], ...] in the order of ks):
    l2_error reads y[k]."""
    return {k: complex(float.fromhex(re), float.fromhex(im)) for k, (re, im) in zip(ks, pairs)}


def agreement(a, b):
    """max |a - b| / max |b| of two lists of mpmath bins (0 when b is all zero and a == b)."""
    import mpmath
    with mpmath.workdps(40):
        top = max(abs(v) for v in b)
        diff = max(abs(u - v) for u, v in zip(a, b))
        return float(diff / top) if top else float(diff and mpmath.inf)


def errors(ref, ks, named):
    """{name_l2: L2 error} of each named result (indexable by k) against ref."""
    return {f"{name}_l2": l2_error(y, ref, ks) for name, y in named.items()}


def row_errors(row, mpmath_max):
    """The output row of one bench.fft row (seed, bins, ozaki_bins, optional cufft_bins)."""
    seed, ks = row["seed"], [int(k) for k in row["bins"]]
    N = int(seed[1])
    if list(seed) != [SEED, N] or row.get("shape", [N]) != [N]:
        raise ValueError(f"row {row.get('shape')}: seed {seed} is not bench.fft.signal's [{SEED}, N]")
    start = time.perf_counter()
    x = signal(N)
    named = {"ozaki": recorded(row["ozaki_bins"], ks)}
    if "cufft_bins" in row:
        named["cufft"] = recorded(row["cufft_bins"], ks)
    named["numpy"] = np.fft.fft(x)
    ref = dft_bins_exact_sum(x, ks, sign=-1)
    out = {"N": N, "bins": len(ks), **errors(ref, ks, named)}
    out["seconds"] = time.perf_counter() - start
    for key in ("ozaki_l2", "cufft_l2", "numpy_l2"):             # what bench.fft found, if it did
        if key in row:
            out[f"bench_{key}"] = row[key]
    if N <= mpmath_max:
        start = time.perf_counter()
        slow = dft_bins(x, ks, sign=-1)
        out["mpmath"] = {**errors(slow, ks, named), "agreement": agreement(ref, slow),
                         "seconds": time.perf_counter() - start}
    return out


def fmt(v):
    return "-" if v is None else f"{v:.3e}"


def table(rows):
    lines = [f"{'N':>9} {'bins':>5} {'ozaki L2':>10} {'cuFFT L2':>10} {'numpy L2':>10} {'s':>7}   "
             f"mpmath dft_bins: {'ozaki L2':>10} {'cuFFT L2':>10} {'numpy L2':>10} {'refs differ':>11} {'s':>7}"]
    for r in rows:
        line = (f"{r['N']:>9} {r['bins']:>5} {fmt(r['ozaki_l2']):>10} {fmt(r.get('cufft_l2')):>10} "
                f"{fmt(r['numpy_l2']):>10} {r['seconds']:>7.1f}")
        m = r.get("mpmath")
        if m:
            line += (f"   {'':16} {fmt(m['ozaki_l2']):>10} {fmt(m.get('cufft_l2')):>10} {fmt(m['numpy_l2']):>10} "
                     f"{fmt(m['agreement']):>11} {m['seconds']:>7.1f}")
        lines.append(line)
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a bench.fft JSON file ({'meta': ..., 'rows': [...]})")
    ap.add_argument("--out", default=None, help="JSON output (default: RESULTS with _l2 before .json)")
    ap.add_argument("--mpmath-max", type=int, default=1 << 16,
                    help="longest transform also checked against the pure-mpmath dft_bins (O(N) a bin)")
    a = ap.parse_args(argv)
    with open(a.results) as f:
        data = json.load(f)
    out_path = a.out or os.path.splitext(a.results)[0] + "_l2.json"
    rows = []
    for row in data["rows"]:
        if not all(key in row for key in ("seed", "bins", "ozaki_bins")):
            continue                       # 3-D, rfftn and batch rows: no recorded bins
        r = row_errors(row, a.mpmath_max)
        rows.append(r)
        print(json.dumps(r), flush=True)
        worst = max(v for k, v in r.items() if k in ("ozaki_l2", "cufft_l2", "numpy_l2"))
        if worst > SUSPECT:
            print(f"warning: N = {r['N']}: an L2 error of {worst:.3g}: was the row's input made otherwise?")
        common.write_json(out_path, {"meta": {**common.meta(), "source": a.results, "source_meta": data.get("meta")},
                                     "rows": rows})   # after every row: 2**24 takes minutes
    print(table(rows))
    print(f"wrote {out_path}")
    return rows


if __name__ == "__main__":
    main()
