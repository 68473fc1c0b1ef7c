"""The op-table rows of ops/interleave.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from ..tensor import Tensor
from .cases import unary_cases
from .spec import OpSpec


__all__ = ["ROWS"]

_COUNTS = np.array([2, 0, 1, 3])        # slice i of dim 1 repeated _COUNTS[i] times


ROWS: List[OpSpec] = [
    OpSpec("repeat_interleave", lambda x: ops.repeat_interleave(x, 3, dim=1),
           lambda x: np.repeat(x, 3, axis=1), unary_cases(shapes=((3, 4), (2, 3, 2))),
           "repeat_interleave"),
    OpSpec("repeat_interleave_flat", lambda x: ops.repeat_interleave(x, 2),
           lambda x: np.repeat(x.reshape(-1), 2), unary_cases(shapes=((2, 3),)),
           "repeat_interleave"),
    OpSpec("repeat_interleave_counts",      # a count per slice, 0 included (RepeatCounts)
           lambda x: ops.repeat_interleave(x, Tensor._wrap(_COUNTS), dim=1),
           lambda x: np.repeat(x, _COUNTS, axis=1), unary_cases(shapes=((2, 4), (3, 4, 2))),
           "repeat_interleave"),
]
