"""The op-table rows of ops/scatter.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import SCATTER_REDUCE, case_pair, scatter_reduce_cases
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _scatter_number_ref(reduce: str):
    def reference(x: np.ndarray, index: np.ndarray) -> np.ndarray:
        count = np.zeros(x.shape)
        np.add.at(count, (index, np.broadcast_to(np.arange(index.shape[1]), index.shape)), 1)
        return x + 1.5 * count if reduce == "add" else x * 1.5 ** count
    return reference


def _bincount_ref(ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.bincount(ids, weights=weights, minlength=7)


_SCATTER = "scatter-scatter_add-and-index_add"


def _scatter_cases(rng: np.random.Generator) -> List[Case]:
    """self (3, 4), index (2, 4) along dim 0 with distinct rows per column (scatter refuses
    two writes into one element while recording), src (3, 5): larger than index."""
    index = np.array([[0, 2, 1, 0], [2, 0, 2, 1]])
    return [case_pair("(3, 4) dim 0 index (2, 4) src (3, 5)", rng.standard_normal((3, 4)), index,
               rng.standard_normal((3, 5)))]


def _scatter_add_cases(rng: np.random.Generator) -> List[Case]:
    """Repeated positions (row 0 of column 0 twice) add up."""
    index = np.array([[0, 2, 1, 0], [0, 0, 2, 0], [1, 2, 2, 2]])
    return [case_pair("(3, 4) dim 0 index (3, 4) with repeats src (4, 4)",
               rng.standard_normal((3, 4)), index, rng.standard_normal((4, 4)))]


def _along(x: np.ndarray, index: np.ndarray, src: np.ndarray, add: bool) -> np.ndarray:
    out = x.copy()
    cols = np.broadcast_to(np.arange(index.shape[1]), index.shape)
    region = src[:index.shape[0], :index.shape[1]]
    if add:
        np.add.at(out, (index, cols), region)
    else:
        out[index, cols] = region
    return out


def _index_add_ref(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, (slice(None), index), -1.5 * src)
    return out


ROWS: List[OpSpec] = from_pairs([
    (f"scatter_value_{reduce}", lambda x, i, r=reduce: ops.scatter(x, 0, i, 1.5, reduce=r),
     _scatter_number_ref(reduce), lambda rng: [case[:1] + (case[1][:2],)
                                                for case in scatter_reduce_cases(rng)],
     SCATTER_REDUCE)
    for reduce in ("add", "multiply")
]) + from_pairs([
    ("bincount_weights", lambda i, w: ops.bincount(i, w, minlength=7), _bincount_ref,
     lambda rng: [case_pair("ids (6,) weights (6,)", np.array([1, 3, 1, 0, 5, 1]),
                     rng.standard_normal(6))], SCATTER_REDUCE),
    ("scatter", lambda x, i, s: ops.scatter(x, 0, i, s),
     lambda x, i, s: _along(x, i, s, add=False), _scatter_cases, _SCATTER),
    ("scatter_value", lambda x, i, s: ops.scatter(x, 0, i, value=2.5) * s[:3, :4],
     lambda x, i, s: _along(x, i, np.full(s.shape, 2.5), add=False) * s[:3, :4],
     _scatter_cases, _SCATTER),
    ("scatter_add", lambda x, i, s: ops.scatter_add(x, 0, i, s),
     lambda x, i, s: _along(x, i, s, add=True), _scatter_add_cases, _SCATTER),
    ("index_add", lambda x, i, s: ops.index_add(x, 1, i, s, alpha=-1.5), _index_add_ref,
     lambda rng: [case_pair("(3, 4) dim 1 index [3, 0, 3] source (3, 3)",
                     rng.standard_normal((3, 4)), np.array([3, 0, 3]),
                     rng.standard_normal((3, 3)))], _SCATTER),
])
