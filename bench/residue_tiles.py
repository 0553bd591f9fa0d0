"""The residue GEMM's tiles side by side in one process: each product timed under every
tile in rounds of one call each (common.time_rounds), cuBLAS's DGEMM (or cuFFT) in the
same rounds.

    python -m bench.residue_tiles --out bench/results/residue_tiles.json

Run da86e14 timed the tiles one process each, and their differences (1024^2: 0.59 ms at
256 x 128 against 0.37 at 128 x 128 ping-pong) were within the spread between processes.
Here OZAKI_RESIDUE_GEMM_TILE (read at each call; cupy_backend.CALL_SETTINGS keeps the CUDA
graphs of the tiles apart) changes between calls.  Every tile's builds must be in the
kernel cache already ("auto" never waits for a compile): python -m ozaki build under
each tile.  Products on "auto", accurate mode; FFT batches in exact mode.
"""

import argparse
import os

import numpy as np

from bench import common

PRODUCTS = ["1024", "2048", "4096", "4096x64", "256x256", "16x1024"]
BATCHES = ["4096x1024", "65536x1024"]
CUBES = []


def tiled(fn, tile):
    def call():
        os.environ["OZAKI_RESIDUE_GEMM_TILE"] = tile
        return fn()
    return call


def digest(cupy, x):
    """Two wrapping sums of a result's 64-bit words (no copy of a 16-GB cube is kept to
    compare the tiles' bits; the tests compare them word for word)."""
    words = x.view(cupy.uint64).ravel()
    return int(words.sum()), int(words[::7].sum())


def operands(cupy, rng, spec):
    """N: an N x N square; BxN: a stack of B N x N matrices."""
    batch, _, n = spec.rpartition("x")
    shape = ((int(batch),) if batch else ()) + (int(n), int(n))
    return cupy.asarray(rng.standard_normal(shape)), cupy.asarray(rng.standard_normal(shape))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tiles", nargs="*", default=None, help="default: every key of native.RESIDUE_GEMM_TILES")
    ap.add_argument("--products", nargs="*", default=PRODUCTS, metavar="N|BxN")
    ap.add_argument("--batches", nargs="*", default=BATCHES, metavar="BxN", help="FFT batches (last axis)")
    ap.add_argument("--cubes", nargs="*", type=int, default=CUBES, metavar="N", help="fftn of N^3 (drawn on the GPU)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out", default="bench/results/residue_tiles.json")
    a = ap.parse_args(argv)
    import cupy

    import ozaki
    import ozaki.fft as ozaki_fft
    from ozaki.backends import cupy_backend, native
    tiles = a.tiles or list(native.RESIDUE_GEMM_TILES)
    for tile in tiles:
        os.environ["OZAKI_RESIDUE_GEMM_TILE"] = tile
        if not native.built("residue_gemm.cu", cupy_backend.residue_gemm_defines()):
            raise SystemExit(f"the residue GEMM is not built at {tile}: OZAKI_RESIDUE_GEMM_TILE={tile} "
                             "python -m ozaki build")
    rng = np.random.default_rng(11)
    rows = []
    cases = ([("matmul", s) for s in a.products] + [("fft", s) for s in a.batches]
             + [("fftn", str(n)) for n in a.cubes])
    for kind, spec in cases:
        if kind == "matmul":
            A, B = operands(cupy, rng, spec)
            ours, native_fn = (lambda: ozaki.matmul(A, B)), (lambda: A @ B)
        elif kind == "fft":
            count, n = (int(v) for v in spec.split("x"))
            x = cupy.asarray(rng.standard_normal((count, n)) + 1j * rng.standard_normal((count, n)))
            ours, native_fn = (lambda: ozaki_fft.fft(x)), (lambda: cupy.fft.fft(x))
        else:                  # a cube: 16 GB at 1024^3, drawn on the device (the host's draw takes ~10 s)
            n = int(spec)
            draw = cupy.random.default_rng(int(rng.integers(1 << 30))).standard_normal
            x = draw((n, n, n)) + 1j * draw((n, n, n))
            ours, native_fn = (lambda: ozaki_fft.fftn(x)), (lambda: cupy.fft.fftn(x))
        digests = [digest(cupy, tiled(ours, t)()) for t in tiles]
        same = [d == digests[0] for d in digests]
        times = common.time_rounds([tiled(ours, t) for t in tiles] + [native_fn], warmup=2, repeats=a.repeats)
        row = {"kind": kind, "shape": spec, "native_ms": times[-1], "same_bits": same,
               "ms": dict(zip(tiles, times[:-1]))}
        rows.append(row)
        print(f"{kind:6s} {spec:>10s}: native {times[-1]:8.3f} | "
              + " | ".join(f"{t} {ms:8.3f}" for t, ms in row["ms"].items())
              + f" | same bits {all(same)}", flush=True)
        common.write_json(a.out, {"meta": common.meta(), "tiles": tiles, "rows": rows})   # each row as it comes
    os.environ.pop("OZAKI_RESIDUE_GEMM_TILE", None)


if __name__ == "__main__":
    main()
