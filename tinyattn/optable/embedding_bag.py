"""The op-table rows of ops/embedding_bag.py (tinyattn/optable/__init__.py assembles the
table). The references loop over the bags one at a time."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from ..tensor import tensor
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_IDS = np.array([1, 4, 4, 0, 2, 5, 1, 3])
_OFFSETS = np.array([0, 3, 3, 6])          # bags [0, 3), [3, 3) (empty), [3, 6), [6, 8)


def _weight_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(6, 3)", rng.standard_normal((6, 3)))]


def _weighted_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(6, 3) (8,)", rng.standard_normal((6, 3)), rng.standard_normal(8))]


def _bags(weight: np.ndarray, reduce, per_sample=None) -> np.ndarray:
    ends = list(_OFFSETS[1:]) + [len(_IDS)]
    out = np.zeros((len(_OFFSETS), weight.shape[1]))
    for b, (start, end) in enumerate(zip(_OFFSETS, ends)):
        if end > start:
            rows = weight[_IDS[start:end]]
            if per_sample is not None:
                rows = rows * per_sample[start:end, None]
            out[b] = reduce(rows)
    return out


def _call(weight, mode, per_sample=None):
    device = weight.device
    return F.embedding_bag(tensor(_IDS, device=device), weight,
                           tensor(_OFFSETS, device=device), mode=mode,
                           per_sample_weights=per_sample)


ROWS: List[OpSpec] = from_pairs([
    ("embedding_bag_sum", lambda w, s: _call(w, "sum", s),
     lambda w, s: _bags(w, lambda r: r.sum(0), s), _weighted_cases, "embedding-bag"),
    ("embedding_bag_mean", lambda w: _call(w, "mean"),
     lambda w: _bags(w, lambda r: r.mean(0)), _weight_cases, "embedding-bag"),
    ("embedding_bag_max", lambda w: _call(w, "max"),
     lambda w: _bags(w, lambda r: r.max(0)), _weight_cases, "embedding-bag"),
])
