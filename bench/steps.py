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


def _on_stream(stream, f):
    """f() with ``stream`` current, ordered after and before the caller's stream."""
    import cupy
    caller = cupy.cuda.get_current_stream()
    stream.wait_event(caller.record())
    with stream:
        r = f()
    caller.wait_event(stream.record())
    return r


def _probes(be, ra, rb, prod, plan, m, t):
    """Other ways to run the same steps, to see what their rates depend on: the
    GEMM output tile (cupy_backend.GEMM_TILE), torch._int_mm (cuBLASLt) for the
    GEMMs, the epilogue's outputs per thread (cupy_backend.EPILOGUE_VEC), the
    padding between moduli's products (cupy_backend.MOD_PAD), the epilogue's
    reads alone, and the epilogue overlapped with the GEMMs (cupy_backend.OVERLAP_EPILOGUE)."""
    import cupy
    out = {}
    tile, vec, pad = be.GEMM_TILE, be.EPILOGUE_VEC, be.MOD_PAD
    try:
        for size in (4096, 8192):
            be.GEMM_TILE = size
            out[f"int8 gemms, tile {min(size, ra.shape[1])}"] = t(lambda: be.gemm(ra, rb))
        be.GEMM_TILE = tile
        for per_thread in (1, 2):
            be.EPILOGUE_VEC = per_thread
            out[f"epilogue, {per_thread} outputs per thread"] = t(
                lambda: be.epilogue([prod], [0], m, plan.beta_a, plan.beta_b))
        be.EPILOGUE_VEC = vec
        read_only = cupy.RawKernel(READ_ONLY, "read_only")
        for mod_pad in (0, 128, 2112, 33024):
            be.MOD_PAD = mod_pad
            padded = be.gemm(ra, rb)[0]
            out[f"epilogue, moduli {mod_pad} elements apart"] = t(
                lambda: be.epilogue([padded], [0], m, plan.beta_a, plan.beta_b))
            total = padded.shape[1] * padded.shape[2]
            sums = cupy.empty(total, dtype=cupy.float64)
            grid, block = be._grid(total, 256)
            out[f"epilogue reads alone, moduli {mod_pad} apart"] = t(
                lambda: read_only(grid, block, (padded, np.int64(total), np.int64(padded.strides[0] // 4),
                                                np.int32(m), sums)))
            del padded
        be.MOD_PAD = pad
        want = be.epilogue([prod], [0], m, plan.beta_a, plan.beta_b)
        overlap, priority = be.OVERLAP_EPILOGUE, be.EPILOGUE_STREAM_PRIORITY
        try:
            for name, on, prio in (("one stream", False, 0), ("side stream", True, 0),
                                   ("side stream, gemms first", True, 0), ("side stream, epilogue first", True, -1)):
                be.OVERLAP_EPILOGUE, be.EPILOGUE_STREAM_PRIORITY = on, prio
                if name == "side stream, gemms first":        # the GEMMs' stream ahead of the side stream
                    f = lambda: _on_stream(cupy.cuda.Stream(non_blocking=True, priority=-1),
                                           lambda: be.gemm_epilogue(ra, rb, m, plan.beta_a, plan.beta_b))
                else:
                    f = lambda: be.gemm_epilogue(ra, rb, m, plan.beta_a, plan.beta_b)
                got = f()
                assert bool((got.view(cupy.int64) == want.view(cupy.int64)).all()), name
                out[f"gemms + epilogue, {name}"] = t(f)
        finally:
            be.OVERLAP_EPILOGUE, be.EPILOGUE_STREAM_PRIORITY = overlap, priority
    finally:
        be.GEMM_TILE, be.EPILOGUE_VEC, be.MOD_PAD = tile, vec, pad
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
    out["epilogue"] = t(lambda: be.epilogue([prod], [0], m, plan.beta_a, plan.beta_b))
    out["int8 gemms + epilogue"] = out["int8 gemms, a call each"] + out["epilogue"]
    out["total matmul"] = t(lambda: ozaki.matmul(A, B, mode=mode, num_moduli=nm))
    overlap = be.OVERLAP_EPILOGUE
    try:
        be.OVERLAP_EPILOGUE = not overlap
        out[f"total matmul, OVERLAP_EPILOGUE={not overlap}"] = t(lambda: ozaki.matmul(A, B, mode=mode, num_moduli=nm))
    finally:
        be.OVERLAP_EPILOGUE = overlap
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
