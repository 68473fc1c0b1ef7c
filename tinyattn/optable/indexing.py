"""The op-table rows of ops/indexing.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair, distinct_cases
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _topk_ref(x: np.ndarray) -> np.ndarray:
    return -np.sort(-x, axis=-1)[..., :2]


def _gather_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) index (3, 5) repeats", rng.standard_normal((3, 4)),
               np.array([[0, 0, 3, 1, 0], [2, 2, 2, 2, 1], [3, 0, 1, 2, 3]]))]


ROWS: List[OpSpec] = from_pairs([
    ("sort", lambda x: ops.sort(x, 1, descending=True).values, lambda x: -np.sort(-x, axis=1),
     distinct_cases((3, 4), (2, 3, 4)), "sort-and-topk"),
    ("topk", lambda x: ops.topk(x, 2).values, _topk_ref, distinct_cases((3, 4), (2, 3, 5)),
     "sort-and-topk"),
    ("gather", lambda x, i: ops.gather(x, 1, i), lambda x, i: np.take_along_axis(x, i, 1),
     _gather_cases, "gather"),
])
