"""The op-table rows of ops/flat_index.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair
from .index_writes import REGIONS
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]


def _take_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) index (2, 2) (repeated, negative)", rng.standard_normal((3, 4)),
                      np.array([[0, -1], [5, 5]]))]


def _put_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) index (3,) (repeated) source (3,)", rng.standard_normal((3, 4)),
                      np.array([1, -2, 1]), rng.standard_normal(3))]


def _put_ref(x, index, source):
    flat = x.reshape(-1).copy()
    np.add.at(flat, index % flat.size, source)
    return flat.reshape(x.shape)


def _reduce_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) index (2,) source (3, 2)", rng.standard_normal((3, 4)),
                      np.array([1, 3]), rng.standard_normal((3, 2)))]


def _amax_ref(x, index, source):
    out = x.copy()
    out[:, index] = np.maximum(out[:, index], source)
    return out


ROWS: List[OpSpec] = from_pairs([
    ("take", ops.take, lambda x, i: x.reshape(-1)[i], _take_cases, REGIONS),
    ("put_accumulate", lambda x, i, s: ops.put(x, i, s, accumulate=True), _put_ref,
     _put_cases, REGIONS),
    ("index_reduce_amax", lambda x, i, s: ops.index_reduce(x, 1, i, s, "amax"), _amax_ref,
     _reduce_cases, REGIONS),
])
