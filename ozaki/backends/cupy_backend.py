"""GPU backend: the named steps of the pipeline (ozaki/scheme.py) in CuPy.

    residues  one raw-kernel pass per operand: float64 -> int8 residues of all moduli
    transposed  B^T for the column side, through cuBLAS dgeam
    gemm      cuBLAS gemmEx INT8 x INT8 -> INT32 (COMPUTE_32I) in the T,N layout,
              a call per modulus and output tile, the inner dimension cut into
              chunks short enough that int32 never overflows
    epilogue  one raw-kernel pass: mod p, CRT, Kulisch sum of slice pairs, one rounding;
              for complex products it forms Re and Im from the three Karatsuba
              products itself, reading each once
    fused_product  gemm and epilogue in one kernel (kernels/fused.cu): int8
              tensor-core products of every modulus, reduction mod p, CRT and
              rounding on chip; a stack is one launch
    bound_maxima  accurate mode's bound GEMM with its row/column maxima taken on
              chip (the same kernel's other epilogue)
    maxima    the row and column maxima of the bound GEMM's M where it went through
              memory (CuPy's reductions)
    gemm_fp32_digits  the fp8 substrate's digit GEMMs on cuBLASLt FP8 (torch._scaled_mm)
    fp8_operands, fp8_products, fp8_recombine  the fp8 substrate's steps a modulus
              (kernels/fp8_digits.cu around cuBLASLt FP8)
    zero_signs  ozaki.fft's sign rule of zero parts, in place, a thread per entry
              (kernels/zero_terms.cu)
    row_specials  ozaki.fft's per-row NaN/inf and tiny-entry flags, one pass
              (kernels/row_specials.cu)
    times, times_exactly  ozaki.fft's elementwise complex products, each real
              operation rounded (and their exact errors), one kernel pass each
    contiguous, assign  ozaki.fft's blocks of rows read from and written into an
              array where they are transposed views, through tiles (kernels/transpose.cu)

Kernels are CUDA source files beside this module, compiled on first use and
memoized per device; everything runs on the current CuPy stream.
"""

import collections
import ctypes
import functools
import math
import os

import cupy
import numpy as np
from cupy.cuda import cublas

from ..crt import crt_bound_float, crt_constants
from ..crt import moduli as _moduli
from . import graphs, native, numpy_backend
from . import host as _host
from .kernel_tables import CRT_DIGITS_MAX_MODULI, FUSED_TILES as _FUSED_TILES, constant_tables as _constant_tables, \
    crt_sum_fits, residue_gemm_table

xp = cupy
name = "cupy"

MAX_SHIFT = numpy_backend.MAX_SHIFT

# Residues are at most 128 in magnitude: a length-K dot product of them stays
# below K * 2**14, inside int32 for K <= 131071.  K_CHUNK is that limit rounded
# down to the padding quantum; tests lower it to exercise the chunked path.
K_CHUNK = 131056
K_PAD = 16                      # cuBLAS IMMA wants the leading dimension a multiple of 16 bytes

_CUDA_R_8I = 3
_CUDA_R_32I = 10
_CUBLAS_COMPUTE_32I = 72
_CUBLAS_GEMM_DEFAULT = -1
_KERNELS = os.path.join(os.path.dirname(__file__), "kernels")


def default_workspace():
    """Half of the device memory free now (counting what CuPy's pool holds unused)."""
    free, _ = cupy.cuda.runtime.memGetInfo()
    pool = cupy.get_default_memory_pool()
    return (free + pool.free_bytes()) // 2


# cuBLAS gemmEx: one strided-batched call over the moduli, or one call each.
# Measured on the H200 (bench/results/2026-12-02-c7a175a/steps.txt, 16 moduli,
# untiled batched against tiled single calls): a call each is faster, 109.0 vs
# 131.7 ms at n = 16384, 13.8 vs 16.4 ms at 8192.
GEMM_BATCHED = False


# float32 bits -> the same value in float64, built from the bits: the device's
# float conversions flushed float32 subnormals to zero (runs 896b51e, a15af3b)
# and made every NaN the canonical one.  A subnormal is its fraction times
# 2**-149, formed in double arithmetic (which keeps subnormals); a normal gets
# the rebiased exponent; NaN and inf keep their fraction bits, a signalling NaN
# is quieted (bit 51), as the host's conversion (numpy's astype) does.
_WIDEN_F32 = cupy.ElementwiseKernel(
    "int32 b", "float64 x",
    """
    unsigned long long sign = b < 0 ? 0x8000000000000000ULL : 0ULL;
    unsigned long long frac = (unsigned long long)(b & 0x7FFFFF);
    int e = (b >> 23) & 0xFF;
    if (e == 0) {
        double v = ldexp((double)frac, -149);
        x = b < 0 ? -v : v;
    } else if (e == 0xFF) {
        x = __longlong_as_double(sign | 0x7FF0000000000000ULL | (frac << 29) | (frac ? 1ULL << 51 : 0ULL));
    } else {
        x = __longlong_as_double(sign | ((unsigned long long)(e + 896) << 52) | (frac << 29));
    }
    """,
    "ozaki_widen_f32")


def widen(x):
    """As numpy_backend.widen: one kernel over the float32 bits."""
    flat = cupy.ascontiguousarray(x).reshape(-1)
    wide = _WIDEN_F32(flat.view(cupy.int32))
    return (wide.view(cupy.complex128) if x.dtype.kind == "c" else wide).reshape(x.shape)


def split(x):
    return numpy_backend.split(x, xp=cupy)


@functools.lru_cache(maxsize=None)
def _source(name):
    with open(os.path.join(_KERNELS, name)) as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def _kernel(file, function, defines, device, tables=None, shared=0):
    """A compiled kernel, memoized per (source, defines, device, constant tables);
    ``shared``: the dynamic shared memory it may be launched with (bytes)."""
    header = "".join(f"#define {k} {v}\n" for k, v in defines)
    if tables is not None:
        header += _constant_tables(*tables)
    module = cupy.RawModule(code=header + _source(file), options=("-std=c++17", f"-I{_KERNELS}"))
    kern = module.get_function(function)
    if shared > 48 * 1024:
        kern.max_dynamic_shared_size_bytes = shared
    return kern


@functools.lru_cache(maxsize=None)
def _pow2(m, device):
    """The 2**s mod p table (float64: the kernels' modular arithmetic is FP64)."""
    return cupy.asarray(numpy_backend.pow2_table(m).astype(np.float64))


def _device():
    return cupy.cuda.Device().id


def _cublas():
    """CuPy's cuBLAS handle, bound to the current stream (CuPy's own cuBLAS calls
    rebind it each time; a raw call must too, or it runs on the last stream set)."""
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    return handle


# The most blocks a grid-stride kernel is launched with (its threads loop past them).
GRID_BLOCKS_MAX = 65535 * 8


def _grid(total, block=256):
    return (int(min(max((total + block - 1) // block, 1), GRID_BLOCKS_MAX)),), (block,)


def _padded(k):
    return -(-k // K_PAD) * K_PAD


# Digits below 2**77 take three 26-bit pieces; residues.cu's five-piece path (up to
# 2**129) is built in where digits are wider (the two-step path took 24.1 ms at
# n = 16384 and 22 moduli against 6.8 ms of three pieces at 21, run 6872fbd; five
# pieces 15.65, run df12626): exact mode's slices past 77 bits, and accurate (and
# certified) mode's digits from about 21 moduli.  Their largest shift s over the row
# scale follows log2 of the CRT bound less log2 k (N(0,1), the CPU's plan): s <= 24 up
# to about 148 (16 moduli: 110-120; 20 moduli: 140-150, s 19-23; 21 moduli at k =
# 16384: 148, s 23; at k = 1024: 152, s 25; 22 moduli: 155-165, s 27-31); rows of few
# large terms get more bits, hence every count from 21.  Wherever else it is built in, it
# would cost the three-piece path registers (72 -> 80 under the wide build's launch
# bounds; 98 without them, 5.4 -> 5.9 ms at 16 moduli, n = 16384).  Either build gives
# the same residues (digits past its pieces take the two-step path).
def _wide_digits(m, width, k):
    """Whether residues.cu is built with its five-piece path for m moduli, slices of
    ``width`` bits (None: accurate mode's digits) and inner dimension k."""
    if width:
        return width > 77
    return m >= 21 or math.log2(crt_bound_float(m)) - math.log2(max(k, 1)) > 146


# The three-piece loop over the moduli (residues.cu, MODULI_UNROLL) is unrolled fully
# unless ptxas then takes more than RESIDUE_REGISTERS registers (three blocks of 256
# threads an SM), as CUDA 13.0's does at 11-15 moduli (116-160; 72 from 16 on): then it
# is a loop over two moduli at a time (80).  At n = 16384 (run 54dc438, bench.residue_pass)
# 14 moduli took 4.10 ms fully unrolled, 2.79 one at a time, 2.71 two at a time; 15: 4.23,
# 2.93, 2.83; at 16 and 20 the full unroll (72) was the fastest: 2.52 against 3.06 and
# 2.96 ms; 2.86 against 3.55 and 3.49.  RESIDUE_UNROLL (OZAKI_RESIDUE_UNROLL=N) forces N
# at a time, 0 fully unrolled (that sweep).
RESIDUE_REGISTERS = 80


def _count_env(name, default=None):
    """The environment variable ``name`` as a count >= 0 (``default`` when unset)."""
    text = os.environ.get(name)
    if not text:
        return default
    if not text.isdigit():
        raise ValueError(f"{name} must be a count (an integer >= 0), not {text!r}")
    return int(text)


RESIDUE_UNROLL = _count_env("OZAKI_RESIDUE_UNROLL")       # None: the register rule; 0: all moduli
# Blocks of 256 threads an SM that the wide QUARTERS build's launch bounds ask for (residues.cu
# RESIDUES_BLOCKS): at 3, the wide builds' count, it spills (25 moduli: 80 registers, 1,360
# bytes of local loads in its SASS, ptxas 13.0); at 2 it does not (128).  (Lane pairs, two
# lanes sharing a thread's PARTS 2 work with a shuffle a modulus, spilled nothing at 3 but
# ran slower: a batch of 65536 x 1024 18.74 against 16.54 ms, 16384 x 1024 5.68 against
# 5.07, fftn 1024^3's residues 170.4 ms against 139.7 in 70d50c8; H100, run da86e14.)
RESIDUES_QUARTER_BLOCKS = _count_env("OZAKI_RESIDUES_QUARTER_BLOCKS", 3)
if RESIDUES_QUARTER_BLOCKS == 0:
    raise ValueError("OZAKI_RESIDUES_QUARTER_BLOCKS must be at least 1 (blocks an SM)")


def _num_regs(kern):
    return kern.num_regs              # RawKernel's (RawModule.get_function), compiling it if not yet


@functools.lru_cache(maxsize=None)
def _residues_kernel(m, wide, device, unroll, parts=1, quarters=False):
    """residues.cu's kernel for m moduli (``unroll``: RESIDUE_UNROLL; ``parts``: PARTS;
    ``quarters``: QUARTERS)."""
    defines = (("NMOD", m), ("WIDE_DIGITS", int(wide)), ("PARTS", parts)) + ((("QUARTERS", 1),) if quarters else ())
    if quarters and wide and RESIDUES_QUARTER_BLOCKS != 3:
        defines += (("RESIDUES_BLOCKS", RESIDUES_QUARTER_BLOCKS),)
    if unroll is not None:
        return _kernel("residues.cu", "residues", defines + (("MODULI_UNROLL", min(unroll, m) or m),), device, (m,))
    kern = _kernel("residues.cu", "residues", defines + (("MODULI_UNROLL", m),), device, (m,))
    if _num_regs(kern) > RESIDUE_REGISTERS:
        kern = _kernel("residues.cu", "residues", defines + (("MODULI_UNROLL", 2),), device, (m,))
    return kern


def _residue_rows(x):
    """x (rows, k) as residues.cu reads it: float64 rows of entries one or two doubles
    apart, any row stride (a [Re | Im] row's half, or a complex row's Re or Im of its
    interleaved pairs, read in place); (x, ld, es)."""
    rows, k = x.shape
    if (x.dtype != cupy.float64 or (k > 1 and x.strides[1] not in (8, 16)) or (rows > 1 and x.strides[0] % 8)):
        x = cupy.ascontiguousarray(x, dtype=cupy.float64)
    return x, (x.strides[0] // 8 if rows > 1 else k * (x.strides[1] // 8 if k > 1 else 1)), \
        (x.strides[1] // 8 if k > 1 else 1)


def _launch_residues(x, x_im, ld, beta, width, m, nearest, parts, quarter=None, es=1):
    """residues.cu over rows x (and x_im, PARTS 2, the same ld): (parts + parts // 2, m, rows, kpad);
    ``quarter`` (PARTS 2, k a multiple of 16): the butterflies' sign (QUARTERS), the stacks
    then (3, m, 4 rows, kpad / 4)."""
    rows, k = x.shape
    kpad = _padded(k)
    out = cupy.empty((parts + parts // 2, m, rows, kpad), dtype=cupy.int8)
    kern = _residues_kernel(m, _wide_digits(m, width, k), _device(), RESIDUE_UNROLL, parts, quarter is not None)
    grid, block = _grid(rows * kpad * parts // 8)
    kern(grid, block, (x, np.int64(ld), np.int64(rows), np.int64(k),
                       np.int64(kpad), cupy.ascontiguousarray(beta, dtype=cupy.int64),
                       np.int32(width or 0), np.int32(bool(nearest)), _pow2(m, _device()), out, x_im,
                       np.int32(quarter or 0), np.int64(es)))
    return out if quarter is None else out.reshape(3, m, 4 * rows, kpad // 4)


def residues(x, beta, width, m, nearest=False):
    """int8 residues (m, rows, kpad) of the slice digits of x; kpad = k rounded up to 16.
    Rows whose entries are contiguous are read where they lie (any row stride)."""
    x, ld, es = _residue_rows(x)
    return _launch_residues(x, x, ld, beta, width, m, nearest, 1, es=es)[0]


# residues.cu PARTS 2 holds PARTS 1's registers and spills (ptxas, CUDA 13.0, sm_90a) up
# to 42 moduli; from 44 on it spills ten times the bytes (436 against 44 loads).
RESIDUE_PARTS_MAX_MODULI = 42


def residues_of_parts(parts, beta, width, m, nearest=False, quarter=None):
    """As numpy_backend.residues_of_parts.  A complex operand's two parts whose rows lie the
    same distance apart (operand_rows' halves of [Re | Im] rows) in one pass of residues.cu
    (PARTS 2: both parts' residues and their sums' from one read of the rows), up to
    RESIDUE_PARTS_MAX_MODULI; else a pass a part and add_residues.  ``quarter``: their
    radix-4 butterflies instead, formed in that pass (QUARTERS; rows of a multiple of 16
    entries), else by butterfly4 after it."""
    if quarter is not None and (len(parts) != 2 or parts[0].shape[1] % 16):
        raise ValueError(f"residues_of_parts: butterflies of two parts of a multiple of 16 entries a row, "
                         f"not {len(parts)} of {parts[0].shape[1]}")
    rows = [_residue_rows(x) for x in parts]
    if len(parts) == 2 and m <= RESIDUE_PARTS_MAX_MODULI and _new_kernel("residue_parts"):
        (re, ld, es), (im, ld_im, es_im) = rows
        if re.shape == im.shape and (ld, es) == (ld_im, es_im):
            if quarter is not None and _new_kernel("residue_quarters"):
                return list(_launch_residues(re, im, ld, beta, width, m, nearest, 2, quarter, es))
            rs = list(_launch_residues(re, im, ld, beta, width, m, nearest, 2, es=es))
            return rs if quarter is None else butterfly4(rs[0], rs[1], m, quarter)
    rs = [_launch_residues(x, x, ld, beta, width, m, nearest, 1, es=es)[0] for x, ld, es in rows]
    if quarter is not None:
        return butterfly4(rs[0], rs[1], m, quarter)
    if len(parts) == 2:
        rs.append(add_residues(rs[0], rs[1], m))
    return rs


def add_residues(x, y, m):
    """As numpy_backend.add_residues, one pass (kernels/residues.cu) over stacks
    (m, rows, kpad) whose planes may lie apart (row slices of prepared residues)."""
    x, y = (r if r.strides[1:] == (r.shape[2], 1) else cupy.ascontiguousarray(r) for r in (x, y))
    out = cupy.empty(x.shape, dtype=cupy.int8)
    plane = x.shape[1] * x.shape[2]
    if out.size:
        vector = plane % 16 == 0 and all(r.strides[0] % 16 == 0 and r.data.ptr % 16 == 0 for r in (x, y, out))
        kern = _kernel("residues.cu", "add_residues", (("NMOD", m),), _device(), (m,))
        blocks = int(min(max(-(-plane // (16 * 256 if vector else 256)), 1), 4096))
        kern((blocks, m), (256,), (x, np.int64(x.strides[0]), y, np.int64(y.strides[0]), np.int64(plane),
                                   np.int32(vector), out))
    return out


# scheme._quarter_product from this many DFT points on: on the H200 (run 4edd3fb, exact
# mode, the same bits either way) fftn 256^3 took 18.26 ms as quarter products (q = 64)
# against 13.70 as one product, 512^3 97.6 against 97.4 (q = 128), a batch of 4096 x 1024
# 2.40 against 2.24; fftn 1024^3 (q = 256) 849 ms (90ad4e5, one product: 936).  Again on
# an H100 (run 9feb7c3), one product against the quarter turns: fftn 256^3 12.2 / 15.2 ms,
# 512^3 87.3 / 94.6; batches of 256 points 65536 rows 4.16 / 5.44, 262144 rows 14.0 / 18.9;
# of 512 points 65536 rows 7.87 / 7.77, 131072 rows 14.9 / 14.8: 1024 stays.
# OZAKI_GPU_QUARTER_MIN sets another (device_run: the quarter turns at 256 and 512 points).
QUARTER_MIN = _count_env("OZAKI_GPU_QUARTER_MIN", 1024)
# ... and from this many points (A's rows times the N points of a transform, a product's):
# their GEMMs of a quarter's inner length and the butterflies cost more than they save on
# fewer.  H100, ms, one product against the quarter turns: run 70d50c8, 1024 points, 4096
# rows 2.22 / 2.91, 16384 5.66 / 5.94, 65536 19.5 / 18.0; fftn 1024^3 934 / 834; 2048 x 2048
# 2.48 / 3.40; run da86e14, 16384 x 1024 5.07 / 6.32, 32768 x 2048 (2**26 points) 23.6 /
# 19.9; run 2a5d1c7 (the defaults since: byte_unreduced, the integer reduction, row blocks
# in place), from 2**24 points: 16384 x 1024 5.18 / 4.54, 32768 x 1024 9.15 / 8.01, 65536 x
# 1024 17.6 / 15.6, 16384 x 2048 11.5 / 8.81, 32768 x 2048 23.2 / 16.8; run 9feb7c3, below:
# 4096 x 1024 (2**22) 1.94 / 1.93, 8192 x 1024 2.93 / 2.72, 4096 x 2048 3.54 / 2.86.
# ozaki.fft's products are its row blocks of at most BLOCK_POINTS = 2**26 points
# (interface.row_blocks).  OZAKI_QUARTER_POINTS_MIN sets another (device_run: the quarter
# turns at any size).
QUARTER_POINTS_MIN = _count_env("OZAKI_QUARTER_POINTS_MIN", 1 << 23)


def butterfly4(re, im, m, sign):
    """As numpy_backend.butterfly4, one pass (kernels/residues.cu butterfly4) over stacks
    (m, rows, N) whose planes may lie apart (the halves of residues_of_parts' stacks):
    three contiguous stacks (m, 4 rows, N / 4), returned as views of one array."""
    mods, rows, N = re.shape
    q = N // 4
    aligned = all(r.strides[1:] == re.strides[1:] and r.strides[2] == 1 and r.strides[0] % 4 == 0
                  and r.data.ptr % 4 == 0 for r in (re, im)) and re.strides[0] == im.strides[0]
    if mods != m or im.shape != re.shape or N % 16 or not aligned or re.strides[1] % 4:
        raise ValueError(f"butterfly4: stacks {re.shape} and {im.shape} (strides {re.strides}, {im.strides}) "
                         f"for {m} moduli: N a multiple of 16, rows 4-byte aligned")
    out = cupy.empty((3, m, 4 * rows, q), dtype=cupy.int8)
    if out.size:
        kern = _kernel("residues.cu", "butterfly4", (("NMOD", m),), _device(), (m,))
        blocks = int(min(max(-(-rows * q // 4 // 256), 1), 4096))
        kern((blocks, m), (256,), (re, im, np.int64(re.strides[0]), np.int64(re.strides[1]), np.int64(rows),
                                   np.int64(q), np.int32(sign), out))
    return list(out)


def row_bits(x, flags=False):
    """As numpy_backend.row_bits: (top, lsb) per row, (0, 0) for rows without a nonzero
    finite entry; flags=True: (top, lsb, scan_rows's flags), all from one read of the rows
    (kernels/scan_rows.cu ROW_BITS: exact mode's plan took two CuPy reductions and a scan,
    three reads of every row, about 41 of fftn 1024^3's 1100 ms, run a58be93)."""
    _, row_flags, _, _, _, top, lsb = _scan(x, bits=True)
    return (top, lsb, row_flags) if flags else (top, lsb)


def transposed(x):
    """x.T as a C-contiguous array; float64 matrices through cuBLAS dgeam, which
    runs near the copy bandwidth (a strided copy ran at about 1.6 TB/s); CuPy's copy
    while a CUDA graph is captured (graphs.py), where CuPy refuses cuBLAS calls."""
    if x.ndim != 2 or x.dtype != cupy.float64 or not x.flags.c_contiguous or x.size == 0 or graphs.capturing():
        return cupy.ascontiguousarray(x.T)
    k, n = x.shape
    out = cupy.empty((n, k), dtype=cupy.float64)
    one, zero = np.array(1.0), np.array(0.0)
    # Column-major: x is n x k (ld n); out = x^T is k x n (ld k).
    cublas.dgeam(_cublas(), cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, k, n,
                 one.ctypes.data, x.data.ptr, n, zero.ctypes.data, out.data.ptr, k, out.data.ptr, k)
    return out


# numpy_backend.bound_bottoms in one elementwise kernel (the plan's ~20 array
# operations were most of the host time of a small product): frexp of the
# integer maxima, exact in float64; s >> 1 is floor(s / 2) for negative s too.
_BOUND_BOTTOMS = cupy.ElementwiseKernel(
    "T maxima, int64 e, float64 g, int64 q", "int64 beta",
    "int r; double f = frexp((double)maxima, &r); long long s = q - r - (f > g ? 1 : 0); beta = -(e + (s >> 1));",
    "ozaki_bound_bottoms")


def bound_bottoms(maxima, e, bound):
    """As numpy_backend.bound_bottoms, one kernel."""
    g, q = math.frexp(bound)
    return _BOUND_BOTTOMS(maxima, e, g, q)


_FLAGS_OR = cupy.ReductionKernel("T flags", "int32 found", "flags", "a | b", "found = a", "0", "ozaki_flags_or")


def flags_found(flags_a, flags_b, host=True):
    """As numpy_backend.flags_found: two reductions and (host=True) one 4-byte read (the host sync)."""
    found = (_FLAGS_OR(flags_a) | _FLAGS_OR(flags_b)) & 3
    return int(_host.read(found)) if host else found


# Kernels that replace verified code switch on only after a device run has passed
# their tests.  OZAKI_NEW_KERNELS names the ones on ("all", "none", or a comma list);
# unset, NEW_KERNELS_ON.  First run 2026-12-05 (H100, bench/results/2026-12-05-024cda9-h100):
#   epilogue_vec  the epilogue's adjacent outputs a thread (EPILOGUE_VEC): 7.70 against
#                 8.00 ms at 16384, accurate:14
#   fp8_digits    the fp8 substrate's operands and recombination (kernels/fp8_digits.cu):
#                 fp8 at 3.99x / 4.20x the int8 time at 8192 / 16384 (was 10-20x)
# Measured there and removed: a scan grid capped at 2 blocks a multiprocessor so long
# rows stay in L2 (4.44 against 3.03 ms for the two scans at 16384: too few loads in
# flight), and a one-pass maxima kernel (1.47 ms against about 0.8 for CuPy's two
# reductions at 16384; its atomics), and (run 2604612) a scan reading each value once,
# keeping it as a 32-bit ceiling-and-exponent word in registers until the row's maximum
# was known (64 values a thread, 125 registers, 2 blocks an SM): 4.73 against 3.04 ms
# for the two scans at 16384, as the capped grid: too few loads in flight.
# Run 2026-12-06 (H200, bench/results/2026-12-06-90ad4e5-h200: their GPU tests 55 passed):
#   residue_parts     a complex operand's parts and Karatsuba's sums in one residues.cu pass
#                     (PARTS 2), for two residue passes and add_residues (60 of fftn
#                     1024^3's 1090 ms, H100, run 6cbae98)
#   zero_signs_parts  the zero signs of a complex result's two parts in one launch (41 ms
#                     there in a launch a part; fftn 512^3's 2.4 ms in 6 launches after)
# with the FFT's 25 moduli (plans.product_roots): fftn 1024^3 1103.4 -> 935.6 ms on the
# H200 (a58be93 -> 90ad4e5), 512^3 115.4 -> 101.0, 2^16 6.63 -> 3.95.
# Run 2026-12-07 (H100, bench/results/2026-12-07-8b1f31d-h100, followups.txt: with these
# defaults the epilogue kernel, complex, FFT same-bits and residues_of_parts tests of the
# backend, 84, and the FFT's same-bits tests but the quarter turns', 24, passed; first run
# 4edd3fb, the FFT's same bits again in 98cb4f1):
#   byte_convert      epilogue.cu's int8 residues converted by I2F after Karatsuba's
#                     differences in integers (BYTE_CONVERT; off: the float64 trick)
#   pairs_in_place    exact mode's complex left operands read as interleaved pairs in place
#                     (scheme.operand_rows' interleaved; residues.cu's entry stride 2)
# with the FFT's 25 moduli: fftn 1024^3 955.1 -> 910.7 ms (its epilogue 209.5 -> 193.4) in
# one call (the same bits: the same difference to cuFFT, 4.847387214694125e-16), fftn 512^3
# 103.4 -> 96.9 on the same machine.
# Their GPU tests passed (the quarter turns' same bits on every path, run 3d22402, and on the
# residue GEMM again at 8b1f31d), then off: slower on batches, about level on cubes:
#   quarter_products  scheme._quarter_product on the GPU (butterfly4, the stacked residue
#                     GEMM of a quarter's inner length, epilogue.cu INTERLEAVED; QUARTER_MIN):
#                     a quarter of the int8 work; H100, run 3d22402, against one product, both
#                     without launch bounds: a batch of 4096 x 1024 3.27 against 2.45 ms,
#                     2048 x 2048 3.73 against 2.73; fftn 1024^3 877.7 (bench.kernel_times)
#                     against 910.7 (bench.fft), 8b1f31d (893 against 966 on the H200, run
#                     98cb4f1): its GEMMs 305.7 against 431.1 ms, at about half the copy roof
#                     where one product's run at the int8 rate, and 33 ms more float64 copies
#                     (64 more launches: most likely its row blocks where the workspace splits
#                     a product, copied into the result after the epilogue; branch gpu-next
#                     writes them in place)
#   residue_quarters  its butterflies formed in the residues.cu pass (QUARTERS), not by
#                     butterfly4 after it (about 125 of 150 bytes a point of one axis at 25 moduli)
# Run 2026-12-07 (H100, bench/results/2026-12-07-70d50c8-h100: the quarter turns' same bits on
# every path, the interleaved epilogue into views, butterfly4 and the epilogue kernels, 57
# passed), with the quarter turns' row blocks written in place by their epilogue:
#   quarter_products, residue_quarters  on, from 65536 rows a product (QUARTER_POINTS_MIN
#                     since): fftn 1024^3 834 against 934 ms a call (bench.kernel_times; its GEMMs 305 against 440, the float64
#                     copies no more than one product's); batches of 1024 points, against one
#                     product: 4096 rows 2.91 against 2.22 ms, 16384 5.94 against 5.66, 65536
#                     18.0 against 19.5; 2048 x 2048 3.40 against 2.48
#   byte_unreduced    epilogue.cu's BYTE_REDUCE 0 (Karatsuba's int8 differences into the CRT sum
#                     as they are, |x| <= 384): fftn 1024^3's epilogue 196.8 -> 176.9 ms, a batch
#                     of 4096 x 1024's 0.279 -> 0.253 (the same difference to cuFFT); two outputs
#                     a thread at 3 blocks beside it (1,356 SASS instructions an output against
#                     1,624) gave 175.4 and 0.253: not taken
# Run 2026-12-07 (H100, bench/results/2026-12-07-4e93d24-h100, profile s20c, at the defaults
# above (byte_unreduced on) and this: the residue GEMM's
# tests on both builds and its one-launch stacks, 24 passed; the backend's epilogue and
# same-bits tests, 119 passed before the stage's time ran out, none failed, every epilogue
# kernel test among them; the FFT's same-bits tests, 24 passed, the quarter turns' not reached):
#   residue_int_mod   the residue GEMM's epilogue reducing its int32 accumulators mod p on the
#                     integer pipes (residue_gemm.cu INTEGER_MOD, modular_int.cuh's
#                     mod_symmetric_int: IMAD.HI and five simple operations) instead of
#                     int32 -> float64 -> int8 conversions (16 a clock an SM) around seven FP64
#                     operations: SASS about 1,200 instructions a thread a 256 x 128 tile against
#                     2,100 (ptxas 13.0).  fftn 1024^3 808.7 -> 745.7 ms, a batch of 65536 x 1024
#                     17.08 -> 15.67, in one call (the same difference to cuFFT to every digit)
# Run 2026-12-07 (H100, bench/results/2026-12-07-53d1c4c-h100, profile s26e; host tests:
# test_kulisch_cuh's two-word rounding against Fractions, four mutations caught, and
# test_epilogue_host's TWO_WORDS builds; GPU: every path's same bits with it on and off, 129
# passed):
#   two_words         one slice pair's CRT value with P < 2**128 (16 moduli or fewer) rounded
#                     from two 64-bit words (rounding.cuh round_two_words), not normalized limbs:
#                     SASS, ptxas 13.0, 16 moduli: the fused kernel 1,360 -> 1,296 static
#                     instructions (two outputs an iteration), the real epilogue (VEC 4) 1,624 ->
#                     1,496, the complex one (VEC 2) 1,984 -> 1,864.  The stack of 4096 x 64^2
#                     1.57 -> 1.50 ms, 256 x 256^2 1.66 -> 1.63, 1024^2 0.37 -> 0.35 (two turns)
# Run 2026-12-07 (H100, bench/results/2026-12-07-e3e7e1c-h100, profile s27a; GPU: the fused
# kernel at the int32 limits and every path's same bits with it, 33 passed), off:
#   fused_int_mod     the fused kernel's int32 accumulators reduced mod p on the integer pipes
#                     (fused.cu FUSED_INT_MOD, modular_int.cuh's mod_symmetric_int, as
#                     residue_int_mod) instead of a conversion and four FP64 operations each
#                     (SASS: 8 I2F, 16 DFMA and 16 DADD fewer a group, 16 more instructions in
#                     all).  No gain measured: the stack of 4096 x 64^2 1.76 / 1.76 ms against
#                     1.61 / 1.80 at the defaults, 1024 x 128^2 1.92 / 1.95 against 1.81 / 2.03
# Run 2026-12-07 (H100, bench/results/2026-12-07-b409ea8-h100; host checks: the digits, their
# fragments and the kernel's integer arithmetic in tests/backends/test_kernel_tables.py, its
# builds in test_fused_builds.py); its GPU tests failed there on two test defects, since
# mended, and passed in run 9743382:
#   crt_mma           the fused kernel's CRT sum S = sum_i r_i c_i on the tensor cores (fused.cu
#                     CRT_MMA: the residues of 32 outputs times the c_i's balanced base-256 digits,
#                     the moduli the inner dimension) for one slice pair of up to 32 moduli; SASS
#                     (ptxas 13.0, 16 moduli, the short tile): registers 76 -> 52, the CRT step
#                     381 -> 240 static instructions an output; ncu: 665 instructions an output
#                     against 878; the stack of 4096 x 64^2 1.64 / 1.66 -> 1.46 / 1.50 ms, 1024 x
#                     128^2 1.82 / 1.83 -> 1.62 / 1.67 (two turns, the same bits as the cutlass path)
#                     (run b409ea8, H100); on since run 9743382 (H100): its 15 GPU tests and the
#                     179 of test_fused.py and test_cupy_float32.py with it on passed, then every
#                     GPU test with it in the defaults
# Written 2026-12-08, not yet run (device_run.sh s31a):
#   tiled_bt          a stack's B^T rows (scheme.operand_rows) through transpose.cu's tiles
#                     (contiguous) instead of CuPy's strided copy, which took 103 us of the
#                     stack of 4096 x 64^2 (134 MB each way, 2.6 TB/s; run 0b16e61): eager and
#                     in the direct graphs, which take B^T's view
#   epilogue_mma      the unfused epilogue's CRT sums on the tensor cores (epilogue.cu CRT_MMA,
#                     crt_mma.cuh: fused.cu's crt_mma over the residue GEMM's int8 residues read
#                     from memory, a warp 32 outputs of a row; complex: the digit sums of the
#                     Karatsuba three combined) for one slice pair, up to 32 moduli, cols a
#                     multiple of 32 (_epilogue_mma): SASS loop bodies (ptxas 13.0) an output, real
#                     16 moduli 245 against 344 (VEC 4), complex 25 moduli 813 against 1,729 and
#                     interleaved (the FFT's) 847 against 1,826 (bench.fft_floors --epilogue mma:
#                     a stage fused on chip 3.0x cuFFT at 1024^3 against 6.0x).  The epilogue took
#                     0.080 of 2048^2's 0.75 ms (run 8a5cb17), about 177 of fftn 1024^3's 746 ms (runs
#                     70d50c8, 4e93d24)
#   round_convert     the one rounding of the epilogues (epilogue.cu, fused.cu; rounding.cuh
#                     rounded_window, ROUND_CONVERT) by the conversion instruction where the result
#                     is normal: the 64-bit window with its sticky bit ORed in, rounded by
#                     __ull2double_rn (round to odd, then to nearest: the same RN) and scaled by
#                     2**E, instead of round_window's shifts and compares; subnormal results keep
#                     them.  Host builds of both roundings against Fractions, each way
#                     (test_kulisch_cuh; a dropped sticky bit and a boundary two off caught).  SASS
#                     (ptxas 13.0, epilogue_mma's 16-moduli build): the normal path about 17
#                     instructions an output part where round_window and signed_rounded take about 45
NEW_KERNELS = ("epilogue_vec", "fp8_digits", "residue_parts", "zero_signs_parts", "residue_quarters",
               "quarter_products", "byte_convert", "pairs_in_place", "byte_unreduced", "residue_int_mod",
               "two_words", "fused_int_mod", "crt_mma", "tiled_bt", "epilogue_mma", "round_convert")
NEW_KERNELS_ON = ("epilogue_vec", "fp8_digits", "residue_parts", "zero_signs_parts", "byte_convert", "pairs_in_place",
                  "residue_quarters", "quarter_products", "byte_unreduced", "residue_int_mod", "two_words",
                  "crt_mma")


def _new_kernel(name):
    """Whether NEW_KERNELS' ``name`` is on (OZAKI_NEW_KERNELS, read at each call)."""
    on = os.environ.get("OZAKI_NEW_KERNELS")
    if on is None:
        return name in NEW_KERNELS_ON
    names = {n.strip() for n in on.split(",")} - {""}
    if names & {"all", "none"} and len(names) > 1 or names - set(NEW_KERNELS) - {"all", "none"}:
        raise ValueError(f"OZAKI_NEW_KERNELS must be 'all', 'none' or a comma list of {', '.join(NEW_KERNELS)}; "
                         f"not {on!r}")
    return "all" in names or name in names


# The settings read at each call that change which kernels a product launches (and so what
# a CUDA graph holds): a graph captured under others must not replay under these.
CALL_SETTINGS = ("OZAKI_NEW_KERNELS", "OZAKI_EPILOGUE_VEC", "OZAKI_RESIDUE_GEMM_TILE")


def replayed(key, finite, A, B):
    """graphs.replayed (a backend step: scheme._stack_piece), its key with CALL_SETTINGS."""
    return graphs.replayed(key + tuple(os.environ.get(name) for name in CALL_SETTINGS), finite, A, B)


def speculated(key, fn, *inputs):
    """graphs.speculated (a backend step: fft.interface's blocks), its key with CALL_SETTINGS
    and the quarter turns' thresholds."""
    return graphs.speculated(key + tuple(os.environ.get(name) for name in CALL_SETTINGS)
                             + (QUARTER_MIN, QUARTER_POINTS_MIN), fn, *inputs)


def quarter_products():
    """Whether products with a DFT matrix may run as scheme._quarter_product here."""
    return _new_kernel("quarter_products")


def pairs_in_place():
    """Whether exact mode reads a complex left operand's pairs in place (scheme.operand_rows)."""
    return _new_kernel("pairs_in_place")


def tiled_bt():
    """Whether a stack's B^T rows go through transpose.cu's tiles (scheme.operand_rows)."""
    return _new_kernel("tiled_bt")


# Rows up to this long are scanned by a warp or part of one (4 to 32 threads, about 8
# entries a thread) instead of a block of 256 threads each: a stack of small matrices has
# many short rows.
SHORT_ROW = 1024


def _row_threads(k):
    """scan_rows.cu's threads a row (ROW_THREADS) for rows of k entries."""
    if k > SHORT_ROW:
        return 256
    return min(32, max(4, 1 << max(0, -(-k // 8) - 1).bit_length()))


def scan_rows(x, ceil_bits=0, hat=False, sum_squares=False, sum_ceilings=False, halves=False):
    """As numpy_backend.scan_rows, one block (or, for short rows, 4 to 32 threads) per row
    (kernels/scan_rows.cu); ``hat`` zero-padded to 16 columns."""
    if halves and (sum_squares or sum_ceilings):
        raise ValueError("scan_rows: halves=True does not combine with sum_squares or sum_ceilings")
    return _scan(x, ceil_bits, hat, sum_squares, sum_ceilings, halves and hat)[:5]


def _scan(x, ceil_bits=0, hat=False, sum_squares=False, sum_ceilings=False, halves=False, bits=False):
    """scan_rows.cu's one pass: (amax, flags, e, hat, sumsq, top, lsb), the outputs not
    asked for None (halves: the halves' sum is a form of hat, nothing to add without it)."""
    rows, k = x.shape
    kpad = _padded(k // 2 if halves else k)
    amax = cupy.empty(rows, dtype=cupy.float64)
    flags = cupy.empty(rows, dtype=cupy.int8)
    e = cupy.empty(rows, dtype=cupy.int64) if ceil_bits else None
    c = cupy.empty((rows, kpad), dtype=cupy.int8) if hat else None
    sumsq = cupy.empty(rows, dtype=cupy.int64) if sum_squares or sum_ceilings else None
    top, lsb = (cupy.empty(rows, dtype=cupy.int64) for _ in range(2)) if bits else (None, None)
    row_threads = _row_threads(k)
    defines = (("CEIL_BITS", ceil_bits), ("ROW_THREADS", row_threads)) + ((("WRITE_HAT", 1),) if hat else ()) \
        + ((("SUM_SQUARES", 1),) if sum_squares else ()) + ((("SUM_CEILINGS", 1),) if sum_ceilings else ()) \
        + ((("HAT_HALVES", 1),) if halves else ()) + ((("ROW_BITS", 1),) if bits else ())
    if rows == 0:
        return amax, flags, e, c, sumsq, top, lsb
    kern = _kernel("scan_rows.cu", "scan_rows", defines, _device())
    null = np.uint64(0)
    per_block = 256 // row_threads
    blocks = -(-rows // per_block)
    kern((blocks,), (256,), (cupy.ascontiguousarray(x, dtype=cupy.float64), np.int64(rows),
                             np.int64(k), np.int64(kpad),
                             amax, flags, *(null if v is None else v for v in (e, c, sumsq, top, lsb))))
    return amax, flags, e, c, sumsq, top, lsb


def _pad(R):
    """R (b, rows, k) with k padded to K_PAD, as the GEMMs read it: rows k-contiguous
    within each plane; the planes may lie apart (a prepared operand's row block, read
    in place: copying the 2^24-point transform's constant residues per block took 13.7 of
    its 65 ms of GPU time, run 2534520)."""
    k = R.shape[-1]
    if k % K_PAD == 0:
        if R.ndim == 3 and R.strides[1:] == (k, 1) and R.strides[0] % 16 == 0 and R.data.ptr % 16 == 0:
            return R
        return cupy.ascontiguousarray(R)
    out = cupy.zeros(R.shape[:-1] + (_padded(k),), dtype=cupy.int8)
    out[..., :k] = R
    return out


# cuBLAS runs big int8 products faster in output tiles: measured on the H200
# (bench/results/2026-12-02-10b4461/steps.txt, 16 moduli, k = n), tiles of
# 2048 / 4096 / 8192 / untiled took 115 / 107-109 / 106 / 121 ms at n = 16384
# and 17.3 / 13.5 / 13.7 / 13.7 ms at 8192; again (2026-12-02-af166c3) 4096 /
# 8192: 107.2-111.0 / 102.7 ms at 16384.  Tiles are views (pointer offsets,
# the same leading dimensions).  Only outputs large in both dimensions are
# tiled: a skinny one (the FFT's stage 1, 32 x 4.2 M outputs in a 512^3 fftn)
# cut into 8192-wide tiles made 512 tiny calls per modulus and part, 18.3 s of
# int8 GEMM calls in a 21.6 s transform (run 3697b74).
GEMM_TILE = 8192


def _tiles(size, other):
    """Tiles of one output dimension of ``size`` whose other dimension is ``other``."""
    tile = GEMM_TILE if size > GEMM_TILE and other > GEMM_TILE else size
    return [(s, min(tile, size - s)) for s in range(0, size, tile)]


def gemm_tile(Ra, Rbt, out, i0, mt, j0, nt, k0=0, kc=None, batch=1):
    """out[:, :, i0:i0+mt, j0:j0+nt] = the int8 products of that tile over k0..k0+kc,
    for padded residues Ra (b, batch*m, kp), Rbt (b, batch*n, kp): a cuBLAS call per
    modulus (or one over the moduli, GEMM_BATCHED), each over the batch."""
    b, _, kp = Ra.shape
    _, _, m, n = out.shape
    kc = kp - k0 if kc is None else kc
    S = out.strides[1] // 4                                      # elements per modulus
    pa, pb = Ra.strides[0], Rbt.strides[0]                       # bytes (int8) between moduli's planes
    one = np.array(1, dtype=np.int32)
    zero = np.array(0, dtype=np.int32)
    if batch == 1 and GEMM_BATCHED:
        calls = [(0, b, pa, pb, S)]                              # one call over the moduli
    else:
        calls = [(i, batch, m * kp, n * kp, out.strides[0] // 4) for i in range(b)]   # a call per modulus
    handle = _cublas()
    # Column-major view: C^T (n x m) = Rbt (k x n)^T . Ra (k x m), both k-contiguous.
    for i, count, stride_a, stride_b, stride_c in calls:
        cublas.gemmStridedBatchedEx(
            handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, nt, mt, kc,
            one.ctypes.data,
            Rbt.data.ptr + i * pb + j0 * kp + k0, _CUDA_R_8I, kp, stride_b,
            Ra.data.ptr + i * pa + i0 * kp + k0, _CUDA_R_8I, kp, stride_a,
            zero.ctypes.data, out.data.ptr + (i * S + i0 * n + j0) * 4, _CUDA_R_32I, n,
            stride_c, count, _CUBLAS_COMPUTE_32I, _CUBLAS_GEMM_DEFAULT)


def gemm(Ra, Rbt, batch=1):
    """Exact integer products: int8 (b, batch*m, k), (b, batch*n, k) -> (batch, b, m, n).

    Matrix g of the batch is rows g*m..(g+1)*m of Ra[i] times those of Rbt[i].
    int32 when the inner dimension fits one chunk, else the chunks' int32
    products summed in int64.  Outputs larger than GEMM_TILE a side are
    computed tile by tile.
    """
    Ra, Rbt = _pad(Ra), _pad(Rbt)
    b, rows, kp = Ra.shape
    m, n = rows // batch, Rbt.shape[1] // batch
    out = cupy.empty((batch, b, m, n), dtype=cupy.int32)
    total = None
    for k0 in range(0, kp, K_CHUNK):
        kc = min(K_CHUNK, kp - k0)
        for i0, mt in _tiles(m, n):
            for j0, nt in _tiles(n, m):
                gemm_tile(Ra, Rbt, out, i0, mt, j0, nt, k0, kc, batch)
        if kc < kp:
            total = out.astype(cupy.int64) if total is None else total + out
    return out if total is None else total


# The residue GEMM (kernels/residue_gemm.cu, CUTLASS on Hopper): every modulus'
# int8 product in one launch at the library's int8 rate, each int32 accumulator
# reduced mod p in the GEMM's epilogue and stored as its int8 residue, so the
# products cross memory as 1 byte instead of 4 (and the CRT epilogue reads 1).
# Built with nvcc (native.py) by ``python -m ozaki build`` or the first forced
# path="cutlass"; "auto" uses it once built, the cuBLAS path until then.
RESIDUE_GEMM_K_MAX = K_CHUNK            # its int32 accumulators run over the whole inner dimension
RESIDUE_ROW_ALIGN = 16                  # its TMA stores want the residue rows 16-byte aligned
# Measured on the H200 (bench/results/2026-12-03-3ca144a/residue_gemm.txt; GEMM step +
# CRT epilogue, against cuBLAS + epilogue): of three builds (128 x 128 tiles on two
# cooperative warpgroups, the same ping-ponging, 256 x 128 cooperative) the 256 x 128
# one (kernels/residue_gemm.cu's default tile) was the fastest on every shape, and
# faster than cuBLAS up to 2**36 multiply-adds per modulus: 26 moduli, 65536 x 256 x
# 256 (an fftn 256^3 axis) 1.42 vs 1.77 ms; 262144 x 512 x 512, 11.4 vs 12.0; 4096 x
# 1024 x 1024, 0.52 vs 1.06; 16 moduli, 4096^3 2.13 vs 2.18; 16384 x 256 x 16384 level;
# slower past it (8192^3: 16.8 vs 16.0 ms; 16384^3: 134 vs 110, where cuBLAS runs 1.37
# POPS and the residue GEMM 1.10).  "auto" takes it up to this work.
RESIDUE_GEMM_AUTO_WORK = 1 << 36        # m n k of one matrix
# ... and only where both output sides are this wide: cuBLAS's fast int8 tiles want wide
# products on both sides.  An fftn 1024^3 block of the real first axis, 65536 x 1026 x
# 1024 (just past 2**36), went to cuBLAS and ran its per-modulus GEMMs at 280 TOPS
# (189 ms of a 1346-ms call, H100, bench/results/2026-12-06-8f47d09-h100/kernels_fftn_1024.txt),
# while the complex blocks at 2**36 took the residue GEMM.
RESIDUE_GEMM_CUBLAS_SIDE = 4096


# Per build (residue_gemm_defines()): "lib": the loaded library, or "why": why it cannot load.
_RESIDUE_GEMM = collections.defaultdict(dict)


def residue_gemm_defines():
    """The residue GEMM's build: its epilogue's modular reduction on the integer pipes
    (residue_gemm.cu INTEGER_MOD, NEW_KERNELS residue_int_mod) or on the FP64 pipe, and
    its tile (native.residue_gemm_tile_defines: OZAKI_RESIDUE_GEMM_TILE)."""
    # (the float64 reduction's failures at the other tiles in run da86e14 were gemm_residues
    # passing it the integer build's table)
    integer = (("INTEGER_MOD", 1),) if _new_kernel("residue_int_mod") else ()
    return integer + native.residue_gemm_tile_defines()


def _residue_gemm_library(build=True, defines=None):
    """(library, None) when the residue GEMM runs on this device, else (None, why).
    ``build``: compile it if it is not in the cache yet (about a minute of nvcc); "auto"
    passes False, so a product never waits for a compile it did not ask for (a forced
    path="cutlass", residue_gemm_available() or ``python -m ozaki build`` builds it).
    ``defines``: the build (residue_gemm_defines(), read here when not given)."""
    defines = residue_gemm_defines() if defines is None else defines
    known = _RESIDUE_GEMM[defines]
    if "lib" in known:
        return known["lib"], None
    cc = cupy.cuda.Device().compute_capability
    if cc != "90":
        return None, f"the residue GEMM is built for sm_90a; this device is sm_{cc}"
    if "why" in known:
        return None, known["why"]
    if not build and ("unbuilt" in known or not native.built("residue_gemm.cu", defines)):
        # remembered: "auto" asks on every product, and the check hashes the kernel's sources
        # (about 0.18 ms); a build in another process is seen by processes started after it
        known["unbuilt"] = True
        return None, "the residue GEMM is not built yet (python -m ozaki build)"
    try:
        lib = native.library("residue_gemm.cu", defines)
    except native.NativeUnavailable as exc:
        known["why"] = str(exc)
        return None, str(exc)
    lib.ozaki_residue_gemm.restype = ctypes.c_int
    lib.ozaki_residue_gemm.argtypes = ([ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong] * 3
                                       + [ctypes.c_void_p] * 2 + [ctypes.c_int] * 4
                                       + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p])
    lib.ozaki_residue_gemm_workspace.restype = ctypes.c_size_t
    lib.ozaki_residue_gemm_workspace.argtypes = [ctypes.c_int] * 4
    known["lib"] = lib
    return lib, None


def residue_gemm_available():
    """Whether ``gemm_residues`` can run here (building it if needed); if not, why (a string)."""
    lib, why = _residue_gemm_library()
    return True if lib is not None else why


@functools.lru_cache(maxsize=None)
def _moduli_arrays(m, device, repeat=1, integer=False):
    """The moduli and their rounded inverses, float64 on the device (the residue GEMM's
    epilogue), each ``repeat`` times in a row (a stack's matrices: one batch entry each);
    ``integer``: its INTEGER_MOD build's table instead (residue_gemm_table), and None.
    Never evicted: a captured CUDA graph reads them by address (graphs.py)."""
    if integer:
        return cupy.asarray(np.repeat(residue_gemm_table(_moduli(m)), repeat, axis=0)), None
    ps = np.repeat(np.array(_moduli(m), dtype=np.float64), repeat)
    return cupy.asarray(ps), cupy.asarray(1.0 / ps)


def gemm_residues(Ra, Rbt, m, batch=1):
    """The residues mod p_i of the int8 products: int8 (b, batch*m_, k), (b, batch*n, k)
    -> int8 (batch, b, m_, n), entry r with r = (Ra[i] Rbt[i]^T)[.] mod p_i, |r| <= p_i / 2,
    the residues the epilogue reduces to the same CRT value as the int32 products
    (``gemm``).  One launch over the b moduli and the batch's matrices: batch entry
    i * batch + g of the CUTLASS GEMM is modulus i of matrix g, whose operands and
    output lie a matrix apart within the planes (stacks whose planes are not
    contiguous take a launch a matrix).  The result is a (batch, b, m_, n) view of
    (b, batch, m_, ld): its rows lie RESIDUE_ROW_ALIGN-padded apart, its planes
    ``stacked_residues`` reads as (b, batch m_, n) rows; B^T's rows are copied with zero
    rows where n is not a multiple of it."""
    Ra, Rbt = _pad(Ra), _pad(Rbt)
    b, rows, kp = Ra.shape
    if Rbt.shape[0] != b or Rbt.shape[2] != kp or b > m:
        raise ValueError(f"residue stacks {Ra.shape} and {Rbt.shape} do not match each other or {m} moduli")
    if kp > RESIDUE_GEMM_K_MAX:
        raise ValueError(f"the residue GEMM's inner dimension is at most {RESIDUE_GEMM_K_MAX}, got {kp}")
    mm, n = rows // batch, Rbt.shape[1] // batch
    if max(mm, n + RESIDUE_ROW_ALIGN) >= 2 ** 31:
        raise ValueError(f"the residue GEMM takes fewer than 2**31 rows a side, got {mm} x {n}")
    defines = residue_gemm_defines()
    lib, why = _residue_gemm_library(defines=defines)
    if lib is None:
        raise RuntimeError(f"path='cutlass' cannot run: {why}")
    ld = -(-n // RESIDUE_ROW_ALIGN) * RESIDUE_ROW_ALIGN
    if ld != n:               # the TMA store wants whole 16-byte rows: pad B^T with zero rows
        padded = cupy.zeros((b, batch, ld, kp), dtype=cupy.int8)
        padded[:, :, :n] = Rbt.reshape(b, batch, n, kp)
        Rbt = padded.reshape(b, batch * ld, kp)
    out = cupy.empty((b, batch, mm, ld), dtype=cupy.int8)
    if out.size and kp == 0:
        out[...] = 0
    elif out.size:
        if Ra.strides[0] == batch * mm * kp and Rbt.strides[0] == batch * ld * kp:
            # one launch: A's plane l = i batch + g at l m_ kp bytes, B^T's at l ld kp, the output's at l m_ ld
            matrices, count, repeat = [0], b * batch, batch
            a_plane, b_plane, d_plane = mm * kp, ld * kp, mm * ld
        else:
            matrices, count, repeat = range(batch), b, 1
            a_plane, b_plane, d_plane = Ra.strides[0], Rbt.strides[0], batch * mm * ld
        # the loaded build's own arguments: the integer build's table or the float64 build's p
        # and 1/p, by its reduction alone (run da86e14 keyed it on any define, so the float64
        # build at another tile read the table)
        moduli, inverses = _moduli_arrays(m, _device(), repeat, ("INTEGER_MOD", 1) in defines)
        ws_bytes = lib.ozaki_residue_gemm_workspace(mm, ld, kp, count)
        ws = cupy.empty(max(ws_bytes, 1), dtype=cupy.uint8)
        stream = cupy.cuda.get_current_stream().ptr
        for g in matrices:
            status = lib.ozaki_residue_gemm(
                Ra.data.ptr + g * mm * kp, kp, a_plane, Rbt.data.ptr + g * ld * kp, kp, b_plane,
                out.data.ptr + g * mm * ld, ld, d_plane, moduli.data.ptr, 0 if inverses is None else inverses.data.ptr,
                mm, ld, kp, count,
                ws.data.ptr, ws_bytes, stream)
            if status != 0:
                raise RuntimeError(f"the residue GEMM failed (status {status}) on {b} x {mm} x {n} x {kp}")
    return out.transpose(1, 0, 2, 3)[..., :n]


def stacked_residues(P):
    """gemm_residues' (batch, b, m, n) view as (b, batch m, n): every matrix's rows in
    one plane a modulus, without a copy (the epilogue's ``matrices``)."""
    batch, b, m, n = P.shape
    return P.transpose(1, 0, 2, 3).reshape(b, batch * m, n)


# The fp8 substrate's digit GEMMs run on cuBLASLt FP8 (e4m3 x e4m3 -> FP32,
# fast accumulation off) through PyTorch's torch._scaled_mm with unit tensor
# scales, the maintained binding installed beside CuPy on the GPU machine (CuPy
# exposes no FP8 matmul).  Hopper's FP8 tensor cores keep partial sums exact
# only to about 2**14 within each 128-term segment; ozaki.gemm.fp8 picks digits
# that stay inside that (measured: bench/fp8.py).
FP8_ROWS = 16                   # cuBLASLt FP8 wants every dimension a multiple of 16


@functools.lru_cache(maxsize=None)
def _e4m3_codes(device):
    from ..gemm import fp8
    return cupy.asarray(fp8.E4M3_CODES)


def _torch():
    try:
        import torch
    except ImportError as exc:                   # pragma: no cover - the GPU image has it
        raise NotImplementedError("substrate='fp8' on cupy arrays needs PyTorch (torch._scaled_mm, "
                                  "cuBLASLt FP8); use substrate='int8'") from exc
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        raise NotImplementedError(f"substrate='fp8' needs torch._scaled_mm and float8_e4m3fn; "
                                  f"torch {torch.__version__} lacks them")
    return torch


def _e4m3(torch, D):
    """int8 digits (b, rows, k) as a torch float8_e4m3fn tensor (b, rows16, k16), zero padded."""
    b, rows, k = D.shape
    rp, kp = -(-rows // FP8_ROWS) * FP8_ROWS, _padded(k)
    codes = cupy.zeros((b, rp, kp), dtype=cupy.uint8)          # byte 0 is e4m3 +0
    codes[:, :rows, :k] = _e4m3_codes(_device())[D.view(cupy.uint8)]
    return torch.from_dlpack(codes).view(torch.float8_e4m3fn)


def gemm_fp32_digits(Da, Dbt, batch=1):
    """FP32 products of e4m3-exact int8 digit stacks: (b, batch*m, k), (b, batch*n, k)
    -> float32 (batch, b, m, n), one cuBLASLt FP8 call per modulus and matrix."""
    torch = _torch()
    b, rows, k = Da.shape
    m, n = rows // batch, Dbt.shape[1] // batch
    out = cupy.empty((batch, b, m, n), dtype=cupy.float32)
    if out.size == 0:
        return out
    ptr = cupy.cuda.get_current_stream().ptr
    with torch.cuda.stream(torch.cuda.ExternalStream(ptr) if ptr else torch.cuda.default_stream()):
        one = torch.ones((), dtype=torch.float32, device="cuda")
        result = torch.from_dlpack(out)
        for g in range(batch):
            ta = _e4m3(torch, Da[:, g * m:(g + 1) * m])
            tb = _e4m3(torch, Dbt[:, g * n:(g + 1) * n])
            for i in range(b):
                # Row-major A digits times column-major B digits (B^T's rows, transposed view).
                c = torch._scaled_mm(ta[i], tb[i].t(), scale_a=one, scale_b=one, out_dtype=torch.float32,
                                     use_fast_accum=False)
                result[g, i] = c[:m, :n]
    return out


def _fp8_kernel(function, defines=()):
    """kernels/fp8_digits.cu's ``function``, with the e4m3 bytes of -16..16 (E4M3_INIT)."""
    from ..gemm import fp8
    codes = ", ".join(str(int(fp8.E4M3_CODES[v & 0xFF])) for v in range(-16, 17))
    return _kernel("fp8_digits.cu", function, (("E4M3_INIT", "{" + codes + "}"),) + tuple(defines), _device())


def fp8_operands(R, side, batch=1):
    """As numpy_backend.fp8_operands ((X, XY, Y): the digits X, Y and [X | Y] for side "a",
    [Y | X] for "b" of one modulus' residues R (batch*m, k)), as cuBLASLt's FP8 GEMMs read
    them: e4m3 bytes, each matrix zero-padded to multiples of 16 rows and columns, torch
    float8_e4m3fn tensors (batch, mp, kp), (batch, mp, 2 kp), (batch, mp, kp); one kernel pass."""
    if not _new_kernel("fp8_digits"):
        return numpy_backend.fp8_operands(R, side, batch, xp=cupy)
    torch = _torch()
    rows, k = R.shape
    if R.dtype != cupy.int8 or (k > 1 and R.strides[1] != 1):
        R = cupy.ascontiguousarray(R, dtype=cupy.int8)
    m = rows // batch
    mp, kp = -(-m // FP8_ROWS) * FP8_ROWS, _padded(k)
    X, Y = (cupy.empty((batch, mp, kp), dtype=cupy.uint8) for _ in range(2))
    XY = cupy.empty((batch, mp, 2 * kp), dtype=cupy.uint8)
    grid, block = _grid(batch * mp * 256, 256)                 # a block a padded row
    _fp8_kernel("digit_operands")(grid, block, (R, np.int64(R.strides[0] if rows > 1 else k), np.int64(m),
                                                np.int64(batch), np.int64(k), np.int64(mp), np.int64(kp),
                                                np.int32(side == "a"), X, Y, XY))
    return tuple(torch.from_dlpack(D).view(torch.float8_e4m3fn) for D in (X, XY, Y))


def fp8_products(Da, Db, batch=1):
    """As numpy_backend.fp8_products: [XX, XY, YY] (batch, mp, np) float32 of fp8_operands'
    digits, one cuBLASLt FP8 call each (and matrix), on CuPy's current stream; the padding
    rows and columns are zero products, which fp8_recombine does not read."""
    if not _new_kernel("fp8_digits"):                 # int8 digits: gemm_fp32_digits converts them
        return [gemm_fp32_digits(a, b, batch)[:, 0] for a, b in zip(Da, Db)]
    torch = _torch()
    ptr = cupy.cuda.get_current_stream().ptr
    outs = []
    with torch.cuda.stream(torch.cuda.ExternalStream(ptr) if ptr else torch.cuda.default_stream()):
        one = torch.ones((), dtype=torch.float32, device="cuda")
        for a, b in zip(Da, Db):
            def mm(g):
                return torch._scaled_mm(a[g], b[g].t(), scale_a=one, scale_b=one, out_dtype=torch.float32,
                                        use_fast_accum=False)
            if batch == 1:
                outs.append(cupy.from_dlpack(mm(0))[None])      # no copy
                continue
            res = cupy.empty((batch, a.shape[1], b.shape[1]), dtype=cupy.float32)
            view = torch.from_dlpack(res)
            for g in range(batch):
                view[g] = mm(g)
            outs.append(res)
    return outs


def fp8_recombine(XX, XY, YY, out, add=False):
    """As numpy_backend.fp8_recombine: out = 256 XX + 16 XY + YY (plus out when ``add``), exact,
    out (batch, m, n) int32/int64 at any row and matrix stride (one modulus of the product
    stack), the digit products (batch, >= m, >= n) float32 alike; one kernel pass."""
    batch, m, n = out.shape
    if not _new_kernel("fp8_digits") or (n > 1 and out.strides[2] != out.itemsize):
        return numpy_backend.fp8_recombine(XX, XY, YY, out, add, xp=cupy)
    if out.size == 0:
        return out
    XX, XY, YY = (cupy.ascontiguousarray(P) for P in (XX, XY, YY))
    defines = (("OUT_T", _PROD_T[np.dtype(out.dtype)]),) + ((("ADD", 1),) if add else ())
    grid, block = _grid(batch * m * 256, 256)                  # a block a row
    o = out.itemsize
    _fp8_kernel("recombine", defines)(grid, block, (XX, XY, YY, np.int64(XX.shape[1] * XX.shape[2]),
                                                    np.int64(XX.shape[2]), np.int64(batch), np.int64(m),
                                                    np.int64(n), out, np.int64(out.strides[0] // o),
                                                    np.int64(out.strides[1] // o)))
    return out


# The kernels' output type (OUT_T, kernels/kulisch.cuh) for each output dtype.
_OUT_T = {np.dtype(np.float64): "double", np.dtype(np.float32): "float"}


# The epilogue's input type (PROD_T): int8 residues (gemm_residues), int32
# products (gemm), int64 (chunked inner dimensions).
_PROD_T = {np.dtype(np.int8): "signed char", np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}


# Adjacent outputs a thread of the epilogue (VEC, kernels/epilogue.cu), one slice pair:
# (most moduli, VEC) for real and complex products, the first that fits.  Four real outputs
# at 14 moduli take 404 SASS instructions an output against 728 for one (96 registers),
# 474 against 832 at 16 (124); two complex 1088 against 1328 at 16 moduli (128 registers);
# beyond, the registers pass 128 (ptxas, CUDA 13.0, sm_90a).  OZAKI_EPILOGUE_VEC=1 turns it off.
# Complex at 25 moduli (the FFT's exact products): VEC 2 takes 166 registers against 96 and
# made fftn 512^3's epilogue 35.5 ms against 28.2 (H200, run 90ad4e5): VEC 1 past 16.
EPILOGUE_VEC = {False: ((22, 4), (32, 2)), True: ((16, 2),)}


def _epilogue_vec(arrays, m, complex_, npairs, cols, mod_stride, row_stride):
    """The epilogue's VEC for these product stacks: 1 unless one slice pair, and cols, the
    strides and every base pointer are multiples of it (the kernel's aligned pack loads)."""
    forced = os.environ.get("OZAKI_EPILOGUE_VEC")
    if forced and forced not in ("1", "2", "4"):
        raise ValueError(f"OZAKI_EPILOGUE_VEC must be 1, 2 or 4, not {forced!r}")
    table = ((m, int(forced)),) if forced else EPILOGUE_VEC[complex_]
    if npairs != 1 or not (forced or _new_kernel("epilogue_vec")):
        return 1
    vec = next((v for most, v in table if m <= most), 1)
    item = arrays[0].itemsize
    while vec > 1 and (cols % vec or mod_stride % vec or row_stride % vec
                       or any(P.data.ptr % (vec * item) for P in arrays)):
        vec //= 2
    return vec


def _rounding_defines(npairs):
    """The one rounding's build switches of epilogue.cu and fused.cu (kulisch.cuh, rounding.cuh):
    TWO_WORDS for one slice pair (NEW_KERNELS two_words), ROUND_CONVERT (round_convert)."""
    return (((("TWO_WORDS", 1),) if npairs == 1 and _new_kernel("two_words") else ())
            + ((("ROUND_CONVERT", 1),) if _new_kernel("round_convert") else ()))


def _epilogue_mma(arrays, m, npairs, rows, cols, mod_stride, row_stride):
    """Whether epilogue.cu takes these product stacks' CRT sums on the tensor cores (CRT_MMA,
    NEW_KERNELS epilogue_mma): one slice pair of int8 residues (real, or complex's Karatsuba
    three), at most CRT_DIGITS_MAX_MODULI moduli, cols a multiple of 32 (a warp's outputs lie in
    one row), the strides multiples of 4 and every base 4-byte aligned (a lane's four residues
    are one load)."""
    return (npairs == 1 and arrays[0].dtype == cupy.int8 and rows > 0 and cols > 0
            and m <= CRT_DIGITS_MAX_MODULI and cols % 32 == 0 and mod_stride % 4 == 0 and row_stride % 4 == 0
            and rows < 2 ** 31 and all(P.data.ptr % 4 == 0 for P in arrays) and _new_kernel("epilogue_mma"))


def _epilogue_mma_grid(rows, cols):
    """epilogue.cu CRT_MMA's grid: R x cols / 32 warps in blocks of four, R a multiple of 4
    (so that the blocks hold them exactly) covering the rows, or as many as _grid's cap allows;
    warp w takes columns 32 (w % (cols / 32)) .. + 31 of rows w // (cols / 32) + j R."""
    chunks = cols // 32
    R = -(-min(rows, max(1, 4 * GRID_BLOCKS_MAX // chunks)) // 4) * 4
    return (chunks * R // 4,), (128,)


# epilogue.cu's BYTE_CONVERT and BYTE_REDUCE for int8 residues (NEW_KERNELS byte_convert, and
# byte_unreduced for BYTE_REDUCE 0);
# OZAKI_EPILOGUE_BYTES="c,r" sets them (bench/device_run.sh compares them).
EPILOGUE_BYTES = (tuple(int(v) for v in os.environ["OZAKI_EPILOGUE_BYTES"].split(","))
                  if os.environ.get("OZAKI_EPILOGUE_BYTES") else None)
# epilogue.cu's EPILOGUE_BLOCKS for one slice pair of int8 residues (the residue GEMM's): the
# blocks of 128 threads an SM ptxas must fit (4: 128 registers a thread), which moves the
# moduli's loads far ahead of their use; the kernel waits on them otherwise.  H100, exact
# mode, 25 moduli: with the quarter turns (the INTERLEAVED build, run 3d22402) fftn 1024^3's
# epilogue 371 -> 210 ms (the call 1090 -> 929); one product (run 8b1f31d, bounds off and on
# in one call, byte_convert off) fftn 512^3's 26.8 -> 25.3, a batch of 4096 x 1024's 0.428 ->
# 0.304.  Issue 11's stacks and n = 2048 (16 and 14 moduli, run 3d22402) moved within the
# run's drift but for one row (n = 2048 on "auto", 16 moduli: 1.80 ms with, 0.98 without, the
# stage's first row; on the residue GEMM 0.92 and 0.91).  Not for several slice pairs (their
# loads stay inside the pair loop, and a bound only spills: 30 and 49 moduli with residuals)
# nor for int32/int64 products (complex int32 at 49 moduli spills; not measured), ptxas
# 13.0, bench.sass.  OZAKI_EPILOGUE_BLOCKS=N sets N (0: ptxas's choice everywhere, and the
# kernel of run 3d22402: its __ldg loads come with the bounds).
EPILOGUE_BLOCKS = _count_env("OZAKI_EPILOGUE_BLOCKS", 4)


def epilogue(products, shifts, m, beta_a, beta_b, out_dtype=np.float64, residual=False, out=None, matrices=1,
             interleave=False):
    """CRT, Kulisch sum of slice pairs and one rounding to ``out_dtype`` (float64 or
    float32), in one kernel pass; ``residual``: the outputs' rounding residuals after
    them (as numpy_backend.epilogue).  ``out``: arrays (rows, cols) to write the
    outputs into, as numpy_backend.epilogue's (here: views of one stride, any rows
    apart: a block of a larger result, written in place instead of copied there).
    ``matrices``: the rows hold a stack of that many matrices one after another, and
    beta_b their columns (matrices * cols), as numpy_backend.epilogue; ``interleave``: their
    outputs are the column classes of one (rows / matrices, cols * matrices) output, as
    numpy_backend.epilogue's (epilogue.cu INTERLEAVED).

    ``products``: per slice pair a tuple of product stacks (m, rows, cols), the
    int8/int32/int64 products or any residues of them mod p_i: (P,)
    for a real product, the Karatsuba (P1, P2, P3) for a complex one, whose
    Re = P1 - P2 and Im = P3 - P1 - P2 the kernel forms itself.  The stacks are
    read where they lie, through a table of pointers (no copies).  Returns the
    list of outputs: [C] or [Re, Im].
    """
    k = crt_constants(m)
    arrays = [P for pair in products for P in pair]
    dtype = next((t for t in (cupy.int8, cupy.int32) if all(P.dtype == t for P in arrays)), cupy.int64)
    arrays = [P if P.dtype == dtype and P.strides[-1] == P.itemsize else cupy.ascontiguousarray(P, dtype=dtype)
              for P in arrays]
    if len({P.strides for P in arrays}) > 1:
        arrays = [cupy.ascontiguousarray(P) for P in arrays]
    _, rows, cols = arrays[0].shape
    mod_stride, row_stride = (s // arrays[0].itemsize for s in arrays[0].strides[:2])
    complex_ = len(products[0]) == 3
    npairs = len(products)
    defines = (("PROD_T", _PROD_T[np.dtype(dtype)]),
               ("NMOD", m), ("LP", k.L), ("LACC", k.L if npairs == 1 else k.L + max(shifts) + 1),
               ("OUT_T", _OUT_T[np.dtype(out_dtype)]))
    if npairs == 1:
        defines += (("SINGLE_PAIR", 1),)
    defines += _rounding_defines(npairs)
    if complex_:
        defines += (("COMPLEX", 1),)
    if residual:
        defines += (("RESIDUAL", 1),)
    if matrices > 1:
        defines += (("STACKED", 1),)
    convert, reduce = (EPILOGUE_BYTES if EPILOGUE_BYTES is not None
                       else (int(_new_kernel("byte_convert")), int(not _new_kernel("byte_unreduced"))))
    if dtype == cupy.int8 and (convert, reduce) != (1, 1):
        defines += (("BYTE_CONVERT", convert), ("BYTE_REDUCE", reduce))
    if EPILOGUE_BLOCKS and npairs == 1 and dtype == cupy.int8:
        defines += (("EPILOGUE_BLOCKS", EPILOGUE_BLOCKS),)
    out_rows, out_cols = rows, cols                               # the outputs' shape
    if interleave and matrices > 1:
        defines += (("INTERLEAVED", matrices),)
        out_rows, out_cols = rows // matrices, cols * matrices
    mma = _epilogue_mma(arrays, m, npairs, rows, cols, mod_stride, row_stride)
    if mma:
        defines += (("CRT_MMA", 1),)
    vec = 1 if interleave or mma else _epilogue_vec(arrays, m, complex_, npairs, cols, mod_stride, row_stride)
    if vec > 1:
        defines += (("VEC", vec),)
    kern = _kernel("epilogue.cu", "epilogue", defines, _device(), (m, True, mma))
    step = 2 if complex_ else 1
    out_stride = step * out_cols
    if out is not None:
        outs, rhos = list(out[:step]), list(out[step:]) or [np.uint64(0)]
        _check_outs(out, out_rows, out_cols, out_dtype, step, residual)
        out_stride, step = (s // outs[0].itemsize for s in outs[0].strides)
    elif complex_:         # the parts written into one complex array (complex_of returns it, no copy)
        whole = cupy.empty((out_rows, out_cols), dtype=np.result_type(out_dtype, np.complex64)).view(out_dtype)
        outs = [whole[:, 0::2], whole[:, 1::2]]
        pairs = cupy.empty((out_rows, 2 * out_cols), dtype=cupy.float64) if residual else None
        rhos = [pairs[:, 0::2], pairs[:, 1::2]] if residual else [np.uint64(0)]
    else:
        outs = [cupy.empty((out_rows, out_cols), dtype=out_dtype)]
        rhos = [cupy.empty((out_rows, out_cols), dtype=cupy.float64)] if residual else [np.uint64(0)]
    one, table = _operands(arrays, npairs > 1)
    shift_table = np.uint64(0) if npairs == 1 else device_table(shifts, np.int32)
    grid, block = _epilogue_mma_grid(rows, cols) if mma else _grid(rows * cols // vec, 128)
    kern(grid, block, one + (table, np.int32(npairs), np.int64(rows), np.int64(cols), np.int64(mod_stride),
                             np.int64(row_stride), shift_table,
                       cupy.ascontiguousarray(beta_a, dtype=cupy.int64),
                       cupy.ascontiguousarray(beta_b, dtype=cupy.int64), outs[0], outs[-1], np.int64(out_stride),
                       np.int64(step), rhos[0], rhos[-1], np.int64(rows // matrices)))
    return outs + rhos if residual else outs


def _check_outs(out, rows, cols, out_dtype, parts, residual):
    """ValueError unless ``out`` suits the epilogue: parts outputs (and as many float64
    residuals) of shape (rows, cols) whose strides, in elements, are one pair (the kernel
    indexes every one with the same element offsets)."""
    dtypes = [np.dtype(out_dtype)] * parts + ([np.dtype(np.float64)] * parts if residual else [])
    if len(out) != len(dtypes):
        raise ValueError(f"epilogue: out needs {len(dtypes)} arrays, not {len(out)}")
    for o, dt in zip(out, dtypes):
        if o.shape != (rows, cols) or o.dtype != dt:
            raise ValueError(f"epilogue: out arrays must be {dt} of shape {(rows, cols)}, not {o.dtype} {o.shape}")
        if any(s % o.itemsize for s in o.strides) or (
                [s // o.itemsize for s in o.strides] != [s // out[0].itemsize for s in out[0].strides]):
            raise ValueError("epilogue: out arrays must share their strides, in whole elements")


def complex_of(re, im):
    """As numpy_backend.complex_of; parts that are already the real and imaginary parts of
    one C-ordered complex array (the epilogue's, written in place) give that array: a view
    of the parts' memory, no copy (so writing to it writes to them)."""
    cdt = np.result_type(re.dtype, np.complex64)
    s = re.itemsize
    c_order = tuple(int(np.prod(re.shape[i + 1:])) * 2 * s for i in range(re.ndim))
    if (re.dtype == im.dtype and re.shape == im.shape and re.size and im.data.ptr == re.data.ptr + s
            and cdt.itemsize == 2 * s and re.data.ptr % cdt.itemsize == 0
            and all(a == b or n == 1 for a, b, n in zip(re.strides, c_order, re.shape))
            and all(a == b or n == 1 for a, b, n in zip(im.strides, c_order, im.shape))):
        return cupy.ndarray(re.shape, dtype=cdt, memptr=re.data, strides=c_order)
    return numpy_backend.complex_of(re, im, xp=cupy)


# ---------------------------------------------------------------------------
# The fused kernel (kernels/fused.cu): one launch per product or stack.
#
# Tiles (BM, BN, WARPS_M, WARPS_N, BK, STAGES): BM x BN outputs per block on
# WARPS_M x WARPS_N warps, a cp.async pipeline of STAGES stages of BK inner
# bytes.  Shared memory holds the pipeline (STAGES stages of BM + BN rows of
# BK + 16 bytes) and one int8 residue tile per (slice pair, modulus, output
# part); the first tile of the list whose shared memory fits is used, so the
# last, small one takes the moduli and slice pairs of exact mode's wide rows.
# Inner dimensions up to SHORT_K (stacks of small matrices, FFT stages) are
# latency-bound and take their own list.  Chosen by the sweep of
# bench/crossover.py on the H200; OZAKI_FUSED_TILES="short;long" (each
# "BM,BN,WARPS_M,WARPS_N,BK,STAGES") overrides the first tile of each list,
# for that sweep.
# Measured (bench/results/2026-12-03-cf497ce/crossover.txt, kernel alone, 16
# moduli): short, 32 x 32 on 4 warps, 4 stages, 0.83 ms for 4096 x 64^3 (64 x 64:
# 0.86); long, 128 x 64 on 8 warps, BK 128, 2 stages, 238 TOPS at n = 8192
# (64 x 64, BK 64, 3 stages: 212).
# (The lists are kernel_tables.FUSED_TILES, where host checks of the kernel's builds read them.)
SHORT_K = 256
FUSED_TILES = _FUSED_TILES


def _tiles_from_env(tiles):
    spec = os.environ.get("OZAKI_FUSED_TILES")
    if not spec:
        return tiles
    short, long = (tuple(int(v) for v in part.split(",")) for part in spec.split(";"))
    return {"short": (short,) + tiles["short"], "long": (long,) + tiles["long"]}


FUSED_TILES = _tiles_from_env(FUSED_TILES)
SHARED_MAX = 227 * 1024
# Inner dimensions whose int32 accumulators cannot overflow: |r| <= 128, so a
# real product stays below k 2**14 < 2**31; a complex one accumulates
# Im = P3 - P1 - P2 below 3 k 2**14.  (The 6-bit ceilings of the bound GEMM
# stay below k 2**12.)
FUSED_K_MAX = {1: 131071, 3: 43690}


def _fused_shared(tile, residue_tiles, skew=0):
    bm, bn, _, _, bk, stages = tile
    return stages * (bm + bn) * (bk + 16) + residue_tiles * (bm * (bn + 4) + skew)


def _res_skew(nout, npairs, num_moduli):
    """Bytes between consecutive residue tiles (fused.cu RES_SKEW): with the CRT sums on the
    tensor cores (NEW_KERNELS crt_mma; one slice pair of up to 32 moduli), a modulus' tiles lie
    8 bytes out of step with the last's, so that the four lanes of a quad, which read four
    moduli at a time, read distinct banks; else 0."""
    on = npairs == 1 and num_moduli <= CRT_DIGITS_MAX_MODULI and _new_kernel("crt_mma")
    return 8 // nout if on else 0


# A launch of fewer blocks than this per multiprocessor leaves SMs idle: the
# square 512^2 product took 0.137 ms on 32 blocks of the long tile, 0.107 ms on
# 1024 of the small one; but 1024^2 took 0.214 ms on 128 long tiles and 0.305 ms
# on the small ones (bench/results/2026-12-03-{4b1c962,896b51e}/crossover.txt).
FUSED_MIN_BLOCKS_PER_SM = 0.5


@functools.lru_cache(maxsize=None)
def _multiprocessors(device):
    return cupy.cuda.Device(device).attributes["MultiProcessorCount"]


def _fused_tile(residue_tiles, k=SHORT_K, shape=None, skew=0, crt_moduli=None):
    """The first tile (for inner dimension k) whose shared memory holds ``residue_tiles``
    residue tiles, or None.  With ``shape`` (m, n, batch): the first of those whose
    grid has FUSED_MIN_BLOCKS_PER_SM blocks per multiprocessor, else the one with
    the most blocks (small products trade tile efficiency for occupancy).  With
    ``crt_moduli`` (the CRT sums on the tensor cores asked for): only tiles that keep them
    (kernel_tables.crt_sum_fits), where any does (a shallower pipeline may not hold the
    digit sums at many moduli)."""
    tiles = [t for t in FUSED_TILES["short" if k <= SHORT_K else "long"]
             if _fused_shared(t, residue_tiles, skew) <= SHARED_MAX]
    if crt_moduli:
        tiles = [t for t in tiles if crt_sum_fits(tuple(t), crt_moduli)] or tiles
    if not tiles or shape is None:
        return tiles[0] if tiles else None
    m, n, batch = shape

    def blocks(t):
        return -(-m // t[0]) * -(-n // t[1]) * batch

    enough = FUSED_MIN_BLOCKS_PER_SM * _multiprocessors(_device())
    return next((t for t in tiles if blocks(t) >= enough), max(tiles, key=blocks))


def fused_fits(num_moduli, parts, npairs, k):
    """Whether one fused launch can take this product (shared memory, int32 range)."""
    nout = 2 if parts == 3 else 1
    skew = _res_skew(nout, npairs, num_moduli)
    return k <= FUSED_K_MAX[parts] and _fused_tile(npairs * num_moduli * nout, k, skew=skew) is not None


# The path "auto" takes, from the crossover measured on the H200 by
# bench/crossover.py (bench/results/, bench/RESULTS.md): the fused kernel wins
# while the products' int32 round trip through memory and the per-modulus
# launches cost more than its lower tensor-core rate, i.e. for small products
# and stacks of them.  Measured at 042f961 (2026-12-03): fused won
# every stack up to 64 x 512^3 (2**33 of work), n <= 1024 and complex n = 1024;
# cuBLAS won 16 x 1024^3, n >= 2048 and the skinny 16384^2 x 256.
# Measured again with the residue GEMM's path taking a stack in one launch and replaying
# (8a5cb17, H100: bench/results/2026-12-06-8a5cb17-h100/crossover.txt; b8c40ab, H200, before
# its replays): the fused kernel wins where a matrix is smaller than one residue GEMM tile
# (256 x 128 outputs): 4096 x 64^2 1.67 against 4.36 ms, 1024 x 128^2 1.79 / 2.10, complex
# 256 x 64^2 0.52 / 1.02; the residue GEMM wins every larger matrix: 512^2 0.206 / 0.230,
# 1024^2 0.317 / 0.383, 2048^2 0.745 / 1.540, complex 1024^2 0.60 / 1.18, 256 x 256^2 1.80 /
# 2.13, 64 x 512^2 1.86 / 2.62, 16 x 1024^2 2.10 / 3.67.  Where the residue GEMM is not built,
# the fused kernel keeps every product up to these works (cuBLAS's path: 0.92 ms at 1024^2).
FUSED_AUTO_WORK = 1 << 33               # batch m n k
FUSED_AUTO_MATRIX_WORK = 1 << 30        # m n k of one matrix
FUSED_AUTO_SIDE = 128                   # ... and with the residue GEMM built, max(m, n) of one matrix


# The fused kernel's grid is (n / BN, m / BM, batch): CUDA takes at most 65535 blocks along y
# and z, and the smallest tile has BM = 32.
FUSED_GRID_ROWS = 32 * 65535
FUSED_GRID_BATCH = 65535


def choose_path(path, m, n, k, batch, num_moduli, parts=1, npairs=1):
    """"fused", "cutlass" or "cublas" for a product of this shape (``path`` "auto" picks)."""
    if path == "cutlass":                # forced: built if needed, raises where it cannot run, naming why;
        return "cutlass" if _padded(k) <= RESIDUE_GEMM_K_MAX else "cublas"     # past int32: cuBLAS's chunks
    if path == "cublas":
        return path
    work = m * n * k
    if fused_fits(num_moduli, parts, npairs, k) and m <= FUSED_GRID_ROWS and batch <= FUSED_GRID_BATCH and (
            path == "fused" or (work <= FUSED_AUTO_MATRIX_WORK and batch * work <= FUSED_AUTO_WORK and (
                max(m, n) <= FUSED_AUTO_SIDE or _residue_gemm_library(build=False)[0] is None))):
        return "fused"
    return _unfused(m, n, k)


def _unfused(m, n, k):
    """The GEMMs-then-epilogue path: the residue GEMM where it runs and wins, else cuBLAS."""
    if _padded(k) > RESIDUE_GEMM_K_MAX or (
            m * n * k > RESIDUE_GEMM_AUTO_WORK and min(m, n) >= RESIDUE_GEMM_CUBLAS_SIDE):
        return "cublas"
    return "cutlass" if _residue_gemm_library(build=False)[0] is not None else "cublas"


_TABLE_TYPES = {np.dtype(np.uint64): "unsigned long long", np.dtype(np.int32): "int"}
_TABLE_CHUNK = 32


@functools.lru_cache(maxsize=None)
def _table_writer(count, ctype):
    values = ", ".join(f"{ctype} v{j}" for j in range(count))
    stores = " ".join(f"t[{j}] = v{j};" for j in range(count))
    return cupy.RawKernel(f'extern "C" __global__ void ozaki_table({ctype}* t, {values}) {{ {stores} }}',
                          "ozaki_table")


def device_table(values, dtype):
    """A small device array of host integers (pointers, shifts), written by a kernel whose
    parameters hold them: no copy from the host, which a CUDA graph's capture cannot take
    (its parameters are captured by value)."""
    dtype = np.dtype(dtype)
    table = cupy.empty(len(values), dtype=dtype)
    for j in range(0, len(values), _TABLE_CHUNK):
        chunk = values[j:j + _TABLE_CHUNK]
        _table_writer(len(chunk), _TABLE_TYPES[dtype])((1,), (1,), (table[j:], *(dtype.type(v) for v in chunk)))
    return table


def _operands(stacks, tabled):
    """The stacks' pointers as kernel parameters (three: the Karatsuba parts of one
    slice pair), and with ``tabled`` (several slice pairs, where the kernels read
    a table) a device table of all of them."""
    ptrs = [S.data.ptr for S in stacks]
    table = device_table(ptrs, np.uint64) if tabled else np.uint64(0)
    return tuple(np.uint64(p) for p in (ptrs + [0, 0, 0])[:3]), table


def _fused_launch(defines, tables, a_stacks, b_stacks, slices_b, m, n, batch, a_gstride, b_gstride,
                  residue_tiles, tail):
    asked = dict(defines)
    skew = asked.get("RES_SKEW", 0)                 # with CRT_MMA: the CRT sums on the tensor cores
    crt_moduli = asked["NMOD"] if "CRT_MMA" in asked else None
    tile = _fused_tile(residue_tiles, a_stacks[0].shape[-1], (m, n, batch), skew, crt_moduli)
    bm, bn, wm, wn, bk, stages = tile
    shared = _fused_shared(tile, residue_tiles, skew)
    kp = a_stacks[0].shape[-1]
    # one plane stride per side (Operands.a_plane, b_plane): stacks whose planes lie apart
    # differently are made contiguous
    a_stacks, b_stacks = ([S if S.strides[0] == stacks[0].strides[0] else cupy.ascontiguousarray(S) for S in stacks]
                          for stacks in (a_stacks, b_stacks))
    if len({S.strides[0] for S in a_stacks}) > 1 or len({S.strides[0] for S in b_stacks}) > 1:
        a_stacks, b_stacks = [cupy.ascontiguousarray(S) for S in a_stacks], [cupy.ascontiguousarray(S) for S in b_stacks]
    defines = defines + (("BM", bm), ("BN", bn), ("WARPS_M", wm), ("WARPS_N", wn), ("BK", bk), ("STAGES", stages))
    kern = _kernel("fused.cu", "fused", defines, _device(), tables, shared)
    grid = (-(-n // bn), -(-m // bm), batch)
    tabled = asked["NPAIRS"] > 1
    (a, a_table), (b, b_table) = _operands(a_stacks, tabled), _operands(b_stacks, tabled)
    head = a + b + (a_table, b_table,
                    np.int64(a_stacks[0].strides[0]), np.int64(b_stacks[0].strides[0]), np.int64(kp),
                    np.int32(slices_b), np.int32(m), np.int32(n), np.int64(a_gstride), np.int64(b_gstride))
    kern(grid, (32 * wm * wn,), head + tail, shared_mem=shared)


def fused_product(ra, rb, shifts, num_moduli, beta_a, beta_b, batch=1, out_dtype=np.float64, residual=False):
    """The exact-then-rounded product of residue stacks in one kernel.

    ``ra[h][t]``: the residues (num_moduli, batch*m, kp) of part h (real: A;
    complex: Ar, Ai, Ar + Ai) and slice t of A; ``rb[h][u]`` likewise for B^T;
    ``shifts``: per slice pair (t, u), in that order, its weight in limbs.
    Returns the output parts, each (batch, m, n) of ``out_dtype`` (float64 or
    float32, the format rounded to): [C] or [Re, Im]; with ``residual`` their
    rounding residuals after them, as ``epilogue``.
    The same bits as ``epilogue`` over ``gemm``'s products.
    """
    parts, slices_a, slices_b = len(ra), len(ra[0]), len(rb[0])
    npairs = slices_a * slices_b
    a_stacks = [_pad(S) for h in range(parts) for S in ra[h]]
    b_stacks = [_pad(S) for h in range(parts) for S in rb[h]]
    m, n = a_stacks[0].shape[1] // batch, b_stacks[0].shape[1] // batch
    nout = 2 if parts == 3 else 1
    outs = [cupy.empty((batch, m, n), dtype=out_dtype) for _ in range(nout)]
    rhos = [cupy.empty((batch, m, n), dtype=cupy.float64) for _ in outs] if residual else [np.uint64(0)]
    if outs[0].size == 0:
        return outs + rhos if residual else outs
    LP = crt_constants(num_moduli).L
    defines = (("NMOD", num_moduli), ("NIN", parts), ("NPAIRS", npairs), ("LP", LP),
               ("LACC", LP if npairs == 1 else LP + max(shifts) + 1), ("EPILOGUE_CRT", 1),
               ("OUT_T", _OUT_T[np.dtype(out_dtype)])) + ((("RESIDUAL", 1),) if residual else ()) \
        + _rounding_defines(npairs) + ((("FUSED_INT_MOD", 1),) if _new_kernel("fused_int_mod") else ())
    skew = _res_skew(nout, npairs, num_moduli)           # nonzero: the CRT sums on the tensor cores
    if skew:
        defines += (("CRT_MMA", 1), ("RES_SKEW", skew))
    shift_table = np.uint64(0) if npairs == 1 else device_table(shifts, np.int32)
    tail = (shift_table, cupy.ascontiguousarray(beta_a, dtype=cupy.int64),
            cupy.ascontiguousarray(beta_b, dtype=cupy.int64), outs[0], outs[-1], np.int64(m * n), np.int64(n),
            rhos[0], rhos[-1])
    _fused_launch(defines, (num_moduli, True, bool(skew)), a_stacks, b_stacks, slices_b, m, n, batch, m, n,
                  npairs * num_moduli * nout, tail)
    return outs + rhos if residual else outs


def maxima(M):
    """As numpy_backend.maxima: the row and column maxima of a stack of non-negative
    matrices M (batch, m, n), by CuPy's reductions (a one-pass kernel with atomics was
    slower on the H100: see NEW_KERNELS)."""
    return numpy_backend.maxima(M, xp=cupy)


def bound_maxima(ahat, bhat, batch=1):
    """Row and column maxima of M = ahat bhat^T per matrix of the stack, int32
    (batch*m,), (batch*n,), taken on chip (kernels/fused.cu, EPILOGUE_BOUND):
    M never reaches memory."""
    a, b = _pad(ahat[None]), _pad(bhat[None])
    m, n = a.shape[1] // batch, b.shape[1] // batch
    maxima = cupy.zeros(batch * (m + n), dtype=cupy.int32)          # one memset for both
    row_max, col_max = maxima[:batch * m], maxima[batch * m:]
    if m and n:
        defines = (("NMOD", 1), ("NIN", 1), ("NPAIRS", 1), ("LP", 1), ("LACC", 1), ("EPILOGUE_BOUND", 1))
        _fused_launch(defines, (1, True), [a], [b], 1, m, n, batch, m, n, 0, (row_max, col_max))
    return row_max, col_max


# ------------------------------------------------- FFT elementwise products --
#
# numpy_backend.times and times_exactly (ozaki.fft's elementwise products) in one pass
# each: every operation of the numpy code in its order, each rounded on its own
# (__dmul_rn etc.: the compiler may not contract them into FMAs, which numpy never
# forms), so the bits are numpy's; the one-operation-a-pass CuPy expressions they
# replace took about 90 of the ~225 launches of a 2^16-point transform (run 7453d6b).
_DEKKER = r"""
__device__ __forceinline__ void veltkamp(double a, double* hi, double* lo) {
    double c = __dmul_rn(a, 134217729.0);
    *hi = __dsub_rn(c, __dsub_rn(c, a));
    *lo = __dsub_rn(a, *hi);
}
__device__ __forceinline__ double two_prod_err(double a, double b, double p) {
    double ah, al, bh, bl;
    veltkamp(a, &ah, &al);
    veltkamp(b, &bh, &bl);
    double t = __dadd_rn(__dadd_rn(__dsub_rn(__dmul_rn(ah, bh), p), __dmul_rn(ah, bl)), __dmul_rn(al, bh));
    return __dadd_rn(t, __dmul_rn(al, bl));
}
__device__ __forceinline__ double two_sum_err(double a, double b, double s) {
    double bb = __dsub_rn(s, a);
    return __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}
"""
_TIMES = cupy.ElementwiseKernel(
    "complex128 a, complex128 b", "complex128 out",
    """double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
    out = complex<double>(__dsub_rn(__dmul_rn(ar, br), __dmul_rn(ai, bi)),
                          __dadd_rn(__dmul_rn(ar, bi), __dmul_rn(ai, br)));""",
    "ozaki_fft_times")
_TIMES_EXACTLY = cupy.ElementwiseKernel(
    "complex128 a, complex128 b", "complex128 P, complex128 E",
    """double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
    double h1 = __dmul_rn(ar, br), h2 = __dmul_rn(ai, bi), h3 = __dmul_rn(ar, bi), h4 = __dmul_rn(ai, br);
    double l1 = two_prod_err(ar, br, h1), l2 = two_prod_err(ai, bi, h2);
    double l3 = two_prod_err(ar, bi, h3), l4 = two_prod_err(ai, br, h4);
    double re = __dadd_rn(h1, -h2), im = __dadd_rn(h3, h4);
    double e_re = two_sum_err(h1, -h2, re), e_im = two_sum_err(h3, h4, im);
    P = complex<double>(re, im);
    E = complex<double>(__dadd_rn(e_re, __dsub_rn(l1, l2)), __dadd_rn(e_im, __dadd_rn(l3, l4)));""",
    "ozaki_fft_times_exactly", preamble=_DEKKER)


def times(a, b):
    """As numpy_backend.times (complex a b, each real operation rounded), one pass."""
    return _TIMES(a.astype(cupy.complex128, copy=False), b.astype(cupy.complex128, copy=False))


def times_exactly(a, b):
    """As numpy_backend.times_exactly: (P, E), one pass."""
    return _TIMES_EXACTLY(a.astype(cupy.complex128, copy=False), b.astype(cupy.complex128, copy=False))


# ------------------------------------------------------------- FFT zero signs --

def _strides(a):
    """(row, column) strides of a 2-D float64 array in elements."""
    return tuple(np.int64(st // a.itemsize) for st in a.strides)


def _transposed_layout(v):
    """(batch, R, L, ld, batch stride), in elements, of a view (..., R, L) whose rows are
    neighbours (stride one element) and whose points lie ld >= R elements apart, its
    leading axes one batch stride (a block of rows of an FFT axis that is not the last);
    None for any other view."""
    if v.ndim < 2 or v.dtype not in (cupy.float64, cupy.complex128) or v.size == 0:
        return None
    R, L = v.shape[-2:]
    item = v.itemsize
    lead = [(n, st) for n, st in zip(v.shape[:-2], v.strides[:-2]) if n != 1]
    if R < 2 or L < 2 or v.strides[-2] != item or v.strides[-1] % item or v.strides[-1] < R * item \
            or len(lead) > 1 or any(st <= 0 or st % item for _, st in lead):
        return None
    batch, bstride = lead[0] if lead else (1, 0)
    return batch, R, L, v.strides[-1] // item, bstride // item


_TRANSPOSE_TILE = 32


def _transpose(src, src_ld, src_batch, dest, dest_ld, dest_batch, rows, cols, batch):
    """dest[b][c][r] = src[b][r][c] (kernels/transpose.cu); False where the grid cannot hold it."""
    row_tiles, col_tiles = -(-rows // _TRANSPOSE_TILE), -(-cols // _TRANSPOSE_TILE)
    if row_tiles > 65535 or col_tiles >= 2 ** 31:       # grid y over row tiles, x over column tiles
        return False
    elem = "double2" if src.dtype == cupy.complex128 else "double"
    kern = _kernel("transpose.cu", "transpose", (("ELEM", elem),), _device())
    kern((int(col_tiles), int(row_tiles), int(min(batch, 65535))), (_TRANSPOSE_TILE, 8),
         (src, np.int64(src_ld), np.int64(src_batch), dest, np.int64(dest_ld), np.int64(dest_batch),
          np.int64(rows), np.int64(cols), np.int64(batch)))
    return True


def contiguous(x):
    """As numpy_backend.contiguous: a transposed view (_transposed_layout) through tiles,
    anything else through CuPy's copy."""
    layout = None if x.flags.c_contiguous else _transposed_layout(x)
    if layout is not None:
        batch, R, L, ld, bstride = layout
        out = cupy.empty(x.shape, dtype=x.dtype)
        if _transpose(x, ld, bstride, out, L, R * L, L, R, batch):
            return out
    return cupy.ascontiguousarray(x)


def assign(dest, src):
    """As numpy_backend.assign: into a transposed view (_transposed_layout) from a
    C-contiguous src of its shape and dtype through tiles, else CuPy's copy."""
    layout = _transposed_layout(dest) if src.flags.c_contiguous and src.dtype == dest.dtype \
        and src.shape == dest.shape else None
    if layout is not None:
        batch, R, L, ld, bstride = layout
        if _transpose(src, L, R * L, dest, ld, bstride, R, L, batch):
            return
    dest[...] = src


def _row_grid(rows, length, per_thread=1):
    """(grid, block) of the row kernels (row_specials.cu, zero_terms.cu): blocks along a
    row of ``length`` entries (x, ``per_thread`` entries a thread) and over rows (y,
    grid-stride past the y dimension's limit); a warp's multiple for short rows."""
    threads = 256 if length > 128 else 32 * -(-length // 32)
    return (int(min(-(-length // (threads * per_thread)), 1024)), int(min(rows, 65535))), (threads,)


def row_specials(parts, tiny, imag=None):
    """As numpy_backend.row_specials, one pass over each view (kernels/row_specials.cu),
    then one reduction and one 4-byte read for ``found`` (the transform's one host sync
    before its products: the rows' NaN/inf, tiny and real checks had three)."""
    rows = parts[0].shape[0]
    flags = cupy.zeros(rows, dtype=cupy.int32)
    kern = _kernel("row_specials.cu", "row_specials", (), _device())
    for v, im in zip(parts, imag or (0,) * len(parts)):
        entries = v.shape[1]
        if rows and entries:
            kern(*_row_grid(rows, entries, 4), (v, np.int64(rows), np.int64(entries), *_strides(v),
                                                 np.float64(tiny), flags, np.int32(im)))
    found = int(_host.read(_FLAGS_OR(flags))) if rows else 0
    return (flags & 1) != 0, (flags & 2) != 0, found


def zero_signs(parts, tiny, terms, N, sign):
    """As numpy_backend.zero_signs, in one pass (kernels/zero_terms.cu): a thread per
    entry, which scans a zero's terms until one is not -0; two parts that lie side by side
    with the same strides (a complex array's .real and .imag) in one launch, so the array
    is read once.  (The array version gathered every row with a zero part, most of a real
    signal's fftn time in specials.finish: 22 of 69 ms at 256^3, run bdcaf40.)"""
    parts = list(parts)
    rows, bins = parts[0].shape
    if rows * bins == 0:
        return

    def described(ts):
        args = []
        for offset, v, sine, negated in list(ts) + [ts[0]] * (2 - len(ts)):
            args += [v, np.int64(v.shape[1]), np.int64(offset), *_strides(v), np.int32(bool(sine)),
                     np.int32(bool(negated))]
        return args + [np.int32(len(ts))]

    kern = _kernel("zero_terms.cu", "zero_signs", (), _device())
    tiny = cupy.ascontiguousarray(tiny, dtype=cupy.bool_)
    second = 0
    if (len(parts) == 2 and parts[1].shape == parts[0].shape and parts[1].strides == parts[0].strides
            and all(st % 16 == 0 for st in parts[0].strides) and _new_kernel("zero_signs_parts")):
        # one launch only for the interleaved halves of one complex array (entries 16 bytes
        # apart, the second part 8 bytes on): other pairs could overlap, a launch each
        second = (parts[1].data.ptr - parts[0].data.ptr) // 8
        second = second if abs(second) == 1 else 0
    if second:
        pieces = [(parts[0], second, described(terms[0]) + described(terms[1]))]
    else:
        pieces = [(p, 0, described(ts) * 2) for p, ts in zip(parts, terms)]
    for part, offset, args in pieces:
        kern(*_row_grid(rows, bins), (part, np.int64(rows), np.int64(bins), *_strides(part), np.int64(offset),
                                      tiny, *args, np.int64(N), np.int32(sign)))


# ----------------------------------------------------------- exact residuals --

EXACT_DOT_WARPS = 4            # rows of a block at a time (a warp each)
# The kernel reads A once per right-hand side; past this many columns one exact product
# (A's residues made once, every column in its GEMMs) costs less.
EXACT_DOT_MAX_COLUMNS = 4


def exponent_figures(*arrays):
    """numpy_backend.exponent_range of each array, as host ints (least, top, finite, least,
    top, finite, ...): one transfer for all of them."""
    from . import numpy_backend
    figures = [cupy.asarray(v).astype(cupy.int64) for x in arrays for v in numpy_backend.exponent_range(x, cupy)]
    return tuple(int(v) for v in cupy.stack(figures).get())


def exact_residual(a, xs, b, a_figures=None):
    """RN(b - a @ (x_0 + ... )) per column, each entry the exact value rounded once (+0 for an
    exact zero), by kernels/exact_dot.cu; None where the fixed-point window would need more
    than crt.kulisch.EXACT_DOT_DIGITS limbs, an input is not finite, or there are more than
    EXACT_DOT_MAX_COLUMNS columns (the caller then takes the exact ozaki product).

    a: (n, m) float64 (any strides); xs: one or two (m, k) float64; b: (n, k) float64;
    a_figures: exponent_figures(a), when the caller keeps them across calls with the same
    a (a pass over a saved).  One host synchronization (the window) per call, then a
    launch per column.
    """
    from ..crt import kulisch
    from . import numpy_backend
    n, m = a.shape
    k = b.shape[1]
    if len(xs) not in (1, 2) or n == 0 or k > EXACT_DOT_MAX_COLUMNS:
        return None
    if a_figures is None:
        la, ta, fa, lx, tx, fx, lb, tb, fb = exponent_figures(a, cupy.stack(xs), b)
    else:
        la, ta, fa = a_figures
        lx, tx, fx, lb, tb, fb = exponent_figures(cupy.stack(xs), b)
    if not (fa and fx and fb):
        return None
    none = numpy_backend.NO_EXPONENT
    products = la != none and lx != none
    window = kulisch.exact_dot_window(la + lx if products else None, lb if lb != none else None,
                                      ta + tx, tb, len(xs) * m)
    if window is None:
        return None
    base, digits = window
    shared = EXACT_DOT_WARPS * digits * 32 * 8
    kern = _kernel("exact_dot.cu", "exact_residual", (("DIGITS", digits), ("WARPS", EXACT_DOT_WARPS)), _device(),
                   None, shared)
    r = cupy.empty((n, k), dtype=cupy.float64)
    blocks = (int(min(-(-n // EXACT_DOT_WARPS), 65535)),)
    rs, cs = a.strides[0] // 8, a.strides[1] // 8
    for c in range(k):
        x0 = cupy.ascontiguousarray(xs[0][:, c])
        x1 = cupy.ascontiguousarray(xs[1][:, c]) if len(xs) == 2 else x0
        out = cupy.empty(n, dtype=cupy.float64)
        kern(blocks, (EXACT_DOT_WARPS * 32,), (a, np.int64(rs), np.int64(cs), np.int64(n), np.int64(m), x0, x1,
                                               np.int32(len(xs)), cupy.ascontiguousarray(b[:, c]), np.int64(base),
                                               out), shared_mem=shared)
        r[:, c] = out
    return r


# ------------------------------------------------------------- certified mode --

def uncertified(C, side_a, side_b, ieee_a, ieee_b, K, residuals=None):
    """As scheme.uncertified, in one pass over the parts (kernels/certify.cu): the
    bound, the gaps and the test per entry in registers, the failing entries
    counted per matrix by the kernel (one small transfer).  ``residuals``: the
    parts' rounding residuals, for exact mode's test (correctly rounded)."""
    parts = [cupy.ascontiguousarray(c) for c in C]
    rhos = [np.uint64(0)] if residuals is None else [cupy.ascontiguousarray(r, dtype=cupy.float64)
                                                      for r in residuals]
    batch, rows, cols = parts[0].shape
    bad = cupy.empty(parts[0].shape, dtype=cupy.bool_)
    failing = cupy.zeros(batch, dtype=cupy.int32)
    count = batch * rows * cols
    if count:
        kern = _kernel("certify.cu", "uncertified", (("OUT_T", _OUT_T[np.dtype(parts[0].dtype)]),)
                       + ((("RESIDUAL", 1),) if residuals is not None else ()), _device())
        sides = []
        for (S, e, beta, exact), ieee in ((side_a, ieee_a), (side_b, ieee_b)):
            sides += [cupy.ascontiguousarray(S, dtype=cupy.float64), cupy.ascontiguousarray(e, dtype=cupy.int64),
                      cupy.ascontiguousarray(beta, dtype=cupy.int64), cupy.ascontiguousarray(exact, dtype=cupy.bool_),
                      cupy.ascontiguousarray(ieee, dtype=cupy.bool_)]
        kern(*_grid(count), (parts[0], parts[-1], np.int32(len(parts)), np.int64(rows), np.int64(cols),
                             np.int64(count), *sides, np.float64(K), bad, failing, rhos[0], rhos[-1]))
    return bad, [int(v) for v in failing.get()]


def exact_entries(A_rows, Bt_rows, rows, cols, parts, out_dtype, zero_signs=True):
    """The exact entries RN(A_rows[rows[e]] . Bt_rows[cols[e]]) of a product, each
    rounded once to ``out_dtype``, by kernels/exact_dot.cu (an exact dot product per
    entry, a warp each, the rows read in place): [values] real, or for complex rows
    ([re | im], parts 2) [real parts, imaginary parts].  ``zero_signs``: exact zeros
    -0 where every term is -0 (else +0).  None where a row involved is not finite or
    the fixed-point window needs more than crt.kulisch.EXACT_DOT_DIGITS limbs (the
    caller then recomputes otherwise).  One host synchronization (the window)."""
    from ..crt import kulisch
    count = int(rows.size)
    K = A_rows.shape[1]
    if count == 0:
        return [cupy.empty(0, dtype=out_dtype) for _ in range(parts)]
    A_rows, Bt_rows = cupy.ascontiguousarray(A_rows), cupy.ascontiguousarray(Bt_rows)
    rows, cols = cupy.ascontiguousarray(rows, dtype=cupy.int64), cupy.ascontiguousarray(cols, dtype=cupy.int64)
    la, ta, fa, lb, tb, fb = exponent_figures(A_rows[cupy.unique(rows)], Bt_rows[cupy.unique(cols)])
    if not (fa and fb):
        return None
    none = numpy_backend.NO_EXPONENT
    products = la != none and lb != none
    window = kulisch.exact_dot_window(la + lb if products else None, None, ta + tb, 0, K)
    if window is None:
        return None
    base, digits = window
    shared = EXACT_DOT_WARPS * digits * 32 * 8
    kern = _kernel("exact_dot.cu", "exact_entries", (("DIGITS", digits), ("WARPS", EXACT_DOT_WARPS),
                                                     ("OUT_T", _OUT_T[np.dtype(out_dtype)])), _device(), None, shared)
    blocks = (int(min(-(-count // EXACT_DOT_WARPS), GRID_BLOCKS_MAX)),)
    values = []
    for part in ((0,) if parts == 1 else (1, 2)):
        out = cupy.empty(count, dtype=out_dtype)
        kern(blocks, (EXACT_DOT_WARPS * 32,), (A_rows, Bt_rows, np.int64(K), np.int64(K // 2), rows, cols,
                                               np.int64(count), np.int32(part), np.int64(base),
                                               np.int32(bool(zero_signs)), out), shared_mem=shared)
        values.append(out)
    return values
