"""The op-table rows of ops/loss.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special

from .. import functional as F
from .cases import op_case
from .spec import OpCase, OpSpec


__all__ = ["ROWS"]


def _cross_entropy_ref(logits, target, ignore_index=-100, label_smoothing=0.0):
    logp = scipy.special.log_softmax(logits, axis=1)
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    nll = -logp[np.arange(len(target)), safe]
    smooth = -logp.mean(axis=1)
    per_row = ((1 - label_smoothing) * nll + label_smoothing * smooth) * valid
    return np.asarray(per_row.sum() / max(valid.sum(), 1))


def _ce_cases(rng: np.random.Generator) -> List[OpCase]:
    target = np.array([1, 0, 3, 3, 2])
    ignored = np.array([1, -100, 3, -100, 2])
    return [op_case("(5, 4) target (5,)", rng.standard_normal((5, 4)), target),
            op_case("(5, 4) with ignore_index", rng.standard_normal((5, 4)), ignored)]


ROWS: List[OpSpec] = [
    OpSpec("cross_entropy", F.cross_entropy, _cross_entropy_ref, _ce_cases, "cross-entropy"),
    OpSpec("cross_entropy_smooth", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
           lambda x, t: _cross_entropy_ref(x, t, label_smoothing=0.1), _ce_cases,
           "cross-entropy"),
]
