"""The op-table rows of ops/margin_loss.py (tinyattn/optable/__init__.py assembles the
table). The scores are spread apart so that no hinge sits within the gradcheck's step of
its kink."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import case_pair
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "multi-class-margin-losses"


def _scores(rng: np.random.Generator, shape) -> np.ndarray:
    """Scores on a grid of 0.3 plus a small jitter: margins 1 - x_j + x_i stay >= 0.05 from 0."""
    return rng.integers(-6, 7, shape) * 0.3 + rng.uniform(-0.05, 0.05, shape) * 0.4


def _multi_cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(5, 4) ids (5,)", _scores(rng, (5, 4)), rng.integers(0, 4, 5)),
            case_pair("(6,) id ()", _scores(rng, (6,)), np.array(2))]


def _multi_reference(x: np.ndarray, y: np.ndarray, p: int = 1, margin: float = 1.0,
                     weight=None) -> np.ndarray:
    x2 = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    rows = y.reshape(-1)
    z = margin - x2[np.arange(len(rows)), rows][:, None] + x2
    z[np.arange(len(rows)), rows] = 0
    h = np.maximum(z, 0) ** p
    if weight is not None:
        h = h * weight[rows][:, None]
    return (h.sum(1) / x2.shape[1]).mean()


def _multilabel_cases(rng: np.random.Generator) -> List[Case]:
    target = np.array([[3, 0, -1, 1], [1, 1, 2, -1], [0, 1, 2, 3], [-1, 0, 0, 0]])
    return [case_pair("(4, 4) ids (4, 4)", _scores(rng, (4, 4)), target),
            case_pair("(5,) ids (5,)", _scores(rng, (5,)), np.array([4, 2, -1, 0, 1]))]


def _multilabel_reference(x: np.ndarray, target: np.ndarray) -> np.ndarray:
    x2, t2 = x.reshape(-1, x.shape[-1]), target.reshape(-1, x.shape[-1])
    total = 0.0
    for scores, ids in zip(x2, t2):
        picked = list(ids[:list(ids).index(-1)] if -1 in ids else ids)
        for j in picked:
            for i in set(range(len(scores))) - set(picked):
                total += max(0.0, 1 - scores[j] + scores[i]) / len(scores)
    return np.asarray(total / len(x2) if x.ndim == 2 else total)


ROWS: List[OpSpec] = from_pairs([
    ("multi_margin_loss", F.multi_margin_loss, _multi_reference, _multi_cases, _SECTION),
    ("multi_margin_loss_p2_weighted",
     lambda x, y: F.multi_margin_loss(x, y, p=2, margin=0.5,
                                      weight=F.softmax(x.new_ones(x.shape[-1:]), 0) * 2),
     lambda x, y: _multi_reference(x, y, 2, 0.5, np.full(x.shape[-1], 2 / x.shape[-1])),
     _multi_cases, _SECTION),
    ("multilabel_margin_loss", F.multilabel_margin_loss, _multilabel_reference,
     _multilabel_cases, _SECTION),
])
