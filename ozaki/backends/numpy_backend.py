"""CPU backend: the named steps of the pipeline (ozaki/scheme.py) in numpy.

Every step is exact integer arithmetic.  The residue GEMMs run in float64 BLAS:
the residues are at most 128 in magnitude, so every partial sum of a length-k
product is an integer below k * 2**14, exact in float64 for k < 2**39 whatever
order or FMA use the BLAS picks.
"""

import math
from functools import lru_cache

import numpy as np

from ..crt import crt_constants, kulisch, reconstruct, remainder_near, symmetric
from ..crt import moduli as _moduli

xp = np
name = "numpy"

# Shifts of a float64 mantissa relative to a slice bottom never exceed this
# (the whole float64 range is 2098 bits, a mantissa 53).
MAX_SHIFT = 2304


def choose_path(path, m, n, k, batch, num_moduli, parts=1, npairs=1):
    """The CPU has one path: BLAS products, then the epilogue (scheme.PATHS'
    "cublas"); "fused" is a GPU kernel, and the bits are the same either way."""
    return "cublas"


def default_workspace():
    """Bytes for residues and products of one block on the CPU: 1 GiB."""
    return 1 << 30


@lru_cache(maxsize=None)
def pow2_table(m):
    """(m, MAX_SHIFT) int64: 2**s mod p_i."""
    return np.array([[pow(2, s, p) for s in range(MAX_SHIFT)] for p in _moduli(m)], dtype=np.int64)


def widen(x):
    """float32 / complex64 -> float64 / complex128, exactly (subnormals, signed zeros,
    NaN and inf kept)."""
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def split(x, xp=np):
    """float64 -> (negative, mantissa, exponent) with |x| = mantissa * 2**exponent exactly.

    Read off the bits, as the CUDA kernel does: mantissa < 2**53 (implicit bit
    added for normals), exponent >= -1074.  NaN and inf read as zero: the finite
    product ignores them and the scheme's IEEE fix-ups put them back.
    """
    bits = xp.ascontiguousarray(x, dtype=xp.float64).view(xp.int64)
    negative = bits < 0
    biased = (bits >> 52) & 0x7FF
    frac = bits & ((1 << 52) - 1)
    mant = xp.where(biased == 0, frac, xp.where(biased == 0x7FF, 0, frac | (1 << 52)))
    exponent = xp.where(biased == 0, -1074, biased - 1075)
    return negative, mant, exponent


def row_bits(x, xp=np, flags=False):
    """Per row of x: (top, lsb) int64 with every nonzero finite |x_ij| < 2**top and a
    multiple of 2**lsb (its lowest set bit's exponent); (0, 0) for rows without one.
    Non-finite entries read as zero.  Exact integer work on the bits (split).
    flags=True: (top, lsb, scan_rows's flags) (the GPU reads the rows once for the three)."""
    if flags:
        return row_bits(x, xp) + (scan_rows(x)[1],)
    if x.shape[1] == 0:
        return xp.zeros(x.shape[0], dtype=xp.int64), xp.zeros(x.shape[0], dtype=xp.int64)
    negative, mant, e = split(x, xp)
    nz = mant != 0
    low = e + xp.frexp((mant & -mant).astype(xp.float64))[1].astype(xp.int64) - 1
    big = 1 << 30
    lsb = xp.min(xp.where(nz, low, big), axis=1)
    top = xp.max(xp.where(nz, e + xp.frexp(mant.astype(xp.float64))[1].astype(xp.int64), -big), axis=1)
    zero_row = lsb == big
    return xp.where(zero_row, 0, top), xp.where(zero_row, 0, lsb)


def complex_of(re, im, xp=np):
    """re + i im without arithmetic (which would turn inf * 1j into NaNs): complex128
    from float64 parts, complex64 from float32 parts."""
    out = xp.empty(re.shape, dtype=np.result_type(re.dtype, np.complex64))
    out.real = re
    out.imag = im
    return out


def transposed(x):
    """x.T as a C-contiguous array."""
    return np.ascontiguousarray(x.T)


def contiguous(x):
    """x as a C-contiguous array (ozaki.fft's blocks of rows of an axis)."""
    return np.ascontiguousarray(x)


def assign(dest, src):
    """dest[...] = src (ozaki.fft's blocks of rows written into the result)."""
    dest[...] = src


def scan_rows(x, ceil_bits=0, hat=False, sum_squares=False, sum_ceilings=False, halves=False):
    """One look at each row: max |x| over finite entries, flags, integer ceilings.

    Returns (amax, flags, e, hat, sumsq): flags bit 0 = the row has NaN/inf,
    bit 1 = it has a zero.  With ceil_bits > 0, e = ceil_bits - frexp_exponent(amax)
    and c = ceil(|x| 2**e) (1 for nonzero values that underflow, 0 for zeros and
    non-finite); ``hat`` returns c as int8, ``sum_squares`` sum c**2 per row (int64),
    ``sum_ceilings`` sum c instead (in sumsq's place; the certified bound's sum |x|).
    ``halves`` (complex rows [Re | Im], x of k = 2 h columns): hat holds the halves'
    ceilings added, c[:, j] + c[:, j + h] for j < h.  Each c is at most 2**ceil_bits
    (|x| 2**e < 2**ceil_bits, and its ceiling can reach it), so the sum is at most
    2**(ceil_bits + 1): int8 for ceil_bits <= 5 (at most 64; scheme uses 5), not 6
    (128 wraps to -128).  ``halves`` is a form of ``hat``: without hat it does nothing,
    and with sum_squares or sum_ceilings it raises ValueError (as cupy_backend's).
    Integers and maxima only, so the GPU kernel (kernels/scan_rows.cu) matches exactly.
    """
    if halves and (sum_squares or sum_ceilings):
        raise ValueError("scan_rows: halves=True does not combine with sum_squares or sum_ceilings")
    halves = halves and hat
    finite = np.isfinite(x)
    a = np.where(finite, np.abs(x), 0.0)
    amax = a.max(axis=1)
    flags = ((~finite).any(axis=1).astype(np.int8) | ((x == 0).any(axis=1).astype(np.int8) << 1))
    e = c = sumsq = None
    if ceil_bits:
        e = ceil_bits - np.frexp(amax)[1].astype(np.int64)
        c = np.where(a != 0, np.maximum(np.ceil(np.ldexp(a, e[:, None].astype(np.int32))), 1), 0)
        if sum_squares or sum_ceilings:
            ci = c.astype(np.int64)
            sumsq = (ci * ci if sum_squares else ci).sum(axis=1)
        if halves:
            half = x.shape[1] // 2
            c = c[:, :half] + c[:, half:2 * half]
        c = c.astype(np.int8) if hat else None
    return amax, flags, e, c, sumsq


def maxima(M, xp=np):
    """The row and column maxima of a stack of non-negative matrices M (batch, m, n):
    (batch*m,), (batch*n,) (accurate mode's bound GEMM, scheme.plan_accurate)."""
    batch, m, n = M.shape
    if M.size == 0:
        return xp.zeros(batch * m, dtype=M.dtype), xp.zeros(batch * n, dtype=M.dtype)
    return M.max(axis=2).reshape(-1), M.max(axis=1).reshape(-1)


def bound_bottoms(maxima, e, bound):
    """Accurate mode's bottoms from its bound GEMM (scheme.plan_accurate):
    -(e + floor(s / 2)) per row, s the largest integer with 2**s maxima <= bound.

    From the exponents alone (maxima = f 2**r, bound = g 2**q, f and g in
    [0.5, 1)): s = q - r, one less when f > g.  Exact integer work (the maxima
    are integers of at most 4096 k, exact in float64), so kernels agree bit for bit.
    """
    f, r = np.frexp(maxima.astype(np.float64))
    g, q = math.frexp(bound)
    s = q - r.astype(np.int64) - (f > g).astype(np.int64)
    return -(e + s // 2)


def flags_found(flags_a, flags_b, host=True):
    """Which IEEE fix-ups a product needs, from scan_rows's row flags of A and B^T:
    bit 0 some row has NaN/inf, bit 1 some row has a zero.  An int on the host, or
    (host=False) a device scalar, for scheme.to_host_ints to bring with other values."""
    found = (np.bitwise_or.reduce(flags_a, initial=0) | np.bitwise_or.reduce(flags_b, initial=0)) & 3
    return int(found) if host else found


def digits(x, beta, width, nearest=False):
    """The slice of |x| above 2**beta (per row), as q * 2**s with q < 2**53 and s >= 0.

    digit = floor(|x| / 2**beta) mod 2**width (no mod when width is None);
    nearest (width None only): floor(|x| / 2**beta + 1/2) instead.
    Returns (negative, q, s).
    """
    negative, mant, e = split(x)
    d = e - beta[:, None]
    right = np.minimum(np.maximum(-d, 0), 63)               # bits that fall below the slice
    if nearest:
        # half up on the magnitude: add the highest dropped bit; < 2**53 still
        q = np.where(right > 0, ((mant >> np.maximum(right - 1, 0)) + 1) >> 1, mant)
    else:
        q = mant >> right
    s = np.maximum(d, 0)
    if width is not None:
        keep = width - s                                    # bits of q that stay inside the slice
        q = np.where(keep <= 0, 0, np.where(keep < 53, q & ((1 << np.clip(keep, 0, 62)) - 1), q))
    s = np.where(q == 0, 0, s)
    return negative, q, s


def residues(x, beta, width, m, nearest=False):
    """Symmetric residues of the slice digits of x modulo the first m moduli: int8 (m, rows, k).

    The arithmetic of kernels/residues.cu, vectorized: a digit q 2**s with
    s <= 24 is v2 2**52 + v1 2**26 + v0 (pieces below 2**26, signed alike), so
    x = v2 (2**52 mod p) + v1 (2**26 mod p) + v0 is below 2**35 and its rounded
    quotient by p is exact in float64 (x / p is 2**-9 from a half-integer, the
    float64 error of x * (1/p) below 2**-18): one remainder, already in the
    symmetric range (p = 256: +128 is -128).  Larger shifts take (q mod p)(2**s
    mod p) mod p in integers.  (The kernel has a third way, five pieces for
    24 < s <= 76; a residue is unique in the symmetric range, so every way gives
    these values, as tests/backends/test_cupy_backend.py checks on each.)
    """
    negative, q, s = digits(x, beta, width, nearest)
    sign = np.where(negative, -1.0, 1.0)
    small = s <= 24
    sh = np.where(small, s, 0).astype(np.uint64)
    w = q.astype(np.uint64) << sh                           # mod 2**64: the low 52 bits suffice
    v2 = sign * (q >> np.where(small, 52 - s, 63)).astype(np.float64)
    v1 = sign * ((w >> np.uint64(26)) & np.uint64(0x3FFFFFF)).astype(np.float64)
    v0 = sign * (w & np.uint64(0x3FFFFFF)).astype(np.float64)
    large = np.nonzero(~small)
    top = v2.any()                                          # digits of 2**52 and more
    table = pow2_table(m)
    out = np.empty((m,) + x.shape, dtype=np.int8)
    r, t = np.empty_like(v0), np.empty_like(v0)
    for i, p in enumerate(_moduli(m)):
        np.multiply(v1, float(pow(2, 26, p)), out=r)        # in place: a few passes, no temporaries
        r += v0
        if top:
            r += v2 * float(pow(2, 52, p))
        remainder_near(r, p, t)
        if p == 256:
            r[r == 128.0] = -128.0
        out[i] = r
        if large[0].size:
            rl = (q[large] % p) * table[i][s[large]] % p
            out[i][large] = symmetric(np.where(negative[large], -rl, rl), p)
    return out


def add_residues(x, y, m):
    """(x + y) mod p_i in the symmetric range, for int8 residue stacks (m, rows, k): the
    residues of a sum (every modulus at once, p broadcast along the first axis)."""
    p = np.array(_moduli(m), dtype=np.int16).reshape(-1, 1, 1)
    return symmetric(x.astype(np.int16) + y, p).astype(np.int8)


def butterfly4(re, im, m, sign):
    """The radix-4 butterflies (decimation in frequency) of a complex operand's residues:
    for stacks re, im (m, rows, N) of its parts mod p_i (N a multiple of 4, q = N / 4),
    z_s = sum_r (sign i)**(r s) x_(q r + j), s = 0..3, j < q, formed mod p_i: the three
    stacks (m, 4 rows, q) of Re z, Im z and their sums (Karatsuba's), row s rows + row
    holding z_s of that row, each in the symmetric range.  Exact: the coefficients are
    1, -1 and +-i (scheme._quarter_product's products take them)."""
    mods, rows, N = re.shape
    if mods != m or im.shape != re.shape or N % 4:
        raise ValueError(f"butterfly4: stacks {re.shape} and {im.shape} for {m} moduli")
    q = N // 4
    a = re.astype(np.int16).reshape(mods, rows, 4, q)
    b = im.astype(np.int16).reshape(mods, rows, 4, q)
    ur, ui, vr, vi = a[:, :, 0] + a[:, :, 2], b[:, :, 0] + b[:, :, 2], a[:, :, 1] + a[:, :, 3], b[:, :, 1] + b[:, :, 3]
    dr, di, er, ei = a[:, :, 0] - a[:, :, 2], b[:, :, 0] - b[:, :, 2], a[:, :, 1] - a[:, :, 3], b[:, :, 1] - b[:, :, 3]
    # z1 = d + (sign i) e and z3 = d - (sign i) e, (sign i) e = sign (-Im e + i Re e)
    zr = np.stack([ur + vr, dr - sign * ei, ur - vr, dr + sign * ei], axis=1).reshape(mods, 4 * rows, q)
    zi = np.stack([ui + vi, di + sign * er, ui - vi, di - sign * er], axis=1).reshape(mods, 4 * rows, q)
    p = np.array(_moduli(m), dtype=np.int16).reshape(-1, 1, 1)
    return [symmetric(z, p).astype(np.int8) for z in (zr, zi, zr + zi)]


def residues_of_parts(parts, beta, width, m, nearest=False, quarter=None):
    """The residues of each part's slice digits (``residues``), and for two parts (a
    complex operand's real and imaginary rows, one bottom a row) those of their sums
    (``add_residues``: Karatsuba's Ar + Ai): a list of one or three stacks (m, rows, k).
    ``quarter`` (two parts): the sign of their radix-4 butterflies (butterfly4), returned
    instead: three stacks (m, 4 rows, k / 4)."""
    rs = [residues(x, beta, width, m, nearest) for x in parts]
    if quarter is not None:
        return butterfly4(rs[0], rs[1], m, quarter)
    if len(parts) == 2:
        rs.append(add_residues(rs[0], rs[1], m))
    return rs


def _batched_matmul(Ra, Rbt, batch, dtype):
    """(b, batch*m, k) x (b, batch*n, k) -> (batch, b, m, n) in ``dtype`` BLAS."""
    b, rows, k = Ra.shape
    a = Ra.astype(dtype).reshape(b, batch, rows // batch, k).transpose(1, 0, 2, 3)
    c = Rbt.astype(dtype).reshape(b, batch, Rbt.shape[1] // batch, k).transpose(1, 0, 3, 2)
    return np.matmul(a, c)


def gemm(Ra, Rbt, batch=1):
    """Exact integer products: int8 (b, batch*m, k), (b, batch*n, k) -> int64 (batch, b, m, n).

    Matrix g of the batch is rows g*m..(g+1)*m of Ra[i] times those of Rbt[i].
    """
    return _batched_matmul(Ra, Rbt, batch, np.float64).astype(np.int64)


def gemm_fp32_digits(Da, Dbt, batch=1):
    """The fp8 substrate's digit GEMMs (ozaki.gemm.fp8): float32 BLAS, as FP8 tensor cores
    accumulate in FP32; exact because every partial sum is an integer below 2**24."""
    return _batched_matmul(Da, Dbt, batch, np.float32)


def fp8_operands(R, side, batch=1, xp=np):
    """The fp8 substrate's digit operands of one modulus' residues R (batch*m, k): (X, XY, Y),
    the digits X, Y of R = 16 X + Y (fp8.split_digits) and XY = [X | Y] for side "a" (A's
    rows), [Y | X] for side "b" (B^T's), so that XY's product sums x_a y_b + y_a x_b; stacks
    of one (1, batch*m, k) int8, as gemm_fp32_digits reads them."""
    from ..gemm import fp8
    x, y = fp8.split_digits(R[None], xp)
    return x, xp.concatenate([x, y] if side == "a" else [y, x], axis=2), y


def fp8_products(Da, Db, batch=1):
    """The digit products [XX, XY, YY] (batch, m, n) float32 of two sides' fp8_operands."""
    return [gemm_fp32_digits(a, b, batch)[:, 0] for a, b in zip(Da, Db)]


def fp8_recombine(XX, XY, YY, out, add=False, xp=np):
    """out (batch, m, n) = 256 XX + 16 XY + YY (fp8.recombine, exact), plus out when ``add``
    (the next K chunk); the digit products may extend past out's m rows and n columns."""
    from ..gemm import fp8
    _, m, n = out.shape
    v = fp8.recombine(XX[:, :m, :n], XY[:, :m, :n], YY[:, :m, :n], xp)
    out[...] = out + v if add else v
    return out


def _exponents(beta_a, beta_b, matrices=1):
    """The outputs' scale exponents beta_a[i] + beta_b[j], per matrix of a stack of
    ``matrices`` (rows and beta_b's columns split evenly among them)."""
    rows = np.asarray(beta_a).reshape(matrices, -1, 1)
    cols = np.asarray(beta_b).reshape(matrices, 1, -1)
    return (rows + cols).reshape(rows.shape[0] * rows.shape[1], cols.shape[2])      # (no rows: an empty matrix)


def epilogue(products, shifts, m, beta_a, beta_b, out_dtype=np.float64, residual=False, out=None, matrices=1,
             interleave=False):
    """CRT each pair's products, add them into one Kulisch accumulator, round once to
    ``out_dtype`` (float64 or float32: kulisch.round_to).  ``residual``: each output's
    rounding residual (round_to's, float64) after the outputs.  ``out``: arrays
    (rows, cols) the results are written into and returned (a block of a larger result).

    products: per slice pair a tuple of int arrays (m_mod, rows, cols): (P,) for
    a real product, (P1, P2, P3) = (Ar Br, Ai Bi, (Ar + Ai)(Br + Bi)) for a
    complex one (Re = P1 - P2, Im = P3 - P1 - P2); shifts: the pair's weight in
    limbs (2**(32*shift)); the accumulator's unit at (i, j) is
    2**(beta_a[i] + beta_b[j]).  Returns [C] or [Re, Im].
    ``matrices``: the rows hold a stack of that many matrices one after another
    (rows / matrices each) and beta_b their columns, matrix g's at g * cols: row i of
    matrix g scales by 2**(beta_a[i] + beta_b[g * cols + j]).  ``interleave``: the
    matrices' outputs are the column classes of one (rows / matrices, cols * matrices)
    output, column j of matrix g its column j * matrices + g (scheme._quarter_product's).
    """
    LP = crt_constants(m).L
    L = LP + max(shifts) + 1
    nout = 2 if len(products[0]) == 3 else 1
    acc = np.zeros((nout, L) + products[0][0].shape[1:], dtype=np.int64)
    for pair, shift in zip(products, shifts):
        if nout == 1:
            parts = [pair[0]]
        else:
            P1, P2, P3 = (P.astype(np.int64) for P in pair)
            parts = [P1 - P2, P3 - P1 - P2]
        for o, P in enumerate(parts):
            acc[o, shift:shift + LP] += reconstruct(P, m)
    outs = []
    for o in range(nout):
        kulisch.normalize(acc[o])
        outs.append(kulisch.round_to(acc[o], _exponents(beta_a, beta_b, matrices), out_dtype, residual))
    outs = [o for o, _ in outs] + [r for _, r in outs] if residual else outs
    if interleave and matrices > 1:
        outs = [o.reshape(matrices, o.shape[0] // matrices, -1).transpose(1, 2, 0).reshape(o.shape[0] // matrices, -1)
                for o in outs]
    if out is None:
        return outs
    if len(out) != len(outs):
        raise ValueError(f"epilogue: out needs {len(outs)} arrays, not {len(out)}")
    for o, r in zip(out, outs):
        if o.shape != r.shape or o.dtype != r.dtype:
            raise ValueError(f"epilogue: out arrays must be {r.dtype} of shape {r.shape}, not {o.dtype} {o.shape}")
        if [s // o.itemsize for s in o.strides] != [s // out[0].itemsize for s in out[0].strides]:
            # the GPU kernel indexes them all with one element offset: the same contract here
            raise ValueError("epilogue: out arrays must share their strides, in whole elements")
    for o, r in zip(out, outs):
        o[...] = r
    return list(out)


# ------------------------------------------------- FFT elementwise products --

def times(a, b):
    """a * b for complex arrays, each real operation a pass of its own: the textbook
    (ar br - ai bi) + i (ar bi + ai br), rounded after every step (ozaki.fft's
    elementwise products).  A fused complex multiply (CuPy's kernels may contract to
    FMAs, numpy's do not) would round differently, and the GPU must return the CPU's
    bits (cupy_backend.times: the same operations, one kernel pass)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=np.complex128)
    out.real = np.subtract(np.multiply(ar, br), np.multiply(ai, bi))
    out.imag = np.add(np.multiply(ar, bi), np.multiply(ai, br))
    return out


def _split_veltkamp(a):
    """a = hi + lo exactly with 26-bit halves (Dekker); |a| < 2**996."""
    c = a * 134217729.0
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    """(p, e): p = fl(a b) and a b = p + e exactly (Dekker, no FMA: every backend alike)."""
    p = a * b
    ah, al = _split_veltkamp(a)
    bh, bl = _split_veltkamp(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a, b):
    """(s, e): s = fl(a + b) and a + b = s + e exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def times_exactly(a, b):
    """(P, E) for complex arrays: P = times(a, b) bit for bit and a b = P + E up to the
    rounding of E itself (below 2**-100 of |a b| when the products neither overflow nor
    underflow: see ozaki.fft.stages.in_split_range)."""
    h1, l1 = _two_prod(a.real, b.real)
    h2, l2 = _two_prod(a.imag, b.imag)
    h3, l3 = _two_prod(a.real, b.imag)
    h4, l4 = _two_prod(a.imag, b.real)
    re, e_re = _two_sum(h1, -h2)
    im, e_im = _two_sum(h3, h4)
    P, E = np.empty(re.shape, dtype=np.complex128), np.empty(re.shape, dtype=np.complex128)
    P.real, P.imag = re, im                 # assembled, not re + 1j im (inf * 1j makes NaNs)
    E.real, E.imag = e_re + (l1 - l2), e_im + (l3 + l4)
    return P, E


# ------------------------------------------------------------- FFT zero signs --

ZERO_TERMS_CHUNK = 1 << 22      # (parts, entries) signs formed at once


def angle_signs(j, N, xp=np):
    """(sign of cos 2 pi j / N, sign of sin 2 pi j / N) as int8 arrays, exactly, 0 <= j < N
    (xp: the arrays' module; ozaki.fft.specials uses it on either)."""
    j4 = 4 * j
    c = xp.where((j4 < N) | (j4 > 3 * N), 1, xp.where((j4 == N) | (j4 == 3 * N), 0, -1)).astype(np.int8)
    s = xp.where((j == 0) | (2 * j == N), 0, xp.where(2 * j < N, 1, -1)).astype(np.int8)
    return c, s


def row_specials(parts, tiny, imag=None):
    """(bad, small, found): per row of the 2-D views ``parts`` (one row each, side by side),
    whether it holds a NaN or an infinity, and a nonzero entry below ``tiny`` in
    magnitude (ozaki.fft.specials.prepare); ``found``, a host int, the OR over the rows
    of bit 0 (a row is bad), bit 1 (one is small) and bit 2 (a nonzero imaginary part:
    ``imag`` gives per view 0, it holds none; 1, every entry is one; 2, its odd entries
    are, a complex row read as float64 pairs; None, all 0)."""
    rows = parts[0].shape[0]
    bad, small = np.zeros(rows, dtype=bool), np.zeros(rows, dtype=bool)
    complex_ = False
    for v, im in zip(parts, imag or (0,) * len(parts)):
        if v.shape[1]:
            magnitude = np.abs(v)
            bad |= ~np.isfinite(v).all(axis=1)
            small |= ((magnitude < tiny) & (magnitude > 0)).any(axis=1)
            if im:
                complex_ |= bool((v[:, 1::2] if im == 2 else v).any())
    return bad, small, int(bad.any()) | int(small.any()) << 1 | int(complex_) << 2


def zero_signs(parts, tiny, terms, N, sign):
    """Set every zero entry of each output part in ``parts`` (rows, bins; views, written in
    place; a complex result's .real and .imag, or one part) outside the ``tiny`` rows to -0
    or +0 by the sign rule of ozaki.fft.specials: -0 exactly when the part has a term and
    every term is -0 (``terms``: per part, as zero_terms_negative's)."""
    for part, ts in zip(parts, terms):
        rows, outs = np.nonzero((part == 0) & ~tiny[:, None])
        if rows.size:
            part[rows, outs] = np.where(_zero_parts_negative(ts, rows, outs, N, sign), -0.0, 0.0)


def _zero_parts_negative(terms, rows, outs, N, sign):
    """zero_terms_negative with two shortcuts past the O(N) terms of each part: a witness
    (the first or the last nonzero entry of a term's row, when its constant is nonzero,
    makes a term that is not zero: the part is +0), and rows whose entries are zeros of
    one sign per term (there every constant kind takes both signs at outputs k != 0, so
    only output 0 can be -0)."""
    settled = np.zeros(len(rows), dtype=bool)
    unique, at = np.unique(rows, return_inverse=True)
    all_zero = np.ones(len(unique), dtype=bool)
    uniform = np.ones(len(unique), dtype=bool)
    for offset, v, sine, negated in terms:
        if v.shape[1] == 0:
            continue
        values = v[unique]
        nonzero = values != 0
        has = nonzero.any(axis=1)
        for w in (nonzero.argmax(axis=1), nonzero.shape[1] - 1 - nonzero[:, ::-1].argmax(axis=1)):
            c, s = angle_signs((outs * (offset + w[at])) % N, N)
            settled |= has[at] & ((s if sine else c) != 0)
        all_zero &= ~has
        negative_zero = np.signbit(values)
        uniform &= negative_zero.all(axis=1) | ~negative_zero.any(axis=1)
    settled |= (all_zero & uniform)[at] & (outs != 0)
    negative = np.zeros(len(rows), dtype=bool)
    todo = np.flatnonzero(~settled)
    if todo.size:
        negative[todo] = zero_terms_negative(terms, rows[todo], outs[todo], N, sign)
    return negative


def zero_terms_negative(terms, rows, outs, N, sign):
    """Whether each zero DFT part (row ``rows[i]``, output ``outs[i]``) is -0 by the sign rule
    of ozaki.fft.specials: it has a term and every term is -0.

    terms: (offset, v, sine, negated) per term kind: the entries v (rows, entries) at
    positions n = offset + column times the sign of cos (sine False) or of sin times
    ``sign`` of 2 pi k n / N, negated when ``negated``; a zero constant makes no term, and
    a term v t is -0 when v is a zero whose sign differs from t's (flipped when negated).
    """
    negative = np.empty(len(rows), dtype=bool)
    entries = max((v.shape[1] for _, v, _, _ in terms), default=1)
    step = max(1, ZERO_TERMS_CHUNK // max(entries, 1))
    for i in range(0, len(rows), step):
        rr, kk = rows[i:i + step], outs[i:i + step]
        present = np.zeros(len(rr), dtype=bool)
        all_negative = np.ones(len(rr), dtype=bool)
        for offset, v, sine, negated in terms:
            n = offset + np.arange(v.shape[1])
            c, s = angle_signs((kk[:, None] * n[None, :]) % N, N)             # (parts, entries)
            t = s * np.int8(sign) if sine else c
            vals = v[rr]
            has = t != 0
            present |= has.any(axis=1)
            minus_zero = (vals == 0) & ((np.signbit(vals) != (t < 0)) != negated)
            all_negative &= np.all(~has | minus_zero, axis=1)
        negative[i:i + step] = present & all_negative
    return negative



# ----------------------------------------------------------- exact residuals --

NO_EXPONENT = 1 << 20          # exponent_range's least for arrays without a nonzero entry

def exponent_range(x, xp=np):
    """(least last-bit exponent, top, finite) of the finite nonzero entries of x, as array
    scalars: every such |x_i| = m 2**e with an integer m and e >= least, and |x_i| <
    2**top; least = NO_EXPONENT and top = -NO_EXPONENT when there is none.  One
    reduction each (xp: numpy or cupy): the figures of kernels/exact_dot.cu's window
    (crt.kulisch.exact_dot_window)."""
    finite = xp.isfinite(x).all()
    nonzero = (x != 0) & xp.isfinite(x)
    e = xp.frexp(xp.where(nonzero, x, 1.0))[1].astype(xp.int64)         # |x| < 2**e, e - 53 its last bit
    least = xp.where(nonzero, xp.maximum(e - 53, -1074), NO_EXPONENT).min() if x.size else xp.asarray(NO_EXPONENT)
    top = xp.where(nonzero, e, -NO_EXPONENT).max() if x.size else xp.asarray(-NO_EXPONENT)
    return least, top, finite
