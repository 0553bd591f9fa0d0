"""ozaki.linalg: dense linear algebra on exact products, scipy.linalg's signatures.

    >>> import numpy as np, ozaki.linalg
    >>> a = np.random.default_rng(0).standard_normal((64, 64))
    >>> x, info = ozaki.linalg.solve(a, np.ones(64), full_output=True)

Blocked right-looking LU and Cholesky (and Householder QR for lstsq): panels on
LAPACK / cuSOLVER, triangular solves on the vendor's TRSM, the GEMM/SYRK-shaped
trailing updates on ``ozaki.matmul`` under the current ``ozaki.config``.
``solve`` factors with the vendor's getrf / potrf by default (its
``factorization``: refined, the factorization only supplies corrections),
then refines with every residual b - A x computed exactly and rounded once
(one exact-mode product), and on request returns xGESVXX-style normwise and
componentwise error bounds.  numpy arrays run on the CPU, cupy
arrays on the GPU (same code, array-module dispatch in ``_backend``).
"""

from ._backend import BLOCK_SIZE
from .basic import SolveInfo, det, inv, solve
from .decomp_cholesky import cho_factor, cho_solve, cholesky
from .decomp_lu import lu_factor, lu_solve
from .decomp_qr import lstsq
from .triangular import solve_triangular
from .verify import verify_cases

__all__ = ["solve", "SolveInfo", "lu_factor", "lu_solve", "cholesky", "cho_factor", "cho_solve",
           "solve_triangular", "inv", "det", "lstsq", "verify_cases", "BLOCK_SIZE"]
