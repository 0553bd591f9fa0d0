"""Host-side CUDA libraries built with nvcc on first use (kernels whose launch needs host code).

CUTLASS's Hopper kernels are launched with TMA descriptors made on the host, which CuPy's
RawModule (device code through NVRTC) cannot do.  Such a kernel lives in ``kernels/`` like the
others, with an ``extern "C"`` host entry point; this module compiles it with nvcc into a shared
library, keyed by a hash of its source, the headers it includes and the build command, and
loads it with ctypes.  A compile takes about a minute, so none runs behind a product that did not
ask for it: ``python -m ozaki build`` (or a forced ``path="cutlass"``) builds.

Where it is built: ``$OZAKI_KERNEL_CACHE``, else ``~/.cache/ozaki/kernels``.  What it needs:
nvcc (``$OZAKI_NVCC``, ``nvcc`` on the PATH, or ``$CUDA_PATH/bin/nvcc``) and the CUTLASS/CuTe
headers (``$CUTLASS_PATH/include``, else the ``nvidia-cutlass`` package's).  When either is
missing, or the build fails, ``library`` raises ``NativeUnavailable`` naming why, and the GPU
backend keeps to its cuBLAS path.
"""

import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
import ctypes

__all__ = ["NativeUnavailable", "library", "build", "built", "cutlass_include", "nvcc", "cache_dir"]

_KERNELS = os.path.join(os.path.dirname(__file__), "kernels")

FLAGS = ("-std=c++17", "-O3", "-arch=sm_90a", "-shared", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr",
         "-DNDEBUG")


# The residue GEMM's tiles (kernels/residue_gemm.cu TILE_M, TILE_N, PINGPONG), as build
# defines: 256 x 128 cooperative, the fastest when the FFT's products ran at K = 1024 (run
# 3ca144a, H200); the quarter turns' K = 256 products and the integer reduction came later.
# The "-swizzle8" and "-cluster2" builds change how the persistent CTAs walk the tiles (SWIZZLE,
# CLUSTER_M: L2 reuse of the operands at the big squares; written 2026-12-08, not yet measured).
RESIDUE_GEMM_TILES = {"256x128": (), "128x256": (("TILE_M", 128), ("TILE_N", 256)),
                      "128x128-pingpong": (("TILE_M", 128), ("TILE_N", 128), ("PINGPONG", 1)),
                      "256x128-swizzle8": (("SWIZZLE", 8),), "256x128-cluster2": (("CLUSTER_M", 2),),
                      "256x128-cluster2-swizzle8": (("CLUSTER_M", 2), ("SWIZZLE", 8))}


def residue_gemm_tile_defines():
    """The defines of the residue GEMM's tile: $OZAKI_RESIDUE_GEMM_TILE (read at each call),
    a key of RESIDUE_GEMM_TILES, by default 256x128."""
    tile = os.environ.get("OZAKI_RESIDUE_GEMM_TILE", "256x128")
    if tile not in RESIDUE_GEMM_TILES:
        raise ValueError(f"OZAKI_RESIDUE_GEMM_TILE must be one of {', '.join(RESIDUE_GEMM_TILES)}; not {tile!r}")
    return RESIDUE_GEMM_TILES[tile]


class NativeUnavailable(RuntimeError):
    """A native library cannot be built or loaded here (the message says why)."""


def nvcc():
    for candidate in (os.environ.get("OZAKI_NVCC"), shutil.which("nvcc"),
                      os.path.join(os.environ.get("CUDA_PATH", "/usr/local/cuda"), "bin", "nvcc")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise NativeUnavailable("nvcc not found (set OZAKI_NVCC, put nvcc on the PATH or set CUDA_PATH)")


def cutlass_include():
    root = os.environ.get("CUTLASS_PATH")
    if root:
        path = os.path.join(root, "include")
    else:
        spec = importlib.util.find_spec("cutlass_library")
        if spec is None or not spec.submodule_search_locations:
            raise NativeUnavailable("the CUTLASS headers are missing: pip install nvidia-cutlass, or set CUTLASS_PATH")
        path = os.path.join(list(spec.submodule_search_locations)[0], "source", "include")
    if not os.path.isfile(os.path.join(path, "cutlass", "cutlass.h")):
        raise NativeUnavailable(f"no CUTLASS headers under {path}")
    return path


def cache_dir():
    return os.environ.get("OZAKI_KERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ozaki",
                                                                 "kernels")


def _source(name):
    with open(os.path.join(_KERNELS, name), "rb") as f:
        return f.read()


def _local_includes(name, seen=None):
    """kernels/``name`` and the headers of kernels/ it includes, directly or not (sorted)."""
    seen = set() if seen is None else seen
    seen.add(name)
    for line in _source(name).decode().splitlines():
        line = line.strip()
        if line.startswith("#include") and '"' in line:
            header = line.split('"')[1]
            if header not in seen and os.path.isfile(os.path.join(_KERNELS, header)):
                _local_includes(header, seen)
    return sorted(seen)


def _cached_path(name, defines):
    """Where the library of kernels/``name`` with ``defines`` is cached: the key hashes the
    source, the headers of kernels/ it includes and the flags, not CUTLASS or nvcc (after a
    new one of those, clear the cache)."""
    text = b"".join(_source(f) for f in _local_includes(name)) + repr((FLAGS, defines)).encode()
    key = hashlib.sha256(text).hexdigest()[:16]
    return os.path.join(cache_dir(), f"{os.path.splitext(name)[0]}-{key}.so")


def built(name, defines=()):
    """Whether the library of kernels/``name`` is in the cache."""
    return os.path.isfile(_cached_path(name, defines))


def build(name, defines=()):
    """Compile kernels/``name`` into the cache (if it is not there yet); its path.  A failed
    compile leaves its message beside it (``.failed``), so later processes do not run nvcc
    again on the same source (delete that file to retry)."""
    path = _cached_path(name, defines)
    if os.path.isfile(path):
        return path
    failed = path[:-3] + ".failed"
    if os.path.isfile(failed):
        with open(failed) as f:
            raise NativeUnavailable(f"an earlier build failed ({failed}):\n{f.read()}")
    compiler, include = nvcc(), cutlass_include()      # before the temporary file: none is left behind
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
    os.close(fd)
    cmd = [compiler, *FLAGS, *(f"-D{k}={v}" for k, v in defines), f"-I{include}", f"-I{_KERNELS}",
           os.path.join(_KERNELS, name), "-o", tmp]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            message = f"nvcc failed on {name} ({done.returncode}):\n{done.stderr[-4000:]}"
            with open(failed, "w") as f:
                f.write(message)
            raise NativeUnavailable(message)
        os.replace(tmp, path)                     # atomic: a concurrent build finds a whole file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


@functools.lru_cache(maxsize=None)
def library(name, defines=()):
    """The ctypes library of kernels/``name``, built on first use, memoized per process."""
    try:
        return ctypes.CDLL(build(name, defines))
    except OSError as exc:
        raise NativeUnavailable(f"cannot load the library of {name}: {exc}") from exc
