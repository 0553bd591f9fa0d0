"""Probe: can a small product's finite pipeline (operand rows, plan, residues, fused
kernel, the flags' reduction) be captured as one CUDA graph and replayed, and what
does a replay cost beside the eager call?  Prints, per shape: eager ms a call, replay
ms (inputs copied into the graph's buffers, output copied out), bits equal.

    python -m bench.graph_probe
"""

import numpy as np


def finite_part(backend, A, B, mode="accurate"):
    from ozaki import scheme
    xp = backend.xp
    batch, m, k = A.shape
    n = B.shape[2]
    (A_parts, A_plan), (Bt_parts, Bt_plan) = (scheme.operand_rows(backend, X, side)
                                              for X, side in ((A, "left"), (B, "right")))
    bound_path = backend.choose_path("auto", m, n, A_plan.shape[1], batch, 1)
    plan = scheme.make_plan(xp, A_plan, Bt_plan, mode, None, backend, 1, batch, bound_path, np.float64)
    path = backend.choose_path("auto", m, n, k, batch, plan.num_moduli, 1, 1)
    C = scheme.product_finite(A_parts, Bt_parts, plan, backend, backend.default_workspace(), batch, "int8", path,
                              np.float64)
    found = backend.flags_found(*plan.flags, host=False)
    return C[0].reshape(batch, m, n), found


def main():
    import cupy
    from bench import common
    from ozaki.backends import cupy_backend as be
    import ozaki
    rng = np.random.default_rng(1)
    for batch, m in ((1, 512), (1, 1024), (256, 64), (4096, 64), (256, 256)):
        A = cupy.asarray(rng.standard_normal((batch, m, m)))
        B = cupy.asarray(rng.standard_normal((batch, m, m)))
        ref = ozaki.matmul(A, B)
        t_eager, _ = common.time_gpu(lambda: ozaki.matmul(A, B), repeats=9)
        pool = cupy.cuda.MemoryPool()
        stream = cupy.cuda.Stream(non_blocking=True)
        try:
            with cupy.cuda.using_allocator(pool.malloc), stream:
                a_in, b_in = cupy.empty_like(A), cupy.empty_like(B)
                a_in[...] = A
                b_in[...] = B
                C, found = finite_part(be, a_in, b_in)           # warm: compiles, fills the pool
                del C, found
                stream.synchronize()
                stream.begin_capture(cupy.cuda.runtime.streamCaptureModeRelaxed)
                try:
                    C, found = finite_part(be, a_in, b_in)
                finally:
                    graph = stream.end_capture()
        except Exception as e:                                   # noqa: BLE001
            print(f"{batch} x {m}^3: capture failed: {type(e).__name__}: {e}", flush=True)
            continue

        def replay():
            with stream:
                a_in[...] = A
                b_in[...] = B
                graph.launch(stream)
                out = C.copy()
                flag = int(found)
            return out if batch > 1 else out[0]
        same = bool(cupy.array_equal(replay().view(cupy.int64), ref.view(cupy.int64)))
        t_graph, _ = common.time_gpu(replay, repeats=9)
        print(f"{batch} x {m}^3: eager {t_eager:.3f} ms, graph replay {t_graph:.3f} ms, bits {'==' if same else '!='}",
              flush=True)


if __name__ == "__main__":
    main()
