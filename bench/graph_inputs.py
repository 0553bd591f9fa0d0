"""Replayed products with the graph's input copies and without (graphs.DIRECT), in turns.

A product that replays as a CUDA graph copies its inputs into the graph's buffers, unless
the caller passes the very arrays of its last call (graphs' direct graphs).  This times
``ozaki.matmul`` on the same device arrays call after call both ways, in one process:
each turn clears the graph cache, sets graphs.DIRECT, and takes the median of CUDA-event
timings after warm-up calls (which include the captures).

    python -m bench.graph_inputs --shapes 4096x64x64x64 1x1024x1024x1024 --turns 3
"""

import argparse

import numpy as np

from bench import common


def shape_spec(text):
    batch, m, k, n = (int(v) for v in text.split("x"))
    return batch, m, k, n


def operands(rng, shape):
    """Device operands of a shape (batch, m, k, n): N(0,1) stacks, or matrices for batch 1."""
    import cupy
    batch, m, k, n = shape
    lead = (batch,) if batch > 1 else ()
    return cupy.asarray(rng.standard_normal(lead + (m, k))), cupy.asarray(rng.standard_normal(lead + (k, n)))


def run(shapes, turns, warmup, repeats, mode):
    import ozaki
    from ozaki.backends import graphs
    rng = np.random.default_rng(1)
    rows = []
    for batch, m, k, n in shapes:
        A, B = operands(rng, (batch, m, k, n))
        times = {False: [], True: []}
        for _ in range(turns):
            for direct in (False, True):
                graphs.clear()
                graphs.DIRECT = direct
                times[direct].append(common.time_gpu(lambda: ozaki.matmul(A, B, mode=mode), warmup, repeats)[0])
        row = {"batch": batch, "m": m, "k": k, "n": n, "mode": mode, "copy_in_ms": times[False],
               "direct_ms": times[True], "stats": dict(graphs.stats)}
        rows.append(row)
        print(f"{batch}x{m}x{k}x{n} {mode}: copy in " + " ".join(f"{t:.3f}" for t in times[False])
              + " | direct " + " ".join(f"{t:.3f}" for t in times[True]) + f" ms; {dict(graphs.stats)}", flush=True)
    graphs.DIRECT = True
    return rows


def profile(shape, calls, mode, top=25):
    """Where a direct replay's host time goes: cProfile over ``calls`` replays of one product
    (the same arrays), by time spent in each function itself; the wait for the GPU shows in
    the one device-to-host read of the IEEE flags."""
    import cProfile
    import io
    import pstats
    import cupy
    import ozaki
    from ozaki.backends import graphs
    batch, m, k, n = shape
    A, B = operands(np.random.default_rng(2), shape)
    graphs.clear()
    for _ in range(common.graph_warmup() + 2):
        ozaki.matmul(A, B, mode=mode)
    cupy.cuda.Device().synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        ozaki.matmul(A, B, mode=mode)
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    # the GPU's share: the cached graphs launched back to back, no host work between them
    launches = []
    stream = cupy.cuda.get_current_stream()
    for g in list(graphs._graphs.values()):
        graph = g.direct.graph if g.direct is not None else g.graph
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        for _ in range(50):
            graph.launch(stream)
        end.record(stream)
        end.synchronize()
        launches.append(cupy.cuda.get_elapsed_time(start, end) / 50)
    t_call = common.time_gpu(lambda: ozaki.matmul(A, B, mode=mode), 2, 30)[0]
    before = graphs.stats["replayed"]
    ozaki.matmul(A, B, mode=mode)
    per_call = graphs.stats["replayed"] - before        # a stack in pieces: several
    print(f"== host profile, {batch}x{m}x{k}x{n} {mode}, {calls} direct replays ({dict(graphs.stats)})\n"
          f"a call {t_call:.3f} ms; its graph alone, launched back to back: "
          + ", ".join(f"{t:.3f}" for t in launches) + f" ms a launch, {per_call} launch(es) a call\n{text}",
          flush=True)
    return {"call_ms": t_call, "graph_ms": launches, "launches_a_call": per_call, "profile": text}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", type=shape_spec,
                    default=[shape_spec(s) for s in ("4096x64x64x64", "1024x128x128x128", "1x1024x1024x1024",
                                                     "1x2048x2048x2048")])
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--mode", default="accurate")
    ap.add_argument("--profile", type=int, default=0, metavar="CALLS",
                    help="then profile CALLS direct replays of each shape on the host (cProfile)")
    ap.add_argument("--out", default="bench/results/graph_inputs.json")
    a = ap.parse_args(argv)
    rows = run(a.shapes, a.turns, a.warmup, a.repeats, a.mode)
    profiles = [profile(shape, a.profile, a.mode) for shape in a.shapes] if a.profile else []
    common.write_json(a.out, {"meta": common.meta(), "rows": rows, "profiles": profiles})


if __name__ == "__main__":
    main()
