from .decomp_lu import lu_factor, lu_solve
from .decomp_cholesky import cholesky, cho_factor, cho_solve
from .decomp_qr import lstsq
from .triangular import solve_triangular
from .basic import solve, inv, det, SolveInfo
