"""How each length is transformed, and the constant matrices of every plan, cached.

``choose(N, rows, kind)`` picks the algorithm of ``rows`` transforms of length N
by a cost model of the emulated products, in units of one complex
multiply-add of one row (all moduli), fitted to the CPU pipeline:

* a product costs a fixed PRODUCT (planning, residue split, CRT set-up:
  ~2.5 ms on the CPU), plus CONSTANT per entry of its constant matrix (whose
  residues are formed on every call), plus per row K + EPILOGUE per complex
  output (K the inner length, counted as 2 N1 for hi + lo constants as when the
  model was fitted, though exact pairs (scheme.prepare_pair) now take N1;
  EPILOGUE, everything an output costs besides its multiply-adds: on the GPU
  each modulus' int32 products through memory, the CRT and rounding, the
  plan's passes; set from the H200, see below); a real product costs a third
  of a complex one.
* direct (one product with the N x N DFT matrix, or for real kinds a real
  product with half of it; a complex one of QUARTER_MIN_DEFAULT..QUARTER_DIRECT_MAX
  points, a multiple of scheme.QUARTER_ALIGN, as the four quarter-size products
  of scheme._quarter_product: a quarter of the multiply-adds) against six-step
  (stage 1, its remainder, stage 2: three products with N1- and N2-point
  matrices, three epilogues per point).

Many rows (FOLD_MIN_ROWS or more) weigh the per-row terms only; fewer rows
weigh one row plus the fixed and constant costs: so one 256-point transform is
six-step (8 ms instead of 40-160 ms direct) while a batch of them is direct
(one epilogue per point instead of three).  The row count matters only
through FOLD_MIN_ROWS (and stage 2's path, the same threshold), and lengths
up to SMALL_DIRECT are direct either way, so a batch split into blocks of at
least FOLD_MIN_ROWS rows gives the whole batch's bits (ozaki.dask relies on
it).  Lengths with no factorization run direct up to DIRECT_ANY_MAX and
through Bluestein beyond.  The plans are the same on every backend, so the
CPU and the GPU give the same bits.

Constants (twiddles.py: correctly rounded hi + lo; the products' lo on a grid 2**-104
below the largest root, product_roots) are kept per array module
and device in a byte-bounded cache, least recently used dropped first.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..backends import host
from ..scheme import QUARTER_ALIGN, QUARTER_MIN_DEFAULT, Prepared

from . import twiddles

DIRECT_MAX = 256          # the six-step radix bound (N1, N2 <= 256 in two stages)
SMALL_DIRECT = 48         # direct at any row count up to here
DIRECT_ANY_MAX = 4096     # direct DFT up to here (lengths without a usable factorization beyond: Bluestein)
FOLD_MIN_ROWS = 16        # rows from which stage 2 folds its twiddles and the costs count per row
# the cost model (units: one complex multiply-add of one row, all moduli)
# per complex output of a product.  Measured on the H200 (run f3b94f5, bench.fft
# --epilogue): a 512^3 fftn took 505 ms direct against 2527 ms six-step (32 x 16),
# about 1.3 ns a point direct against 6 ns a point for the three products of
# six-step; 1500 makes batches direct up to about 1500 points.  The CPU, whose
# plans are the same (the same bits), took a 64 x 512 batch in 0.30 s direct
# against 0.41 s six-step, 64 x 1024 in 1.35 s against 0.82 s (was 300: six-step
# from 512 points on).
EPILOGUE = 1500
PRODUCT = 380_000         # per product
CONSTANT = 170            # per complex entry of a constant matrix
# fewer rows (ms on the CPU, fitted to single transforms of 32..509 points): a direct product,
# a product of six-step or Bluestein (carrying remainders: wider operands), a constant entry
FEW_PRODUCT_DIRECT = 2.1
FEW_PRODUCT = 6.0
FEW_CONSTANT = 1.14e-3
# Complex direct products of a multiple of QUARTER_ALIGN (64) points from
# QUARTER_MIN_DEFAULT (scheme.QUARTER_MIN's default, not its setting: no setting changes a
# plan's bits) are costed as quarter turns, up to QUARTER_DIRECT_MAX: 64 x 2048 on the CPU,
# exact, 0.43 s direct against 0.91 s six-step (fast 0.26 against 0.29); 64 x 4096 direct
# took 58.9 s against 2.0, its constants past CACHE_BYTES, rebuilt every call.  The plans
# are the same on every backend, whether it runs the quarter turns or the one product.  Not
# for carried rows (choose's ``carried``): stage 2 of 256 x 2048 points with remainders took
# 7.3 s direct against 5.3 six-step on the CPU.
QUARTER_DIRECT_MAX = 2048
BLUESTEIN_EXACT_MAX = 65536   # bluestein.EXACT_MAX: convolutions in two stages
CACHE_BYTES = 1 << 30     # constants kept on the host (numpy), and at least this per GPU
# On a GPU, this fraction of its memory, if more: a 2**24-point transform's constants
# (stage 2's folded 65536-point matrices, 805 MB, and their prepared residues) passed
# 1 GB, so every call dropped and rebuilt them on the host: 1.4 s of a 1.3 s
# median (run 3697b74), cuFFT 0.49 ms.
DEVICE_CACHE_FRACTION = 1 / 8


@dataclass(frozen=True)
class Plan:
    algorithm: str        # "direct", "six-step" or "bluestein"
    N1: int = 0
    N2: int = 0


@lru_cache(maxsize=None)
def factor(N):
    """(N1, N2) with N = N1 N2 and N1 <= DIRECT_MAX, or None if there is none.

    Two stages (N2 <= DIRECT_MAX too) when possible, the most balanced pair:
    a small N2 makes stage 2's per-row N2 x N2 products thin (512 = 256 x 2
    would multiply by 2 x 2 matrices).  Else the largest N1 whose N2 factors.
    """
    divisors = [N1 for N1 in range(min(N - 1, DIRECT_MAX), 1, -1) if N % N1 == 0]
    two_stage = [(N1, N // N1) for N1 in divisors if N // N1 <= DIRECT_MAX]
    if two_stage:
        return min(two_stage, key=lambda f: (abs(f[0] - f[1]), -f[0]))
    deeper = [(N1, N // N1) for N1 in divisors if factor(N // N1) is not None]
    return deeper[0] if deeper else None


def _costs_many(N, kind, f, carried=False):
    """Per-row costs (direct, six-step or None) of a batch, in complex multiply-adds."""
    real = 3 if kind != "c2c" else 1
    quartered = (kind == "c2c" and not carried and N % QUARTER_ALIGN == 0
                 and QUARTER_MIN_DEFAULT <= N <= QUARTER_DIRECT_MAX)
    inner = N // 4 if quartered else N
    direct = N * (2 * inner + EPILOGUE) / real
    if f is None or f[1] > DIRECT_MAX:
        return direct, None
    N1, N2 = f
    return direct, N * (5 * N1 + 3 * N2 + 3 * EPILOGUE)


def _costs_few(N, kind, f):
    """Costs (direct, six-step or None, Bluestein or None) of one transform, in ms of the
    CPU pipeline: fixed costs per product (FEW_PRODUCT for the carried-remainder products
    of six-step and Bluestein) and per constant entry (FEW_CONSTANT: its residues)."""
    real = 2 if kind != "c2c" else 1
    direct = FEW_PRODUCT_DIRECT + FEW_CONSTANT * 2 * N * N / real
    six = None
    if f is not None and f[1] <= DIRECT_MAX:
        N1, N2 = f
        six = 3 * FEW_PRODUCT + FEW_CONSTANT * (5 * N1 * N1 + 3 * N2 * N2)
    blue = None
    M = bluestein_length(N)
    g = factor(M)
    if M <= BLUESTEIN_EXACT_MAX and g is not None and g[1] <= DIRECT_MAX:
        M1, M2 = g
        blue = 8 * FEW_PRODUCT + FEW_CONSTANT * (8 * M1 * M1 + 12 * M2 * M2)
    return direct, six, blue


@lru_cache(maxsize=8192)
def choose(N, rows, kind="c2c", carried=False):
    """The Plan for ``rows`` transforms of length N of ``kind`` ("c2c", "r2c", "c2r"; the
    real kinds run as c2c transforms unless direct).  Only rows >= FOLD_MIN_ROWS matters.
    ``carried``: rows with their remainders (a long stage 2 in exact mode), whose direct
    product [x, rem] @ [F; F / LIFT] is one of inner length 2 N, not the quarter turns."""
    if N <= SMALL_DIRECT:
        return Plan("direct")
    f = factor(N)
    if rows >= FOLD_MIN_ROWS:
        direct, six = _costs_many(N, kind, f, carried)
        blue = None
    else:
        direct, six, blue = _costs_few(N, kind, f)
    options = []
    if N <= DIRECT_ANY_MAX:
        options.append((direct, Plan("direct")))
    if six is not None:
        options.append((six, Plan("six-step", *f)))
    if blue is not None:
        options.append((blue, Plan("bluestein")))
    if options:
        return min(options, key=lambda o: o[0])[1]
    return Plan("six-step", *f) if f is not None else Plan("bluestein")


def algorithm(N, rows=FOLD_MIN_ROWS, kind="c2c"):
    """How ``rows`` transforms of N points run: "direct" (one DFT product), "six-step" or
    "bluestein" (by default a batch of complex transforms)."""
    return choose(int(N), max(1, int(rows)), kind).algorithm


def bluestein_length(N):
    """The convolution length of Bluestein's algorithm for N points: the power of two
    at or above 2N - 1 (the six-step transform's cheapest and most exact lengths:
    many of their roots of unity are exact)."""
    return 1 << (2 * N - 2).bit_length()


# ------------------------------------------------------------------ cache --

_CACHE = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _device_key(xp):
    if xp.__name__ == "cupy":
        return ("cupy", xp.cuda.Device().id)
    return ("numpy",)


@lru_cache(maxsize=None)
def _device_memory(device_id):
    import cupy
    return cupy.cuda.Device(device_id).mem_info[1]


def _budget(device):
    """Bytes of constants kept for ``device`` (a _device_key)."""
    if device[0] != "cupy":
        return CACHE_BYTES
    return max(CACHE_BYTES, int(_device_memory(device[1]) * DEVICE_CACHE_FRACTION))


def _kept(xp, key, build):
    """The value ``build()`` returns, kept under ``key`` for xp's current device."""
    device = _device_key(xp)
    full = device + key
    with _CACHE_LOCK:
        if full in _CACHE:
            _CACHE.move_to_end(full)
            return host.keep(_CACHE[full])
    with host.speculating(None):       # a constant's own host reads are no decision of the call's
        value = build()
    host.keep(value)
    with _CACHE_LOCK:
        _CACHE[full] = value
        _CACHE.move_to_end(full)
        _trim(device)
    return value


def _nbytes(v):
    if isinstance(v, dict):
        return sum(_nbytes(x) for x in v.values())
    if isinstance(v, tuple):
        return sum(_nbytes(x) for x in v)
    return v.nbytes


def _to_device(xp, v):
    if isinstance(v, dict):
        return {k: _to_device(xp, x) for k, x in v.items()}
    if isinstance(v, tuple):
        return tuple(_to_device(xp, x) for x in v)
    return xp.asarray(v)


def cached(xp, key, build):
    """The arrays ``build()`` returns (an array, or a dict or tuple of them, nested), moved
    to xp's current device, kept under ``key``."""
    return _kept(xp, key, lambda: _to_device(xp, build()))


cached_tree = cached


def prepared(xp, key, constant, side, opts, quarter=None):
    """The constant matrix kept under ``key`` (``constant``: the array itself, or an exact
    pair (hi, lo)), made ready (ozaki.prepare; scheme.prepare_pair) as the ``side``
    operand of products under ``opts`` and kept beside it; the constant itself where the
    mode cannot prepare operands (accurate, certified).

    Prepared, its scans and int8 residues are made at its first product and not
    redone by every product of every transform of that length.  ``quarter``: the sign of
    an N-point DFT matrix with the quarter turns' symmetry (quarter_turns), kept on the
    Prepared for scheme._quarter_product.
    """
    import ozaki
    mode, num_moduli, _ = ozaki._options(opts.get("mode"), opts.get("num_moduli"), None)
    if isinstance(constant, tuple):
        build = lambda: pair_operand(constant, side, opts)          # noqa: E731
    elif mode not in ozaki.scheme.PREPARABLE_MODES:
        return constant
    else:
        build = lambda: ozaki.prepare(constant, side, mode=mode, num_moduli=num_moduli)   # noqa: E731

    def marked():
        p = build()
        p.quarter = quarter
        return p
    return _kept(xp, ("prepared",) + key + (side, mode, num_moduli), marked)


def pair_operand(constant, side, opts):
    """The exact pair (hi, lo), 2-D or a stack, made ready as the ``side`` operand of sums
    hi + lo (scheme.prepare_pair) under ``opts`` (exact mode only)."""
    import ozaki
    mode, num_moduli, _ = ozaki._options(opts.get("mode"), opts.get("num_moduli"), None)
    if mode != "exact":
        raise ValueError(f"an exact pair constant needs mode='exact', not {mode!r}")
    hi, lo = constant
    matrix = hi.ndim == 2                       # multiplies 2-D arrays, as ozaki.prepare's
    p = ozaki.scheme.prepare_pair(hi[None] if matrix else hi, lo[None] if matrix else lo, side, num_moduli,
                                  ozaki.backend_for(hi))
    p.matrix = matrix
    return p


def _trim(device):
    """Drop ``device``'s least recently used constants until they fit its budget (the newest stays)."""
    mine = [k for k in _CACHE if k[:len(device)] == device]
    total = sum(_nbytes(_CACHE[k]) for k in mine)
    for k in mine[:-1]:
        if total <= _budget(device):
            break
        total -= _nbytes(_CACHE.pop(k))


def clear_cache():
    with _CACHE_LOCK:
        _CACHE.clear()


# -------------------------------------------------------------- constants --

# The products' constants carry each root w^j / div to PRODUCT_ROOT_BITS bits below the
# largest part (|w| / div): twiddles' remainders lo rounded to that grid.  The error of a
# constant part is then below 2**-104 of |w / div|, of a term below 2**-103 of its size
# |x_n w^(kn) / div| (two constant parts a term), far inside the promise (2**-100 of the
# terms); and a column's integers span about 105 bits instead of up to 119 (lo of a small
# part, sin 2 pi / N, reaches 2**-113): exact mode's direct products of 512 and 1024
# points take 25 moduli instead of 26 and 27 (the GEMMs, residues and epilogue scale with
# them).  The twiddles between the stages (error-free products) keep their exact lo, and so
# do Bluestein's DFT matrices (bluestein.py: eight products and the kernel's spectrum
# between them, whose margin is not argued here; their columns' span is set by F / LIFT).
PRODUCT_ROOT_BITS = 104


def product_roots(N, sign, div):
    """(hi, lo) of the roots w^j / div, j = 0..N-1, as the products take them: hi
    correctly rounded, lo = the remainder rounded to a multiple of 2**(e - PRODUCT_ROOT_BITS),
    2**e <= the largest part < 2**(e + 1) (half-even, so conjugate and negated roots stay
    conjugate and negated, and exact roots keep lo = 0)."""
    hi, lo = twiddles.root_parts(N, sign, div)
    top = float(np.max(np.maximum(np.abs(hi.real), np.abs(hi.imag))))
    grid = np.ldexp(1.0, int(np.frexp(top)[1]) - 1 - PRODUCT_ROOT_BITS)
    lo = np.round(lo.real / grid) * grid + 1j * (np.round(lo.imag / grid) * grid)
    return hi, lo


@lru_cache(maxsize=256)
def quarter_turns(N, sign, div):
    """``sign`` where the N-point DFT matrix of the products (product_roots) has the quarter
    turns' symmetry F[q r + j, k] = (sign i)**(r k) F[j, k], N = 4 q, in both parts, bit for
    bit (true of the roots w = exp(sign 2 pi i / N), w**q = sign i, and of their rounding:
    half-even on a grid common to both parts commutes with negation and with swapping the
    parts); else None.  Checked on the N roots: F's entries are roots at (n k) mod N."""
    if N % 4:
        return None
    hi, lo = product_roots(N, sign, div)
    j = np.arange(N)
    turned = (j + N // 4) % N
    turn = sign * 1j
    same = all(np.array_equal(part[turned].real, (turn * part).real) and
               np.array_equal(part[turned].imag, (turn * part).imag) for part in (hi, lo))
    return sign if same else None


def _dft_parts(N, sign, div, split):
    """The N-point DFT matrix F[k, n] = w^(kn) / div: [hi] or [hi, lo] (product_roots; host arrays)."""
    hi, lo = product_roots(N, sign, div)
    idx = np.outer(np.arange(N), np.arange(N)) % N
    return [hi[idx]] + ([lo[idx]] if split else [])


def _operand(parts):
    """A product's constant operand from its [hi] or [hi, lo] parts: hi, or the pair
    (hi, lo) whose exact sums the products take (scheme.prepare_pair)."""
    return parts[0] if len(parts) == 1 else tuple(parts)


def direct(xp, N, sign, div, split):
    """Right operand of a direct c2c product: F, or the pair (F_hi, F_lo) when split."""
    return cached(xp, ("direct", N, sign, div, split), lambda: _operand(_dft_parts(N, sign, div, split)))


def real_direct(xp, N, sign, div, split):
    """Right operand of a direct r2c product: the N // 2 + 1 output columns' Re F and Im F
    interleaved (columns 2k and 2k + 1), so that the product's rows are the complex outputs'
    float64 pairs, viewed as complex without a copy (a hi, lo pair when split)."""
    m = N // 2 + 1

    def build():
        return _operand([np.stack([F[:, :m].real, F[:, :m].imag], axis=2).reshape(N, 2 * m)
                         for F in _dft_parts(N, sign, div, split)])
    return cached(xp, ("real", N, sign, div, split), build)


def hermitian_direct(xp, N, sign, div, split):
    """Right operand of a direct c2r product: rows c_k Re w^(kn) / div for the bins
    k = 0..N // 2 and -c_k Im w^(kn) / div for k = 1..(N - 1) // 2, c_k = 2 for the
    bins that stand for a conjugate pair and 1 for bin 0 and the Nyquist bin (times 2
    is exact, so every entry stays correctly rounded); a hi, lo pair when split."""
    m = N // 2 + 1
    odd = (N - 1) // 2

    def build():
        weight = np.full((m, 1), 2.0)
        weight[0] = 1.0
        if N % 2 == 0:
            weight[-1] = 1.0
        return _operand([np.concatenate([F[:m].real * weight, -2.0 * F[1:1 + odd].imag], axis=0)
                         for F in _dft_parts(N, sign, div, split)])
    return cached(xp, ("hermitian", N, sign, div, split), build)


def stage1(xp, N1, sign, split, carried=False):
    """Left operands of stage 1: (F1,), or with split two exact pairs (scheme.prepare_pair):
    (F1_hi, F1_lo) for the product with X, and ([F1_hi, -I], [F1_lo, 0]) for its exact
    remainder with [X; Y].  carried (split only): the data comes with its lifted
    remainders, [X; R LIFT], so F1 becomes [F1, F1 / LIFT] along n1: the pairs
    ([F1_hi, F1_hi / LIFT], [F1_lo, 0]) and ([F1_hi, F1_hi / LIFT, -I], [F1_lo, 0, 0])
    (F1_lo R, below 2**-100 of the terms, is dropped)."""
    def build():
        parts = _dft_parts(N1, sign, 1, split)
        if not split:
            return (parts[0],)
        hi, lo = parts
        zero = np.zeros((N1, N1), dtype=np.complex128)
        if carried:
            hi, lo = np.concatenate([hi, hi / stages_lift()], axis=1), np.concatenate([lo, zero], axis=1)
        return ((hi, lo), (np.concatenate([hi, -np.eye(N1, dtype=np.complex128)], axis=1),
                           np.concatenate([lo, zero], axis=1)))
    return cached(xp, ("stage1", N1, sign, split, carried), build)


def stages_lift():
    from .stages import LIFT
    return LIFT


def stage2_few(xp, N2, sign, div):
    """Stage 2 for few rows, after the error-free twiddle product: the exact pair
    ([F2_hi; F2_hi / LIFT], [F2_lo; 0]) for [P, C LIFT] (the remainder part enters
    lifted: stages.LIFT)."""
    def build():
        hi, lo = _dft_parts(N2, sign, div, True)
        return (np.concatenate([hi, hi / stages_lift()], axis=0), np.concatenate([lo, np.zeros_like(lo)], axis=0))
    return cached(xp, ("stage2_few", N2, sign, div), build)


def stage2_folded(xp, N1, N2, sign, div, split):
    """Stage 2 with the twiddles folded in: G[k1] (N2 x N2) with
    G[k1, n2, k2] = w_N^(n2 (k1 + N1 k2)) / div, or with split the exact pair
    ([G_hi; G_hi / LIFT], [G_lo; 0]) along n2 for [Y, Y_rem LIFT]."""
    def build():
        N = N1 * N2
        k1 = np.arange(N1)[:, None, None]
        n2 = np.arange(N2)[None, :, None]
        k2 = np.arange(N2)[None, None, :]
        hi, lo = product_roots(N, sign, div)
        idx = (n2 * (k1 + N1 * k2)) % N
        if not split:
            return hi[idx]
        return (np.concatenate([hi[idx], hi[idx] / stages_lift()], axis=1),
                np.concatenate([lo[idx], np.zeros(idx.shape, dtype=np.complex128)], axis=1))
    return cached(xp, ("stage2_folded", N1, N2, sign, div, split), build)


def twiddle_grid(xp, N1, N2, sign, split):
    """The twiddles w_N^(k1 n2) between the stages, (N1, N2): (hi,) or (hi, lo).  Row k1
    is the table read with stride k1 (k1 n2 < N1 N2: no reduction mod N, no index array)."""
    def build():
        N = N1 * N2
        tables = twiddles.root_parts(N, sign) if split else (twiddles.roots(N, sign),)
        grids = []
        for table in tables:
            grid = np.empty((N1, N2), dtype=np.complex128)
            grid[0] = table[0]
            for k1 in range(1, N1):
                grid[k1] = table[0:k1 * N2:k1]
            grids.append(grid)
        return tuple(grids)
    return cached(xp, ("twiddles", N1, N2, sign, split), build)


def chirp_parts(xp, N, sign, div=1):
    """(hi, lo) of the chirp c_n = exp(sign i pi n**2 / N) / div, n < N (see ``chirp``)."""
    def build():
        n = np.arange(N, dtype=np.int64)
        return twiddles.roots_at(2 * N, (n * n) % (2 * N), sign, div)
    return cached(xp, ("chirp_parts", N, sign, div), build)


def chirp(xp, N, sign, div=1):
    """c_n = exp(sign i pi n**2 / N) / div (numpy's norm scale as in twiddles.roots), n < N,
    each part correctly rounded: the roots of unity of order 2N at n**2 mod 2N."""
    def build():
        n = np.arange(N, dtype=np.int64)
        return twiddles.roots_at(2 * N, (n * n) % (2 * N), sign, div)[0]
    return cached(xp, ("chirp", N, sign, div), build)
