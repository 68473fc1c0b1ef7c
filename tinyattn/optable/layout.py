"""The op-table rows of ops/layout.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


ROWS: List[OpSpec] = from_pairs([
    ("expand", lambda x: ops.expand(x, 2, 3, 4), lambda x: np.broadcast_to(x, (2, 3, 4)),
     normal_cases((3, 1), (4,)), "expand-and-repeat"),
    ("repeat", lambda x: ops.repeat(x, 2, 1, 3), lambda x: np.tile(x, (2, 1, 3)),
     normal_cases((3, 4), (2, 1, 2)), "expand-and-repeat"),
    ("flip", lambda x: ops.flip(x, (0, -1)), lambda x: np.flip(x, (0, -1)),
     normal_cases((3, 4), (2, 3, 4)), "flip"),
    ("tril", lambda x: ops.tril(x, -1), lambda x: np.tril(x, -1), normal_cases((4, 5), (2, 3, 3)),
     "tril-and-triu"),
    ("triu", lambda x: ops.triu(x, 1), lambda x: np.triu(x, 1), normal_cases((4, 5), (2, 3, 3)),
     "tril-and-triu"),
])
