"""kernels/scan_rows.cu built for the host with a C++ compiler (a row a one-thread block,
so one thread holds the whole row) and checked against numpy_backend.scan_rows: the
one-read path (SCAN_VALS: each value kept as its own ceiling and exponent, the row's
ceiling taken from them once the maximum is known) and the two passes, on rows spanning
the whole exponent range, with zeros, NaN/inf and subnormals.  The GPU runs the same
code with 256 threads or a warp a row (test_cupy_backend's test_scan_rows_kernel).
"""

import subprocess

import numpy as np
import pytest

from ozaki.backends import numpy_backend
from tests import inputs
from tests.backends import host_build

SHIMS = r"""
#include <cmath>
#include <cstdio>
#include <vector>
using std::isfinite; using std::fmax; using std::fabs; using std::frexp; using std::ldexp; using std::ceil;
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __shared__ static
struct Dim { long long x, y, z; };
static Dim blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline void __syncthreads() {}
#define THREADS 1
#define ROW_THREADS 1
"""

MAIN = r"""
#include "scan_rows.cu"
// argv: input (rows k kpad, x), output (amax, flags, e, hat rows x kpad, sumsq)
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    long long h[3]; fread(h, 8, 3, in);
    long long rows = h[0], k = h[1], kpad = h[2];
    std::vector<double> x(rows * k); fread(x.data(), 8, x.size(), in);
    std::vector<double> amax(rows); std::vector<signed char> flags(rows), hat(rows * kpad, 99);
    std::vector<long long> e(rows), sumsq(rows);
    for (long long b = 0; b < rows; ++b) {
        blockIdx.x = b;
        scan_rows(x.data(), rows, k, kpad, amax.data(), flags.data(), e.data(), hat.data(), sumsq.data());
    }
    fwrite(amax.data(), 8, rows, out); fwrite(flags.data(), 1, rows, out); fwrite(e.data(), 8, rows, out);
    fwrite(hat.data(), 1, hat.size(), out); fwrite(sumsq.data(), 8, rows, out);
    fclose(in); fclose(out);
    return 0;
}
"""

# (CEIL_BITS, what the scan adds, SCAN_VALS: 0 = two passes)
CONFIGS = [(6, "WRITE_HAT", 64), (5, "WRITE_HAT", 64), (15, "SUM_SQUARES", 64), (19, "SUM_CEILINGS", 64),
           (1, "SUM_CEILINGS", 64), (6, "WRITE_HAT", 0)]


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"b{b}-{what.lower()}-v{v}" for b, what, v in CONFIGS])
def host(request, tmp_path_factory):
    bits, what, vals = request.param
    source = SHIMS + f"#define CEIL_BITS {bits}\n#define {what} 1\n#define SCAN_VALS {vals}\n" + MAIN
    return request.param, host_build.build(tmp_path_factory, source, f"scan_b{bits}_{what}_v{vals}")


def run(exe, tmp_path, x):
    rows, k = x.shape
    kpad = -(-k // 16) * 16
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.array([rows, k, kpad], dtype=np.int64).tofile(f)
        np.ascontiguousarray(x, dtype=np.float64).tofile(f)
    subprocess.run([exe, str(src), str(dst)], check=True)
    raw = dst.read_bytes()
    amax = np.frombuffer(raw, np.float64, rows, 0)
    flags = np.frombuffer(raw, np.int8, rows, 8 * rows)
    e = np.frombuffer(raw, np.int64, rows, 9 * rows)
    hat = np.frombuffer(raw, np.int8, rows * kpad, 17 * rows).reshape(rows, kpad)
    sumsq = np.frombuffer(raw, np.int64, rows, 17 * rows + rows * kpad)
    return amax, flags, e, hat, sumsq


def rows_to_scan(rng, k):
    """Rows over the whole exponent range (values 2**-1074 .. 2**1023 in one row), a row of
    one subnormal among zeros, a zero row, a row of -0, rows with NaN and inf, values just
    above and below powers of two (the ceilings' ties) and random widths."""
    x = inputs.sprinkle_specials(rng, inputs.wide(rng, (12, k), 600), 0.03)
    x[0] = np.ldexp(rng.uniform(0.5, 1.0, k), rng.integers(-1074, 1024, k))
    x[1] = 0.0
    x[1, k // 2] = 5e-324
    x[2] = 0.0
    x[3] = -0.0
    x[4, 0] = np.nan
    x[5, -1] = -np.inf
    p = np.ldexp(1.0, rng.integers(-60, 60, k))
    x[6] = np.where(rng.random(k) < 0.5, np.nextafter(p, 0), np.nextafter(p, np.inf))
    x[7] = p * np.where(rng.random(k) < 0.5, -1.0, 1.0)
    x[8] = np.ldexp(rng.uniform(0.5, 1.0, k), rng.integers(-1074, -1000, k))      # subnormals and near
    return x


@pytest.mark.parametrize("k", [1, 13, 50, 64])
def test_scan_rows_match_numpy(host, tmp_path, rng, k):
    (bits, what, vals), exe = host
    x = rows_to_scan(rng, k)
    amax, flags, e, hat, sumsq = run(exe, tmp_path, x)
    want = numpy_backend.scan_rows(x, bits, what == "WRITE_HAT", what == "SUM_SQUARES", what == "SUM_CEILINGS")
    assert np.array_equal(amax, want[0]) and np.array_equal(flags, want[1]) and np.array_equal(e, want[2])
    if what == "WRITE_HAT":
        assert np.array_equal(hat[:, :k], want[3])
        assert not hat[:, k:].any()                     # the padding written as zeros
    else:
        assert np.array_equal(sumsq, want[4])


def test_ceilings_against_fractions(tmp_path_factory, tmp_path, rng):
    """The one-read ceilings against exact rational arithmetic (an independent reference):
    c = max(ceil(|x| 2**e), 1) for finite nonzero x, e = bits - exponent of the row's max."""
    from fractions import Fraction
    from math import ceil, frexp
    bits = 6
    source = SHIMS + f"#define CEIL_BITS {bits}\n#define WRITE_HAT 1\n#define SCAN_VALS 64\n" + MAIN
    exe = host_build.build(tmp_path_factory, source, "scan_fractions")
    x = rows_to_scan(rng, 64)
    _, _, e, hat, _ = run(exe, tmp_path, x)
    for r in range(x.shape[0]):
        finite = [v for v in x[r] if np.isfinite(v)]
        top = max(abs(v) for v in finite) if finite else 0.0
        er = bits - (frexp(top)[1] if top else 0)
        assert e[r] == er
        for j, v in enumerate(x[r]):
            want = max(ceil(abs(Fraction(v)) * Fraction(2) ** er), 1) if np.isfinite(v) and v != 0 else 0
            assert hat[r, j] == want, (r, j, v)
