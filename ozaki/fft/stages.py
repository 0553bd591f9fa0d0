"""The transforms of the rows of 2-D arrays, as products on ozaki.matmul.

Three kinds along the last axis of a (B, L) array, each a sum of exact terms
x_n w^(kn) / div (w = exp(sign 2 pi i / N)):

    c2c   complex (B, N) -> complex (B, N)
    r2c   real (B, N) -> complex (B, N // 2 + 1)             (rfft, ihfft)
    c2r   complex (B, N // 2 + 1) -> real (B, N), reading it as the
          non-negative half of a Hermitian spectrum           (irfft, hfft)

How each length runs is ``plans.choose``: "direct" is one product with the
DFT matrix (r2c and c2r as real products: a third of the complex work);
"six-step" is Bailey's N = N1 N2 (stage 1 one product with the N1-point DFT,
stage 2 one small product per row k1 with the twiddles and the norm's scale
folded into its matrix, or for fewer than FOLD_MIN_ROWS transforms one
product with the N2-point DFT after an error-free twiddle product; longer N2
recurse on an exact twiddle product: its rounded value and remainder); "bluestein" (bluestein.py) the
chirp-z convolution on six-step transforms.  Real kinds that are not direct
run as c2c transforms of the real input (r2c) or of the Hermitian extension
(c2r).

In mode="exact" (the default) every product carries the constants as hi + lo
float64 pairs (twiddles.py: hi correctly rounded; lo the remainder on a grid 2**-104
below the largest root, plans.product_roots), taken as one operand of
exact sums (scheme.prepare_pair: their residues added mod p, so the data is
not doubled along the inner dimension), and stage 1's output as its rounded
value plus its exactly computed, rounded remainder, so the only rounding of
float64 size is the last one.  Other modes use the rounded
constants alone.  The products are ozaki.matmul's; every other operation is
exact or rounded step by step alike on numpy and CuPy (the elementwise complex
products ``times`` and ``times_exactly`` are backend steps: numpy_backend's and
cupy_backend's), so the CPU and the GPU return the same bits.
"""

import numpy as np

from . import plans, twiddles

# Fewer rows than this per transform take stage 2 as one GEMM after an exact
# twiddle product (measured on the CPU: one 16384-point transform 11.3 s folded,
# about 1 s this way); more rows keep the folded per-row matrices.  The plans
# depend on the row count only through this threshold (plans.choose).
FOLD_MIN_ROWS = plans.FOLD_MIN_ROWS


def xp_of(a):
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return np


def matmul(a, b, opts, constant=None, quarter=None):
    """a @ b on ozaki.matmul.  ``constant``: (side, key) when a ("left") or b ("right") is
    the plan constant cached under key: then it goes in prepared (plans.prepared), with
    ``quarter`` (the sign of an N-point DFT matrix b, plans.quarter_turns) marked for
    scheme._quarter_product where it has the quarter turns' symmetry.  A
    constant may be an exact pair (hi, lo), taken as the operand of sums hi + lo (made
    ready for this product alone when it has no key); with a given moduli count, which
    may be too few for the pair's one wide slice, as the doubled product
    [x, x] @ [hi; lo] instead (the same exact sums, sliced freely)."""
    from .. import matmul as ozaki_matmul
    pair_side = "left" if isinstance(a, tuple) else "right" if isinstance(b, tuple) else None
    if pair_side is not None:
        xp = xp_of(b if pair_side == "left" else a)
        if opts.get("num_moduli") is not None:
            pair = a if pair_side == "left" else b
            build = lambda: xp.concatenate(pair, axis=-1 if pair_side == "left" else -2)   # noqa: E731
            if constant is not None:
                constant = (constant[0], ("doubled",) + constant[1])
                doubled = plans.cached(xp, constant[1], build)
            else:
                doubled = build()
            if pair_side == "right":
                a, b = xp.concatenate([a, a], axis=-1), doubled
            else:
                a, b = doubled, xp.concatenate([b, b], axis=-2)
        elif constant is None:
            ready = plans.pair_operand(a if pair_side == "left" else b, pair_side, opts)
            return ozaki_matmul(ready, b) if pair_side == "left" else ozaki_matmul(a, ready)
    if constant is not None:
        side, key = constant
        xp = xp_of(b if side == "left" else a)
        if side == "left":
            a = plans.prepared(xp, key, a, side, opts)
        else:
            b = plans.prepared(xp, key, b, side, opts, quarter)
        if isinstance(a, plans.Prepared) or isinstance(b, plans.Prepared):
            return ozaki_matmul(a, b)
    return ozaki_matmul(a, b, **opts)


def split_mode(opts):
    """Whether the constants go in as hi + lo pairs (mode="exact")."""
    return opts.get("mode") == "exact"


# A carried remainder (about 2**-53 of the value it belongs to) enters a product scaled by
# 2**53, and its constant block by 2**-53: the exact sum, hence the rounded result, is the
# same, but the data operand's rows then span ~53 bits instead of ~106, which halves the
# CPU cost of the exact products (fewer moduli, and the residues' fast path).
LIFT = 2.0 ** 53


def transform(x, sign, div, opts, kind="c2c", N=None, rem=None, real=None):
    """The transform of every row of the 2-D array x (see the module docstring).

    N: the transform length (c2r: the real output length; else x.shape[1]).
    Finite data only (interface.py deals with NaN, inf and signed zeros).
    rem (c2c in exact mode): the rows' remainders, lifted: the rows are x + rem / LIFT
    (a long stage 2's exact twiddle products), transformed with one rounding.
    real: whether every imaginary part of x is zero, when the caller knows (specials.prepare
    reads it with the rows' other flags); None: looked up here (one host sync).
    """
    xp = xp_of(x)
    B = x.shape[0]
    N = x.shape[1] if N is None else N
    if B == 0:
        width = {"c2c": N, "r2c": N // 2 + 1, "c2r": N}[kind]
        return xp.zeros((0, width), dtype=xp.float64 if kind == "c2r" else xp.complex128)
    plan = plans.choose(N, B, kind, rem is not None)
    if rem is not None:
        if plan.algorithm == "direct":                  # the pair [x, rem] times [F_hi; F_hi / LIFT] + [F_lo; 0]
            return matmul(xp.concatenate([x, rem], axis=1), plans.stage2_few(xp, N, sign, div), opts,
                          ("right", ("stage2_few", N, sign, div)))
        if plan.algorithm == "six-step":
            return six_step(x, plan, sign, div, opts, rem)
        x = x + rem / LIFT                               # Bluestein: rounded once more
    if plan.algorithm == "direct":
        if kind == "c2c" and (_real_rows(xp, x) if real is None else real):
            return real_c2c(x, N, sign, div, opts)
        return {"c2c": direct_c2c, "r2c": direct_r2c, "c2r": direct_c2r}[kind](x, N, sign, div, opts)
    if kind == "r2c":
        return transform(complex_of(x), sign, div, opts)[:, :N // 2 + 1]
    if kind == "c2r":
        return transform(hermitian(x, N), sign, div, opts).real.copy()
    if plan.algorithm == "bluestein":
        from . import bluestein
        return bluestein.transform(x, sign, div, opts)
    return six_step(x, plan, sign, div, opts)


# ------------------------------------------------------------------ direct --

def direct_c2c(x, N, sign, div, opts):
    """One product with the N-point DFT matrix (symmetric, so x @ F)."""
    xp = xp_of(x)
    split = split_mode(opts)
    F = plans.direct(xp, N, sign, div, split)
    return matmul(x, F, opts, ("right", ("direct", N, sign, div, split)), plans.quarter_turns(N, sign, div))


def _real_rows(xp, x):
    """Whether the rows are real (a real dtype, or every imaginary part zero: one host sync)."""
    from ..backends import host
    return x.dtype.kind != "c" or not bool(host.read(xp.any(x.imag != 0)))


def real_c2c(x, N, sign, div, opts):
    """c2c of real rows by the real product (a third of the complex work): the exact sums
    of the bins N - k are the conjugates of those of bins k, so X_(N-k) = conj(X_k) is the
    same rounding (zero parts get their signs from specials.finish, as every zero part)."""
    xp = xp_of(x)
    half = direct_r2c(xp.ascontiguousarray(x.real), N, sign, div, opts)
    out = xp.empty((x.shape[0], N), dtype=xp.complex128)
    out[:, :half.shape[1]] = half
    xp.conjugate(half[:, 1:(N + 1) // 2][:, ::-1], out=out[:, half.shape[1]:])     # no temporary
    return out


def direct_r2c(x, N, sign, div, opts):
    """Real input: one real product x @ [Re F, Im F] over the n // 2 + 1 output columns,
    interleaved (plans.real_direct): each column's exact sum is its own, so the outputs'
    bits do not depend on the order, and the product is the complex result's float64 view."""
    xp = xp_of(x)
    split = split_mode(opts)
    M = plans.real_direct(xp, N, sign, div, split)
    y = matmul(x, M, opts, ("right", ("real", N, sign, div, split)))
    return xp.ascontiguousarray(y).view(xp.complex128)


def direct_c2r(X, N, sign, div, opts):
    """Hermitian input X (B, N // 2 + 1): one real product
    [Re X, Im X_(1..)] @ [c_k Re w^(kn); -c_k Im w^(kn)] with c_k = 2 for the bins
    that stand for a conjugate pair (exact: a power of two) and 1 for bin 0 and the
    Nyquist bin, whose imaginary parts are not read (numpy's irfft ignores them)."""
    xp = xp_of(X)
    split = split_mode(opts)
    M = plans.hermitian_direct(xp, N, sign, div, split)
    odd = (N - 1) // 2                                   # bins 1..odd have an imaginary part
    a = xp.concatenate([X.real, X.imag[:, 1:1 + odd]], axis=1)
    return matmul(a, M, opts, ("right", ("hermitian", N, sign, div, split)))


def complex_from(xp, re, im):
    """re + i im without arithmetic (which would turn inf * 1j into NaNs)."""
    out = xp.empty(re.shape, dtype=xp.complex128)
    out.real = re
    out.imag = im
    return out


def complex_of(x):
    xp = xp_of(x)
    return complex_from(xp, x, xp.zeros_like(x))


def hermitian(X, N):
    """The full N-point spectrum whose non-negative half is X (B, N // 2 + 1): bin 0 and
    (N even) the Nyquist bin real, bins N - k the conjugates of bins k."""
    xp = xp_of(X)
    half = X.copy()
    half[:, 0] = half[:, 0].real
    if N % 2 == 0:
        half[:, -1] = half[:, -1].real
    mirror = xp.conj(half[:, 1:(N + 1) // 2][:, ::-1])
    return xp.concatenate([half, mirror], axis=1)


# ---------------------------------------------------------------- six-step --

def six_step(x, plan, sign, div, opts, rem=None):
    """Bailey's N = N1 N2 transform of the rows of x (B, N) complex128; rem: their
    lifted remainders (transform's), in exact mode."""
    xp = xp_of(x)
    B, N = x.shape
    N1, N2 = plan.N1, plan.N2
    split = split_mode(opts)

    def columns(v):                                  # (B, N) -> (N1, B N2): n = N2 n1 + n2
        return v.reshape(B, N1, N2).transpose(1, 0, 2).reshape(N1, B * N2)

    # stage 1: Y[k1, (b, n2)] = sum_n1 F1[k1, n1] x[b, N2 n1 + n2]
    X1 = columns(x)
    carried = rem is not None
    if carried:                                      # the rows x + rem / LIFT: [X1; R1] along n1
        X1 = xp.concatenate([X1, columns(rem)])
    F1 = plans.stage1(xp, N1, sign, split, carried)
    key = ("stage1", N1, sign, split, carried)
    if not split:
        Ys = [matmul(F1[0], X1, opts, ("left", key + (0,)))]
    else:
        Y = matmul(F1[0], X1, opts, ("left", key + (0,)))
        # the exact remainder of stage 1, rounded: RN(F1 X1 - Y)
        Ys = [Y, matmul(F1[1], xp.concatenate([X1, Y]), opts, ("left", key + (1,)))]
    Ys = [y.reshape(N1, B, N2) for y in Ys]
    if N2 > plans.DIRECT_MAX:
        if split and in_split_range(xp, Ys[0]):
            # long stage 2: the twiddle product formed exactly as P + C (as for few rows
            # below), then N2-point transforms of the rows P + C, rounded once
            P, C = exact_twiddle_product(xp, Ys, N1, N2, sign)
            Z = transform(P.reshape(N1 * B, N2), sign, div, opts, rem=(C * LIFT).reshape(N1 * B, N2))
        else:
            # an explicit twiddle product (rounded), then N2-point transforms
            tw = plans.twiddle_grid(xp, N1, N2, sign, False)[0]
            Y = Ys[0] + Ys[1] if split else Ys[0]
            Z = transform(times(Y, tw[:, None, :]).reshape(N1 * B, N2), sign, div, opts)
        Z = Z.reshape(N1, B, N2)
    elif split and B < FOLD_MIN_ROWS and in_split_range(xp, Ys[0]):
        # few rows: the folded per-row matrices would make B x N2 by N2 x N2 products
        # (matrix-vector shaped for one transform); instead the twiddle product is formed
        # exactly as P + E (error-free transformations) and one GEMM applies the N2-point
        # DFT to all rows: Z = [P, C] [F2_hi + F2_lo; F2_hi] (C lifted: see LIFT) with
        # C = E + Y_hi tw_lo + Y_rem tw_hi, so the output is again rounded once
        # (the omitted terms are below 2**-100 of the sum, as in the folded path).
        P, C = exact_twiddle_product(xp, Ys, N1, N2, sign)
        rows = xp.concatenate([P, C * LIFT], axis=2).reshape(N1 * B, 2 * N2)
        Z = matmul(rows, plans.stage2_few(xp, N2, sign, div), opts,
                   ("right", ("stage2_few", N2, sign, div))).reshape(N1, B, N2)
    else:
        # stage 2, twiddles folded in: Z[k1, b, k2] = sum_n2 G[k1, k2, n2] Y[k1, b, n2]
        G = plans.stage2_folded(xp, N1, N2, sign, div, split)
        # split: G_hi Y + G_lo Y + G_hi Y_rem (G_lo Y_rem is below 2**-100 of the sum)
        Z = matmul(xp.concatenate([Ys[0], Ys[1] * LIFT], axis=2) if split else Ys[0], G, opts,
                   ("right", ("stage2_folded", N1, N2, sign, div, split)))
    return Z.transpose(1, 2, 0).reshape(B, N)                    # k = k1 + N1 k2


def exact_twiddle_product(xp, Ys, N1, N2, sign):
    """(P, C) with P + C = (Y + Y_rem) (tw_hi + tw_lo) up to 2**-100 of the terms: P the
    rounded product Y tw_hi, C its error (times_exactly) plus the cross terms Y tw_lo and
    Y_rem tw_hi (Y_rem tw_lo, below 2**-100 of the terms, is dropped).  Ys: stage 1's (Y, Y_rem), (N1, B, N2)."""
    tw = [t[:, None, :] for t in plans.twiddle_grid(xp, N1, N2, sign, True)]
    P, E = times_exactly(Ys[0], tw[0])
    return P, E + times(Ys[0], tw[1]) + times(Ys[1], tw[0])


# ------------------------------------------------- elementwise products --

def times(a, b):
    """a * b for complex arrays, each real operation rounded on its own (no FMA), so that
    the CPU and the GPU give the same bits: the backend's step (numpy_backend.times,
    cupy_backend.times in one kernel pass)."""
    from .. import backend_for
    return backend_for(a).times(a, b)


def times_exactly(a, b):
    """(P, E) for complex arrays: P = times(a, b) bit for bit and a b = P + E up to the
    rounding of E itself (below 2**-100 of |a b| when the products neither overflow nor
    underflow: see in_split_range); the backend's step (numpy_backend.times_exactly)."""
    from .. import backend_for
    return backend_for(a).times_exactly(a, b)


def in_split_range(xp, Y):
    """Whether the error-free products are exact for Y times roots of unity: finite, the
    largest part below 2**900 (no overflow in Dekker's split) and above 2**-900 (the
    errors of the largest products stay normal).  One host synchronization."""
    if not Y.size:
        return False
    from ..backends import host
    low, high = 2.0 ** -900, 2.0 ** 900

    def same_answer(top):             # a graph's speculation: any top on the same side
        inside = low < top < high
        return (np.nextafter(low, 1.0), np.nextafter(high, 0.0)) if inside else (top, top)
    top = float(host.read(xp.max(xp.maximum(xp.abs(Y.real), xp.abs(Y.imag))), same_answer))
    return low < top < high
