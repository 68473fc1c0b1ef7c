"""The op-table rows of ops/masking.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F, ops
from .cases import SCATTER_REDUCE, case_pair, op_case
from .spec import Case, OpCase, OpSpec, from_pairs


__all__ = ["ROWS"]


def _masked_fill_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case("(3, 4) mask (3, 4)", rng.standard_normal((3, 4)),
                  rng.random((3, 4)) > 0.5),
            op_case("(2, 3, 4) mask (3, 1) broadcast", rng.standard_normal((2, 3, 4)),
                  rng.random((3, 1)) > 0.5)]


def _where_cases(rng: np.random.Generator) -> List[OpCase]:
    return [op_case("cond (3, 4), (3, 4), (4,)", rng.random((3, 4)) > 0.5,
                  rng.standard_normal((3, 4)), rng.standard_normal(4))]


def _where_scalar_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("cond (3, 4), x (3, 4), 0.0", rng.random((3, 4)) > 0.5,
               rng.standard_normal((3, 4)))]


def _index_fill_ref(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[:, index] = -2.0
    return out


ROWS: List[OpSpec] = [
    OpSpec("masked_fill", lambda x, m: F.masked_fill(x, m, -2.0),
           lambda x, m: np.where(m, -2.0, x), _masked_fill_cases, "masking"),
    OpSpec("where", F.where, np.where, _where_cases, "masking"),
] + from_pairs([
    ("where_scalar", lambda c, x: ops.where(c, x, 0.0), lambda c, x: np.where(c, x, 0.0),
     _where_scalar_cases, "where"),
    ("index_fill", lambda x, i: ops.index_fill(x, 1, i, -2.0), _index_fill_ref,
     lambda rng: [case_pair("(3, 5) dim 1 index [4, 0, 4]", rng.standard_normal((3, 5)),
                     np.array([4, 0, 4]))], SCATTER_REDUCE),
])
