"""``tinyattn.nn``: modules built from tinyattn's ops (docs/nn.md)."""
from __future__ import annotations

from . import torch_compat
from .attention import KVCache, MultiHeadAttention
from .generation import NonFiniteLogitsError
from .gpt import GPT, Block, GPTConfig
from .layers import GELU, Dropout, Embedding, FeedForward, LayerNorm, Linear, ReLU
from .masks import causal_mask, combine_masks, padding_mask, sliding_window_mask
from .module import Module, ModuleList, Parameter
from .positional import (ALiBi, LearnedPositionalEmbedding, RotaryEmbedding,
                         SinusoidalPositionalEncoding, alibi_slopes, sinusoidal_table)
from .transformer import TransformerDecoderLayer, TransformerEncoderLayer

__all__ = [
    "Module", "ModuleList", "Parameter",
    "Linear", "Embedding", "LayerNorm", "Dropout", "GELU", "ReLU", "FeedForward",
    "causal_mask", "padding_mask", "sliding_window_mask", "combine_masks",
    "MultiHeadAttention", "KVCache",
    "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "RotaryEmbedding", "ALiBi",
    "sinusoidal_table", "alibi_slopes",
    "TransformerEncoderLayer", "TransformerDecoderLayer",
    "GPTConfig", "GPT", "Block", "NonFiniteLogitsError", "torch_compat",
]
