"""Matrix norms: ``linalg.matrix_norm``, ``linalg.norm`` and ``torch.norm(p="nuc")``
(docs/derivations.md#matrix-norms).

For a matrix A (the two dims ``dim``, batched over the others), with singular values s:

    "fro"  sqrt(sum A_ij^2)           (the vector 2-norm of the entries)
    "nuc"  sum_i s_i                  (nuclear norm)
    2, -2  max_i s_i, min_i s_i       (spectral norm, smallest singular value)
    1, -1  max / min over columns of sum_i |A_ij|
    inf, -inf  max / min over rows of sum_j |A_ij|

Each is composed of ops with hand-derived backwards: the singular values come from
``Svdvals`` (ds_i = u_i^T dA v_i, so dA = U diag(g) V^T): the nuclear norm's gradient is
U V^T and the spectral norm's u_1 v_1^T (shared equally by tied maxima, as amax shares, as
torch's does); the others are abs, sum and amax/amin, each with its own derivation.
"""
from __future__ import annotations

import math
from typing import Any, Sequence, Tuple

from ..precision import is_floating
from ..tensor import Tensor
from .linalg_ops import svdvals
from .reduce import amax, amin
from .shape import _normalize_dim
from .stats import norm

__all__ = ["matrix_norm", "linalg_norm", "nuclear_norm"]

_ORDS = ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)
_TORCH_TYPE_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                     "uint8": "Byte", "bool": "Bool"}


def _check_matrix(A: Tensor, ord: Any, dim: Any, op: str  # noqa: A002, N803 - torch's names
                  ) -> Tuple[int, int]:
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}: A must be a Tensor, got {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not is_floating(A.dtype):
        name = _TORCH_TYPE_NAMES.get(str(A.dtype), str(A.dtype))
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{name} (convert with .float())")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    rows, cols = (_normalize_dim(int(d), A.ndim, op) for d in dims)
    if rows == cols:
        raise RuntimeError(f"{op}: dims must be different. Got ({dims[0]}, {dims[1]})")
    if isinstance(ord, bool) or ord not in _ORDS:
        raise RuntimeError(f"{op}: Order {ord} not supported (use 'fro', 'nuc', 2, -2, 1, -1, "
                           f"inf or -inf)")
    return rows, cols


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Sequence[int] = (-2, -1),  # noqa: A002, N803
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``torch.linalg.matrix_norm``: the ``ord`` norm of the matrices over the two dims
    ``dim`` (see the module docstring); ``dtype`` converts A first."""
    if dtype is not None and isinstance(A, Tensor):
        A = A.to(dtype)
    rows, cols = _check_matrix(A, ord, dim, "linalg.matrix_norm")
    if ord == "fro":
        return norm(A, 2, dim=(rows, cols), keepdim=keepdim)
    summed, across = (rows, cols) if ord in (1, -1) else (cols, rows)   # 1: columns, inf: rows
    if A.shape[rows] == 0 or A.shape[cols] == 0:         # torch: every norm of no entries is 0
        if ord == "nuc":       # torch: the sum of no singular values; its SVD keeps only its
            return A.sum((rows, cols), keepdim=keepdim)     # outputs, so A may be written
        if ord in (2, -2) or A.shape[across] == 0:
            return A.abs().sum((rows, cols), keepdim=keepdim)
        # 1, -1, inf, -inf with a max/min over a dim that has elements: torch's way (below),
        # whose max/min keeps its result (a write to it before backward raises)
    if ord in ("nuc", 2, -2):
        moved = A.movedim((rows, cols), (-2, -1))         # (..., m, n): svdvals' layout
        s = svdvals(moved)                                # (..., min(m, n)), descending
        out = s.sum(-1) if ord == "nuc" else (amax(s, -1) if ord == 2 else amin(s, -1))
        if keepdim:
            for d in sorted((rows, cols)):
                out = out.unsqueeze(d)
        return out
    sums = A.abs().sum(summed, keepdim=True)
    pick = amax if ord > 0 else amin
    out = pick(sums, across, keepdim=True)
    return out if keepdim else out.squeeze((rows, cols))


def linalg_norm(A: Tensor, ord: Any = None, dim: Any = None,  # noqa: A002, N803 - torch's
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``torch.linalg.norm``: a vector norm when ``dim`` is one dim (or A is 1-D), a matrix
    norm when it is two (or A is 2-D); with neither ord nor dim, the 2-norm of all entries."""
    if dtype is not None and isinstance(A, Tensor):
        A = A.to(dtype)
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
    if ord is None:
        if dim is not None and not isinstance(dim, int) and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim)
        return norm(A, 2, dim=dim, keepdim=keepdim)
    if dim is None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.ndim}D.")
        dim = (-2, -1) if A.ndim == 2 else -1
    if isinstance(dim, int) or len(dim) == 1:
        if isinstance(ord, str):
            raise RuntimeError(f"linalg.vector_norm: a vector norm takes a number as ord, got "
                               f"{ord!r} (a matrix norm needs two dims)")
        return norm(A, ord, dim=dim, keepdim=keepdim)
    return matrix_norm(A, ord, dim, keepdim)


def nuclear_norm(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """``torch.norm(x, p="nuc")``: the nuclear norm of a 2-D x, or of the matrices over the
    two dims ``dim``."""
    if dim is None:
        if x.ndim != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(map(str, range(x.ndim)))} (norm(p='nuc') without "
                               f"dim needs a 2-D input)")
        dim = (-2, -1)
    return matrix_norm(x, "nuc", dim, keepdim)
