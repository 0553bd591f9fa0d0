"""kernels/zero_terms.cu (zero_signs) and kernels/row_specials.cu built for the host with a
C++ compiler, one thread a block and a warp (the grid loops then cover every entry in
turn), and checked against numpy_backend's zero_signs and row_specials: the sign rule of
zero DFT parts on the FFT's own terms, in place on strided views, and the rows' NaN/inf
and tiny flags.  The same device code the GPU runs; skipped when no C++ compiler is found.
"""

import subprocess

import numpy as np
import pytest

from ozaki.backends import numpy_backend
from ozaki.fft import specials
from tests import inputs
from tests.backends import host_build

HOST = host_build.PRELUDE + r"""
static inline int __reduce_or_sync(unsigned, int v) { return v; }   // a warp of one thread
static inline int atomicOr(int* p, int v) { int o = *p; *p |= v; return o; }
#include "zero_terms.cu"
#include "row_specials.cu"
static std::vector<long long> ints(FILE* f, size_t n) { std::vector<long long> v(n); fread(v.data(), 8, n, f); return v; }
static std::vector<double> doubles(FILE* f, size_t n) { std::vector<double> v(n); fread(v.data(), 8, n, f); return v; }
// argv: mode ("zero" or "flags"), input file, output file (layouts: tests/backends/test_fft_kernels_host.py)
int main(int argc, char** argv) {
    FILE* in = fopen(argv[2], "rb"); FILE* out = fopen(argv[3], "wb");
    if (!strcmp(argv[1], "zero")) {
        // N sign rows bins terms count start ld stride part_count second terms2
        std::vector<long long> h = ints(in, 12);
        long long N = h[0], rows = h[2], bins = h[3];
        int sign = (int)h[1], terms = (int)h[4], terms2 = (int)h[11];
        std::vector<double> base = doubles(in, h[5]);
        std::vector<double> part = doubles(in, h[9]);
        std::vector<long long> tiny_i = ints(in, rows);
        std::vector<unsigned char> tiny(rows);
        for (long long r = 0; r < rows; ++r) tiny[r] = (unsigned char)tiny_i[r];
        long long t[4][7];                            // start entries offset ld stride sine negated
        for (int q = 0; q < 4; ++q) { std::vector<long long> v = ints(in, 7); for (int j = 0; j < 7; ++j) t[q][j] = v[j]; }
        zero_signs(part.data() + h[6], rows, bins, h[7], h[8], h[10], (const bool*)tiny.data(),
                   base.data() + t[0][0], t[0][1], t[0][2], t[0][3], t[0][4], (int)t[0][5], (int)t[0][6],
                   base.data() + t[1][0], t[1][1], t[1][2], t[1][3], t[1][4], (int)t[1][5], (int)t[1][6], terms,
                   base.data() + t[2][0], t[2][1], t[2][2], t[2][3], t[2][4], (int)t[2][5], (int)t[2][6],
                   base.data() + t[3][0], t[3][1], t[3][2], t[3][3], t[3][4], (int)t[3][5], (int)t[3][6], terms2,
                   N, sign);
        fwrite(part.data(), 8, part.size(), out);
    } else {
        std::vector<long long> h = ints(in, 7);       // rows entries start ld stride count imag
        double tiny = doubles(in, 1)[0];
        std::vector<double> x = doubles(in, h[5]);
        std::vector<int> flags(h[0], 0);
        row_specials(x.data() + h[2], h[0], h[1], h[3], h[4], tiny, flags.data(), (int)h[6]);
        std::vector<long long> f(flags.begin(), flags.end());
        fwrite(f.data(), 8, f.size(), out);
    }
    fclose(in); fclose(out);
    return 0;
}
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_build.build(tmp_path_factory, HOST, "fft_kernels")


def _layout(view, base):
    """(start, ld, stride) of a 2-D float64 view of the contiguous float64 array base, in elements."""
    start = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
    return start, view.strides[0] // 8, view.strides[1] // 8


def _run(host, tmp_path, mode, header, *arrays):
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.asarray(header, dtype=np.int64).tofile(f)
        for a in arrays:
            np.ascontiguousarray(a).tofile(f)
    subprocess.run([host, mode, str(src), str(dst)], check=True)
    return np.fromfile(dst, dtype=np.float64 if mode == "zero" else np.int64)


def _described(used, base):
    """The kernel's descriptors of a part's terms (two: the first repeated for one)."""
    out = []
    for offset, v, sine, negated in used + used[:1] * (2 - len(used)):
        start, ld, stride = _layout(v, base)
        out.append([start, v.shape[1], offset, ld, stride, int(sine), int(negated)])
    return out


def _zero_signs_on_host(host, tmp_path, N, sign, rows, base, out, tiny, used, second_used=None):
    """The kernel on ``out`` (complex, rows x N) in place: its real parts by ``used``, and with
    ``second_used`` its imaginary parts too, in the same launch (second = 1)."""
    whole = out.view(np.float64)
    start, ld, stride = _layout(out.real, whole)
    described = _described(used, base) + _described(second_used or used, base)
    got = _run(host, tmp_path, "zero", [N, sign, rows, N, len(used), base.size, start, ld, stride, whole.size,
                                        1 if second_used else 0, len(second_used or used)],
               base, whole, tiny.astype(np.int64), np.array(described, dtype=np.int64))
    return got.view(np.complex128).reshape(rows, N)


def _same(got, want):
    assert np.array_equal(np.isnan(got), np.isnan(want))
    same = np.isnan(want) | (got.view(np.int64) == want.view(np.int64)).reshape(want.shape + (2,)).all(axis=2)
    return same.all()


@pytest.mark.parametrize("N", [1, 2, 3, 8, 25, 64])
def test_zero_signs_kernel_on_the_host(host, tmp_path, rng, N):
    """One part by its terms (the imaginary parts left alone), then both parts of a complex
    output in one launch (second = 1), each by its own terms, as numpy_backend's."""
    rows = 30
    for kind in ("c2c", "r2c", "c2r"):
        data = inputs.zero_sign_rows(rng, kind, N, rows, lone=(-1.5, 2.0, np.inf, np.nan))
        base = data if kind == "r2c" else data.view(np.float64)
        views = specials._inputs_2d(data, kind, N)
        every = [[(views[q][0], views[q][1], ctype == "s", negated) for q, ctype, negated in terms]
                 for terms in specials._TERMS[kind]]
        for sign in (-1, 1):
            tiny = rng.random(rows) < 0.1
            for used in every:
                out = np.empty((rows, N), dtype=np.complex128)
                out.real = np.where(rng.random((rows, N)) < 0.7, rng.choice([0.0, -0.0], (rows, N)), 2.5)
                out.real[rng.random((rows, N)) < 0.05] = np.nan
                out.imag = 7.0
                want = out.copy()
                numpy_backend.zero_signs([want.real], tiny, [used], N, sign)
                got = _zero_signs_on_host(host, tmp_path, N, sign, rows, base, out, tiny, used)
                assert _same(got, want), (kind, sign, used)
            if len(every) == 2:
                out = (np.where(rng.random((rows, N)) < 0.7, rng.choice([0.0, -0.0], (rows, N)), 2.5)
                       + 1j * np.where(rng.random((rows, N)) < 0.7, rng.choice([0.0, -0.0], (rows, N)), -1.0))
                want = out.copy()
                numpy_backend.zero_signs([want.real, want.imag], tiny, every, N, sign)
                got = _zero_signs_on_host(host, tmp_path, N, sign, rows, base, out, tiny, every[0], every[1])
                assert _same(got, want), (kind, sign, "both parts")


@pytest.mark.parametrize("rows, length", [(1, 3000), (7, 5), (40, 24)])
def test_row_specials_kernel_on_the_host(host, tmp_path, rng, rows, length):
    x = rng.standard_normal((rows, length)) + 1j * rng.standard_normal((rows, length))
    for value in (np.nan, np.inf, -np.inf, 1e-300, -5e-324, 0.0, -0.0, specials.TINY, -specials.TINY / 2):
        x.real[rng.integers(0, rows), rng.integers(0, length)] = value
        x.imag[rng.integers(0, rows), rng.integers(0, length)] = value
    base = x.view(np.float64)
    for view, imag in ((base, 2), (x.real, 0), (x.imag, 1), (x.imag[:, 1:max(1, length // 2)], 0)):
        bad, small, found = numpy_backend.row_specials([view], specials.TINY, (imag,))
        start, ld, stride = _layout(view, base)
        flags = _run(host, tmp_path, "flags", [rows, view.shape[1], start, ld, stride, base.size, imag],
                     np.array([specials.TINY]), base)
        assert np.array_equal((flags & 1) != 0, bad) and np.array_equal((flags & 2) != 0, small)
        assert np.bitwise_or.reduce(flags) == found
        assert found & 4 == (4 if imag else 0)                # every row has nonzero imaginary parts
        if view is base:
            assert bad.any() and small.any()                  # both flags are reached
    x.imag = 0.0                                              # real rows stored complex: no bit 2
    flags = _run(host, tmp_path, "flags", [rows, 2 * length, 0, 2 * length, 1, base.size, 2],
                 np.array([specials.TINY]), base)
    assert not (np.bitwise_or.reduce(flags) & 4)
