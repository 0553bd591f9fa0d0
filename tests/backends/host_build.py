"""Host builds of the kernels' headers (kernels/*.cuh) with a C++ compiler, for tests that
check their device code bit for bit on machines without a GPU."""

import os
import shutil
import subprocess

import pytest

KERNELS = os.path.join(os.path.dirname(__file__), "..", "..", "ozaki", "backends", "kernels")


def build(tmp_path_factory, source, name):
    """The path of an executable built from the C++ ``source`` (which includes headers from
    kernels/); the test is skipped when no C++ compiler is found."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip(f"no C++ compiler for the host build of {name}")
    d = tmp_path_factory.mktemp(name.replace(".", "_"))
    (d / "host.cpp").write_text(source)
    subprocess.run([cxx, "-O1", "-std=c++17", "-I", KERNELS, str(d / "host.cpp"), "-o", str(d / "host")],
                   check=True, capture_output=True)
    return str(d / "host")
