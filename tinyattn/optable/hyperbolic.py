"""The op-table rows of ops/hyperbolic.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import normal_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


_HYPER = "sinh-cosh-and-exp2"


ROWS: List[OpSpec] = from_pairs([
    ("sinh", ops.sinh, np.sinh, normal_cases((3, 4)), _HYPER),
    ("cosh", ops.cosh, np.cosh, normal_cases((3, 4)), _HYPER),
    ("exp2", ops.exp2, np.exp2, normal_cases((3, 4)), _HYPER),
])
