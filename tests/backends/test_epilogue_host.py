"""kernels/epilogue.cu built for the host with a C++ compiler (one thread, one block: the
grid-stride loop covers every output in turn) and checked bit for bit against
numpy_backend.epilogue: the CRT of each slice pair, the Kulisch sum at the pairs' shifts
and the one rounding, with the rounding residuals (RESIDUAL).  CI has no GPU, so this is
where the GPU epilogue's arithmetic is checked on every run (test_cupy_backend's
test_epilogue_kernel makes the same comparison on a device).

Each configuration is one build, with the defines and kernel arguments that
cupy_backend.epilogue passes: real and complex (COMPLEX: the Karatsuba P1, P2, P3 of each
pair), int8 residues / int32 / int64 products, one slice pair (SINGLE_PAIR, the products
as parameters) and several (a table of pointers and the pairs' shifts), 2 to 49 moduli,
float64 and float32 outputs.  The inputs are adversarial: products that are large
representatives of their residues (near 2**31 for int32, 2**50 for int64: the GEMMs'
range, which the kernel's float64 arithmetic requires), values up to the CRT bound, a
zero row of literal zeros and one of nonzero products of zero values, and exponents that
put outputs in the subnormal range, past the overflow threshold and around both.  The
products lie at padded row and modulus strides (the padding holds values the kernel must
not read), and the outputs at a padded row stride, a complex result's parts interleaved
in one buffer (out_step 2), the padding checked untouched.  Skipped when no C++ compiler
is found.
"""

import subprocess

import numpy as np
import pytest

from ozaki import crt
from ozaki.backends import numpy_backend
from ozaki.backends.kernel_tables import constant_tables
from tests import inputs
from tests.backends import host_build

# host_build.PRELUDE and the read-only cache loads (EPILOGUE_BLOCKS) as plain loads
SHIMS = host_build.PRELUDE + r"""
template <typename T> static inline T __ldg(const T* p) { return *p; }
"""

MAIN = r"""
#include "epilogue.cu"
template <typename T> static std::vector<T> load(FILE* f, size_t n) {
    std::vector<T> v(n);
    if (fread(v.data(), sizeof(T), n, f) != n) exit(2);
    return v;
}
// argv: input file, output file.  Input: rows cols npairs mod_stride row_stride size out_stride
// out_step out1 matrices (int64), npairs * NIN stacks of size PROD_T, the shifts (int32), beta_a,
// beta_b (matrices * cols) (int64), the output buffer (rows x out_stride OUT_T) and the residuals'
// (double) as they start.  Output: the two buffers as the kernel left them.
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    std::vector<long long> h = load<long long>(in, 10);
    long long rows = h[0], cols = h[1], size = h[5], n_out = rows * h[6];
    int npairs = (int)h[2];
    std::vector<std::vector<PROD_T>> stacks;
    for (int s = 0; s < npairs * NIN; ++s) stacks.push_back(load<PROD_T>(in, size));
    std::vector<const PROD_T*> table;
    for (auto& s : stacks) table.push_back(s.data());
    std::vector<int> shifts = load<int>(in, npairs);
    std::vector<long long> beta_a = load<long long>(in, rows), beta_b = load<long long>(in, h[9] * cols);
    std::vector<OUT_T> C = load<OUT_T>(in, n_out);
    std::vector<double> rho = load<double>(in, n_out);
    // As cupy_backend.epilogue: the first three stacks as parameters, and with several pairs
    // the table of all of them and the shifts (null with one pair, which reads neither).
    const PROD_T* one[3] = {nullptr, nullptr, nullptr};
    for (size_t s = 0; s < 3 && s < table.size(); ++s) one[s] = table[s];
    bool tabled = npairs > 1;
#ifdef RESIDUAL
    double *rho0 = rho.data(), *rho1 = rho.data() + h[8];
#else
    double *rho0 = nullptr, *rho1 = nullptr;
#endif
    epilogue(one[0], one[1], one[2], tabled ? table.data() : nullptr, npairs, rows, cols, h[3], h[4],
             tabled ? shifts.data() : nullptr, beta_a.data(), beta_b.data(), C.data(), C.data() + h[8],
             h[6], h[7], rho0, rho1, rows / h[9]);
    fwrite(C.data(), sizeof(OUT_T), C.size(), out);
    fwrite(rho.data(), 8, rho.size(), out);
    fclose(in); fclose(out);
    return 0;
}
"""

PROD_T = {np.dtype(np.int8): "signed char", np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
OUT_T = {np.dtype(np.float64): "double", np.dtype(np.float32): "float"}

# (complex, product dtype, slice pairs, moduli, output dtype, residual): every product
# type real and complex, with one pair and several, each output type and RESIDUAL in both
# states, spread over the moduli counts (2: one limb; 14-17: the fast/accurate range; 49:
# the table's last, eleven limbs).
CONFIGS = [(False, np.int32, 1, 16, np.float64, False), (False, np.int32, 2, 2, np.float32, True),
           (False, np.int64, 1, 17, np.float32, False), (False, np.int64, 3, 14, np.float64, True),
           (False, np.int8, 1, 14, np.float64, True), (False, np.int8, 2, 17, np.float32, False),
           (True, np.int32, 1, 14, np.float32, True), (True, np.int32, 2, 16, np.float64, False),
           (True, np.int64, 1, 49, np.float64, True), (True, np.int64, 3, 2, np.float64, True),
           (True, np.int8, 1, 16, np.float64, False), (True, np.int8, 2, 17, np.float32, True)]
# VEC adjacent outputs a thread (one slice pair; each with VEC 1 above too): the product
# types, real and complex, RESIDUAL in both states, up to the 22 moduli the host builds VEC 4 for.
CONFIGS = [c + (1,) for c in CONFIGS] + [
    (False, np.int32, 1, 14, np.float64, True, 4), (False, np.int64, 1, 22, np.float32, False, 4),
    (False, np.int8, 1, 16, np.float64, False, 2), (True, np.int32, 1, 16, np.float64, True, 2),
    (True, np.int8, 1, 14, np.float32, False, 2), (True, np.int64, 1, 15, np.float64, False, 2)]
# STACKED: the rows a stack of matrices, each with its own columns' exponents (the residue
# GEMM's stacks in one launch): int8 residues real and complex, one pair, VEC 1 and 2.
CONFIGS = [c + (1,) for c in CONFIGS] + [
    (False, np.int8, 1, 16, np.float64, False, 1, 4), (True, np.int8, 1, 14, np.float64, True, 2, 4),
    (False, np.int8, 1, 15, np.float32, True, 2, 2)]
# INTERLEAVED: a stack's matrices the column classes of one output (scheme._quarter_product's
# four products of a DFT): complex int8 residues at the FFT's 25 moduli and with residuals,
# and a real one.
CONFIGS = [c + (False,) for c in CONFIGS] + [
    (True, np.int8, 1, 25, np.float64, False, 1, 4, True), (True, np.int8, 1, 16, np.float64, True, 1, 4, True),
    (False, np.int8, 1, 14, np.float32, False, 1, 2, True)]
# int8 residues' conversion and reduction (BYTE_CONVERT, BYTE_REDUCE: 1 and 1 above): the
# float64 trick of wider products, and complex differences left unreduced
CONFIGS = [c + ((),) for c in CONFIGS] + [
    (True, np.int8, 1, 25, np.float64, True, 1, 1, False, (("BYTE_CONVERT", 0),)),
    (False, np.int8, 2, 16, np.float64, False, 1, 1, False, (("BYTE_CONVERT", 0),)),
    (True, np.int8, 1, 25, np.float64, False, 1, 4, True, (("BYTE_REDUCE", 0),)),
    (True, np.int8, 2, 17, np.float32, True, 1, 1, False, (("BYTE_REDUCE", 0),)),
    # two complex outputs a thread at the FFT's 25 moduli, differences unreduced (device_run s20a)
    (True, np.int8, 1, 25, np.float64, False, 2, 1, False, (("BYTE_REDUCE", 0),)),
    (True, np.int8, 1, 25, np.float64, True, 2, 4, False, (("BYTE_REDUCE", 0),))]
# TWO_WORDS (NEW_KERNELS two_words): one pair's value rounded from two 64-bit words where P <
# 2**128 (16 moduli or fewer); with residuals, 17 moduli or two pairs the limbs' rounding stays
TWO_WORDS = (("TWO_WORDS", 1),)
CONFIGS += [
    (False, np.int8, 1, 16, np.float64, False, 4, 1, False, TWO_WORDS),
    (True, np.int8, 1, 16, np.float32, False, 2, 1, False, TWO_WORDS),
    (True, np.int8, 1, 16, np.float64, False, 1, 4, True, TWO_WORDS),
    (False, np.int64, 1, 8, np.float64, False, 1, 1, False, TWO_WORDS),
    (False, np.int32, 1, 14, np.float64, True, 4, 1, False, TWO_WORDS),
    (False, np.int8, 1, 17, np.float64, False, 1, 1, False, TWO_WORDS),
    (True, np.int8, 2, 16, np.float64, False, 1, 1, False, TWO_WORDS)]
# ROUND_CONVERT (NEW_KERNELS round_convert): normal results rounded by the conversion instruction
# (rounding.cuh rounded_window), with two words and with the limbs' walk, real and complex, float32
ROUND_CONVERT = (("ROUND_CONVERT", 1),)
CONFIGS += [
    (False, np.int8, 1, 16, np.float64, False, 4, 1, False, TWO_WORDS + ROUND_CONVERT),
    (True, np.int8, 1, 16, np.float32, False, 2, 1, False, TWO_WORDS + ROUND_CONVERT),
    (True, np.int8, 1, 25, np.float64, False, 1, 4, True, ROUND_CONVERT),
    (False, np.int32, 1, 20, np.float32, False, 2, 1, False, ROUND_CONVERT),
    (True, np.int8, 2, 17, np.float64, True, 1, 1, False, ROUND_CONVERT)]
# The pairs' shifts in limbs: out of order and with a gap, so a pair read at another's
# shift (or all at one) lands elsewhere.
SHIFTS = {1: [0], 2: [2, 0], 3: [1, 3, 0]}


def config_id(c):
    complex_, dtype, pairs, m, out_dtype, residual, vec, matrices, interleave, extra = c
    return (f"{'complex' if complex_ else 'real'}-{np.dtype(dtype).name}-pairs{pairs}-m{m}-"
            f"{np.dtype(out_dtype).name}{'-rho' if residual else ''}{f'-vec{vec}' if vec > 1 else ''}"
            f"{f'-stack{matrices}' if matrices > 1 else ''}{'-interleaved' if interleave else ''}"
            + "".join(f"-{k.lower()}{v}" for k, v in extra))


def defines(complex_, dtype, pairs, m, out_dtype, residual, vec, matrices, interleave, extra):
    """cupy_backend.epilogue's compile-time defines."""
    LP = crt.crt_constants(m).L
    d = [("PROD_T", PROD_T[np.dtype(dtype)]), ("NMOD", m), ("LP", LP),
         ("LACC", LP if pairs == 1 else LP + max(SHIFTS[pairs]) + 1), ("OUT_T", OUT_T[np.dtype(out_dtype)])]
    d += [("SINGLE_PAIR", 1)] * (pairs == 1) + [("COMPLEX", 1)] * complex_ + [("RESIDUAL", 1)] * residual
    d += [("VEC", vec)] * (vec > 1) + [("STACKED", 1)] * (matrices > 1) + [("INTERLEAVED", matrices)] * interleave
    # (one slice pair of int8 residues: the launch bounds cupy_backend.EPILOGUE_BLOCKS sets, which
    # the host drops, and the __ldg loads that come with them)
    d += [("EPILOGUE_BLOCKS", 4)] * (pairs == 1 and np.dtype(dtype) == np.int8) + list(extra)
    return "".join(f"#define {k} {v}\n" for k, v in d)


@pytest.fixture(scope="module", params=CONFIGS, ids=[config_id(c) for c in CONFIGS])
def host(request, tmp_path_factory):
    source = SHIMS + defines(*request.param) + constant_tables(request.param[3], crt=True) + MAIN
    return request.param, host_build.build(tmp_path_factory, source, "epilogue_" + config_id(request.param))


def representatives(rng, residues, ps, top):
    """A representative of each residue (m, size) mod p within top of zero: random multiples
    of p added, and about a fifth of the entries at +-top (the largest multiple that fits)."""
    ps = ps[:, None]
    r = residues % ps
    room = (top - 256) // ps
    out = r + rng.integers(-room, room + 1, r.shape) * ps
    high, low = room * ps + r, -room * ps - (-r) % ps
    pick = rng.random(r.shape)
    out = np.where(pick < 0.1, high, np.where(pick < 0.2, low, out))
    return out


def ties(rng, bits, prec):
    """Four values at a tie of prec bits, below 2**(bits - 2): a tie to even that rounds down,
    one that rounds up, and the two with a 1 in the last bit (the sticky bit, 32 bits or
    more below the tie's once it spans four limbs: round_to's window holds three), which
    both round up; signs at random.  None where the values would be too narrow."""
    sh = bits - 2 - (prec + 1)
    if sh < 1:
        return None
    q = int(rng.integers(2 ** (prec - 2), 2 ** (prec - 1))) * 2          # even, prec bits
    return [int(rng.choice([-1, 1])) * (((q + odd) << (sh + 1)) + (1 << sh) + sticky)
            for odd, sticky in ((0, 0), (1, 0), (0, 1), (1, 1))]


def values(rng, m, shape):
    """Integers up to the CRT bound of m moduli (object array), half of them at full size, the
    rest shifted down by up to the bound's width; columns 0-3: bound, -bound, 0, bound - 1;
    4-11: float64's and float32's ties (ties)."""
    bound = crt.crt_bound(m)
    bits = bound.bit_length()
    x = rng.integers(-2 ** 62, 2 ** 62, shape)
    s = np.maximum(rng.integers(-bits, bits, shape), 0)
    v = np.array([int(a) * bound // 2 ** 62 >> int(b) for a, b in zip(x.flat, s.flat)], dtype=object).reshape(shape)
    v[:, :4] = [bound, -bound, 0, bound - 1]
    for col, prec in ((4, 53), (8, 24)):
        for r in range(shape[0]):
            t = ties(rng, bits, prec)
            if t is not None:
                v[r, col:col + 4] = t
    return v


def pair_products(rng, m, shape, dtype, complex_):
    """One slice pair's product stacks (m, rows, cols) as int64: (P,) or the Karatsuba
    (P1, P2, P3) with P1 - P2 and P3 - P1 - P2 the values.  Row 0: every product zero (a
    zero row of the operand); row 1: the values zero, the products not (any representative)."""
    ps = np.array(crt.moduli(m), dtype=object)[:, None]
    parts = [values(rng, m, shape) for _ in range(2 if complex_ else 1)]
    for v in parts:
        v[1] = 0
    flat = [np.tile(v.reshape(1, -1), (m, 1)) for v in parts]
    if dtype == np.int8:             # the residue GEMM's symmetric residues
        if complex_:
            P1 = inputs.symmetric_residues(rng.integers(-128, 128, flat[0].shape), ps)
            P2 = inputs.symmetric_residues(P1 - flat[0], ps)
            stacks = [P1, P2, inputs.symmetric_residues(flat[1] + P1 + P2, ps)]
        else:
            stacks = [inputs.symmetric_residues(flat[0], ps)]
    else:
        top = 2 ** 31 - 1 if dtype == np.int32 else 2 ** 50
        psi = np.array(crt.moduli(m), dtype=np.int64)

        def reps(r):
            return representatives(rng, (r % ps).astype(np.int64), psi, top)

        if complex_:
            P1 = reps(rng.integers(-2 ** 40, 2 ** 40, flat[0].shape).astype(object))
            P2 = reps(P1 - flat[0])
            stacks = [P1, P2, reps(flat[1] + P1 + P2)]
        else:
            stacks = [reps(flat[0])]
    stacks = [np.asarray(P, dtype=np.int64).reshape((m,) + shape) for P in stacks]
    for P in stacks:
        P[:, 0] = 0
    # the values as the products give them (a check of this helper, not of the kernel)
    got = [stacks[0]] if not complex_ else [stacks[0] - stacks[1], stacks[2] - stacks[0] - stacks[1]]
    for g, v in zip(got, parts):
        v[0] = 0
        assert ((g.astype(object) - v[None]) % ps[:, :, None] == 0).all()
    return tuple(P.astype(dtype) for P in stacks)


def exponents(rng, m, pairs, shape, out_dtype):
    """beta_a, beta_b: rows in turn at the subnormal range (the full-size outputs' top bits
    from 8 below the least subnormal to 8 above the least normal), at the overflow
    threshold (3 bits below to 5 above), at 1 and anywhere (-1300..1100); the columns a few
    bits apart.  The n-th row of a kind takes the n-th part of its kind's range, so every
    draw has rows at both ends."""
    bits = crt.crt_bound(m).bit_length() + 32 * max(SHIFTS[pairs])    # the top pair's largest
    prec, lsb_min, emax = (53, -1074, 1024) if out_dtype == np.float64 else (24, -149, 128)
    rows, cols = shape
    ba = np.empty(rows, dtype=np.int64)
    for i in range(rows):
        kind, n = (i + 2) % 4, i // 4          # rows 0 and 1 (the zero rows) take the last two kinds
        if kind == 0:
            part = (prec + 16) // 4
            ba[i] = lsb_min - bits - 8 + n * part + rng.integers(0, part)
        elif kind == 1:
            ba[i] = emax + 1 - bits - 3 + 2 * n + rng.integers(0, 3)
        elif kind == 2:
            ba[i] = -bits + rng.integers(-30, 30)
        else:
            ba[i] = rng.integers(-1300, 1100)
    return ba, rng.integers(-6, 7, cols).astype(np.int64)


def run(host, tmp_path, products, shifts, ba, bb):
    """The kernel's outputs [C] or [Re, Im] (and their residuals with RESIDUAL).  The stacks
    lie gap[0] elements apart a row and gap[1] a modulus beyond their size (multiples of
    VEC, as the host requires for its aligned loads), the padding holding large values
    (read, they would change the sums); the outputs lie gap[2] elements apart a row beyond
    their step * cols, the output buffers full of a NaN pattern that must stay where
    nothing is written."""
    (complex_, dtype, pairs, m, out_dtype, residual, vec, matrices, interleave, _), exe = host
    gap = (3, 5, 4) if vec == 1 else (vec, 2 * vec, 4)
    rows, cols = ba.size, bb.size // matrices
    # interleaved: the outputs (rows / matrices, cols * matrices), in the buffer's first rows
    out_rows, out_cols = (rows // matrices, cols * matrices) if interleave else (rows, cols)
    row_stride = cols + gap[0]
    mod_stride = rows * row_stride + gap[1]
    size = m * mod_stride
    junk = 127 if dtype == np.int8 else (2 ** 31 - 1 if dtype == np.int32 else 2 ** 50)
    step = 2 if complex_ else 1
    out_stride = step * out_cols + gap[2]
    out_bits = np.uint64 if out_dtype == np.float64 else np.uint32
    sentinel = np.array(0x7FF4DEAD if out_dtype == np.float32 else 0x7FF4DEADBEEF0001, dtype=out_bits)
    C0 = np.full((rows, out_stride), sentinel, dtype=out_bits).view(out_dtype)
    R0 = np.full((rows, out_stride), 0x7FF4DEADBEEF0001, dtype=np.uint64).view(np.float64)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(src, "wb") as f:
        np.array([rows, cols, pairs, mod_stride, row_stride, size, out_stride, step, step - 1, matrices],
                 dtype=np.int64).tofile(f)
        for pair in products:
            for P in pair:
                buf = np.full(size, junk, dtype=dtype)
                buf.reshape(m, mod_stride)[:, :rows * row_stride].reshape(m, rows, row_stride)[:, :, :cols] = P
                buf.tofile(f)
        np.array(shifts, dtype=np.int32).tofile(f)
        ba.tofile(f)
        bb.tofile(f)
        C0.tofile(f)
        R0.tofile(f)
    subprocess.run([exe, str(src), str(dst)], check=True)
    raw = np.fromfile(dst, dtype=np.uint8)
    nC = C0.nbytes
    C = raw[:nC].view(out_dtype).reshape(rows, out_stride)
    R = raw[nC:].view(np.float64).reshape(rows, out_stride)
    # the padding columns and rows and, unless RESIDUAL, the whole residual buffer are untouched
    assert C[:, step * out_cols:].tobytes() == C0[:, step * out_cols:].tobytes()
    assert R[:, step * out_cols:].tobytes() == R0[:, step * out_cols:].tobytes()
    assert C[out_rows:].tobytes() == C0[out_rows:].tobytes() and R[out_rows:].tobytes() == R0[out_rows:].tobytes()
    if not residual:
        assert R.tobytes() == R0.tobytes()
    outs = [C[:out_rows, o:step * out_cols:step] for o in range(step)]
    return outs + [R[:out_rows, o:step * out_cols:step] for o in range(step)] if residual else outs


def same(want, got):
    """The same bits, NaN (a residual not formed) matched by position only: its sign and
    payload are the platform's."""
    want, got = np.asarray(want), np.asarray(got)
    nan = np.isnan(want)
    bits = np.uint64 if want.dtype == np.float64 else np.uint32
    return (want.dtype == got.dtype and want.shape == got.shape and np.array_equal(nan, np.isnan(got))
            and np.array_equal(np.where(nan, 0, want).view(bits), np.where(nan, 0, got).view(bits)))


def test_epilogue_matches_numpy(host, tmp_path, rng):
    complex_, dtype, pairs, m, out_dtype, residual, vec, matrices, interleave, _ = host[0]
    shape = (16, 20)              # columns 12-19 drawn at random (values)
    products = [pair_products(rng, m, shape, dtype, complex_) for _ in range(pairs)]
    shifts = SHIFTS[pairs]
    ba, bb = exponents(rng, m, pairs, shape, out_dtype)
    if matrices > 1:              # each matrix's columns their own exponents, far apart, and its
        # rows' exponents the other way, so each matrix's outputs keep the draw's ranges (with
        # the rows' alone shifted, a stack of four had no subnormal output about one draw in six)
        apart = [40 * g * (-1) ** g for g in range(matrices)]
        bb = np.concatenate([bb + d for d in apart])
        ba = ba - np.repeat(apart, shape[0] // matrices)
    want = numpy_backend.epilogue(products, shifts, m, ba, bb, out_dtype, residual, matrices=matrices)
    if matrices > 1:              # numpy's stacked epilogue is its epilogue per matrix
        rows = shape[0] // matrices
        each = [numpy_backend.epilogue([tuple(P[:, g * rows:(g + 1) * rows] for P in pair) for pair in products],
                                       shifts, m, ba[g * rows:(g + 1) * rows], bb[g * shape[1]:(g + 1) * shape[1]],
                                       out_dtype, residual) for g in range(matrices)]
        for o, w in enumerate(want):
            assert same(w, np.concatenate([e[o] for e in each]))
    if interleave:                # numpy's interleaved outputs are its stacked ones, rearranged
        woven = numpy_backend.epilogue(products, shifts, m, ba, bb, out_dtype, residual, matrices=matrices,
                                       interleave=True)
        rows = shape[0] // matrices
        for w, v in zip(want, woven):
            assert v.shape == (rows, shape[1] * matrices)
            assert all(same(w[g * rows + r, j], v[r, j * matrices + g]) for g in range(matrices)
                       for r in range(rows) for j in range(shape[1]))
        # and the same written into views of a larger result (scheme.product_finite's row
        # blocks of a quarter-turn product), the rest of it untouched
        width = shape[1] * matrices
        whole = [np.full((rows + 2, width + 3), np.nan, dtype=v.dtype) for v in woven]
        views = [w[1:rows + 1, 2:width + 2] for w in whole]
        into = numpy_backend.epilogue(products, shifts, m, ba, bb, out_dtype, residual, views, matrices=matrices,
                                      interleave=True)
        assert all(i is v for i, v in zip(into, views)) and all(same(v, w) for v, w in zip(views, woven))
        for w in whole:
            assert np.isnan(w[[0, -1]]).all() and np.isnan(w[:, [0, 1, -1]]).all()
    stacked, want = want, woven if interleave else want
    got = run(host, tmp_path, products, shifts, ba, bb)
    assert len(got) == len(want) == (2 if complex_ else 1) * (2 if residual else 1)
    for w, g in zip(want, got):
        assert same(w, g)
    # the draw reached what it is for: zeros, subnormals, infinities and ordinary outputs
    C = np.concatenate([np.abs(w).ravel() for w in stacked[:2 if complex_ else 1]]).astype(np.float64)
    tiny = np.finfo(out_dtype).tiny
    assert (C == 0).any() and np.isinf(C).any() and ((C > 0) & (C < tiny)).any()
    assert ((C >= tiny) & np.isfinite(C)).sum() > C.size // 8
    assert all((w[:2] == 0).all() for w in stacked[:2 if complex_ else 1])     # the zero rows


@pytest.mark.parametrize("pairs,m,residual,taken", [(1, 16, False, True), (1, 8, False, True), (1, 17, False, False),
                                                     (1, 16, True, False), (2, 16, False, False)])
def test_two_words_where_p_fits(tmp_path_factory, pairs, m, residual, taken):
    """TWO_WORDS takes round_two_words (ROUND_TWO_WORDS) exactly for one slice pair without
    residuals and P < 2**128: the configurations above with TWO_WORDS run the path they name."""
    assert (crt.crt_constants(m).P.bit_length() <= 128) == (m <= 16)
    config = (False, np.int8, pairs, m, np.float64, residual, 1, 1, False, TWO_WORDS)
    source = (SHIMS + defines(*config) + constant_tables(m, crt=True) + '#include "kulisch.cuh"\n'
              + "int main() {\n#ifdef ROUND_TWO_WORDS\n puts(\"1\");\n#else\n puts(\"0\");\n#endif\n}\n")
    exe = host_build.build(tmp_path_factory, source, f"two_words_{pairs}_{m}_{int(residual)}")
    assert subprocess.run([exe], capture_output=True, text=True, check=True).stdout.strip() == str(int(taken))
