"""solve (factor, then refine on exact residuals), inv and det, on the blocked factorizations."""

import dataclasses
import warnings

import numpy as np
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

from . import _util, condest, equilibrate, refine as _refine
from ._backend import namespace
from .decomp_cholesky import CholeskyFactor
from .decomp_lu import LUFactor
from .triangular import trsm

# scipy.linalg.solve's structure names that this solver handles, and how
_STRUCTURES = {
    None: "gen", "gen": "gen", "general": "gen",
    "sym": "sym", "symmetric": "sym", "her": "sym", "hermitian": "sym",
    "pos": "pos", "positive definite": "pos",
    "upper triangular": "upper", "lower triangular": "lower",
}


@dataclasses.dataclass
class SolveInfo:
    """What ``solve(..., full_output=True)`` reports besides x (numpy arrays, host side).

    Attributes
    ----------
    rcond : ndarray, shape batch
        Reciprocal 1-norm condition number estimate of each matrix (LAPACK's
        xGECON figure; the one behind the LinAlgWarning).
    err_bnds_norm, err_bnds_comp : ndarray, shape batch + (nrhs, 3) (batch + (3,) for a 1-D b)
        As LAPACK xGESVXX's ERR_BNDS_NORM / ERR_BNDS_COMP, per right-hand side:
        [..., 0] trust (1.0: the bound holds as far as the refinement can tell,
        0.0: no bound), [..., 1] the bound (+inf when not trusted),
        [..., 2] the reciprocal Skeel condition number it was judged by
        (normwise: of A; componentwise: of A diag(x)).
        Normwise: max_i |x_i - x*_i| / max_i |x_i|; componentwise:
        max_i |x_i - x*_i| / |x_i|, for the returned x and the exact solution x*.
    iterations : ndarray of int, shape batch + (nrhs,) (batch for a 1-D b)
        Corrections computed for each right-hand side.
    """

    rcond: np.ndarray
    err_bnds_norm: np.ndarray
    err_bnds_comp: np.ndarray
    iterations: np.ndarray


class _Transposed:
    """A factorization of A used as one of A^T."""

    def __init__(self, f):
        self.f, self.n = f, f.n

    def solve(self, b):
        return self.f.solve_t(b)

    def solve_t(self, b):
        return self.f.solve(b)


class _Triangular:
    """A triangular matrix as its own factorization."""

    def __init__(self, ns, t, lower, block_size):
        self.ns, self.t, self.lower, self.n, self.nb = ns, t, lower, t.shape[0], block_size

    def solve(self, b):
        return trsm(self.ns, self.t, b, self.lower, block_size=self.nb)

    def solve_t(self, b):
        return trsm(self.ns, self.t, b, self.lower, trans=1, block_size=self.nb)


def _symmetric_from(xp, a, lower):
    """The symmetric matrix whose referenced triangle (lower or upper) is that of a."""
    t = xp.tril(a) if lower else xp.triu(a)
    return t + (xp.tril(a, -1) if lower else xp.triu(a, 1)).T


def _factor(ns, kind, a, lower, transposed, block_size, index, factorization):
    """(the system's matrix A_op, a factorization of A_op) for one matrix.

    LU and Cholesky factor the power-of-two equilibrated matrix (see
    ozaki.linalg.equilibrate); A_op itself, which the exact residuals use, is
    not scaled.  The vendor's getrf factors the equilibrated matrix's transpose,
    which is column-major as LAPACK and cuSOLVER keep their matrices (the C-order
    matrix itself would take a transposing copy first: 2 GB at n = 16384), in
    place: a factorization of A^T is one of A, with its two solves swapped, and
    partial pivoting on the rows of A^T (the columns of A) is as stable.
    """
    xp = ns.xp
    if kind == "pos":
        s = equilibrate.symmetric(xp, a)
        f = CholeskyFactor.factor(ns, equilibrate.scaled(a, s, s), lower, block_size, factorization)
        return _symmetric_from(xp, a, lower), equilibrate.Equilibrated(f, s, s)
    if kind in ("upper triangular", "lower triangular", "upper", "lower"):
        low = kind == "lower"
        t = xp.tril(a) if low else xp.triu(a)
        if t.shape[0] and bool((xp.diagonal(t) == 0).any()):
            raise LinAlgError(f"A singular matrix detected: slice(s) {list(index) or [0]} are singular.")
        f = _Triangular(ns, t, low, block_size)
        return (t.T, _Transposed(f)) if transposed else (t, f)
    op = _symmetric_from(xp, a, lower) if kind == "sym" else a
    r, c = equilibrate.general(xp, op)
    s = equilibrate.scaled(op, r, c)
    vendor = factorization == "vendor"
    f = LUFactor.factor(ns, s.T if vendor else s, block_size, factorization, overwrite=True)
    if f.zero_pivot() >= 0:
        raise LinAlgError(f"A singular matrix detected: slice(s) {list(index) or [0]} are singular.")
    f = equilibrate.Equilibrated(_Transposed(f) if vendor else f, r, c)
    if transposed and kind == "gen":
        return op.T, _Transposed(f)
    return op, f


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
          transposed=False, *, refine=True, full_output=False, block_size=None, factorization=None):
    """Solve the equation ``a @ x = b`` for x, refined on exact residuals (scipy.linalg.solve).

    The matrix, equilibrated by powers of two (as LAPACK's xGESVXX), is factored
    by LU with partial pivoting (or Cholesky for ``assume_a="pos"``): the
    vendor's (LAPACK / cuSOLVER) or a blocked one whose trailing updates run on
    ozaki.matmul under the current ``ozaki.config`` (``factorization``); then,
    by default, iterative refinement with
    each residual b - A x computed exactly and rounded once (one exact-mode
    ozaki product per iteration), x kept as a double-double and rounded to
    float64 at the end.  For condition numbers up to about 1e13..1e15 the
    result is accurate to a few units of roundoff, and almost always the
    correctly rounded solution, where an unrefined solve loses cond * eps.

    Parameters
    ----------
    a : (..., N, N) array_like (numpy) or cupy.ndarray
        Square matrix or stack; real, in a dtype float64 holds exactly.
    b : (N,) or (..., N, NRHS) array_like
        Right-hand side; a 1-D b is one vector (numpy.linalg.solve's rule), stacks broadcast.
    lower : bool, optional
        For "sym" and "pos": read the lower triangle of a (default: the upper).
    overwrite_a, overwrite_b : bool, optional
        Accepted for compatibility; the inputs are never overwritten.
    check_finite : bool, optional
        Raise ValueError on infs or NaNs (default True).
    assume_a : {None, "gen", "sym", "pos", "upper triangular", "lower triangular"}, optional
        (and scipy's long names "general", "symmetric", "positive definite";
        "her"/"hermitian" are "sym" for real matrices).  None is "gen": no
        structure detection.  "sym" is factored by the same blocked LU as "gen"
        (no Bunch-Kaufman here), from the referenced triangle.
    transposed : bool, optional
        Solve a^T x = b.
    refine : bool, optional
        Iterative refinement on exact residuals (default True).
    full_output : bool, optional
        Return (x, SolveInfo) with the error bounds (needs ``refine``).
    block_size : int, optional
        Panel width of the "ozaki" factorization and rows per block of the
        triangular solves (default: ozaki.linalg.BLOCK_SIZE, and for solves with
        fewer right-hand sides than that, _backend.SUBSTITUTION_BLOCK).
    factorization : {None, "vendor", "ozaki"}, optional
        "vendor": LAPACK's / cuSOLVER's getrf (potrf for "pos") on the whole
        matrix; "ozaki": the blocked factorization of lu_factor and cholesky,
        trailing updates on ozaki.matmul.  None (default): "vendor" with
        ``refine``, "ozaki" without.  Refined on exact residuals, the solution's
        accuracy does not depend on the factorization, which only supplies the
        corrections: its rounding errors set how fast the iteration contracts
        (about cond * eps * growth per step), so how many iterations run, and
        the vendor's is the faster (cuSOLVER's getrf took 142 ms at n = 16384
        on the H200, the blocked LU 182 ms).  Unrefined, the factorization's
        accuracy is the solution's, and the ozaki updates are native or better
        (ozaki.matmul's "accurate" mode).  Triangular systems are not factored.

    Returns
    -------
    x : ndarray, the shape of the broadcast b, of the inputs' array type.
    info : SolveInfo, with ``full_output``.

    Raises
    ------
    LinAlgError
        Exactly singular a; a not positive definite with "pos".
    ValueError
        Shapes, unknown ``assume_a`` or ``factorization``, infs/NaNs, ``full_output``
        without ``refine``.

    Warns
    -----
    LinAlgWarning
        When the estimated reciprocal 1-norm condition number is below eps (as scipy).
    """
    if assume_a not in _STRUCTURES:
        raise ValueError(f"{assume_a} is not a recognized matrix structure")
    if full_output and not refine:
        raise ValueError("full_output needs refine=True: the error bounds come from the refinement")
    if factorization is None:
        factorization = "vendor" if refine else "ozaki"
    _util.check_factorization(factorization)
    kind = _STRUCTURES[assume_a]
    ns, a, b2, batch, vector = _util.solve_operands(a, b, check_finite)
    xp = ns.xp
    n, k = b2.shape[-2:]
    out = xp.empty(tuple(batch) + (n, k), dtype=xp.float64)
    bb = xp.broadcast_to(b2, out.shape)
    rconds = np.full(batch, np.inf)
    norm = np.zeros(tuple(batch) + (k, 3))
    comp = np.zeros(tuple(batch) + (k, 3))
    iters = np.zeros(tuple(batch) + (k,), dtype=np.int64)
    for index, mat in _util.stack_items(xp, a, batch):
        rhs = bb[index]
        if n == 0:
            out[index] = rhs
            norm[index] = comp[index] = (1.0, 0.0, np.inf)     # nothing to be wrong about
            continue
        op, f = _factor(ns, kind, mat, lower, transposed, block_size, index, factorization)
        rc = condest.rcond_1(ns, op, f)
        rconds[index] = rc
        _warn_rcond(rc, index)
        x = f.solve(rhs)
        if refine:
            x, tracks = _refine.refine(ns, op, rhs, f, x)
            iters[index] = [t.iterations for t in tracks]
            if full_output:
                rn = condest.skeel_rcond(ns, op, f)
                rcs = [condest.skeel_rcond(ns, op, f, x[:, j]) for j in range(k)]
                norm[index], comp[index] = _refine.error_bounds(tracks, n, rn, rcs)
        out[index] = x
    x = out[..., 0] if vector else out
    if not full_output:
        return x
    if vector:
        norm, comp, iters = norm[..., 0, :], comp[..., 0, :], iters[..., 0]
    return x, SolveInfo(rconds, norm, comp, iters)


def _warn_rcond(rc, index):
    if rc < np.finfo(np.float64).eps:
        warnings.warn(f"An ill-conditioned matrix detected: slice {list(index) or 0} has rcond = {rc}.",
                      LinAlgWarning, stacklevel=3)


def det(a, overwrite_a=False, check_finite=True, *, block_size=None):
    """Determinant of a matrix (scipy.linalg.det), from the blocked LU.

    Returns a numpy float64 for a 2-D numpy input, an array of the stack's shape
    otherwise (cupy inputs: a cupy array, 0-d for one matrix).  An exactly
    singular matrix gives 0.0.
    """
    ns = namespace(a)
    xp = ns.xp
    a = _util.square_stack(ns, a, "a", check_finite)
    batch = a.shape[:-2]
    out = np.empty(batch, dtype=np.float64)
    for index, mat in _util.stack_items(xp, a, batch):
        if mat.shape[0] == 0:
            out[index] = 1.0
            continue
        f = LUFactor.factor(ns, mat, block_size)
        if f.zero_pivot() >= 0:
            out[index] = 0.0
            continue
        sign = -1.0 if int((f.piv != np.arange(f.n)).sum()) % 2 else 1.0
        out[index] = sign * float(xp.prod(xp.diagonal(f.lu)))
    if ns.gpu:
        return xp.asarray(out)
    return out[()] if a.ndim == 2 else out


def inv(a, overwrite_a=False, check_finite=True, *, block_size=None):
    """Inverse of a matrix (scipy.linalg.inv): lu_solve of the identity on the blocked LU.

    Raises LinAlgError for an exactly singular matrix and warns (LinAlgWarning)
    when the estimated reciprocal 1-norm condition number is below eps, as scipy.
    """
    ns = namespace(a)
    xp = ns.xp
    a = _util.square_stack(ns, a, "a", check_finite)
    batch = a.shape[:-2]
    out = xp.empty(a.shape, dtype=xp.float64)
    for index, mat in _util.stack_items(xp, a, batch):
        n = mat.shape[0]
        if n == 0:
            continue
        f = LUFactor.factor(ns, mat, block_size)
        if f.zero_pivot() >= 0:
            raise LinAlgError("singular matrix")
        _warn_rcond(condest.rcond_1(ns, mat, f), index)
        out[index] = f.solve(xp.eye(n), block_size)
    return out
