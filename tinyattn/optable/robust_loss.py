"""The op-table rows of ops/robust_loss.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special

from .. import functional as F
from .cases import case_pair, normal_inputs
from .spec import Case, OpSpec, from_pairs


__all__ = ["ROWS"]


_LOSSES = "smooth-l1-huber-and-kl-divergence"


def _kl_cases(rng: np.random.Generator) -> List[Case]:
    logp = scipy.special.log_softmax(rng.standard_normal((4, 5)), axis=1)
    q = scipy.special.softmax(rng.standard_normal((4, 5)), axis=1)
    return [case_pair("(4, 5) log-probs, probs", logp, q)]


def _kl_ref(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.asarray((t * (np.log(t) - x)).sum() / x.shape[0])


def _kl_log_ref(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.asarray((np.exp(t) * (t - x)).sum())


def _smooth_l1_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4)) * 2
    gap = rng.choice([-1.0, 1.0], (3, 4)) * rng.choice([0.3, 0.6, 1.5, 2.5], (3, 4))
    return [case_pair("(3, 4) (3, 4)", x, x + gap)]         # |d| never at beta = 0.8 or delta = 2


def _smooth_l1_ref(x: np.ndarray, y: np.ndarray, beta: float = 0.8) -> np.ndarray:
    d = np.abs(x - y)
    return np.asarray(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta).mean())


def _huber_ref(x: np.ndarray, y: np.ndarray, delta: float = 2.0) -> np.ndarray:
    d = np.abs(x - y)
    return np.asarray(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)).sum())


ROWS: List[OpSpec] = from_pairs([
    ("smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y, beta=0.8), _smooth_l1_ref,
     _smooth_l1_cases, _LOSSES),
    ("huber_loss", lambda x, y: F.huber_loss(x, y, reduction="sum", delta=2.0), _huber_ref,
     _smooth_l1_cases, _LOSSES),
    ("kl_div", lambda x, t: F.kl_div(x, t, reduction="batchmean"), _kl_ref, _kl_cases,
     _LOSSES),
    ("kl_div_log_target", lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
     _kl_log_ref, normal_inputs((3, 4), (3, 4)), _LOSSES),
])
