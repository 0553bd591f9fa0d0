"""The CUTLASS residue GEMM (kernels/residue_gemm.cu): every entry is the symmetric residue mod p_i of
the exact integer product, checked against int64 products in numpy (needs a CUDA device)."""

import numpy as np
import pytest

from ozaki import crt
from tests import inputs

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True, params=["integer", "float64"])
def reduction(request, monkeypatch):
    """Every test on both builds: the epilogue's reduction on the integer pipes
    (INTEGER_MOD, NEW_KERNELS residue_int_mod) and on the FP64 pipe."""
    from ozaki.backends import cupy_backend, native
    on = [n for n in cupy_backend.NEW_KERNELS_ON if n != "residue_int_mod"]
    monkeypatch.setenv("OZAKI_NEW_KERNELS", ",".join(on + (["residue_int_mod"] if request.param == "integer" else [])))
    # at the tile OZAKI_RESIDUE_GEMM_TILE names (run da86e14 ran these tests at each)
    defines = ((("INTEGER_MOD", 1),) if request.param == "integer" else ()) + native.residue_gemm_tile_defines()
    assert cupy_backend.residue_gemm_defines() == defines
    yield request.param
    # the build asked for is the one that ran (loaded under its own key), where one could run
    # (on other GPUs the library is refused before any key is set; "why": it could not load)
    import cupy
    known = cupy_backend._RESIDUE_GEMM[defines]
    if cupy.cuda.Device().compute_capability == "90" and "why" not in known:
        assert "lib" in known


def residue_gemm_backend():
    """cupy_backend, where the residue GEMM runs; the test is skipped on a GPU that is not
    Hopper or without nvcc and the CUTLASS headers, and fails where those are all here but
    the residue GEMM does not build or load."""
    import cupy
    from ozaki.backends import cupy_backend, native
    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("the residue GEMM is built for Hopper (sm_90a)")
    why = cupy_backend.residue_gemm_available()
    if why is not True:
        try:
            native.nvcc(), native.cutlass_include()
        except native.NativeUnavailable as exc:
            pytest.skip(f"the residue GEMM cannot be built here: {exc}")
        pytest.fail(f"nvcc and the CUTLASS headers are here, but the residue GEMM is unavailable: {why}")
    return cupy_backend


def residue_stack(rng, m, rows, k, extreme=None):
    """int8 residues of the first m moduli, each plane within its modulus' symmetric range;
    ``extreme`` fills every entry with the range's end of that sign (the largest products)."""
    R = np.empty((m, rows, k), dtype=np.int8)
    for i, p in enumerate(crt.moduli(m)):
        lo, hi = -(p // 2), p - 1 - p // 2
        R[i] = rng.integers(lo, hi + 1, size=(rows, k)) if extreme is None else (lo if extreme < 0 else hi)
    return R


def expected(Ra, Rbt, m, batch):
    b, rows, k = Ra.shape
    mm, n = rows // batch, Rbt.shape[1] // batch
    # float64 BLAS is exact here: every partial sum is below 2**31 < 2**53
    A = Ra.reshape(b, batch, mm, k).transpose(1, 0, 2, 3).astype(np.float64)
    Bt = Rbt.reshape(b, batch, n, k).transpose(1, 0, 2, 3).astype(np.float64)
    P = np.matmul(A, Bt.swapaxes(-1, -2)).astype(np.int64)
    return inputs.symmetric_residues(P, np.array(crt.moduli(m))[None, :, None, None]).astype(np.int64)


@pytest.mark.parametrize("m, shape, batch", [(1, (1, 1, 1), 1), (5, (37, 23, 50), 1), (26, (130, 300, 129), 1),
                                             (16, (256, 1000, 256), 1), (26, (64, 64, 64), 3), (3, (7, 5, 17), 4),
                                             (20, (300, 260, 4100), 1),
                                             # 9 x 9 tiles of 256 x 128 (2 x 9 a batch): the walks' strips
                                             # of 8 (SWIZZLE 8, OZAKI_RESIDUE_GEMM_TILE) and their padding
                                             (4, (2200, 1100, 96), 1), (3, (500, 1100, 64), 2)])
def test_residues_of_exact_products(rng, m, shape, batch):
    import cupy
    be = residue_gemm_backend()
    mm, n, k = shape
    Ra, Rbt = residue_stack(rng, m, batch * mm, k), residue_stack(rng, m, batch * n, k)
    got = be.gemm_residues(cupy.asarray(Ra), cupy.asarray(Rbt), m, batch)
    assert got.dtype == np.int8 and got.shape == (batch, m, mm, n)
    assert np.array_equal(cupy.asnumpy(got), expected(Ra, Rbt, m, batch))


@pytest.mark.parametrize("sign", [1, -1])
def test_at_the_int32_limit(rng, sign):
    """k = RESIDUE_GEMM_K_MAX with every entry at its range's end: accumulators near 2**31
    (256's plane reaches (-128)^2 k = 2**14 k), reduced by the epilogue node's integer or
    float64 quotient.  (A wrapped int32 would not show in 256's plane, 2**32 = 0 mod 256: the limit
    itself is asserted.)"""
    import cupy
    be = residue_gemm_backend()
    k, m = be.RESIDUE_GEMM_K_MAX, 3
    assert k * 128 * 128 < 2 ** 31
    Ra, Rbt = residue_stack(rng, m, 16, k, extreme=-1), residue_stack(rng, m, 32, k, extreme=sign)
    Ra[:, 1:8] = residue_stack(rng, m, 7, k)                   # and some random rows beside
    got = cupy.asnumpy(be.gemm_residues(cupy.asarray(Ra), cupy.asarray(Rbt), m))
    assert np.array_equal(got, expected(Ra, Rbt, m, 1))


def test_planes_apart_and_row_views(rng):
    """A prepared operand's row block (planes apart, a view) is read in place."""
    import cupy
    be = residue_gemm_backend()
    m = 7
    big = residue_stack(rng, m, 200, 96)
    Ra = cupy.asarray(big)[:, 40:140]                          # planes 200*96 apart, rows 100
    Rbt = residue_stack(rng, m, 48, 96)
    got = cupy.asnumpy(be.gemm_residues(Ra, cupy.asarray(Rbt), m))
    assert np.array_equal(got, expected(big[:, 40:140], Rbt, m, 1))


def test_refuses_long_inner_dimensions():
    import cupy
    be = residue_gemm_backend()
    k = be.RESIDUE_GEMM_K_MAX + 16
    with pytest.raises(ValueError, match="inner dimension"):
        be.gemm_residues(cupy.zeros((1, 1, k), dtype=cupy.int8), cupy.zeros((1, 1, k), dtype=cupy.int8), 1)
