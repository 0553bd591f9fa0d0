"""A few fused-path products, each run twice, for a hardware-counter profile of the
fused kernel (device_run.sh runs it under ncu):

    ncu --clock-control none -k regex:fused python -m bench.fused_probe
"""

import cupy
import numpy as np

import ozaki

SHAPES = [(4096, 64, 64, 64), (256, 256, 256, 256), (1, 1024, 1024, 1024)]


def main():
    rng = np.random.default_rng(5)
    with ozaki.config(path="fused"):
        for batch, m, k, n in SHAPES:
            A = cupy.asarray(rng.standard_normal((batch, m, k)))
            B = cupy.asarray(rng.standard_normal((batch, k, n)))
            for _ in range(2):
                ozaki.matmul(A, B)
            cupy.cuda.Device().synchronize()
            print(batch, m, k, n, "done", flush=True)


if __name__ == "__main__":
    main()
