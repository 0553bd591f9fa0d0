"""The fused kernel (kernels/fused.cu) gives the CPU backend's bits, on every GPU path: fused, the cuBLAS
products and the CUTLASS residue GEMM (needs a CUDA device)."""

import numpy as np
import pytest

import ozaki
from ozaki import crt, reference, scheme
from tests import inputs
from tests.bits import same_bits
from tests.backends.builds import new_kernel_on

pytestmark = pytest.mark.gpu


def on_path(path, A, B, **kw):
    """ozaki.matmul of A and B on the GPU, forced onto ``path``, as a numpy array (the residue
    GEMM's path skipped off Hopper or without nvcc and CUTLASS)."""
    import cupy
    if path == "cutlass":
        from tests.backends.test_residue_gemm import residue_gemm_backend
        residue_gemm_backend()
    with ozaki.config(path=path):
        out = ozaki.matmul(cupy.asarray(A), cupy.asarray(B), **kw)
    assert isinstance(out, cupy.ndarray)
    return cupy.asnumpy(out)


def chosen(path, A, B, mode="accurate", num_moduli=None):
    """The path the GPU backend takes for this product (asserted, so a test of
    "fused" cannot silently run the other path)."""
    from ozaki.backends import cupy_backend
    m, k = A.shape[-2:]
    n = B.shape[-1]
    parts = 3 if np.iscomplexobj(A) or np.iscomplexobj(B) else 1
    nm = num_moduli or scheme.default_num_moduli(mode, k * (2 if parts == 3 else 1))
    return cupy_backend.choose_path(path, m, n, k, 1, nm, parts)


PATHS = ["fused", "cublas", "cutlass"]
SHAPES = [(1, 1, 1), (5, 3, 7), (63, 65, 64), (64, 64, 64), (65, 129, 130), (130, 300, 70), (7, 1000, 5)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
@pytest.mark.parametrize("shape", SHAPES)
def test_paths_same_bits(rng, monkeypatch, path, mode, shape):
    from ozaki.backends import cupy_backend
    m, k, n = shape
    A, B = inputs.wide(rng, (m, k), 6), inputs.wide(rng, (k, n), 6)
    assert chosen(path, A, B, "accurate") == path
    calls = []
    real = cupy_backend.gemm_residues
    monkeypatch.setattr(cupy_backend, "gemm_residues", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    cpu = ozaki.matmul(A, B, mode=mode)
    assert same_bits(cpu, on_path(path, A, B, mode=mode))
    if path != "fused":                 # (a forced "fused" whose exact plan does not fit falls back)
        assert bool(calls) == (path == "cutlass")    # the residue GEMM ran on its path, not on cuBLAS's
    if mode == "exact":
        assert same_bits(cpu, reference.exact_matmul(A, B))


@pytest.mark.parametrize("kernels", ["all", "none"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("nm,dtype", [(16, np.float64), (14, np.complex128), (8, np.float64), (17, np.float64),
                                      (16, np.float32)])
def test_two_words_rounding_same_bits(rng, monkeypatch, kernels, path, nm, dtype):
    """One slice pair's CRT value rounded from two 64-bit words (NEW_KERNELS two_words, where
    P < 2**128: 16 moduli or fewer; 17 keeps the limbs' rounding) and from normalized limbs
    ("none"): the CPU's bits on every path, with results in the subnormal range and past the
    overflow threshold, both signs."""
    monkeypatch.setenv("OZAKI_NEW_KERNELS", kernels)
    big, tiny, spread = (506, -530, 6) if dtype != np.float32 else (61, -68, 3)
    A, B = inputs.wide(rng, (40, 90), spread), inputs.wide(rng, (90, 34), spread)
    if dtype == np.complex128:
        A = A + 1j * inputs.wide(rng, A.shape, spread)
        B = B - 1j * inputs.wide(rng, B.shape, spread)
    A[:5] *= 2.0 ** tiny
    B[:, :4] *= 2.0 ** tiny                    # rows 0-4 x columns 0-3: subnormal results
    A[5:9] *= 2.0 ** big
    B[:, 4:8] *= 2.0 ** big                    # rows 5-8 x columns 4-7: past the overflow
    A, B = A.astype(dtype), B.astype(dtype)
    cpu = ozaki.matmul(A, B, mode="accurate", num_moduli=nm)
    assert same_bits(cpu, on_path(path, A, B, mode="accurate", num_moduli=nm))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode,nm", [("fast", 8), ("accurate", 12), ("accurate", 20), ("accurate", 30),
                                     ("exact", None)])
def test_paths_moduli_counts_and_slices(rng, path, mode, nm):
    """Counts other than the default (smaller and larger constant tables and limbs),
    and exact mode's slice pairs (wide rows: several Kulisch shifts)."""
    A, B = inputs.wide(rng, (40, 90), 200), inputs.wide(rng, (90, 33), 200)
    cpu = ozaki.matmul(A, B, mode=mode, num_moduli=nm)
    assert same_bits(cpu, on_path(path, A, B, mode=mode, num_moduli=nm))


def test_exact_slices_run_fused(rng):
    """A product whose exact plan has several slice pairs and still fits one fused launch."""
    from ozaki.backends import cupy_backend
    A, B = inputs.wide(rng, (20, 48), 70), inputs.wide(rng, (48, 24), 70)      # 2 x 2 slices, 36 moduli
    assert cupy_backend._fused_tile(4 * 36) == cupy_backend.FUSED_TILES["short"][-1]
    plan = scheme.make_plan(np, A, np.ascontiguousarray(B.T), "exact", None, ozaki.backend_for(A))
    assert plan.slices_a * plan.slices_b > 1
    assert cupy_backend.choose_path("fused", 20, 24, 48, 1, plan.num_moduli, 1,
                                    plan.slices_a * plan.slices_b) == "fused"
    assert same_bits(on_path("fused", A, B, mode="exact"), reference.exact_matmul(A, B))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_complex_paths(rng, path, mode):
    A = inputs.wide(rng, (70, 90), 8) + 1j * inputs.wide(rng, (70, 90), 8)
    B = inputs.wide(rng, (90, 66), 8) + 1j * inputs.wide(rng, (90, 66), 8)
    cpu = ozaki.matmul(A, B, mode=mode)
    assert same_bits(cpu, on_path(path, A, B, mode=mode))


@pytest.mark.parametrize("path", PATHS)
def test_stacks_and_broadcast(rng, path):
    """A stack is one launch (a grid dimension); broadcast operands and specials too."""
    A = inputs.wide(rng, (9, 33, 70), 10)
    B = inputs.sprinkle_zeros(rng, inputs.wide(rng, (1, 70, 65), 10))
    A[3] = inputs.sprinkle_specials(rng, A[3])
    for mode in ("fast", "accurate", "exact"):
        cpu = ozaki.matmul(A, B, mode=mode)
        assert same_bits(cpu, on_path(path, A, B, mode=mode))
    Z = inputs.normal(rng, (300, 16, 16)) + 1j * inputs.normal(rng, (300, 16, 16))
    assert same_bits(ozaki.matmul(Z, Z), on_path(path, Z, Z))


@pytest.mark.parametrize("complex_", [False, True])
def test_residue_gemm_takes_a_stack_in_one_launch(rng, monkeypatch, complex_):
    """A stack on the residue GEMM's path: one CUTLASS launch a Karatsuba part (every
    modulus of every matrix), one epilogue, the CPU's bits; B broadcast, n off the
    16-byte row (zero rows padded in), a matrix of specials."""
    from ozaki.backends import cupy_backend
    from tests.backends.test_residue_gemm import residue_gemm_backend
    residue_gemm_backend()
    lib = cupy_backend._residue_gemm_library()[0]
    launches, epilogues = [], []
    real_gemm, real_epilogue = lib.ozaki_residue_gemm, cupy_backend.epilogue
    monkeypatch.setattr(lib, "ozaki_residue_gemm", lambda *a: launches.append(a[-4]) or real_gemm(*a))
    monkeypatch.setattr(cupy_backend, "epilogue", lambda *a, **kw: epilogues.append(1) or real_epilogue(*a, **kw))
    A = inputs.wide(rng, (11, 37, 70), 12)
    B = inputs.sprinkle_zeros(rng, inputs.wide(rng, (1, 70, 21), 12))
    A[4] = inputs.sprinkle_specials(rng, A[4])
    if complex_:
        A = A + 1j * inputs.wide(rng, A.shape, 12)
        B = B - 1j * inputs.wide(rng, B.shape, 12)
    for mode in ("fast", "accurate"):
        launches.clear(), epilogues.clear()
        with ozaki.config(path="cutlass"):
            import cupy
            got = cupy.asnumpy(ozaki.matmul(cupy.asarray(A), cupy.asarray(B), mode=mode))
        assert same_bits(ozaki.matmul(A, B, mode=mode), got), mode
        nm = scheme.default_num_moduli(mode, 70 * (2 if complex_ else 1))
        assert launches == [11 * nm] * (3 if complex_ else 1), mode      # L = moduli x matrices
        assert len(epilogues) == 1, mode


@pytest.mark.parametrize("kernels", ["default", "all", "none"])
def test_fused_product_at_the_int32_limits(rng, monkeypatch, kernels):
    """Every residue at its extreme sign and size, k at the kernel's int32 limit:
    the accumulators reach k 2**14 (real) and 3 k 2**14 (complex) in magnitude (with
    NEW_KERNELS "all", fused_int_mod reduces them on the integer pipes, whose range ends at
    2**31 - 2**14)."""
    import cupy
    if kernels != "default":
        monkeypatch.setenv("OZAKI_NEW_KERNELS", kernels)
    from ozaki.backends import cupy_backend, numpy_backend
    m_mod = 16
    ps = np.array(crt.moduli(m_mod))
    for parts, k in ((1, cupy_backend.FUSED_K_MAX[1]), (3, cupy_backend.FUSED_K_MAX[3])):
        rows, cols = 17, 9
        kp = -(-k // 16) * 16

        def extreme(count, sign):
            r = np.zeros((m_mod, count, kp), dtype=np.int8)
            lo = -(ps // 2)                                  # -128 for 256, else -(p - 1) / 2
            r[:, :, :k] = (lo if sign < 0 else -lo - (ps % 2 == 0)).reshape(-1, 1, 1)
            flip = rng.random((count, k)) < 0.02             # a few random residues among them
            rnd = rng.integers(-127, 128, (m_mod, count, k)).astype(np.int8)
            r[:, :, :k] = np.where(flip, rnd, r[:, :, :k])
            return r

        # real: P = A B at +k 2**14; complex, signs of (Ar, Ai, Ar + Ai) against B's all
        # negative: Re = P1 - P2 at 2 k 2**14, then Im = P3 - P1 - P2 at -3 k 2**14
        signs = [(-1,)] if parts == 1 else [(-1, 1, 1), (-1, -1, 1)]
        for sa in signs:
            ra = [[extreme(rows, s)] for s in sa]
            rb = [[extreme(cols, -1)] for _ in sa]
            ba, bb = rng.integers(-60, 60, rows), rng.integers(-60, 60, cols)
            products = [tuple(numpy_backend.gemm(ra[h][0], rb[h][0])[0] for h in range(parts))]
            cpu = numpy_backend.epilogue(products, [0], m_mod, ba, bb)
            gpu = cupy_backend.fused_product([[cupy.asarray(x) for x in h] for h in ra],
                                             [[cupy.asarray(x) for x in h] for h in rb], [0], m_mod,
                                             cupy.asarray(ba), cupy.asarray(bb))
            for c, g in zip(cpu, gpu):
                assert same_bits(c, cupy.asnumpy(g)[0])


@pytest.mark.parametrize("batch,m,n,k", [(1, 1, 1, 1), (1, 70, 130, 300), (5, 33, 17, 64), (2, 200, 64, 1000)])
def test_bound_maxima_kernel(rng, batch, m, n, k):
    import cupy
    from ozaki.backends import cupy_backend
    kp = -(-k // 16) * 16
    a = np.zeros((batch * m, kp), dtype=np.int8)
    b = np.zeros((batch * n, kp), dtype=np.int8)
    a[:, :k] = rng.integers(0, 65, (batch * m, k))
    b[:, :k] = rng.integers(0, 65, (batch * n, k))
    a[0, :k] = 64                                              # the largest ceilings
    M = np.einsum("gik,gjk->gij", a.reshape(batch, m, kp).astype(np.int64), b.reshape(batch, n, kp).astype(np.int64))
    rmax, cmax = cupy_backend.bound_maxima(cupy.asarray(a), cupy.asarray(b), batch)
    assert np.array_equal(cupy.asnumpy(rmax), M.max(axis=2).reshape(-1))
    assert np.array_equal(cupy.asnumpy(cmax), M.max(axis=1).reshape(-1))


def test_auto_path_table(monkeypatch):
    from ozaki.backends import cupy_backend
    assert cupy_backend.choose_path("auto", 64, 64, 64, 4096, 16) == "fused"
    assert cupy_backend.choose_path("cublas", 64, 64, 64, 4096, 16) == "cublas"
    assert cupy_backend.choose_path("cutlass", 64, 64, 64, 4096, 16) == "cutlass"
    unfused = "cutlass" if cupy_backend.residue_gemm_available() is True else "cublas"
    assert cupy_backend.choose_path("fused", 8, 8, 10 ** 6, 1, 16) == "cublas"     # int32 range
    assert cupy_backend.choose_path("cutlass", 8, 8, 10 ** 6, 1, 16) == "cublas"
    assert cupy_backend.choose_path("fused", 8, 8, 64, 1, 49, 3, 4) == unfused     # shared memory
    # past the grid's 65535 blocks along rows (32 a block at the least) or matrices
    assert cupy_backend.choose_path("fused", 32 * 65535 + 1, 64, 128, 1, 16) == unfused
    assert cupy_backend.choose_path("fused", 64, 64, 64, 65536, 16) == unfused
    assert cupy_backend.choose_path("fused", 32 * 65535, 64, 128, 1, 16) == "fused"
    # accurate mode's bound of such a product (2**34 of work, within GRAPH_MAX_WORK) stays off chip
    assert scheme._bound_path(cupy_backend, "auto", 1 << 21, 64, 128, 1) == unfused
    assert cupy_backend.choose_path("auto", 65536, 256, 256, 1, 26, 3) == unfused   # an FFT stage
    assert cupy_backend.choose_path("auto", 4096, 4096, 4096, 1, 16) == unfused
    # matrices smaller than a residue GEMM tile stay fused; larger small ones take the residue
    # GEMM where it is built (8a5cb17's crossover), else the fused kernel (cuBLAS's path is slower)
    small = "cutlass" if unfused == "cutlass" else "fused"
    assert cupy_backend.choose_path("auto", 128, 128, 128, 1024, 16) == "fused"
    assert cupy_backend.choose_path("auto", 64, 64, 64, 256, 16, 3) == "fused"
    assert cupy_backend.choose_path("auto", 1024, 1024, 1024, 1, 16) == small
    assert cupy_backend.choose_path("auto", 512, 512, 512, 1, 16) == small
    assert cupy_backend.choose_path("auto", 256, 256, 256, 256, 16) == small
    assert cupy_backend.choose_path("auto", 1024, 1024, 1024, 1, 16, 3) == small
    assert cupy_backend.choose_path("auto", 8192, 8192, 8192, 1, 16) == "cublas"    # cuBLAS's int8 rate
    assert cupy_backend.choose_path("auto", 16384, 16384, 512, 1, 16) == "cublas"
    # narrow products past the work threshold keep the residue GEMM (an fftn 1024^3 real axis block)
    assert cupy_backend.choose_path("auto", 65536, 1026, 1024, 1, 24) == unfused
    assert cupy_backend.choose_path("auto", 1 << 20, 1024, 1024, 1, 24) == unfused
    for key, k in (("short", 64), ("long", 4096)):
        assert cupy_backend._fused_tile(16, k) == cupy_backend.FUSED_TILES[key][0]
        assert cupy_backend._fused_tile(144, k) == cupy_backend.FUSED_TILES[key][-1]
    assert cupy_backend._fused_tile(16 * 144, 64) is None
    # small grids take the tile with more blocks; big ones keep the first
    assert cupy_backend._fused_tile(16, 4096, (512, 512, 1)) == cupy_backend.FUSED_TILES["long"][-1]
    assert cupy_backend._fused_tile(16, 4096, (16384, 16384, 1)) == cupy_backend.FUSED_TILES["long"][0]
    # with the CRT sums on the tensor cores asked for, only tiles whose pipeline holds their digit
    # sums (kernel_tables.crt_sum_fits): 3 stages of the short tile up to 25 moduli, then 4
    short = ((32, 32, 2, 2, 64, 3), (32, 32, 2, 2, 64, 4))
    monkeypatch.setattr(cupy_backend, "FUSED_TILES", {"short": short, "long": cupy_backend.FUSED_TILES["long"]})
    assert cupy_backend._fused_tile(16, 64, crt_moduli=16) == short[0]
    assert cupy_backend._fused_tile(30, 64, crt_moduli=30) == short[1]
    assert cupy_backend._fused_tile(30, 64) == short[0]


def test_fused_runs_on_the_current_stream(rng):
    import cupy
    A, B = inputs.normal(rng, (4, 50, 40)), inputs.normal(rng, (4, 40, 30))
    want = ozaki.matmul(A, B)
    s = cupy.cuda.Stream(non_blocking=True)
    with s, ozaki.config(path="fused"):
        got = ozaki.matmul(cupy.asarray(A), cupy.asarray(B))
    s.synchronize()
    assert same_bits(want, cupy.asnumpy(got))


def crt_mma_on(monkeypatch):
    """NEW_KERNELS crt_mma on beside the defaults; returns the defines of every fused.cu build
    compiled from then on, so that a test can assert that CRT_MMA was asked for."""
    return new_kernel_on(monkeypatch, "crt_mma", "fused.cu")


def _rounded(value, e):
    """RN(value 2**e) as a float64, its residual RN(value 2**e - RN(value 2**e)), from Fractions,
    and whether the residual is left unformed (NaN: a nonzero value whose rounding's last bit is
    the least subnormal's, |value 2**e| < 2**-1021)."""
    from fractions import Fraction
    x = Fraction(value) * Fraction(2) ** e
    r = float(x)
    return r, float(x - Fraction(r)), 0 < abs(x) < Fraction(2) ** -1021


@pytest.mark.parametrize("m", [1, 2, 13, 16, 17, 32])
@pytest.mark.parametrize("parts", [1, 3])
def test_crt_on_tensor_cores_exact_integers(rng, monkeypatch, m, parts):
    """fused_product with the CRT sums on the tensor cores against Python's integers: k = 2
    products whose CRT values are X_row + Y_col (A = [X, 1], B = [1, Y] as residues), X and Y
    up to half the plans' bound P/2 - P/2**20 with both signs (so the values reach the bound),
    each output rounded once at 2**(beta_a + beta_b) by Fractions, with its residual; complex
    (Bi = 0): Re = Ar Br and Im = Ai Br through Karatsuba's P3 - P1 - P2.  On every tile that
    the host launches and the sweep's tiles of one warp a row, where its shared memory fits."""
    import cupy
    from bench.crossover import SWEEP_TILES
    from ozaki.backends import cupy_backend, kernel_tables
    import math
    import random
    builds = crt_mma_on(monkeypatch)
    ps = [int(p) for p in crt.moduli(m)]
    P = math.prod(ps)
    half = (P * 2 ** 19 - P) // 2 ** 21                   # X, Y within half the bound
    rows, cols = 70, 96
    rnd = np.random.default_rng(rng.integers(2 ** 32))

    draw = random.Random(int(rnd.integers(2 ** 62)))

    def ints(count):                                      # the extremes, then spread over every size
        return [half, -half, 0, 1, -1] + [draw.randint(-half, half) >> draw.randrange(P.bit_length())
                                          for _ in range(count - 5)]

    def residues(values, kp=16):                          # values[col][row] -> int8 (m, rows, kp)
        r = np.zeros((m, len(values[0]), kp), dtype=np.int8)
        for col, vs in enumerate(values):
            r[:, :, col] = inputs.symmetric_residues(np.array(vs, dtype=object)[None, :],
                                                     np.array(ps)[:, None]).astype(np.int8)
        return cupy.asarray(r)

    X, X2, Y = ints(rows), ints(rows), ints(cols)
    ones_r, ones_c = [1] * rows, [1] * cols
    if parts == 1:
        ra = [[residues([X, ones_r])]]
        rb = [[residues([ones_c, Y])]]
        want = [[[x + y for y in Y] for x in X]]
    else:
        ra = [[residues([X, ones_r])], [residues([X2, ones_r])],
              [residues([[a + b for a, b in zip(X, X2)], [2] * rows])]]
        rb = [[residues([ones_c, Y])], [residues([[0] * cols, [0] * cols])], [residues([ones_c, Y])]]
        want = [[[x + y for y in Y] for x in X], [[x + y for y in Y] for x in X2]]
    ba = rnd.integers(-1100, -100, rows)
    bb = rnd.integers(-80, 0, cols)
    ba[:3] = -1150                                        # some results subnormal
    one_warp_row = [t for t in SWEEP_TILES if t[3] == 1]      # warps side by side: (32, 32, 1, 1), (64, 32, 2, 1)
    tiles = sorted(set(kernel_tables.FUSED_TILES["short"] + kernel_tables.FUSED_TILES["long"]) | set(one_warp_row))
    nout = 2 if parts == 3 else 1
    expected = np.array([[[_rounded(want[o][i][j], int(ba[i] + bb[j])) for j in range(cols)] for i in range(rows)]
                         for o in range(nout)])                  # (nout, rows, cols, 3): value, residual, unformed
    want_out, want_rho, unformed = expected[..., 0], expected[..., 1], expected[..., 2].astype(bool)
    tried = 0
    for tile in tiles:
        skew = cupy_backend._res_skew(nout, 1, m)
        if cupy_backend._fused_shared(tile, m * nout, skew) > cupy_backend.SHARED_MAX:
            continue
        monkeypatch.setattr(cupy_backend, "FUSED_TILES", {"short": (tile,), "long": (tile,)})
        got = cupy_backend.fused_product(ra, rb, [0], m, cupy.asarray(ba), cupy.asarray(bb), residual=True)
        tried += 1
        assert builds[-1].get("CRT_MMA") == 1 and builds[-1]["BM"] == tile[0]
        # without residuals: the one rounding of the default builds (two words up to 16 moduli)
        plain = cupy_backend.fused_product(ra, rb, [0], m, cupy.asarray(ba), cupy.asarray(bb))
        assert builds[-1].get("CRT_MMA") == 1 and "RESIDUAL" not in builds[-1]
        for o in range(nout):
            assert same_bits(cupy.asnumpy(plain[o]), cupy.asnumpy(got[o])), (tile, o)
            out, rho = cupy.asnumpy(got[o])[0], cupy.asnumpy(got[nout + o])[0]
            assert same_bits(out, want_out[o]), (tile, o, np.argwhere(out != want_out[o])[:3])
            assert np.array_equal(np.isnan(rho), unformed[o]), (tile, o)
            # (by value: a zero residual takes the rounded value's sign, as the CPU's does)
            assert np.array_equal(rho[~unformed[o]], want_rho[o][~unformed[o]]), (tile, o)
    assert tried >= 2


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_crt_on_tensor_cores_same_bits(rng, monkeypatch, mode):
    """ozaki.matmul with crt_mma on gives the CPU's bits: a stack with a broadcast operand and
    specials, complex, float32, a long inner dimension, 8 to 32 moduli."""
    builds = crt_mma_on(monkeypatch)
    A = inputs.wide(rng, (9, 33, 70), 10)
    B = inputs.sprinkle_zeros(rng, inputs.wide(rng, (1, 70, 65), 10))
    A[3] = inputs.sprinkle_specials(rng, A[3])
    cases = [(A, B, {}), (inputs.wide(rng, (40, 3000), 4), inputs.wide(rng, (3000, 64), 4), {})]
    Z = inputs.normal(rng, (30, 16, 40)) + 1j * inputs.normal(rng, (30, 16, 40))
    W = inputs.normal(rng, (40, 33)) - 1j * inputs.normal(rng, (40, 33))
    cases.append((Z, W, {}))
    cases.append((A.astype(np.float32), B.astype(np.float32), {}))
    if mode != "exact":
        cases += [(A, B, {"num_moduli": nm}) for nm in (8, 17, 25, 32)]
    for X, Y, kw in cases:
        del builds[:]
        assert same_bits(ozaki.matmul(X, Y, mode=mode, **kw), on_path("fused", X, Y, mode=mode, **kw)), \
            (X.shape, Y.shape, kw)
        # one slice pair of at most 32 moduli (fast and accurate mode) runs it; exact mode's pairs do not
        products = [b for b in builds if "EPILOGUE_CRT" in b]     # (exact mode may leave the fused path)
        assert products or mode == "exact"
        assert all((b.get("CRT_MMA") == 1) == (b["NPAIRS"] == 1 and b["NMOD"] <= 32) for b in products)
        if mode != "exact":
            assert all(b.get("CRT_MMA") == 1 for b in products), (X.shape, kw)
