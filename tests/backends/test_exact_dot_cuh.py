"""kernels/exact_dot.cuh (the exact residual kernel's terms and accumulator) and
crt.kulisch.exact_dot_window, built for the host with a C++ compiler and checked bit for
bit against Python fractions: r = RN(b - sum_j a_j (x0_j + x1_j)), +0 for an exact zero.

The host driver splits the columns over 32 accumulators interleaved as the warp's lanes
are in shared memory, adds their digits and rounds with rounding.cuh's round_to, as
kernels/exact_dot.cu does.  Skipped when no C++ compiler is found.
"""

import random
import struct
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ozaki.backends import numpy_backend
from ozaki.crt import kulisch
from ozaki.reference import round_fraction
from tests.backends import host_build

HOST = host_build.PRELUDE + r"""
// the top 64 bits of the 128-bit product, exact in __int128
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
#include "rounding.cuh"
#include "exact_dot.cuh"
static double as_double(unsigned long long b) { double d; memcpy(&d, &b, 8); return d; }
template <int D> double row(long long base, long long n, int parts, double b, const std::vector<double>& a,
                            const std::vector<double>& x0, const std::vector<double>& x1) {
    std::vector<long long> acc(32 * D, 0);             // lane l's digit d at acc[32 d + l]
    for (long long j = 0; j < n; ++j) {
        long long* lane = acc.data() + (j % 32);
        if (a[j] == 0.0) continue;
        add_product(lane, 32, D, a[j], x0[j], base, true);
        if (parts == 2) add_product(lane, 32, D, a[j], x1[j], base, true);
    }
    add_value(acc.data(), 32, D, b, base, false);
    long long total[D];
    for (int d = 0; d < D; ++d) { total[d] = 0; for (int l = 0; l < 32; ++l) total[d] += acc[32 * d + l]; }
    normalize(total, D);
    return round_to<D, double>(total, base);
}
int main() {       // stdin per case: "digits base n parts b" then n lines "a x0 x1", as bits
    int digits, parts; long long base, n; unsigned long long bb;
    while (scanf("%d %lld %lld %d %llu", &digits, &base, &n, &parts, &bb) == 5) {
        std::vector<double> a(n), x0(n), x1(n);
        for (long long j = 0; j < n; ++j) {
            unsigned long long p, q, r;
            if (scanf("%llu %llu %llu", &p, &q, &r) != 3) return 1;
            a[j] = as_double(p); x0[j] = as_double(q); x1[j] = as_double(r);
        }
        double b = as_double(bb), v;
        switch (digits) {
            case 8: v = row<8>(base, n, parts, b, a, x0, x1); break;
            case 16: v = row<16>(base, n, parts, b, a, x0, x1); break;
            case 32: v = row<32>(base, n, parts, b, a, x0, x1); break;
            default: v = row<64>(base, n, parts, b, a, x0, x1); break;
        }
        unsigned long long out; memcpy(&out, &v, 8); printf("%llu\n", out);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def host_residual(tmp_path_factory):
    return host_build.build(tmp_path_factory, HOST, "exact_dot.cuh")


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def window(a, xs, b):
    """The window exactly as cupy_backend.exact_residual forms it (numpy here)."""
    none = numpy_backend.NO_EXPONENT
    la, ta, _ = (int(v) for v in numpy_backend.exponent_range(a))
    lx, tx, _ = (int(v) for v in numpy_backend.exponent_range(np.stack(xs)))
    lb, tb, _ = (int(v) for v in numpy_backend.exponent_range(b))
    products = la != none and lx != none
    return kulisch.exact_dot_window(la + lx if products else None, lb if lb != none else None, ta + tx, tb,
                                    len(xs) * a.shape[1])


def run(host, cases):
    """cases: (A (rows, n), xs [x0] or [x0, x1] (n,), b (rows,)); every row through the host
    build against the fraction reference.  Returns the number of rows checked."""
    lines, want = [], []
    for A, xs, b in cases:
        w = window(A, [x[:, None] for x in xs], b[:, None])
        if w is None:
            continue
        base, digits = w
        x0 = xs[0]
        x1 = xs[1] if len(xs) == 2 else xs[0]
        for i in range(A.shape[0]):
            lines.append(f"{digits} {base} {A.shape[1]} {len(xs)} {bits(b[i])}")
            lines += [f"{bits(A[i, j])} {bits(x0[j])} {bits(x1[j])}" for j in range(A.shape[1])]
            exact = Fraction(float(b[i])) - sum(Fraction(float(A[i, j])) * sum(Fraction(float(x[j])) for x in xs)
                                               for j in range(A.shape[1]))
            want.append(bits(round_fraction(exact)))          # +0 for an exact zero
    out = subprocess.run([host], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    got = [int(v) for v in out.stdout.split()]
    assert got == want
    return len(want)


def wide(rng, shape, spread):
    """Normal entries scaled by 2**U(-spread, spread), some zeros and signed zeros."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))
    x[rng.random(shape) < 0.1] = 0.0
    x[rng.random(shape) < 0.05] = -0.0
    return x


def test_random_and_cancelling_rows(host_residual):
    """Wide exponent ranges, double-double x, residuals of near solutions (heavy
    cancellation: b = RN(A x) so b - A x is the tiny remainder), exact zeros."""
    rng = np.random.default_rng(random.randrange(1 << 30))
    cases = []
    for spread in (0, 20, 60, 200):
        A = wide(rng, (6, 40), spread)
        x0 = wide(rng, 40, spread)
        x1 = x0 * 2.0 ** -54 * rng.standard_normal(40)
        b = wide(rng, 6, spread)
        cases += [(A, [x0], b), (A, [x0, x1], b), (A, [x0, x1], A @ x0)]
    A = rng.integers(-3, 4, (5, 12)).astype(float)
    x = rng.integers(-3, 4, 12).astype(float)
    cases.append((A, [x], A @ x))                           # exact zeros: +0
    assert run(host_residual, cases) >= 60


def test_subnormals_and_the_extremes(host_residual):
    """Products far below the subnormal range, terms near overflow, mixed windows."""
    tiny = np.array([5e-324, -1e-310, 2.0 ** -1060, 0.0, -0.0, 3e-300])
    cases = [(np.tile(tiny, (3, 1)), [tiny[::-1].copy()], np.array([0.0, 5e-324, -1e-320])),
             (np.array([[1e300, -1e300, 1.0]]), [np.array([1e7, 1e7, 1e-300])], np.array([1e-300])),
             (np.array([[2.0 ** 500, 1.0]]), [np.array([2.0 ** 400, 2.0 ** -500])], np.array([-(2.0 ** 900)]))]
    checked = run(host_residual, cases)
    assert checked >= 4


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), spread=st.integers(0, 400), n=st.integers(1, 70))
def test_property_against_fractions(host_residual, seed, spread, n):
    rng = np.random.default_rng(seed)
    A = wide(rng, (2, n), spread)
    x0 = wide(rng, n, spread)
    x1 = x0 * 2.0 ** -53 * rng.random(n)
    b = wide(rng, 2, spread)
    run(host_residual, [(A, [x0, x1], b), (A, [x0, x1], A @ x0 + b * 2.0 ** -60)])


def test_window_bounds():
    """The window: base a multiple of 32 at or below every term's last bit, room above the
    largest sum, None past 64 limbs, the all-zero case."""
    assert kulisch.exact_dot_window(None, None, 0, 0, 10) == (0, 8)
    base, digits = kulisch.exact_dot_window(-200, -100, 10, 5, 1000)
    assert base % 32 == 0 and base <= -200 and base + 32 * digits > 10 + 11 + 1
    assert kulisch.exact_dot_window(-2148, None, 2048, 0, 10) is None
    assert kulisch.exact_dot_window(-33, None, 0, 0, 1)[0] == -64
