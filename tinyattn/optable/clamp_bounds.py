"""The op-table rows of ops/clamp_bounds.py: clamp with tensor bounds (each row names an op,
the function under test, a NumPy reference and its input cases)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import normal_inputs
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]

_CLAMP = "clone-and-clamp"

ROWS: List[OpSpec] = from_pairs([
    ("clamp_tensor_bounds", lambda x, lo, hi: ops.clamp(x, min=lo, max=hi - 1.0),
     lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi - 1.0),
     normal_inputs((3, 4), (4,), (3, 1)), _CLAMP),
    ("clamp_tensor_min", lambda x, lo: ops.clamp(x, min=lo), np.maximum,
     normal_inputs((3, 4), (3, 4)), _CLAMP),
    ("clamp_tensor_max", lambda x, hi: ops.clamp(x, max=hi), np.minimum,
     normal_inputs((3, 4), (1, 4)), _CLAMP),
])
