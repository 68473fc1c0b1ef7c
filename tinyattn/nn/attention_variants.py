"""The long-sequence attention variants of ``MultiHeadAttention(attn_impl=...)``
(docs/long_sequences.md): "local", "performer" and "linformer".

Shapes: B batch, h heads, S_q/S_k query/key lengths, d_k head width, k the Linformer length.
Each takes q, k, v (B, h, S, d_k) after the projections (and RoPE) and returns
(out (B, h, S_q, d_k), weights (B, h, S_q, S_k or k) or None).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from ..precision import get_default_dtype

from .. import functional as F
from ..ops.local_attention import local_attention
from ..ops.performer import orthogonal_random_features, performer_attention, performer_weights
from ..tensor import Tensor
from .layers import normal_parameter
from .long_attention import linformer_attention
from .masks import sliding_window_mask

__all__ = ["VARIANTS", "make_variant_state", "check_variant_call", "variant_attention"]

VARIANTS = ("local", "performer", "linformer")


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"MultiHeadAttention: {name} must be a positive int, got {value!r}")
    return int(value)


def make_variant_state(module: Any, window: int, num_features: int, seq_len: Optional[int],
                       linformer_k: int) -> None:
    """Check the variant's settings and make its state: nothing for "local", the fixed
    (m, d_k) features for "performer", the (k, seq_len) projections for "linformer"."""
    impl = module.attn_impl
    module.window, module.num_features = window, num_features
    module.seq_len, module.linformer_k = seq_len, linformer_k
    if impl not in VARIANTS:
        return
    if module.dropout > 0:
        raise ValueError(f"MultiHeadAttention: attn_impl={impl!r} has no attention dropout "
                         f"(got dropout={module.dropout}); use dropout=0.0")
    if module.num_kv_heads != module.num_heads:
        raise ValueError(f"MultiHeadAttention: attn_impl={impl!r} needs as many key/value "
                         f"heads as query heads (got num_kv_heads={module.num_kv_heads}, "
                         f"num_heads={module.num_heads})")
    if impl == "local":
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
            raise ValueError(f"MultiHeadAttention: window must be an int >= 0, got {window!r}")
    elif impl == "performer":
        m = _positive("num_features", num_features)
        features = orthogonal_random_features(m, module.head_dim, dtype=get_default_dtype())
        module.register_buffer("performer_projection", Tensor._wrap(features))   # (m, d_k)
    else:
        if seq_len is None:
            raise ValueError("MultiHeadAttention: attn_impl='linformer' needs seq_len=..., "
                             "the longest sequence, since its projections are (k, seq_len)")
        s, k = _positive("seq_len", seq_len), _positive("linformer_k", linformer_k)
        module.linformer_proj_k = normal_parameter((k, s), 1.0 / math.sqrt(k))
        module.linformer_proj_v = normal_parameter((k, s), 1.0 / math.sqrt(k))


def check_variant_call(module: Any, self_attention: bool, mask: Any, attn_mask: Any,
                       key_padding_mask: Any, kv_cache: Any, is_causal: bool) -> None:
    """Refuse what the variants cannot do, naming it (never a silently different result)."""
    impl = module.attn_impl
    given = [name for name, value in (("mask", mask), ("attn_mask", attn_mask),
                                      ("key_padding_mask", key_padding_mask),
                                      ("kv_cache", kv_cache)) if value is not None]
    if given:
        raise ValueError(f"MultiHeadAttention: attn_impl={impl!r} takes no {', '.join(given)} "
                         f"(only is_causal); use attn_impl='plain' or 'tiled' for masks")
    if impl in ("local", "linformer") and not self_attention:
        raise ValueError(f"MultiHeadAttention: attn_impl={impl!r} is self-attention only; "
                         f"call it without key and value")
    if impl == "linformer" and is_causal:
        raise ValueError("MultiHeadAttention: attn_impl='linformer' cannot be causal: each "
                         "projected key mixes all positions, the future included, so a "
                         "causal model would see the tokens it must predict")


def variant_attention(module: Any, q: Tensor, k: Tensor, v: Tensor, is_causal: bool,
                      need_weights: bool) -> Tuple[Tensor, Optional[Tensor]]:
    """out (B, h, S_q, d_k) and, with ``need_weights``, the weights (detached)."""
    impl = module.attn_impl
    if impl == "local":
        if need_weights:                    # the same numbers through the dense path
            s = q.shape[-2]
            band = sliding_window_mask(s, module.window + 1, causal=is_causal,
                                       device=q.device)
            return F.scaled_dot_product_attention(q, k, v, band, scale=module.scale,
                                                  need_weights=True)
        return local_attention(q, k, v, module.window, causal=is_causal,
                               scale=module.scale), None
    if impl == "performer":
        projection = module.performer_projection._data
        out = performer_attention(q, k, v, projection.shape[0], causal=is_causal,
                                  projection=projection, scale=module.scale)
        weights = None
        if need_weights:
            weights = performer_weights(q.detach(), k.detach(), projection, is_causal,
                                        scale=module.scale)
        return out, weights
    s = k.shape[-2]
    if s > module.seq_len:
        raise ValueError(f"MultiHeadAttention: attn_impl='linformer' was built for seq_len="
                         f"{module.seq_len} but got {s} positions")
    if need_weights:
        e, f = module.linformer_proj_k[:, :s], module.linformer_proj_v[:, :s]
        k_low, v_low = e @ k, f @ v         # (k, S) @ (B, h, S, d_k) -> (B, h, k, d_k)
        return F.scaled_dot_product_attention(q, k_low, v_low, scale=module.scale,
                                              need_weights=True)
    return linformer_attention(q, k, v, module.linformer_proj_k, module.linformer_proj_v,
                               scale=module.scale), None
