"""The attention of recurrent encoder-decoders, before the transformer
(docs/nn.md#attention-for-recurrent-models):

- ``AdditiveAttention`` (Bahdanau, Cho, Bengio 2014, "Neural Machine Translation by Jointly
  Learning to Align and Translate"): score(q, k) = w_v^T tanh(W_q q + W_k k), a one-hidden-
  layer network per (query, key) pair; the d2l book's ``AdditiveAttention``.
- ``LuongAttention`` (Luong, Pham, Manning 2015, "Effective Approaches to Attention-based
  Neural Machine Translation"): score "dot" q^T k, "general" q^T W_a k, or "concat" (the
  additive form with a joint matrix).

Shapes: B batch, Q queries (decoder steps), K keys (encoder steps), d_q, d_k, d_v widths.
Both take (queries (B, Q, d_q), keys (B, K, d_k), values (B, K, d_v)) and an optional
``valid_lens`` (B,) (d2l's: only the first valid_lens[b] keys count) or ``key_padding_mask``
(B, K) (PyTorch's polarity: True = padding), and return the context (B, Q, d_v); the weights
(B, Q, K) are kept in ``self.attention_weights`` for the alignment picture. Both are made of
ops with hand-derived backwards (linear, tanh, softmax, masked_fill, bmm); nothing new is
differentiated here.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import functional as F
from ..ops import bmm
from ..ops.masking import masked_fill
from ..tensor import Tensor, tensor
from .layers import Dropout, Linear
from .module import Module

__all__ = ["AdditiveAttention", "LuongAttention"]


def _key_mask(scores: Tensor, valid_lens: Any, key_padding_mask: Optional[Tensor],
              op: str) -> Optional[Tensor]:
    """A (B, 1, K) boolean mask, True where a key must be ignored, or None."""
    batch, keys = scores.shape[0], scores.shape[-1]
    if valid_lens is not None and key_padding_mask is not None:
        raise ValueError(f"{op}: pass valid_lens or key_padding_mask, not both")
    if valid_lens is not None:
        lens = np.asarray(valid_lens.numpy() if isinstance(valid_lens, Tensor) else valid_lens)
        if lens.shape != (batch,):
            raise ValueError(f"{op}: valid_lens must have one length per batch row, shape "
                             f"({batch},), got {lens.shape}")
        if (lens < 1).any() or (lens > keys).any():
            raise ValueError(f"{op}: valid_lens must be between 1 and the {keys} keys, got "
                             f"{lens.tolist()}")
        return tensor(np.arange(keys)[None, None, :] >= lens[:, None, None])
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (batch, keys):
            raise ValueError(f"{op}: key_padding_mask must be (B, K) = ({batch}, {keys}), got "
                             f"{tuple(key_padding_mask.shape)}")
        return key_padding_mask.reshape(batch, 1, keys)                   # (B, K) -> (B, 1, K)
    return None


def _attend(module: Module, scores: Tensor, values: Tensor, valid_lens: Any,
            key_padding_mask: Optional[Tensor], op: str) -> Tensor:
    mask = _key_mask(scores, valid_lens, key_padding_mask, op)
    if mask is not None:
        scores = masked_fill(scores, mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)                                   # (B, Q, K)
    module.attention_weights = weights
    return bmm(module.dropout(weights), values)                          # (B, Q, d_v)


def _check(op: str, queries: Tensor, keys: Tensor, values: Tensor) -> None:
    if queries.ndim != 3 or keys.ndim != 3 or values.ndim != 3:
        raise ValueError(f"{op}: queries, keys and values must be 3-D (B, Q, d_q), (B, K, d_k), "
                         f"(B, K, d_v); got {queries.shape}, {keys.shape}, {values.shape}")
    if keys.shape[:2] != values.shape[:2] or queries.shape[0] != keys.shape[0]:
        raise ValueError(f"{op}: keys {keys.shape} and values {values.shape} need the same "
                         f"(B, K) and queries {queries.shape} the same B")


class AdditiveAttention(Module):
    """Bahdanau's attention: scores w_v^T tanh(W_q q + W_k k), (B, Q, K), then softmax over
    the keys and the weighted sum of the values. d2l's argument order: (key_size,
    query_size, num_hiddens, dropout). W_q, W_k, w_v have no bias (as d2l)."""

    def __init__(self, key_size: int, query_size: int, num_hiddens: int,
                 dropout: float = 0.0) -> None:
        self.W_k = Linear(key_size, num_hiddens, bias=False)
        self.W_q = Linear(query_size, num_hiddens, bias=False)
        self.w_v = Linear(num_hiddens, 1, bias=False)
        self.dropout = Dropout(dropout)
        self.attention_weights: Optional[Tensor] = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Any = None,
                key_padding_mask: Optional[Tensor] = None) -> Tensor:
        _check("AdditiveAttention", queries, keys, values)
        q, k = self.W_q(queries), self.W_k(keys)            # (B, Q, h), (B, K, h)
        features = F.tanh(q.unsqueeze(2) + k.unsqueeze(1))  # (B, Q, 1, h) + (B, 1, K, h)
        scores = self.w_v(features).squeeze(-1)             # (B, Q, K, 1) -> (B, Q, K)
        return _attend(self, scores, values, valid_lens, key_padding_mask,
                       "AdditiveAttention")


class LuongAttention(Module):
    """Luong's attention with ``score`` "dot" (q^T k; d_q = d_k), "general" (q^T W_a k) or
    "concat" (w_v^T tanh(W_a [q; k])). ``scale=True`` divides the scores by sqrt(d_k) (the
    transformer's choice; Luong's paper does not scale)."""

    def __init__(self, query_size: int, key_size: int, score: str = "general",
                 num_hiddens: Optional[int] = None, dropout: float = 0.0,
                 scale: bool = False) -> None:
        if score not in ("dot", "general", "concat"):
            raise ValueError(f"LuongAttention: score must be 'dot', 'general' or 'concat', got "
                             f"{score!r}")
        if score == "dot" and query_size != key_size:
            raise ValueError(f"LuongAttention: the 'dot' score needs query_size == key_size, "
                             f"got {query_size} and {key_size}; use score='general'")
        self.score, self.scale = score, scale
        self.query_size, self.key_size = query_size, key_size
        if score == "general":
            self.W_a = Linear(key_size, query_size, bias=False)
        elif score == "concat":
            hidden = num_hiddens or query_size
            self.W_a = Linear(query_size + key_size, hidden, bias=False)
            self.w_v = Linear(hidden, 1, bias=False)
        self.dropout = Dropout(dropout)
        self.attention_weights: Optional[Tensor] = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Any = None,
                key_padding_mask: Optional[Tensor] = None) -> Tensor:
        _check("LuongAttention", queries, keys, values)
        if self.score == "concat":
            # W_a [q; k] = W_q q + W_k k with W_a = [W_q | W_k]: no (B, Q, K, d_q + d_k) copy
            w_q = self.W_a.weight[:, :self.query_size]
            w_k = self.W_a.weight[:, self.query_size:]
            q, k = F.linear(queries, w_q), F.linear(keys, w_k)    # (B, Q, h), (B, K, h)
            scores = self.w_v(F.tanh(q.unsqueeze(2) + k.unsqueeze(1))).squeeze(-1)  # (B,Q,K)
        else:
            projected = self.W_a(keys) if self.score == "general" else keys   # (B, K, d_q)
            scores = bmm(queries, projected.transpose(1, 2))    # (B, Q, d_q) @ (B, d_q, K)
        if self.scale:
            scores = scores / math.sqrt(self.key_size)
        return _attend(self, scores, values, valid_lens, key_padding_mask, "LuongAttention")

    def extra_repr(self) -> str:
        return (f"query_size={self.query_size}, key_size={self.key_size}, "
                f"score={self.score!r}, scale={self.scale}")
