"""The op-table rows of ops/performer.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Callable, List

import numpy as np

from .. import functional as F
from ..ops.performer import orthogonal_random_features
from ..tensor import Tensor
from .cases import LONG_SEQUENCES_DOC, qkv_cases
from .spec import OpSpec, from_pairs


__all__ = ["ROWS"]


_FEATURES = 8           # random features of the Performer rows (fixed: the backward's setting)


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


ROWS: List[OpSpec] = from_pairs([
    ("performer_attention", _performer_fn(False, "positive"), _performer_ref(False, "positive"),
     qkv_cases(((2, 2, 5, 4),)), LONG_SEQUENCES_DOC + "performer-favor"),
    ("performer_attention_causal", _performer_fn(True, "positive"),
     _performer_ref(True, "positive"), qkv_cases(((1, 2, 70, 4),)),
     LONG_SEQUENCES_DOC + "performer-favor"),
    ("linear_attention_elu", _performer_fn(False, "elu"), _performer_ref(False, "elu"),
     qkv_cases(((2, 2, 5, 3),)), LONG_SEQUENCES_DOC + "performer-favor"),
    ("linear_attention_elu_causal", _performer_fn(True, "elu"), _performer_ref(True, "elu"),
     qkv_cases(((1, 1, 67, 3),)), LONG_SEQUENCES_DOC + "performer-favor"),
])
