"""The op-table rows of ops/pointwise_loss.py: each row names an op, the function under test, a
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


def _bce_logits_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    w, q = _BCE_WEIGHT[:x.shape[-1]], _POS_WEIGHT[:x.shape[-1]]
    log_s, log_1ms = -np.logaddexp(0, -x), -np.logaddexp(0, x)
    return np.asarray((-w * (q * y * log_s + (1 - y) * log_1ms)).mean())


def _bce_ref(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray((-(y * np.log(p) + (1 - y) * np.log1p(-p))).mean())


_BCE_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])


_POS_WEIGHT = np.array([3.0, 1.0, 0.5, 2.0])


def _bce_logits_fn(x: Tensor, y: Tensor) -> Tensor:
    n = x.shape[-1]
    return F.binary_cross_entropy_with_logits(x, y, weight=device_tensor(_BCE_WEIGHT[:n], x),
                                              pos_weight=device_tensor(_POS_WEIGHT[:n], x))


def _loss_pair(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4))
    gap = rng.choice([-1.0, 1.0], (3, 4)) * (0.1 + rng.random((3, 4)))   # never x == y
    return [case_pair("(3, 4) (3, 4)", x, x + gap)]


def _bce_logits_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) targets (3, 4)", 3 * rng.standard_normal((3, 4)),
                      rng.random((3, 4)))]


def _bce_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(3, 4) probabilities", scipy.special.expit(2 * rng.standard_normal((3, 4))),
               rng.random((3, 4)))]


ROWS: List[OpSpec] = from_pairs([
    ("mse_loss", F.mse_loss, lambda x, y: np.asarray(((x - y) ** 2).mean()), _loss_pair,
     "pointwise-losses"),
    ("l1_loss", lambda x, y: F.l1_loss(x, y, reduction="sum"),
     lambda x, y: np.asarray(np.abs(x - y).sum()), _loss_pair, "pointwise-losses"),
    ("bce_with_logits", _bce_logits_fn, _bce_logits_ref, _bce_logits_cases,
     "pointwise-losses"),
    ("binary_cross_entropy", F.binary_cross_entropy, _bce_ref, _bce_cases, "pointwise-losses"),
])
