"""Transformer encoder and decoder layers (docs/nn.md#transformer-layers).

Shapes: B batch, S (S_t target, S_m memory) sequence lengths, D = d_model. Sub-module names
are PyTorch's (``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1``..), so a
state dict from ``torch.nn.TransformerEncoderLayer`` loads after
``tinyattn.nn.torch_compat.convert_torch_state_dict`` unpacks the attention projections.

Post-LN (``norm_first=False``, the original paper):   x = norm(x + sublayer(x))
Pre-LN  (``norm_first=True``, GPT-2 and most modern models): x = x + sublayer(norm(x))
Pre-LN keeps an identity path from the output back to the input, which trains deep stacks
without warm-up tricks; post-LN normalises the residual stream itself.
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .attention import MultiHeadAttention
from .layers import Dropout, LayerNorm, Linear, make_activation
from .module import Module

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer"]


class _FeedForwardMixin:
    """The position-wise MLP with PyTorch's attribute names, shared by both layers."""

    def _build_ff(self, d_model: int, dim_feedforward: int, dropout: float, activation: str,
                  bias: bool) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.activation = make_activation(activation)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)

    def _ff(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # D -> d_ff -> D


class TransformerEncoderLayer(_FeedForwardMixin, Module):
    """Self-attention then feed-forward, each with a residual connection and LayerNorm.

    Arguments as ``torch.nn.TransformerEncoderLayer(batch_first=True)``; inputs are
    (B, S, D). Masks follow tinyattn's convention: True = may attend / real token.
    """

    def __init__(self, d_model: int, num_heads: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str = "relu", layer_norm_eps: float = 1e-5,
                 norm_first: bool = False, bias: bool = True, **attn_options: Any):
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias,
                                            **attn_options)
        self._build_ff(d_model, dim_feedforward, dropout, activation, bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Any = None, src_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        """src (B, S, D) -> (B, S, D). ``src_mask`` broadcasts to (B, h, S, S);
        ``src_padding_mask`` is (B, S), True for real tokens."""
        def attend(x: Tensor) -> Tensor:
            return self.dropout1(self.self_attn(x, mask=src_mask, padding_mask=src_padding_mask,
                                                is_causal=is_causal))

        x = src
        if self.norm_first:
            x = x + attend(self.norm1(x))
            return x + self.dropout2(self._ff(self.norm2(x)))
        x = self.norm1(x + attend(x))
        return self.norm2(x + self.dropout2(self._ff(x)))


class TransformerDecoderLayer(_FeedForwardMixin, Module):
    """Causal self-attention, cross-attention to ``memory`` (the encoder output), then
    feed-forward; each with a residual connection and LayerNorm.

    Unlike PyTorch, whose ``tgt_is_causal`` is only a hint that needs ``tgt_mask`` as well,
    ``tgt_is_causal=True`` (the default) applies the causal mask itself.
    """

    def __init__(self, d_model: int, num_heads: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str = "relu", layer_norm_eps: float = 1e-5,
                 norm_first: bool = False, bias: bool = True, **attn_options: Any):
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias,
                                            **attn_options)
        self.multihead_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias,
                                                 **attn_options)
        self._build_ff(d_model, dim_feedforward, dropout, activation, bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_padding_mask: Any = None,
                memory_padding_mask: Any = None, tgt_is_causal: bool = True) -> Tensor:
        """tgt (B, S_t, D), memory (B, S_m, D) -> (B, S_t, D). ``tgt_mask`` broadcasts to
        (B, h, S_t, S_t), ``memory_mask`` to (B, h, S_t, S_m); padding masks are (B, S_t) and
        (B, S_m), True for real tokens."""
        def self_block(x: Tensor) -> Tensor:
            return self.dropout1(self.self_attn(x, mask=tgt_mask, padding_mask=tgt_padding_mask,
                                                is_causal=tgt_is_causal))

        def cross_block(x: Tensor) -> Tensor:
            return self.dropout2(self.multihead_attn(x, memory, memory, mask=memory_mask,
                                                     padding_mask=memory_padding_mask))

        x = tgt
        if self.norm_first:
            x = x + self_block(self.norm1(x))
            x = x + cross_block(self.norm2(x))
            return x + self.dropout3(self._ff(self.norm3(x)))
        x = self.norm1(x + self_block(x))
        x = self.norm2(x + cross_block(x))
        return self.norm3(x + self.dropout3(self._ff(x)))
