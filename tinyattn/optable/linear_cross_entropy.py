"""The op-table row of ops/linear_cross_entropy.py: the function under test (class ids and a
K-dimensional weight), a NumPy reference (log-softmax of x W^T, picked at the targets) and its
input cases."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import Case, case_pair, shapes_label
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]


def _cases(x_shape, w_shape, target_shape, classes):
    def make(rng: np.random.Generator) -> List[Case]:
        return [case_pair(shapes_label(x_shape, w_shape), rng.standard_normal(x_shape),
                          rng.standard_normal(w_shape),
                          rng.integers(0, classes, target_shape).astype(np.int64))]
    return make


def _reference(x: np.ndarray, w: np.ndarray, target: np.ndarray) -> np.ndarray:
    logits = (x @ w.reshape(-1, w.shape[-1]).T).reshape((x.shape[0],) + w.shape[:-1])
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    picked = np.take_along_axis(log_probs, target[:, None], axis=1)[:, 0]
    return -picked.mean()


ROWS: List[OpSpec] = from_pairs([
    ("linear_cross_entropy", lambda x, w, t: F.linear_cross_entropy(x, w, t), _reference,
     _cases((6, 4), (5, 4), (6,), 5), "cross-entropy"),
    ("linear_cross_entropy_kdim", lambda x, w, t: F.linear_cross_entropy(x, w, t), _reference,
     _cases((3, 4), (5, 2, 4), (3, 2), 5), "cross-entropy"),
])
