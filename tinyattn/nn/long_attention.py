"""Modules for long sequences and relative positions (docs/long_sequences.md).

- ``LinformerSelfAttention``: keys and values projected along the sequence axis from S to k
  positions by learned (k, S) matrices, so the scores are (S, k), not (S, S) (Wang et al.).
  Composed from derived ops (linear, matmul, the fused attention): no op of its own.
- ``RelativePositionBias``: T5's learned bias per head and per bucket of the relative
  distance key - query, added to the scores (Raffel et al.).

Shapes: B batch, S sequence, D = embed_dim, h heads, d_k = D / h, k the projected length.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import backend
from .. import functional as F
from ..ops.matmul import matmul
from ..tensor import Tensor
from .layers import Linear, normal_parameter
from .module import Module

__all__ = ["LinformerSelfAttention", "RelativePositionBias", "linformer_attention",
           "relative_position_bucket"]


def linformer_attention(q: Tensor, k: Tensor, v: Tensor, proj_k: Tensor,
                        proj_v: Tensor, scale: Optional[float] = None) -> Tensor:
    """softmax(q (E k)^T * scale) (F v): q, k, v (..., S, d_k), E = proj_k and F = proj_v
    (k, S_max) with S <= S_max (their first S columns are used); scale defaults to
    1 / sqrt(d_k). O(S * k) memory."""
    s = k.shape[-2]
    if s > proj_k.shape[-1]:
        raise ValueError(f"linformer_attention: the sequence has {s} positions but the "
                         f"projections were built for seq_len={proj_k.shape[-1]}; build the "
                         f"module with seq_len >= {s}")
    e = proj_k if s == proj_k.shape[-1] else proj_k[:, :s]
    f = proj_v if s == proj_v.shape[-1] else proj_v[:, :s]
    k_low = matmul(e, k)                    # (k, S) @ (..., S, d_k) -> (..., k, d_k)
    v_low = matmul(f, v)                    # (k, S) @ (..., S, d_v) -> (..., k, d_v)
    return F.scaled_dot_product_attention(q, k_low, v_low, scale=scale)   # (.., S, k) scores


class LinformerSelfAttention(Module):
    """Self-attention with keys and values projected from S to k positions.

    x (B, S, D) -> (B, S, D). q, k, v, out are Linear(D, D) as in ``MultiHeadAttention``;
    ``proj_k`` (and ``proj_v`` unless ``share_kv``, which reuses proj_k) are (k, seq_len)
    Parameters ~ N(0, 1/k). A shorter input (S < seq_len) uses their first S columns.
    There is no causal form: each projected key mixes every position, future included.
    """

    def __init__(self, embed_dim: int, num_heads: int, seq_len: int, k: int,
                 share_kv: bool = False, bias: bool = True):
        for name, value in (("embed_dim", embed_dim), ("num_heads", num_heads),
                            ("seq_len", seq_len), ("k", k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LinformerSelfAttention: {name} must be a positive int, "
                                 f"got {value!r}")
        if embed_dim % num_heads != 0:
            raise ValueError(f"LinformerSelfAttention: embed_dim={embed_dim} is not divisible "
                             f"by num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.seq_len, self.k = embed_dim, num_heads, seq_len, k
        self.share_kv = bool(share_kv)
        self.head_dim = embed_dim // num_heads
        self.q_proj = Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        self.proj_k = normal_parameter((k, seq_len), 1.0 / math.sqrt(k))
        self.proj_v = None if self.share_kv else normal_parameter((k, seq_len),
                                                                  1.0 / math.sqrt(k))

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"seq_len={self.seq_len}, k={self.k}, share_kv={self.share_kv}")

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != self.embed_dim:
            raise ValueError(f"LinformerSelfAttention: expected x (B, S, {self.embed_dim}), "
                             f"got {getattr(x, 'shape', type(x).__name__)}")
        batch, s, _ = x.shape
        h, d_k = self.num_heads, self.head_dim

        def heads(t: Tensor) -> Tensor:
            return t.reshape(batch, s, h, d_k).transpose(1, 2)  # (B, S, D) -> (B, h, S, d_k)
        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        proj_v = self.proj_k if self.proj_v is None else self.proj_v
        out = linformer_attention(q, k, v, self.proj_k, proj_v)   # (B, h, S, d_k)
        out = out.transpose(1, 2).reshape(batch, s, self.embed_dim)  # -> (B, S, D)
        return self.out_proj(out)


def relative_position_bucket(relative_position: Any, bidirectional: bool = True,
                             num_buckets: int = 32, max_distance: int = 128) -> Any:
    """T5's bucket (int64, same shape) of each relative position (key - query).

    Bidirectional: half the buckets for keys after the query (position > 0), half for the
    rest. Within a half (n buckets), distances below n/2 get their own bucket; larger ones
    share buckets spaced logarithmically up to ``max_distance``, beyond which all fall in
    the last. Unidirectional (causal): keys after the query all get bucket 0. The log is
    taken in float32, as Hugging Face's T5 does, so every bucket matches it exactly.
    """
    xp = backend.get_array_module(relative_position)
    rel = xp.asarray(relative_position).astype(xp.int64)
    buckets = xp.zeros(rel.shape, dtype=xp.int64)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(xp.int64) * num_buckets
        rel = xp.abs(rel)
    else:
        rel = -xp.minimum(rel, 0)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    ratio = xp.maximum(rel, 1).astype(xp.float32) / xp.float32(max_exact)
    with np.errstate(divide="ignore", invalid="ignore"):    # x / log(1) if max_distance is small
        spread = (xp.log(ratio) / xp.float32(math.log(max_distance / max_exact))
                  * xp.float32(num_buckets - max_exact))
        large = max_exact + xp.where(is_small, 0, spread).astype(xp.int64)
    large = xp.minimum(large, num_buckets - 1)
    return buckets + xp.where(is_small, rel, large)


class RelativePositionBias(Module):
    """T5's relative position bias: a learned scalar per (bucket, head), added to the scores.

    ``forward(query_length, key_length)`` -> (1, h, S_q, S_k) Tensor, differentiable in
    ``weight`` (num_buckets, h). Query i sits at position (S_k - S_q) + i and key j at j
    (new queries after a key/value cache line up with the end of the keys; Hugging Face's
    ``compute_bias(S, S)`` is the square case). Pass it as ``attn_bias`` of
    ``MultiHeadAttention``, or use ``GPTConfig(pos_encoding="t5")`` (unidirectional).
    """

    def __init__(self, num_buckets: int = 32, max_distance: int = 128,
                 num_heads: Optional[int] = None, bidirectional: bool = True):
        for name, value in (("num_buckets", num_buckets), ("max_distance", max_distance),
                            ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RelativePositionBias: {name} must be a positive int, got "
                                 f"{value!r}")
        smallest = 4 if bidirectional else 2
        if num_buckets < smallest:
            raise ValueError(f"RelativePositionBias: num_buckets={num_buckets} is too few; "
                             f"{'bidirectional ' if bidirectional else ''}T5 buckets need at "
                             f"least {smallest} (the default is 32)")
        exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
        if max_distance <= exact:
            raise ValueError(f"RelativePositionBias: max_distance={max_distance} must exceed "
                             f"the {exact} distances that get a bucket each (num_buckets="
                             f"{num_buckets}); T5's log-spaced buckets run from there to "
                             f"max_distance (T5 uses 32 buckets, max_distance 128)")
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.num_heads, self.bidirectional = num_heads, bool(bidirectional)
        self.weight = normal_parameter((num_buckets, num_heads), 0.02)

    def extra_repr(self) -> str:
        return (f"num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
                f"num_heads={self.num_heads}, bidirectional={self.bidirectional}")

    def buckets(self, query_length: int, key_length: int) -> Any:
        """(S_q, S_k) int64 buckets, on the weight's device."""
        xp = backend.get_array_module(self.weight._data)
        q_pos = xp.arange(key_length - query_length, key_length)[:, None]   # (S_q, 1)
        k_pos = xp.arange(key_length)[None, :]                              # (1, S_k)
        return relative_position_bucket(k_pos - q_pos, self.bidirectional, self.num_buckets,
                                        self.max_distance)

    def forward(self, query_length: int, key_length: Optional[int] = None) -> Tensor:
        key_length = query_length if key_length is None else key_length
        if query_length > key_length:
            raise ValueError(f"RelativePositionBias: query_length={query_length} is longer "
                             f"than key_length={key_length}; queries line up with the last "
                             f"keys")
        ids = Tensor._wrap(self.buckets(query_length, key_length))
        values = F.embedding(ids, self.weight)          # (S_q, S_k) -> (S_q, S_k, h)
        return values.permute(2, 0, 1).unsqueeze(0)     # -> (1, h, S_q, S_k)
