"""GEMM benchmark: native cuBLAS DGEMM vs ozaki modes, same inputs, one run.

    python -m bench.gemm --sizes 4096 8192 --out bench/results/gemm.json
    python -m bench.gemm --shapes 4096x64x64x64 16x1024x1024x1024 1x16384x256x16384 --paths fused cublas

--shapes takes BATCHxMxKxN (a stack of BATCH products of m x k by k x n);
--paths times the ozaki rows on each GPU path (ozaki.config(path=...));
--dtype float32: float32/complex64 inputs and results, native = cuBLAS SGEMM/CGEMM
(cupy.matmul on float32), DMMCH with eps = 2**-24:

    python -m bench.gemm --dtype float32 --sizes 4096 8192 --families normal complex --no-emulated

Reports effective TFLOPS (2 n^3 / t, median of CUDA-event timings after
warm-up), the ratio to native (each ozaki row against native timed in
alternation with it, common.time_paired: the GPU's clocks drift under its power
cap), and the exact DMMCH error ratio of each on
sampled entries (the reference is exact rational arithmetic on the CPU).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

import ozaki
import ozaki.scheme
from bench import common


def draw(rng, family, shape):
    if family == "normal":
        return rng.standard_normal(shape)
    if family == "complex":                        # ZGEMM: N(0,1) + i N(0,1)
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    p = float(family[3:])                          # GEMMul8's exp(phi N(0,1)) inputs
    return (rng.random(shape) - 0.5) * np.exp(p * rng.standard_normal(shape))


def run(shapes, modes, families, samples, repeats, emulated=True, substrates=("int8",), paths=("auto",),
        dtype="float64"):
    """shapes: (batch, m, k, n); a square n is (1, n, n, n)."""
    import cupy
    rows = []
    for batch, m, k, n in shapes:
        for family in families:
            rng = np.random.default_rng(20261202)       # the subprocess draws the same inputs
            lead = (batch,) if batch > 1 else ()
            A, B = draw(rng, family, lead + (m, k)), draw(rng, family, lead + (k, n))
            single = dtype == "float32"
            if single:                                 # float32 / complex64 operands and results
                A, B = (x.astype(np.complex64 if family == "complex" else np.float32) for x in (A, B))
            dA, dB = cupy.asarray(A), cupy.asarray(B)
            entries = common.sample_entries(rng, m, n, samples)
            flops = (8.0 if family == "complex" else 2.0) * batch * m * n * k
            t_native, _ = common.time_gpu(lambda: dA @ dB, repeats=repeats)
            C = cupy.asnumpy(dA @ dB)
            A0, B0, C0 = (A[0], B[0], C[0]) if batch > 1 else (A, B, C)    # DMMCH on the first matrix
            shape = {"n": n, "batch": batch, "m": m, "k": k}
            native_impl = ("cublas_cgemm" if family == "complex" else "cublas_sgemm") if single else \
                ("cublas_zgemm" if family == "complex" else "cublas_dgemm")
            native = {**shape, "family": family, "impl": native_impl, "dtype": dtype,
                      "ms": t_native,
                      "tflops": flops / t_native / 1e9, "ratio": 1.0,
                      "dmmch": common.dmmch(C0, A0, B0, entries)}
            rows.append(native)
            print_row(native)
            square = batch == 1 and m == n == k
            if family == "normal" and emulated and square and not single:
                em = cublas_emulated(n, samples)
                if em is not None:
                    Cs = np.zeros((n, n))
                    for (i, j), v in zip(entries, em["C_sample"]):
                        Cs[i, j] = v
                    row = {**shape, "family": family, "impl": "cublas_emulated_fp64", "ms": em["ms"],
                           "tflops": flops / em["ms"] / 1e9, "ratio": t_native / em["ms"],
                           "dmmch": common.dmmch(Cs, A, B, entries)}
                    rows.append(row)
                    print_row(row)
            for mode, nm, substrate, path in [(mo, nm, su, pa) for su in substrates for mo, nm in modes
                                              for pa in paths]:
                f = lambda: ozaki.matmul(dA, dB, mode=mode, num_moduli=nm, substrate=substrate)
                with ozaki.config(path=path):
                    t, t_paired = common.time_paired(f, lambda: dA @ dB, warmup=common.graph_warmup(), repeats=repeats)
                    C = cupy.asnumpy(f())
                C0 = C[0] if batch > 1 else C
                kk = 2 * k if family == "complex" else k       # a complex row joins both parts
                used = nm or (ozaki.default_num_moduli(mode, kk, C.dtype) if mode != "exact" else None)
                impl = f"ozaki_{mode}" + ("" if substrate == "int8" else f"_{substrate}") \
                    + ("" if path == "auto" else f"_{path}")
                row = {**shape, "family": family, "impl": impl, "dtype": dtype, "num_moduli": used,
                       "substrate": substrate,
                       "path": path, "ms": t, "tflops": flops / t / 1e9, "native_ms": t_paired,
                       "ratio": t_paired / t,
                       "dmmch": common.dmmch(C0, A0, B0, entries)}
                if mode == "certified":                # of the last call: f() above
                    counts = ozaki.scheme.certify_counts
                    row["failing"] = counts["failing"] / counts["entries"]
                    row["recomputed"] = counts["recomputed"] / counts["entries"]
                rows.append(row)
                print_row(row)
            del dA, dB
            cupy.get_default_memory_pool().free_all_blocks()
    return rows


EMULATED = r"""
import json, sys, cupy, numpy as np
from bench import common
n, family = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(20261202)
A = cupy.asarray(rng.standard_normal((n, n)))
B = cupy.asarray(rng.standard_normal((n, n)))
t, _ = common.time_gpu(lambda: A @ B)
C = cupy.asnumpy(A @ B)
print(json.dumps({"ms": t, "C_sample": [float(C[i, j]) for i, j in common.sample_entries(rng, n, n, int(sys.argv[3]))]}))
"""


def cublas_emulated(n, samples):
    """cuBLAS's own FP64 emulation, timed in a subprocess: CUBLAS_EMULATE_DOUBLE_PRECISION=1 turns it
    on, CUBLAS_EMULATION_STRATEGY=eager makes cuBLAS use it even where its heuristic expects native
    DGEMM to be faster (the default, "performant", ran native DGEMM on the H200)."""
    env = dict(os.environ, CUBLAS_EMULATE_DOUBLE_PRECISION="1", CUBLAS_EMULATION_STRATEGY="eager")
    r = subprocess.run([sys.executable, "-c", EMULATED, str(n), "normal", str(samples)], env=env,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def print_row(r):
    shape = f"{r['n']:6d}" if r.get("batch", 1) == 1 and r.get("m", r["n"]) == r.get("k", r["n"]) == r["n"] \
        else f"{r['batch']}x{r['m']}x{r['k']}x{r['n']}"
    print(f"{shape:>6s} {r['family']:7s} {r['impl']:26s} m={str(r.get('num_moduli', '-')):4s} "
          f"{r['ms']:9.2f} ms {r['tflops']:7.2f} TFLOPS x{r['ratio']:5.2f}  dmmch {r['dmmch']:.3g}"
          + (f"  (native paired {r['native_ms']:.2f} ms)" if "native_ms" in r else "")
          + (f"  failing {r['failing']:.2e} recomputed {r['recomputed']:.2e}" if "failing" in r else ""),
          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192], help="square sizes n")
    ap.add_argument("--shapes", nargs="*", default=[], help="BATCHxMxKxN products (stacks, skinny)")
    ap.add_argument("--paths", nargs="+", default=["auto"], choices=["auto", "fused", "cublas", "cutlass"],
                    help="GPU paths of the ozaki rows")
    ap.add_argument("--families", nargs="+", default=["normal"])
    ap.add_argument("--modes", nargs="+", default=["accurate", "fast", "exact"],
                    help="mode or mode:num_moduli")
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--substrates", nargs="+", default=["int8"], help="GEMM substrates of the ozaki rows")
    ap.add_argument("--no-emulated", action="store_true", help="skip cuBLAS's FP64 emulation")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="float32: float32/complex64 operands, against cuBLAS SGEMM/CGEMM")
    ap.add_argument("--out", default="bench/results/gemm.json")
    a = ap.parse_args(argv)
    modes = [common.mode_spec(s) for s in a.modes]
    shapes = [(1, n, n, n) for n in a.sizes] + [tuple(int(v) for v in s.split("x")) for s in a.shapes]
    rows = run(shapes, modes, a.families, a.samples, a.repeats, emulated=not a.no_emulated,
               substrates=a.substrates, paths=a.paths, dtype=a.dtype)
    from ozaki.backends import graphs
    # CUDA graphs: how many shapes were captured and replayed, and why a capture failed
    print(f"graphs: {dict(graphs.stats)}; refused: {sorted(set(graphs._refused.values()))}")
    common.write_json(a.out, {"meta": common.meta(), "rows": rows, "graphs": dict(graphs.stats),
                              "graphs_refused": sorted(set(graphs._refused.values()))})


if __name__ == "__main__":
    main()
