"""The op-table rows of ops/blas.py: products composed of matmul, mul, add and reshapes,
checked like every op (their gradients are those of the ops they are built from)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import normal_inputs
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "more-products"


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.cross(a, b, axis=-1)


ROWS: List[OpSpec] = from_pairs([
    ("addmv", lambda x, m, v: ops.addmv(x, m, v, beta=0.5, alpha=2.0),
     lambda x, m, v: 0.5 * x + 2.0 * m @ v, normal_inputs((3,), (3, 4), (4,)), _SECTION),
    ("baddbmm", ops.baddbmm, lambda x, a, b: x + a @ b,
     normal_inputs((2, 3, 5), (2, 3, 4), (2, 4, 5)), _SECTION),
    ("addbmm", ops.addbmm, lambda x, a, b: x + (a @ b).sum(0),
     normal_inputs((3, 5), (2, 3, 4), (2, 4, 5)), _SECTION),
    ("addr", ops.addr, lambda x, a, b: x + np.outer(a, b),
     normal_inputs((3, 4), (3,), (4,)), _SECTION),
    ("kron", ops.kron, np.kron, normal_inputs((2, 3), (3, 2)), _SECTION),
    ("tensordot", lambda a, b: ops.tensordot(a, b, dims=([1, 2], [0, 1])),
     lambda a, b: np.tensordot(a, b, axes=([1, 2], [0, 1])),
     normal_inputs((2, 3, 4), (3, 4, 5)), _SECTION),
    ("inner", ops.inner, np.inner, normal_inputs((2, 4), (3, 4)), _SECTION),
    ("linalg_cross", ops.linalg_cross, _cross, normal_inputs((4, 3), (4, 3)), _SECTION),
    ("vecdot", ops.vecdot, lambda x, y: (x * y).sum(-1), normal_inputs((3, 4), (4,)),
     _SECTION),
    ("multi_dot", lambda a, b, c: ops.multi_dot([a, b, c]), lambda a, b, c: a @ b @ c,
     normal_inputs((4,), (4, 3), (3, 2)), _SECTION),
    ("matrix_power", lambda a: ops.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3),
     normal_inputs((3, 3)), _SECTION),
])
