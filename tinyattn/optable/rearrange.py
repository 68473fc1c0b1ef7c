"""The op-table rows of ops/rearrange.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import GRIDS, INDEX, normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


ROWS: List[OpSpec] = from_pairs([
    ("roll", lambda x: ops.roll(x, (1, -2), (0, 2)), lambda x: np.roll(x, (1, -2), (0, 2)),
     normal_cases((2, 3, 4)), INDEX),
    ("roll_flat", lambda x: ops.roll(x, 5), lambda x: np.roll(x, 5), normal_cases((3, 4)), INDEX),
    ("diagonal", lambda x: ops.diagonal(x, 1, 2, 0),
     lambda x: np.diagonal(x, 1, 2, 0), normal_cases((3, 2, 4)), INDEX),
    ("diagonal_below", lambda x: ops.diagonal(x, -1), lambda x: np.diagonal(x, -1),
     normal_cases((4, 3)), INDEX),
    ("trace", ops.trace, lambda x: np.asarray(np.trace(x)), normal_cases((3, 4)), INDEX),
    ("diag_of_matrix", lambda x: ops.diag(x, 1), lambda x: np.diag(x, 1), normal_cases((3, 5)),
     GRIDS),
])
