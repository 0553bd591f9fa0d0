"""GPU time per kernel of one call, from CUPTI through torch.profiler (PyTorch's profiler
records every kernel of the process, CuPy's and cuBLAS's included), as a table.

    python -m bench.kernel_times fftn 256          # fftn of a 256^3 real-valued complex cube
    python -m bench.kernel_times batch 4096x1024   # fft of 4096 complex rows of 1024 points
    python -m bench.kernel_times fft 1048576       # one complex 1-D transform
    python -m bench.kernel_times matmul 4096       # ozaki.matmul, N(0,1), default mode
    python -m bench.kernel_times zmatmul 8192      # ozaki.matmul of complex N(0,1) + i N(0,1) (ZGEMM)
    python -m bench.kernel_times stack 4096x64     # ozaki.matmul of a stack of 4096 products 64^3

    ncu --profile-from-start off ... python -m bench.kernel_times stack 4096x64 --ncu
        # the call's kernels under Nsight Compute: warm calls, then one call between
        # cudaProfilerStart and cudaProfilerStop, nothing else (no CUPTI of PyTorch's)

Kernels of one name are summed; names are cut to 90 characters.  The call runs once
before (compilation, plan constants) and once under the profiler; then its wall time
(CUDA events, median of 5 after warm-up) beside the kernels' sum says how much of a
call the host's launches and synchronizations add.
"""

import argparse
import json
from collections import defaultdict

import numpy as np

from bench import common


def kernel_times(call, synchronize, gaps=None, spans_out=None):
    """[(name, calls, total ms)] of the kernels ``call()`` launches, longest first, and
    the sum of their times in ms.  ``gaps``: a list, filled with the GPU's idle
    intervals between consecutive kernels, (ms, kernel before, kernel after), longest first.
    ``spans_out``: a dict, given the profiled call's wall time (CUDA events, "wall_ms") and
    the span from its first kernel's start to its last kernel's end ("span_ms")."""
    import cupy
    import torch
    from torch.profiler import ProfilerActivity, profile
    call()
    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call_start, call_end = cupy.cuda.Event(), cupy.cuda.Event()
        call_start.record()
        call()
        call_end.record()
        synchronize()
    totals = defaultdict(lambda: [0, 0.0])
    spans = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t = totals[e.name[:90]]
            t[0] += 1
            t[1] += e.time_range.elapsed_us() / 1e3
            spans.append((e.time_range.start, e.time_range.end, e.name[:40]))
    if gaps is not None:
        spans.sort()
        end, before = None, None
        for start, stop, name in spans:
            if end is not None and start > end:
                gaps.append(((start - end) / 1e3, before, name))
            if end is None or stop >= end:
                end, before = stop, name
        gaps.sort(reverse=True)
    if spans_out is not None and spans:
        spans_out["wall_ms"] = cupy.cuda.get_elapsed_time(call_start, call_end)
        spans_out["span_ms"] = (max(e for _, e, _ in spans) - min(b for b, _, _ in spans)) / 1e3
    rows = sorted(((n, c, ms) for n, (c, ms) in totals.items()), key=lambda r: -r[2])
    return rows, sum(r[2] for r in rows)


def clock_sampler():
    """nvidia-smi sampling the SM clock (MHz), power (W) and the active clock-event reasons
    every 20 ms, as a running process (clock_summary stops and reads it)."""
    import subprocess
    return subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_event_reasons.active",
                             "--format=csv,noheader,nounits", "-lms", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def clock_summary(proc):
    """One line: the samples' SM clock and power (min / median / max) and the reasons seen."""
    proc.terminate()
    out, _ = proc.communicate()
    rows = [[v.strip() for v in line.split(",")] for line in out.splitlines() if line.count(",") == 2]
    try:
        clocks = np.array([float(r[0]) for r in rows])
        power = np.array([float(r[1]) for r in rows])
    except ValueError:
        return "nvidia-smi: " + out.strip()[:300]
    if not len(rows):
        return "nvidia-smi: no samples"
    reasons = sorted({r[2] for r in rows})
    return (f"{len(rows)} samples: SM clock {clocks.min():.0f} / {np.median(clocks):.0f} / {clocks.max():.0f} MHz, "
            f"power {power.min():.0f} / {np.median(power):.0f} / {power.max():.0f} W, reasons {' '.join(reasons)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["fftn", "batch", "fft", "matmul", "zmatmul", "stack"])
    ap.add_argument("n", help="the size (batch: BxN)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--mode", default=None, help="matmul, zmatmul and stack: MODE or MODE:MODULI (default: ozaki's), or native (cupy.matmul)")
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    ap.add_argument("--gaps", type=int, default=0, metavar="N",
                    help="also the GPU's N longest idle intervals between kernels, and their sum")
    ap.add_argument("--clocks", action="store_true",
                    help="also each timed call's milliseconds, and the SM clock, power and clock-event "
                         "reasons that nvidia-smi samples every 20 ms while they run")
    ap.add_argument("--cprofile", type=int, default=0, metavar="CALLS",
                    help="then the host's time of CALLS calls under cProfile, the top functions by own time")
    ap.add_argument("--ncu", action="store_true",
                    help="only warm calls and one call between cudaProfilerStart/Stop (run under ncu "
                         "--profile-from-start off)")
    a = ap.parse_args(argv)
    import cupy
    import ozaki
    import ozaki.fft
    rng = np.random.default_rng(5)
    shape = {"fftn": lambda s: (int(s),) * 3, "batch": lambda s: tuple(int(v) for v in s.lower().split("x")),
             "fft": lambda s: (int(s),), "matmul": lambda s: (int(s), int(s)), "zmatmul": lambda s: (int(s), int(s)),
             "stack": lambda s: (int(s.lower().split("x")[0]),) + (int(s.lower().split("x")[1]),) * 2}[a.what](a.n)
    if a.what in ("matmul", "zmatmul", "stack"):
        draw = (lambda: rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) if a.what == "zmatmul" \
            else (lambda: rng.standard_normal(shape))
        A, B = (cupy.asarray(draw()) for _ in range(2))
        if a.mode == "native":                                            # cuBLAS, for comparison
            call = lambda: cupy.matmul(A, B)                              # noqa: E731
        else:
            mode, num_moduli = common.mode_spec(a.mode) if a.mode else (None, None)
            call = lambda: ozaki.matmul(A, B, mode=mode, num_moduli=num_moduli)  # noqa: E731
    else:
        d = cupy.asarray(rng.random(shape) - 0.5 + 1j * (rng.random(shape) - 0.5 if a.what != "fftn" else 0))
        fn = ozaki.fft.fftn if a.what == "fftn" else ozaki.fft.fft
        call = lambda: fn(d)                                              # noqa: E731
    if a.ncu:
        for _ in range(3):              # compiles, plan constants, a graph's capture
            call()
        cupy.cuda.Device().synchronize()
        import cupyx.profiler
        with cupyx.profiler.profile():
            call()
            cupy.cuda.Device().synchronize()
        return
    gaps, spans = [], {}
    rows, total = kernel_times(call, cupy.cuda.Device().synchronize, gaps, spans)
    sampler = clock_sampler() if a.clocks else None
    wall, walls = common.time_gpu(call, warmup=1, repeats=5)
    print(f"{a.what} {a.n}{' ' + a.mode if a.mode else ''}: {sum(r[1] for r in rows)} kernels, {total:.3f} ms of GPU time, {wall:.3f} ms a call")
    if spans:
        print(f"the profiled call: {spans['wall_ms']:.3f} ms, its kernels from the first start to the last end "
              f"{spans['span_ms']:.3f} ms")
    if sampler is not None:
        print("timed calls (ms):", " ".join(f"{t:.3f}" for t in walls))
        print(clock_summary(sampler))
    print(f"{'ms':>9} {'share':>6} {'calls':>6}  kernel")
    for name, calls, ms in rows[:a.top]:
        print(f"{ms:9.3f} {100 * ms / total:5.1f}% {calls:6d}  {name}")
    if a.gaps:
        print(f"the GPU idle between kernels: {sum(g[0] for g in gaps):.3f} ms in {len(gaps)} gaps; the longest:")
        for ms, before, after in gaps[:a.gaps]:
            print(f"{ms:9.3f} ms  after {before}  before {after}")
    if a.cprofile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.runcall(lambda: [call() for _ in range(a.cprofile)] and cupy.cuda.Device().synchronize())
        pstats.Stats(prof).sort_stats("tottime").print_stats(a.top)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"what": a.what, "n": a.n, "mode": a.mode, "total_ms": total, "wall_ms": wall,
                       "kernels": [{"name": n, "calls": c, "ms": ms} for n, c, ms in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
