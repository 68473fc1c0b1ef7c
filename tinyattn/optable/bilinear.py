"""The op-table row of ops/bilinear.py (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]


def _cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(4, 3) (4, 2) (5, 3, 2) (5,)", rng.standard_normal((4, 3)),
                      rng.standard_normal((4, 2)), rng.standard_normal((5, 3, 2)),
                      rng.standard_normal(5)),
            case_pair("(2, 3, 2) (2, 3, 4) (3, 2, 4) (3,)", rng.standard_normal((2, 3, 2)),
                      rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 2, 4)),
                      rng.standard_normal(3))]


def _reference(x1: np.ndarray, x2: np.ndarray, weight: np.ndarray,
               bias: np.ndarray) -> np.ndarray:
    return np.einsum("...i,kij,...j->...k", x1, weight, x2) + bias


ROWS: List[OpSpec] = from_pairs([
    ("bilinear", F.bilinear, _reference, _cases, "bilinear"),
])
