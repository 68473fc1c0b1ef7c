"""The op-table rows of ops/nll.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special

from .. import functional as F
from ..tensor import Tensor
from .cases import case_pair, device_tensor
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


def _nll_ref(logp: np.ndarray, target: np.ndarray) -> np.ndarray:
    w = _CLASS_WEIGHT[:logp.shape[1]]
    valid = target != -100
    safe = np.where(valid, target, 0)
    weights = w[safe] * valid
    return np.asarray(-(weights * logp[np.arange(len(target)), safe]).sum() / weights.sum())


_CLASS_WEIGHT = np.array([1.0, 2.0, 0.5, 3.0, 1.5])


def _nll_fn(logp: Tensor, target: Tensor) -> Tensor:
    return F.nll_loss(logp, target, weight=device_tensor(_CLASS_WEIGHT[:logp.shape[1]], logp))


def _nll_cases(rng: np.random.Generator) -> List[Case]:
    logp = scipy.special.log_softmax(rng.standard_normal((5, 4)), axis=1)
    return [case_pair("(5, 4) target with ignore_index", logp, np.array([1, -100, 3, 3, 0]))]


ROWS: List[OpSpec] = from_pairs([
    ("nll_loss", _nll_fn, _nll_ref, _nll_cases, "nll-loss"),
])
