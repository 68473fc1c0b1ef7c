"""The op-table rows of ops/statistics.py (cov, corrcoef: compositions, checked like every
op): plain, with frequency and importance weights, and without Bessel's correction."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "covariance-and-correlation"


def _cases(rng: np.random.Generator) -> List[Case]:
    return [("(3, 5)", (rng.standard_normal((3, 5)),)), ("(6,)", (rng.standard_normal(6),))]


def _weighted_cases(rng: np.random.Generator) -> List[Case]:
    return [("(3, 5) (5,) (5,)", (rng.standard_normal((3, 5)),
                                  rng.integers(1, 4, size=5).astype(np.int64),
                                  rng.uniform(0.5, 2.0, size=5)))]


ROWS: List[OpSpec] = from_pairs([
    ("cov", ops.cov, np.cov, _cases, _SECTION),
    ("cov_no_correction", lambda x: ops.cov(x, correction=0),
     lambda x: np.cov(x, ddof=0), _cases, _SECTION),
    ("cov_weighted", lambda x, f, a: ops.cov(x, fweights=f, aweights=a),
     lambda x, f, a: np.cov(x, fweights=f, aweights=a), _weighted_cases, _SECTION),
    ("corrcoef", ops.corrcoef, lambda x: np.corrcoef(x),
     lambda rng: _cases(rng)[:1], _SECTION),
])
