"""The GEMM step alone, cuBLAS against the CUTLASS residue GEMM, with the epilogue each feeds.

    python -m bench.residue_gemm --out bench/results/residue_gemm.json

For each shape (moduli b, m, k, n) both paths run on the same random int8 residue stacks:
cuBLAS gemmEx int8 -> int32 products (``cupy_backend.gemm``), and the residue GEMM
(``gemm_residues``, CUTLASS, int8 residues out), each followed by the CRT epilogue that
reads what it wrote.  (Run 3ca144a also timed two other tile builds of the residue GEMM and an
epilogue whose CRT sums ran on the tensor cores: all slower, see bench/RESULTS.md.)  CUDA events, medians after warm-up.  Reported: ms of each step, the
int8 rate (2 b m n k / t), bytes per output entry and modulus written, and whether the two
epilogues gave the same bits (they must: the residues determine the CRT value).
"""

import argparse

import numpy as np

from bench import common

# (label, moduli, m, k, n): square products (16 moduli, accurate), the FFT's stage shapes
# (26 moduli, exact: 3 Karatsuba products of rows x N1 against N1 x N1)
SHAPES = [
    ("square", 16, 4096, 4096, 4096),
    ("square", 16, 8192, 8192, 8192),
    ("square", 16, 16384, 16384, 16384),
    ("fftn 256^3 axis", 26, 65536, 256, 256),
    ("fftn 512^3 axis", 26, 262144, 512, 512),
    ("batch 4096 x 1024", 26, 4096, 1024, 1024),
    ("skinny-k", 16, 16384, 256, 16384),
]


def run(shapes, repeats):
    import cupy
    from ozaki.backends import cupy_backend as be
    rng = cupy.random.default_rng(7)
    rows = []
    for label, b, m, k, n in shapes:
        def stack(r):
            ps = cupy.asarray(np.array(be._moduli(b), dtype=np.int16))[:, None, None]
            return ((rng.integers(0, 1 << 15, size=(b, r, k), dtype=cupy.int16) % ps) - ps // 2).astype(cupy.int8)
        Ra, Rbt = stack(m), stack(n)
        beta_a = cupy.zeros(m, dtype=cupy.int64) - 60
        beta_b = cupy.zeros(n, dtype=cupy.int64) - 60
        t_cublas, _ = common.time_gpu(lambda: be.gemm(Ra, Rbt), repeats=repeats)
        t_cutlass, _ = common.time_gpu(lambda: be.gemm_residues(Ra, Rbt, b), repeats=repeats)
        P, R = be.gemm(Ra, Rbt)[0], be.gemm_residues(Ra, Rbt, b)[0]
        e_int32, _ = common.time_gpu(lambda: be.epilogue([(P,)], [0], b, beta_a, beta_b), repeats=repeats)
        e_int8, _ = common.time_gpu(lambda: be.epilogue([(R,)], [0], b, beta_a, beta_b), repeats=repeats)
        same = bool(cupy.array_equal(be.epilogue([(P,)], [0], b, beta_a, beta_b)[0].view(cupy.int64),
                                     be.epilogue([(R,)], [0], b, beta_a, beta_b)[0].view(cupy.int64)))
        ops = 2.0 * b * m * n * k
        row = {"label": label, "moduli": b, "m": m, "k": k, "n": n,
               "cublas_ms": t_cublas, "cutlass_ms": t_cutlass,
               "cublas_tops": ops / t_cublas / 1e9, "cutlass_tops": ops / t_cutlass / 1e9,
               "epilogue_int32_ms": e_int32, "epilogue_int8_ms": e_int8, "same_bits": same}
        rows.append(row)
        print(f"{label:20s} b={b:2d} {m}x{k}x{n}: cuBLAS {t_cublas:8.3f} ms ({row['cublas_tops']:6.0f} TOPS) "
              f"+ epilogue {e_int32:7.3f} | CUTLASS residues {t_cutlass:8.3f} ms ({row['cutlass_tops']:6.0f} TOPS) "
              f"+ epilogue {e_int8:7.3f} | same bits {same}", flush=True)
        del Ra, Rbt, P, R
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", nargs="*", default=None, help="labels of SHAPES to run (default: all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="bench/results/residue_gemm.json")
    args = ap.parse_args(argv)
    shapes = [s for s in SHAPES if args.labels is None or s[0] in args.labels]
    common.write_json(args.out, {"meta": common.meta(), "rows": run(shapes, args.repeats)})


if __name__ == "__main__":
    main()
