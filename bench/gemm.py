"""GEMM benchmark: native cuBLAS DGEMM vs ozaki modes, same inputs, one run.

    python -m bench.gemm --sizes 4096 8192 --out bench/results/gemm.json

Reports effective TFLOPS (2 n^3 / t, median of CUDA-event timings after
warm-up), the ratio to native, and the exact DMMCH error ratio of each on
sampled entries (the reference is exact rational arithmetic on the CPU).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

import ozaki
from bench import common


def run(sizes, modes, families, samples, repeats, emulated=True, substrates=("int8",)):
    import cupy
    rows = []
    for n in sizes:
        for family in families:
            rng = np.random.default_rng(20261202)       # the subprocess draws the same inputs
            if family == "normal":
                A = rng.standard_normal((n, n))
                B = rng.standard_normal((n, n))
            elif family == "complex":                  # ZGEMM: N(0,1) + i N(0,1)
                A = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
                B = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
            else:                                   # GEMMul8's exp(phi N(0,1)) inputs
                p = float(family[3:])
                A = (rng.random((n, n)) - 0.5) * np.exp(p * rng.standard_normal((n, n)))
                B = (rng.random((n, n)) - 0.5) * np.exp(p * rng.standard_normal((n, n)))
            dA, dB = cupy.asarray(A), cupy.asarray(B)
            entries = common.sample_entries(rng, n, n, samples)
            flops = (8.0 if family == "complex" else 2.0) * n ** 3
            t_native, _ = common.time_gpu(lambda: dA @ dB, repeats=repeats)
            C = cupy.asnumpy(dA @ dB)
            native = {"n": n, "family": family, "impl": "cublas_zgemm" if family == "complex" else "cublas_dgemm",
                      "ms": t_native,
                      "tflops": flops / t_native / 1e9, "ratio": 1.0,
                      "dmmch": common.dmmch(C, A, B, entries)}
            rows.append(native)
            print_row(native)
            if family == "normal" and emulated:
                em = cublas_emulated(n, samples)
                if em is not None:
                    Cs = np.zeros((n, n))
                    for (i, j), v in zip(entries, em["C_sample"]):
                        Cs[i, j] = v
                    row = {"n": n, "family": family, "impl": "cublas_emulated_fp64", "ms": em["ms"],
                           "tflops": flops / em["ms"] / 1e9, "ratio": t_native / em["ms"],
                           "dmmch": common.dmmch(Cs, A, B, entries)}
                    rows.append(row)
                    print_row(row)
            for mode, nm, substrate in [(mo, nm, su) for su in substrates for mo, nm in modes]:
                f = lambda: ozaki.matmul(dA, dB, mode=mode, num_moduli=nm, substrate=substrate)
                t, _ = common.time_gpu(f, warmup=1, repeats=repeats)
                C = cupy.asnumpy(f())
                k = 2 * n if family == "complex" else n        # a complex row joins both parts
                used = nm or (ozaki.default_num_moduli(mode, k) if mode != "exact" else None)
                impl = f"ozaki_{mode}" + ("" if substrate == "int8" else f"_{substrate}")
                row = {"n": n, "family": family, "impl": impl, "num_moduli": used, "substrate": substrate,
                       "ms": t, "tflops": flops / t / 1e9, "ratio": t_native / t,
                       "dmmch": common.dmmch(C, A, B, entries)}
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
    print(f"{r['n']:6d} {r['family']:7s} {r['impl']:20s} m={str(r.get('num_moduli', '-')):4s} "
          f"{r['ms']:9.2f} ms {r['tflops']:7.2f} TFLOPS x{r['ratio']:5.2f}  dmmch {r['dmmch']:.3g}",
          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--families", nargs="+", default=["normal"])
    ap.add_argument("--modes", nargs="+", default=["accurate", "fast", "exact"],
                    help="mode or mode:num_moduli")
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--substrates", nargs="+", default=["int8"], help="GEMM substrates of the ozaki rows")
    ap.add_argument("--no-emulated", action="store_true", help="skip cuBLAS's FP64 emulation")
    ap.add_argument("--out", default="bench/results/gemm.json")
    a = ap.parse_args(argv)
    modes = [(s.split(":")[0], int(s.split(":")[1]) if ":" in s else None) for s in a.modes]
    rows = run(a.sizes, modes, a.families, a.samples, a.repeats, emulated=not a.no_emulated,
               substrates=a.substrates)
    common.write_json(a.out, {"meta": common.meta(), "rows": rows})


if __name__ == "__main__":
    main()
