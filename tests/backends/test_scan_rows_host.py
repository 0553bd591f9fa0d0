"""kernels/scan_rows.cu built for the host with a C++ compiler (a thread a row: the same
per-entry arithmetic the GPU runs, its reductions aside) and checked against
numpy_backend: exact mode's row bits (ROW_BITS: the top and the lowest set bit over the
whole exponent range, subnormals, zeros, NaN and inf read as zero) and the flags read
with them.  Skipped when no C++ compiler is found."""

import subprocess

import numpy as np
import pytest

from ozaki.backends import numpy_backend
from tests import inputs
from tests.backends import host_build

# host_build.PRELUDE and what only scan_rows.cu takes from CUDA (min, max, the lowest set bit),
# for the host builds below: a thread a row (ROW_THREADS 1), the mains stepping blockIdx and
# threadIdx over blocks of 256 threads
SHIMS = host_build.PRELUDE + r"""
using std::min; using std::max;
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
#define ROW_THREADS 1
"""

HOST = SHIMS + r"""
#define CEIL_BITS 0
#define ROW_BITS 1
#include "scan_rows.cu"
// argv: input file (rows k, then the rows), output file (flags, top, lsb per row, int64)
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    long long h[2]; fread(h, 8, 2, in);
    long long rows = h[0], k = h[1];
    std::vector<double> x(rows * k + 1); fread(x.data(), 8, rows * k, in);
    std::vector<double> amax(rows); std::vector<signed char> flags(rows);
    std::vector<long long> top(rows), lsb(rows);
    for (long long b = 0; b * 256 < rows; ++b)
        for (long long t = 0; t < 256; ++t) {
            blockIdx.x = b; threadIdx.x = t;
            scan_rows(x.data(), rows, k, k, amax.data(), flags.data(), nullptr, nullptr, nullptr,
                      top.data(), lsb.data());
        }
    for (long long r = 0; r < rows; ++r) { long long v[3] = {flags[r], top[r], lsb[r]}; fwrite(v, 8, 3, out); }
    fclose(in); fclose(out);
    return 0;
}
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_build.build(tmp_path_factory, HOST, "scan_rows")


@pytest.mark.parametrize("shape", [(7, 1), (300, 33), (3, 2000), (5, 0)])
def test_row_bits_kernel_on_the_host(host, tmp_path, rng, shape):
    x = inputs.bit_range_rows(rng, shape)             # rows 0 and 1: (0, 0)
    if shape[1]:
        x[2 % shape[0], 0] = np.ldexp(1.0, 1023) * 1.5      # the top (below 2**1024) and the bottom of the range
        x[2 % shape[0], -1] = 5e-324
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.asarray(shape, dtype=np.int64).tofile(f)
        x.tofile(f)
    subprocess.run([host, str(src), str(dst)], check=True)
    flags, top, lsb = np.fromfile(dst, dtype=np.int64).reshape(-1, 3).T
    want_top, want_lsb, want_flags = numpy_backend.row_bits(x, flags=True) if shape[1] else \
        (*numpy_backend.row_bits(x), np.zeros(shape[0], dtype=np.int8))
    assert np.array_equal(top, want_top) and np.array_equal(lsb, want_lsb)
    assert np.array_equal(flags, want_flags)
    if shape[1] > 1:
        assert top[2 % shape[0]] == 1024 and lsb[2 % shape[0]] == -1074


CEILINGS_HOST = SHIMS + r"""
#include "scan_rows.cu"
// argv: input file (rows k, then the rows), output file (amax, flags, e, sumsq per row as
// 8-byte words, then the int8 ceilings, rows x kpad)
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    long long h[3]; fread(h, 8, 3, in);
    long long rows = h[0], k = h[1], kpad = h[2];
    std::vector<double> x(rows * k + 1); fread(x.data(), 8, rows * k, in);
    std::vector<double> amax(rows); std::vector<signed char> flags(rows), hat(rows * kpad + 1);
    std::vector<long long> e(rows), sumsq(rows);
    for (long long b = 0; b * 256 < rows; ++b)
        for (long long t = 0; t < 256; ++t) {
            blockIdx.x = b; threadIdx.x = t;
            scan_rows(x.data(), rows, k, kpad, amax.data(), flags.data(), e.data(), hat.data(), sumsq.data(),
                      nullptr, nullptr);
        }
    for (long long r = 0; r < rows; ++r) {
        long long f = flags[r];
        fwrite(&amax[r], 8, 1, out); fwrite(&f, 8, 1, out); fwrite(&e[r], 8, 1, out); fwrite(&sumsq[r], 8, 1, out);
    }
    fwrite(hat.data(), 1, rows * kpad, out);
    fclose(in); fclose(out);
    return 0;
}
"""

# scan_rows's ceilings as the plans ask for them (scheme: accurate mode's hat at 6 bits and
# its complex halves at 5, fast mode's sums of squares at 15, certified's sums of ceilings)
CEILINGS = {"hat": ("CEIL_BITS 6", "WRITE_HAT 1"), "halves": ("CEIL_BITS 5", "WRITE_HAT 1", "HAT_HALVES 1"),
            "squares": ("CEIL_BITS 15", "SUM_SQUARES 1"), "sums": ("CEIL_BITS 30", "SUM_CEILINGS 1")}


@pytest.fixture(scope="module")
def ceilings_hosts(tmp_path_factory):
    return {name: host_build.build(tmp_path_factory, "".join(f"#define {d}\n" for d in defines) + CEILINGS_HOST,
                                   f"scan_rows_{name}")
            for name, defines in CEILINGS.items()}


@pytest.mark.parametrize("shape", [(9, 1), (300, 34), (7, 64), (3, 2000)])
@pytest.mark.parametrize("kind", sorted(CEILINGS))
def test_ceilings_kernel_on_the_host(ceilings_hosts, tmp_path, rng, shape, kind):
    """scan_rows.cu's row maximum, flags, scale and ceilings (two multiplications by powers
    of two, not ldexp) on the host against numpy_backend.scan_rows (numpy's ldexp)."""
    rows, k = shape
    ceil_bits = int(CEILINGS[kind][0].split()[1])
    halves = kind == "halves"
    kc = k // 2 if halves else k
    kpad = -(-kc // 16) * 16
    x = inputs.ceiling_rows(rng, shape)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.asarray([rows, k, kpad], dtype=np.int64).tofile(f)
        x.tofile(f)
    subprocess.run([ceilings_hosts[kind], str(src), str(dst)], check=True)
    raw = np.fromfile(dst, dtype=np.uint8)
    words = raw[:rows * 32].view(np.int64).reshape(rows, 4)
    hat = raw[rows * 32:].view(np.int8).reshape(rows, kpad)
    amax, flags, e, c, sumsq = numpy_backend.scan_rows(x, ceil_bits, hat=kind in ("hat", "halves"),
                                                       sum_squares=kind == "squares", sum_ceilings=kind == "sums",
                                                       halves=halves)
    assert np.array_equal(words[:, 0].view(np.float64), amax)
    assert np.array_equal(words[:, 1], flags) and np.array_equal(words[:, 2], e)
    if c is not None:
        assert np.array_equal(hat[:, :kc], c) and not hat[:, kc:].any()
        if k and not halves:
            assert c[4 % rows].max() == 1 << (ceil_bits - 1)  # the row's maximum, a power of two 2**t: c = 2**(ceil_bits - 1)
    else:
        assert np.array_equal(words[:, 3], sumsq)
