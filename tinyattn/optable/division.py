"""The op-table rows of ops/division.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair, shapes_label
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


_DIVISION = "remainder-fmod-and-floor-divide"


def _whole_division_cases(rng: np.random.Generator) -> List[Case]:
    """a = b q with q a quarter or more away from every integer (the jumps of floor and
    trunc), b away from 0, both signs; one case broadcasts b over rows."""
    cases = []
    for a_shape, b_shape in (((3, 4), (3, 4)), ((3, 4), (4,))):
        b = rng.choice([-1.0, 1.0], b_shape) * (0.5 + rng.random(b_shape))
        q = rng.integers(-4, 4, a_shape) + 0.25 + 0.5 * rng.random(a_shape)
        cases.append(case_pair(shapes_label(a_shape, b_shape), b * q, b))
    return cases


ROWS: List[OpSpec] = from_pairs([
    ("remainder", ops.remainder, np.remainder, _whole_division_cases, _DIVISION),
    ("fmod", ops.fmod, np.fmod, _whole_division_cases, _DIVISION),
    ("floor_divide", ops.floor_divide, np.floor_divide, _whole_division_cases, _DIVISION),
    ("div_floor", lambda a, b: ops.div(a, b, rounding_mode="floor"), np.floor_divide,
     _whole_division_cases, _DIVISION),
    ("div_trunc", lambda a, b: ops.div(a, b, rounding_mode="trunc"),
     lambda a, b: np.trunc(a / b), _whole_division_cases, _DIVISION),
])
