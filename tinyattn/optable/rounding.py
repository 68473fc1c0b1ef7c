"""The op-table rows of ops/rounding.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np

from .. import ops
from .cases import away_from_zero_cases, case_pair, normal_cases, shapes_label
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


_POINTWISE = "rounding-and-other-pointwise-ops"


def _off_grid(*shapes: Tuple[int, ...]) -> Callable[..., List[Case]]:
    """Values a quarter away from every integer and half-integer (the jumps of floor, ceil,
    round and trunc)."""
    return lambda rng: [case_pair(shapes_label(s), rng.integers(-8, 8, s) / 2 + 0.25)
                        for s in shapes]


ROWS: List[OpSpec] = from_pairs([
    ("square", ops.square, np.square, normal_cases((3, 4), (2, 3, 5)), _POINTWISE),
    ("reciprocal", ops.reciprocal, np.reciprocal, away_from_zero_cases((3, 4)), _POINTWISE),
    ("log1p", ops.log1p, np.log1p,
     lambda rng: [case_pair("(3, 4)", rng.random((3, 4)) * 3 - 0.7)], _POINTWISE),
    ("expm1", ops.expm1, np.expm1, normal_cases((3, 4), (5,)), _POINTWISE),
    ("nan_to_num", lambda x: ops.nan_to_num(x, nan=1.5), lambda x: np.nan_to_num(x, nan=1.5),
     normal_cases((3, 4)), _POINTWISE),
    ("sign", ops.sign, np.sign, away_from_zero_cases((3, 4)), _POINTWISE),
    ("floor", ops.floor, np.floor, _off_grid((3, 4)), _POINTWISE),
    ("ceil", ops.ceil, np.ceil, _off_grid((3, 4)), _POINTWISE),
    ("round", ops.round, np.round, _off_grid((3, 4)), _POINTWISE),
    ("round_decimals", lambda x: ops.round(x, decimals=1), lambda x: np.round(x, 1),
     lambda rng: [case_pair("(3, 4)", np.round(rng.standard_normal((3, 4)), 1) + 0.02)],
     _POINTWISE),
    ("trunc", ops.trunc, np.trunc, _off_grid((3, 4)), _POINTWISE),
])
