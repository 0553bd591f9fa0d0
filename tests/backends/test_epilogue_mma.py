"""epilogue.cu's CRT sums on the tensor cores (CRT_MMA, NEW_KERNELS epilogue_mma; needs a CUDA
device): int8 residues of known integers (real, and complex products' Karatsuba three) lifted,
rounded once and written, checked against Python's integers and Fractions; ozaki.matmul through
the residue GEMM and the FFT with it, against the CPU's bits."""

import math
import random
from fractions import Fraction

import numpy as np
import pytest

import ozaki
from ozaki import crt
from tests import inputs
from tests.backends.builds import new_kernel_on
from tests.backends.test_fused import on_path
from tests.backends.test_residue_gemm import residue_gemm_backend
from tests.bits import same_bits

pytestmark = pytest.mark.gpu


def mma_on(monkeypatch):
    """NEW_KERNELS epilogue_mma on beside the defaults; returns the defines of every epilogue.cu
    build compiled from then on, so that a test can assert which builds took CRT_MMA."""
    return new_kernel_on(monkeypatch, "epilogue_mma", "epilogue.cu")


def rounded(value, e, dtype):
    """RN(value 2**e) in ``dtype`` and (float64) the residual RN(value 2**e - RN(value 2**e)), by
    Fractions; None for the residual where it is left unformed (NaN: below 2**-1021)."""
    x = Fraction(value) * Fraction(2) ** e
    r = _rn32(x) if dtype == np.float32 else float(x)      # (float(x) is RN to float64)
    unformed = 0 < abs(x) < Fraction(2) ** -1021
    return r, None if unformed else float(x - Fraction(r))


def _rn32(x):
    """RN(x) to float32 for a Fraction x within float32's range (ties to even), exactly."""
    if x == 0:
        return 0.0
    sign, a = (-1 if x < 0 else 1), abs(x)
    e = max(math.floor(math.log2(a)), -126)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)
    ulp = Fraction(2) ** (e - 23)
    q, rem = divmod(a, ulp)
    if 2 * rem > ulp or (2 * rem == ulp and q % 2):
        q += 1
    return sign * float(q * ulp)


def draws(rng, m, count):
    """Integers up to the lift's range, the extremes first: +-(P/2 - P/2**20), 0, +-1, then
    spread over every size with both signs."""
    P = math.prod(int(p) for p in crt.moduli(m))
    top = P * (2 ** 19 - 1) // 2 ** 20                      # floor(P/2 - P/2**20)
    draw = random.Random(int(rng.integers(2 ** 62)))
    head = [top, -top, 0, 1, -1]
    return (head + [draw.randint(-top, top) >> draw.randrange(P.bit_length()) for _ in range(count)])[:count]


def residues_of(values, m, shape):
    """int8 (m, *shape) symmetric residues of the integers ``values`` (C order over shape)."""
    ps = np.array([int(p) for p in crt.moduli(m)])
    r = inputs.symmetric_residues(np.array(values, dtype=object)[None, :], ps[:, None])
    return r.astype(np.int8).reshape((m,) + shape)


def karatsuba_residues(rng, m, re, im, shape):
    """int8 (m, *shape) stacks P1, P2, P3 of symmetric residues whose P1 - P2 and P3 - P1 - P2
    are the integers ``re`` and ``im`` mod each p (P1 drawn at random), as a complex product's
    residue GEMMs give them."""
    ps = np.array([int(p) for p in crt.moduli(m)])[:, None]
    P1 = inputs.symmetric_residues(rng.integers(-128, 128, (m, len(re))), ps)
    P2 = inputs.symmetric_residues(P1 - np.array(re, dtype=object)[None, :], ps)
    P3 = inputs.symmetric_residues(np.array(im, dtype=object)[None, :] + P1 + P2, ps)
    return tuple(P.astype(np.int8).reshape((m,) + shape) for P in (P1, P2, P3))


CASES = ["plain", "view", "stacked", "residual", "float32", "complex", "complex_residual", "complex_interleaved",
         "looped"]


@pytest.mark.parametrize("m", [1, 2, 13, 14, 16, 17, 25, 31, 32])
@pytest.mark.parametrize("case", CASES)
def test_exact_integers(rng, monkeypatch, m, case):
    """cupy_backend.epilogue with CRT_MMA: each output is its integer rounded once at 2**(beta_a +
    beta_b) (Fractions), subnormal results among them; a view of a wider stack (base 32 bytes in,
    the row stride past cols), a stack of matrices (STACKED), the residuals, float32 outputs;
    complex products (the Karatsuba three), with residuals, and stacks written as the column
    classes of one output (INTERLEAVED, the FFT's), once with a grid of four warps a column chunk
    (each warp's loop over the rows)."""
    import cupy
    from ozaki.backends import cupy_backend
    builds = mma_on(monkeypatch)
    complex_ = case.startswith("complex") or case == "looped"
    interleave = case in ("complex_interleaved", "looped")
    rows, cols, matrices = {"stacked": (15, 64, 3), "complex_interleaved": (12, 64, 4),
                            "looped": (21, 96, 3)}.get(case, (37, 64, 1))
    if case == "looped":                                  # 4 warps a column chunk: each loops over the rows
        monkeypatch.setattr(cupy_backend, "_epilogue_mma_grid", lambda rows, cols: ((cols // 32,), (128,)))
    parts = [draws(rng, m, rows * cols) for _ in range(2 if complex_ else 1)]
    if complex_:
        stacks = karatsuba_residues(rng, m, parts[0], parts[1], (rows, cols))
    else:
        stacks = (residues_of(parts[0], m, (rows, cols)),)
    if case == "view":
        wide = np.zeros((m, rows, cols + 64), dtype=np.int8)
        wide[:, :, 32:32 + cols] = stacks[0]
        wide[:, :, :32] = 77                              # bytes the kernel must not read into a sum
        wide[:, :, 32 + cols:] = -77
        on_device = (cupy.asarray(wide)[:, :, 32:32 + cols],)
    else:
        on_device = tuple(cupy.asarray(S) for S in stacks)
    ba = rng.integers(-1100, -100, rows)
    ba[:2] = -1150 + 20 * (m > 8)                         # some results subnormal
    bb = rng.integers(-80, 0, matrices * cols)
    dtype = np.float32 if case == "float32" else np.float64
    if dtype == np.float32:                               # float32's range, normal and subnormal
        ba = rng.integers(-100, -60, rows) - math.prod(int(p) for p in crt.moduli(m)).bit_length()
    residual = case.endswith("residual")
    got = cupy_backend.epilogue([on_device], [0], m, cupy.asarray(ba), cupy.asarray(bb), out_dtype=dtype,
                                residual=residual, matrices=matrices, interleave=interleave)
    assert builds[-1].get("CRT_MMA") == 1, builds[-1]
    nout = len(parts)
    outs = [cupy.asnumpy(g) for g in got[:nout]]
    rhos = [cupy.asnumpy(g) for g in got[nout:]] if residual else None
    matrix_rows = rows // matrices
    for o in range(nout):
        for i in range(rows):
            g, r = divmod(i, matrix_rows)
            for j in range(cols):
                e = int(ba[i] + bb[g * cols + j])
                want, want_rho = rounded(parts[o][i * cols + j], e, dtype)
                at = (r, j * matrices + g) if interleave else (i, j)
                assert same_bits(np.array(outs[o][at]), np.array(want, dtype=dtype)), (o, i, j, outs[o][at], want)
                if residual:
                    if want_rho is None:
                        assert np.isnan(rhos[o][at]), (o, i, j)
                    else:
                        assert rhos[o][at] == want_rho, (o, i, j, rhos[o][at], want_rho)


def test_other_stacks_keep_the_float64_sums(rng, monkeypatch):
    """Columns not a multiple of 32, a base off 4-byte alignment, 33 moduli, no rows, several
    slice pairs (real and complex): no CRT_MMA, and the same bits as the CPU."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    builds = mma_on(monkeypatch)
    cases = [(16, (20, 48), 0, 1, False), (16, (20, 64), 1, 1, False), (33, (8, 32), 0, 1, False),
             (16, (0, 64), 0, 1, False),
             (16, (8, 32), 0, 2, False), (16, (8, 32), 0, 2, True), (16, (20, 48), 0, 1, True)]
    for m, (rows, cols), offset, pairs, complex_ in cases:
        nin = 3 if complex_ else 1
        stacks = [rng.integers(-128, 128, (m, rows, cols)).astype(np.int8) for _ in range(pairs * nin)]
        products = [tuple(stacks[p * nin:(p + 1) * nin]) for p in range(pairs)]
        ba, bb = rng.integers(-900, -300, rows), rng.integers(-80, 0, cols)
        shifts = list(range(pairs))
        want = numpy_backend.epilogue(products, shifts, m, ba, bb)
        def on_device(stack):                             # offset: one byte past a 4-byte boundary
            buf = cupy.zeros((m, rows, cols + 4), dtype=cupy.int8)
            buf[:, :, offset:offset + cols] = cupy.asarray(stack)
            return buf[:, :, offset:offset + cols]
        got = cupy_backend.epilogue([tuple(on_device(s) for s in pair) for pair in products], shifts, m,
                                    cupy.asarray(ba), cupy.asarray(bb))
        assert "CRT_MMA" not in builds[-1], (m, rows, cols, offset, pairs, complex_)
        for w, g in zip(want, got):
            assert same_bits(w, cupy.asnumpy(g)), (m, rows, cols, offset, pairs, complex_)


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_same_bits_through_the_residue_gemm(rng, monkeypatch, mode):
    """ozaki.matmul on the residue GEMM's path with epilogue_mma on gives the CPU's bits: wide
    exponents with zeros and specials, a stack with a broadcast operand, float32, complex, 8 to
    32 moduli; one slice pair of at most 32 moduli (fast and accurate) takes CRT_MMA, exact mode's
    pairs do not."""
    builds = mma_on(monkeypatch)
    A = inputs.sprinkle_specials(rng, inputs.wide(rng, (96, 300), 30))
    B = inputs.sprinkle_zeros(rng, inputs.wide(rng, (300, 128), 30))
    S = inputs.normal(rng, (5, 64, 100))
    T = inputs.normal(rng, (1, 100, 96))
    Z = inputs.normal(rng, (40, 100)) + 1j * inputs.wide(rng, (40, 100), 20)
    W = inputs.normal(rng, (100, 64)) - 1j * inputs.normal(rng, (100, 64))
    cases = [(A, B, {}), (S, T, {}), (A.astype(np.float32), B.astype(np.float32), {}), (Z, W, {})]
    if mode != "exact":
        cases += [(A, B, {"num_moduli": nm}) for nm in (8, 17, 32)]
    for X, Y, kw in cases:
        del builds[:]
        assert same_bits(ozaki.matmul(X, Y, mode=mode, **kw), on_path("cutlass", X, Y, mode=mode, **kw)), \
            (X.shape, Y.shape, kw)
        taken = [b for b in builds if b.get("CRT_MMA") == 1]
        if mode == "exact":
            assert not taken
        else:
            assert taken, (X.shape, kw, builds)


def test_fft_same_bits(rng, monkeypatch):
    """ozaki.fft with epilogue_mma on gives the CPU's bits: a batch of transforms whose complex
    products take CRT_MMA (the quarter turns' interleaved stacks among them where they run),
    and a cube."""
    import cupy
    from ozaki import fft as offt
    residue_gemm_backend()                  # "auto" takes the residue GEMM once it is built
    builds = mma_on(monkeypatch)
    batch = inputs.normal(rng, (64, 1024)) + 1j * inputs.normal(rng, (64, 1024))
    cube = inputs.normal(rng, (32, 32, 64)) - 1j * inputs.normal(rng, (32, 32, 64))
    for x, transform in ((batch, offt.fft), (cube, offt.fftn)):
        del builds[:]
        cpu = transform(x)
        gpu = cupy.asnumpy(transform(cupy.asarray(x)))
        assert same_bits(cpu, gpu), x.shape
        assert any(b.get("CRT_MMA") == 1 and b.get("COMPLEX") == 1 for b in builds), (x.shape, builds)
