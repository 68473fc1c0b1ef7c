"""The op-table row of ops/local_response_norm.py: the function under test, a NumPy reference
written as a loop over channels, and its input cases."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import functional as F
from .cases import normal_cases
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]


def _lrn_ref(x: np.ndarray, size: int, alpha: float, beta: float, k: float) -> np.ndarray:
    out = np.empty_like(x)
    channels = x.shape[1]
    for c in range(channels):
        window = x[:, max(0, c - size // 2):min(channels, c + (size - 1) // 2 + 1)]
        base = k + alpha / size * (window ** 2).sum(axis=1)
        out[:, c] = x[:, c] / base ** beta
    return out


ROWS: List[OpSpec] = from_pairs([
    ("local_response_norm", lambda x: F.local_response_norm(x, 3, alpha=0.5, beta=0.75, k=2.0),
     lambda x: _lrn_ref(x, 3, 0.5, 0.75, 2.0), normal_cases((2, 5, 3)),
     "local-response-normalisation"),
    ("local_response_norm_4d", lambda x: F.local_response_norm(x, 2, alpha=0.5, k=2.0),
     lambda x: _lrn_ref(x, 2, 0.5, 0.75, 2.0), normal_cases((2, 4, 3, 2)),
     "local-response-normalisation"),
    ("local_response_norm_even", lambda x: F.local_response_norm(x, 4, alpha=1.0, beta=0.6),
     lambda x: _lrn_ref(x, 4, 1.0, 0.6, 1.0), normal_cases((2, 6, 3)),
     "local-response-normalisation"),
])
