"""The op-table rows of ops/linalg_ops.py (inv, det): well-conditioned square matrices (a
random matrix plus 3 I), single and batched."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "inverse-and-determinant"


def _square_cases(rng: np.random.Generator) -> List[Case]:
    return [(str(s), (rng.standard_normal(s) + 3 * np.eye(s[-1]),))
            for s in ((3, 3), (2, 4, 4))]


ROWS: List[OpSpec] = from_pairs([
    ("inv", ops.inv, np.linalg.inv, _square_cases, _SECTION),
    ("det", ops.det, np.linalg.det, _square_cases, _SECTION),
])
