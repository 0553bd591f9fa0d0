"""Shared benchmark helpers: CUDA-event timing and exact error figures on sampled entries."""

import json
import os
import platform
import subprocess
import time

import numpy as np

from ozaki import reference


def mode_spec(text):
    """A benchmark's mode argument, MODE or MODE:MODULI, as (mode, num_moduli or None)."""
    mode, _, moduli = text.partition(":")
    return mode, int(moduli) if moduli else None


def graph_warmup():
    """Warm-up calls that take a replayed product past its captures: the eager call, the
    capture, and the direct graph's capture over the same arrays (graphs.CAPTURE_AFTER + 1),
    so that no timed call is a capture (three FFT repeats after one warm-up call timed
    two captures: 7.79 against 1.44 ms for the batch of 4096 x 1024, run 9743382)."""
    try:
        from ozaki.backends import graphs
    except ImportError:                 # no CuPy: nothing replays
        return 1
    return graphs.CAPTURE_AFTER + 1


def time_gpu(fn, warmup=2, repeats=7):
    """Median milliseconds of fn() over repeats, CUDA events, after warm-up."""
    import cupy
    for _ in range(warmup):
        fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return float(np.median(times)), [float(t) for t in times]


def time_paired(fn, native, warmup=1, repeats=7):
    """(median ms of fn(), median ms of native()), the two timed in alternation (rounds of one
    call each, their order swapped every round) so that both run at the same clocks.  Under
    sustained int8 or FP64 load the H200 caps its power (clock-event reason 0x4, SW power
    cap): run 548cb4a sampled SM clocks of 1230-1920 MHz within five calls of one product,
    and native DGEMM at n = 16384 took 162-202 ms call to call, so a ratio of two medians
    measured one after the other partly measures the time between them."""
    return tuple(time_rounds((fn, native), warmup, repeats))


def time_rounds(fns, warmup=1, repeats=7):
    """The median ms of each of ``fns``, timed in rounds of one call each (the order
    reversed every other round): time_paired for any number of functions."""
    import cupy
    fns = list(fns)
    for _ in range(warmup):
        for f in fns:
            f()
    cupy.cuda.Device().synchronize()
    times = [[] for _ in fns]
    for r in range(repeats):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            fns[i]()
            end.record()
            end.synchronize()
            times[i].append(cupy.cuda.get_elapsed_time(start, end))
    return [float(np.median(t)) for t in times]


BACKEND_STEPS = ("scan_rows", "residues", "transposed", "gemm", "fp8_operands", "fp8_products", "fp8_recombine",
                 "epilogue")


def step_split(fn, steps=BACKEND_STEPS):
    """(milliseconds of one fn() run spent in each cupy-backend step, fn's result): CUDA
    events around every call (none of these steps calls another), the rest under "other"."""
    import cupy
    from ozaki.backends import cupy_backend as be
    events = {name: [] for name in steps}
    saved = {name: getattr(be, name) for name in steps}

    def timed(name, f):
        def wrapper(*args, **kwargs):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            try:
                return f(*args, **kwargs)
            finally:
                end.record()
                events[name].append((start, end))
        return wrapper

    for name in steps:
        setattr(be, name, timed(name, saved[name]))
    try:
        cupy.cuda.Device().synchronize()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        result = fn()
        end.record()
        end.synchronize()
    finally:
        for name in steps:
            setattr(be, name, saved[name])
    split = {name: sum(cupy.cuda.get_elapsed_time(a, b) for a, b in ev) for name, ev in events.items() if ev}
    split["total"] = cupy.cuda.get_elapsed_time(start, end)
    split["other"] = split["total"] - sum(v for k, v in split.items() if k != "total")
    return {k: round(v, 3) for k, v in split.items()}, result


def sample_entries(rng, m, n, count):
    return [(int(i), int(j)) for i, j in zip(rng.integers(0, m, count), rng.integers(0, n, count))]


def dmmch(C, A, B, entries):
    """Exact DMMCH ratio of C (numpy) on sampled entries; complex: the worse of the two parts,
    each against its 2k real terms (Re = [Ar, -Ai][Br; Bi], Im = [Ar, Ai][Bi; Br]).
    eps is that of C's precision: 2**-53, or 2**-24 for float32/complex64 results (SMMCH)."""
    eps = 2.0 ** -(np.finfo(C.dtype).nmant + 1)
    if np.iscomplexobj(A):
        (xr, yr), (xi, yi) = reference.complex_as_real(A, B)
        return max(reference.dmmch_ratio(C.real, xr, yr, entries, eps),
                   reference.dmmch_ratio(C.imag, xi, yi, entries, eps))
    return reference.dmmch_ratio(C, A, B, entries, eps)


def meta():
    info = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node()}
    info["commit"] = os.environ.get("OZAKI_COMMIT", "")
    if not info["commit"]:
        try:
            info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                            text=True, check=False).stdout.strip() or "unknown"
        except OSError:
            info["commit"] = "unknown"
    try:
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(0)
        info["device"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["cupy"] = cupy.__version__
    except Exception:
        info["device"] = "cpu"
    return info


def write_json(path, payload):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)
