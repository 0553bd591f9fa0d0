"""Time split of one ozaki.matmul on the GPU: each pipeline step alone, CUDA events.

    python -m bench.steps --sizes 4096 8192 --mode accurate

Each step is run as ozaki.scheme.matmul2d runs it, on the same inputs, and
timed separately (median of repeats); bytes moved are counted per step and
compared with the device-to-device copy bandwidth.
"""

import argparse

import numpy as np

import ozaki
from bench import common
from ozaki import scheme


# The epilogue's access pattern without its arithmetic: NMOD int32 streams
# mod_stride apart summed into one double per output, to tell whether the
# epilogue is held back by memory or by arithmetic.
READ_ONLY = r"""
extern "C" __global__ void read_only(const int* __restrict__ prod, long long total, long long mod_stride,
                                     int nmod, double* __restrict__ out) {
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < total;
         v += (long long)gridDim.x * blockDim.x) {
        long long s = 0;
        for (int i = 0; i < nmod; ++i) s += prod[v + i * mod_stride];
        out[v] = (double)s;
    }
}
"""


def _probes(be, ra, rb, prod, plan, m, t):
    """Other ways to run the same steps, to see what their rates depend on: the
    GEMM output tile (cupy_backend.GEMM_TILE), torch._int_mm (cuBLASLt) for the
    GEMMs, and the epilogue's reads alone (memory or arithmetic?)."""
    import cupy
    out = {}
    tile = be.GEMM_TILE
    try:
        for size in (4096, 8192):
            be.GEMM_TILE = size
            out[f"int8 gemms, tile {min(size, ra.shape[1])}"] = t(lambda: be.gemm(ra, rb))
    finally:
        be.GEMM_TILE = tile
    read_only = cupy.RawKernel(READ_ONLY, "read_only")
    total = prod.shape[1] * prod.shape[2]
    sums = cupy.empty(total, dtype=cupy.float64)
    grid, block = be._grid(total, 256)
    out["epilogue reads alone"] = t(lambda: read_only(grid, block, (prod, np.int64(total),
                                                                     np.int64(prod.strides[0] // 4), np.int32(m), sums)))
    try:
        import torch
        ta = torch.as_tensor(ra[0], device="cuda")
        tb = torch.as_tensor(rb[0], device="cuda").t()       # (k, n) column-major view
        out["torch._int_mm x moduli"] = t(lambda: [torch._int_mm(ta, tb) for _ in range(m)])
    except Exception as exc:                                 # torch absent or too old
        print("torch._int_mm probe skipped:", exc)
    return out


def steps(n, mode, nm, repeats, probes=False):
    import cupy
    from ozaki.backends import cupy_backend as be
    rng = np.random.default_rng(7)
    A = cupy.asarray(rng.standard_normal((n, n)))
    B = cupy.asarray(rng.standard_normal((n, n)))
    Bt = cupy.ascontiguousarray(B.T)
    plan = scheme.make_plan(cupy, A, Bt, mode, nm, be)
    m = plan.num_moduli
    ra = be.residues(A, plan.beta_a, plan.width, m, plan.nearest)
    rb = be.residues(Bt, plan.beta_b, plan.width, m, plan.nearest)
    prod = be.gemm(ra, rb)[0]
    out = {}
    t = lambda f: common.time_gpu(f, warmup=1, repeats=repeats)[0]
    out["transpose B"] = t(lambda: be.transposed(B))
    out["plan (scans, bound gemm)"] = t(lambda: scheme.make_plan(cupy, A, Bt, mode, nm, be))
    out["residues A+B"] = t(lambda: (be.residues(A, plan.beta_a, plan.width, m, plan.nearest),
                                     be.residues(Bt, plan.beta_b, plan.width, m, plan.nearest)))
    default = be.GEMM_BATCHED
    be.GEMM_BATCHED = True
    out["int8 gemms, strided-batched"] = t(lambda: be.gemm(ra, rb))
    be.GEMM_BATCHED = False
    out["int8 gemms, a call each"] = t(lambda: be.gemm(ra, rb))
    be.GEMM_BATCHED = default
    if probes:
        out.update(_probes(be, ra, rb, prod, plan, m, t))
    out["epilogue"] = t(lambda: be.epilogue([(prod,)], [0], m, plan.beta_a, plan.beta_b))
    out["int8 gemms + epilogue"] = out["int8 gemms, a call each"] + out["epilogue"]
    out["total matmul"] = t(lambda: ozaki.matmul(A, B, mode=mode, num_moduli=nm))
    out["native dgemm"] = t(lambda: A @ B)
    gemm_ms = out["int8 gemms, a call each"]
    bytes_res = 2 * n * n * (8 + m)
    bytes_epi = n * n * (4 * m + 8)
    return {"n": n, "mode": mode, "num_moduli": m, "ms": out, "int8_tops": m * 2.0 * n ** 3 / gemm_ms / 1e9,
            "residues_GBps": bytes_res / out["residues A+B"] / 1e6,
            "epilogue_GBps": bytes_epi / out["epilogue"] / 1e6}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--mode", default="accurate")
    ap.add_argument("--num-moduli", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--probes", action="store_true", help="also time other GEMM layouts and libraries")
    ap.add_argument("--out", default="bench/results/steps.json")
    a = ap.parse_args(argv)
    rows = []
    for n in a.sizes:
        r = steps(n, a.mode, a.num_moduli, a.repeats, a.probes)
        rows.append(r)
        print(f"n={n} mode={r['mode']} m={r['num_moduli']}  int8 {r['int8_tops']:.0f} TOPS, "
              f"residues {r['residues_GBps']:.0f} GB/s, epilogue {r['epilogue_GBps']:.0f} GB/s")
        for k, v in r["ms"].items():
            print(f"   {k:26s} {v:8.3f} ms")
    common.write_json(a.out, {"meta": common.meta(), "rows": rows})


if __name__ == "__main__":
    main()
