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

HOST = host_build.PRELUDE + r"""
// volatile: each sum and product rounded once to float64, never contracted into an fma
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
#include "certify.cuh"
static double as_double(unsigned long long b) { double d; memcpy(&d, &b, 8); return d; }
int main() {   // stdin per entry: "Sa ea ba xa Sb eb bb xb K c f32 rho", doubles as bits
    unsigned long long sa, sb, k, c, rho; long long ea, ba, eb, bb; int xa, xb, f32;
    while (scanf("%llu %lld %lld %d %llu %lld %lld %d %llu %llu %d %llu", &sa, &ea, &ba, &xa, &sb, &eb, &bb, &xb,
                 &k, &c, &f32, &rho) == 12) {
        BoundSide a = {as_double(sa), ea, ba, xa != 0}, b = {as_double(sb), eb, bb, xb != 0};
        double delta = error_bound(a, b, as_double(k));
        bool ok = f32 ? faithful<float>(as_double(c), delta) : faithful<double>(as_double(c), delta);
        bool rounded = f32 ? correctly_rounded<float>(as_double(c), as_double(rho), delta)
                           : correctly_rounded<double>(as_double(c), as_double(rho), delta);
        unsigned long long d; memcpy(&d, &delta, 8);
        printf("%llu %d %d\n", d, ok ? 1 : 0, rounded ? 1 : 0);
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
             f"{int(dtype == np.float32)} {bits(0.0)}" for v in range(count)]
    out = subprocess.run([host_certify], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    got_delta = np.array([int(v) for v in out[0::3]], dtype=np.uint64).view(np.float64)
    got_ok = np.array([v == "1" for v in out[1::3]])
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
        lines.append(f"{bits(S)} 0 0 0 {bits(0.0)} 0 {shift} 0 {bits(0.0)} {bits(c)} 0 {bits(0.0)}")
        d = scheme.error_bounds(np, [np.array([x]) for x in side_a], [np.array([x]) for x in side_b], 0.0)
        want.append(bool(scheme.certified_entries(numpy_backend, np.array([c]), d, np.zeros(1, dtype=bool))[0]))
    out = subprocess.run([host_certify], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    assert [v == "1" for v in out[1::3]] == want
    assert 0 < sum(want) < len(want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_correct_rounding_decisions_as_numpy(host_certify, dtype):
    """Exact mode's test (correctly_rounded, scheme.rounded_entries) on the host build: residuals
    about half a gap (either side of the threshold by an ulp), tiny, zero of either sign and
    NaN; results over the whole range with zeros, which are never proved (a zero's sign is not
    decided by the bound)."""
    rng = np.random.default_rng(random.randrange(1 << 30))
    count = 20000
    _, c = draw(rng, count, dtype)
    fi = np.finfo(dtype)
    gap = scheme.gaps(np, np.where(np.isfinite(c), np.abs(c), 0.0), fi)
    # Delta from one side alone: S 2**(bb - ea) (1 + 2**-48) + 2**-1071, aimed at a fraction of the gap
    frac = rng.choice([1e-6, 0.1, 0.25, 0.49], count)
    shift = np.frexp(gap)[1] - 60
    S = np.ldexp(frac * 2.0 ** 59, 0) * rng.choice([1.0, 0.0], count, p=[0.9, 0.1])
    rho = gap * (0.5 - frac) * (1 + rng.integers(-2, 3, count) * 2.0 ** -50) * rng.choice([1.0, -1.0], count)
    special = rng.random(count)
    rho[special < 0.05] = np.nan
    rho[(special >= 0.05) & (special < 0.1)] = -0.0
    rho[(special >= 0.1) & (special < 0.15)] = 2.0 ** -1074
    c[rng.random(count) < 0.03] = rng.choice([0.0, -0.0], 1)[0]
    lines, deltas = [], []
    for v in range(count):
        side_a, side_b = (S[v], 0, 0, False), (0.0, 0, int(shift[v]), False)
        lines.append(f"{bits(S[v])} 0 0 0 {bits(0.0)} 0 {int(shift[v])} 0 {bits(0.0)} {bits(c[v])} "
                     f"{int(dtype == np.float32)} {bits(rho[v])}")
        deltas.append(scheme.error_bounds(np, [np.array([x]) for x in side_a], [np.array([x]) for x in side_b],
                                          0.0)[0])
    out = subprocess.run([host_certify], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    got = np.array([v == "1" for v in out[2::3]])
    want = scheme.rounded_entries(numpy_backend, c.astype(dtype), rho, np.array(deltas), np.zeros(count, dtype=bool))
    assert np.array_equal(got, want)
    assert not want[c == 0].any()
    assert 0 < want.sum() < count
