"""kernels/certify.cuh (certified mode's per-entry test on the GPU) built for the host with a
C++ compiler and checked bit for bit against scheme.error_bounds and scheme.certified_entries
(numpy): the same bound, the same gaps and the same decision on every entry, on factors
drawn over the whole exponent range, results at binade edges, subnormals, zeros and
overflow, for float64 and float32 results.  Skipped when no C++ compiler is found."""

import math
import random
import struct
import subprocess

import numpy as np
import pytest

from ozaki import scheme
from ozaki.backends import numpy_backend
from tests.backends import host_build

HOST = r"""
#include <cmath>
#include <cstdio>
#include <cstring>
using std::ldexp; using std::fabs; using std::isfinite;
#define __device__
#define __forceinline__ inline
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline long long __double_as_longlong(double x) { long long b; memcpy(&b, &x, 8); return b; }
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, 4); return f; }
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
#include "certify.cuh"
static double as_double(unsigned long long b) { double d; memcpy(&d, &b, 8); return d; }
int main() {   // stdin per entry: "Sa ea ba xa Sb eb bb xb K c f32", doubles as bits
    unsigned long long sa, sb, k, c; long long ea, ba, eb, bb; int xa, xb, f32;
    while (scanf("%llu %lld %lld %d %llu %lld %lld %d %llu %llu %d", &sa, &ea, &ba, &xa, &sb, &eb, &bb, &xb,
                 &k, &c, &f32) == 11) {
        BoundSide a = {as_double(sa), ea, ba, xa != 0}, b = {as_double(sb), eb, bb, xb != 0};
        double delta = error_bound(a, b, as_double(k));
        bool ok = f32 ? faithful<float>(as_double(c), delta) : faithful<double>(as_double(c), delta);
        unsigned long long d; memcpy(&d, &delta, 8);
        printf("%llu %d\n", d, ok ? 1 : 0);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def host_certify(tmp_path_factory):
    return host_build.build(tmp_path_factory, HOST, "certify.cuh")


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def draw(rng, count, dtype):
    """Random factors of the bound over the whole range, and results: random bits, binade
    edges, subnormals, zeros, overflow."""
    fi = np.finfo(dtype)
    S = np.where(rng.random(count) < 0.1, 0.0, np.ldexp(rng.random(count) + 0.5, rng.integers(0, 62, count)))
    e = rng.integers(-1100, 1100, count)
    beta = rng.integers(-1200, 1100, count)
    exact = (S == 0) | (beta <= -1074) | (rng.random(count) < 0.05)
    edges = np.array([0.0, fi.smallest_subnormal, fi.tiny, 1.0, 2.0, 3.0, fi.max, np.inf, -np.inf, np.nan],
                     dtype=np.float64)
    ints = np.int64 if dtype == np.float64 else np.int32
    c = rng.integers(0, np.iinfo(ints).max, count, dtype=np.int64).astype(ints).view(dtype).astype(np.float64)
    pick = rng.random(count) < 0.2
    c[pick] = rng.choice(edges, pick.sum())
    return (S, e, beta, exact), c


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_bound_and_decisions_as_numpy(host_certify, dtype):
    rng = np.random.default_rng(random.randrange(1 << 30))
    count = 20000
    side_a, c = draw(rng, count, dtype)
    side_b, _ = draw(rng, count, dtype)
    K = rng.integers(1, 1 << 30, count).astype(np.float64)
    # near the decision: Delta about half the gap beside c
    lines = [f"{bits(side_a[0][v])} {side_a[1][v]} {side_a[2][v]} {int(side_a[3][v])} {bits(side_b[0][v])} "
             f"{side_b[1][v]} {side_b[2][v]} {int(side_b[3][v])} {bits(K[v])} {bits(c[v])} "
             f"{int(dtype == np.float32)}" for v in range(count)]
    out = subprocess.run([host_certify], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    got_delta = np.array([int(v) for v in out[0::2]], dtype=np.uint64).view(np.float64)
    got_ok = np.array([v == "1" for v in out[1::2]])
    delta = np.array([scheme.error_bounds(np, [np.array([x[v]]) for x in side_a], [np.array([x[v]]) for x in side_b],
                                          K[v])[0] for v in range(count)])
    want_ok = scheme.certified_entries(numpy_backend, c.astype(dtype), delta, np.zeros(count, dtype=bool))
    assert np.array_equal(got_delta.view(np.uint64), delta.view(np.uint64))
    assert np.array_equal(got_ok, want_ok)
    assert 0 < want_ok.sum() < count                   # both decisions drawn


def test_decisions_at_the_threshold(host_certify):
    """Bounds within an ulp of half the gap beside c: 2 Delta < gap decided the same."""
    rng = np.random.default_rng(random.randrange(1 << 30))
    lines, want = [], []
    for _ in range(3000):
        c = float(np.ldexp(rng.random() + 0.5, int(rng.integers(-1070, 1000))))
        gap = float(scheme.gaps(np, np.array([abs(c)]), np.finfo(np.float64))[0])
        # Delta = S 2**shift (1 + 2**-48) + 2**-1071 aimed within ulps of gap / 2, both sides
        shift = math.frexp(gap)[1] - 42
        aim = (gap / 2 * (1 + float(rng.integers(-3, 4)) * 2.0 ** -52) - 2.0 ** -1071) / (1 + 2.0 ** -48)
        S = max(math.ldexp(aim, -shift), 0.0)
        side_a = (S, 0, 0, False)
        side_b = (0.0, 0, shift, False)
        lines.append(f"{bits(S)} 0 0 0 {bits(0.0)} 0 {shift} 0 {bits(0.0)} {bits(c)} 0")
        d = scheme.error_bounds(np, [np.array([x]) for x in side_a], [np.array([x]) for x in side_b], 0.0)
        want.append(bool(scheme.certified_entries(numpy_backend, np.array([c]), d, np.zeros(1, dtype=bool))[0]))
    out = subprocess.run([host_certify], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    assert [v == "1" for v in out[1::2]] == want
    assert 0 < sum(want) < len(want)
