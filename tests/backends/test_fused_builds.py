"""The fused kernel's builds with the CRT sums on the tensor cores (fused.cu CRT_MMA), checked
without a GPU: which tiles keep it (the preprocessed source) and that its builds compile for
sm_90a without spills (where nvcc is found)."""

import functools
import os
import shutil
import subprocess

import pytest

from bench import sass
from bench.crossover import SWEEP_TILES
from ozaki.backends import kernel_tables

TILE_NAMES = ("BM", "BN", "WARPS_M", "WARPS_N", "BK", "STAGES")
HOST_TILES = sorted(set(kernel_tables.FUSED_TILES["short"] + kernel_tables.FUSED_TILES["long"]))


def defines(m, parts, tile, npairs=1, extra=()):
    d = [("NIN", parts), ("NPAIRS", npairs), ("EPILOGUE_CRT", 1), ("OUT_T", "double"), ("CRT_MMA", 1),
         ("RES_SKEW", 8 if parts == 1 else 4)]
    if npairs > 1:
        from ozaki.crt import crt_constants
        d += [("LACC", crt_constants(m).L + npairs)]
    return d + list(zip(TILE_NAMES, tile)) + list(extra)


@functools.lru_cache(maxsize=None)
def preprocessed(m, parts, tile, npairs=1):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ preprocessor")
    text = sass.source("fused.cu", m, True, defines(m, parts, tile, npairs))
    return subprocess.run([cxx, "-E", "-P", "-x", "c++", "-I", sass.KERNELS, "-"], input=text, capture_output=True,
                          text=True, check=True).stdout


def on_tensor_cores(m, parts, tile, npairs=1):
    return "crt_sum_mma(res" in preprocessed(m, parts, tile, npairs)


@pytest.mark.parametrize("tile", HOST_TILES, ids=str)
@pytest.mark.parametrize("parts", [1, 3])
def test_host_tiles_keep_the_tensor_core_sum(tile, parts):
    """Every tile the host launches keeps CRT_MMA, for 1 to 32 moduli."""
    for m in (1, 2, 8, 13, 16, 17, 24, 25, 32):
        assert on_tensor_cores(m, parts, tile), m


def test_other_builds_keep_the_float64_sums():
    """Two slice pairs (the accumulator's shifts), a row shorter than 32 outputs and digit sums
    that do not fit the pipeline buffers fall back to the float64 sums."""
    tile = HOST_TILES[0]
    assert not on_tensor_cores(16, 1, tile, npairs=2)
    assert not on_tensor_cores(16, 1, (32, 16, 2, 1, 64, 4))             # BN 16
    assert not on_tensor_cores(32, 3, (32, 32, 2, 2, 16, 1))             # 1 stage of 64 rows of 32 bytes


@pytest.mark.parametrize("tile", SWEEP_TILES, ids=str)
def test_sweep_tiles_follow_the_rule(tile):
    """The sweep's tiles keep it where the digit sums fit the pipeline buffers: fused.cu's gate
    and its mirror on the host (kernel_tables.crt_sum_fits, which the host's tile choice reads)
    agree."""
    for m, parts in ((16, 1), (16, 3), (29, 1), (32, 3)):
        assert on_tensor_cores(m, parts, tile) == kernel_tables.crt_sum_fits(tile, m), (m, parts)


BUILDS = [(16, 1, ()), (17, 1, ()), (32, 1, ()), (16, 3, ()), (16, 1, (("RESIDUAL", 1),)),
          (14, 3, (("OUT_T", "float"),)), (16, 1, (("TWO_WORDS", 1), ("FUSED_INT_MOD", 1)))]


@pytest.mark.skipif(sass.tool("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("m,parts,extra", BUILDS, ids=[f"m{m}-p{p}-" + "-".join(k for k, _ in e) for m, p, e in BUILDS])
def test_builds_compile_without_spills(m, parts, extra):
    """The short tile's builds compile for sm_90a (k16 and k32 products, complex, residuals,
    float32, the two-word rounding and the integer reduction), without spills."""
    d = dict(defines(m, parts, kernel_tables.FUSED_TILES["short"][0]))
    d.update(dict(extra))
    report, cubin = sass.compile_cubin(sass.source("fused.cu", m, True, list(d.items())))
    assert cubin[:4] == b"\x7fELF"
    registers, spills = sass.resources(report)
    assert spills == (0, 0) and registers <= 128


EPILOGUE_BUILDS = [(m, extra) for m in (1, 14, 16, 17, 32)
                   for extra in ((("TWO_WORDS", 1), ("EPILOGUE_BLOCKS", 4)), (("STACKED", 1), ("RESIDUAL", 1)))] + [
    (16, (("OUT_T", "float"),)), (16, (("COMPLEX", 1), ("RESIDUAL", 1))), (32, (("COMPLEX", 1), ("EPILOGUE_BLOCKS", 4))),
    (25, (("COMPLEX", 1), ("EPILOGUE_BLOCKS", 4), ("STACKED", 1), ("INTERLEAVED", 4)))]


@pytest.mark.skipif(sass.tool("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("m,extra", EPILOGUE_BUILDS, ids=[f"m{m}-" + "-".join(k for k, _ in e) for m, e in EPILOGUE_BUILDS])
def test_epilogue_mma_builds_compile_without_spills(m, extra):
    """epilogue.cu's CRT sums on the tensor cores (CRT_MMA, crt_mma.cuh beside fused.cu's) compile
    for sm_90a for one and two m16n8k16 / m16n8k32 digit tiles, stacked, with residuals,
    float32 outputs, complex and the FFT's interleaved stacks, without spills; and the preprocessed kernel sums the digits on the tensor
    cores, not in float64."""
    d = [("PROD_T", "signed char"), ("SINGLE_PAIR", 1), ("OUT_T", "double"), ("CRT_MMA", 1)] + list(extra)
    d = list(dict(d).items())
    text = sass.source("epilogue.cu", m, True, d)
    report, cubin = sass.compile_cubin(text)
    assert cubin[:4] == b"\x7fELF"
    registers, spills = sass.resources(report)
    assert spills == (0, 0) and registers <= 128
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx:
        pre = subprocess.run([cxx, "-E", "-P", "-x", "c++", "-I", sass.KERNELS, "-"], input=text, capture_output=True,
                             text=True, check=True).stdout
        body = pre[pre.index("extern \"C\""):]                  # the kernel, after the helpers
        assert ("crt_digit_sums(" in body or "digit_products(" in body) and "crt_add(" not in body
