"""The op-table row of ops/ctc_loss.py: F.ctc_loss of log_softmax(logits) against a NumPy
reference that enumerates every path (C^T of them, a tiny case) and keeps those that collapse
to the target. Through log_softmax, as CTC is used: torch's (and tinyattn's) gradient with
respect to log_probs holds an extra exp(log_probs) term that only log_softmax's backward
cancels, so the gradcheck is taken with respect to the logits."""
from __future__ import annotations

import itertools
from typing import List

import numpy as np

from .. import functional as F
from .cases import Case, case_pair
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]

_TARGETS = np.array([[1, 2], [2, 2]])          # the second needs a blank between its 2s
_LENGTHS = np.array([2, 2])


def _collapse(path) -> tuple:
    merged = [label for i, label in enumerate(path) if i == 0 or label != path[i - 1]]
    return tuple(label for label in merged if label != 0)


def _brute_force(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    steps, batch, classes = log_probs.shape
    losses = []
    for n in range(batch):
        total = 0.0
        for path in itertools.product(range(classes), repeat=steps):
            if _collapse(path) == tuple(targets[n, :_LENGTHS[n]]):
                total += np.exp(sum(log_probs[t, n, c] for t, c in enumerate(path)))
        losses.append(-np.log(total))
    return np.array(losses)


def _cases(rng: np.random.Generator) -> List[Case]:
    return [case_pair("(4, 2, 3)", rng.standard_normal((4, 2, 3)), _TARGETS)]


ROWS: List[OpSpec] = from_pairs([
    ("ctc_loss", lambda logits, t: F.ctc_loss(F.log_softmax(logits, -1), t, [4, 4],
                                              list(_LENGTHS), reduction="none"),
     _brute_force, _cases, "ctc-loss"),
])
