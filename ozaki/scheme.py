"""Ozaki Scheme II, top to bottom: one 2-D float64 product on a backend.

    scale     per row of A / column of B, a power-of-two bottom ``beta``: the
              integers are the digits floor(|x| / 2**beta) (mod 2**width), signed
              (accurate mode rounds them to nearest instead)
    residues  of those integers modulo m pairwise-coprime moduli (int8)
    gemms     one exact int8 GEMM per modulus (and per slice pair)
    epilogue  CRT of each pair into exact limbs, Kulisch sum of the pairs,
              one rounding of the exact value times 2**(beta_row + beta_col), to
              float64, or straight to float32 for float32/complex64 results

The modes differ only in the scaling:

    fast      bottoms from the row/column 2-norms (Cauchy-Schwarz bounds the
              product), truncating low bits of small entries
    accurate  bottoms from an upper bound of |A||B| computed by one extra int8
              GEMM of 6-bit ceilings (as GEMMul8's accurate mode)
    exact     bottoms at the lowest set bit of each row/column: nothing is
              truncated; rows spanning more bits than one product can carry are
              cut into slices of ``width`` bits and the slice products summed in
              the Kulisch accumulator, so the result is the correctly rounded
              exact product of the float64 inputs
    certified accurate's scaling with CERTIFIED_EXTRA_MODULI more moduli, then
              per entry an exact bound on the truncation error (error_bounds)
              decides whether the entry is faithful; the entries it cannot
              certify are recomputed in exact mode: every entry faithful

Everything up to the last rounding is exact, so every mode returns exactly
RN(A'B' 2**(beta_i + beta_j)) for its own integers A', B'; ozaki.reference
computes that independently.  Complex products run the same steps on the real
and imaginary parts with three GEMMs per modulus (product_finite); stacks of
matrices run through them at once (matmul_stack).  ``plan`` is shared by both backends (it only
uses array-module reductions); the backends implement ``split``, ``scan_rows``,
``maxima``, ``bound_bottoms`` and ``flags_found`` (the plan's steps), ``residues``,
``residues_of_parts`` (an operand's parts and, complex, Karatsuba's sums),
``add_residues``, ``gemm`` and ``epilogue`` (and the fp8 substrate's ``fp8_operands``,
``fp8_products``, ``fp8_recombine``), ``row_bits`` (exact mode's per-row bit ranges),
``widen`` (exact float32
-> float64, used by the entry points before this module), ``choose_path``,
``zero_signs`` (ozaki.fft's sign rule of zero parts, in place), ``row_specials``
(its rows' NaN/inf and tiny-entry flags) and ``complex_of`` (a complex result from
its real and imaginary parts, without arithmetic; the GPU's returns, without a copy,
the complex array whose interleaved parts they are, as the epilogue writes them);
the GPU backend also ``fused_product`` (gemm and epilogue in one kernel) and
``bound_maxima`` (the bound GEMM's maxima on chip), which "fused" paths use.
"""

import contextlib
import functools
import os
import threading
from dataclasses import dataclass

import numpy as np

from . import crt
from . import gemm as substrates
from .backends import host
from .crt.kulisch import LIMB_BITS

MODES = ("fast", "accurate", "exact", "certified")

# How a backend runs the GEMMs and the epilogue of one product: "fused" (one
# kernel per product: the int8 products of every modulus, the reduction mod p,
# CRT and rounding on chip; backends that have ``fused_product``), "cublas"
# (a library GEMM per modulus, the products through memory, then ``epilogue``),
# "cutlass" (the backend's ``gemm_residues``: one GEMM launch over the moduli whose
# epilogue reduces mod p, the int8 residues through memory, then ``epilogue``),
# or "auto": the backend's ``choose_path`` from its measured crossover table.
PATHS = ("auto", "fused", "cublas", "cutlass")

def _clog2(k):
    return max(k - 1, 0).bit_length()


# Default moduli counts: keep DEFAULT_BITS_PER_SIDE bits of each row/column
# maximum plus log2(k) for the growth of the product, and never fewer than
# MIN_DEFAULT_MODULI: 16 moduli for k <= 2**24.  Measured (exact DMMCH ratio on
# 40 sampled entries, native = numpy's BLAS on the same inputs,
# bench/accuracy_counts.py):
#   N(0,1), k = 16384: native 0.138; accurate 14: 0.59, 15: 0.056, 16: 0.012;
#                      fast 15: 0.17, 16: 0.012
#   exp(2 N(0,1)), k = 4096: native 4.56; accurate 15: 1.86, 16: 0.46;
#                      fast 15: 4.77 (worse than native), 16: 0.55
# and accurate 15 was worse than native on some exp(2 N(0,1)) draws at k = 1024
# (5.6 vs 3.0): 15 moduli suit N(0,1)-like data, the default keeps 16.
# tests/test_accuracy.py holds the defaults to native on more families.
DEFAULT_BITS_PER_SIDE = 50
MIN_DEFAULT_MODULI = 16

# float32/complex64 results (the inputs widened exactly, each entry rounded once
# to float32): 24 bits a side (float32's precision) + log2 k, and at least 9 moduli
# in fast and accurate mode (certified: + 6), against float64's 16.
# The counts are what matches native SGEMM (numpy's float32 BLAS on the same
# inputs): exact DMMCH ratio with eps = 2**-24 on 30 sampled entries, 32 x k x 32,
# float32 inputs (python -m bench.accuracy_counts --dtype float32 measures the
# same at 64 x k x 64), 7 / 8 / 9 moduli:
#   N(0,1), k = 16384: native 0.19; accurate 0.21 / 0.016 / 0.009; fast 0.76 / 0.032 / 0.009
#   exp(2 N(0,1)) (phi2), k = 1024: native 4.1; accurate 25.6 / 1.2 / 0.29; fast 36.5 / 2.2 / 0.29
#   phi2, k = 16384: native 3.8; accurate 14.7 / 1.46 / 0.35; fast 25.5 / 1.7 / 0.35
# 7 moduli are worse than SGEMM on the wide families.  8 were the accurate default
# until a fresh draw of tests/test_accuracy.py (phi2, k = 1024, 48 x 48) gave 9.75
# against native's 3.86: over 600 more draws, 8 moduli lost to SGEMM on 8 (1.3%, up
# to 3.6x native's ratio), and 9 moduli on those draws gave 0.45-0.66 against native's
# 4.5-7.5.  fast mode's 2-norm scaling keeps fewer bits than accurate's bound and
# already took 9 (fast 8 gave 3.0 against native's 2.8 on a phi2 draw).
FLOAT32_DEFAULTS = (24, 9)


# certified mode keeps more bits, so that the per-entry test passes on almost
# every entry of tame data; the rest are recomputed exactly, by blocks
# (_recompute_blocks).  Measured with the bound of error_bounds on N(0,1),
# 128 x 16384 x 128 (CPU, a15af3b+): 1.3e-2 / 1.4e-3 / 6.1e-5 / 0 of the
# entries failing at 19 / 20 / 21 / 22 moduli, about 20x fewer per modulus;
# phi = 1 and 3: 5.5e-4 and 2.0e-3 at 20, 0 at 22.  On the H200 at n = 16384
# (run a15af3b) 20 moduli left 1.5e-3 failing, whose recomputation (31% of the
# matrix in 256-row blocks) took 1.4 s of the 1.59 s; a modulus costs about
# 6 ms there, a recomputed block about 2 ms.  So 6 more than accurate's 16.
CERTIFIED_EXTRA_MODULI = 6


def default_num_moduli(mode, k, dtype=np.float64):
    """The moduli count ``mode`` uses for inner dimension k when none is given, for
    results of ``dtype`` (float64/complex128, or float32/complex64: FLOAT32_DEFAULTS)."""
    if np.finfo(dtype).bits == 32:
        bits, least = FLOAT32_DEFAULTS
    else:
        bits, least = DEFAULT_BITS_PER_SIDE, MIN_DEFAULT_MODULI
    m = max(least, crt.num_moduli_for_bits(2 * bits + _clog2(k)))
    return min(m + CERTIFIED_EXTRA_MODULI, crt.max_num_moduli()) if mode == "certified" else m


# Exact slices are multiples of a limb wide, so pair shifts are whole limbs.
SLICE_QUANTUM = LIMB_BITS


@dataclass
class Plan:
    mode: str
    num_moduli: int
    width: object          # slice width in bits (exact mode) or None (one truncated slice)
    beta_a: object         # (m,) int64: bottom exponent of each row of A
    beta_b: object         # (n,) int64: bottom exponent of each column of B
    slices_a: int
    slices_b: int
    flags: tuple = ()      # per-row flags of A and of B^T from scan_rows (NaN/inf: 1, zero: 2)
    nearest: bool = False  # digits rounded to nearest (accurate mode), else truncated
    # exact mode with a prepared side: B's slice width when it differs from A's (None: ``width``)
    width_b: object = None
    found: object = None   # the flags' bits over both sides (backend.flags_found) when already on the host


def slice_widths(plan):
    """(A's, B's) slice width in bits; 0 for one truncated slice."""
    return plan.width or 0, (plan.width if plan.width_b is None else plan.width_b) or 0


def to_host_ints(xp, values, bounds=None, widen=None):
    """Python ints of ``values`` (ints, or device scalars): the device ones in one transfer,
    the pipeline's host synchronization (bench.counts counts its calls).  ``bounds`` and
    ``widen``: functions of the list of ints, for a CUDA graph's speculation (host.read):
    (lo, hi) lists such that any values within them serve the caller as these do, and the
    values to decide by instead of those read."""
    where = [i for i, v in enumerate(values) if not isinstance(v, int)]
    if not where:
        return list(values)

    def full(got):                      # every value, the device ones as read
        out = list(values)
        for i, v in zip(where, np.atleast_1d(got).tolist()):
            out[i] = int(v)
        return out

    def pick(out):                      # the device ones of a list of every value
        return np.array([out[i] for i in where])

    device_bounds = None if bounds is None else lambda got: tuple(map(pick, bounds(full(got))))
    device_widen = None if widen is None else lambda got: pick(widen(full(got)))
    stacked = xp.stack([xp.asarray(values[i]).astype(xp.int64).reshape(()) for i in where])
    got = iter(host.read(stacked, device_bounds, device_widen).tolist())
    return [v if isinstance(v, int) else next(got) for v in values]


def _frexp_exponent(xp, v):
    """e with v < 2**e for v >= 0 (frexp's exponent; 0 for v == 0)."""
    return xp.frexp(v)[1].astype(xp.int64)


def plan_fast(xp, A, Bt, m, backend, prepared=(None, None)):
    """Bottoms from the 2-norms: |C'_ij| <= ||A'_i|| ||B'_j|| < 2**L.

    The norm bound comes from integer 15-bit ceilings c >= |x| 2**e:
    ||x|| <= sqrt(sum c**2) 2**-e, an exact integer sum, so it is the same on
    every backend whatever order the sum runs in.  Each side's bottoms depend
    on that side and m alone (fast_bits), so a prepared side brings its own.
    """
    sides = [p.fast_side() if p is not None else fast_side(xp, backend, X) for p, X in zip(prepared, (A, Bt))]
    (beta_a, fa), (beta_b, fb) = (fast_bottoms(xp, side, bits) for side, bits in zip(sides, fast_bits(m)))
    return Plan("fast", m, None, beta_a, beta_b, 1, 1, (fa, fb))


def fast_bits(m):
    """Fast mode's bits of each row's norm kept by A's rows and by B's columns with m
    moduli: L // 2 and the rest of the L usable bits (|C'_ij| < 2**L)."""
    L = crt.usable_bits(m)
    return L // 2, L - L // 2


def norm_exponents(xp, sumsq, e):
    """t with ||X_i|| < 2**t_i, from each row's sum of squared ceilings at scale 2**e_i."""
    bitlen = _frexp_exponent(xp, sumsq.astype(xp.float64))          # sumsq < 2**bitlen
    return (bitlen + 1) // 2 - e


def fast_side(xp, backend, X):
    """Fast mode's facts of one side, independent of m: (t, zero rows, flags), ||X_i|| < 2**t_i."""
    _, flags, e, _, sumsq = backend.scan_rows(X, 15, sum_squares=True)
    return norm_exponents(xp, sumsq, e), sumsq == 0, flags


def fast_bottoms(xp, side, bits):
    """(bottoms, flags) of a side (fast_side) keeping ``bits`` bits of each row's norm."""
    t, zero, flags = side
    return xp.where(zero, 0, t - bits), flags


def plan_accurate(xp, A, Bt, m, backend, parts=1, batch=1, path="cublas"):
    """Bottoms from M = ceil6(|A|) ceil6(|B|) >= sum_k |A||B| 2**(eA + eB) (one int8 GEMM).

    Row i of A gets t_i = floor(s_i / 2) bits above its 6-bit scale, where s_i is
    the largest integer with 2**s_i max_j M_ij <= crt_bound; columns of B alike.
    Then 2**(t_i + u_j) M_ij <= crt_bound for every (i, j), since M_ij is at most
    the geometric mean of its row and column maxima.

    Digits are rounded to nearest (half the error of truncating) when every
    t_i >= 0 is sure, i.e. k 2**12 <= crt_bound: then c 2**t is an integer
    >= |x| 2**(e + t), so the rounded digit is still at most c 2**t.

    parts=2 (complex: A = [Re | Im] side by side): 5-bit ceilings of both parts
    are added, c(|re|) + c(|im|) <= 64, so M bounds sum (|re|+|im|)(|re|+|im|),
    which bounds the real and the imaginary part of the product alike.
    batch > 1: A and Bt hold ``batch`` matrices' rows one after another; the
    bound GEMM and its maxima stay inside each matrix.  ``path``: how the
    backend runs the bound GEMM (its maxima on chip when "fused").
    """
    bound = crt.crt_bound_float(m)
    k = A.shape[1] // parts

    def ceilings(X):        # complex: the halves' ceilings added in the scan (halves)
        _, flags, e, hat, _ = backend.scan_rows(X, 7 - parts, hat=True, halves=parts == 2)
        return flags, e, hat

    fa, ea, ahat = ceilings(A)
    fb, eb, bhat = ceilings(Bt)
    if path == "fused":                                             # the maxima taken on chip
        row_max, col_max = backend.bound_maxima(ahat, bhat, batch)
    else:
        M = backend.gemm(ahat[None], bhat[None], batch)[:, 0]      # exact: <= k * 2**12
        row_max, col_max = backend.maxima(M)
    nearest = k * 2 ** 12 <= bound
    return Plan("accurate", m, None, backend.bound_bottoms(row_max, ea, bound),
                backend.bound_bottoms(col_max, eb, bound), 1, 1, (fa, fb), nearest)


def _row_bits(xp, backend, X, flags=False):
    """Per row: top (|x| < 2**top) and lowest set bit exponent; (top, lsb) int64, zero rows 0, 0.

    Non-finite entries read as zero.  The backend's ``row_bits`` step (one pass on the GPU);
    flags=True: and scan_rows's flags, from the same pass.
    """
    return backend.row_bits(X, flags=flags)


def _widths_to(span):
    """Slice widths SLICE_QUANTUM, 2 SLICE_QUANTUM, ... up to the first that holds ``span`` bits."""
    w = SLICE_QUANTUM
    while True:
        yield w
        if w >= span:
            return
        w += SLICE_QUANTUM


def _cheapest_slicing(span_a, span_b, k, num_moduli, widths):
    """The cheapest (width_a, width_b, moduli, slices_a, slices_b) among the width pairs
    ``widths`` (in increasing order: the first pair too wide for the moduli ends the search)
    by slice pairs times moduli; ValueError if ``num_moduli`` is too few for any."""
    best = None
    for wa, wb in widths:
        bits = min(wa, span_a) + min(wb, span_b) + _clog2(k)
        if num_moduli is None:
            try:
                m = crt.num_moduli_for_bits(bits)
            except ValueError:
                break
        else:
            if crt.usable_bits(num_moduli) < bits:
                break
            m = num_moduli
        ta, tb = -(-span_a // wa), -(-span_b // wb)
        cost = ta * tb * m
        if best is None or cost < best[0]:
            best = (cost, wa, wb, m, ta, tb)
    if best is None:
        need = 2 * SLICE_QUANTUM + _clog2(k)
        raise ValueError(f"exact mode with k={k} needs at least "
                         f"{crt.num_moduli_for_bits(need)} moduli, got num_moduli={num_moduli}")
    return best[1:]


def exact_sizes(span_a, span_b, k, num_moduli=None):
    """Exact mode's slicing for rows spanning ``span_a`` / ``span_b`` bits and inner
    dimension k: (width, moduli, slices_a, slices_b), the cheapest width (slice pairs
    times moduli) in steps of SLICE_QUANTUM; ValueError if ``num_moduli`` is too few."""
    span_a, span_b = max(int(span_a), 1), max(int(span_b), 1)
    w, _, m, ta, tb = _cheapest_slicing(span_a, span_b, k, num_moduli,
                                        ((w, w) for w in _widths_to(max(span_a, span_b))))
    return w, m, ta, tb


def exact_sizes_beside(span_a, span_b, k, num_moduli=None, width_a=None, width_b=None):
    """exact_sizes when a side's width is fixed (a prepared side: its residues are made
    once, for one slicing): the other side's width is chosen alone, so the two widths may
    differ.  Exact mode's result is the correctly rounded exact product whatever the
    slicing (every slicing whose products the moduli reconstruct is exact), so the bits
    are those of the unprepared product.  Two fixed widths that the moduli cannot carry
    together leave B's free (B's prepared residues then go unused by that product).
    Returns (width_a, width_b, moduli, slices_a, slices_b)."""
    span_a, span_b = max(int(span_a), 1), max(int(span_b), 1)
    if width_a is None and width_b is None:
        w, m, ta, tb = exact_sizes(span_a, span_b, k, num_moduli)
        return w, w, m, ta, tb
    if width_b is None:
        widths = ((width_a, w) for w in _widths_to(span_b))
    elif width_a is None:
        widths = ((w, width_b) for w in _widths_to(span_a))
    else:
        try:
            return _cheapest_slicing(span_a, span_b, k, num_moduli, [(width_a, width_b)])
        except ValueError:
            return exact_sizes_beside(span_a, span_b, k, num_moduli, width_a)
    return _cheapest_slicing(span_a, span_b, k, num_moduli, widths)


def exact_caps(span_a, span_b, k, width_a, width_b, m, slices_a, slices_b):
    """(cap_a, cap_b) >= the spans: the widest spans that exact mode's slicing for them
    (exact_sizes_beside's widths, moduli and slice counts) still carries exactly.  Rows
    spanning s_a <= cap_a and s_b <= cap_b bits fit their slices (s <= slices * width)
    and the moduli hold the products (min(w_a, s_a) + min(w_b, s_b) + clog2 k <=
    usable_bits(m)), so that plan gives them their exact, correctly rounded product: the
    bits of their own plan.  The moduli's spare bits go half to each side."""
    span_a, span_b = max(int(span_a), 1), max(int(span_b), 1)
    slack = crt.usable_bits(m) - _clog2(k) - min(width_a, span_a) - min(width_b, span_b)
    if slack < 0:
        raise ValueError("exact_caps: the slicing does not carry these spans")
    room_a, room_b = max(width_a - span_a, 0), max(width_b - span_b, 0)
    extra_a = min(room_a, slack - min(room_b, slack // 2))
    extra_b = min(room_b, slack - extra_a)

    def cap(span, extra, width, slices):  # past the width a side costs the moduli nothing more
        return slices * width if span + extra >= width else span + extra

    return cap(span_a, extra_a, width_a, slices_a), cap(span_b, extra_b, width_b, slices_b)


def exact_side(xp, backend, X):
    """Exact mode's facts of one side: (bottoms, span, flags); span (the most bits a row
    spans) a device scalar, to come to the host with the other values the plan needs."""
    top, beta, flags = _row_bits(xp, backend, X, flags=True)
    return beta, xp.max(top - beta), flags


def exact_pair_side(xp, backend, X, low):
    """exact_side of the exact sums X + low, row by row (prepare_pair): the bottom at the
    lower of the two lowest set bits; the top X's where low's is at least 54 below it
    (|x| <= 2**t - 2**(t - 53) for a float64 below 2**t, so |x + l| < 2**t when
    |l| < 2**(t - 54)), else one above the higher; a row that is zero in one takes the
    other's.  Flags (NaN/inf, zeros) are X's: the IEEE fix-ups read X, whose values
    the sums round to when low holds the rounded remainders."""
    top_x, low_x, flags = _row_bits(xp, backend, X, flags=True)
    top_l, low_l = _row_bits(xp, backend, low)
    zero_x, zero_l = (top_x == 0) & (low_x == 0), (top_l == 0) & (low_l == 0)
    top = xp.where(top_l <= top_x - 54, top_x, xp.maximum(top_x, top_l) + 1)
    top = xp.where(zero_l, top_x, xp.where(zero_x, top_l, top))
    beta = xp.where(zero_l, low_x, xp.where(zero_x, low_l, xp.minimum(low_x, low_l)))
    return beta, xp.max(top - beta), flags


# A CUDA graph replaying exact mode (graphs.Speculation) plans for rows spanning this
# many bits more than its recorded run's: fresh data of the same kind spans a few bits
# more or less from call to call, and the moduli's spare bits (exact_caps) are fewer
# than 8, so a plan for the spans read would send many calls back to the eager path.
SPECULATED_SPAN_ROOM = 8


def plan_exact(xp, A, Bt, num_moduli, backend, prepared=(None, None)):
    """Bottoms at the lowest set bit; slices of ``width`` bits; the cheapest width.

    A prepared side brings its facts and its fixed width (exact_sizes_beside).  The
    sizes depend on the data: one host sync brings the spans and the flags' bits
    (the backend's flags_found, left on the device until then).
    """
    k = A.shape[1]
    sides = [p.exact_side() if p is not None else exact_side(xp, backend, X) for p, X in zip(prepared, (A, Bt))]
    (beta_a, span_a, fa), (beta_b, span_b, fb) = sides
    fixed = [p.width if p is not None else None for p in prepared]

    def carried(v):                     # any spans up to the plan's caps give the same bits
        sa, sb, found = v
        caps = exact_caps(sa, sb, k, *exact_sizes_beside(sa, sb, k, num_moduli, *fixed))
        return [0, 0, found], [*caps, found]

    def wider(v):                       # a replayed plan's room for the next data's spans
        return [v[0] + SPECULATED_SPAN_ROOM, v[1] + SPECULATED_SPAN_ROOM, v[2]]

    span_a, span_b, found = to_host_ints(xp, [span_a, span_b, backend.flags_found(fa, fb, host=False)], carried,
                                         wider)
    wa, wb, m, ta, tb = exact_sizes_beside(span_a, span_b, k, num_moduli, *fixed)
    return Plan("exact", m, wa, beta_a, beta_b, ta, tb, (fa, fb), width_b=None if wb == wa else wb, found=found)


def make_plan(xp, A, Bt, mode, num_moduli, backend, parts=1, batch=1, path="cublas", out_dtype=np.float64,
              prepared=(None, None)):
    """The scaling of A (m, parts*k) and B^T (n, parts*k), parts side by side (complex: 2).

    One bottom per row serves every part, so the parts' integers share a scale.
    The 2-norm (fast) and the exact bounds over the joined row bound the real
    and imaginary parts of a complex product as they bound a real one.
    batch > 1: the rows of ``batch`` matrices one after another (see plan_accurate).
    ``path``: how the backend runs accurate mode's bound GEMM; ``out_dtype``: the
    result's, for the default moduli count.
    ``prepared``: the Prepared operand of each side, or None (exact and fast modes only).
    """
    if mode == "exact":
        return plan_exact(xp, A, Bt, num_moduli, backend, prepared)
    m = default_num_moduli(mode, A.shape[1], out_dtype) if num_moduli is None else num_moduli
    crt.moduli(m)                                       # validates the count
    if mode == "fast":
        return plan_fast(xp, A, Bt, m, backend, prepared)
    if prepared != (None, None):
        check_preparable(mode)
    return plan_accurate(xp, A, Bt, m, backend, parts, batch, path)


def _part_residues(X_parts, beta, width, plan, count, backend, m=None, quarter=None):
    """Per part the residues of ``count`` slices of ``width`` bits (0: one truncated slice)
    above the bottoms beta, modulo the first m moduli (default: the plan's); complex, then
    the sums' (Karatsuba's Ar + Ai): the backend's residues_of_parts, a slice at a time.
    ``quarter``: their radix-4 butterflies instead (_quarter_product's)."""
    slices = [backend.residues_of_parts(X_parts, beta + t * width, width or None, m or plan.num_moduli,
                                        plan.nearest, **({} if quarter is None else {"quarter": quarter}))
              for t in range(count)]
    return [list(part) for part in zip(*slices)]


# Bytes of GEMM products per output entry, modulus and slice pair, counted with
# the temporaries (the epilogue reads the products where they lie): real, the
# int32 product, or past one inner chunk the int64 sum beside the int32 chunk
# (12); complex, three of those (36), or on the CPU three int64 products and the
# epilogue's int64 Re and Im of one pair (3*8 + 2*8 = 40).
PRODUCT_BYTES = {False: 12, True: 40}
RESIDUE_PRODUCT_BYTES = {False: 1, True: 3}     # path "cutlass": the int8 residues


def blocks(m, n, k, plan, workspace, complex_=False, path="cublas", whole_columns=False):
    """Row and column block sizes whose residues and products fit ``workspace`` bytes.

    Per column of B: its residues (slices_b * moduli * k bytes); per row of A:
    its residues, plus the GEMM products (PRODUCT_BYTES; RESIDUE_PRODUCT_BYTES on
    path "cutlass"; none when "fused": they stay on chip) and the output of its
    row of the block.  Columns take
    at most half the budget; rows the rest.  ``whole_columns``: every column in one block
    (B's residues kept by a Prepared, not made per block), rows taking what they leave, or
    half the budget.
    ``k`` counts every residue row a part needs (complex: Re, Im and their sum).
    """
    kp = -(-k // 16) * 16
    mods = plan.num_moduli
    pairs = plan.slices_a * plan.slices_b
    per_col = plan.slices_b * mods * kp
    nb = n if whole_columns else _aligned(n, (workspace // 2) // per_col)
    per_product = {"fused": 0, "cutlass": RESIDUE_PRODUCT_BYTES[complex_]}.get(path, PRODUCT_BYTES[complex_])
    product_bytes = pairs * mods * per_product
    per_row = plan.slices_a * mods * kp + nb * (product_bytes + 16)
    rows_budget = max(workspace - nb * per_col, workspace // 2) if whole_columns else workspace - nb * per_col
    mb = _aligned(m, rows_budget // per_row)
    return mb, nb


# Blocks smaller than the whole dimension are cut at multiples of this: a block's
# columns are the leading dimension of its int32 products, and cuBLAS's int8
# kernels want aligned leading dimensions and pointers.  (Suspected, not yet
# measured, as the cause of an n = 49152 product blocked at arbitrary sizes
# running at 0.46x native on the H200, run a15af3b, against 1.44x unblocked at
# n = 32768; device_run.sh last times it again.)
BLOCK_ALIGN = 256


def _aligned(size, fits):
    """The block size for a dimension ``size`` of which ``fits`` fit the budget: all of
    it, else ``fits`` rounded down to a multiple of BLOCK_ALIGN (at least 1)."""
    if fits >= size:
        return size
    return max(1, fits // BLOCK_ALIGN * BLOCK_ALIGN if fits >= BLOCK_ALIGN else fits)


def product_finite(A_parts, Bt_parts, plan, backend, workspace, batch=1, substrate="int8", path="cublas",
                   out_dtype=np.float64, prepared=(None, None), residual=False):
    """The exact-then-rounded product under ``plan``; a list of the output parts,
    each rounded once to ``out_dtype`` (float64 or float32).

    One part (real): A @ B.  Two parts (complex, Karatsuba in the residue domain):
    P1 = Ar Br, P2 = Ai Bi, P3 = (Ar + Ai)(Br + Bi), the sums' residues formed
    mod p, then Re = P1 - P2 and Im = P3 - P1 - P2, formed exactly and reduced
    mod p by the epilogue: three int8 GEMMs per modulus instead of four.

    Blocked over rows of A and columns of B so that the residues and products of
    one block stay under ``workspace`` bytes; one block when everything fits.
    batch > 1 (the caller has checked that the whole stack fits): the parts hold
    ``batch`` matrices' rows one after another.  The parts come back as
    (batch, m, n).  ``path``: "fused" runs the GEMMs and the epilogue of a
    block as one backend step (``fused_product``), "cublas" as ``gemm`` (or
    the substrate's product) per modulus, then ``epilogue``.  ``prepared``: the
    Prepared operand of a side, whose residues are read from it, not formed.
    ``residual``: the parts' rounding residuals follow them in the list (float64,
    kulisch.round_to's: exact mode's test, _by_test).
    """
    xp = backend.xp
    parts = len(A_parts)
    m, k = A_parts[0].shape
    n = Bt_parts[0].shape[0]
    quarter = quarter_turns(prepared[1], parts, batch, plan, m)
    if batch > 1:
        mb, nb = m, n                  # the whole stack in one block
        m, n = m // batch, n // batch
    else:
        # a quarter-turn product holds A's residues and their butterflies at once
        mb, nb = blocks(m, n, k * (3 if parts == 2 else 1) * (2 if quarter else 1), plan, workspace, parts == 2,
                        path, whole_columns=quarter is not None)
    whole = (mb, nb) == (m * batch, n * batch)
    C = None if whole else _result_parts(xp, m, n, parts, out_dtype, residual)
    wa, wb = slice_widths(plan)
    # per slice pair (t, u), its weight in the Kulisch accumulator, in limbs
    shifts = [(t * wa + u * wb) // LIMB_BITS for t in range(plan.slices_a) for u in range(plan.slices_b)]

    def slices(X_parts, lo, hi, beta, width, count, ready, quarter=None):
        if ready is not None and ready.fits(width, count):
            return ready.residues(plan, lo, hi)
        if ready is not None and ready.pair:           # its rows hold X alone, not X + low
            raise RuntimeError("an exact pair operand (prepare_pair) cannot take this product's slicing")
        return _part_residues([X[lo:hi] for X in X_parts], beta[lo:hi], width, plan, count, backend,
                              quarter=quarter)

    for j0 in range(0, n, nb):
        # (a quarter-turn product reads B's residues as _quarter_product's four matrices)
        rb = None if quarter is not None else slices(Bt_parts, j0, j0 + nb, plan.beta_b, wb, plan.slices_b,
                                                     prepared[1])
        for i0 in range(0, m, mb):
            # _quarter_product's butterflies formed with the residues where A's are made here
            butterflied = quarter is not None and prepared[0] is None
            ra = slices(A_parts, i0, i0 + mb, plan.beta_a, wa, plan.slices_a, prepared[0],
                        quarter if butterflied else None)
            beta_a, beta_b = plan.beta_a[i0:i0 + mb], plan.beta_b[j0:j0 + nb]
            # a block of C is written where it lies (at 16384^2 in two row blocks, copying
            # them took 1.4 of 110 ms on the H100, run 024cda9; fftn 1024^3's quarter-turn row
            # blocks 33 of 878 ms, run 8b1f31d)
            into = None if whole else [c[0, i0:i0 + mb, j0:j0 + nb] for c in C]
            if quarter is not None:
                block = _quarter_product(ra, prepared[1], quarter, shifts, plan, backend, beta_a, beta_b, substrate,
                                         path, out_dtype, residual, butterflied, into)
            elif path == "fused":
                block = backend.fused_product(ra, rb, shifts, plan.num_moduli, beta_a, beta_b, batch, out_dtype,
                                              residual)
            else:
                block = _products_then_epilogue(ra, rb, shifts, plan, backend, batch, beta_a, beta_b, substrate,
                                                out_dtype, path == "cutlass", residual, into)
            if whole:
                return block
            if path == "fused" or (quarter is not None and path != "cutlass"):   # blocks not written in place
                for c, b in zip(into, block):
                    c[...] = b[0]
            del ra, block
    return C


# Products with a DFT matrix (ozaki.fft's direct transforms) run as four products of a
# quarter's size where the matrix has N = 4 q columns, N a multiple of QUARTER_ALIGN and
# at least QUARTER_MIN, or the backend's QUARTER_MIN where larger (the GPU's: its int8
# GEMMs of a quarter's size run well only from q = 256).  The bits are the same either way.
# (OZAKI_QUARTER_MIN=N sets it: bench/device_run.sh times the one-product path beside it;
# ozaki.fft's plans cost the quarter turns from QUARTER_MIN_DEFAULT, whatever it is set to.)
QUARTER_MIN_DEFAULT = 256
QUARTER_MIN = int(os.environ.get("OZAKI_QUARTER_MIN") or QUARTER_MIN_DEFAULT)
QUARTER_ALIGN = 64


def quarter_turns(B, parts, batch, plan, rows):
    """The sign of B's quarter-turn symmetry (Prepared.quarter) where the product
    A @ B of A's ``rows`` may run as _quarter_product (complex, B one matrix whose residues
    are cut as the plan cuts its side, in one slice, rows times B's columns at least the
    backend's QUARTER_POINTS_MIN), else None."""
    sign = getattr(B, "quarter", None)
    if (sign is None or parts != 2 or batch != 1 or plan.slices_b != 1 or B.stack_size != 1
            or rows * B.shape[-1] < getattr(B.backend, "QUARTER_POINTS_MIN", 0)
            or not getattr(B.backend, "quarter_products", lambda: True)()
            or not B.fits(slice_widths(plan)[1], plan.slices_b)):
        return None
    k, n = B.shape[-2:]
    least = max(QUARTER_MIN, getattr(B.backend, "QUARTER_MIN", 0))
    return sign if k == n and n >= least and n % QUARTER_ALIGN == 0 else None


@functools.lru_cache(maxsize=64)
def _quarter_index(xp, n, device):
    return xp.asarray(quarter_columns(n))


def quarter_index(xp, n):
    """quarter_columns(n) as an index array of xp's current device, made once: a CUDA
    graph's capture may not copy it from the host (and keeps it past the cache's limit)."""
    device = xp.cuda.Device().id if xp.__name__ == "cupy" else None
    return host.keep(_quarter_index(xp, n, device))


def quarter_columns(n):
    """The columns of an n-column product as _quarter_product's four products take them:
    product s, column c is column 4 c + s."""
    return (4 * np.arange(n // 4)[None, :] + np.arange(4)[:, None]).ravel()


def _quarter_product(ra, B, sign, shifts, plan, backend, beta_a, beta_b, substrate, path, out_dtype, residual,
                     butterflied=False, out=None):
    """A @ F for a complex F with F[q r + j, 4 c + s] = (sign i)**(r s) F[j, 4 c + s]
    (n = 4 q; the DFT matrix's quarter turns, exact for correctly rounded roots): output
    column 4 c + s is sum_j z_s[j] F[j, 4 c + s] with z_s = sum_r (sign i)**(r s)
    A[:, q r + j] (decimation in frequency).  The z_s are formed from A's residues mod p
    (the backend's butterfly4: exact), so the four products G_s = F[:q, s::4] of a
    quarter's inner length give every output's exact integer, the same as one product
    with F, in a quarter of the int8 work: one stacked product (batch 4), one epilogue
    writing column c of product s at 4 c + s (``interleave``).
    ``ra``: A's residues per part (Re, Im, sums) and slice, or with ``butterflied`` their
    butterflies already (residues_of_parts' ``quarter``); the parts come back (1, m, n),
    on path "cutlass" written into ``out`` where given (arrays (m, n): the stacked epilogue's
    interleaved outputs land where they lie in the result; the other paths' blocks are
    copied there by product_finite)."""
    xp = backend.xp
    n = beta_b.shape[0]
    za = ra if butterflied else [list(z) for z in zip(*(backend.butterfly4(re, im, plan.num_moduli, sign)
                                                        for re, im in zip(ra[0], ra[1])))]
    zb = B.quarter_residues(plan)
    beta_bq = beta_b[quarter_index(xp, n)]
    beta_aq = xp.concatenate([beta_a] * 4)
    if path == "fused":
        outs = backend.fused_product(za, zb, shifts, plan.num_moduli, beta_aq, beta_bq, 4, out_dtype, residual)
        return [interleave_columns(o) for o in outs]
    cutlass = path == "cutlass"
    return _products_then_epilogue(za, zb, shifts, plan, backend, 4, beta_aq, beta_bq, substrate, out_dtype,
                                   cutlass, residual, out if cutlass else None, interleave=True)


def _result_parts(xp, m, n, parts, out_dtype, residual):
    """The (1, m, n) arrays a blocked product's parts are written into (and the float64
    residuals after them); a complex product's Re and Im as the halves of one complex
    array, which the backend's complex_of returns without a copy, and its residuals
    likewise (the epilogue indexes outputs and residuals with the same element strides)."""
    def halves(dtype):
        both = xp.empty((1, m, n), dtype=np.result_type(dtype, np.complex64)).view(dtype)
        return [both[..., 0::2], both[..., 1::2]]

    def arrays(dtype):
        return halves(dtype) if parts == 2 else [xp.empty((1, m, n), dtype=dtype)]
    return arrays(out_dtype) + arrays(np.float64) if residual else arrays(out_dtype)


def _products_then_epilogue(ra, rb, shifts, plan, backend, batch, beta_a, beta_b, substrate, out_dtype,
                            residues=False, residual=False, out=None, interleave=False):
    """The unfused path: the substrate's GEMMs per slice pair (and Karatsuba part)
    into memory, then the backend's epilogue per matrix; parts (batch, m, n).
    ``residues``: the GEMMs give the products' residues mod p (``gemm_residues``),
    which the epilogue reduces to the same CRT values.  ``out`` (batch 1, or with
    ``residues`` and ``interleave`` the (m, batch n) arrays of the interleaved output):
    the arrays the epilogue writes the parts into.  ``interleave``: the parts
    come back (1, m, batch n), column j of matrix g at j batch + g (_quarter_product's)."""
    xp = backend.xp

    def product(Ra, Rbt):
        if residues:
            return backend.gemm_residues(Ra, Rbt, plan.num_moduli, batch)
        return substrates.product(backend, substrate, Ra, Rbt, batch)

    # per slice pair: (P,) real, or the Karatsuba (P1, P2, P3) whose
    # Re = P1 - P2 and Im = P3 - P1 - P2 the epilogue forms
    products = [tuple(product(ra[h][t], rb[h][u]) for h in range(len(ra)))
                for t in range(plan.slices_a) for u in range(plan.slices_b)]
    m, n = ra[0][0].shape[1] // batch, rb[0][0].shape[1] // batch
    if residues and batch > 1:         # the residues of the whole stack as one (b, batch m, n) stack: one epilogue
        outs = backend.epilogue([tuple(backend.stacked_residues(P) for P in pair) for pair in products], shifts,
                                plan.num_moduli, beta_a, beta_b, out_dtype, residual, out if interleave else None,
                                matrices=batch, interleave=interleave)
        return [o[None] if interleave else o.reshape(batch, m, n) for o in outs]
    outs = [backend.epilogue([tuple(P[g] for P in pair) for pair in products], shifts, plan.num_moduli,
                             beta_a[g * m:(g + 1) * m], beta_b[g * n:(g + 1) * n], out_dtype, residual, out)
            for g in range(batch)]
    if batch == 1:
        return [o[None] for o in outs[0]]
    if interleave:
        return [interleave_columns(xp.stack([o[h] for o in outs])) for h in range(len(outs[0]))]
    return [xp.stack([o[h] for o in outs]) for h in range(len(outs[0]))]


def interleave_columns(P):
    """A stack's parts (batch, m, n) as one (1, m, batch n) output, matrix g's column j
    at j batch + g (a copy)."""
    batch, m, n = P.shape
    return P.transpose(1, 2, 0).reshape(1, m, n * batch)


def signed_zeros(xp, A, B, C):
    """IEEE sign of zero results: -0 exactly where every term a_ik b_kj is -0.
    A (..., m, k), B (..., k, n): stacks are handled at once."""
    k = A.shape[-1]
    f = xp.float64
    nonzero_terms = xp.matmul((A != 0).astype(f), (B != 0).astype(f))
    sa, sb = xp.signbit(A).astype(f), xp.signbit(B).astype(f)
    differ = sa.sum(axis=-1)[..., :, None] + sb.sum(axis=-2)[..., None, :] - 2 * xp.matmul(sa, sb)
    return xp.where((nonzero_terms == 0) & (differ == k), -0.0, C)


def special_values(xp, A, B, C):
    """NaN and +-inf where IEEE arithmetic on the exact terms gives them (stacks at once)."""
    f = xp.float64
    mm = xp.matmul
    pos_a, neg_a, pos_b, neg_b = (A > 0).astype(f), (A < 0).astype(f), (B > 0).astype(f), (B < 0).astype(f)
    pinf_a, ninf_a = (A == xp.inf).astype(f), (A == -xp.inf).astype(f)
    pinf_b, ninf_b = (B == xp.inf).astype(f), (B == -xp.inf).astype(f)
    zero_a, zero_b = (A == 0).astype(f), (B == 0).astype(f)
    nan = (xp.isnan(A).any(axis=-1)[..., :, None] | xp.isnan(B).any(axis=-2)[..., None, :]
           | (mm(pinf_a + ninf_a, zero_b) > 0) | (mm(zero_a, pinf_b + ninf_b) > 0))
    plus = mm(pinf_a, pos_b) + mm(ninf_a, neg_b) + mm(pos_a, pinf_b) + mm(neg_a, ninf_b) > 0
    minus = mm(pinf_a, neg_b) + mm(ninf_a, pos_b) + mm(pos_a, ninf_b) + mm(neg_a, pinf_b) > 0
    C = xp.where(plus, xp.inf, C)
    C = xp.where(minus, -xp.inf, C)
    return xp.where(nan | (plus & minus), xp.nan, C)


def bound_side(backend, X_rows, beta, nearest):
    """What the per-entry error bound needs of each of the rows a plan scaled (of A, or
    of B^T; complex: [re | im] side by side): (S, e, b, exact) with sum |x| <= S 2**-e
    over the finite entries, b = beta - h the exponent of the digits' error bound
    (h = 1 for digits rounded to nearest, else 0) and ``exact`` where the digits have
    no error (an all-zero row, or beta <= -1074, where the digits hold every bit).

    S is the sum of scan_rows's integer ceilings c = ceil(|x| 2**e) (1 for nonzero
    values that underflow), e putting the row maximum below 2**bits: an exact int64
    sum, rounded once to float64, so the same on every backend whatever order the sum
    runs in (a float64 sum's rounding would depend on it, and with it which entries
    are certified); one pass over the rows (the GPU's scan: certified's ten array
    passes over A and B^T took ~20 ms at n = 16384).
    """
    xp = backend.xp
    bits = min(30, 62 - X_rows.shape[1].bit_length())
    _, _, e, _, sums = backend.scan_rows(X_rows, bits, sum_ceilings=True)
    S = sums.astype(xp.float64)
    exact = (S == 0) | (beta <= -1074)
    return S, e.astype(xp.int64), (beta - (1 if nearest else 0)).astype(xp.int64), exact


def error_bounds(xp, side_a, side_b, K):
    """Delta float64 with |A B - C' 2**(beta_i + beta_j)| <= Delta per entry.

    ``side_a``, ``side_b``: bound_side of A's rows and of B^T's, shaped to broadcast
    against the output (for instance (batch, m, 1) and (batch, 1, n)); K the terms
    per entry.  A digit misses its entry by |da| <= 2**b_i, so each term obeys
    |ab - a'b'| <= |a||db| + |da||b| + |da||db|, and the entry's error
        Delta = 2**b_j sum|a_i:| + 2**b_i sum|b_:j| + K 2**(b_i + b_j),
    each term one ldexp of its integer-ceiling sum at the combined exponent (clipped
    to +-2200: past the range either way).  The few roundings (the int64 -> float64
    sums, the additions, subnormal results) are covered by the factor 1 + 2**-48
    and 2**-1071.  Evaluated in this order, an operation at a time (no fma), as
    kernels/certify.cuh does on the GPU: the bound decides which entries are
    recomputed, so both backends must form the same float64 values.
    """
    Sa, ea, ba, exact_a = side_a
    Sb, eb, bb, exact_b = side_b

    def scaled(x, exponent):
        return xp.ldexp(x, xp.clip(exponent, -2200, 2200).astype(xp.int32))

    with np.errstate(over="ignore", under="ignore"):        # an infinite bound: recomputed
        t1 = xp.where(exact_b, 0.0, scaled(Sa, bb - ea))
        t2 = xp.where(exact_a, 0.0, scaled(Sb, ba - eb))
        t3 = xp.where(exact_a | exact_b, 0.0, scaled(xp.full((1,) * xp.ndim(Sa), float(K)), ba + bb))
        return (t1 + t2 + t3) * (1.0 + 2.0 ** -48) + 2.0 ** -1071


def gaps(xp, a, fmt):
    """The smaller gap beside each |C| = ``a`` (float64, holding C exactly) to its
    neighbours in C's format ``fmt`` (np.finfo of float64 or float32): the spacing
    below a power of two is half the one above; zero's is the least subnormal.
    Formed in float64 from frexp, never in float32 arithmetic: the device flushes
    float32 subnormals to zero (cupy's nextafter on float32 C gave zero gaps)."""
    mant, e = xp.frexp(a)                          # a = mant 2**e, mant in [0.5, 1)
    least = fmt.minexp - fmt.nmant                 # the least subnormal's exponent
    up = xp.ldexp(xp.ones_like(a), xp.maximum(e - fmt.nmant - 1, least))
    below = (mant == 0.5) & (e - fmt.nmant - 2 >= least)
    return xp.where(a == 0, 2.0 ** least, xp.where(below, 0.5 * up, up))


def _magnitudes_and_gaps(backend, C):
    """(|C| in float64, where it is finite, the smaller gap beside it in C's format) for
    the per-entry tests: float32 C widened exactly, subnormals kept; non-finite entries'
    gaps are zero's."""
    xp = backend.xp
    a = xp.abs(C if C.dtype == np.float64 else backend.widen(C))
    finite = xp.isfinite(a)
    return a, finite, gaps(xp, xp.where(finite, a, 0.0), np.finfo(C.dtype))


def certified_entries(backend, C, delta, ieee):
    """Where C is provably faithful: 2 Delta below the smaller gap beside C (then the
    exact value lies strictly between C's neighbours in C's own format, float64 or
    float32), or ``ieee`` (entries decided by NaN/inf inputs).  A non-finite C from
    finite inputs (overflow) is not."""
    _, finite, gap = _magnitudes_and_gaps(backend, C)
    with np.errstate(over="ignore"):                        # 2 Delta past the range: not certified
        return ieee | (finite & (2.0 * delta < gap))


def rounded_entries(backend, C, rho, delta, ieee):
    """Where C is provably the correctly rounded exact product (exact mode by Ziv's
    strategy, _by_test): the truncated product x = C + rho (rho the epilogue's
    rounding residual, kulisch.round_to's) lies within Delta of the exact one, and
    (|rho| + Delta)(1 + 2**-50) stays below half the smaller gap beside C, so no value
    within Delta of x crosses a rounding boundary of C; or ``ieee``.  A NaN rho (not
    formed), a non-finite C or a zero C is not (kernels/certify.cuh, correctly_rounded):
    the bound leaves a zero's sign open (float32's half gap at zero exceeds the bound's
    2**-1071 floor, so an exact value of either sign may lie within it)."""
    a, finite, gap = _magnitudes_and_gaps(backend, C)
    with np.errstate(over="ignore", invalid="ignore"):
        return ieee | (finite & (a != 0) & ((backend.xp.abs(rho) + delta) * (1.0 + 2.0 ** -50) < 0.5 * gap))


# Without the backend's exact_entries (the CPU), or where the exact dot's window
# is too wide, failing entries are recomputed in exact mode by blocks: runs of R failing rows,
# each with the columns that fail in it.  Scattered failures (a fraction f of
# the entries) cost about R n f columns per block, so small R recomputes less,
# but every block is a call of fixed cost, counted as this many multiply-adds
# (about 2 ms of exact mode on the H200).  R is the cheapest of CERTIFY_ROWS.
CERTIFY_CALL = 2 ** 35
CERTIFY_ROWS = (4096, 1024, 256, 64, 16)
# What the last certified product did: entries (of the output), failing (not
# certified), recomputed (entries recomputed: the failing ones one by one, or
# those of the blocks), blocks; for benchmarks
# (reset by each certified matmul_stack; one process-wide record, not per thread).
certify_counts = {"entries": 0, "failing": 0, "recomputed": 0, "blocks": 0}


# An exact dot product's term (kernels/exact_dot.cu's exact_entries, one failing
# entry at a time) costs about this many multiply-adds of an exact-mode block
# (H200: exact dot ~8e10 terms/s, exact mode ~1.8e13 multiply-adds/s at 16384);
# the failing entries go one by one when that is the cheaper.
CERTIFY_ENTRY = 256


def _recompute_blocks(xp, bad, k):
    """(cost, blocks) of covering the True entries of ``bad`` (m, n) by blocks: (rows,
    cols) index pairs, runs of R failing rows with the columns failing in each, R the
    cheapest by CERTIFY_CALL; cost in multiply-adds (CERTIFY_CALL a block)."""
    rows = xp.flatnonzero(bad.any(axis=1))
    if rows.size == 0:
        return 0, []
    failing_rows = bad[rows]
    best = None
    for R in sorted({min(R, rows.size) for R in CERTIFY_ROWS}):
        nb = -(-rows.size // R)
        pad = xp.zeros((nb * R - rows.size, bad.shape[1]), dtype=bool)
        cols = xp.concatenate([failing_rows, pad]).reshape(nb, R, -1).any(axis=1).sum(axis=1)
        cost = nb * CERTIFY_CALL + R * int(cols.sum()) * k             # a host sync per R
        if best is None or cost < best[0]:
            best = (cost, R)
    cost, R = best
    return cost, [(rows[i:i + R], xp.flatnonzero(failing_rows[i:i + R].any(axis=0))) for i in range(0, rows.size, R)]


def uncertified(backend, C, side_a, side_b, ieee_a, ieee_b, K, residuals=None):
    """The entries of the parts C (batch, m, n) that certified_entries does not prove
    faithful under the bound of the sides (bound_side of the rows of A and of B^T,
    batch m and batch n long; ieee_*: their rows' NaN/inf flags): (bad (batch, m,
    n) bool, failing entries per matrix as host ints).  ``residuals`` (the parts'
    rounding residuals): those that rounded_entries does not prove correctly rounded.
    Backends with their own ``uncertified`` (the GPU: one kernel pass,
    kernels/certify.cu) give the same."""
    xp = backend.xp
    batch, m, n = C[0].shape
    side_a = [x.reshape(batch, m, 1) for x in side_a]
    side_b = [x.reshape(batch, 1, n) for x in side_b]
    delta = error_bounds(xp, side_a, side_b, K)
    ieee = ieee_a.reshape(batch, m, 1) | ieee_b.reshape(batch, 1, n)
    if residuals is None:
        tests = [certified_entries(backend, c, delta, ieee) for c in C]
    else:
        tests = [rounded_entries(backend, c, r.reshape(c.shape), delta, ieee) for c, r in zip(C, residuals)]
    bad = ~tests[0]
    for t in tests[1:]:
        bad |= ~t
    # rows first, then matrices: one reduction over a whole matrix's m n entries per
    # output ran in one block (193 ms of a certified 16384^2 product on the H200)
    return bad, [int(v) for v in bad.sum(axis=2).sum(axis=1).tolist()]      # the host sync


def _certify(backend, A, B, C, A_rows, Bt_rows, plan, batch, recompute, residuals=None):
    """Keep the entries of the parts C (batch, m, n) that certified_entries proves
    faithful; recompute the rest exactly: each failing entry by the backend's
    ``exact_entries`` where it has one and that costs less (CERTIFY_ENTRY; an exact
    dot product per entry, read in place), else (or where its window is too wide)
    with ``recompute(A_sub, B_sub)`` (exact mode) on the blocks of _recompute_blocks,
    matrix by matrix.  Both give the correctly rounded exact entry, so the bits are
    the same either way.  ``residuals``: the parts' rounding residuals; the entries
    kept are then those proved correctly rounded (exact mode, _by_test)."""
    xp = backend.xp
    m, n = C[0].shape[1:]
    K = A_rows.shape[1]
    sides = tuple(bound_side(backend, X, beta, plan.nearest)
                  for X, beta in ((A_rows, plan.beta_a), (Bt_rows, plan.beta_b)))
    ieee = tuple((f & 1) != 0 for f in plan.flags)
    find = getattr(backend, "uncertified", None) or functools.partial(uncertified, backend)
    bad, per_matrix = find(C, *sides, *ieee, K, residuals)
    counts = {"entries": batch * m * n, "failing": sum(per_matrix), "recomputed": 0, "blocks": 0}
    failing = [g for g, count in enumerate(per_matrix) if count]

    def block_plans():
        return {g: _recompute_blocks(xp, bad[g], A.shape[2]) for g in failing}
    # every block costs at least a call: below that the blocks need not be planned (their
    # plan scans the m n flags and syncs the host per R: ~5 ms at n = 16384)
    entry_cost = counts["failing"] * K * CERTIFY_ENTRY
    blocks = block_plans() if entry_cost > CERTIFY_CALL * len(failing) else None
    one_by_one = blocks is None or entry_cost <= sum(cost for cost, _ in blocks.values())
    if counts["failing"] and one_by_one and hasattr(backend, "exact_entries"):
        flat = bad.reshape(batch * m, n)
        rows = xp.flatnonzero(flat.any(axis=1))            # of the stack's batch m rows
        r, cols = xp.nonzero(flat[rows])
        rows = rows[r]
        cols = rows // m * n + cols                        # of the stack's batch n columns
        values = backend.exact_entries(A_rows, Bt_rows, rows, cols, len(C), C[0].dtype,
                                       not getattr(_zero_signs, "elsewhere", False))
        if values is not None:
            at = (rows // m, rows % m, cols % n)           # in the (batch, m, n) parts
            for c, v in zip(C, values):
                c[at] = v
            counts["recomputed"] = counts["failing"]
            blocks = {}
    for g, (_, runs) in (block_plans() if blocks is None else blocks).items():
        for rows, cols in runs:
            sub = recompute(A[g][rows][None], B[g][:, cols][None])[0]
            at = xp.ix_(rows, cols)
            keep = bad[g][at]
            for c, part in zip(C, [sub.real, sub.imag] if len(C) == 2 else [sub]):
                c[g][at] = xp.where(keep, part, c[g][at])
            counts["recomputed"] += int(rows.size) * int(cols.size)
            counts["blocks"] += 1
    for key, count in counts.items():              # summed over the pieces of one matmul_stack
        certify_counts[key] += count
    return C


def _ieee_fixups(xp, A, B, C, found):
    if found & 2:
        C = signed_zeros(xp, A, B, C)
    if found & 1:
        C = special_values(xp, A, B, C)
    return C


_zero_signs = threading.local()


@contextlib.contextmanager
def zero_signs_settled_elsewhere(settled=True):
    """Inside this block (this thread), products of finite inputs leave the signs of their
    zero results as the rounding gives them (+0 for an exact zero): no signed_zeros.
    ``settled=False`` restores the sign rule inside (for values kept and reused).

    For callers that set the sign of every zero of their final results themselves
    and use intermediate zeros only as terms of exact sums, where -0 and +0 are the
    same: ozaki.fft (specials.finish, except in rows whose zeros may be underflows).
    In a 256^3 fftn on the H200 the fix-up's check and float64 products took about a
    fifth of the time (run 3697b74).  NaN and inf inputs still get every fix-up.
    """
    old = getattr(_zero_signs, "elsewhere", False)
    _zero_signs.elsewhere = bool(settled)
    try:
        yield
    finally:
        _zero_signs.elsewhere = old


def _needing_fixups(xp, C, found):
    """The matrices of the stack whose results the IEEE fix-ups can change.

    NaN/inf inputs: all of them.  Zero inputs alone only decide the sign of
    zero results, so only matrices with a zero result need signed_zeros (its
    two extra float64 products would otherwise cost more than the emulation),
    and none inside zero_signs_settled_elsewhere.
    """
    batch = C[0].shape[0]
    if found & 1:
        return range(batch)
    if not found & 2 or getattr(_zero_signs, "elsewhere", False):
        return range(0)
    zero = C[0].reshape(batch, -1) == 0
    for c in C[1:]:
        zero |= c.reshape(batch, -1) == 0
    return [int(g) for g in np.flatnonzero(host.read(zero.any(axis=1)))]      # one host sync


def matmul2d(A, B, mode, num_moduli, backend, workspace=None, substrate="int8", path="auto", out_dtype=None):
    """C = A @ B for 2-D float64 or complex128 arrays of the backend, exactly-then-rounded.

    ``workspace``: bytes the residues and products of one block may take
    (default: the backend's ``default_workspace()``).  A complex product's real
    and imaginary parts are each the exact sum of their 2k real terms, rounded
    once (and their IEEE specials are those of these real sums).  ``out_dtype``:
    the result's dtype, float64/complex128 (None: A's) or float32/complex64 (each
    entry rounded once, from the exact value, to float32, with float32's
    subnormals and overflow; the default moduli count is float32's).
    """
    return matmul_stack(A[None], B[None], mode, num_moduli, backend, workspace, substrate, path, out_dtype)[0]


# matmul_stack's piece sizes under the default workspace, by shapes and options
_stack_steps = {}


def stack_matrix_bytes(m, n, k, mode, complex_):
    """The workspace one m x k by k x n matrix of a stack takes (matmul_stack's pieces):
    its residues and products counted generously, at 22 moduli (fast, accurate) or 49 moduli
    and 4 slice pairs (exact), 3 GEMMs for complex."""
    mods = 49 * 4 if mode == "exact" else 22
    return ((m + n) * (k + 16) * (3 if complex_ else 1) + m * n * PRODUCT_BYTES[complex_]) * mods


def matmul_stack(A, B, mode, num_moduli, backend, workspace=None, substrate="int8", path="auto", out_dtype=None,
                 by_test=True):
    """C[g] = A[g] @ B[g] for stacks (batch, m, k), (batch, k, n), as matmul2d each.

    The stack goes through the pipeline at once (one plan over all rows, batched
    GEMMs, one epilogue per matrix) when its residues and products fit the
    workspace, else in pieces of a power of two matrices (the last one the rest); the
    results are the same bits either way.
    ``by_test=False``: exact mode by its slices alone (not EXACT_BY_TEST's route).
    """
    xp = backend.xp
    batch, m, k = A.shape
    n = B.shape[2]
    if mode in ("certified", "exact") and by_test:
        certify_counts.update(dict.fromkeys(certify_counts, 0))
    default_workspace = not workspace
    workspace = int(workspace or backend.default_workspace())
    complex_ = A.dtype.kind == "c"                 # A may be a Prepared operand
    out_dtype = np.dtype(A.dtype if out_dtype is None else out_dtype)
    if m == 0 or n == 0 or k == 0 or batch == 0:
        return xp.zeros((batch, m, n), dtype=out_dtype)
    step = max(1, min(batch, workspace // max(stack_matrix_bytes(m, n, k, mode, complex_), 1)))
    if step < batch:
        # pieces of a power of two matrices: the workspace is half the free memory, which the
        # cached graphs' pools move, and each new piece shape is a new graph (graphs.py keys by
        # shape).  With the exact count, an exact-mode stack of 4096 x 64^2 (about 44 GiB
        # counted, against 37 free) was cut at a different count on every call: six captures
        # in seven calls, 14-309 ms a call against 2.9 replayed (H100, run 53d1c4c)
        step = 1 << (step.bit_length() - 1)
        if default_workspace:
            # ... and under the default workspace, the piece size a stack of these shapes took
            # before while it still fits: a graph's pool taking the free memory below a power
            # of two's worth must not have the next call cut it finer, evict a graph and then
            # cut it coarser again
            key = (A.shape, B.shape, A.dtype.str, B.dtype.str, mode, num_moduli, substrate, path, out_dtype.str,
                   getattr(backend, "__name__", type(backend).__name__))
            step = min(step, _stack_steps.get(key, step))
            if len(_stack_steps) >= 1024:
                _stack_steps.clear()
            _stack_steps[key] = step
    if step == batch:                  # one piece: its result is the output (no copy)
        return _stack_piece(A, B, mode, num_moduli, backend, workspace, complex_, substrate, path, out_dtype, by_test)
    out = xp.empty((batch, m, n), dtype=out_dtype)
    for g0 in range(0, batch, step):
        out[g0:g0 + step] = _stack_piece(A[g0:g0 + step], B[g0:g0 + step], mode, num_moduli, backend,
                                         workspace, complex_, substrate, path, out_dtype, by_test)
    return out


def operand_rows(backend, X, side, interleaved=False):
    """The rows the pipeline reads of a (batch, r, c) stack: (parts, joined).

    side "left" (A): its rows; "right" (B): its columns as rows (B^T), so both
    operands are k-contiguous rows, batch matrices' rows one after another.
    parts: [X] real, [Re, Im] complex; joined: the parts side by side (what the
    plan scans: one scale per row serves every part).  A real X's part is joined
    itself; a complex X's parts are views of joined, its rows' halves [Re | Im]
    (row-strided: rows 2k apart, not contiguous arrays of their own; the residue
    step reads rows any distance apart).  Non-finite entries count as zeros in the
    finite product (the residue step reads them so); the IEEE fix-ups put NaN/inf
    back.  Empty stacks keep their shapes: (batch * r, k) with any of them 0.
    ``interleaved`` (side "left", for exact mode, whose plan reads a row's entries in any
    order): a C-ordered complex X's joined rows are its own (Re, Im) pairs, read in place,
    and the parts their even and odd entries (rows 2 k apart, entries two apart): no
    [Re | Im] copy (at fftn 1024^3, about 28 of 1100 ms on the H100, run 6cbae98).
    """
    xp = backend.xp

    def rows(Y):                       # (batch, r, k) -> (batch * r, k), contiguous
        # explicit sizes: reshape(-1, 0) cannot infer the rows of an empty stack
        return xp.ascontiguousarray(Y).reshape(Y.shape[0] * Y.shape[1], Y.shape[2])

    def layout(Y):
        if side == "left":
            return rows(Y)
        if Y.shape[0] == 1:
            return backend.transposed(Y[0])
        if getattr(backend, "tiled_bt", lambda: False)():
            # the stack's columns through the backend's tiled transposes (cupy_backend.contiguous)
            return backend.contiguous(Y.transpose(0, 2, 1)).reshape(Y.shape[0] * Y.shape[2], Y.shape[1])
        return rows(Y.transpose(0, 2, 1))

    if X.dtype.kind == "c" and interleaved and side == "left" and X.flags.c_contiguous and X.size:
        batch, r, c = X.shape
        joined = X.view(X.real.dtype).reshape(batch * r, 2 * c)
        return [joined[:, 0::2], joined[:, 1::2]], joined
    if X.dtype.kind == "c":
        # The joined rows [Re | Im] are made in one pass and the parts are their halves,
        # read in place (the residue step takes rows any distance apart): ZGEMM at n = 8192
        # spent 4.6 of 47 ms in ten copies making the parts and joining them (run 5e6f825).
        batch, r, c = X.shape
        if side == "left":
            joined = xp.concatenate([X.real, X.imag], axis=-1).reshape(batch * r, 2 * c)
        else:
            # B^T of B's real view (batch, k, 2n): its rows 2j and 2j + 1 are column j's
            # Re and Im, side by side in memory, so (2 n, k) rows are n rows [Re | Im]
            flat = xp.ascontiguousarray(X).view(X.real.dtype)
            joined = layout(flat).reshape(batch * c, 2 * r)
        k = joined.shape[1] // 2
        return [joined[:, :k], joined[:, k:]], joined
    parts = [layout(X)]
    return parts, parts[0]


# Small products on the GPU are host-bound (a 512^2 product: 0.09 ms of kernels in a
# 0.71 ms call).  A backend with ``replayed`` (graphs.py: CUDA graphs) runs the finite
# pipeline of a repeated shape as one captured graph when the product is this small and
# no operand is prepared (exact mode's one host read, its plan's spans, replays by
# speculation, graphs.py; exact-mode stacks too, since matmul_stack cuts a stack that
# exceeds the workspace into pieces of a power of two matrices: before, a stack of 4096 x
# 64^2 was cut differently as the graphs took memory, and took 16.8 ms through graphs
# against 3.0 eager, run b73e858; 1024^2 took 0.55 against 1.79):
# 2048^2 (2**33) on the residue GEMM spends about as much time in the host as in its
# kernels; a graph keeps its intermediates (about 50 bytes an output and input entry at 16
# moduli) while it is cached, and a replay copies the operands in and the result out.  So a
# stack of 16 x 1024^2 (2**34, 400 MB copied) ran 2.08 ms through a graph against 1.86
# eager, while 2048^2 ran 0.84 against 1.72 and the stacks of 4096 x 64^2 and 256 x
# 256^2 (2**30, 2**32) 1.67 and 1.77 against 1.90 and 1.92 (accurate, H100, run 559ff26).
# OZAKI_GRAPH_MAX_WORK sets it (bench/device_run.sh compares).
GRAPH_MAX_WORK = int(os.environ.get("OZAKI_GRAPH_MAX_WORK", 1 << 33))   # batch m n k
# The paths whose steps a graph captures: the fused kernel and the residue GEMM
# (CUTLASS, launched through ctypes on the capturing stream); a cuBLAS call CuPy
# refuses inside a capture leaves that shape eager (graphs.replayed).
GRAPH_PATHS = ("fused", "cutlass")


def _replayable(backend, A, B, mode, num_moduli, substrate, path, complex_, part_dtype):
    """The product's path where its finite pipeline may replay as a CUDA graph, else None."""
    if (not hasattr(backend, "replayed") or mode not in ("fast", "accurate", "exact") or substrate != "int8"
            or isinstance(A, Prepared) or isinstance(B, Prepared)):
        return None
    return _replayable_shape(backend, A.shape, B.shape[2], mode, num_moduli, path, complex_, part_dtype)


def _replayable_shape(backend, shape_a, n, mode, num_moduli, path, complex_, part_dtype):
    """The path "auto" (or ``path``) takes, where the product is small enough and the path one of
    GRAPH_PATHS; else None.  Asked on every call, not cached: "auto" moves from the fused kernel
    to the residue GEMM once that is built, and a graph is keyed by the path its kernels take."""
    batch, m, k = shape_a
    if batch * m * n * k > GRAPH_MAX_WORK:
        return None
    count = default_num_moduli(mode, k * (2 if complex_ else 1), part_dtype) if num_moduli is None else num_moduli
    chosen = backend.choose_path(path, m, n, k, batch, count, 3 if complex_ else 1)
    return chosen if chosen in GRAPH_PATHS else None


def _bound_path(backend, path, m, n, k, batch):
    """How accurate mode's bound GEMM runs: the backend's path for one modulus, except that
    a product small enough to replay as a CUDA graph (GRAPH_MAX_WORK) takes its maxima on
    chip (the fused kernel) wherever it fits, so that no cuBLAS call (which CuPy refuses
    inside a capture) keeps the residue GEMM's path from replaying.  A forced "cublas"
    keeps cuBLAS."""
    chosen = backend.choose_path(path, m, n, k, batch, 1)
    if (chosen != "fused" and path != "cublas" and batch * m * n * k <= GRAPH_MAX_WORK
            and backend.choose_path("fused", m, n, k, batch, 1) == "fused"):
        return "fused"
    return chosen


def _finite_piece(A, B, mode, num_moduli, backend, workspace, complex_, substrate, path, part_dtype, host=True,
                  residual=False):
    """The finite pipeline of a piece: (C parts (batch, m, n), the IEEE flags found (a
    host int, or with host=False as the backend left them), (A rows, B^T rows, plan));
    ``residual``: the parts' rounding residuals after the parts (product_finite)."""
    xp = backend.xp
    batch, m, k = A.shape
    n = B.shape[2]
    prepared = tuple(X if isinstance(X, Prepared) else None for X in (A, B))
    # exact mode's plan reads the rows' bits in any order: A's complex rows in place
    (A_parts, A_plan), (Bt_parts, Bt_plan) = (X.rows() if isinstance(X, Prepared) else
                                              operand_rows(backend, X, side, interleaved=mode == "exact" and
                                                           getattr(backend, "pairs_in_place", lambda: True)())
                                              for X, side in ((A, "left"), (B, "right")))
    parts = 3 if complex_ else 1       # int8 products per modulus
    bound_path = _bound_path(backend, path, m, n, k, batch)     # the bound's k: a complex part's ceilings add up
    plan = make_plan(xp, A_plan, Bt_plan, mode, num_moduli, backend, len(A_parts), batch, bound_path, part_dtype,
                     prepared)
    product_path = "cublas" if substrate != "int8" else backend.choose_path(
        path, m, n, k, batch, plan.num_moduli, parts, plan.slices_a * plan.slices_b)
    C = [c.reshape(batch, m, n) for c in
         product_finite(A_parts, Bt_parts, plan, backend, workspace, batch, substrate, product_path, part_dtype,
                        prepared, residual)]
    found = backend.flags_found(*plan.flags, host=host) if plan.found is None else plan.found   # the host sync
    return C, found, (A_plan, Bt_plan, plan)


# Exact mode by Ziv's strategy where the backend recomputes single entries exactly
# (exact_entries: the GPU): accurate's scaling with certified's moduli count, the
# epilogue's rounding residuals, and the entries that the bound does not prove
# correctly rounded (rounded_entries) recomputed exactly, instead of exact mode's
# slices.  The same bits as the slices: every entry is the correctly rounded exact
# product either way (GPU tests, and bench.certified's same_bits).  Off by default:
# on the H200 (run 7271929, n = 16384) it was slower than the slices on every
# family: N(0,1) 232.7 against 174.4 ms (24069 entries failed the correct-rounding
# test, about 50 ms of exact dot products), phi = 1 231.3 / 189.9, phi = 3 245.1 /
# 240.7, phi = 6 620.4 / 333.1 (most entries fail: exact-mode blocks of the whole
# matrix); n = 4096 7.4 / 4.6 ms.  It pays once single entries cost less than a few
# hundred multiply-adds of exact mode each (exact_entries runs ~5e9 terms/s there).
EXACT_BY_TEST = False


def _by_test(backend, A, B, mode, num_moduli, substrate):
    return (EXACT_BY_TEST and mode == "exact" and num_moduli is None and substrate == "int8"
            and hasattr(backend, "exact_entries") and not isinstance(A, Prepared) and not isinstance(B, Prepared))


def _stack_piece(A, B, mode, num_moduli, backend, workspace, complex_, substrate, path, out_dtype, by_test=True):
    xp = backend.xp
    part_dtype = np.finfo(out_dtype).dtype            # float64 or float32: the format rounded to
    batch = A.shape[0]
    finite = functools.partial(_finite_piece, mode=mode, num_moduli=num_moduli, backend=backend,
                               workspace=workspace, complex_=complex_, substrate=substrate, path=path,
                               part_dtype=part_dtype)
    residuals = None
    if by_test and _by_test(backend, A, B, mode, num_moduli, substrate):
        count = default_num_moduli("certified", A.shape[2] * (2 if complex_ else 1), part_dtype)
        C, found, (A_plan, Bt_plan, plan) = finite(A, B, mode="accurate", num_moduli=count, residual=True)
        C, residuals = C[:len(C) // 2], C[len(C) // 2:]
    elif (chosen := _replayable(backend, A, B, mode, num_moduli, substrate, path, complex_, part_dtype)):
        # keyed by the path taken: a graph's warm run and capture then run the kernels (and made
        # the device tables) of an eager call before them, never a path's first run
        key = (A.shape, B.shape, A.dtype.str, B.dtype.str, mode, num_moduli, chosen, part_dtype.str)
        if complex_:
            C, found = backend.replayed(key, lambda a, b: finite(a, b, host=False)[:2], A, B)
        else:
            # a real B goes in as B^T: the replay's copy into the graph's C-ordered buffer is then
            # the transposition operand_rows makes (in a stack of 4096 x 64^2, a 103-us copy of
            # 1.21 ms of kernels, run 0b16e61), and the graph reads B^T's rows where they lie
            C, found = backend.replayed(key, lambda a, bt: finite(a, bt.swapaxes(-1, -2), host=False)[:2],
                                        A, B.swapaxes(-1, -2))
    else:
        C, found, (A_plan, Bt_plan, plan) = finite(A, B)
    A, B = (X.array if isinstance(X, Prepared) else X for X in (A, B))     # the stacks (IEEE fix-ups)
    needing = _needing_fixups(xp, C, found)
    if needing:                        # the matrices that need them, as one stack
        g = xp.asarray(needing) if len(needing) < batch else slice(None)
        if complex_:
            Ar, Ai, Br, Bi = A[g].real, A[g].imag, B[g].real, B[g].imag
            C[0][g] = _ieee_fixups(xp, xp.concatenate([Ar, -Ai], axis=-1), xp.concatenate([Br, Bi], axis=-2),
                                   C[0][g], found)
            C[1][g] = _ieee_fixups(xp, xp.concatenate([Ar, Ai], axis=-1), xp.concatenate([Bi, Br], axis=-2),
                                   C[1][g], found)
        else:
            C[0][g] = _ieee_fixups(xp, A[g], B[g], C[0][g], found)
    if mode == "certified" or residuals is not None:
        C = _certify(backend, A, B, C, A_plan, Bt_plan, plan, batch,
                     lambda a, b: matmul_stack(a, b, "exact", None, backend, workspace, substrate, path, out_dtype,
                                               by_test=False), residuals)
    return backend.complex_of(*C) if complex_ else C[0]


# ------------------------------------------------------------ prepared operands --
#
# A constant operand of many products (the FFT's DFT and twiddle matrices, the
# matrix of a linear system across its refinement) is scanned, scaled and cut
# into residues once: ``prepare`` keeps all of it that does not depend on the
# other operand, and the products read it instead of redoing it.  The
# products run the same steps (make_plan, product_finite, epilogue), so they
# give the unprepared product's bits.

PREPARABLE_MODES = ("exact", "fast")

# Exact mode fixes a prepared side's slice width when it is made, before any
# data: the cheapest width for data rows spanning DATA_SPAN_HINT bits (float64
# rows of entries within a few binades: 53 bits and some); each product then
# picks the data side's width beside it (exact_sizes_beside).
DATA_SPAN_HINT = 64

# A prepared exact-mode side's residues are made for MODULI_HEADROOM moduli
# more than its first product needs: the count follows the data's span, and the
# residues of fewer moduli are a prefix (the first m of the table), so products
# whose data span a few bits more reuse them.
MODULI_HEADROOM = 2


def check_preparable(mode):
    """ValueError unless operands of ``mode`` can be prepared (PREPARABLE_MODES)."""
    if mode not in PREPARABLE_MODES:
        raise ValueError(f"an operand can be prepared for mode 'exact' or 'fast', not {mode!r}: accurate "
                         "mode's scaling couples both operands (its bound GEMM of |A||B| sets every row's and "
                         "column's bottom), and certified mode's with it; multiply unprepared operands in that mode")


def prepare(X, side, mode, num_moduli, backend, dtype=None):
    """The (batch, r, c) stack X made ready as A (side "left") or B ("right") of products
    in ``mode`` ("exact" or "fast") with ``num_moduli`` (None: the mode's choice): a Prepared.
    ``dtype``: the operand's own dtype where X is its exact widening (float32 or complex64
    operands run as float64/complex128), what the Prepared's ``dtype`` says (None: X's)."""
    check_preparable(mode)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    return Prepared(_Ready(X, side, mode, num_moduli, backend, dtype), 0, X.shape[0])


def prepare_pair(X, low, side, num_moduli, backend):
    """The (batch, r, c) stacks X and low made ready as one exact-mode operand whose
    entries are the exact sums X + low (ozaki.fft's constants: correctly rounded roots of
    unity beside their remainders, rounded to a grid: fft.plans.product_roots).  Products
    with it are the correctly rounded exact products with X + low, as [x, x] @ [X; low] is,
    on an inner dimension half as long: its residues are X's and low's added mod p, under
    one slice wide enough for every row (a narrower slicing of the sums would carry between
    slices).

    Every X + low must round to X (low at most half an ulp of X, zero where X is, finite;
    ValueError otherwise): the IEEE fix-ups (NaN, inf, the signs of zero results) read
    X, which then has the sums' zeros, signs and specials.  A ``num_moduli`` too few for
    the one wide slice beside the data's narrowest raises ValueError at the product."""
    xp = backend.xp
    if X.shape != low.shape or X.dtype != low.dtype:
        raise ValueError(f"prepare_pair: X and low differ: {X.shape} {X.dtype} and {low.shape} {low.dtype}")
    def rounds(x, lo):                  # of one real part
        return (((x + lo) == x) & ((x != 0) | (lo == 0)) | (xp.isnan(x) & (lo == 0))).all()

    with np.errstate(invalid="ignore", over="ignore"):
        ok = rounds(X.real, low.real) & rounds(X.imag, low.imag) if X.dtype.kind == "c" else rounds(X, low)
    if not bool(host.read(ok)):
        raise ValueError("prepare_pair: every X + low must round to X (|low| <= ulp(X) / 2, zero where X is "
                         "zero, finite)")
    return Prepared(_Ready(X, side, "exact", num_moduli, backend, low=low), 0, X.shape[0])


class _Ready:
    """What a Prepared stack keeps, shared by its batch windows."""

    def __init__(self, array, side, mode, num_moduli, backend, dtype=None, low=None):
        xp = backend.xp
        self.array, self.side, self.mode, self.num_moduli, self.backend = array, side, mode, num_moduli, backend
        self.dtype = np.dtype(array.dtype if dtype is None else dtype)
        self.rows_per_matrix = array.shape[1] if side == "left" else array.shape[2]
        self.parts, self.joined = operand_rows(backend, array, side)
        self.low_parts = None                # prepare_pair: the remainders' rows
        self.lock = threading.Lock()
        self.residue_stacks = {}        # key -> (moduli count, per part the residue slices of every row)
        self.quarter = None             # the sign of a DFT matrix's quarter turns (set by ozaki.fft's plans)
        self.width, self.slices = 0, 1
        if array.size == 0:             # no product reads it (matmul_stack returns zeros)
            return
        k = self.joined.shape[1]
        if mode == "exact":
            if low is None:
                self.beta, span, self.flags = exact_side(xp, backend, self.joined)
            else:
                self.low_parts, low_joined = operand_rows(backend, low, side)
                self.beta, span, self.flags = exact_pair_side(xp, backend, self.joined, low_joined)
            # under a graph's speculation: planned for a few bits more, any narrower span
            # checked on the device (a plan for wider rows carries narrower ones exactly)
            self.span, = to_host_ints(xp, [span], lambda v: ([0], v), lambda v: [v[0] + SPECULATED_SPAN_ROOM])
            if low is None:
                self.width = exact_sizes(self.span, DATA_SPAN_HINT, k, num_moduli)[0]
            else:
                self.width = -(-max(self.span, 1) // SLICE_QUANTUM) * SLICE_QUANTUM
                most = crt.usable_bits(crt.max_num_moduli())
                if self.width + SLICE_QUANTUM + _clog2(k) > most:
                    raise ValueError(f"prepare_pair: the sums' rows span {self.span} bits, more than one slice "
                                     f"beside the narrowest data slice can carry in {most} bits")
            self.slices = -(-max(self.span, 1) // self.width)
        else:
            self.fast = fast_side(xp, backend, self.joined)

    def residues(self, plan):
        """Per part (and Karatsuba sum) the residue slices of every row, for at least the plan's moduli.

        Exact mode: one stack, remade with more moduli when a product needs more.  Fast
        mode: the bottoms keep bits for the plan's count (fast_bits), so one stack per
        count (the default count follows the result's dtype: float64 or float32)."""
        m = plan.num_moduli
        key = self.mode if self.mode == "exact" else m
        with self.lock:
            got = self.residue_stacks.get(key)
            if got is None or got[0] < m:
                if self.mode == "exact":
                    mods, beta = min(m + MODULI_HEADROOM, crt.max_num_moduli()), self.beta
                else:
                    mods, beta = m, fast_bottoms(self.backend.xp, self.fast, fast_bits(m)[self.side == "right"])[0]
                got = _part_residues(self.parts, beta, self.width, plan, self.slices, self.backend, mods)
                if self.low_parts is not None:         # one slice: the sums' residues
                    low = _part_residues(self.low_parts, beta, self.width, plan, self.slices, self.backend, mods)
                    got = [[self.backend.add_residues(h, l, mods) for h, l in zip(hs, ls)] for hs, ls in zip(got, low)]
                got = (mods, got)
                self.residue_stacks[key] = got
            return host.keep(got)[1]      # a graph reading them keeps them past a remake

    def quarter_residues(self, plan):
        """Per part the one slice (m, n, n / 4) of _quarter_product's four matrices F[:q, s::4]
        (as B^T rows, product s's after product s - 1's), for the plan's m moduli: from the
        residues of every row, kept (one copy per moduli count the residues were made for)."""
        m = plan.num_moduli
        full = self.residues(plan)
        mods = full[0][0].shape[0]
        with self.lock:
            got = self.residue_stacks.get(("quarter", self.mode, mods))
            if got is None:
                xp = self.backend.xp
                n = full[0][0].shape[1]
                cols = quarter_index(xp, n)
                got = (mods, [[xp.ascontiguousarray(part[0][:, cols, :n // 4])] for part in full])
                stale = [k for k in self.residue_stacks if isinstance(k, tuple) and k[:2] == ("quarter", self.mode)]
                for key in stale:                         # made for fewer moduli: superseded
                    del self.residue_stacks[key]
                self.residue_stacks[("quarter", self.mode, mods)] = got
        return [[r[:m] for r in part] for part in host.keep(got)[1]]

    @property
    def nbytes(self):
        stacks = [r for _, parts in self.residue_stacks.values() for part in parts for r in part]
        low = sum(p.nbytes for p in self.low_parts or ())
        return self.array.nbytes + sum(p.nbytes for p in self.parts) + low + sum(r.nbytes for r in stacks)


class Prepared:
    """A constant operand of many products, made ready once (``prepare``; ``ozaki.prepare``).

    It keeps what the pipeline reads of its side and does not depend on the
    other operand: the rows (operand_rows), per-row flags, exact mode's bottoms,
    span and slice width or fast mode's norm bottoms, and the backend's residue
    stacks (made at the first product, kept).  ``matmul_stack`` takes it as A
    (side "left") or B ("right"); ``p[g0:g1]`` is matrices g0..g1 of the stack,
    sharing what is kept.
    """

    matrix = False        # made from one matrix (ozaki.prepare), not a stack

    def __init__(self, ready, g0, g1):
        self._ready, self._window = ready, (g0, g1)

    side = property(lambda self: self._ready.side)
    mode = property(lambda self: self._ready.mode)
    num_moduli = property(lambda self: self._ready.num_moduli)
    backend = property(lambda self: self._ready.backend)
    width = property(lambda self: self._ready.width)
    dtype = property(lambda self: self._ready.dtype)      # the operand's (its stack: widened to float64)

    @property
    def quarter(self):
        """The sign of the quarter turns of the DFT matrix it holds (ozaki.fft: its plans set it),
        or None: products with it may run as _quarter_product."""
        return self._ready.quarter

    @quarter.setter
    def quarter(self, sign):
        self._ready.quarter = sign
    nbytes = property(lambda self: self._ready.nbytes)

    @property
    def stack_size(self):
        """The matrices of the whole stack it was made from (a window may show fewer)."""
        return self._ready.array.shape[0]

    @property
    def shape(self):
        g0, g1 = self._window
        return (g1 - g0,) + self._ready.array.shape[1:]

    @property
    def array(self):
        """The stack itself (the IEEE fix-ups read it)."""
        g0, g1 = self._window
        return self._ready.array[g0:g1]

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a Prepared operand takes only a slice of its stack")
        g0, g1, _ = key.indices(self.shape[0])
        return Prepared(self._ready, self._window[0] + g0, self._window[0] + max(g0, g1))

    def _rows(self):
        r = self._ready.rows_per_matrix
        return slice(self._window[0] * r, self._window[1] * r)

    def rows(self):
        """(parts, joined) of the window, as operand_rows."""
        w = self._rows()
        return [p[w] for p in self._ready.parts], self._ready.joined[w]

    def exact_side(self):
        """exact_side's facts of the window (span a host int: the stack's)."""
        w, r = self._rows(), self._ready
        return r.beta[w], r.span, r.flags[w]

    def fast_side(self):
        """fast_side's facts of the window."""
        w = self._rows()
        return tuple(f[w] for f in self._ready.fast)

    @property
    def pair(self):
        """Whether it is an exact pair X + low (prepare_pair)."""
        return self._ready.low_parts is not None

    def fits(self, width, count):
        """Whether its residues are cut as a product's plan cuts its side (exact_sizes_beside)."""
        return (width, count) == (self._ready.width, self._ready.slices)

    def quarter_residues(self, plan):
        """_quarter_product's residues of the one matrix (_Ready.quarter_residues)."""
        return self._ready.quarter_residues(plan)

    def residues(self, plan, lo, hi):
        """The residues of rows lo..hi of the window under ``plan``, as _part_residues makes them."""
        xp = self.backend.xp
        w = self._rows()
        rows = slice(w.start + lo, min(w.start + hi, w.stop))      # as X[lo:hi] of the window's rows
        m = plan.num_moduli
        return [[r[:m, rows] for r in part] for part in self._ready.residues(plan)]    # views: read in place


