"""The GPU backend returns bit for bit what the CPU backend returns (needs a CUDA device)."""

import numpy as np
import pytest

import ozaki
from ozaki import reference
from tests import inputs

pytestmark = pytest.mark.gpu


def both(A, B, **kw):
    import cupy
    cpu = ozaki.matmul(A, B, **kw)
    gpu = ozaki.matmul(cupy.asarray(A), cupy.asarray(B), **kw)
    assert isinstance(gpu, cupy.ndarray)
    return cpu, cupy.asnumpy(gpu)


def same_bits(x, y):
    return np.array_equal(x.view(np.int64), y.view(np.int64))


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 13, 5), (64, 96, 33), (256, 300, 200)])
def test_same_bits_normal(rng, mode, shape):
    m, k, n = shape
    A, B = inputs.normal(rng, (m, k)), inputs.normal(rng, (k, n))
    cpu, gpu = both(A, B, mode=mode)
    assert same_bits(cpu, gpu)


@pytest.mark.parametrize("mode,nm", [("fast", 8), ("accurate", 10), ("accurate", 30), ("exact", None)])
@pytest.mark.parametrize("spread", [5, 60, 400])
def test_same_bits_wide(rng, mode, nm, spread):
    A, B = inputs.wide(rng, (40, 70), spread), inputs.wide(rng, (70, 30), spread)
    cpu, gpu = both(A, B, mode=mode, num_moduli=nm)
    assert same_bits(cpu, gpu)
    if mode == "exact":
        assert same_bits(gpu, reference.exact_matmul(A, B))


def test_same_bits_adversarial(rng):
    for A, B in [(inputs.subnormal_heavy(rng, (20, 31)), inputs.normal(rng, (31, 9))),
                 (inputs.huge(rng, (12, 40)), inputs.huge(rng, (40, 12))),
                 inputs.cancelling(rng, 16, 64, 8),
                 (inputs.sprinkle_specials(rng, inputs.normal(rng, (16, 40))),
                  inputs.sprinkle_zeros(rng, inputs.normal(rng, (40, 16))))]:
        for mode in ("fast", "accurate", "exact"):
            cpu, gpu = both(A, B, mode=mode)
            assert same_bits(cpu, gpu), mode


def test_chunked_inner_dimension(rng, monkeypatch):
    """k beyond one int32-exact chunk: lower the chunk so the path runs on small data."""
    from ozaki.backends import cupy_backend
    monkeypatch.setattr(cupy_backend, "K_CHUNK", 64)
    A, B = inputs.wide(rng, (9, 300), 20), inputs.wide(rng, (300, 11), 20)
    for mode in ("accurate", "exact"):
        cpu, gpu = both(A, B, mode=mode)
        assert same_bits(cpu, gpu)


def test_chunked_inner_dimension_full_size(rng):
    """k = 140000 > 131056, the real chunk limit, with adversarial same-sign residues."""
    A = np.abs(inputs.normal(rng, (4, 140000)))
    B = np.abs(inputs.normal(rng, (140000, 3)))
    cpu, gpu = both(A, B, mode="accurate")
    assert same_bits(cpu, gpu)


@pytest.mark.parametrize("n", [1024, 4096])
def test_same_bits_large(rng, n):
    A, B = inputs.normal(rng, (n, n)), inputs.normal(rng, (n, n))
    for mode in ("accurate",) if n > 1024 else ("fast", "accurate", "exact"):
        cpu, gpu = both(A, B, mode=mode)
        assert same_bits(cpu, gpu)


@pytest.mark.parametrize("kind", ["real", "complex", "float32"])
@pytest.mark.parametrize("path", ["cublas", "fused"])
def test_blocked_workspace(rng, kind, path):
    """A product cut into row and column blocks (a small workspace): each block's epilogue
    writes into the result where it lies (a complex one into the halves of one complex
    array), and the bits are the unblocked CPU product's."""
    A, B = inputs.wide(rng, (300, 200), 10), inputs.wide(rng, (200, 170), 10)
    if kind == "complex":
        A, B = A + 1j * inputs.wide(rng, A.shape, 10), B - 1j * inputs.wide(rng, B.shape, 10)
    elif kind == "float32":
        A, B = A.astype(np.float32), B.astype(np.float32)
    cpu, _ = both(A, B, mode="accurate")
    with ozaki.config(workspace=400_000 if kind == "real" else 200_000, path=path):
        _, gpu = both(A, B, mode="accurate")
    assert gpu.dtype == cpu.dtype and gpu.flags.c_contiguous
    assert same_bits(cpu, gpu)


def test_epilogue_out_checked():
    """out= arrays of the wrong shape, dtype or strides are refused, not written."""
    import cupy
    from ozaki.backends import cupy_backend
    P = cupy.zeros((14, 4, 8), dtype=cupy.int32)
    beta_a, beta_b = cupy.zeros(4, dtype=cupy.int64), cupy.zeros(8, dtype=cupy.int64)
    big = cupy.zeros((6, 10))
    for out in ([big[:4, :7]], [big[:4, :8].astype(cupy.float32)], [big[:4, :8], big[:4, :8]]):
        with pytest.raises(ValueError, match="out"):
            cupy_backend.epilogue([(P,)], [0], 14, beta_a, beta_b, out=out)
    got = cupy_backend.epilogue([(P + 1,)], [0], 14, beta_a, beta_b, out=[big[1:5, 2:10]])
    assert got[0].data.ptr == big[1:5, 2:10].data.ptr
    assert (big[1:5, 2:10] == 1).all() and (big[0] == 0).all() and (big[:, :2] == 0).all()


@pytest.mark.parametrize("residual", [False, True])
def test_epilogue_interleaved_into_views(rng, residual):
    """A stack of four complex int8-residue products interleaved (epilogue.cu INTERLEAVED, the
    quarter turns' epilogue) written into views of a larger result, as scheme.product_finite's
    row blocks: numpy's bits there, the rest of the result untouched."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    m, rows, cols, g = 25, 12, 10, 4
    stacks = [P.reshape(m, g * rows, cols).astype(np.int8)
              for P in _pair_products(rng, m, g * rows * cols, np.int8, True)]
    ba, bb = rng.integers(-90, -40, g * rows), rng.integers(-20, 0, g * cols)
    want = numpy_backend.epilogue([tuple(stacks)], [0], m, ba, bb, np.float64, residual, matrices=g, interleave=True)
    parts = 4 if residual else 2
    whole = cupy.full((parts, rows + 3, g * cols + 5), cupy.nan)
    views = [whole[h, 2:rows + 2, 3:g * cols + 3] for h in range(parts)]
    got = cupy_backend.epilogue([tuple(cupy.asarray(P) for P in stacks)], [0], m, cupy.asarray(ba), cupy.asarray(bb),
                                np.float64, residual, views, matrices=g, interleave=True)
    assert [o.data.ptr for o in got] == [v.data.ptr for v in views]
    for w, v in zip(want, views):
        assert same_bits(w, cupy.asnumpy(v))
    rest = cupy.asnumpy(whole)
    assert np.isnan(rest[:, [0, 1, -1]]).all() and np.isnan(rest[:, :, [0, 1, 2, -2, -1]]).all()


def test_mixed_array_types_refused():
    import cupy
    with pytest.raises(TypeError, match="both"):
        ozaki.matmul(np.ones((2, 2)), cupy.ones((2, 2)))


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_complex_same_bits(rng, mode):
    A = inputs.wide(rng, (70, 90), 8) + 1j * inputs.wide(rng, (70, 90), 8)
    B = inputs.wide(rng, (90, 50), 8) + 1j * inputs.wide(rng, (90, 50), 8)
    cpu, gpu = both(A, B, mode=mode)
    assert cpu.dtype == gpu.dtype == np.complex128
    assert np.array_equal(cpu.view(np.int64), gpu.view(np.int64))


@pytest.mark.parametrize("mode", ["accurate", "exact"])
def test_complex_stacks_and_views_same_bits(rng, mode):
    """Complex stacks (B batched: its real view transposed per matrix) and views of device
    arrays (transposed, strided, reversed) as operands: the CPU's bits."""
    import cupy
    A = inputs.wide(rng, (3, 40, 70), 8) + 1j * inputs.wide(rng, (3, 40, 70), 8)
    B = inputs.wide(rng, (3, 70, 36), 8) + 1j * inputs.wide(rng, (3, 70, 36), 8)
    cpu, gpu = both(A, B, mode=mode)
    assert same_bits(cpu, gpu)
    X = inputs.wide(rng, (90, 60), 8) + 1j * inputs.wide(rng, (90, 60), 8)
    Xd = cupy.asarray(X)
    for a, b in [(lambda x: x.T, lambda x: x[::-1][:90, ::2]), (lambda x: x[::-3], lambda x: x.T[:, 5:45])]:
        want = ozaki.matmul(a(X), b(X), mode=mode)
        assert same_bits(want, cupy.asnumpy(ozaki.matmul(a(Xd), b(Xd), mode=mode)))


def test_complex_of(rng):
    """The epilogue's parts, written into one complex array, are that array (no copy); any
    other parts (separate, or strided views of another layout) are copied, values equal."""
    import cupy
    from ozaki.backends import cupy_backend
    Z = cupy.asarray(inputs.normal(rng, (7, 9)) + 1j * inputs.normal(rng, (7, 9)))
    whole = cupy_backend.complex_of(Z.real[None], Z.imag[None])
    assert whole.shape == (1, 7, 9) and whole.data.ptr == Z.data.ptr
    for re, im in [(Z.real.copy(), Z.imag.copy()), (Z.real[:, ::2], Z.imag[:, ::2]), (Z.imag, Z.real),
                   (Z.real.T, Z.imag.T)]:
        c = cupy_backend.complex_of(re, im)
        assert c.data.ptr != Z.data.ptr
        assert cupy.array_equal(c.real, re) and cupy.array_equal(c.imag, im)
    F = cupy.asarray(inputs.normal(rng, (3, 4)) + 1j * inputs.normal(rng, (3, 4))).astype(cupy.complex64)
    assert cupy_backend.complex_of(F.real, F.imag).dtype == cupy.complex64
    # interleaved parts one float64 off a complex128's alignment: copied, not viewed
    buf = cupy.asarray(inputs.normal(rng, 128))
    re, im = buf[1:127:2].reshape(7, 9), buf[2:128:2].reshape(7, 9)
    assert im.data.ptr == re.data.ptr + 8 and re.strides == (144, 16)
    c = cupy_backend.complex_of(re, im)
    assert c.data.ptr % 16 == 0 and c.data.ptr != re.data.ptr
    assert cupy.array_equal(c.real, re) and cupy.array_equal(c.imag, im)


def test_complex_same_bits_large(rng):
    A = inputs.normal(rng, (1024, 1024)) + 1j * inputs.normal(rng, (1024, 1024))
    B = inputs.normal(rng, (1024, 1024)) + 1j * inputs.normal(rng, (1024, 1024))
    cpu, gpu = both(A, B, mode="accurate")
    assert np.array_equal(cpu.view(np.int64), gpu.view(np.int64))


@pytest.mark.parametrize("shape,axes", [((4, 1024), (-1,)), ((3, 360), (-1,)), ((32, 48), (0, 1))])
def test_fft_same_bits(rng, shape, axes):
    import cupy
    import ozaki.fft as of
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    cpu = of.fftn(x, axes=axes)
    gpu = of.fftn(cupy.asarray(x), axes=axes)
    assert isinstance(gpu, cupy.ndarray)
    assert np.array_equal(cpu.view(np.int64), cupy.asnumpy(gpu).view(np.int64))


@pytest.mark.parametrize("mode", ["accurate", "exact"])
def test_stack_same_bits(rng, mode):
    A, B = inputs.wide(rng, (6, 40, 70), 10), inputs.wide(rng, (6, 70, 30), 10)
    cpu, gpu = both(A, B, mode=mode)
    assert same_bits(cpu, gpu)


# The kernels' steps one by one against the numpy backend's, on adversarial data.

@pytest.mark.parametrize("m", [1, 7, 14, 16, 49])
@pytest.mark.parametrize("width,nearest", [(None, False), (None, True), (64, False)])
def test_residues_kernel(rng, m, width, nearest):
    """Against numpy_backend on adversarial rows, contiguous and read in place as the first
    half of wider rows (a complex operand's [Re | Im]: the other half NaN, not to be read).
    14 moduli: the build whose moduli loop _residues_kernel's register rule (RESIDUE_UNROLL
    unset) makes a loop over two moduli at a time, not fully unrolled (ptxas of CUDA 13.0)."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    x, beta = inputs.residue_rows(rng)
    k = x.shape[1]
    cpu = numpy_backend.residues(x, beta, width, m, nearest)
    gpu = cupy_backend.residues(cupy.asarray(x), cupy.asarray(beta), width, m, nearest)
    assert np.array_equal(cpu, cupy.asnumpy(gpu)[:, :, :k])
    assert not cupy.asnumpy(gpu)[:, :, k:].any()
    wide = cupy.asarray(np.concatenate([x, np.full_like(x, np.nan)], axis=1))
    in_place = cupy_backend.residues(wide[:, :k], cupy.asarray(beta), width, m, nearest)
    assert cupy.array_equal(in_place, gpu)


@pytest.mark.parametrize("m", [7, 14, 16, 49])
@pytest.mark.parametrize("width,nearest", [(None, True), (64, False)])
def test_residues_kernel_row_strides(rng, monkeypatch, m, width, nearest):
    """Rows read in place at any row stride (residues.cu's ld, x.strides[0] / 8): reversed
    rows (x[::-1], ld negative), one row broadcast (ld zero), the second half of joined
    [Re | Im] rows (joined[:, k:], ld 2 k, the first half NaN, not to be read) and those
    reversed; the bits of numpy_backend.residues on the same data, and no copy of x."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    x, beta = inputs.residue_rows(rng)
    rows, k = x.shape
    joined = np.concatenate([np.full_like(x, np.nan), x], axis=1)
    xd, joined_d = cupy.asarray(x), cupy.asarray(joined)
    cases = {"reversed": (x[::-1], xd[::-1], -k), "broadcast": (np.broadcast_to(x[0], x.shape),
                                                               cupy.broadcast_to(xd[0], x.shape), 0),
             "second half": (joined[:, k:], joined_d[:, k:], 2 * k),
             "second half reversed": (joined[::-1, k:], joined_d[::-1, k:], -2 * k)}
    copies = []
    real_contiguous = cupy.ascontiguousarray

    def spy(a, *args, **kw):           # residues' own copy of x (not beta's)
        if getattr(a, "shape", None) == (rows, k):
            copies.append(a.strides)
        return real_contiguous(a, *args, **kw)

    for name, (host, dev, ld) in cases.items():
        assert dev.strides == (8 * ld, 8), name
        cpu = numpy_backend.residues(np.ascontiguousarray(host), beta, width, m, nearest)
        with monkeypatch.context() as patch:
            patch.setattr(cupy, "ascontiguousarray", spy)
            gpu = cupy_backend.residues(dev, cupy.asarray(beta), width, m, nearest)
        assert not copies, name
        gpu = cupy.asnumpy(gpu)
        assert np.array_equal(cpu, gpu[:, :, :k]), name
        assert not gpu[:, :, k:].any(), name


@pytest.mark.parametrize("m", [14, 16, 27, 49])
@pytest.mark.parametrize("width,nearest", [(None, True), (64, False), (100, False)])
def test_residues_of_parts_kernel(rng, monkeypatch, m, width, nearest):
    """A complex operand's parts, the halves of joined [Re | Im] rows (and those reversed),
    in one pass up to RESIDUE_PARTS_MAX_MODULI (residues.cu PARTS 2, no add_residues; past
    it a pass a part): numpy_backend's residues of each part and of their sums, bit for
    bit; parts of different row strides take a pass a part and add_residues, with the
    same bits."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    monkeypatch.setenv("OZAKI_NEW_KERNELS", "residue_parts")
    builds, kernel = [], cupy_backend._residues_kernel         # PARTS of each pass
    monkeypatch.setattr(cupy_backend, "_residues_kernel", lambda *a: builds.append(a[4]) or kernel(*a))
    re, beta = inputs.residue_rows(rng)
    im = inputs.residue_rows(rng)[0][::-1]
    rows, k = re.shape
    joined = cupy.asarray(np.concatenate([re, im], axis=1))
    want = numpy_backend.residues_of_parts([re, im], beta, width, m, nearest)
    sums = []
    real_add = cupy_backend.add_residues
    monkeypatch.setattr(cupy_backend, "add_residues", lambda *a: sums.append(1) or real_add(*a))
    one_pass = m <= cupy_backend.RESIDUE_PARTS_MAX_MODULI       # (PARTS 2 spills past it)
    for name, parts, b in (("halves", [joined[:, :k], joined[:, k:]], beta),
                           ("reversed", [joined[::-1, :k], joined[::-1, k:]], beta[::-1])):
        builds.clear()
        got = cupy_backend.residues_of_parts(parts, cupy.asarray(np.ascontiguousarray(b)), width, m, nearest)
        assert bool(sums) != one_pass, name
        assert builds == ([2] if one_pass else [1, 1]), (name, builds)
        sums.clear()
        assert len(got) == 3, name
        for g, w in zip(got, want):
            g = cupy.asnumpy(g)
            w = w[:, ::-1] if name == "reversed" else w
            assert np.array_equal(g[:, :, :k], w), name
            assert not g[:, :, k:].any(), name
    apart = [cupy.asarray(re), joined[:, k:]]                 # row strides k and 2 k
    got = cupy_backend.residues_of_parts(apart, cupy.asarray(beta), width, m, nearest)
    assert sums
    for g, w in zip(got, want):
        assert np.array_equal(cupy.asnumpy(g)[:, :, :k], w)
    # a complex row's interleaved (Re, Im) pairs read in place (entries two doubles apart:
    # scheme.operand_rows' interleaved rows), in one pass and a pass a part
    z = np.empty(re.shape, dtype=np.complex128)       # (not re + 1j * im: 0 * inf makes a NaN real part)
    z.real, z.imag = re, im
    pairs = cupy.asarray(z).view(cupy.float64)
    for kernels in ("residue_parts", "none"):
        monkeypatch.setenv("OZAKI_NEW_KERNELS", kernels)
        got = cupy_backend.residues_of_parts([pairs[:, 0::2], pairs[:, 1::2]], cupy.asarray(beta), width, m, nearest)
        for g, w in zip(got, want):
            assert np.array_equal(cupy.asnumpy(g)[:, :, :k], w), kernels


@pytest.mark.parametrize("unroll", [0, 1, 2, 5])
def test_residues_kernel_unrolled(rng, monkeypatch, unroll):
    """Every build of the moduli loop (RESIDUE_UNROLL: 0 fully unrolled, else that many
    moduli at a time) gives numpy_backend's residues."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    monkeypatch.setattr(cupy_backend, "RESIDUE_UNROLL", unroll)
    x, beta = inputs.residue_rows(rng)
    k = x.shape[1]
    for m, nearest in ((15, True), (16, False)):
        cpu = numpy_backend.residues(x, beta, None, m, nearest)
        gpu = cupy_backend.residues(cupy.asarray(x), cupy.asarray(beta), None, m, nearest)
        assert np.array_equal(cpu, cupy.asnumpy(gpu)[:, :, :k]), m


def _representatives(rng, values, ps, top):
    """Some representative of each value mod p, up to the dtype's limit (multiples of p
    added), the first two at that limit: (m, size) int64."""
    r = np.array([[v % int(p) for v in values] for p in ps], dtype=np.int64)
    room = (top - 256) // ps[:, None]
    r = r + rng.integers(-room, room, r.shape) * ps[:, None]
    r[:, :2] = ((top - 256) // ps[:, None]) * ps[:, None] + r[:, :2] % ps[:, None]   # the extremes
    return r


def _pair_products(rng, m, size, dtype, complex_):
    """One slice pair's product stacks (m, size) as int64: residues of values up to the CRT
    bound (the first four: bound, -bound, 0, bound - 1) at representatives up to the int32 /
    2**50 extremes; complex: Karatsuba triples whose P1 - P2 and P3 - P1 - P2 are such
    values; int8: the residue GEMM's symmetric residues."""
    from ozaki import crt
    ps = np.array(crt.moduli(m))
    top = 2 ** 31 - 1 if dtype == np.int32 else 2 ** 50
    bound = crt.crt_bound(m)

    def values():
        v = [int(x) * bound // 2 ** 62 for x in rng.integers(-2 ** 62, 2 ** 62, size)]
        v[:4] = [bound, -bound, 0, bound - 1]
        return v

    if dtype == np.int8:
        re, im = values(), values()
        if not complex_:
            return (inputs.symmetric_residues(np.tile(re, (m, 1)), ps[:, None]).astype(np.int64),)
        P1 = inputs.symmetric_residues(rng.integers(-128, 128, (m, size)), ps[:, None])
        P2 = inputs.symmetric_residues(P1 - np.array(re, dtype=object), ps[:, None])
        P3 = inputs.symmetric_residues(np.array(im, dtype=object) + P1 + P2, ps[:, None])
        return tuple(P.astype(np.int64) for P in (P1, P2, P3))
    if not complex_:
        return (_representatives(rng, values(), ps, top),)
    re, im = values(), values()
    P1 = _representatives(rng, [0] * size, ps, top)
    P2 = _representatives(rng, [0] * size, ps, top)
    P2 = P2 - (P2 - (P1 - np.array(re, dtype=object) % ps[:, None]).astype(np.int64)) % ps[:, None]
    P3 = _representatives(rng, [0] * size, ps, top)
    want3 = (np.array(im, dtype=object) + P1 + P2) % ps[:, None]
    P3 = P3 - (P3 - want3.astype(np.int64)) % ps[:, None]
    assert ((P1 - P2 - np.array(re, dtype=object)) % ps[:, None] == 0).all()
    return (P1, P2, P3)


@pytest.mark.parametrize("m", [2, 16, 17, 49])
@pytest.mark.parametrize("shape,dtype,pairs", [((33, 61), np.int32, 1), ((64, 48), np.int32, 1),
                                                ((16, 20), np.int64, 1), ((9, 12), np.int64, 3),
                                                ((37, 45), np.int8, 1), ((5, 70), np.int8, 2)])
@pytest.mark.parametrize("complex_", [False, True])
def test_epilogue_kernel(rng, m, shape, dtype, pairs, complex_):
    """The GPU epilogue against numpy_backend.epilogue on _pair_products' adversarial stacks."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    size = int(np.prod(shape))
    products = [_pair_products(rng, m, size, dtype, complex_) for _ in range(pairs)]
    products = [tuple(P.reshape((m,) + shape).astype(dtype) for P in pair) for pair in products]
    shifts = list(range(pairs))
    ba, bb = rng.integers(-1100, 900, shape[0]), rng.integers(-1100, 900, shape[1])
    cpu = numpy_backend.epilogue(products, shifts, m, ba, bb)
    gpu = cupy_backend.epilogue([tuple(cupy.asarray(P) for P in pair) for pair in products], shifts, m,
                                cupy.asarray(ba), cupy.asarray(bb))
    assert len(cpu) == len(gpu) == (2 if complex_ else 1)
    for c, g in zip(cpu, gpu):
        assert same_bits(c, cupy.asnumpy(g))


# The fp8 tests run each way: the verified CuPy steps, and kernels/fp8_digits.cu
# (cupy_backend.NEW_KERNELS: on by default since their first device run, 2026-12-05).
new_kernels = pytest.mark.parametrize("new_kernels", ["none", "all"])


@new_kernels
@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_fp8_substrate_same_bits(rng, monkeypatch, mode, new_kernels):
    """substrate='fp8' on the GPU (cuBLASLt FP8) gives the CPU int8 substrate's bits."""
    monkeypatch.setenv("OZAKI_NEW_KERNELS", new_kernels)
    A, B = inputs.wide(rng, (37, 90), 40), inputs.wide(rng, (90, 21), 40)
    A[0, 0], B[1, 1] = 0.0, -0.0
    cpu, gpu = both(A, B, mode=mode, substrate="fp8")
    assert same_bits(cpu, gpu)
    assert same_bits(cpu, ozaki.matmul(A, B, mode=mode))
    if mode == "exact":
        assert same_bits(gpu, reference.exact_matmul(A, B))


@new_kernels
def test_fp8_substrate_complex_and_stack(rng, monkeypatch, new_kernels):
    monkeypatch.setenv("OZAKI_NEW_KERNELS", new_kernels)
    A = inputs.normal(rng, (3, 20, 33)) + 1j * inputs.normal(rng, (3, 20, 33))
    B = inputs.normal(rng, (3, 33, 18)) - 1j * inputs.normal(rng, (3, 33, 18))
    cpu, gpu = both(A, B, substrate="fp8")
    assert same_bits(cpu, gpu)


@pytest.mark.parametrize("k", [16, 4096, 262144])
def test_fp8_digit_gemms_exact_on_adversarial_sums(rng, k):
    """The Hopper question: FP8 tensor cores accumulate with fewer bits than FP32.
    Digit products all of one sign at the largest magnitude (64; partial sums
    up to 64 k = 2**24 at the XY GEMM's longest inner length 2 K_CHUNK), large
    terms followed by unit ones (a wide accumulator meets small addends), and
    random digits: every FP32 output must be the exact integer."""
    import cupy
    from ozaki.backends import cupy_backend
    from ozaki.gemm import fp8
    n = 32
    d = fp8.MAX_X
    Da = rng.integers(-d, d + 1, (1, n, k)).astype(np.int8)
    Dbt = rng.integers(-d, d + 1, (1, n, k)).astype(np.int8)
    Da[0, 0], Dbt[0, 0] = d, d                            # 64 k, one sign
    Da[0, 1], Dbt[0, 1] = -d, d                           # -64 k
    Da[0, 2], Dbt[0, 2, :k // 2] = d, d
    Dbt[0, 2, k // 2:] = 0
    Dbt[0, 2, -1] = 1                                      # 64 k/2 + 8: the unit survives?
    Da[0, 3, :k // 2], Da[0, 3, k // 2:] = d, 1           # big terms, then small ones
    Dbt[0, 3] = d
    got = cupy.asnumpy(cupy_backend.gemm_fp32_digits(cupy.asarray(Da), cupy.asarray(Dbt)))[0, 0]
    want = Da[0].astype(np.int64) @ Dbt[0].astype(np.int64).T
    assert np.abs(want).max() <= fp8.DIGIT_PRODUCT_MAX * k <= 2 ** 24
    bad = np.argwhere(got.astype(np.int64) != want)
    assert bad.size == 0, f"{len(bad)} inexact, first {bad[:3].tolist()}: {got[tuple(bad[0])]} != {want[tuple(bad[0])]}"


@new_kernels
def test_fp8_residue_gemm_across_chunks(rng, monkeypatch, new_kernels):
    """A residue product longer than one FP32-exact chunk (fp8.K_CHUNK lowered) equals the int8
    one, a matrix and a stack of three (batch, the rows of each padded to 16)."""
    import cupy
    monkeypatch.setenv("OZAKI_NEW_KERNELS", new_kernels)
    from ozaki.backends import cupy_backend
    from ozaki.gemm import fp8
    monkeypatch.setattr(fp8, "K_CHUNK", 64)
    Ra = cupy.asarray(rng.integers(-128, 128, (2, 24, 300)).astype(np.int8))
    Rbt = cupy.asarray(rng.integers(-128, 128, (2, 40, 300)).astype(np.int8))
    Ra[0], Rbt[0] = -128, -128
    assert cupy.array_equal(fp8.gemm(cupy_backend, Ra, Rbt), cupy_backend.gemm(Ra, Rbt))
    Ra, Rbt = Ra[:, :21], Rbt[:, :39]                       # 3 x 7 rows by 3 x 13
    assert cupy.array_equal(fp8.gemm(cupy_backend, Ra, Rbt, 3), cupy_backend.gemm(Ra, Rbt, 3))


@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("dtype,m", [(np.int32, 16), (np.int8, 15), (np.int64, 22)])
def test_complex_result_without_copy(rng, monkeypatch, out_dtype, dtype, m):
    """The epilogue writes a complex product's parts into one complex array, and
    complex_of of those two parts is that array (data.ptr the real part's), with
    numpy_backend's epilogue's bits; then ozaki.matmul on that path returns the
    epilogue's array itself.  The no-copy case holds only on the unfused path (cuBLAS
    or the residue GEMM, then epilogue), unblocked (one block of the workspace) and for
    a single matrix: the fused kernel writes separate parts, and blocks and stacks are
    assembled into separate parts, which complex_of copies."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    rows, cols = 24, 40
    stacks = [P.reshape(m, rows, cols).astype(dtype) for P in _pair_products(rng, m, rows * cols, dtype, True)]
    ba, bb = rng.integers(-90, -40, rows), rng.integers(-20, 0, cols)
    re, im = cupy_backend.epilogue([tuple(cupy.asarray(S) for S in stacks)], [0], m, cupy.asarray(ba),
                                   cupy.asarray(bb), out_dtype)
    want = numpy_backend.complex_of(*numpy_backend.epilogue([tuple(stacks)], [0], m, ba, bb, out_dtype))
    got = cupy_backend.complex_of(re, im)
    assert got.data.ptr == re.data.ptr and im.data.ptr == re.data.ptr + re.itemsize
    got = cupy.asnumpy(got)
    assert got.dtype == want.dtype == np.result_type(out_dtype, np.complex64) and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    # through ozaki.matmul: the result is the epilogue's array (cuBLAS path, one block, one matrix)
    written = []
    real_epilogue = cupy_backend.epilogue

    def spy(*args, **kw):
        outs = real_epilogue(*args, **kw)
        written.append(outs[0].data.ptr)
        return outs

    monkeypatch.setattr(cupy_backend, "epilogue", spy)
    A = inputs.normal(rng, (40, 70)) + 1j * inputs.normal(rng, (40, 70))
    B = inputs.normal(rng, (70, 36)) + 1j * inputs.normal(rng, (70, 36))
    with ozaki.config(path="cublas"):
        C = ozaki.matmul(cupy.asarray(A.astype(np.result_type(out_dtype, np.complex64))),
                         cupy.asarray(B.astype(np.result_type(out_dtype, np.complex64))), mode="accurate")
    assert len(written) == 1 and C.data.ptr == written[0]
    cpu = ozaki.matmul(A.astype(C.dtype), B.astype(C.dtype), mode="accurate")
    assert np.array_equal(cupy.asnumpy(C).view(np.uint8), cpu.view(np.uint8))


def test_epilogue_reads_views(rng):
    """Products read through a tile view (row stride wider than the tile): the same bits as
    the CPU epilogue of that tile."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    m, n, k = 16, 24, 300
    Ra = rng.integers(-128, 128, (m, n, k)).astype(np.int8)
    Rbt = rng.integers(-128, 128, (m, n, k)).astype(np.int8)
    prod = cupy_backend.gemm(cupy.asarray(Ra), cupy.asarray(Rbt))[0]
    cpu = numpy_backend.gemm(Ra, Rbt)[0]
    assert np.array_equal(cupy.asnumpy(prod), cpu)
    ba, bb = rng.integers(-60, 0, n), rng.integers(-60, 0, n)
    tile = prod[:, 4:20, 8:16]
    assert not tile.flags.c_contiguous
    got = cupy_backend.epilogue([(tile,)], [0], m, cupy.asarray(ba[4:20]), cupy.asarray(bb[8:16]))[0]
    want = numpy_backend.epilogue([(cpu[:, 4:20, 8:16],)], [0], m, ba[4:20], bb[8:16])[0]
    assert same_bits(cupy.asnumpy(got), want)


@pytest.mark.parametrize("forced", [None, "1", "2", "4"])
@pytest.mark.parametrize("dtype,m,complex_", [(np.int32, 14, False), (np.int8, 16, False), (np.int64, 22, False),
                                              (np.int32, 16, True), (np.int8, 15, True)])
def test_epilogue_vec(rng, monkeypatch, forced, dtype, m, complex_):
    """Adjacent outputs a thread (VEC): the same bits as the CPU for tiles whose columns,
    strides and base pointers allow each VEC and for ones that do not (an odd column
    count, a base one element off the pack's alignment), which fall back to a smaller VEC."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    monkeypatch.setenv("OZAKI_NEW_KERNELS", "epilogue_vec")
    if forced:
        monkeypatch.setenv("OZAKI_EPILOGUE_VEC", forced)
    else:
        monkeypatch.delenv("OZAKI_EPILOGUE_VEC", raising=False)
    rows, cols = 24, 40
    stacks = [P.reshape(m, rows, cols) for P in _pair_products(rng, m, rows * cols, dtype, complex_)]
    ba, bb = rng.integers(-90, -40, rows), rng.integers(-20, 0, cols)
    tiles = {"whole": (slice(None), slice(None)), "offset": (slice(1, 23), slice(1, 37)),
             "odd": (slice(0, 24), slice(4, 37)), "pair": (slice(2, 22), slice(2, 38))}
    for name, (r, c) in tiles.items():
        cpu = [S[:, r, c].astype(dtype) for S in stacks]
        gpu = [cupy.asarray(S.astype(dtype))[:, r, c] for S in stacks]
        ncols = gpu[0].shape[2]
        vec = cupy_backend._epilogue_vec(gpu, m, complex_, 1, ncols, gpu[0].strides[0] // gpu[0].itemsize,
                                         gpu[0].strides[1] // gpu[0].itemsize)
        want_vec = int(forced) if forced else dict(cupy_backend.EPILOGUE_VEC[complex_])[
            next(most for most, _ in cupy_backend.EPILOGUE_VEC[complex_] if m <= most)]
        if name == "whole":
            assert vec == want_vec, (name, vec)
        elif name in ("offset", "odd"):
            assert vec == 1, (name, vec)          # one element off, or 33 columns
        else:
            assert vec == min(want_vec, 2), (name, vec)
        got = cupy_backend.epilogue([tuple(gpu)], [0], m, cupy.asarray(ba[r]), cupy.asarray(bb[c]))
        want = numpy_backend.epilogue([tuple(cpu)], [0], m, ba[r], bb[c])
        for g, w in zip(got, want):
            assert same_bits(cupy.asnumpy(g), w), (name, vec)


def test_new_kernels_setting_checked(monkeypatch):
    from ozaki.backends import cupy_backend
    for text, on in (("all", True), ("none", False), (" epilogue_vec , fp8_digits", True), ("fp8_digits", False)):
        monkeypatch.setenv("OZAKI_NEW_KERNELS", text)
        assert cupy_backend._new_kernel("epilogue_vec") is on
    for bad in ("epilogue-vec", "all,none", "none,fp8_digits"):
        monkeypatch.setenv("OZAKI_NEW_KERNELS", bad)
        with pytest.raises(ValueError, match="OZAKI_NEW_KERNELS"):
            cupy_backend._new_kernel("epilogue_vec")


def test_epilogue_vec_rejects_bad_override(monkeypatch):
    import cupy
    from ozaki.backends import cupy_backend
    monkeypatch.setenv("OZAKI_EPILOGUE_VEC", "3")
    P = cupy.zeros((14, 4, 8), dtype=cupy.int32)
    with pytest.raises(ValueError, match="OZAKI_EPILOGUE_VEC"):
        cupy_backend.epilogue([(P,)], [0], 14, cupy.zeros(4, dtype=cupy.int64), cupy.zeros(8, dtype=cupy.int64))


def test_runs_on_the_current_stream(rng):
    """The raw cuBLAS calls follow CuPy's current stream (CuPy's handle is shared)."""
    import cupy
    from cupy.cuda import cublas
    A, B = inputs.normal(rng, (64, 80)), inputs.normal(rng, (80, 48))
    cpu = ozaki.matmul(A, B)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        dA, dB = cupy.asarray(A), cupy.asarray(B)
        gpu = ozaki.matmul(dA, dB)
        assert cublas.getStream(cupy.cuda.device.get_cublas_handle()) == stream.ptr
    stream.synchronize()
    assert same_bits(cpu, cupy.asnumpy(gpu))


@pytest.mark.parametrize("rows, kpad", [(40, 70), (33, 16), (7, 5)])
def test_add_residues_kernel(rng, rows, kpad):
    """Karatsuba's residue sums on the device against numpy's: planes of 16-byte multiples
    (the 16-byte path) and not (the byte path), and a row slice of a stack (planes apart,
    as prepared residues are read)."""
    import cupy
    from ozaki import crt
    from ozaki.backends import cupy_backend, numpy_backend
    m = 49
    ps = np.array(crt.moduli(m)).reshape(-1, 1, 1)
    x = (rng.integers(0, 10 ** 6, (m, rows, kpad)) % ps - ps // 2).astype(np.int8)
    y = (rng.integers(0, 10 ** 6, (m, rows, kpad)) % ps - ps // 2).astype(np.int8)
    got = cupy_backend.add_residues(cupy.asarray(x), cupy.asarray(y), m)
    assert np.array_equal(cupy.asnumpy(got), numpy_backend.add_residues(x, y, m))
    lo, hi = 1, max(2, rows - 2)
    got = cupy_backend.add_residues(cupy.asarray(x)[:, lo:hi], cupy.asarray(y)[:, lo:hi], m)
    assert np.array_equal(cupy.asnumpy(got), numpy_backend.add_residues(x[:, lo:hi], y[:, lo:hi], m))


def test_fixups_on_a_stack(rng):
    """Signed zeros and NaN/inf on a stack where only some matrices need them."""
    A = inputs.normal(rng, (5, 6, 9))
    B = inputs.normal(rng, (5, 9, 4))
    A[1] = -0.0
    A[3, 2, 4] = np.inf
    A[4] = 0.0
    B[4] = -0.0
    cpu, gpu = both(A, B)
    assert same_bits(cpu, gpu)
    for g in range(5):                       # the stack's fix-ups are each matrix's own
        assert same_bits(cpu[g], ozaki.matmul(A[g], B[g])), g


@pytest.mark.parametrize("rows,k", [(1, 1), (70, 16), (13, 64), (21, 100), (45, 200), (9, 1024), (5, 1025), (3, 3000),
                                    (300, 2100), (3, 16384)])
def test_scan_rows_kernel(rng, rows, k):
    """Short rows (4, 8, 16 or 32 threads each, several rows a warp, a partial last block)
    and long rows (a block each) against the numpy backend, with zeros, specials,
    subnormals and huge values."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    x = inputs.sprinkle_specials(rng, inputs.wide(rng, (rows, k), 500), 0.02)
    x[0, : max(1, k // 3)] = 2.0 ** -1070
    x = np.concatenate([x, inputs.ceiling_rows(rng, (6, k))])     # maxima subnormal and near 2**1024
    rows = x.shape[0]
    bits = min(30, 62 - k.bit_length())                  # certified's bound (scheme.bound_side)
    for ceil_bits, hat, sumsq, sums in ((0, False, False, False), (6, True, False, False), (15, False, True, False),
                                        (5, True, True, False), (bits, False, False, True)):
        cpu = numpy_backend.scan_rows(x, ceil_bits, hat, sumsq, sums)
        gpu = cupy_backend.scan_rows(cupy.asarray(x), ceil_bits, hat, sumsq, sums)
        for c, g in zip(cpu, gpu):
            if c is None:
                assert g is None
            else:
                g = cupy.asnumpy(g)[..., :k] if g.ndim == 2 else cupy.asnumpy(g)
                assert np.array_equal(c, g)
    # complex rows [Re | Im]: the halves' 5-bit ceilings added (scheme.plan_accurate)
    cpu = numpy_backend.scan_rows(x, 5, True, halves=True)[3]
    gpu = cupy.asnumpy(cupy_backend.scan_rows(cupy.asarray(x), 5, True, halves=True)[3])
    assert cpu.shape == (rows, k // 2) and gpu.shape == (rows, -(-(k // 2) // 16) * 16)
    assert np.array_equal(cpu, gpu[:, :k // 2]) and not gpu[:, k // 2:].any()


@pytest.mark.parametrize("spread", [0, 60, 600])
def test_certified_same_bits(rng, spread):
    """The bound and the gap test are elementwise and order-free: the same entries are
    recomputed on both backends, so the bits agree (stacks and complex too)."""
    A, B = inputs.wide(rng, (3, 40, 70), spread), inputs.wide(rng, (3, 70, 30), spread)
    cpu, gpu = both(A, B, mode="certified")
    assert same_bits(cpu, gpu)
    Z = A[0] + 1j * inputs.wide(rng, (40, 70), spread)
    cpu, gpu = both(Z, B[0], mode="certified")
    assert np.array_equal(cpu.view(np.int64), gpu.view(np.int64))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("parts", [1, 2])
def test_uncertified_kernel_same_as_numpy(rng, dtype, parts):
    """kernels/certify.cu marks and counts the entries scheme.uncertified does (numpy), on
    a stack with factors over the whole range, results with zeros, subnormals, binade
    edges and overflow, and NaN/inf rows and columns."""
    import cupy
    from ozaki import scheme
    from ozaki.backends import cupy_backend, numpy_backend
    batch, m, n = 3, 50, 40
    C = [inputs.wide(rng, (batch, m, n), 400 if dtype == np.float64 else 60).astype(dtype) for _ in range(parts)]
    C[0][0, 1, :5] = [0.0, -0.0, np.inf, 1.0, 2.0]

    def side(rows):
        S = np.where(rng.random(rows) < 0.1, 0.0, np.ldexp(rng.random(rows) + 0.5, rng.integers(0, 62, rows)))
        beta = rng.integers(-1150, 300, rows)
        return (S, rng.integers(-1000, 1000, rows), beta, (S == 0) | (beta <= -1074)), rng.random(rows) < 0.05

    (side_a, ieee_a), (side_b, ieee_b) = side(batch * m), side(batch * n)
    K = 12345.0
    bad, counts = scheme.uncertified(numpy_backend, C, side_a, side_b, ieee_a, ieee_b, K)
    dev = lambda x: [cupy.asarray(v) for v in x]
    gbad, gcounts = cupy_backend.uncertified(dev(C), dev(side_a), dev(side_b), cupy.asarray(ieee_a),
                                             cupy.asarray(ieee_b), K)
    assert np.array_equal(cupy.asnumpy(gbad), bad)
    assert gcounts == counts and 0 < sum(counts) < batch * m * n


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("parts", [1, 2])
def test_uncertified_kernel_with_residuals_same_as_numpy(rng, dtype, parts):
    """exact mode's test (certify.cu RESIDUAL, correctly_rounded) marks and counts the
    entries scheme.uncertified(residuals=...) does, residuals near half a gap, NaN
    (not formed) and zero among them."""
    import cupy
    from ozaki import scheme
    from ozaki.backends import cupy_backend, numpy_backend
    batch, m, n = 2, 40, 30
    C = [inputs.wide(rng, (batch, m, n), 300 if dtype == np.float64 else 40).astype(dtype) for _ in range(parts)]
    gap = [scheme.gaps(np, np.abs(c.astype(np.float64)), np.finfo(dtype)) for c in C]
    R = [g * (rng.random(g.shape) - 0.5) * rng.choice([1.0, 0.999999, 1e-6], g.shape) for g in gap]
    R[0][0, 0, :3] = [np.nan, 0.0, -0.0]
    S = lambda rows: np.ldexp(rng.random(rows) + 0.5, rng.integers(0, 62, rows))   # noqa: E731
    side_a = (S(batch * m), rng.integers(-60, -40, batch * m), rng.integers(-120, -100, batch * m),
              np.zeros(batch * m, dtype=bool))
    side_b = (S(batch * n), rng.integers(-60, -40, batch * n), rng.integers(-120, -100, batch * n),
              np.zeros(batch * n, dtype=bool))
    ieee_a, ieee_b = rng.random(batch * m) < 0.05, np.zeros(batch * n, dtype=bool)
    bad, counts = scheme.uncertified(numpy_backend, C, side_a, side_b, ieee_a, ieee_b, 500.0, residuals=R)
    dev = lambda x: [cupy.asarray(v) for v in x]                                    # noqa: E731
    gbad, gcounts = cupy_backend.uncertified(dev(C), dev(side_a), dev(side_b), cupy.asarray(ieee_a),
                                             cupy.asarray(ieee_b), 500.0, residuals=dev(R))
    assert np.array_equal(cupy.asnumpy(gbad), bad)
    assert gcounts == counts and 0 < sum(counts) < batch * m * n


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("spread", [0, 60, 400])
def test_exact_by_test_same_bits(rng, monkeypatch, dtype, spread):
    """Exact mode by Ziv's strategy on the device (scheme.EXACT_BY_TEST; off by default)
    gives the CPU's exact-mode bits (its slices), specials and signed zeros included."""
    from ozaki import scheme
    monkeypatch.setattr(scheme, "EXACT_BY_TEST", True)
    spread = min(spread, 40) if dtype == np.float32 else spread
    A, B = inputs.wide(rng, (3, 40, 70), spread), inputs.wide(rng, (3, 70, 30), spread)
    if dtype == np.complex128:
        A, B = A + 1j * inputs.wide(rng, A.shape, spread), B - 1j * inputs.wide(rng, B.shape, spread)
    A[0, 1] = -0.0
    B[1, :, 2] = np.nan if dtype != np.float32 else 0.0
    A, B = A.astype(dtype), B.astype(dtype)
    cpu, gpu = both(A, B, mode="exact")
    assert scheme.certify_counts["entries"] == 3 * 40 * 30, "the route by test did not run on the device"
    nan = np.isnan(cpu)
    assert np.array_equal(nan, np.isnan(gpu))
    assert np.where(nan, 0, cpu).tobytes() == np.where(nan, 0, gpu).tobytes()


@pytest.mark.parametrize("path", ["fused", "cublas", "cutlass"])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("workspace", [None, 150_000])      # 150_000: in blocks, written in place
def test_epilogue_residuals_same_as_numpy(rng, path, complex_, workspace):
    """The epilogues' rounding residuals (epilogue.cu and fused.cu, RESIDUAL) are numpy's
    (kulisch.round_to(residual=True)) on every product path, real and complex."""
    import cupy
    from ozaki import scheme
    from ozaki.backends import cupy_backend, numpy_backend
    A, B = inputs.wide(rng, (1, 70, 90), 30), inputs.wide(rng, (1, 90, 50), 30)
    if complex_:
        A, B = A + 1j * inputs.wide(rng, A.shape, 30), B - 1j * inputs.wide(rng, B.shape, 30)
    if path == "cutlass" and cupy_backend.residue_gemm_available() is not True:
        pytest.skip("the residue GEMM is not built here")
    got = []
    for be, X, Y in ((numpy_backend, A, B), (cupy_backend, cupy.asarray(A), cupy.asarray(B))):
        C, _, _ = scheme._finite_piece(X, Y, "accurate", 20, be, workspace or be.default_workspace(), complex_,
                                       "int8", path, np.dtype(np.float64), residual=True)
        got.append([np.asarray(c if be is numpy_backend else cupy.asnumpy(c)) for c in C])
    assert len(got[0]) == len(got[1]) == (4 if complex_ else 2)
    for c, g in zip(*got):
        assert np.array_equal(np.isnan(c), np.isnan(g))
        assert np.array_equal(np.where(np.isnan(c), 0, c).view(np.int64), np.where(np.isnan(g), 0, g).view(np.int64))


@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_exact_entries_against_fractions(rng, out_dtype):
    """kernels/exact_dot.cu's exact_entries: each entry the correctly rounded exact dot
    product (Fractions), real and complex parts, wide ranges with cancellation, -0 only
    where every term is -0; None when the window is too wide."""
    import cupy
    from ozaki.backends import cupy_backend
    K = 150
    spread = 300 if out_dtype == np.float64 else 40
    A, Bt = inputs.wide(rng, (30, K), spread), inputs.wide(rng, (20, K), spread)
    A[3] = -0.0
    A[4, ::2] = 0.0
    Bt[5, 1::2] = -0.0
    A[6] = np.concatenate([Bt[7, :K // 2], -Bt[7, :K // 2]])        # cancels against row 7 of B^T
    Bt[7, K // 2:] = Bt[7, :K // 2]
    rows = rng.integers(0, 30, 500)
    cols = rng.integers(0, 20, 500)
    rows[:4], cols[:4] = [3, 4, 6, 0], [5, 5, 7, 5]
    for parts in (1, 2):
        got = cupy_backend.exact_entries(cupy.asarray(A), cupy.asarray(Bt), cupy.asarray(rows), cupy.asarray(cols),
                                         parts, out_dtype)
        assert got is not None
        half = K // 2
        for part, values in zip((0,) if parts == 1 else (1, 2), got):
            values = cupy.asnumpy(values)
            for e in range(len(rows)):
                a, b = A[rows[e]], Bt[cols[e]]
                if part == 1:
                    a = np.concatenate([a[:half], -a[half:]])
                elif part == 2:
                    b = np.concatenate([b[half:], b[:half]])
                want = np.array(reference.exact_dot(a, b, out_dtype), dtype=out_dtype)
                assert values[e].tobytes() == want.tobytes(), (part, e)
    wide = A.copy()
    wide[0, 0], wide[0, 1] = 1e300, 1e-300
    assert cupy_backend.exact_entries(cupy.asarray(wide), cupy.asarray(Bt), cupy.asarray(rows[:1] * 0),
                                      cupy.asarray(cols[:1]), 1, np.float64) is None


@pytest.mark.parametrize("spread", [0, 300])
def test_certified_recomputes_entries_one_by_one(rng, spread):
    """On the GPU the failing entries go through exact_entries (no exact-mode blocks) and
    the bits equal the CPU's, which recomputes them by blocks."""
    from ozaki import scheme
    A, B = inputs.wide(rng, (2, 60, 200), spread), inputs.wide(rng, (2, 200, 50), spread)
    cpu = ozaki.matmul(A, B, mode="certified", num_moduli=12)
    assert scheme.certify_counts["blocks"] > 0
    import cupy
    gpu = cupy.asnumpy(ozaki.matmul(cupy.asarray(A), cupy.asarray(B), mode="certified", num_moduli=12))
    counts = scheme.certify_counts
    assert counts["blocks"] == 0 and 0 < counts["failing"] == counts["recomputed"]
    assert same_bits(cpu, gpu)


def test_row_bits_same_as_numpy(rng):
    """Exact mode's per-row bit ranges (scan_rows.cu's ROW_BITS pass on the GPU) and, with
    flags=True, scan_rows's flags from the same pass, against numpy's: the whole exponent
    range, subnormals, signed zeros, NaN and inf (read as zero), rows of zeros and rows with
    nothing finite, short (a warp a row) and long rows, rows without entries."""
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    for shape in ((7, 1), (33, 300), (5, 5000)):
        x = inputs.bit_range_rows(rng, shape)
        want = numpy_backend.row_bits(x, flags=True)
        assert np.array_equal(want[2], numpy_backend.scan_rows(x)[1])
        for flags in (False, True):
            got = cupy_backend.row_bits(cupy.asarray(x), flags=flags)
            assert len(got) == 2 + flags
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and np.array_equal(cupy.asnumpy(g), w)
    empty = cupy_backend.row_bits(cupy.zeros((3, 0)))
    assert all(np.array_equal(cupy.asnumpy(v), np.zeros(3, dtype=np.int64)) for v in empty)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_contiguous_and_assign_through_tiles(rng, dtype):
    """cupy_backend.contiguous / assign (kernels/transpose.cu) on the views ozaki.fft reads
    and writes (a row block of an axis moved last; slabs of the first axis), sides off the
    32-point tile, against CuPy's own copies, bit for bit, nothing else written."""
    import cupy
    from ozaki.backends import cupy_backend as cb

    def data(shape):
        x = rng.standard_normal(shape)
        return (x + 1j * rng.standard_normal(shape)).astype(dtype) if dtype == np.complex128 else x

    from ozaki.fft.interface import _rows_view

    def views(arr):
        n0 = arr.shape[0]
        rows = _rows_view(cupy.moveaxis(arr, 0, -1))          # axis 0's rows, as interface reads them
        return [rows[3:rows.shape[0] - 1], cupy.moveaxis(arr, 1, -1)[1:n0]]   # and axis 1's slabs

    for shape in [(33, 40, 70), (5, 64, 96), (3, 1, 45), (2, 31, 2)]:
        a = cupy.asarray(data(shape))
        for i in range(2):
            v = views(a)[i]
            got = cb.contiguous(v)
            assert got.flags.c_contiguous and got.shape == v.shape
            assert np.array_equal(cupy.asnumpy(got).view(np.uint8), cupy.asnumpy(cupy.ascontiguousarray(v)).view(np.uint8))
            expect = a.copy()
            src = cupy.asarray(data(v.shape))
            cb.assign(v, src)
            views(expect)[i][...] = src
            assert np.array_equal(cupy.asnumpy(a).view(np.uint8), cupy.asnumpy(expect).view(np.uint8))
    # views of other layouts go through CuPy's copy
    b = cupy.asarray(data((8, 9)))
    assert cb._transposed_layout(b[:, ::2]) is None and cb._transposed_layout(b) is None
    assert cb._transposed_layout(b.T) == (1, 9, 8, 9, 0)
    assert np.array_equal(cupy.asnumpy(cb.contiguous(b[::2, ::3])), cupy.asnumpy(b)[::2, ::3])


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_stacks_b_rows_through_tiled_transposes(rng, monkeypatch, mode):
    """NEW_KERNELS tiled_bt: a stack's B^T rows made by transpose.cu's tiles give the CPU's
    bits, real and complex, with specials, on every path (the fused kernel, the residue GEMM,
    cuBLAS), eager and replayed; the tiles were used."""
    import cupy
    from ozaki.backends import cupy_backend
    monkeypatch.setenv("OZAKI_NEW_KERNELS", ",".join(dict.fromkeys(cupy_backend.NEW_KERNELS_ON + ("tiled_bt",))))
    transposes = []
    real = cupy_backend._transpose

    def spy(*args):
        transposes.append(args[-3:])
        return real(*args)
    monkeypatch.setattr(cupy_backend, "_transpose", spy)
    A = inputs.wide(rng, (6, 33, 70), 10)
    B = inputs.sprinkle_zeros(rng, inputs.wide(rng, (6, 70, 45), 10))
    A[2] = inputs.sprinkle_specials(rng, A[2])
    Z = inputs.normal(rng, (5, 16, 40)) + 1j * inputs.normal(rng, (5, 16, 40))
    W = inputs.normal(rng, (5, 40, 33)) - 1j * inputs.normal(rng, (5, 40, 33))
    for X, Y in ((A, B), (Z, W)):
        cpu = ozaki.matmul(X, Y, mode=mode)
        dX, dY = cupy.asarray(X), cupy.asarray(Y)
        for path in ("fused", "cutlass", "cublas"):
            del transposes[:]
            with ozaki.config(path=path):
                for _ in range(4):          # eager, then the graphs' captures and a replay
                    gpu = cupy.asnumpy(ozaki.matmul(dX, dY, mode=mode))
                    assert same_bits(cpu, gpu), (X.dtype, path)
            # (rows, columns, batch) of each tiled transpose: the whole stack of B's (one piece)
            assert transposes and all(t[-1] == len(Y) for t in transposes), (X.dtype, path, transposes)
