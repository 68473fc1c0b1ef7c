"""``tinyattn.functional`` (import as ``F``): the ops with PyTorch's names and signatures.

    import tinyattn.functional as F
    F.softmax(x, dim=-1); F.linear(x, weight, bias); F.cross_entropy(logits, target)
"""
from __future__ import annotations

from .ops import (cross_entropy, dropout, embedding, gelu, layer_norm, linear, log_softmax,
                  masked_fill, relu, scaled_dot_product_attention, softmax, tanh, where)
from .ops.norm import rms_norm
from .ops.rope import rope

__all__ = ["softmax", "log_softmax", "relu", "gelu", "tanh", "linear", "layer_norm", "dropout",
           "embedding", "cross_entropy", "masked_fill", "where", "scaled_dot_product_attention",
           "rope", "rms_norm"]
