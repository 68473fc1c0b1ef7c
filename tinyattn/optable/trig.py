"""The op-table rows of ops/trig.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import unary_cases
from .spec import OpSpec


__all__ = ["ROWS"]


ROWS: List[OpSpec] = [
    OpSpec("sin", ops.sin, np.sin, unary_cases(), "sin-and-cos"),
    OpSpec("cos", ops.cos, np.cos, unary_cases(), "sin-and-cos"),
]
