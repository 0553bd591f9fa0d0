"""float32 and complex64 results on the GPU: the CPU backend's bits on both paths
(config(path="fused") and "cublas"), the kernels built with OUT_T=float (needs a CUDA device)."""

import numpy as np
import pytest

import ozaki
from ozaki import reference, scheme
from tests import inputs
from tests.bits import same_bits
from tests.backends.test_fused import on_path

pytestmark = pytest.mark.gpu

F32 = np.float32
PATHS = ["fused", "cublas"]


def f32(x):
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(F32)


def chosen(path, A, B, mode):
    """The path the GPU backend takes for this product (so a "fused" test cannot run the other)."""
    from ozaki.backends import cupy_backend
    m, k = A.shape[-2:]
    n = B.shape[-1]
    parts = 3 if np.iscomplexobj(A) or np.iscomplexobj(B) else 1
    nm = scheme.default_num_moduli(mode, k * (2 if parts == 3 else 1), F32)
    return cupy_backend.choose_path(path, m, n, k, 1, nm, parts)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode", ["fast", "accurate", "exact", "certified"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 3, 7), (63, 65, 64), (130, 300, 70)])
def test_float32_same_bits(rng, path, mode, shape):
    m, k, n = shape
    A, B = f32(inputs.wide(rng, (m, k), 6)), f32(inputs.wide(rng, (k, n), 6))
    assert chosen(path, A, B, "accurate") == path
    cpu = ozaki.matmul(A, B, mode=mode)
    gpu = on_path(path, A, B, mode=mode)
    assert gpu.dtype == F32 and same_bits(cpu, gpu)
    if mode == "exact" and m * n <= 500:
        assert same_bits(gpu, reference.exact_matmul(A, B, dtype=F32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_complex64_same_bits(rng, path, mode):
    A = (f32(inputs.wide(rng, (40, 70), 8)) + 1j * f32(inputs.wide(rng, (40, 70), 8))).astype(np.complex64)
    B = (f32(inputs.wide(rng, (70, 33), 8)) + 1j * f32(inputs.wide(rng, (70, 33), 8))).astype(np.complex64)
    cpu = ozaki.matmul(A, B, mode=mode)
    gpu = on_path(path, A, B, mode=mode)
    assert gpu.dtype == np.complex64 and same_bits(cpu, gpu)
    Br = f32(inputs.normal(rng, (70, 33)))                    # complex64 x float32
    assert same_bits(ozaki.matmul(A, Br, mode=mode), on_path(path, A, Br, mode=mode))


@pytest.mark.parametrize("path", PATHS)
def test_float32_adversarial(rng, path):
    """Near float32 ties (where rounding via float64 goes wrong), subnormal results,
    overflow to inf, cancellation, signed zeros, NaN/inf, wide exponent ranges."""
    from tests.test_float32 import near_ties
    cases = [near_ties(rng, 40, kind) for kind in ("above", "below", "tie", "subnormal", "mixed")]
    cases += [(f32(rng.standard_normal((12, 9)) * np.exp2(rng.integers(-90, -60, (12, 9)))),
               f32(rng.standard_normal((9, 7)) * np.exp2(rng.integers(-90, -60, (9, 7))))),
              (f32(rng.standard_normal((8, 10)) * 2.0 ** 66), f32(rng.standard_normal((10, 6)) * 2.0 ** 64)),
              tuple(f32(x) for x in inputs.cancelling(rng, 16, 64, 8)),
              (inputs.sprinkle_specials(rng, f32(inputs.normal(rng, (16, 40)))),
               inputs.sprinkle_zeros(rng, f32(inputs.normal(rng, (40, 16))))),
              (f32(inputs.wide(rng, (20, 50), 60)), f32(inputs.wide(rng, (50, 9), 60)))]
    for A, B in cases:
        for mode in ("fast", "accurate", "exact", "certified"):
            assert same_bits(ozaki.matmul(A, B, mode=mode), on_path(path, A, B, mode=mode)), mode
        assert same_bits(on_path(path, A, B, mode="exact"), reference.exact_matmul(A, B, dtype=F32))


@pytest.mark.parametrize("path", PATHS)
def test_float32_stacks_and_exact_slices(rng, path):
    A, B = f32(inputs.wide(rng, (6, 20, 30), 60)), f32(inputs.wide(rng, (6, 30, 10), 60))
    for mode, nm in (("exact", None), ("accurate", None), ("accurate", 12), ("fast", 5)):
        assert same_bits(ozaki.matmul(A, B, mode=mode, num_moduli=nm), on_path(path, A, B, mode=mode, num_moduli=nm))


def test_float32_out_and_dot(rng):
    import cupy
    A, B = f32(inputs.normal(rng, (9, 17))), f32(inputs.normal(rng, (17, 5)))
    out = cupy.empty((9, 5), F32)
    ozaki.matmul(cupy.asarray(A), cupy.asarray(B), out=out, mode="exact")
    assert same_bits(cupy.asnumpy(out), ozaki.matmul(A, B, mode="exact"))
    d = ozaki.dot(cupy.asarray(A[0]), cupy.asarray(B[:, 0]), mode="exact")
    assert d.dtype == F32 and same_bits(cupy.asnumpy(d), np.asarray(ozaki.dot(A[0], B[:, 0], mode="exact")))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_widen_keeps_every_float32(rng, dtype):
    """cupy_backend.widen gives numpy's exact float32 -> float64 widening bit for bit:
    subnormals (which the device's float conversion flushed), signed zeros, NaN, inf,
    the extremes, and random bit patterns; 0-d and empty arrays too."""
    import cupy
    from ozaki.backends import cupy_backend
    tiny = np.arange(1, 1 << 12, dtype=np.int32).view(F32)          # the lowest subnormals
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149, -(2.0 ** -149), 2.0 ** -126,
                      np.nextafter(F32(2.0 ** -126), F32(0)), np.finfo(F32).max, -np.finfo(F32).max], dtype=F32)
    noise = rng.integers(-2 ** 31, 2 ** 31, 4096, dtype=np.int64).astype(np.int32).view(F32)
    x = np.concatenate([tiny, -tiny, edges, noise])
    if dtype == np.complex64:
        x = x[: x.size // 2 * 2].view(np.complex64)
    x = x[: x.size // 2 * 2]                                          # pairs: the 2-D view below
    for a in (x, x.reshape(-1, 2)[:, ::-1], x[:0], x[3]):
        a = np.asarray(a)
        assert same_bits(cupy.asnumpy(cupy_backend.widen(cupy.asarray(a))), a.astype(np.result_type(a, np.float64)))


def test_exact_mode_keeps_float32_subnormal_inputs(rng):
    """A float32 subnormal term next to 2**-75 terms: exact mode keeps it (the case the
    flushed widening lost on both paths in run a15af3b)."""
    from tests.test_float32 import near_ties, exact32
    A, B = near_ties(rng, 40, "subnormal")
    for path in PATHS:
        assert same_bits(on_path(path, A, B, mode="exact"), exact32(A, B))


def test_mixed_kinds_keep_float32_subnormals(rng):
    """float32 next to complex64: the real operand is widened from its bits before it
    becomes complex, so its subnormal terms survive in exact mode (GPU bits == CPU bits)."""
    from tests.test_float32 import near_ties
    A, B = near_ties(rng, 40, "subnormal")
    Bc = (B + 1j * B[::-1]).astype(np.complex64)
    for path in PATHS:
        assert same_bits(on_path(path, A, Bc, mode="exact"), ozaki.matmul(A, Bc, mode="exact"))
