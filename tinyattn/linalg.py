"""``tinyattn.linalg``: torch.linalg's names for the products tinyattn has (ops/blas.py,
docs/derivations.md#more-products), its matrix functions (ops/linalg_ops.py) and
decompositions (ops/decompositions.py, docs/derivations.md#matrix-decompositions).

    import tinyattn.linalg
    tinyattn.linalg.vecdot(x, y); tinyattn.linalg.multi_dot([a, b, c])
"""
from __future__ import annotations

from .ops import linalg_cross as cross
from .ops import linalg_diagonal as diagonal
from .ops import (det, eigvalsh, inv, matmul, matrix_power, multi_dot, slogdet, solve,
                  svdvals, vecdot, vector_norm)
from .ops import LinAlgError, cholesky, cholesky_ex, eigh, qr, svd
from .ops import cond, lstsq, matrix_exp, matrix_rank, pinv, solve_triangular, vander

from .ops import linalg_norm as norm
from .ops import matrix_norm

__all__ = ["cross", "diagonal", "det", "eigvalsh", "inv", "matmul", "matrix_power", "multi_dot",
           "slogdet", "solve", "svdvals", "vecdot", "vector_norm"]
__all__ += ["norm", "matrix_norm"]
__all__ += ["LinAlgError", "cholesky", "cholesky_ex", "eigh", "qr", "svd", "cond", "lstsq",
            "matrix_exp", "matrix_rank", "pinv", "solve_triangular", "vander"]
