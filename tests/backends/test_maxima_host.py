"""kernels/maxima.cu built for the host with a C++ compiler and checked against
numpy_backend.maxima: one thread a block (so the warp's shuffle reduction is the thread's
own value and the atomics are plain maxima; the device's reduction runs in
test_cupy_backend's test_maxima_kernel), which checks the kernel's tiling: the stack's
matrices, the row tiles of ROWS rows and their last partial one, columns past the last
block's end, rows ld apart and matrices mstride apart (padding that holds larger values
the kernel must not read), grids smaller than the tiles (each block loops).  Skipped
when no C++ compiler is found.
"""

import subprocess

import numpy as np
import pytest

from ozaki.backends import numpy_backend
from tests.backends import host_build

SHIMS = r"""
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
using std::max;
#define __global__
#define __restrict__
struct Dim { long long x, y, z; };
static Dim blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline int __shfl_xor_sync(unsigned, int v, int) { return v; }     // one lane
static inline int atomicMax(int* p, int v) { int old = *p; *p = max(old, v); return old; }
"""

MAIN = r"""
#include "maxima.cu"
// argv: input, output, grid size.  Input: batch m n ld mstride (int64), M (batch * mstride int32).
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    long long h[5];
    if (fread(h, 8, 5, in) != 5) return 2;
    std::vector<int> M(h[0] * h[4]);
    if (fread(M.data(), 4, M.size(), in) != M.size()) return 2;
    std::vector<int> rows(h[0] * h[1], 0), cols(h[0] * h[2], 0);
    gridDim.x = atoll(argv[3]);
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
        maxima(M.data(), h[0], h[1], h[2], h[3], h[4], rows.data(), cols.data());
    fwrite(rows.data(), 4, rows.size(), out); fwrite(cols.data(), 4, cols.size(), out);
    fclose(in); fclose(out);
    return 0;
}
"""


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return host_build.build(tmp_path_factory, SHIMS + MAIN, "maxima")


@pytest.mark.parametrize("batch,m,n,grid", [(1, 1, 1, 1), (1, 33, 5, 1), (2, 64, 3, 2), (3, 70, 9, 5), (1, 31, 2, 40)])
def test_maxima_matches_numpy(exe, tmp_path, rng, batch, m, n, grid):
    ld, mstride = n + 3, (m + 2) * (n + 3)
    buf = np.full(batch * mstride, 2 ** 31 - 1, dtype=np.int32)           # padding: larger than any entry
    M = rng.integers(0, 2 ** 30, (batch, m, n)).astype(np.int32)
    M[0, m // 2, n // 2] = 2 ** 30                                           # one maximum of both
    if batch > 1:
        M[1] = 0
    buf.reshape(batch, mstride)[:, :m * ld].reshape(batch, m, ld)[:, :, :n] = M
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.array([batch, m, n, ld, mstride], dtype=np.int64).tofile(f)
        buf.tofile(f)
    subprocess.run([exe, str(src), str(dst), str(grid)], check=True)
    got = np.fromfile(dst, dtype=np.int32)
    want = numpy_backend.maxima(M)
    assert np.array_equal(got[:batch * m], want[0]) and np.array_equal(got[batch * m:], want[1])
