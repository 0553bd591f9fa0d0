"""The dask engine's overhead on the GPU: ozaki.dask.matmul on cupy chunks against
ozaki.matmul on the whole arrays, same inputs, same GPU, bits compared.

    python -m bench.dask_gemm --sizes 32768 49152 --chunk 8192 --out FILE.json

Engine: dask-cuda's LocalCUDACluster (one worker process per GPU, ``--gpus``,
spilling to host off) when dask_cuda imports, else dask's threaded scheduler
with cupy chunks on the current GPU (``--engine`` picks).  Everything runs
where the data lies: the inputs are made on a worker (N(0,1), one whole array
each, the chunks are views of it), and the whole-array product runs there
too (ozaki.matmul, CUDA-event median, and one wall-clock run; native cuBLAS
DGEMM once for scale).  The dask product is timed by wall clock from the
call to its last block in device memory (``ozaki.dask.matmul(A, B).persist()``,
then wait and device sync: graph construction (``graph_ms`` of it),
scheduling and every task included).  The result is not gathered to the
client, which with several processes would time a device-host-device copy
instead of the engine.  The bits are then compared block by block (the
reference waits in the worker's host memory, each dask block is copied
there to be compared); the JSON holds the mismatch count (0 is the only
passing value).  With several GPUs the whole-array reference still runs on
one of them (it must fit there).

Memory at n = 49152 (19.3 GB per n x n float64): A, B and the dask result
take 58 GB of the GPU, the tasks' residues, products and partial products
(about 2 (moduli + 1) bytes per output entry of a chunk and k chunk, before
the tree sums them) some tens more; the reference 19 GB of host memory.
Exact mode's slice pairs multiply the partials: use smaller chunks there.
"""

import argparse
import operator
import os
import sys
import time

import numpy as np

from bench import common


def _normal(n, seed, cpu):
    """An n x n N(0,1) float64 array, cupy (numpy with ``cpu``), made where this task runs."""
    if cpu:
        return np.random.default_rng(seed).standard_normal((n, n))
    import cupy
    return cupy.random.default_rng(seed).standard_normal((n, n), dtype=cupy.float64)


def _time(fn, warmup, repeats, cpu):
    """Median milliseconds of fn() and the times: CUDA events, or wall clock with ``cpu``."""
    if not cpu:
        return common.time_gpu(fn, warmup=warmup, repeats=repeats)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), times


def _timed_reference(A, B, mode, num_moduli, warmup, repeats, cpu):
    """ozaki.matmul on the whole arrays, timed; native matmul once for scale.  Returns a
    dict whose "C" stays where this ran (a worker's GPU)."""
    import ozaki
    f = lambda: ozaki.matmul(A, B, mode=mode, num_moduli=num_moduli)     # noqa: E731
    ms, times = _time(f, warmup, repeats, cpu)
    native_ms, _ = _time(lambda: A @ B, 1, 1, cpu)
    _sync_device(cpu)
    t0 = time.perf_counter()                      # wall clock too, as the dask runs are timed
    C = f()
    _sync_device(cpu)
    wall_ms = (time.perf_counter() - t0) * 1e3
    # kept in the worker's host memory: the GPU's is for the dask run (n = 49152: 19 GB)
    return {"C": _to_host(C), "ms": ms, "times": times, "wall_ms": wall_ms, "native_ms": native_ms}


def _to_host(x):
    return x if isinstance(x, np.ndarray) else x.get()


def _small(result):
    return {k: v for k, v in result.items() if k != "C"}


def _sync_device(cpu=False):
    if not cpu:
        import cupy
        cupy.cuda.Device().synchronize()
    return True


class Engine:
    """Where the dask graphs run: dask-cuda's LocalCUDACluster ("cuda", a Client as the
    default scheduler), dask's threaded scheduler in this process ("threads"), or a
    distributed LocalCluster of CPU worker processes ("local", for --cpu dry runs)."""

    def __init__(self, kind, gpus, threads, cpu):
        import dask
        self.gpus, self.cpu, self.client, self.cluster = gpus, cpu, None, None
        if kind == "auto":
            try:
                import dask_cuda  # noqa: F401
                kind = "local" if cpu else "cuda"
            except ImportError:
                kind = "threads"
        self.kind = kind
        # the workers import ozaki and bench from this checkout
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        if kind == "cuda":
            from dask_cuda import LocalCUDACluster
            from distributed import Client
            # device_memory_limit=0: no spilling to host (the engine is timed, not the spill)
            self.cluster = LocalCUDACluster(n_workers=gpus, CUDA_VISIBLE_DEVICES=list(range(gpus)),
                                            threads_per_worker=threads, device_memory_limit=0, memory_limit=0,
                                            dashboard_address=None)
            self.client = Client(self.cluster)
        elif kind == "local":
            from distributed import Client, LocalCluster
            self.cluster = LocalCluster(n_workers=gpus, threads_per_worker=threads, memory_limit=0,
                                        dashboard_address=None)
            self.client = Client(self.cluster)
        elif kind == "threads":
            if gpus != 1:
                raise SystemExit("--engine threads runs on one GPU; several need dask-cuda")
            dask.config.set(scheduler="threads", num_workers=threads)
        else:
            raise SystemExit(f"unknown engine {kind!r}")

    def wait(self, *collections):
        """Every task of the persisted collections done and every device idle."""
        if self.client is not None:
            from distributed import wait
            wait(list(collections))
            self.client.run(_sync_device, self.cpu)
        else:
            _sync_device(self.cpu)

    def forget(self, collection):
        """Release a persisted result and wait until the scheduler has forgotten its keys, so
        that persisting the same graph again computes it again (the threaded scheduler
        keeps nothing between calls)."""
        if self.client is None:
            return
        keys = set(map(str, _flat_keys(collection.__dask_keys__())))
        self.client.cancel(collection)
        while self.client.run_on_scheduler(_known_keys, keys=keys):
            time.sleep(0.01)

    def close(self):
        if self.client is not None:
            self.client.close()
            self.cluster.close()


def _flat_keys(keys):
    for k in keys:
        if isinstance(k, list):
            yield from _flat_keys(k)
        else:
            yield k


def _known_keys(dask_scheduler=None, keys=()):
    """How many of these keys (as str) the scheduler still knows (run on the scheduler)."""
    return sum(str(k) in keys for k in dask_scheduler.tasks)


def _views(whole, n, chunk, cpu):
    """A dask array whose chunks are views of one whole array (a persisted Delayed): the
    data is not copied, and each chunk lies where the whole one does."""
    import dask
    import dask.array as da
    meta = np.empty((0, 0)) if cpu else __import__("cupy").empty((0, 0))
    edges = list(range(0, n, chunk)) + [n]
    return da.block([[da.from_delayed(dask.delayed(operator.getitem, pure=True)(whole, (slice(i0, i1), slice(j0, j1))),
                                      (i1 - i0, j1 - j0), dtype=np.float64, meta=meta)
                      for j0, j1 in zip(edges, edges[1:])] for i0, i1 in zip(edges, edges[1:])])


def run(engine, sizes, chunk, modes, warmup, repeats):
    import dask
    import ozaki.dask as od
    cpu = engine.cpu
    rows = []
    for n in sizes:
        Aw = dask.delayed(_normal, pure=True)(n, 1, cpu).persist()
        Bw = dask.delayed(_normal, pure=True)(n, 2, cpu).persist()
        A, B = _views(Aw, n, chunk, cpu).persist(), _views(Bw, n, chunk, cpu).persist()
        engine.wait(A, B)
        for mode, nm in modes:
            ref = dask.delayed(_timed_reference, pure=True)(Aw, Bw, mode, nm, warmup, repeats, cpu).persist()
            stats = dask.delayed(_small)(ref).compute()
            R = _views(dask.delayed(operator.getitem)(ref, "C"), n, chunk, True)        # on the host
            times, graph_times = [], []
            for r in range(warmup + repeats):
                t0 = time.perf_counter()
                product = od.matmul(A, B, mode=mode, num_moduli=nm)
                t1 = time.perf_counter()
                C = product.persist()
                engine.wait(C)
                t2 = time.perf_counter()
                if r >= warmup:
                    times.append((t2 - t0) * 1e3)
                    graph_times.append((t1 - t0) * 1e3)
                if r < warmup + repeats - 1:
                    engine.forget(C)       # the same keys next time: make sure they are recomputed
                    del C
            host = C.map_blocks(_to_host, dtype=C.dtype, meta=np.empty((0, 0)))    # block by block
            differ = (host.view(np.uint64) != R.view(np.uint64)).sum()
            mismatches = int(dask.delayed(int)(differ).compute())
            dask_ms = float(np.median(times))
            row = {"n": n, "chunk": chunk, "mode": mode,
                   "num_moduli": nm or (ozaki_default(mode, n) if mode != "exact" else None),
                   "engine": engine.kind, "gpus": engine.gpus, "cpu": cpu,
                   "ozaki_ms": stats["ms"], "ozaki_times": stats["times"], "ozaki_wall_ms": stats["wall_ms"],
                   "dask_ms": dask_ms, "dask_times": times, "overhead": dask_ms / stats["ms"],
                   "graph_ms": float(np.median(graph_times)),
                   "native_ms": stats["native_ms"],
                   "ozaki_tflops": 2.0 * n ** 3 / stats["ms"] / 1e9,
                   "dask_tflops": 2.0 * n ** 3 / dask_ms / 1e9,
                   "graph_tasks": len(dict(product.__dask_graph__())),
                   "mismatches": mismatches, "bits_equal": mismatches == 0}
            rows.append(row)
            print(f"n={n:6d} chunk={chunk} {mode:8s} m={str(row['num_moduli']):4s} "
                  f"ozaki {row['ozaki_ms']:9.1f} ms  dask {dask_ms:9.1f} ms  x{row['overhead']:.3f}  "
                  f"(native {row['native_ms']:.1f} ms, {row['graph_tasks']} tasks)  "
                  f"bits {'equal' if mismatches == 0 else f'DIFFER in {mismatches} entries'}", flush=True)
            del C, R, ref, product
        del A, B, Aw, Bw
    return rows


def ozaki_default(mode, k):
    import ozaki
    return ozaki.default_num_moduli(mode, k)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[32768, 49152], help="square sizes n")
    ap.add_argument("--chunk", type=int, default=8192, help="chunk size of every axis")
    ap.add_argument("--modes", nargs="+", default=["accurate"], help="mode or mode:num_moduli")
    ap.add_argument("--engine", choices=["auto", "cuda", "threads", "local"], default="auto",
                    help="auto: dask-cuda's LocalCUDACluster if dask_cuda imports, else the threaded scheduler; "
                         "local: a distributed LocalCluster of CPU processes (with --cpu)")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs (dask-cuda workers; --cpu: worker processes)")
    ap.add_argument("--cpu", action="store_true",
                    help="a dry run of the same steps on numpy arrays (small sizes), wall-clock times")
    ap.add_argument("--threads", type=int, default=1, help="threads per worker (threaded scheduler: threads)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="bench/results/dask_gemm.json")
    a = ap.parse_args(argv)
    modes = [common.mode_spec(s) for s in a.modes]
    engine = Engine(a.engine, a.gpus, a.threads, a.cpu)
    try:
        rows = run(engine, a.sizes, a.chunk, modes, a.warmup, a.repeats)
    finally:
        engine.close()
    info = common.meta()
    import dask
    info.update({"dask": dask.__version__, "engine": engine.kind, "gpus": a.gpus, "threads": a.threads})
    try:
        import dask_cuda
        info["dask_cuda"] = dask_cuda.__version__
    except ImportError:
        pass
    common.write_json(a.out, {"meta": info, "rows": rows})
    return 0 if all(r["bits_equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
