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


def test_blocked_workspace(rng):
    A, B = inputs.wide(rng, (300, 200), 10), inputs.wide(rng, (200, 170), 10)
    cpu, _ = both(A, B, mode="accurate")
    with ozaki.config(workspace=400_000):
        _, gpu = both(A, B, mode="accurate")
    assert same_bits(cpu, gpu)


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

@pytest.mark.parametrize("m", [1, 7, 16, 49])
@pytest.mark.parametrize("width,nearest", [(None, False), (None, True), (64, False)])
def test_residues_kernel(rng, m, width, nearest):
    import cupy
    from ozaki.backends import cupy_backend, numpy_backend
    rows, k = 37, 203                                   # k not a multiple of the 8-column groups
    x = inputs.wide(rng, (rows, k), 300)
    x[0, :5] = [0.0, -0.0, 5e-324, -2.2250738585072014e-308, np.inf]
    x[1] = np.nextafter(2.0 ** rng.integers(-40, 40, k), 0) * rng.choice([-1, 1], k)   # all-ones mantissas
    beta = rng.integers(-1100, 40, rows)
    beta[2] = -60                                       # shifts s > 24 in that row: the two-step path
    beta[3] = numpy_backend.split(x)[2][3].max()        # digits q 2**s with s <= 24: the one-step path
    cpu = numpy_backend.residues(x, beta, width, m, nearest)
    gpu = cupy_backend.residues(cupy.asarray(x), cupy.asarray(beta), width, m, nearest)
    assert np.array_equal(cpu, cupy.asnumpy(gpu)[:, :, :k])
    assert not cupy.asnumpy(gpu)[:, :, k:].any()


@pytest.mark.parametrize("m", [2, 16, 17, 49])
@pytest.mark.parametrize("shape,dtype,pairs", [((33, 61), np.int32, 1), ((64, 48), np.int32, 1),
                                                ((16, 20), np.int64, 1), ((9, 12), np.int64, 3)])
def test_epilogue_kernel(rng, m, shape, dtype, pairs):
    """Products at the int32 / 2**50 extremes, residues of values up to the CRT bound."""
    import cupy
    from ozaki import crt
    from ozaki.backends import cupy_backend, numpy_backend
    ps = np.array(crt.moduli(m))
    top = 2 ** 31 - 1 if dtype == np.int32 else 2 ** 50
    bound = crt.crt_bound(m)
    products = []
    size = int(np.prod(shape))
    for _ in range(pairs):
        values = [int(v) * bound // 2 ** 62 for v in rng.integers(-2 ** 62, 2 ** 62, size)]
        values[:4] = [bound, -bound, 0, bound - 1]
        r = np.array([[v % int(p) for v in values] for p in ps], dtype=np.int64)
        # any representative, up to the dtype's limit: add multiples of p
        room = (top - 256) // ps[:, None]
        r = r + rng.integers(-room, room, r.shape) * ps[:, None]
        r[:, :2] = ((top - 256) // ps[:, None]) * ps[:, None] + r[:, :2] % ps[:, None]   # the extremes
        products.append(r.reshape((m,) + shape).astype(dtype))
    shifts = list(range(pairs))
    ba, bb = rng.integers(-1100, 900, shape[0]), rng.integers(-1100, 900, shape[1])
    cpu = numpy_backend.epilogue(products, shifts, m, ba, bb)
    gpu = cupy_backend.epilogue([cupy.asarray(p) for p in products], shifts, m, cupy.asarray(ba), cupy.asarray(bb))
    assert same_bits(cpu, cupy.asnumpy(gpu))


def test_fp8_substrate_not_built_on_gpu():
    import cupy
    a = cupy.ones((4, 4))
    with pytest.raises(NotImplementedError, match="fp8"):
        ozaki.matmul(a, a, substrate="fp8")
