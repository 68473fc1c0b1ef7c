"""The op-table rows of ops/picks.py: each row names an op, the function under test, a NumPy
reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair
from .index_writes import REGIONS
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]


def _masked_select_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) mask (4,) (broadcast)", rng.standard_normal((3, 4)),
                      np.array([True, False, True, True]))]


def _take_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) indices (1, 2) (broadcast, repeated, negative)",
                      rng.standard_normal((3, 4)), np.array([[-1, 3]]))]


def _unfold_ref(x):
    starts = range(0, x.shape[1] - 3 + 1, 2)
    return np.stack([x[:, s:s + 3] for s in starts], axis=1)     # (2, W, 3)


ROWS: List[OpSpec] = from_pairs([
    ("masked_select", ops.masked_select, lambda x, m: np.broadcast_to(x, x.shape)[
        np.broadcast_to(m, x.shape)], _masked_select_cases, REGIONS),
    ("take_along_dim", lambda x, i: ops.take_along_dim(x, i, 1),
     lambda x, i: np.take_along_axis(x, np.broadcast_to(i % 4, (3, 2)), 1), _take_cases,
     REGIONS),
    ("unfold_overlapping", lambda x: ops.unfold(x, 1, 3, 2), _unfold_ref,
     lambda rng: [case_pair("(2, 7) size 3 step 2", rng.standard_normal((2, 7)))], REGIONS),
])
