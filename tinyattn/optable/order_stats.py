"""The op-table rows of ops/order_stats.py: quantiles of distinct values (a number q, and a
q tensor, whose gradient flows through the interpolation weight), each interpolation, NaN
ignored by nanquantile, and the mode of distinct values (each appears once: the smallest)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import distinct_cases
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "quantile-and-mode"


def _with_q(rng: np.random.Generator) -> List[Case]:
    x = distinct_cases((3, 6))(rng)[0][1][0]
    return [("(3, 6) q (3,)", (x, rng.uniform(0.05, 0.95, size=3)))]


def _with_nans(rng: np.random.Generator) -> List[Case]:
    x = distinct_cases((3, 5))(rng)[0][1][0]
    x[0, 1] = x[2, 3] = x[2, 0] = np.nan
    return [("(3, 5) three NaNs", (x,))]


ROWS: List[OpSpec] = from_pairs([
    *[(f"quantile_{how}", lambda x, how=how: ops.quantile(x, 0.3, -1, interpolation=how),
       lambda x, how=how: np.quantile(x, 0.3, axis=-1, method=how),
       distinct_cases((3, 6), (7,)), _SECTION)
      for how in ("linear", "lower", "higher", "midpoint", "nearest")],
    ("quantile_q_tensor", lambda x, q: ops.quantile(x, q, dim=1, keepdim=True),
     lambda x, q: np.quantile(x, q, axis=1, keepdims=True), _with_q, _SECTION),
    ("nanquantile", lambda x: ops.nanquantile(x, 0.6, dim=1),
     lambda x: np.nanquantile(x, 0.6, axis=1), _with_nans, _SECTION),
    ("mode_distinct", lambda x: ops.mode(x, 1).values, lambda x: x.min(axis=1),
     distinct_cases((3, 5)), _SECTION),
])
