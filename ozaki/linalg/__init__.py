from .lu import lu_factor, lu_solve, det, inv
from .cholesky import cholesky, cho_factor, cho_solve
from .triangular import solve_triangular
from .solve import solve, SolveInfo
from .qr import lstsq
