"""Positional encodings (docs/nn.md#positional-encodings).

Attention is permutation-invariant: shuffle the keys and values together and the output does
not change. Four ways to tell the model where each token sits:

- ``SinusoidalPositionalEncoding``: add a fixed table PE (S, D) to the embeddings (Vaswani et
  al.); ``PE[pos, 2i] = sin(pos / 10000^(2i/D))``, ``PE[pos, 2i+1] = cos(same angle)``.
- ``LearnedPositionalEmbedding``: add a trained row per position (GPT-2).
- ``RotaryEmbedding``: rotate queries and keys by their position inside attention (RoPE);
  scores then depend on the distance between tokens only. The op is ``F.rope``.
- ``ALiBi``: add ``-m_h * |i - j|`` to the attention scores of head h (Press et al.).

Shapes: B batch, S sequence, D = d_model, h heads, S_q/S_k query/key lengths. ``offset`` is the
position of the first token of the input (the number of tokens already in a key/value cache).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List

import numpy as np

from .. import backend
from .. import functional as F
from ..tensor import Tensor, as_tensor
from .layers import normal_parameter
from .module import Module

__all__ = ["SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "RotaryEmbedding",
           "ALiBi", "sinusoidal_table", "alibi_slopes"]


def sinusoidal_table(max_len: int, d_model: int) -> np.ndarray:
    """(max_len, d_model) float64: sin in the even columns, cos in the odd ones.

    The angle of column pair i is pos / 10000^(2i / d_model). An odd d_model has one more sin
    column than cos columns; the last sin column keeps its own frequency.
    """
    pos = np.arange(max_len, dtype=np.float64)[:, None]                  # (S, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)                   # (ceil(D/2),)
    angles = pos / 10000.0 ** (two_i / d_model)                          # (S, ceil(D/2))
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return table


def _check_fits(name: str, offset: int, seq_len: int, max_len: int) -> None:
    if offset < 0:
        raise ValueError(f"{name}: offset must be >= 0, got {offset}")
    if offset + seq_len > max_len:
        raise ValueError(
            f"{name}: positions {offset}..{offset + seq_len - 1} do not fit in the table of "
            f"max_len={max_len} (sequence length {seq_len}, offset {offset}); use a shorter "
            f"sequence or build the encoding with a larger max_len")


def _check_input(name: str, x: Tensor, d_model: int) -> None:
    if x.ndim < 2 or x.shape[-1] != d_model:
        raise ValueError(f"{name}: expected input (..., S, d_model={d_model}), got shape "
                         f"{x.shape}")


class SinusoidalPositionalEncoding(Module):
    """x (B, S, D) -> x + PE[offset : offset + S]. Fixed, not trainable, not in the state dict
    (a non-persistent buffer: it is rebuilt from d_model and max_len). The table is float32
    and moves with ``.to()``; it is cast to the input's dtype when they differ (a constant, so
    nothing is upcast)."""

    def __init__(self, d_model: int, max_len: int = 5000):
        self.d_model, self.max_len = d_model, max_len
        table = as_tensor(sinusoidal_table(max_len, d_model).astype(np.float32))     # (S_max, D)
        self.register_buffer("pe", table, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_input("SinusoidalPositionalEncoding", x, self.d_model)
        seq_len = x.shape[-2]
        _check_fits("SinusoidalPositionalEncoding", offset, seq_len, self.max_len)
        rows = self.pe._data[offset: offset + seq_len]                            # (S, D)
        return x + Tensor._wrap(rows.astype(x.dtype, copy=False))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(Module):
    """x (B, S, D) -> x + weight[offset : offset + S], weight (max_len, D) ~ N(0, 0.02^2)."""

    def __init__(self, max_len: int, d_model: int, std: float = 0.02):
        self.max_len, self.d_model = max_len, d_model
        self.weight = normal_parameter((max_len, d_model), std)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_input("LearnedPositionalEmbedding", x, self.d_model)
        seq_len = x.shape[-2]
        _check_fits("LearnedPositionalEmbedding", offset, seq_len, self.max_len)
        return x + self.weight[offset: offset + seq_len]                         # + (S, D)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"


class RotaryEmbedding(Module):
    """Rotate x (..., S, d_k) by positions offset..offset+S-1 (``F.rope``); no parameters.
    ``MultiHeadAttention(rope=True)`` applies it to q and k after the head split."""

    def __init__(self, head_dim: int, base: float = 10000.0):
        if head_dim % 2 != 0:
            raise ValueError(f"RotaryEmbedding: head_dim (d_k = {head_dim}) must be even; RoPE "
                             f"rotates pairs of features")
        self.head_dim, self.base = head_dim, base

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return F.rope(x, offset=offset, base=self.base)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}"


def alibi_slopes(num_heads: int) -> List[float]:
    """The ALiBi head slopes m_1..m_h: a geometric sequence starting at 2^(-8/h) with that
    ratio (h = 8 gives 1/2, 1/4, ..., 1/256). For h not a power of two, take the slopes of the
    nearest lower power of two n, then every other slope of 2n (the paper's recipe)."""
    def powers(n: int) -> List[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    lower = 2 ** int(math.floor(math.log2(num_heads)))
    if lower == num_heads:
        return powers(num_heads)
    return powers(lower) + powers(2 * lower)[0::2][: num_heads - lower]


class ALiBi(Module):
    """Attention biases (h, S_q, S_k): bias[h, i, j] = -m_h * |pos_i - pos_j|.

    Query i sits at position (S_k - S_q) + i and key j at position j, so new queries after a
    key/value cache line up with the end of the keys. Under a causal mask (j <= i) this is the
    paper's m_h * (j - i); the |.| makes it usable without one (an encoder). No parameters.
    """

    def __init__(self, num_heads: int):
        if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
            raise ValueError(f"ALiBi: num_heads must be a positive int, got {num_heads!r}")
        self.num_heads = num_heads
        self.slopes = alibi_slopes(num_heads)
        self._slopes_on: Dict[str, Any] = {}     # device -> (h,) array, copied there once

    def forward(self, seq_len_q: int, seq_len_k: int, dtype: Any = np.float32,
                device: str = "cpu") -> Tensor:
        device = backend.normalize_device(device)
        xp = backend.array_module_for(device)
        q_pos = xp.arange(seq_len_k - seq_len_q, seq_len_k, dtype=xp.float64)   # (S_q,)
        k_pos = xp.arange(seq_len_k, dtype=xp.float64)                          # (S_k,)
        distance = xp.abs(q_pos[:, None] - k_pos[None, :])                      # (S_q, S_k)
        if device not in self._slopes_on:
            self._slopes_on[device] = xp.asarray(self.slopes, dtype=xp.float64)   # (h,)
        slopes = self._slopes_on[device]
        bias = -slopes[:, None, None] * distance[None, :, :]                    # (h, S_q, S_k)
        return Tensor._wrap(bias.astype(dtype))

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}"
