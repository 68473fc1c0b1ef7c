"""The op-table rows of ops/dropout.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import unary_cases
from .spec import OpSpec


__all__ = ["ROWS"]


ROWS: List[OpSpec] = [
    OpSpec("dropout", lambda x: F.dropout(x, 0.3, generator=np.random.default_rng(0)),
           lambda x: x * (np.random.default_rng(0).random(x.shape) >= 0.3) / 0.7,
           unary_cases(), "dropout"),
]
