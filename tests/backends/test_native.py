"""ozaki.backends.native: the nvcc-built libraries' cache and their errors (no GPU, no real nvcc:
a stand-in compiler script records its command line and writes the output file)."""

import os
import stat

import pytest

from ozaki.backends import native

FAKE_NVCC = """#!/bin/sh
echo "$@" >> "{log}"
while [ $# -gt 0 ]; do
    if [ "$1" = "-o" ]; then shift; echo built > "$1"; fi
    shift
done
exit {rc}
"""


def fake_nvcc(tmp_path, rc=0):
    log = tmp_path / "nvcc.log"
    path = tmp_path / "nvcc"
    path.write_text(FAKE_NVCC.format(log=log, rc=rc))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), log


def fake_cutlass(tmp_path):
    include = tmp_path / "cutlass" / "include" / "cutlass"
    include.mkdir(parents=True)
    (include / "cutlass.h").write_text("// stand-in\n")
    return str(tmp_path / "cutlass")


@pytest.fixture
def env(tmp_path, monkeypatch):
    nvcc, log = fake_nvcc(tmp_path)
    monkeypatch.setenv("OZAKI_NVCC", nvcc)
    monkeypatch.setenv("CUTLASS_PATH", fake_cutlass(tmp_path))
    monkeypatch.setenv("OZAKI_KERNEL_CACHE", str(tmp_path / "cache"))
    return log


def test_builds_once_into_the_cache(env):
    path = native.build("residue_gemm.cu")
    assert path.startswith(native.cache_dir()) and open(path).read() == "built\n"
    command = env.read_text().split()
    assert "-arch=sm_90a" in command and any(a.startswith("-I") and a.endswith("include") for a in command)
    assert native.build("residue_gemm.cu") == path              # cached: nvcc is not run again
    assert len(env.read_text().splitlines()) == 1
    assert not [f for f in os.listdir(native.cache_dir()) if f != os.path.basename(path)]   # no temporaries left


def test_key_follows_the_defines_and_the_source(env, monkeypatch):
    a = native.build("residue_gemm.cu")
    b = native.build("residue_gemm.cu", (("TILE_N", 64),))
    assert a != b and "-DTILE_N=64" in env.read_text().splitlines()[1]
    monkeypatch.setattr(native, "_source", lambda name: b"changed " + name.encode())
    assert native.build("residue_gemm.cu") not in (a, b)


def test_failed_build_names_the_compiler_output_once(tmp_path, env, monkeypatch):
    bad = tmp_path / "bad"
    bad.mkdir()
    nvcc, log = fake_nvcc(bad, rc=3)
    monkeypatch.setenv("OZAKI_NVCC", nvcc)
    with pytest.raises(native.NativeUnavailable, match=r"nvcc failed on residue_gemm.cu \(3\)"):
        native.build("residue_gemm.cu")
    assert [f for f in os.listdir(native.cache_dir()) if not f.endswith(".failed")] == []   # no half-written file
    assert not native.built("residue_gemm.cu")
    with pytest.raises(native.NativeUnavailable, match="an earlier build failed"):
        native.build("residue_gemm.cu")                           # not compiled again
    assert len(log.read_text().splitlines()) == 1


def test_missing_tools_say_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("OZAKI_NVCC", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    with pytest.raises(native.NativeUnavailable, match="nvcc not found"):
        native.nvcc()
    monkeypatch.setenv("CUTLASS_PATH", str(tmp_path))
    with pytest.raises(native.NativeUnavailable, match="no CUTLASS headers"):
        native.cutlass_include()


def test_unloadable_library_is_unavailable(env):
    native.library.cache_clear()
    try:
        with pytest.raises(native.NativeUnavailable, match="cannot load"):
            native.library("residue_gemm.cu")                     # the stand-in writes no ELF file
    finally:
        native.library.cache_clear()


def test_key_follows_the_included_headers_only(env, monkeypatch):
    """residue_gemm.cu includes modular.cuh and modular_int.cuh: a change there is a new build,
    one in another header is not."""
    assert native._local_includes("residue_gemm.cu") == ["modular.cuh", "modular_int.cuh", "residue_gemm.cu"]
    real = native._source
    before = native.build("residue_gemm.cu")
    monkeypatch.setattr(native, "_source", lambda n: real(n) + (b"//x" if n == "rounding.cuh" else b""))
    assert native.build("residue_gemm.cu") == before
    monkeypatch.setattr(native, "_source", lambda n: real(n) + (b"//x" if n == "modular.cuh" else b""))
    assert native.build("residue_gemm.cu") != before
    monkeypatch.setattr(native, "_source", lambda n: real(n) + (b"//x" if n == "modular_int.cuh" else b""))
    assert native.build("residue_gemm.cu") != before


def test_build_command(env, capsys):
    """python -m ozaki build: the library into the cache (0), or why not (1)."""
    from ozaki.__main__ import main
    integer = (("INTEGER_MOD", 1),)
    assert not native.built("residue_gemm.cu") and not native.built("residue_gemm.cu", integer)
    assert main(["build"]) == 0
    assert native.built("residue_gemm.cu") and native.built("residue_gemm.cu", integer)
    assert native.cache_dir() in capsys.readouterr().out


def test_build_command_without_nvcc(tmp_path, monkeypatch, capsys):
    from ozaki.__main__ import main
    monkeypatch.setenv("OZAKI_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CUTLASS_PATH", fake_cutlass(tmp_path))
    monkeypatch.setenv("OZAKI_NVCC", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    assert main(["build"]) == 1
    assert "nvcc not found" in capsys.readouterr().err
    assert not os.path.isdir(tmp_path / "cache") or not os.listdir(tmp_path / "cache")   # nothing left behind


def test_build_command_at_a_tile(env, monkeypatch):
    """OZAKI_RESIDUE_GEMM_TILE: python -m ozaki build compiles that tile's two builds (its
    defines on the command line, under their own keys); a name not in RESIDUE_GEMM_TILES is
    refused."""
    from ozaki.__main__ import main
    monkeypatch.setenv("OZAKI_RESIDUE_GEMM_TILE", "128x128-pingpong")
    tile = native.RESIDUE_GEMM_TILES["128x128-pingpong"]
    assert native.residue_gemm_tile_defines() == tile == (("TILE_M", 128), ("TILE_N", 128), ("PINGPONG", 1))
    assert main(["build"]) == 0
    assert native.built("residue_gemm.cu", (("INTEGER_MOD", 1),) + tile) and native.built("residue_gemm.cu", tile)
    assert not native.built("residue_gemm.cu")             # not the default tile's
    assert all("-DPINGPONG=1" in line for line in env.read_text().splitlines())
    monkeypatch.setenv("OZAKI_RESIDUE_GEMM_TILE", "64x64")
    with pytest.raises(ValueError, match="OZAKI_RESIDUE_GEMM_TILE"):
        native.residue_gemm_tile_defines()
    monkeypatch.delenv("OZAKI_RESIDUE_GEMM_TILE")
    assert native.residue_gemm_tile_defines() == ()
