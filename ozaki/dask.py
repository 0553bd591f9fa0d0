"""ozaki products and FFTs on dask arrays: the bits of ``ozaki.matmul`` at any chunking.

    >>> import dask.array as da, ozaki.dask
    >>> A = da.random.standard_normal((4000, 3000), chunks=(1000, 700))
    >>> B = da.random.standard_normal((3000, 2000), chunks=(900, 1000))
    >>> C = ozaki.dask.matmul(A, B, mode="exact")      # lazy, like any dask array
    >>> # C.compute() has the bits of ozaki.matmul(A.compute(), B.compute(), mode="exact")

The pipeline of ozaki/scheme.py laid out on dask.array's own graph machinery
(blockwise layers and tree reductions; any dask scheduler runs it, numpy or
cupy chunks):

    plan      the scales of whole rows of A and columns of B: blockwise scans of
              every block, reduced over the k chunks (maxima, flags; the fast
              mode's exact sums of squared ceilings; the accurate mode's bound
              GEMM of ceilings, summed over the k chunks exactly, then maximized
              over rows and columns; the exact mode's top and lowest bits, and
              from their global spans the slice width and moduli count: these
              depend on the data, so they are a one-chunk array of the graph)
    products  per output block (i, j) and inner chunk c: the residues of the
              two blocks under those scales, one exact GEMM per modulus and
              slice pair, each reduced to a residue mod p_i of magnitude at
              most p_i / 2 (int16 planes); plus, where the rows or columns hold
              zeros or NaN/inf, the IEEE state of the chunk's terms as bit flags
              (one more plane per output part)
    sum       a tree reduction over c: residues add, flags OR.  The sum of the
              chunks' residues is C' mod p_i for the whole inner dimension, and
              the backend's epilogue takes any representatives of C' mod p_i
    epilogue  per output block the backend's own epilogue: CRT into Kulisch
              limbs and ONE rounding at 2**(beta_i + beta_j); then the IEEE
              fix-ups from the flags

Everything before the epilogue is exact and the scales are those of the whole
rows and columns, so every output block is RN(A'B' 2**(beta_i + beta_j)) with
ozaki.matmul's own integers A', B' and exponents beta: the same bits at any
chunking of m, n and k, under any scheduler, with any number of workers.

Residues rather than Kulisch limbs are carried between the k chunks because
the backends' epilogue (on the GPU one kernel: CRT, limbs, rounding) takes
residues; 2 bytes per modulus and entry against 8 per limb.  The residues of
a block are computed in the product task itself, from the raw float64 blocks,
rather than in a layer of their own: a block's residues take 16 or more bytes
per entry (one per modulus and slice) against its 8 raw bytes, so shipping
the raw blocks between workers moves less data and keeps less in memory, and
recomputing them per output block costs O(1/block width) of the GEMMs (on
the GPU; on the CPU numpy's residues are slow next to its BLAS, and they are
a good part of what the chunked product costs beyond the whole one).

Memory per task: one block pair's residues, one modulus stack of int32/int64
products at a time, and the (planes, rows, cols) int16 partial: size the
chunks for it (about 2 (moduli + 1) bytes per output entry of a chunk, times
the slice pairs in exact mode).  With cupy chunks, run one task per GPU at a
time (dask-cuda's one thread per worker; the threaded scheduler with
num_workers=1): several tasks on one GPU multiply that memory.

FFTs (``fft``, ``ifft``, ``fftn``, ...) run ozaki.fft block by block along
axes that are one chunk each (a chunked transform axis is a ValueError).  In
exact mode (their default) every transform is rounded from its own exact
values, so the bits equal ozaki.fft's on the whole array when each block holds
at least ozaki.fft.FOLD_MIN_ROWS transforms or the length takes one DFT GEMM
(fewer rows switch a long transform's second stage to another exact path,
whose result agreed in every trial but is not proven bit-equal); in the other
modes a GEMM's column scales see all rows of its block.
"""

import functools

import dask.array as da
import numpy as np

from . import _as_float as _as_float_array, backend_for, crt, get_config, scheme
from . import _result_dtype as _matmul_result_dtype, _wide
from . import fft as _ozfft
from . import gemm as substrates
from .crt.kulisch import LIMB_BITS

__all__ = ["matmul", "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn"]

# Fields of the plan's per-row scan, float64 (all exact: maxima, 0/1 flags, integers
# below 2**31), each combined over the k chunks by a maximum.
_AMAX, _NONFINITE, _ZERO, _TOP, _NEG_LSB = range(5)
_FIELDS = 5
_NO_BITS = float(1 << 30)   # top/-lsb of a row with no nonzero finite entry in a block

# IEEE state of one output entry's terms over a k chunk; ORed over the chunks.
_NAN, _PLUS, _MINUS, _NOT_NEG_ZERO = 1, 2, 4, 8

# The modes whose plans this module reduces over chunks (a mode the scheme adds later
# must not fall through to another's plan).
_PLANNED = ("fast", "accurate", "exact")

# Partial products are residues of magnitude <= 128 summed over the k chunks:
# int16 holds the sum of up to 255 chunks, int32 anything longer.
_INT16_CHUNKS = 255


# ---------------------------------------------------------------- per block --

def _parts(x):
    """The real matrices a row joins (the scheme's complex rows are [Re | Im])."""
    return [x.real, x.imag] if x.dtype.kind == "c" else [x]


def _rows(x, columns, be):
    """The block's rows per part: A's rows, or B's columns as rows (the scheme's B^T)."""
    return [be.transposed(p) if columns else p for p in _parts(x)]


def _only(x):
    """The one block blockwise hands over, as a (nested) list, along a contracted
    single-chunk axis (concatenate=False)."""
    while isinstance(x, list):
        (x,) = x
    return x


def _scan_block(x, columns, exact):
    """Per row of a block of A (per column of B when ``columns``), the plan's scan:
    (rows, 1, _FIELDS) float64 whose maximum over the k chunks is the whole row's:
    amax over finite entries, has NaN/inf, has a zero (scan_rows), and for the exact
    mode top and -lsb (scheme._row_bits; sentinels where the block has no bits)."""
    be = backend_for(x)
    xp = be.xp
    rows = _rows(x, columns, be)
    out = xp.zeros((rows[0].shape[0], 1, _FIELDS), dtype=xp.float64)
    out[:, 0, _TOP:] = -_NO_BITS
    for X in rows:
        if X.size == 0:
            continue
        amax, flags, _, _, _ = be.scan_rows(X)
        out[:, 0, _AMAX] = xp.maximum(out[:, 0, _AMAX], amax)
        out[:, 0, _NONFINITE] = xp.maximum(out[:, 0, _NONFINITE], (flags & 1) != 0)
        out[:, 0, _ZERO] = xp.maximum(out[:, 0, _ZERO], (flags & 2) != 0)
        if exact:
            top, lsb = scheme._row_bits(xp, be, X)
            none = top == lsb                    # _row_bits's (0, 0): no nonzero finite entry
            out[:, 0, _TOP] = xp.maximum(out[:, 0, _TOP], xp.where(none, -_NO_BITS, top))
            out[:, 0, _NEG_LSB] = xp.maximum(out[:, 0, _NEG_LSB], xp.where(none, -_NO_BITS, -lsb))
    return out


def _flags_block(stats):
    """scan_rows's flags of whole rows: bit 0 NaN/inf, bit 1 a zero."""
    xp = backend_for(stats).xp
    return (stats[:, _NONFINITE] + 2 * stats[:, _ZERO]).astype(xp.int8)


def _ceil_exponent_block(stats, ceil_bits):
    """scan_rows's e = ceil_bits - frexp_exponent(amax) of whole rows."""
    xp = backend_for(stats).xp
    return ceil_bits - scheme._frexp_exponent(xp, stats[:, _AMAX])


def _ceilings(xp, X, e):
    """scan_rows's integer ceilings c = ceil(|x| 2**e) (1 for nonzero values that
    underflow, 0 for zeros and NaN/inf), with e from the WHOLE row's maximum.

    A copy of the formula in numpy_backend.scan_rows (and kernels/scan_rows.cu),
    which takes e from the block's own maximum; scan_rows taking the whole rows'
    maxima (an ``amax=`` argument) would make this copy unnecessary."""
    a = xp.where(xp.isfinite(X), xp.abs(X), 0.0)
    return xp.where(a != 0, xp.maximum(xp.ceil(xp.ldexp(a, e[:, None].astype(xp.int32))), 1), 0)


def _sum_squares_block(x, e, columns):
    """The fast mode's sum of squared 15-bit ceilings of a block's rows, int64 (rows, 1):
    exact integers, so their sum over the k chunks is the whole row's in any order."""
    be = backend_for(x)
    xp = be.xp
    total = xp.zeros(e.shape[0], dtype=xp.int64)
    for X in _rows(x, columns, be):
        c = _ceilings(xp, X, e).astype(xp.int64)
        total += (c * c).sum(axis=1)
    return total[:, None]


def _fast_bottoms_block(sumsq, e, bits):
    """scheme.plan_fast's bottoms from the whole rows' sums of squares."""
    xp = backend_for(sumsq).xp
    return scheme.fast_bottoms(xp, (scheme.norm_exponents(xp, sumsq, e), sumsq == 0, None), bits)[0]


def _bound_block(a, b, ea, eb):
    """The accurate mode's bound GEMM on one block pair over its k chunk:
    ceil(|A| 2**ea) ceil(|B| 2**eb), exact, int64 (rows, cols, 1).  Complex rows add the
    ceilings of both parts (5 bits each), as scheme.plan_accurate with parts=2."""
    be = backend_for(a)
    xp = be.xp
    hats = [sum(_ceilings(xp, X, e) for X in _rows(x, columns, be)).astype(xp.int8)
            for x, e, columns in ((a, ea, False), (b, eb, True))]
    return be.gemm(hats[0][None], hats[1][None])[0, 0].astype(xp.int64)[:, :, None]


def _accurate_bottoms_block(mmax, e, bound):
    """scheme.plan_accurate's bottoms from the maxima of the whole bound GEMM."""
    return backend_for(mmax).bound_bottoms(mmax, e, bound)


def _exact_bits_block(stats, what):
    """Whole rows' lowest set bit ("lsb": the exact mode's bottom) or top - lsb ("span"),
    0 for rows without nonzero finite entries (as scheme._row_bits)."""
    xp = backend_for(stats).xp
    none = stats[:, _NEG_LSB] == -_NO_BITS
    lsb = xp.where(none, 0, -stats[:, _NEG_LSB]).astype(xp.int64)
    if what == "lsb":
        return lsb
    return xp.where(none, 0, stats[:, _TOP]).astype(xp.int64) - lsb


def _exact_sizes_block(spans, k, num_moduli):
    """The exact mode's sizes as a block: int64 (5,) on the host, from the (2,) spans."""
    sizes = scheme.exact_sizes(int(spans[0]), int(spans[1]), k, num_moduli) + (False,)   # (.., nearest)
    return np.array([w or 0 for w in sizes], dtype=np.int64)


def _sizes(sizes):
    """(width, moduli, slices_a, slices_b, nearest) from a tuple or the exact mode's block
    (which blockwise hands over as a list, its axis being contracted)."""
    if isinstance(sizes, tuple):
        return sizes
    w, m, ta, tb, nearest = (int(v) for v in _only(sizes))
    return (w or None, m, ta, tb, bool(nearest))


def _found(xp, flags_a, flags_b):
    """The backend's flags_found over these rows and columns: bit 0 NaN/inf, bit 1 zeros.
    The fix-ups change only entries whose row or column holds such values, so
    deciding them per output block gives the whole product's result."""
    return backend_for(flags_a).flags_found(flags_a, flags_b)


def _ieee_operands(xp, a, b):
    """The real products whose IEEE rules each output part follows (as in
    scheme._stack_piece): A @ B; complex: Re = [Ar, -Ai][Br; Bi], Im = [Ar, Ai][Bi; Br]."""
    if a.dtype.kind != "c":
        return [(a, b)]
    Ar, Ai, Br, Bi = a.real, a.imag, b.real, b.imag
    return [(xp.concatenate([Ar, -Ai], axis=-1), xp.concatenate([Br, Bi], axis=-2)),
            (xp.concatenate([Ar, Ai], axis=-1), xp.concatenate([Bi, Br], axis=-2))]


def _ieee_bits(xp, a, b, found, out):
    """The IEEE state of a chunk's terms into ``out`` (parts, rows, cols), from the
    scheme's own fix-ups applied to zeros: signed_zeros gives -0 where every term of
    the chunk is -0 (the whole: every chunk), special_values NaN/+inf/-inf (the whole:
    NaN if any chunk's is, or +inf and -inf meet; else the infinity)."""
    out[...] = 0
    if not found:
        return
    for o, (x, y) in enumerate(_ieee_operands(xp, a, b)):
        zero = xp.zeros(out.shape[1:], dtype=xp.float64)
        bits = xp.zeros(out.shape[1:], dtype=xp.int8)
        if found & 2:
            bits |= xp.where(xp.signbit(scheme.signed_zeros(xp, x, y, zero)), 0, _NOT_NEG_ZERO).astype(xp.int8)
        if found & 1:
            s = scheme.special_values(xp, x, y, zero)
            bits |= (xp.isnan(s) * _NAN + (s == xp.inf) * _PLUS + (s == -xp.inf) * _MINUS).astype(xp.int8)
        out[o] = bits


def _apply_ieee(xp, C, bits, found):
    """scheme._ieee_fixups from the terms' state ORed over every k chunk."""
    if found & 2:
        C = xp.where((bits & _NOT_NEG_ZERO) == 0, -0.0, C)
    if found & 1:
        nan, plus, minus = (bits & _NAN) != 0, (bits & _PLUS) != 0, (bits & _MINUS) != 0
        C = xp.where(plus, xp.inf, C)
        C = xp.where(minus, -xp.inf, C)
        C = xp.where(nan | (plus & minus), xp.nan, C)
    return C


@functools.lru_cache(maxsize=None)
def _cupy_symmetric():
    # One pass, int32/int64 products -> int16 symmetric residues; the generic
    # crt.symmetric is three integer passes and a cast over every product.
    import cupy
    return cupy.ElementwiseKernel(
        "T v, T p", "S r",
        "T h = p / 2; T q = v % p; if (q < 0) q += p; r = (S)(q > p - 1 - h ? q - p : q);",
        "ozaki_dask_symmetric")


# Products below 2**35 in magnitude reduce exactly in float64 (crt.remainder_near);
# a product of k int8 residues is below k 2**14.
_FLOAT_REMAINDER_K = 1 << 21


def _residues_into(xp, P, mods, k, out):
    """out = a residue of each exact product P mod p_i, |out| <= p_i / 2 (so sums of 255
    of them fit int16): crt.symmetric's residues, or on the CPU crt.remainder_near's
    (4 float64 passes instead of 3 int64 divisions; +128 can stand for -128 mod 256)."""
    p = np.array(crt.moduli(mods), dtype=np.int64).reshape(-1, 1, 1)
    if xp is not np:
        _cupy_symmetric()(P, xp.asarray(p).astype(P.dtype), out)
    elif k < _FLOAT_REMAINDER_K:
        out[...] = crt.remainder_near(P.astype(np.float64), p.astype(np.float64))
    else:
        out[...] = crt.symmetric(P, p)


def _block_products(a, b, beta_a, beta_b, flags_a, flags_b, sizes, substrate, dtype):
    """Output block (i, j) over inner chunk c: (1, planes, rows, cols) of ``dtype``.

    Planes: per slice pair (t, u) and product h (real: A B; complex: the Karatsuba
    Ar Br, Ai Bi, (Ar + Ai)(Br + Bi)) a residue (|r| <= p_i / 2) of the exact int8
    product mod each p_i, then one plane of IEEE bits per output part."""
    be = backend_for(a)
    xp = be.xp
    width, mods, slices_a, slices_b, nearest = _sizes(sizes)
    nout = 2 if a.dtype.kind == "c" else 1
    rows, cols = a.shape[0], b.shape[1]
    groups = slices_a * slices_b * (3 if nout == 2 else 1)
    out = xp.empty((1, groups * mods + nout, rows, cols), dtype=dtype)
    if out.size == 0:
        return out
    plan = scheme.Plan(None, mods, width, beta_a, beta_b, slices_a, slices_b, (), nearest)
    # per part (complex: Re, Im and their sum mod p) the residues of each slice, as scheme.product_finite
    ra = scheme._part_residues(_rows(a, False, be), beta_a, width or 0, plan, slices_a, be)
    rb = scheme._part_residues(_rows(b, True, be), beta_b, width or 0, plan, slices_b, be)
    g = 0
    for t in range(slices_a):
        for u in range(slices_b):
            for h in range(len(ra)):
                P = substrates.product(be, substrate, ra[h][t], rb[h][u])[0]
                _residues_into(xp, P, mods, a.shape[1], out[0, g * mods:(g + 1) * mods])
                del P
                g += 1
    del ra, rb
    _ieee_bits(xp, a, b, _found(xp, flags_a, flags_b), out[0, groups * mods:])
    return out


def _flat(blocks):
    if not isinstance(blocks, list):
        yield blocks
        return
    for x in blocks:
        yield from _flat(x)


def _keep(x, axis=None, keepdims=True):
    return x


def _add_partials(blocks, axis=None, keepdims=True, nout=1):
    """Partial products of several k chunks as one: residue planes add (each sum is
    still a representative of the exact product mod p_i), IEEE planes OR."""
    blocks = list(_flat(blocks))
    out = blocks[0]
    for y in blocks[1:]:
        s = out + y
        s[:, -nout:] = out[:, -nout:] | y[:, -nout:]
        out = s
    return out if keepdims else out[0]


def _block_epilogue(S, beta_a, beta_b, flags_a, flags_b, sizes, complex_, dtype):
    """Output block (i, j) of ``dtype`` from the residues summed over every k chunk: the
    backend's epilogue (CRT, Kulisch sum of the slice pairs, one rounding to float64 or
    float32), then the IEEE fix-ups."""
    S = _only(S)
    be = backend_for(S)
    xp = be.xp
    width, mods, slices_a, slices_b, _ = _sizes(sizes)
    rows, cols = S.shape[1:]
    part = np.finfo(dtype).dtype
    if rows == 0 or cols == 0:
        return xp.zeros((rows, cols), dtype=dtype)
    nout, h = (2, 3) if complex_ else (1, 1)
    pairs = slices_a * slices_b
    R = S[:pairs * h * mods].reshape(pairs, h, mods, rows, cols)
    if xp is not np:
        R = R.astype(xp.int32)           # the GPU epilogue reads int32 (or int64) products
    products = [tuple(R[q, i] for i in range(h)) for q in range(pairs)]
    shifts = [(t + u) * (width or 0) // LIMB_BITS for t in range(slices_a) for u in range(slices_b)]
    outs = be.epilogue(products, shifts, mods, beta_a, beta_b, part)
    del R, products
    found = _found(xp, flags_a, flags_b)
    outs = [_apply_ieee(xp, c, S[pairs * h * mods + o], found).astype(part, copy=False) for o, c in enumerate(outs)]
    return be.complex_of(*outs) if complex_ else outs[0]


def _zeros_block(a, b, dtype):
    """An empty product's block (k contracted: lists of the k chunks)."""
    a, b = next(_flat(a)), next(_flat(b))
    xp = backend_for(a).xp
    return xp.zeros((a.shape[0], b.shape[-1]), dtype=dtype)


# ---------------------------------------------------------------- the graph --

def _meta(x, ndim, dtype):
    """An empty array of x's chunk type (numpy or cupy): what dask calls the meta."""
    return backend_for(x._meta).xp.empty((0,) * ndim, dtype=dtype)


def _sum_over(x, axis):
    """Sum of integer blocks over ``axis`` in a tree, without concatenating them."""
    return da.reduction(x, _keep, _add_chunks, axis=axis, dtype=x.dtype,
                        concatenate=False, meta=_meta(x, x.ndim - 1, x.dtype))


def _add_chunks(blocks, axis, keepdims):
    blocks = list(_flat(blocks))
    out = functools.reduce(lambda s, y: s + y, blocks)
    return out if keepdims else out.squeeze(axis)


def _stats(x, columns, exact):
    """Per row of A (columns: per column of B): the scan of the whole row, (rows, _FIELDS)."""
    if columns:
        out, ind = "jcf", "cj"
    else:
        out, ind = "icf", "ic"
    s = da.blockwise(_scan_block, out, x, ind, columns, None, exact, None, new_axes={"f": _FIELDS},
                     adjust_chunks={"c": 1}, dtype=np.float64, meta=_meta(x, 3, np.float64))
    return s.max(axis=1)


def _per_row(fn, stats, *args, dtype=np.int64):
    return stats.map_blocks(fn, *args, drop_axis=1, dtype=dtype, meta=_meta(stats, 1, dtype))


def _plan(a, b, mode, num_moduli, dtype):
    """The dask pieces of the plan (``dtype``: the result's, for the default moduli
    count): beta_a (m,), beta_b (n,), flags_a, flags_b, and
    sizes = (width, moduli, slices_a, slices_b, nearest): a tuple, or in exact mode
    (where they depend on the data) a dask array of those 5 integers, one chunk."""
    parts = 2 if a.dtype.kind == "c" else 1
    k = a.shape[1]
    exact = mode == "exact"
    sa, sb = _stats(a, False, exact), _stats(b, True, exact)
    flags_a = _per_row(_flags_block, sa, dtype=np.int8)
    flags_b = _per_row(_flags_block, sb, dtype=np.int8)
    if exact:
        beta_a, beta_b = _per_row(_exact_bits_block, sa, "lsb"), _per_row(_exact_bits_block, sb, "lsb")
        spans = da.stack([_per_row(_exact_bits_block, x, "span").max() for x in (sa, sb)]).rechunk(2)
        sizes = spans.map_blocks(_exact_sizes_block, parts * k, num_moduli, chunks=(5,), dtype=np.int64,
                                 meta=np.empty((0,), dtype=np.int64))
        return beta_a, beta_b, flags_a, flags_b, sizes
    # The scheme counts a complex row's joined width, parts * k, for the default.
    m = scheme.default_num_moduli(mode, parts * k, dtype) if num_moduli is None else num_moduli
    crt.moduli(m)                                     # validates the count
    if mode == "fast":
        bottoms = []
        for x, stats, bits, (out, ind) in zip((a, b), (sa, sb), scheme.fast_bits(m), (("ic", "ic"), ("jc", "cj"))):
            e = _per_row(_ceil_exponent_block, stats, 15)
            sq = da.blockwise(_sum_squares_block, out, x, ind, e, out[0], out == "jc", None,
                              adjust_chunks={"c": 1}, dtype=np.int64, meta=_meta(x, 2, np.int64))
            sumsq = _sum_over(sq, 1)
            bottoms.append(da.map_blocks(_fast_bottoms_block, sumsq, e, bits, dtype=np.int64,
                                         meta=_meta(x, 1, np.int64)))
        return bottoms[0], bottoms[1], flags_a, flags_b, (None, m, 1, 1, False)
    bound = crt.crt_bound_float(m)
    ea = _per_row(_ceil_exponent_block, sa, 7 - parts)
    eb = _per_row(_ceil_exponent_block, sb, 7 - parts)
    M = _sum_over(da.blockwise(_bound_block, "ijc", a, "ic", b, "cj", ea, "i", eb, "j",
                               adjust_chunks={"c": 1}, dtype=np.int64, meta=_meta(a, 3, np.int64)), 2)
    beta_a = da.map_blocks(_accurate_bottoms_block, M.max(axis=1), ea, bound, dtype=np.int64,
                           meta=_meta(a, 1, np.int64))
    beta_b = da.map_blocks(_accurate_bottoms_block, M.max(axis=0), eb, bound, dtype=np.int64,
                           meta=_meta(a, 1, np.int64))
    nearest = k * 2 ** 12 <= bound
    return beta_a, beta_b, flags_a, flags_b, (None, m, 1, 1, nearest)


def _matmul2d(a, b, mode, num_moduli, substrate, dtype):
    """The product of float64/complex128 matrices, rounded to ``dtype`` (ozaki.matmul's
    result dtype: float64, complex128, float32 or complex64)."""
    _, (a, b) = da.core.unify_chunks(a, "ik", b, "kj")      # common k chunks (bits do not care)
    m, k = a.shape
    n = b.shape[1]
    complex_ = a.dtype.kind == "c"
    if m == 0 or n == 0 or k == 0:
        return da.blockwise(_zeros_block, "ij", a, "ik", b, "kj", dtype, None, dtype=dtype,
                            meta=_meta(a, 2, dtype))
    # dask's reductions give empty chunks odd shapes: the product runs without them,
    # and the result gets the chunks back at the end (a chunk boundary moves no data).
    chunks = (a.chunks[0], b.chunks[1])
    a = a.rechunk(tuple(tuple(c for c in cs if c) for cs in a.chunks))
    b = b.rechunk(tuple(tuple(c for c in cs if c) for cs in b.chunks))
    C = _product(a, b, mode, num_moduli, substrate, complex_, dtype)
    return C if C.chunks == chunks else C.rechunk(chunks)


def _product(a, b, mode, num_moduli, substrate, complex_, dtype):
    beta_a, beta_b, flags_a, flags_b, sizes = _plan(a, b, mode, num_moduli, dtype)
    nout = 2 if complex_ else 1
    if isinstance(sizes, tuple):
        planes = sizes[2] * sizes[3] * (3 if complex_ else 1) * sizes[1] + nout
        size_arg = (sizes, None)
    else:
        planes = np.nan                               # exact mode: known when computed
        size_arg = (sizes, "z")                       # its one block to every task
    pdtype = np.int16 if a.numblocks[1] <= _INT16_CHUNKS else np.int32
    P = da.blockwise(_block_products, "cpij", a, "ic", b, "cj", beta_a, "i", beta_b, "j",
                     flags_a, "i", flags_b, "j", *size_arg, substrate, None, pdtype, None,
                     new_axes={"p": planes}, adjust_chunks={"c": 1}, dtype=pdtype,
                     meta=_meta(a, 4, pdtype))
    add = functools.partial(_add_partials, nout=nout)
    S = da.reduction(P, _keep, add, combine=add, axis=0, dtype=pdtype, concatenate=False,
                     meta=_meta(a, 3, pdtype))
    return da.blockwise(_block_epilogue, "ij", S, "pij", beta_a, "i", beta_b, "j", flags_a, "i",
                        flags_b, "j", *size_arg, complex_, None, dtype, None, concatenate=False, dtype=dtype,
                        meta=_meta(a, 2, dtype))


def _chunk_kind(x):
    return type(x._meta).__module__.split(".")[0]


def _as_dask(x):
    if isinstance(x, da.Array):
        return x
    if type(x).__module__.split(".")[0] == "cupy":
        return da.from_array(x, chunks=x.shape, asarray=False)
    return da.asarray(x)


def _options(mode, num_moduli, substrate):
    """Explicit options, else ozaki.config's, checked as ozaki.matmul checks them."""
    cfg = get_config()
    mode = cfg["mode"] if mode is None else mode
    num_moduli = cfg["num_moduli"] if num_moduli is None else num_moduli
    substrate = cfg.get("substrate", "int8") if substrate is None else substrate
    if not isinstance(mode, str) or mode not in scheme.MODES:
        raise ValueError(f"mode must be one of {scheme.MODES}, got {mode!r}")
    if mode not in _PLANNED:
        raise NotImplementedError(f"ozaki.dask.matmul: mode {mode!r} has no dask plan yet "
                                  f"(modes {_PLANNED} have)")
    if not isinstance(substrate, str) or substrate not in substrates.SUBSTRATES:
        raise ValueError(f"substrate must be one of {substrates.SUBSTRATES}, got {substrate!r}")
    if num_moduli is not None:
        if isinstance(num_moduli, bool) or not isinstance(num_moduli, (int, np.integer)):
            raise TypeError(f"num_moduli must be an int or None, got {type(num_moduli).__name__}")
        num_moduli = int(num_moduli)
        if not 1 <= num_moduli <= crt.max_num_moduli():
            raise ValueError(f"num_moduli must be in [1, {crt.max_num_moduli()}], got {num_moduli}")
    return mode, num_moduli, substrate


def _result_dtype(a, b):
    """numpy's result dtype, after refusing what no exact product gives: ozaki.matmul's rule."""
    return _matmul_result_dtype(a, b, "dask.matmul")


def _as_float_block(x, rt, label):
    """A block as float64/complex128 (ozaki.matmul's conversion: exact, integers float64
    cannot hold refused)."""
    return _as_float_array(x, rt, "dask.matmul", label)


def _as_float(x, rt, label):
    """x as float64/complex128, the dtype products of the result type rt run in."""
    rt = _wide(rt)
    if x.dtype == rt:
        return x
    return x.map_blocks(_as_float_block, rt, label, dtype=rt, meta=_meta(x, x.ndim, rt))


def matmul(a, b, /, *, mode=None, num_moduli=None, substrate=None):
    """Matrix product of dask arrays (numpy or cupy chunks), emulated like ``ozaki.matmul``.

    Returns a lazy dask array whose computed value has the bits of
    ``ozaki.matmul(a.compute(), b.compute(), mode=..., num_moduli=...)``, at any
    chunking of the operands and under any scheduler: the scales come from
    reductions over whole rows and columns, the partial products over the k
    chunks are carried as exact residues and summed exactly, and each output
    chunk is rounded once.  Output chunks: a's row chunks by b's column chunks
    (the k chunks of a and b are unified first).

    Same options, dtypes and shape rules as ``ozaki.matmul`` (1-D promotion;
    stacks broadcast and run as one 2-D product per matrix, one per batch
    index).  A numpy or cupy operand next to a dask one is wrapped as a dask
    array.  In exact mode the slice width and moduli count depend on the data:
    they are computed in the graph, so an impossible ``num_moduli`` raises its
    ValueError when the result is computed.
    """
    mode, num_moduli, substrate = _options(mode, num_moduli, substrate)
    a, b = _as_dask(a), _as_dask(b)
    if _chunk_kind(a) != _chunk_kind(b):
        raise TypeError("ozaki.dask.matmul: operands must both have numpy or both cupy chunks, "
                        f"got {_chunk_kind(a)} and {_chunk_kind(b)}")
    for i, v in enumerate((a, b)):
        if v.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions "
                             "(has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    rt = _result_dtype(a, b)
    if rt.kind in "biu":
        return da.matmul(a, b)      # integer products are exact (modulo 2**bits, as numpy's)
    a, b = _as_float(a, rt, "a"), _as_float(b, rt, "b")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature (n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} is different from "
                         f"{a2.shape[-1]})")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a3 = da.broadcast_to(a2, batch + a2.shape[-2:])
    b3 = da.broadcast_to(b2, batch + b2.shape[-2:])

    def stack(x, y):            # one 2-D product per matrix of the stack (each has its own plan)
        if x.ndim == 2:
            return _matmul2d(x, y, mode, num_moduli, substrate, rt)
        return da.stack([stack(x[g], y[g]) for g in range(x.shape[0])])

    out = stack(a3, b3)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


# ---------------------------------------------------------------------- FFT --

def _axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _nd_axes(ndim, s, axes):
    """numpy.fft's rules for s and axes (as ozaki.fft._nd_axes, without reading the array)."""
    if axes is None:
        axes = list(range(ndim)) if s is None else list(range(ndim - len(s), ndim))
    axes = [_axis(ax, ndim) for ax in axes]
    s = [None] * len(axes) if s is None else list(s)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return s, axes


def _fft_input(x):
    x = _as_dask(x)
    if x.ndim == 0:
        raise ValueError("ozaki.fft: input must have at least one dimension")
    return x


def _map_transform(fn, x, along, lengths, real_out, kwargs):
    """ozaki.fft's ``fn`` on every block: the transformed axes must be single chunks
    (every other axis may be chunked); ``lengths`` are the output lengths along them."""
    for ax in along:
        if x.numblocks[ax] != 1:
            raise ValueError(f"ozaki.dask.{fn.__name__}: axis {ax} is split into {x.numblocks[ax]} chunks, "
                             f"and a transform needs it whole: rechunk it first, e.g. x.rechunk({{{ax}: -1}}) "
                             "(the other axes may stay chunked)")
    for n in lengths:
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    chunks = list(x.chunks)
    for ax, n in zip(along, lengths):
        chunks[ax] = (n,)
    dtype = np.float64 if real_out else np.complex128
    return x.map_blocks(fn, chunks=tuple(chunks), dtype=dtype, meta=_meta(x, x.ndim, dtype), **kwargs)


def _transform_1d(fn, x, n, axis, norm, mode, num_moduli, length_of=lambda size, n: size if n is None else n,
                  real_out=False):
    x = _fft_input(x)
    ax = _axis(axis, x.ndim)
    length = length_of(x.shape[ax], None if n is None else int(n))
    return _map_transform(fn, x, [ax], [length], real_out,
                          dict(n=n, axis=ax, norm=norm, mode=mode, num_moduli=num_moduli))


def fft(x, n=None, axis=-1, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.fft`` along an unchunked axis of a dask array, block by block."""
    return _transform_1d(_ozfft.fft, x, n, axis, norm, mode, num_moduli)


def ifft(x, n=None, axis=-1, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.ifft`` along an unchunked axis of a dask array, block by block."""
    return _transform_1d(_ozfft.ifft, x, n, axis, norm, mode, num_moduli)


def rfft(x, n=None, axis=-1, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.rfft`` along an unchunked axis of a dask array, block by block."""
    return _transform_1d(_ozfft.rfft, x, n, axis, norm, mode, num_moduli,
                         lambda size, n: (size if n is None else n) // 2 + 1)


def irfft(x, n=None, axis=-1, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.irfft`` along an unchunked axis of a dask array, block by block."""
    return _transform_1d(_ozfft.irfft, x, n, axis, norm, mode, num_moduli,
                         lambda size, n: 2 * (size - 1) if n is None else n, real_out=True)


def _transform_nd(fn, x, s, axes, norm, mode, num_moduli, real=None):
    """real: None (complex to complex), "forward" (rfftn: the last axis halved) or
    "inverse" (irfftn: the last axis 2 (m - 1) by default; real output)."""
    x = _fft_input(x)
    given = s
    s, axes = _nd_axes(x.ndim, s, axes)
    lengths = [x.shape[ax] if n is None else int(n) for n, ax in zip(s, axes)]
    if real == "forward":
        lengths[-1] = lengths[-1] // 2 + 1
    elif real == "inverse" and s[-1] is None:
        lengths[-1] = 2 * (x.shape[axes[-1]] - 1)
    return _map_transform(fn, x, axes, lengths, real == "inverse",
                          dict(s=given, axes=axes, norm=norm, mode=mode, num_moduli=num_moduli))


def fftn(x, s=None, axes=None, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.fftn`` over unchunked axes of a dask array, block by block."""
    return _transform_nd(_ozfft.fftn, x, s, axes, norm, mode, num_moduli)


def ifftn(x, s=None, axes=None, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.ifftn`` over unchunked axes of a dask array, block by block."""
    return _transform_nd(_ozfft.ifftn, x, s, axes, norm, mode, num_moduli)


def fft2(x, s=None, axes=(-2, -1), norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.fft2`` over unchunked axes of a dask array, block by block."""
    return _transform_nd(_ozfft.fftn, x, s, axes, norm, mode, num_moduli)


def ifft2(x, s=None, axes=(-2, -1), norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.ifft2`` over unchunked axes of a dask array, block by block."""
    return _transform_nd(_ozfft.ifftn, x, s, axes, norm, mode, num_moduli)


def rfftn(x, s=None, axes=None, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.rfftn`` over unchunked axes of a dask array, block by block."""
    return _transform_nd(_ozfft.rfftn, x, s, axes, norm, mode, num_moduli, real="forward")


def irfftn(x, s=None, axes=None, norm=None, *, mode="exact", num_moduli=None):
    """``ozaki.fft.irfftn`` over unchunked axes of a dask array, block by block."""
    return _transform_nd(_ozfft.irfftn, x, s, axes, norm, mode, num_moduli, real="inverse")
