"""The op-table rows of ops/view_writes.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from ..tensor import Tensor
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


_SECTION = "in-place-ops-and-version-counters"


def _column_times(x: Tensor, v: Tensor) -> Tensor:
    base = x * 1.0                          # (3, 4)
    column, row = base[:, 1], base[0]       # two views; the row is made before the write
    column.mul_(v)                          # (3,) *= (3,): CopySlices on base
    return base * 2.0 + row                 # the row reads the new base (AsStrided)


def _column_times_ref(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    base = x.copy()
    base[:, 1] *= v
    return base * 2.0 + base[0]


def _transposed_add(x: Tensor, v: Tensor) -> Tensor:
    base = x * 1.0                          # (3, 4)
    base.t().add_(v)                        # (4, 3) view += (4, 3)
    return base


ROWS: List[OpSpec] = from_pairs([
    ("view_write_column", _column_times, _column_times_ref,
     lambda rng: [("x (3, 4) [:, 1] *= v (3,)", (rng.standard_normal((3, 4)),
                                                 rng.standard_normal(3)))], _SECTION),
    ("view_write_transposed", _transposed_add, lambda x, v: x + v.T,
     lambda rng: [("x (3, 4) .t() += v (4, 3)", (rng.standard_normal((3, 4)),
                                                  rng.standard_normal((4, 3))))], _SECTION),
])
