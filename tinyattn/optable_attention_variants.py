"""The op-table rows of the long-sequence attention variants (docs/long_sequences.md):
local (band) attention, Performer / linear attention, Linformer and T5's relative position
bias. Self-contained: each row is (name, fn, NumPy reference, case maker, docs section), the
case maker returning (label, arrays) pairs; optable.py turns them into ``OpSpec`` rows.
"""
from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np

from . import functional as F
from .nn.long_attention import linformer_attention, relative_position_bucket
from .ops.performer import orthogonal_random_features
from .tensor import Tensor, tensor

__all__ = ["ATTENTION_VARIANT_ROWS"]

Case = Tuple[str, Tuple[np.ndarray, ...]]
Row = Tuple[str, Callable[..., Tensor], Callable[..., np.ndarray],
            Callable[[np.random.Generator], List[Case]], str]

_DOC = "long_sequences.md#"
_FEATURES = 8           # random features of the Performer rows (fixed: the backward's setting)


def _qkv_cases(shapes: Tuple[Tuple[int, ...], ...]) -> Callable[..., List[Case]]:
    """q, k, v of shape (B, h, S, d) for each (B, h, S, d) (v one narrower)."""
    def make(rng: np.random.Generator) -> List[Case]:
        cases = []
        for b, h, s, d in shapes:
            label = f"q, k ({b}, {h}, {s}, {d}) v ({b}, {h}, {s}, {d - 1})"
            cases.append((label, (rng.standard_normal((b, h, s, d)),
                                  rng.standard_normal((b, h, s, d)),
                                  rng.standard_normal((b, h, s, d - 1)))))
        return cases
    return make


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def _band_ref(window: int, causal: bool) -> Callable[..., np.ndarray]:
    """Dense softmax attention with |i - j| <= window (causal: 0 <= i - j <= window)."""
    def ref(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        s = q.shape[-2]
        distance = np.arange(s)[:, None] - np.arange(s)[None, :]       # i - j, (S, S)
        keep = (distance <= window) & (distance >= (0 if causal else -window))
        scores = np.where(keep, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
        return _softmax_rows(scores) @ v
    return ref


def _projection(d_k: int) -> np.ndarray:
    return orthogonal_random_features(_FEATURES, d_k, np.random.default_rng(7))


def _performer_fn(causal: bool, kind: str) -> Callable[..., Tensor]:
    def fn(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        return F.performer_attention(q, k, v, _FEATURES, causal=causal, feature_type=kind,
                                     projection=_projection(q.shape[-1]))
    return fn


def _performer_ref(causal: bool, kind: str) -> Callable[..., np.ndarray]:
    """phi(q) phi(k)^T, lower triangle if causal, rows normalised, times v: the S x S form."""
    def ref(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        if kind == "elu":
            qf, kf = (np.where(x > 0, x + 1, np.exp(x)) for x in (q, k))
        else:
            w, root = _projection(q.shape[-1]), q.shape[-1] ** -0.25
            qf, kf = (np.exp((x * root) @ w.T - 0.5 * ((x * root) ** 2).sum(-1, keepdims=True))
                      / np.sqrt(_FEATURES) for x in (q, k))
        weights = qf @ np.swapaxes(kf, -1, -2)
        if causal:
            weights = np.tril(weights)
        return (weights / weights.sum(axis=-1, keepdims=True)) @ v
    return ref


def _linformer_cases(rng: np.random.Generator) -> List[Case]:
    """q, k, v (2, 2, 6, 4), E and F (3, 6); and S = 5 < seq_len = 6 (E's first 5 columns)."""
    cases = []
    for s in (6, 5):
        q, k, v = (rng.standard_normal((2, 2, s, 4)) for _ in range(3))
        e, f = rng.standard_normal((3, 6)) / np.sqrt(3), rng.standard_normal((3, 6)) / np.sqrt(3)
        cases.append((f"q, k, v (2, 2, {s}, 4) E, F (3, 6)", (q, k, v, e, f)))
    return cases


def _linformer_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, e: np.ndarray,
                   f: np.ndarray) -> np.ndarray:
    s = k.shape[-2]
    k_low, v_low = e[:, :s] @ k, f[:, :s] @ v
    return _softmax_rows(q @ np.swapaxes(k_low, -1, -2) / np.sqrt(q.shape[-1])) @ v_low


_BUCKETS = relative_position_bucket(np.arange(12)[None, :] - np.arange(4, 12)[:, None], False,
                                    8, 20)           # (S_q 8, S_k 12), causal buckets


def _relative_bias_fn(weight: Tensor) -> Tensor:
    ids = tensor(_BUCKETS, device=weight.device)
    return F.embedding(ids, weight).permute(2, 0, 1)     # (S_q, S_k, h) -> (h, S_q, S_k)


ATTENTION_VARIANT_ROWS: List[Row] = [
    ("local_attention", lambda q, k, v: F.local_attention(q, k, v, 2), _band_ref(2, False),
     _qkv_cases(((2, 2, 7, 3), (1, 1, 4, 2))), _DOC + "local-attention"),
    ("local_attention_causal", lambda q, k, v: F.local_attention(q, k, v, 2, causal=True),
     _band_ref(2, True), _qkv_cases(((2, 2, 7, 3), (1, 2, 5, 2))), _DOC + "local-attention"),
    ("local_attention_window_over_S", lambda q, k, v: F.local_attention(q, k, v, 9),
     _band_ref(9, False), _qkv_cases(((1, 2, 5, 3),)), _DOC + "local-attention"),
    ("local_attention_window_0", lambda q, k, v: F.local_attention(q, k, v, 0, causal=True),
     _band_ref(0, True), _qkv_cases(((1, 2, 4, 3),)), _DOC + "local-attention"),
    ("performer_attention", _performer_fn(False, "positive"), _performer_ref(False, "positive"),
     _qkv_cases(((2, 2, 5, 4),)), _DOC + "performer-favor"),
    ("performer_attention_causal", _performer_fn(True, "positive"),
     _performer_ref(True, "positive"), _qkv_cases(((1, 2, 70, 4),)), _DOC + "performer-favor"),
    ("linear_attention_elu", _performer_fn(False, "elu"), _performer_ref(False, "elu"),
     _qkv_cases(((2, 2, 5, 3),)), _DOC + "performer-favor"),
    ("linear_attention_elu_causal", _performer_fn(True, "elu"), _performer_ref(True, "elu"),
     _qkv_cases(((1, 1, 67, 3),)), _DOC + "performer-favor"),
    ("linformer_attention", linformer_attention, _linformer_ref, _linformer_cases,
     _DOC + "linformer"),
    ("relative_position_bias", _relative_bias_fn,
     lambda w: np.transpose(w[_BUCKETS], (2, 0, 1)),
     lambda rng: [("weight (8 buckets, 3 heads), S_q 8, S_k 12", (rng.standard_normal((8, 3)),))],
     _DOC + "relative-position-bias-t5"),
]
