"""Prepared operands on the GPU: the CPU's bits, on both GPU paths (needs a CUDA device)."""

import numpy as np
import pytest

import ozaki
from tests import inputs
from tests.bits import same_bits

pytestmark = pytest.mark.gpu


def cases(rng):
    yield inputs.normal(rng, (64, 96)), inputs.normal(rng, (96, 33))
    yield inputs.wide(rng, (40, 70), 400), inputs.wide(rng, (70, 30), 60)
    yield inputs.sprinkle_specials(rng, inputs.normal(rng, (20, 50))), inputs.sprinkle_zeros(rng, inputs.normal(rng, (50, 9)))
    A, B = inputs.normal(rng, (16, 256)), inputs.normal(rng, (256, 256))
    yield A + 1j * inputs.wide(rng, A.shape, 30), B - 1j * B[::-1]
    yield inputs.normal(rng, (12, 48, 40)), inputs.wide(rng, (12, 40, 24), 20)      # a stack


@pytest.mark.parametrize("mode", ["exact", "fast"])
@pytest.mark.parametrize("path", ["auto", "fused", "cublas"])
@pytest.mark.parametrize("single", [False, True])
def test_prepared_gpu_equals_cpu(rng, mode, path, single):
    """single: float32/complex64 operands, the products rounded once to float32 on the GPU
    (kernels with OUT_T=float; fast mode's float32 moduli count)."""
    import cupy
    for A, B in cases(rng):
        if single:
            with np.errstate(over="ignore"):
                A, B = (X.astype(np.complex64 if X.dtype.kind == "c" else np.float32) for X in (A, B))
        cpu = ozaki.matmul(A, B, mode=mode)
        gA, gB = cupy.asarray(A), cupy.asarray(B)
        with ozaki.config(path=path):
            pa, pb = ozaki.prepare(gA, "left", mode=mode), ozaki.prepare(gB, mode=mode)
            for _ in range(2):                                   # the second product reuses the residues
                for gpu in (ozaki.matmul(gA, pb), ozaki.matmul(pa, gB), ozaki.matmul(pa, pb)):
                    assert isinstance(gpu, cupy.ndarray)
                    assert same_bits(cpu, cupy.asnumpy(gpu))


def test_prepared_gpu_pieces_and_blocks(rng):
    import cupy
    A, B = inputs.wide(rng, (5, 9, 24), 30), inputs.normal(rng, (5, 24, 11))
    cpu = ozaki.matmul(A, B, mode="exact")
    pb = ozaki.prepare(cupy.asarray(B), mode="exact")
    for workspace in (40_000, 3_000):
        with ozaki.config(workspace=workspace):
            assert same_bits(cpu, cupy.asnumpy(ozaki.matmul(cupy.asarray(A), pb)))


def test_prepared_mixed_arrays_raise(rng):
    import cupy
    pb = ozaki.prepare(cupy.asarray(inputs.normal(rng, (5, 4))), mode="exact")
    with pytest.raises(TypeError):
        ozaki.matmul(inputs.normal(rng, (3, 5)), pb)


@pytest.mark.parametrize("path", ["auto", "fused", "cublas"])
def test_pair_gpu_equals_cpu(rng, path):
    """scheme.prepare_pair (ozaki.fft's hi + lo constants) on the GPU: the CPU's bits, real
    and complex, with the residues of X and low added on the device."""
    import cupy
    from ozaki import scheme
    from ozaki.backends import cupy_backend, numpy_backend
    X = inputs.normal(rng, (96, 40)) + 1j * inputs.wide(rng, (96, 40), 20)
    low = X * 2.0 ** -53 * rng.uniform(-0.5, 0.5, X.shape)
    A = inputs.normal(rng, (50, 96)) - 1j * inputs.normal(rng, (50, 96))
    for a, x, lo in ((A.real, X.real, low.real), (A, X, low)):
        cpu = ozaki.matmul(a[None], scheme.prepare_pair(x[None], lo[None], "right", None, numpy_backend))
        with ozaki.config(path=path):
            p = scheme.prepare_pair(cupy.asarray(x)[None], cupy.asarray(lo)[None], "right", None, cupy_backend)
            gpu = ozaki.matmul(cupy.asarray(a)[None], p)
        assert same_bits(cupy.asnumpy(gpu), cpu)
