"""Host builds of the kernels' headers (kernels/*.cuh) with a C++ compiler, for tests that
check their device code bit for bit on machines without a GPU."""

import os
import shutil
import subprocess

import pytest

KERNELS = os.path.join(os.path.dirname(__file__), "..", "..", "ozaki", "backends", "kernels")

# What the kernels' headers take from CUDA, for a host build: a test compiles PRELUDE + its own
# source (the defines, any shim only its header needs, the #include and a main).  Each shim
# gives what the device gives, bit for bit, so the headers' own arithmetic is what is checked.
PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
// The math functions the headers call unqualified: std's overloads, as CUDA's, so a float
// argument stays float (the C library's alone would widen it to double).
using std::ceil; using std::fabs; using std::floor; using std::fma; using std::fmax; using std::frexp;
using std::isfinite; using std::isinf; using std::ldexp; using std::rint; using std::signbit;
// Qualifiers and launch hints: nothing on the host.  Shared memory is a static: the host runs
// one thread at a time.
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __constant__
#define __shared__ static
#define __launch_bounds__(...)
// A grid of one block of one thread, so a kernel's grid-stride loops cover every index in
// turn; a test that runs more threads sets blockIdx and threadIdx itself.
struct Dim { long long x, y, z; };
static Dim blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline void __syncthreads() {}
// Bit casts: memcpy copies the representation unchanged, as the intrinsics reinterpret it
// (a cast or a union read would convert or be undefined).
static inline long long __double_as_longlong(double x) { long long b; std::memcpy(&b, &x, 8); return b; }
static inline double __longlong_as_double(long long b) { double x; std::memcpy(&x, &b, 8); return x; }
static inline float __int_as_float(int b) { float x; std::memcpy(&x, &b, 4); return x; }
static inline double __hiloint2double(int hi, int lo) {         // hi: the top 32 bits, lo: the low 32
    unsigned long long b = ((unsigned long long)(unsigned)hi << 32) | (unsigned)lo;
    double x; std::memcpy(&x, &b, 8); return x;
}
// int -> double, exact either way (crt_mma.cuh's exact_double)
static inline double __int2double_rn(int v) { return (double)v; }
// unsigned 64-bit -> double / float rounded to nearest, as the device's conversions (the host's
// conversions round to nearest even in the default mode; x86-64 halves a top-bit value to odd first)
static inline double __ull2double_rn(unsigned long long x) { return (double)x; }
static inline float __ull2float_rn(unsigned long long x) { return (float)x; }
// Leading zeros of the 64 bits: 64 for zero as on the device (__builtin_clzll(0) is undefined).
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
"""


def build(tmp_path_factory, source, name):
    """The path of an executable built from the C++ ``source`` (PRELUDE and a test's own code,
    which includes headers from kernels/); the test is skipped when no C++ compiler is found."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip(f"no C++ compiler for the host build of {name}")
    d = tmp_path_factory.mktemp(name.replace(".", "_"))
    (d / "host.cpp").write_text(source)
    subprocess.run([cxx, "-O1", "-std=c++17", "-I", KERNELS, str(d / "host.cpp"), "-o", str(d / "host")],
                   check=True, capture_output=True)
    return str(d / "host")
