"""Iterative refinement on exact residuals, with xGESVXX-style error bounds.

The residual r = b - A x of the current solution x = x_hi + x_lo (a
double-double: its tail keeps the corrections that a float64 x would round
away) is computed exactly and rounded once, so r carries no error beyond that
one rounding (Residuals): on the GPU by one pass of an exact dot kernel over
A; otherwise as one exact-mode ozaki product

    [A | A | B] @ [x_hi; x_lo; -E]  =  A x_hi + A x_lo - B E      (E: columns of I)

whose left factor, the same in every iteration, is prepared once (ozaki.prepare:
its scans and int8 residues made at the first residual, kept for the others).
x is a double-double from the start (x_lo = 0 until a correction lands): a
plain float64 x for the first, large corrections would take the product half
as wide, [A | B] @ [x_hi; -E], but with a left factor of its own to prepare,
which costs more than the narrower products save (at n = 16384 on the H200:
38.5 ms to prepare [A | b], 7.9 ms per product with it, 18.5 ms per product
with [A | A | b]; bench/RESULTS.md, run 9803231).  The correction
dx = A^-1 r comes from the factorization; the stopping rules and the error
bounds follow Demmel, Hida, Kahan, Li, Mukherjee and Riedy, "Error bounds from
extra-precise iterative refinement" (ACM TOMS 32(2), 2006), as LAPACK's
xLA_GERFSX_EXTENDED and xGERFSX implement them, with these differences:

* x is a double-double throughout (LAPACK switches to extra precision when
  progress stalls);
* a correction is applied only while the normwise iteration contracts
  (ratio <= RTHRESH) or has converged, and a column stops at the first
  normwise stall, so a diverging iteration never moves x;
* a stalled iteration gives no bound (LAPACK keeps one), nor does one above
  sqrt(EPS) (LAPACK applies that rule to the componentwise bound only);
* the final rounding of x_hi + x_lo to float64 is added to each bound (EPS);
* an untrusted bound is +inf, not LAPACK's 1.0 (which is not a bound).
"""

import dataclasses
import math

import numpy as np

EPS = 2.0 ** -53          # unit roundoff of float64 (LAPACK's dlamch('Epsilon'))
ITHRESH = 10              # at most this many corrections per right-hand side
RTHRESH = 0.5             # a step that shrinks the correction less than this is no progress
DZ_UB = 0.25              # componentwise changes above this: the iteration is not (yet) meaningful
CWISE_WRONG = math.sqrt(EPS)

WORKING, CONVERGED, NO_PROGRESS, UNSTABLE = "working", "converged", "no progress", "unstable"


@dataclasses.dataclass
class Track:
    """One right-hand side's refinement state (Demmel et al.'s x_state and z_state)."""

    x_state: str = WORKING
    z_state: str = UNSTABLE
    dxrat_max: float = 0.0
    dzrat_max: float = 0.0
    prev_normdx: float = math.inf
    prev_dz: float = math.inf
    final_dx_x: float = math.inf
    final_dz_z: float = math.inf
    last_dxrat: float = 0.0
    last_dzrat: float = 0.0
    dx_x: float = math.inf
    dz_z: float = math.inf
    iterations: int = 0
    done: bool = False

    def step(self, normx, normdx, dz_z):
        """Record one correction (max |x|, max |dx|, max |dx_i| / |x_i|); returns whether to apply it."""
        self.iterations += 1
        if normx != 0:
            dx_x = normdx / normx
        else:
            dx_x = 0.0 if normdx == 0 else math.inf
        dxrat = _ratio(normdx, self.prev_normdx)
        dzrat = _ratio(dz_z, self.prev_dz)
        self.dx_x, self.dz_z, self.last_dxrat, self.last_dzrat = dx_x, dz_z, dxrat, dzrat

        if self.x_state == WORKING:
            if dx_x <= EPS:
                self.x_state = CONVERGED
            elif dxrat > RTHRESH:
                self.x_state = NO_PROGRESS
            else:
                self.dxrat_max = max(self.dxrat_max, dxrat)
            if self.x_state != WORKING:
                self.final_dx_x = dx_x

        if self.z_state == UNSTABLE and dz_z <= DZ_UB:
            self.z_state = WORKING
        if self.z_state == NO_PROGRESS and dzrat <= RTHRESH:
            self.z_state = WORKING
        if self.z_state == WORKING:
            if dz_z <= EPS:
                self.z_state = CONVERGED
            elif dz_z > DZ_UB:
                self.z_state = UNSTABLE
                self.dzrat_max = 0.0
                self.final_dz_z = math.inf
            elif dzrat > RTHRESH:
                self.z_state = NO_PROGRESS
            else:
                self.dzrat_max = max(self.dzrat_max, dzrat)
            if self.z_state != WORKING:
                self.final_dz_z = dz_z

        apply = self.x_state == CONVERGED or (self.x_state == WORKING and dxrat <= RTHRESH)
        if self.x_state == NO_PROGRESS:
            self.done = True
        elif self.x_state == CONVERGED:
            # keep going while the componentwise iteration still makes progress
            # (an unstable one gets a second look, as LAPACK)
            self.done = (self.z_state in (CONVERGED, NO_PROGRESS)
                         or (self.z_state == UNSTABLE and self.iterations > 1))
        self.prev_normdx, self.prev_dz = normdx, dz_z
        return apply

    def finish(self):
        """At the iteration limit, the last figures stand for the states still working."""
        if self.x_state == WORKING:
            self.final_dx_x = self.dx_x
        if self.z_state == WORKING:
            self.final_dz_z = self.dz_z
        self.done = True

    def normwise_bound(self):
        """Bound on max|x - x*| / max|x| before the last rounding; inf when the iteration says nothing.

        Only a contracting iteration (every ratio <= RTHRESH) vouches for its
        own error: a stalled one (no progress) may sit on a factorization too
        poor for the model ||e|| <= ||dx|| / (1 - rho) (measured: errors 30x its
        figure on badly scaled matrices), so it gives no bound.
        """
        if self.x_state == NO_PROGRESS:
            return math.inf
        return _geometric(self.final_dx_x, self.dxrat_max)

    def componentwise_bound(self):
        """Bound on max_i |x_i - x*_i| / |x_i| before the last rounding; inf when untrusted."""
        if self.z_state in (UNSTABLE, NO_PROGRESS):
            return math.inf
        return _geometric(self.final_dz_z, self.dzrat_max)


def _ratio(new, old):
    if math.isinf(old):
        return 0.0
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return new / old


def _geometric(step, rho):
    """||e|| <= ||dx|| / (1 - rho) when each solve's relative error is at most rho < 1."""
    if not math.isfinite(step) or rho >= 1:
        return math.inf
    return step / (1.0 - rho)


class Residuals:
    """The exact residuals b_j - A x_j of one system, rounded once, exact zeros +0.

    On the GPU one pass over A by the exact dot kernel (kernels/exact_dot.cu: each
    row's products summed in a fixed-point accumulator), where its window fits; else,
    and on the CPU, the exact-mode ozaki product with [A | A | B], prepared at its
    first use (85 ms to prepare and 17 ms a product at n = 16384 on the H200, run
    f3b94f5).  Both give the correctly rounded value; an exact zero, whose sign the
    two would set by different rules, is +0 on both (the correction of a zero
    residual is zero either way).
    """

    def __init__(self, ns, a, b):
        self.ns, self.a, self.b = ns, a, b
        self.left = None
        self.a_figures = ns.exponent_figures(a)          # A's exponent range, read once

    def __call__(self, xs, columns):
        xp = self.ns.xp
        r = None
        if self.left is None:                            # once prepared, the product serves the rest
            r = self.ns.exact_residual(self.a, xs, self.b[:, _index(xp, columns, self.b.shape[1])],
                                       self.a_figures)
        if r is None:
            if self.left is None:
                self.left = residual_operand(self.ns, self.a, self.b, parts=len(xs))
            r = exact_residual(self.ns, self.left, xs, columns)
        return xp.where(r == 0, 0.0, r)


def residual_operand(ns, a, b, parts=2):
    """[A | ... | A | B], A ``parts`` times, prepared: the left factor of the exact residuals of one system."""
    return ns.exact_left(ns.xp.concatenate([a] * parts + [b], axis=1))


def exact_residual(ns, left, xs, columns):
    """b_j - A (sum of xs)_j for the listed columns j, exact and rounded once.

    ``left`` is residual_operand(a, b, len(xs)); xs are (n, len(columns)) parts
    of the solution (x_hi, or x_hi and x_lo).
    """
    xp = ns.xp
    k = left.shape[-1] - sum(x.shape[0] for x in xs)
    if list(columns) == list(range(k)):
        sel = -xp.eye(k)                      # every column: made on the device, nothing to send
    else:
        sel = np.zeros((k, len(columns)))
        sel[list(columns), np.arange(len(columns))] = -1.0
        sel = xp.asarray(sel)
    right = xp.concatenate(list(xs) + [sel], axis=0)
    return -ns.exact_gemm(left, right)        # RN(A x - b), negated exactly


def dd_add(hi, lo, d):
    """(hi, lo) + d as a normalized double-double (TwoSum, then FastTwoSum)."""
    s = hi + d
    bb = s - hi
    err = (hi - (s - bb)) + (d - bb)
    err = err + lo
    h = s + err
    return h, err - (h - s)


def _metrics(ns, x_hi, dx):
    """(max |x|, max |dx|, max_i |dx_i| / |x_i|) per column, on the host in one transfer."""
    xp = ns.xp
    ax, adx = xp.abs(x_hi), xp.abs(dx)
    safe = xp.where(ax > 0, ax, 1.0)
    comp = xp.where(ax > 0, adx / safe, xp.where(adx > 0, xp.inf, 0.0))
    both = xp.stack([ax.max(axis=0), adx.max(axis=0), comp.max(axis=0)]) if x_hi.shape[0] else xp.zeros((3, x_hi.shape[1]))
    return ns.asnumpy(both)


def _index(xp, positions, k):
    """The columns ``positions`` of a k-column array: all of them as a slice (a view, nothing
    sent to the device), else an index array."""
    return slice(None) if list(positions) == list(range(k)) else xp.asarray(positions)


def refine(ns, a, b, factor, x0):
    """Refine x0 for a x = b (2-D b); returns (x, tracks): x rounded to float64, one Track per column."""
    xp = ns.xp
    n, k = b.shape
    x_hi = xp.array(x0, dtype=xp.float64, copy=True)
    x_lo = xp.zeros_like(x_hi)
    tracks = [Track() for _ in range(k)]
    if n == 0:
        for t in tracks:
            t.x_state = t.z_state = CONVERGED
            t.final_dx_x = t.final_dz_z = 0.0
            t.done = True
        return x_hi, tracks
    residual = Residuals(ns, a, b)
    for _ in range(ITHRESH):
        cols = [j for j, t in enumerate(tracks) if not t.done]
        if not cols:
            break
        c = _index(xp, cols, k)
        dx = factor.solve(residual([x_hi[:, c], x_lo[:, c]], cols))
        figures = _metrics(ns, x_hi[:, c], dx)          # one transfer (the exact product syncs once too)
        apply = [tracks[j].step(*figures[:, i]) for i, j in enumerate(cols)]
        use = [i for i, ok in enumerate(apply) if ok]
        if use:
            u = _index(xp, use, len(cols))
            cu = _index(xp, [cols[i] for i in use], k)
            x_hi[:, cu], x_lo[:, cu] = dd_add(x_hi[:, cu], x_lo[:, cu], dx[:, u])
    for t in tracks:
        if not t.done:
            t.finish()
    return x_hi, tracks


def error_bounds(tracks, n, rcond_norm, rcond_comp):
    """xGESVXX's err_bnds_norm and err_bnds_comp: (k, 3) arrays of [trust, bound, rcond] per column.

    rcond_norm: the reciprocal Skeel condition number of A (one float);
    rcond_comp: per column, that of A diag(x).  A bound is trusted (1.0) when
    the refinement gave one below sqrt(EPS) and the condition number is below
    1 / (n EPS); otherwise trust 0.0 and bound +inf.  A trusted bound is at least
    max(10, sqrt(n)) EPS (LAPACK's floor) and includes x's last rounding.
    """
    floor = max(10.0, math.sqrt(n)) * EPS
    ill = n * EPS
    norm = np.zeros((len(tracks), 3))
    comp = np.zeros((len(tracks), 3))
    for j, t in enumerate(tracks):
        e = t.normwise_bound()
        # a bound above sqrt(EPS) comes from an iteration that has not converged: not trusted
        ok = e < CWISE_WRONG and rcond_norm >= ill
        norm[j] = (1.0, max(floor, e * (1 + EPS) + EPS), rcond_norm) if ok else (0.0, math.inf, rcond_norm)
        e = t.componentwise_bound()
        rc = rcond_comp[j] if e < CWISE_WRONG else 0.0
        ok = math.isfinite(e) and rc >= ill
        comp[j] = (1.0, max(floor, e * (1 + EPS) + EPS), rc) if ok else (0.0, math.inf, rc)
    return norm, comp
