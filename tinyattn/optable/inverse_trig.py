"""The op-table rows of ops/inverse_trig.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair, normal_cases
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


_TRIG = "tan-asin-acos-atan-and-atan2"


def _inside_unit(rng: np.random.Generator) -> List[Case]:
    """asin and acos: |x| < 0.9, away from the infinite slope at +-1."""
    return [case_pair("(3, 4)", rng.uniform(-0.9, 0.9, (3, 4)))]


def _tan_cases(rng: np.random.Generator) -> List[Case]:
    """|x| < 1.2: away from the poles at +-pi/2."""
    return [case_pair("(3, 4)", rng.uniform(-1.2, 1.2, (3, 4)))]


def _atan2_cases(rng: np.random.Generator) -> List[Case]:
    """y (3, 4) against x (4,) (broadcast), x kept positive: away from the branch cut."""
    return [case_pair("(3, 4) (4,)", rng.standard_normal((3, 4)), rng.uniform(0.3, 2.0, 4)),
            case_pair("(2, 3) (2, 3)", rng.standard_normal((2, 3)), rng.uniform(0.3, 2.0, (2, 3)))]


ROWS: List[OpSpec] = from_pairs([
    ("tan", ops.tan, np.tan, _tan_cases, _TRIG),
    ("asin", ops.asin, np.arcsin, _inside_unit, _TRIG),
    ("acos", ops.acos, np.arccos, _inside_unit, _TRIG),
    ("atan", ops.atan, np.arctan, normal_cases((3, 4)), _TRIG),
    ("atan2", ops.atan2, np.arctan2, _atan2_cases, _TRIG),
])
