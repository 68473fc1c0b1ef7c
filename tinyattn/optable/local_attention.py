"""The op-table rows of ops/local_attention.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Callable, List

import numpy as np

from .. import functional as F
from .cases import LONG_SEQUENCES_DOC, qkv_cases, softmax_rows
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


def _band_ref(window: int, causal: bool) -> Callable[..., np.ndarray]:
    """Dense softmax attention with |i - j| <= window (causal: 0 <= i - j <= window)."""
    def ref(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        s = q.shape[-2]
        distance = np.arange(s)[:, None] - np.arange(s)[None, :]       # i - j, (S, S)
        keep = (distance <= window) & (distance >= (0 if causal else -window))
        scores = np.where(keep, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
        return softmax_rows(scores) @ v
    return ref


ROWS: List[OpSpec] = from_pairs([
    ("local_attention", lambda q, k, v: F.local_attention(q, k, v, 2), _band_ref(2, False),
     qkv_cases(((2, 2, 7, 3), (1, 1, 4, 2))), LONG_SEQUENCES_DOC + "local-attention"),
    ("local_attention_causal", lambda q, k, v: F.local_attention(q, k, v, 2, causal=True),
     _band_ref(2, True), qkv_cases(((2, 2, 7, 3), (1, 2, 5, 2))),
     LONG_SEQUENCES_DOC + "local-attention"),
    ("local_attention_window_over_S", lambda q, k, v: F.local_attention(q, k, v, 9),
     _band_ref(9, False), qkv_cases(((1, 2, 5, 3),)), LONG_SEQUENCES_DOC + "local-attention"),
    ("local_attention_window_0", lambda q, k, v: F.local_attention(q, k, v, 0, causal=True),
     _band_ref(0, True), qkv_cases(((1, 2, 4, 3),)), LONG_SEQUENCES_DOC + "local-attention"),
])
