"""kernels/residues.cu built for the host with a C++ compiler (one thread a block: the grid
loop covers every group of eight columns in turn), narrow and wide (WIDE_DIGITS: the
five-piece path), one part and two (PARTS 2: a complex operand's real and imaginary rows
and Karatsuba's sums), and checked against numpy_backend.residues(_of_parts) on
adversarial rows that take each of its three ways (three pieces, five pieces, the
two-step table path).  The
same device code the GPU runs (tests/backends/test_cupy_backend.py runs it there);
skipped when no C++ compiler is found.
"""

import subprocess

import numpy as np
import pytest

from ozaki.backends import numpy_backend
from ozaki.backends.kernel_tables import constant_tables
from ozaki.crt import moduli
from tests import inputs
from tests.backends import host_build

# host_build.PRELUDE and what only residues.cu takes from CUDA: its vector types, the low word
# of a double's bits and max
SHIMS = host_build.PRELUDE + r"""
struct uint2 { unsigned int x, y; };
struct int4 { int x, y, z, w; };
static inline int __double2loint(double x) { return (int)(unsigned)(__double_as_longlong(x) & 0xFFFFFFFFLL); }
template <typename T> static inline T max(T a, T b) { return a > b ? a : b; }
"""

MAIN = r"""
#include "residues.cu"
// argv: input file (rows k kpad width nearest ld, x as rows ld apart [PARTS 2: then the
// imaginary rows alike], beta, pow2), output file ((PARTS + PARTS / 2) x NMOD x rows x kpad int8)
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    long long h[6]; fread(h, 8, 6, in);
    long long rows = h[0], k = h[1], kpad = h[2], ld = h[5];
    std::vector<double> x(rows * ld), xi(rows * ld);
    fread(x.data(), 8, x.size(), in);
    if (PARTS == 2) fread(xi.data(), 8, xi.size(), in);
    std::vector<long long> beta(rows); fread(beta.data(), 8, rows, in);
    std::vector<double> pow2((size_t)NMOD * MAX_SHIFT); fread(pow2.data(), 8, pow2.size(), in);
    std::vector<signed char> r((size_t)(PARTS + PARTS / 2) * NMOD * rows * kpad, 0);
    int sign = argc > 3 ? atoi(argv[3]) : 0, es = argc > 4 ? atoi(argv[4]) : 1;
    if (es == 2) {                 // the parts' entries interleaved, (Re, Im) pairs, read in place
        std::vector<double> z(2 * x.size());
        for (size_t e = 0; e < x.size(); ++e) { z[2 * e] = x[e]; z[2 * e + 1] = PARTS == 2 ? xi[e] : -1e300; }
        residues(z.data(), 2 * ld, rows, k, kpad, beta.data(), (int)h[3], (int)h[4], pow2.data(), r.data(),
                 z.data() + 1, sign, 2);
    } else {
        residues(x.data(), ld, rows, k, kpad, beta.data(), (int)h[3], (int)h[4], pow2.data(), r.data(),
                 PARTS == 2 ? xi.data() : x.data(), sign, 1);
    }
    fwrite(r.data(), 1, r.size(), out);
    fclose(in); fclose(out);
    return 0;
}
"""


# (moduli, WIDE_DIGITS, PARTS): 27 wide, the FFT's exact direct products of 1024 points before
# their constants came on a grid (plans.product_roots: 24-25 since)
CONFIGS = [(7, 0, 1), (16, 0, 1), (16, 1, 1), (22, 1, 1), (49, 1, 1), (16, 0, 2), (27, 1, 2)]


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"m{m}-wide{w}-parts{p}" for m, w, p in CONFIGS])
def host(request, tmp_path_factory):
    m, wide, parts = request.param
    source = SHIMS + f"#define NMOD {m}\n#define WIDE_DIGITS {wide}\n#define PARTS {parts}\n" + constant_tables(m) + MAIN
    return m, host_build.build(tmp_path_factory, source, f"residues_m{m}_w{wide}_p{parts}"), parts


def run(host, tmp_path, parts, beta, width, nearest, gap=0, sign=None, es=1):
    """The kernel's residues of the rows ``parts`` (a list of one or two (rows, k) arrays):
    (stacks, m, rows, kpad); ``gap``: the rows lie k + gap apart, the gaps full of values
    the kernel must not read (NaN and huge numbers)."""
    m, exe, count = host
    assert len(parts) == count
    rows, k = parts[0].shape
    kpad = -(-k // 16) * 16
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.array([rows, k, kpad, width or 0, int(nearest), k + gap], dtype=np.int64).tofile(f)
        for x in parts:
            wide = np.full((rows, k + gap), np.nan)
            wide[:, k:k + gap // 2] = 2.0 ** 1000
            wide[:, :k] = x
            wide.tofile(f)
        np.asarray(beta, dtype=np.int64).tofile(f)
        numpy_backend.pow2_table(m).astype(np.float64).tofile(f)
    subprocess.run([exe, str(src), str(dst), str(sign or 0), str(es)], check=True)
    out = np.fromfile(dst, dtype=np.int8)
    if sign:                      # QUARTERS: the butterflies' stacks
        return out.reshape(3, m, 4 * rows, kpad // 4)
    return out.reshape(count + count // 2, m, rows, kpad)


def adversarial(rng, rows=24):
    """inputs.residue_rows, each of its later rows' largest shift swept over 0..100."""
    x, beta = inputs.residue_rows(rng, rows)
    e = numpy_backend.split(x)[2]
    for r in range(6, rows):
        beta[r] = e[r].max() - (r - 6) * 100 // (rows - 7)
    return x, beta


@pytest.mark.parametrize("width,nearest,gap,es", [(None, False, 0, 1), (None, True, 0, 1), (64, False, 0, 1),
                                                  (100, False, 0, 1), (None, True, 29, 1), (None, False, 0, 2),
                                                  (100, True, 5, 2)])
def test_residues_match_numpy(host, tmp_path, rng, width, nearest, gap, es):
    """gap 29: rows read in place inside wider rows (a complex operand's [Re | Im] halves);
    es 2: entries two doubles apart (a complex row's interleaved pairs, read in place).
    Two parts: the imaginary rows another adversarial draw under the same bottoms."""
    x, beta = adversarial(rng)
    parts = [x] if host[2] == 1 else [x, adversarial(rng)[0][::-1]]
    got = run(host, tmp_path, parts, beta, width, nearest, gap, es=es)
    want = numpy_backend.residues_of_parts(parts, beta, width, host[0], nearest)
    k = x.shape[1]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.array_equal(g[:, :, :k], w)
        assert not g[:, :, k:].any()                      # the padding columns stay zero


def test_residues_of_known_integers(host, tmp_path):
    """Residues of exact integers against Python's own arithmetic (an independent
    reference): x = +-q 2**s at the bottom beta = 0 in three groups of eight columns (the
    kernel picks a way per group by its largest shift): three pieces (s <= 24), five
    pieces (24 < s <= 76 at the group's largest; the two-step path in a narrow build) and
    the two-step path (s > 76); each group holds values = 128 mod 256 of both signs (p =
    256's +128, stored as -128) and the largest digits its way takes."""
    m = host[0]
    top = 2 ** 53 - 1
    groups = [[(2 ** 52 + 128, 0), (-(2 ** 52 + 128), 0), (2 ** 52 + 64, 1), (-(2 ** 52 + 3), 7),
               (top, 24), (-top, 24), (2 ** 52 + 5, 8), (top, 20)],
              [(2 ** 52 + 128, 0), (-(2 ** 52 + 1), 7), (top, 25), (-top, 26), (top, 50), (-(2 ** 52 + 9), 52),
               (-top, 75), (top, 76)],
              [(2 ** 52 + 128, 0), (-(2 ** 52 + 64), 1), (top, 77), (-top, 78), (2 ** 52 + 11, 100),
               (-top, 300), (top, 26), (-(2 ** 52 + 7), 52)]]
    ints = [q * 2 ** sh for group in groups for q, sh in group]
    x = np.array([float(v) for v in ints])[None, :]
    assert all(int(f) == v for f, v in zip(x[0], ints))                # the digits are exact doubles
    # two parts: the imaginary row the same integers negated and reversed; then their sums
    values = [ints] if host[2] == 1 else [ints, [-v for v in ints[::-1]]]
    got = run(host, tmp_path, [np.array([[float(v) for v in vs]]) for vs in values], np.array([0]), None, False)
    if host[2] == 2:
        values.append([a + b for a, b in zip(*values)])
    for stack, vs in zip(got, values):
        for i, p in enumerate(moduli(m)):
            want = [((v + p // 2) % p) - p // 2 for v in vs]        # symmetric: [-p/2, p - 1 - p/2]
            assert stack[i, 0, :len(vs)].tolist() == want, p
            if p == 256 and vs is values[0]:
                assert sum(r == -128 for r in want) >= 6              # two in each group


BUTTERFLY_MAIN = r"""
#include "residues.cu"
// argv: input file (rows q sign, then re and im: NMOD x rows x 4q int8 each), output file
// (3 x NMOD x 4 rows x q int8): every modulus' block (blockIdx.y) in turn
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    long long h[3]; fread(h, 8, 3, in);
    long long rows = h[0], q = h[1];
    std::vector<signed char> re((size_t)NMOD * rows * 4 * q), im(re.size()), z(3 * re.size());
    fread(re.data(), 1, re.size(), in);
    fread(im.data(), 1, im.size(), in);
    for (int i = 0; i < NMOD; ++i) {
        blockIdx.y = i;
        butterfly4(re.data(), im.data(), rows * 4 * q, 4 * q, rows, q, (int)h[2], z.data());
    }
    fwrite(z.data(), 1, z.size(), out);
    fclose(in); fclose(out);
    return 0;
}
"""


@pytest.fixture(scope="module", params=[16, 25, 49])
def butterfly_host(request, tmp_path_factory):
    m = request.param
    source = SHIMS + f"#define NMOD {m}\n" + constant_tables(m) + BUTTERFLY_MAIN
    return m, host_build.build(tmp_path_factory, source, f"butterfly4_m{m}")


@pytest.mark.parametrize("sign", [-1, 1])
def test_butterfly4_matches_python_ints(butterfly_host, tmp_path, rng, sign):
    """residues.cu's butterfly4 against Python's integers (an independent reference:
    z_s = sum_r (sign i)**(r s) x_(q r + j) as Gaussian integers, reduced to the symmetric
    range) and numpy_backend.butterfly4, on residues that include the extremes -128 and
    127 everywhere in some rows (the largest |z|, and for p = 256 the +-128 boundary)."""
    m, exe = butterfly_host
    rows, q = 5, 8
    ps = moduli(m)
    re = rng.integers(-128, 128, size=(m, rows, 4 * q)).astype(np.int8)
    im = rng.integers(-128, 128, size=(m, rows, 4 * q)).astype(np.int8)
    re[:, 0], im[:, 0] = -128, -128
    re[:, 1], im[:, 1] = 127, -128
    re[:, 2, 1::2], im[:, 2, ::2] = 127, 127
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.array([rows, q, sign], dtype=np.int64).tofile(f)
        re.tofile(f)
        im.tofile(f)
    subprocess.run([exe, str(src), str(dst)], check=True)
    got = np.fromfile(dst, dtype=np.int8).reshape(3, m, 4 * rows, q)
    assert all(np.array_equal(g, w) for g, w in zip(got, numpy_backend.butterfly4(re, im, m, sign)))
    turn = [1, sign * 1j, -1, -sign * 1j]
    for i in (0, 1, m - 1):
        p = ps[i]
        for row in range(rows):
            x = [complex(int(a), int(b)) for a, b in zip(re[i, row].tolist(), im[i, row].tolist())]
            for s in range(4):
                for j in range(q):
                    z = sum(turn[r * s % 4] * x[q * r + j] for r in range(4))
                    zr, zi = int(z.real), int(z.imag)
                    want = [((v + p // 2) % p) - p // 2 for v in (zr, zi, zr + zi)]
                    assert [int(got[h, i, s * rows + row, j]) for h in range(3)] == want, (p, row, s, j)


# QUARTERS (PARTS 2): the radix-4 butterflies formed with the residues; narrow (three pieces,
# the two-step path) and wide (five pieces: the real quarters parked and read back)
QUARTER_CONFIGS = [(16, 0), (25, 0), (27, 1)]


@pytest.fixture(scope="module", params=QUARTER_CONFIGS, ids=[f"m{m}-wide{w}" for m, w in QUARTER_CONFIGS])
def quarters_host(request, tmp_path_factory):
    m, wide = request.param
    source = (SHIMS + f"#define NMOD {m}\n#define WIDE_DIGITS {wide}\n#define PARTS 2\n"
              "#define QUARTERS 1\n" + constant_tables(m) + MAIN)
    return m, host_build.build(tmp_path_factory, source, f"residues_quarters_m{m}_w{wide}"), 2


@pytest.mark.parametrize("sign", [-1, 1])
@pytest.mark.parametrize("width,nearest,gap,es", [(None, False, 0, 1), (None, True, 29, 1), (64, False, 0, 2),
                                                  (100, False, 3, 1), (100, True, 0, 2)])
def test_quarters_match_numpy(quarters_host, tmp_path, rng, sign, width, nearest, gap, es):
    """residues.cu QUARTERS == numpy_backend.residues_of_parts(..., quarter=sign) (the
    residues, then butterfly4) on adversarial rows of 64 entries (q = 16) whose largest
    shifts take every digit path, the rows read in place inside wider rows."""
    x, beta = adversarial(rng)
    x = np.concatenate([x, x[:, ::-1]], axis=1)[:, :64]
    y = adversarial(rng)[0][::-1]
    y = np.concatenate([y, -y], axis=1)[:, :64]
    got = run(quarters_host, tmp_path, [x, y], beta, width, nearest, gap, sign, es)
    want = numpy_backend.residues_of_parts([x, y], beta, width, quarters_host[0], nearest, quarter=sign)
    assert len(want) == 3
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w)
