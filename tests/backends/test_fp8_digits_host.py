"""kernels/fp8_digits.cu built for the host with a C++ compiler (one thread, one block: the
loops cover every row and column in turn) and checked against the fp8 substrate's numpy
steps: ``digit_operands`` against numpy_backend.fp8_operands (fp8.split_digits) mapped
through fp8.E4M3_CODES, with the padding rows and columns zero bytes (e4m3 +0), over every
int8 residue, at a padded input row stride, several matrices and both sides' orders;
``recombine`` against fp8.recombine (int32 and int64 outputs, written or added to, at
padded row and matrix strides, the digit products at the extremes a K chunk allows).
CI has no GPU: this is where the kernels' arithmetic is checked on every run
(test_cupy_backend's fp8 tests run them on a device).  Skipped without a C++ compiler.
"""

import subprocess

import numpy as np
import pytest

from ozaki.backends import numpy_backend
from ozaki.gemm import fp8
from tests.backends import host_build

MAIN = r"""
#include "fp8_digits.cu"
template <typename T> static std::vector<T> load(FILE* f, size_t n) {
    std::vector<T> v(n);
    if (n && fread(v.data(), sizeof(T), n, f) != n) exit(2);
    return v;
}
// argv: input file, output file.  Input: 9 int64 (what: 0 digit_operands, 1 recombine, then
// its sizes), then the arrays; output: the arrays the kernel wrote.
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    std::vector<long long> h = load<long long>(in, 9);
    if (h[0] == 0) {         // ld m batch k m_pad kpad order_xy, then r (batch * m * ld bytes)
        long long ld = h[1], m = h[2], batch = h[3], k = h[4], m_pad = h[5], kpad = h[6];
        std::vector<signed char> r = load<signed char>(in, batch * m * ld);
        size_t n = batch * m_pad * kpad;
        std::vector<unsigned int> X(n / 4, 0xDEADBEEF), Y(n / 4, 0xDEADBEEF), XY(n / 2, 0xDEADBEEF);
        digit_operands(r.data(), ld, m, batch, k, m_pad, kpad, (int)h[7], X.data(), Y.data(), XY.data());
        fwrite(X.data(), 4, X.size(), out); fwrite(Y.data(), 4, Y.size(), out); fwrite(XY.data(), 4, XY.size(), out);
    } else {                 // batch m n mp np out_matrix out_row, then XX XY YY, out
        long long batch = h[1], m = h[2], n = h[3], mp = h[4], np_ = h[5], om = h[6], orow = h[7];
        size_t ni = batch * mp * np_, no = batch * om;
        std::vector<float> XX = load<float>(in, ni), XY = load<float>(in, ni), YY = load<float>(in, ni);
        std::vector<OUT_T> o = load<OUT_T>(in, no);
        recombine(XX.data(), XY.data(), YY.data(), mp * np_, np_, batch, m, n, o.data(), om, orow);
        fwrite(o.data(), sizeof(OUT_T), o.size(), out);
    }
    fclose(in); fclose(out);
    return 0;
}
"""

CONFIGS = [(np.int32, False), (np.int32, True), (np.int64, False), (np.int64, True)]


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"{np.dtype(t).name}-{'add' if a else 'set'}" for t, a in CONFIGS])
def host(request, tmp_path_factory):
    out_t, add = request.param
    codes = ", ".join(str(int(fp8.E4M3_CODES[v & 0xFF])) for v in range(-16, 17))
    defines = (f"#define E4M3_INIT {{{codes}}}\n#define OUT_T {'int' if out_t == np.int32 else 'long long'}\n"
               + ("#define ADD 1\n" if add else ""))
    return request.param, host_build.build(tmp_path_factory, host_build.PRELUDE + defines + MAIN,
                                           f"fp8_digits_{np.dtype(out_t).name}_{int(add)}")


def run(exe, tmp_path, header, arrays, out_bytes):
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.array(header + [0] * (9 - len(header)), dtype=np.int64).tofile(f)
        for a in arrays:
            np.ascontiguousarray(a).tofile(f)
    subprocess.run([exe, str(src), str(dst)], check=True)
    raw = np.fromfile(dst, dtype=np.uint8)
    assert raw.size == out_bytes
    return raw


@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("batch,m,k", [(1, 256, 1), (1, 5, 37), (3, 17, 16), (2, 1, 100)])
def test_digit_operands(host, tmp_path, rng, side, batch, m, k):
    """e4m3 bytes of numpy's (X, XY, Y) digits, each matrix zero-padded; every int8 value
    appears (the first row walks -128..127 where k allows)."""
    exe = host[1]
    ld = k + 7                                                  # a padded input row
    r = rng.integers(-128, 128, (batch * m, ld)).astype(np.int8)
    walk = np.arange(-128, 128).astype(np.int8)
    r.reshape(-1)[:min(256, r.size)] = walk[:min(256, r.size)]
    m_pad, kpad = -(-m // 16) * 16, -(-k // 16) * 16
    raw = run(exe, tmp_path, [0, ld, m, batch, k, m_pad, kpad, int(side == "a")], [r], 4 * batch * m_pad * kpad)
    n = batch * m_pad * kpad
    X, Y, XY = raw[:n].reshape(batch, m_pad, kpad), raw[n:2 * n].reshape(batch, m_pad, kpad), \
        raw[2 * n:].reshape(batch, m_pad, 2 * kpad)
    codes = fp8.E4M3_CODES
    x, xy, y = numpy_backend.fp8_operands(r[:, :k], side, batch)

    def padded(D, width):                     # numpy's digits as e4m3 bytes, padded with +0
        want = np.zeros((batch, m_pad, width), dtype=np.uint8)
        want[:, :m, :D.shape[-1]] = codes[D[0].view(np.uint8)].reshape(batch, m, -1)
        return want

    assert np.array_equal(X, padded(x, kpad)) and np.array_equal(Y, padded(y, kpad))
    first, second = (x, y) if side == "a" else (y, x)
    want = np.concatenate([padded(first, kpad), padded(second, kpad)], axis=2)
    assert np.array_equal(XY, want)
    assert np.array_equal(xy[0], np.concatenate([first[0], second[0]], axis=1))   # numpy's own layout
    assert 0x7F not in X and 0x7F not in Y                          # no byte outside the digits


@pytest.mark.parametrize("batch,m,n", [(1, 16, 16), (1, 5, 9), (3, 7, 20)])
def test_recombine(host, tmp_path, rng, batch, m, n):
    """256 XX + 16 XY + YY, exact, written (or added) at padded strides; the digit products
    at the extremes of a K chunk (|XX|, |YY| <= 64 K_CHUNK, |XY| <= 128 K_CHUNK) where the
    output type holds the sum, the output's padding untouched."""
    (out_t, add), exe = host
    mp, np_ = m + 3, n + 5                                     # the products' padding
    top = 64 * fp8.K_CHUNK
    if out_t == np.int32:                 # the sum and what it is added to fit int32
        top = (2 ** 31 - 1 - 2 ** 20) // (256 + 32 + 1)
    XX, XY, YY = (rng.integers(-top * s, top * s + 1, (batch, mp, np_)).astype(np.float32)
                  for s in (1, 2, 1))
    XX[0, 0, :3], XY[0, 0, :3], YY[0, 0, :3] = [top, -top, top], [2 * top, -2 * top, 0], [top, -top, -top]
    XX, XY, YY = (np.round(P).astype(np.float32) for P in (XX, XY, YY))
    om, orow = (m + 1) * (n + 2), n + 2                          # the output's padding
    out = rng.integers(-2 ** 20, 2 ** 20, batch * om).astype(out_t)
    raw = run(exe, tmp_path, [1, batch, m, n, mp, np_, om, orow], [XX, XY, YY, out], out.nbytes)
    got = raw.view(out_t).reshape(batch, m + 1, n + 2)
    start = out.reshape(batch, m + 1, n + 2)
    want = start.astype(np.int64).copy()
    exact = fp8.recombine(XX[:, :m, :n], XY[:, :m, :n], YY[:, :m, :n])
    want[:, :m, :n] = exact + (want[:, :m, :n] if add else 0)
    assert np.array_equal(got.astype(np.int64), want)
    view = start.copy()                                        # numpy's step gives the same
    numpy_backend.fp8_recombine(XX, XY, YY, view[:, :m, :n], add=add)
    assert np.array_equal(view.astype(np.int64), want)
