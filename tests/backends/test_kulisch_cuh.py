"""kernels/kulisch.cuh's round_to, built for the host with a C++ compiler, against
ozaki.crt.kulisch.round_to and reference.round_fraction32 / Python's float(Fraction);
with its residual x - RN(x) (exact mode's test, Ziv's strategy) against Fractions.

The device-only qualifiers and intrinsics the header uses are stubbed (host_build.PRELUDE);
the rounding code is the header's own, so its float64 and float32 formats are checked
bit for bit on machines without a GPU.  Skipped when no C++ compiler is found.
"""

import random
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from ozaki.crt import kulisch
from ozaki.reference import round_fraction, round_fraction32
from tests.backends import host_build

NL = 6
# the header with stub constant tables (the rounding reads none of them)
KULISCH = host_build.PRELUDE + r"""
#define LP 1
double MOD_INV[1] = {1.0}, MOD_P[1] = {1.0}, CRT_C[1][1] = {{1.0}}, CRT_P[1] = {1.0};
#define CRT_INV_P 1.0
#include "kulisch.cuh"
"""
HOST = KULISCH + r"""
int main() {      // stdin: "bits exponent limb0 .. limb5" per line; stdout: the result's bits
    int fmt; long long e, a[NL];
    while (scanf("%d %lld", &fmt, &e) == 2) {
        for (int l = 0; l < NL; ++l) if (scanf("%lld", &a[l]) != 1) return 1;
        double rho = 0.0;
        unsigned long long rb;
        long long c[NL];                               // round_to without the residual, on a copy
        memcpy(c, a, sizeof(c));
        if (fmt == 64) { double r = round_to<NL, double, true>(a, e, &rho), p = round_to<NL, double, false>(c, e);
                         unsigned long long b, pb; memcpy(&b, &r, 8); memcpy(&pb, &p, 8);
                         memcpy(&rb, &rho, 8); printf("%llu %llu %llu\n", b, rb, pb); }
        else { float r = round_to<NL, float, true>(a, e, &rho), p = round_to<NL, float, false>(c, e);
               unsigned int b, pb; memcpy(&b, &r, 4); memcpy(&pb, &p, 4);
               memcpy(&rb, &rho, 8); printf("%u %llu %u\n", b, rb, pb); }
    }
    return 0;
}
""".replace("NL", str(NL))


# Each host build twice: as the kernels build it by default, and with ROUND_CONVERT (NEW_KERNELS
# round_convert: normal results rounded by the conversion instruction, rounding.cuh rounded_window).
BUILDS = {"default": "", "round_convert": "#define ROUND_CONVERT 1\n"}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def host_round(tmp_path_factory, request):
    return host_build.build(tmp_path_factory, BUILDS[request.param] + HOST, f"kulisch.cuh.{request.param}")


def cases(seed, count):
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        fmt = rnd.choice([32, 64])
        if rnd.random() < 0.4:         # at or next to a tie of either precision, shifted anywhere
            p = rnd.choice([24, 53])
            x = ((rnd.getrandbits(p) | (1 << (p - 1))) << 1 | 1) << rnd.randint(0, 100)
            x += rnd.choice([-1, 0, 0, 1])
        else:
            bits = rnd.randint(1, 180)
            x = rnd.getrandbits(bits) | (1 << (bits - 1))
        x *= rnd.choice([1, -1])
        lo, hi = (-149, 128) if fmt == 32 else (-1074, 1024)
        if rnd.random() < 0.7:         # around the subnormal range and the overflow threshold
            e = rnd.randint(lo - x.bit_length() - 3, hi - x.bit_length() + 3)
        else:
            e = rnd.randint(-1300, 1100)
        out.append((fmt, e, x))
    return out


def test_device_rounding_matches_python_and_reference(host_round):
    todo = cases(2026, 4000) + [(32, 0, (1 << 24) + 1), (32, -150, 1), (32, -151, 3), (32, 104, (1 << 24) - 1),
                                (32, 103, (1 << 25) - 1), (64, -1075, 1), (64, 971, (1 << 53) - 1), (32, 0, 0),
                                (64, 0, -3), (64, -30, -(1 << 40)), (32, 0, -3), (64, -1030, 0), (64, -1100, 0)]
    lines = [f"{fmt} {e} " + " ".join(str(int(v)) for v in kulisch.from_int(x, NL)) for fmt, e, x in todo]
    got = subprocess.run([host_round], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    assert len(got) == 3 * len(todo)
    for (fmt, e, x), g, grho, plain in zip(todo, got[0::3], got[1::3], got[2::3]):
        assert plain == g, (fmt, e, x)                 # without the residual: the same rounding
        dt, ut = (np.float32, np.uint32) if fmt == 32 else (np.float64, np.uint64)
        py, py_rho = (v[0] for v in kulisch.round_to(kulisch.from_int(x, NL).reshape(NL, 1), np.array([e]), dt,
                                                      residual=True))
        f = Fraction(x) * Fraction(2) ** e
        ref = round_fraction32(f) if fmt == 32 else round_fraction(f)
        want = int(np.array(ref, dtype=dt).view(ut))
        assert int(g) == int(np.array(py).view(ut)) == want, (fmt, e, x)
        # the residual x - RN(x), rounded once to float64 (NaN where not formed: overflow,
        # float64's subnormal range), the same bits on the device code and in numpy
        rho = np.array(int(grho), dtype=np.uint64).view(np.float64)
        if np.isnan(py_rho):
            assert np.isnan(rho) and (not np.isfinite(ref) or abs(ref) < 2.0 ** -1021), (fmt, e, x)
        else:
            assert float(rho) == round_fraction(f - Fraction(float(ref))), (fmt, e, x)
            assert rho.tobytes() == np.float64(py_rho).tobytes(), (fmt, e, x)          # zeros' signs too


TWO_WORDS_HOST = KULISCH + r"""
int main() {      // stdin: "bits exponent limb0 .. limb4" per line (limbs not normalized); stdout: the bits
    int fmt; long long e, a[5];
    while (scanf("%d %lld", &fmt, &e) == 2) {
        for (int l = 0; l < 5; ++l) if (scanf("%lld", &a[l]) != 1) return 1;
        if (fmt == 64) { double r = round_two_words<5, double>(a, e); unsigned long long b; memcpy(&b, &r, 8);
                         printf("%llu\n", b); }
        else { float r = round_two_words<5, float>(a, e); unsigned int b; memcpy(&b, &r, 4); printf("%u\n", b); }
    }
    return 0;
}
"""


@pytest.fixture(scope="module", params=sorted(BUILDS))
def host_two_words(tmp_path_factory, request):
    return host_build.build(tmp_path_factory, BUILDS[request.param] + TWO_WORDS_HOST,
                            f"kulisch.cuh.two_words.{request.param}")


def unnormalized(x, rnd):
    """Five signed limbs of x (a[l] 2**(32 l) summed), carries moved between neighbours at
    random so that limbs reach about 2**47 either sign, as a CRT lift leaves them (S_l - q P_l)."""
    a = [int(v) for v in kulisch.from_int(x, 5)]
    for l in range(4):
        k = rnd.randint(-(1 << 15), 1 << 15) if rnd.random() < 0.8 else 0
        a[l] += k << 32
        a[l + 1] -= k
    assert sum(v << (32 * l) for l, v in enumerate(a)) == x
    return a


def test_two_words_rounding_matches_the_reference(host_two_words):
    """round_two_words (a single pair's CRT value with |x| < 2**127, limbs not normalized)
    against Python's exact rounding of x 2**e: float64 and float32, ties and their
    neighbours at any shift, the subnormal range, the overflow threshold, both signs, zero,
    values of 1 to 127 bits and limbs carrying up to about 2**47 either way."""
    rnd = random.Random(2612)
    todo = []
    for fmt, e, x in cases(2612, 6000):
        if x.bit_length() <= 126:
            todo.append((fmt, e, x))
    for _ in range(1500):                               # near 2**127 and at the word boundary 2**64
        bits = rnd.choice([63, 64, 65, 126, 127])
        x = rnd.getrandbits(bits) | (1 << (bits - 1))
        if rnd.random() < 0.3:
            x |= (1 << (bits - 54)) - 1 if bits > 54 else 0     # a run of ones below a tie
        todo.append((rnd.choice([32, 64]), rnd.randint(-1300, 1100), x * rnd.choice([1, -1])))
    todo += [(64, 0, 0), (32, 5, 0), (64, -1074, 1), (64, -1075, 1), (64, -1076, 3), (64, 971, (1 << 53) - 1),
             (64, 970, (1 << 54) - 1), (32, -149, 1), (32, -150, 1), (32, 104, (1 << 24) - 1), (64, 0, (1 << 127) - 1),
             (64, 0, -(1 << 127) + 1), (64, -1100, (1 << 126) + 1), (32, 0, (1 << 64) + 1), (64, 0, 1 << 64)]
    lines = [f"{fmt} {e} " + " ".join(str(v) for v in unnormalized(x, rnd)) for fmt, e, x in todo]
    got = subprocess.run([host_two_words], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split()
    assert len(got) == len(todo)
    for (fmt, e, x), g in zip(todo, got):
        dt, ut = (np.float32, np.uint32) if fmt == 32 else (np.float64, np.uint64)
        f = Fraction(x) * Fraction(2) ** e
        ref = round_fraction32(f) if fmt == 32 else round_fraction(f)
        want = int(np.array(ref, dtype=dt).view(ut))
        if x == 0:
            want = 0                                    # +0: the zeros' signs are the IEEE fix-ups'
        assert int(g) == want, (fmt, e, x)
