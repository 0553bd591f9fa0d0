"""The Hopper question for the fp8 substrate: are cuBLASLt FP8 products of e4m3
digits exact when every partial sum is an integer below 2**24?

    python -m bench.fp8 --out bench/results/fp8_exactness.json

For inner lengths K up to fp8.K_CHUNK and adversarial digit patterns (every
product of one sign at the largest magnitude; large terms then unit terms, so
a wide accumulator meets small addends; random digits), one torch._scaled_mm
call (e4m3 x e4m3 -> FP32, unit scales) with fast accumulation off and on is
compared with the exact integer products (int64 on the host).  Also times the
raw digit GEMM against the int8 residue GEMM at n = 8192 (one modulus).
"""

import argparse

import numpy as np

from bench import common
from ozaki.gemm import fp8

# Patterns of the digits ozaki uses (|digit| <= 8, terms <= 64), and of the
# Karatsuba digit sums it does not use (|x + y| <= 15, terms <= 225).
PATTERNS = ("max_same_sign", "big_then_units", "random", "karatsuba_max", "karatsuba_random")


# e4m3 bytes of every integer in [-16, 16]: the Karatsuba digit sums reach 15,
# beyond ozaki's own table
CODES16 = fp8.e4m3_codes(16)


def digits(rng, pattern, n, k):
    """Digit matrices (n, k), (n, k) of one adversarial pattern."""
    d = 15 if pattern.startswith("karatsuba") else fp8.MAX_X
    if pattern in ("max_same_sign", "karatsuba_max"):
        return np.full((n, k), d, np.int8), np.full((n, k), d, np.int8)
    if pattern == "big_then_units":
        a = np.full((n, k), d, np.int8)
        a[:, k // 2:] = 1
        b = np.full((n, k), d, np.int8)
        b[:, k // 2:] = rng.integers(0, 2, (n, k - k // 2))
        return a, b
    return rng.integers(-d, d + 1, (n, k)).astype(np.int8), rng.integers(-d, d + 1, (n, k)).astype(np.int8)


def exactness(ks, n=64):
    import cupy
    import torch
    from ozaki.backends import cupy_backend as be
    rng = np.random.default_rng(2026)
    one = torch.ones((), dtype=torch.float32, device="cuda")
    rows = []
    for k in ks:
        for pattern in PATTERNS:
            a, b = digits(rng, pattern, n, k)
            # float64 BLAS is exact here: every partial sum is an integer below 2**27
            want = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.int64)
            ta, tb = (torch.from_dlpack(cupy.asarray(CODES16[v.view(np.uint8)])).view(torch.float8_e4m3fn)
                      for v in (a, b))
            for fast in (False, True):
                got = torch._scaled_mm(ta, tb.t(), scale_a=one, scale_b=one, out_dtype=torch.float32,
                                       use_fast_accum=fast).cpu().numpy().astype(np.int64)
                wrong = got != want
                row = {"k": k, "pattern": pattern, "fast_accum": fast, "max_abs": int(np.abs(want).max()),
                       "inexact": int(wrong.sum()), "entries": int(want.size),
                       "max_error": int(np.abs(got - want).max())}
                rows.append(row)
                print(f"K={k:6d} {pattern:14s} fast_accum={str(fast):5s} |sum|<={row['max_abs']:9d} "
                      f"inexact {row['inexact']:5d}/{row['entries']}  max error {row['max_error']}", flush=True)
    return rows


def rates(n=8192, repeats=5):
    """Raw GEMM rates of one modulus: the int8 residue GEMM and the three e4m3 digit GEMMs."""
    import cupy
    from ozaki.backends import cupy_backend as be
    rng = np.random.default_rng(3)
    Ra = cupy.asarray(rng.integers(-128, 128, (1, n, n)).astype(np.int8))
    Rb = cupy.asarray(rng.integers(-128, 128, (1, n, n)).astype(np.int8))
    Da = cupy.asarray(rng.integers(-8, 9, (1, n, n)).astype(np.int8))
    Db = cupy.asarray(rng.integers(-8, 9, (1, n, n)).astype(np.int8))
    ops = 2.0 * n ** 3
    t8, _ = common.time_gpu(lambda: be.gemm(Ra, Rb), repeats=repeats)
    tf, _ = common.time_gpu(lambda: be.gemm_fp32_digits(Da, Db), repeats=repeats)
    tr, _ = common.time_gpu(lambda: fp8.gemm(be, Ra, Rb), repeats=repeats)
    out = {"n": n, "int8_gemm_ms": t8, "int8_tops": ops / t8 / 1e9, "fp8_digit_gemm_ms": tf,
           "fp8_tops": ops / tf / 1e9, "fp8_residue_product_ms": tr}
    print(f"n={n}: int8 residue GEMM {t8:.2f} ms ({out['int8_tops']:.0f} TOPS); one e4m3 digit GEMM "
          f"{tf:.2f} ms ({out['fp8_tops']:.0f} TOPS, conversion included); fp8 residue product "
          f"(digit GEMMs XX, XY, YY, split, recombine) {tr:.2f} ms", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ks", type=int, nargs="+",
                    default=[32, 128, 512, 2048, 8192, 32768, 74560, 2 * fp8.K_CHUNK])
    ap.add_argument("--rate-size", type=int, default=8192)
    ap.add_argument("--out", default="bench/results/fp8_exactness.json")
    a = ap.parse_args(argv)
    payload = {"meta": common.meta(), "exactness": exactness(a.ks)}
    common.write_json(a.out, payload)
    payload["rates"] = rates(a.rate_size)
    common.write_json(a.out, payload)


if __name__ == "__main__":
    main()
