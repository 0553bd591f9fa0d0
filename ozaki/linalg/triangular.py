"""Triangular solves: blocked substitution, diagonal blocks on the vendor's TRSM, the
off-diagonal (GEMM-shaped) updates on ozaki products for many right-hand sides and on
native float64 products for few."""

import numpy as np
from numpy.linalg import LinAlgError

from . import _util

_TRANS = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}


def trsm(ns, t, b, lower, trans=0, unit_diagonal=False, block_size=None):
    """op(t)^-1 b for a 2-D triangular t and a 2-D b (no singularity check).

    With fewer right-hand sides than a block this is ``substitute`` (native
    float64 throughout); with t within one block, the vendor's triangular
    solve; otherwise blocked substitution whose updates
    b[rest] -= t[rest, blk] @ x[blk] run on ozaki.matmul.
    """
    nb = block_size or ns.block_size
    n, k = b.shape
    if n == 0 or k == 0:
        return ns.xp.zeros((n, k))
    if k < nb:
        return substitute(ns, t, b, lower, trans, unit_diagonal, block_size)
    if n <= nb:
        return ns.trsm(t, b, lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    # op(t) as a triangle of its own: the transpose of a lower triangle is upper
    te = t.T if trans else t
    low = lower != bool(trans)
    x = _util.working_copy(ns.xp, b)
    starts = range(0, n, nb) if low else reversed(range(0, n, nb))
    for i0 in starts:
        i1 = min(i0 + nb, n)
        x[i0:i1] = ns.trsm(te[i0:i1, i0:i1], x[i0:i1], lower=low, unit_diagonal=unit_diagonal)
        rest = slice(i1, n) if low else slice(0, i0)
        if rest.start != rest.stop:
            x[rest] -= ns.gemm(te[rest, i0:i1], x[i0:i1])
    return x


def substitute(ns, t, b, lower, trans=0, unit_diagonal=False, block_size=None):
    """op(t)^-1 b for a 2-D triangular t and a 2-D b with few columns (no singularity check):
    left-looking blocked substitution in native float64.

    Block row by block row, in the order op(t) is solved: the block's rows take
    x[blk] = b[blk] - op(t)[blk, done] @ x[done], one native product (DGEMV for
    one column) over everything solved so far, then the vendor's TRSM on the
    diagonal block.  Both read t where it lies.  The products are float64 BLAS /
    cuBLAS products, not ozaki ones: these solves serve refinement corrections
    and condition estimates, whose accuracy needs are those of a float64
    triangular solve (backward stable either way), and at one column an
    emulated product would cost far more than the memory-bound native one.
    ``block_size``: rows per block (default: SUBSTITUTION_BLOCK for the array
    module, where None is no blocks); t within one block is one vendor TRSM.
    """
    nb = block_size or ns.substitution_block
    n = t.shape[0]
    if nb is None or n <= nb:
        return ns.trsm(t, b, lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    te = t.T if trans else t
    low = lower != bool(trans)
    x = ns.xp.array(b, dtype=ns.xp.float64, order="F", copy=True)   # the vendor solves in place
    starts = range(0, n, nb) if low else reversed(range(0, n, nb))
    for i0 in starts:
        i1 = min(i0 + nb, n)
        done = slice(0, i0) if low else slice(i1, n)
        if done.start != done.stop:
            ns.subtract_product(x[i0:i1], te[i0:i1, done], x[done])
        ns.trsm_in_place(te[i0:i1, i0:i1], x[i0:i1], lower=low, unit_diagonal=unit_diagonal)
    return x


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True, *, block_size=None):
    """Solve ``a x = b`` for x, assuming a is a triangular matrix (scipy.linalg.solve_triangular).

    Parameters
    ----------
    a : (..., M, M) array_like (numpy) or cupy.ndarray
        A triangular matrix; only the triangle named by ``lower`` is read.
    b : (M,) or (..., M, N) array_like
        Right-hand side; stacks broadcast against ``a`` as in numpy.linalg.solve.
    trans : {0, 1, 2, 'N', 'T', 'C'}, optional
        Solve a x = b (0, 'N') or a^T x = b (1, 'T'; 2, 'C' for these real matrices).
    lower : bool, optional
        Use the lower triangle of ``a`` (default: upper).
    unit_diagonal : bool, optional
        Assume the diagonal entries are 1 (they are not read).
    overwrite_b, check_finite : bool, optional
        As scipy's; ``b`` is never overwritten.
    block_size : int, optional
        Rows per block of the blocked substitution (default: ozaki.linalg.BLOCK_SIZE
        for as many right-hand sides or more, _backend.SUBSTITUTION_BLOCK for fewer,
        by default one vendor solve).

    Returns
    -------
    x : (M,) or (..., M, N) ndarray
        Same array type as the inputs.  Blocks of the diagonal are solved by the
        vendor library, the updates between them on ozaki.matmul (under the
        current ``ozaki.config``) for ``block_size`` right-hand sides or more,
        on native float64 products for fewer.

    Raises
    ------
    LinAlgError
        A diagonal entry is exactly zero (and ``unit_diagonal`` is False).
    ValueError
        Non-square ``a``, shapes that do not match, infs or NaNs with check_finite.
    """
    if trans not in _TRANS:
        raise ValueError(f"Invalid 'trans' value {trans!r}, should be 0, 1, 2, 'N', 'T' or 'C'")
    ns, a, b2, batch, vector = _util.solve_operands(a, b, check_finite)
    xp = ns.xp
    out = xp.empty(tuple(batch) + b2.shape[-2:], dtype=xp.float64)
    bb = xp.broadcast_to(b2, out.shape)
    for index, t in _util.stack_items(xp, a, batch):
        if not unit_diagonal and t.shape[0]:
            zero = ns.asnumpy(xp.diagonal(t) == 0)
            if zero.any():
                raise LinAlgError(f"singular matrix: resolution failed at diagonal {int(np.argmax(zero))}")
        out[index] = trsm(ns, t, bb[index], lower, _TRANS[trans], unit_diagonal, block_size)
    return out[..., 0] if vector else out
