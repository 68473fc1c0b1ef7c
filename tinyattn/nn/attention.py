"""Multi-head attention (docs/nn.md#multi-head-attention).

Shape letters, fixed across tinyattn: B batch, S_q query length, S_k key length, D = d_model,
h = num_heads, d_k = D / h (width of one head). The module

    1. projects:     q = query W_q^T + b_q,  k = key W_k^T + b_k,  v = value W_v^T + b_v
    2. splits heads: (B, S, D) -> (B, S, h, d_k) -> (B, h, S, d_k)
    3. attends:      softmax(q k^T / sqrt(d_k) + bias, masked) v per head (one fused op)
    4. merges heads: (B, h, S_q, d_k) -> (B, S_q, h, d_k) -> (B, S_q, D), then W_o.

Masks are boolean, True = "may attend" (the opposite of PyTorch's ``nn.MultiheadAttention``).
A query whose keys are all masked gets zeros (and zero gradients); torch.nn.MultiheadAttention
gives NaN there with need_weights=True or on its inference fast path (docs/nn.md#masks).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from .. import backend
from .. import functional as F
from ..ops import cat
from ..ops.attention import packed_self_attention
from ..ops.masking import mask_array
from ..tensor import Tensor, as_tensor
from .layers import Linear, uniform_parameter
from .module import Module, Parameter
from .positional import RotaryEmbedding

__all__ = ["MultiHeadAttention", "KVCache"]

_IMPLS = ("plain", "tiled")


class KVCache:
    """The keys and values (B, h, S_cached, d_k) one attention layer has seen so far.

    Used for generation: each step feeds only the new tokens, and attention reads the cached
    keys and values of the earlier ones instead of recomputing them. Keys are cached after
    RoPE, so a key keeps the rotation of its own position.
    """

    def __init__(self) -> None:
        self.k: Optional[Tensor] = None
        self.v: Optional[Tensor] = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def reset(self) -> None:
        self.k = self.v = None

    def append(self, k: Tensor, v: Tensor) -> Tuple[Tensor, Tensor]:
        """Add the new keys and values; return all of them."""
        if self.k is not None:
            k = cat([self.k, k], dim=2)     # (B, h, S_cached, d_k) + (B, h, S, d_k)
            v = cat([self.v, v], dim=2)
        self.k, self.v = k, v
        return k, v


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention with separate q/k/v/out projections.

    Args:
        d_model: D, the width of queries and of the output; must be divisible by num_heads.
        num_heads: h.
        dropout: probability of zeroing an attention weight while training.
        bias: whether the four projections have biases.
        kdim, vdim: feature sizes of key and value inputs (default D), for cross-attention.
        rope: rotate q and k by their positions (RoPE) after the head split.
        attn_impl: "plain" (default) or "tiled" (``F.scaled_dot_product_attention(impl=...)``,
            memory linear in S; no dropout; weights are never formed).
        block_size: the tile size for attn_impl="tiled".

    Initialisation (as PyTorch's): q/k/v weights Xavier-uniform, U(-a, a). PyTorch draws
    them as one packed (3D, D) matrix when kdim = vdim = D, so a = sqrt(6 / (D + 3D)); with
    other kdim/vdim each projection is its own matrix, a = sqrt(6 / (fan_in + D)).
    out_proj weight U(-1/sqrt(D), 1/sqrt(D)); biases 0.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 kdim: Optional[int] = None, vdim: Optional[int] = None, *, rope: bool = False,
                 rope_base: float = 10000.0, attn_impl: str = "plain", block_size: int = 64):
        for name, value in (("d_model", d_model), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MultiHeadAttention: {name} must be a positive int, got "
                                 f"{value!r}")
        if d_model % num_heads != 0:
            raise ValueError(f"MultiHeadAttention: d_model={d_model} is not divisible by "
                             f"num_heads={num_heads}; each head gets d_model / num_heads "
                             f"features, so choose num_heads dividing d_model")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1], got {dropout}")
        if attn_impl not in _IMPLS:
            raise ValueError(f"MultiHeadAttention: attn_impl must be one of {_IMPLS}, got "
                             f"{attn_impl!r}")
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.kdim = d_model if kdim is None else kdim
        self.vdim = d_model if vdim is None else vdim
        self.dropout, self.attn_impl, self.block_size = dropout, attn_impl, block_size
        packed = self.kdim == d_model and self.vdim == d_model
        fan_out = 3 * d_model if packed else d_model     # torch's in_proj_weight is (3D, D)
        self.q_proj = _xavier_linear(d_model, d_model, bias, fan_out)
        self.k_proj = _xavier_linear(self.kdim, d_model, bias, fan_out)
        self.v_proj = _xavier_linear(self.vdim, d_model, bias, fan_out)
        self.out_proj = Linear(d_model, d_model, bias=bias)
        if bias:
            self.out_proj.bias = Parameter(np.zeros(d_model, dtype=np.float32))
        self.rotary = RotaryEmbedding(self.head_dim, rope_base) if rope else None

    def extra_repr(self) -> str:
        extra = ", rope=True" if self.rotary is not None else ""
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, dropout={self.dropout}"
                f"{extra}, attn_impl={self.attn_impl!r}")

    # ------------------------------------------------------------------ forward
    def forward(self, query: Tensor, key: Optional[Tensor] = None,
                value: Optional[Tensor] = None, *, mask: Any = None, padding_mask: Any = None,
                is_causal: bool = False, need_weights: bool = False, attn_bias: Any = None,
                kv_cache: Optional[KVCache] = None) -> Union[Tensor, Tuple[Tensor, Tensor]]:
        """Attend from ``query`` (B, S_q, D) to ``key`` (B, S_k, kdim) / ``value``
        (B, S_k, vdim); self-attention when both are omitted (value defaults to key).

        mask: bool, broadcastable to (B, h, S_q, S_k), True = may attend.
        padding_mask: bool (B, S_k), True for real tokens (with a cache: all S_k keys).
        is_causal: query i sees keys up to its own position; the last query is aligned with
            the last key, so this also holds after S_k - S_q cached tokens.
        need_weights: also return the attention weights (B, h, S_q, S_k), detached, before
            dropout (always computed on the plain path).
        attn_bias: float, broadcastable to (B, h, S_q, S_k), added to the scaled scores
            (ALiBi); computed with explicit ops, plain path only.
        kv_cache: a ``KVCache`` to read earlier keys/values from and append to
            (self-attention only; for generation).
        """
        if key is None and value is not None:
            raise ValueError("MultiHeadAttention: value was given without key; pass both "
                             "(cross-attention) or neither (self-attention)")
        if kv_cache is not None and key is not None:
            raise ValueError("MultiHeadAttention: kv_cache works for self-attention only; "
                             "call it without key and value")
        self_attention = key is None or (key is query and (value is None or value is query))
        key = query if key is None else key
        value = key if value is None else value
        batch, s_q = self._check_inputs(query, key, value)
        impl = "plain" if need_weights else self.attn_impl
        # Plain self-attention projects q, k, v with one packed matmul and keeps them stacked
        # in one tensor; RoPE, a KV cache and ALiBi need them apart (three projections).
        packed = (self_attention and kv_cache is None and self.rotary is None
                  and attn_bias is None and impl == "plain" and self._biases_match())
        if packed:
            qkv = self._packed_qkv(query)                    # (3, B, h, S, d_k)
            q = k = v = None
            s_k = s_q
        else:
            q, k, v = self._separate_qkv(query, key, value, kv_cache)
            s_k = k.shape[2]

        expected = (batch, self.num_heads, s_q, s_k)
        masks: List[Any] = []
        if mask is not None:
            masks.append(_bool_array(mask, "mask", expected, query.device))
        if padding_mask is not None:
            pad = _bool_array(padding_mask, "padding_mask", (batch, s_k), query.device,
                              exact=True)
            masks.append(pad[:, None, None, :])              # (B, S_k) -> (B, 1, 1, S_k)
        bias = None if attn_bias is None else self._check_bias(attn_bias, expected, q)
        # A square causal mask with nothing else can go to the fused op as is_causal (the
        # tiled path then skips whole tiles above the diagonal); otherwise build it here.
        causal_flag = bool(is_causal) and s_q == s_k and not masks and bias is None
        if is_causal and not causal_flag:
            xp = backend.get_array_module(query._data)
            masks.append(xp.tri(s_q, s_k, k=s_k - s_q, dtype=bool))   # (S_q, S_k)
        combined = None
        for m in masks:
            combined = m if combined is None else combined & m
        p = self.dropout if self.training else 0.0

        if packed:
            result = packed_self_attention(qkv, mask=combined, dropout_p=p,
                                           is_causal=causal_flag, need_weights=need_weights)
            out, weights = result if need_weights else (result, None)
        elif bias is not None:
            out, weights = self._biased_attention(q, k, v, combined, bias, p, need_weights)
        else:
            extra = {} if impl == "plain" else {"impl": impl, "block_size": self.block_size}
            result = F.scaled_dot_product_attention(q, k, v, mask=combined, dropout_p=p,
                                                    is_causal=causal_flag,
                                                    need_weights=need_weights, **extra)
            out, weights = result if need_weights else (result, None)

        out = out.transpose(1, 2)                            # (B, h, S_q, d_k) -> (B, S_q, h, d_k)
        out = self.out_proj(out.reshape(batch, s_q, self.d_model))   # -> (B, S_q, D)
        return (out, weights) if need_weights else out

    def _packed_qkv(self, x: Tensor) -> Tensor:
        """q, k, v for self-attention from one matmul: x (B, S, D) @ [W_q; W_k; W_v]^T.

        The weights stay three Parameters (state dicts, torch parity); stacking them by rows
        copies (3D, D) per call, and one (B*S, D) @ (D, 3D) product is faster than three
        (B*S, D) @ (D, D) ones, and gives x's gradient whole instead of in three parts.
        """
        batch, s, _ = x.shape
        projections = (self.q_proj, self.k_proj, self.v_proj)
        weight = cat([m.weight for m in projections])                 # 3 x (D, D) -> (3D, D)
        bias = None
        if self.q_proj.bias is not None:
            bias = cat([m.bias for m in projections])                 # 3 x (D,) -> (3D,)
        qkv = F.linear(x, weight, bias)                               # (B, S, D) -> (B, S, 3D)
        qkv = qkv.reshape(batch, s, 3, self.num_heads, self.head_dim)  # -> (B, S, 3, h, d_k)
        return qkv.permute(2, 0, 3, 1, 4)                             # -> (3, B, h, S, d_k)

    def _biases_match(self) -> bool:
        """All three of q/k/v_proj have a bias, or none has (then their rows can be packed)."""
        return len({m.bias is None for m in (self.q_proj, self.k_proj, self.v_proj)}) == 1

    def _separate_qkv(self, query: Tensor, key: Tensor, value: Tensor,
                      kv_cache: Optional[KVCache]) -> Tuple[Tensor, Tensor, Tensor]:
        """Three projections, heads split, RoPE applied, the KV cache read and extended:
        q (B, h, S_q, d_k), k and v (B, h, S_k, d_k)."""
        batch, s_q = query.shape[:2]
        h, d_k = self.num_heads, self.head_dim
        q = self.q_proj(query).reshape(batch, s_q, h, d_k)   # (B, S_q, D) -> (B, S_q, h, d_k)
        q = q.transpose(1, 2)                                # -> (B, h, S_q, d_k)
        s_new = key.shape[1]
        k = self.k_proj(key).reshape(batch, s_new, h, d_k)   # (B, S_k, D) -> (B, S_k, h, d_k)
        k = k.transpose(1, 2)                                # -> (B, h, S_k, d_k)
        v = self.v_proj(value).reshape(batch, s_new, h, d_k)
        v = v.transpose(1, 2)                                # (B, S_k, h, d_k) -> (B, h, S_k, d_k)

        offset = 0 if kv_cache is None else kv_cache.length
        if self.rotary is not None:
            q, k = self.rotary(q, offset), self.rotary(k, offset)
        if kv_cache is not None:
            k, v = kv_cache.append(k, v)                     # (B, h, offset + S, d_k)
        return q, k, v

    def _biased_attention(self, q: Tensor, k: Tensor, v: Tensor, mask: Any, bias: Tensor,
                          p: float, need_weights: bool) -> Tuple[Tensor, Optional[Tensor]]:
        """softmax(q k^T / sqrt(d_k) + bias, masked) v from separate ops (each with its own
        hand-written backward): the fused op takes no additive bias."""
        if self.attn_impl != "plain":
            raise ValueError(f"MultiHeadAttention: attn_bias (ALiBi) needs attn_impl='plain', "
                             f"got attn_impl={self.attn_impl!r}; the tiled kernel takes no "
                             f"additive bias")
        scale = 1.0 / math.sqrt(self.head_dim)
        scores = (q @ k.transpose(-2, -1)) * scale   # (B, h, S_q, d_k) @ (B, h, d_k, S_k)
        scores = scores + bias                       # -> (B, h, S_q, S_k)
        if mask is not None:
            xp = backend.get_array_module(scores._data)
            not_allowed = ~xp.broadcast_to(mask, scores.shape)
            scores = scores.masked_fill(not_allowed, float("-inf"))
        probs = scores.softmax(-1)                   # a row of -inf only gives zeros
        weights = Tensor._wrap(probs._data.copy()) if need_weights else None
        probs = F.dropout(probs, p, training=p > 0.0)
        return probs @ v, weights                    # (B, h, S_q, S_k) @ (B, h, S_k, d_k)

    # ------------------------------------------------------------------ checks
    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> Tuple[int, int]:
        name = "MultiHeadAttention"
        for label, x, width, arg in (("query", query, self.d_model, "d_model"),
                                     ("key", key, self.kdim, "kdim"),
                                     ("value", value, self.vdim, "vdim")):
            if not isinstance(x, Tensor):
                raise TypeError(f"{name}: {label} must be a Tensor, got {type(x).__name__}")
            if x.ndim != 3:
                raise ValueError(f"{name}: {label} must be (B, S, features), got shape "
                                 f"{x.shape}")
            if x.shape[-1] != width:
                raise ValueError(f"{name}: {label} has {x.shape[-1]} features (shape "
                                 f"{x.shape}) but the module was built with {arg}={width}; "
                                 f"pass {arg}={x.shape[-1]} or project the input first")
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(f"{name}: batch sizes differ: query {query.shape}, key "
                             f"{key.shape}, value {value.shape}")
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"{name}: key has S_k={key.shape[1]} positions but value has "
                             f"{value.shape[1]} (shapes {key.shape} and {value.shape})")
        return query.shape[0], query.shape[1]

    @staticmethod
    def _check_bias(bias: Any, expected: Tuple[int, ...], q: Tensor) -> Tensor:
        bias = bias if isinstance(bias, Tensor) else as_tensor(bias, dtype=q.dtype)
        if bias.dtype != q.dtype:
            raise TypeError(f"MultiHeadAttention: attn_bias is {bias.dtype} but the queries are "
                            f"{q.dtype}; build the bias in the model's dtype")
        try:
            shape = np.broadcast_shapes(bias.shape, expected)
        except ValueError:
            shape = None
        if shape != expected:
            raise ValueError(f"MultiHeadAttention: attn_bias of shape {bias.shape} does not "
                             f"broadcast to (B, num_heads, S_q, S_k) = {expected}")
        return bias


def _bool_array(mask: Any, what: str, expected: Tuple[int, ...], device: str,
                exact: bool = False) -> Any:
    """A boolean mask's array, checked (by ops.masking.mask_array) to broadcast to, or with
    ``exact`` to equal, ``expected``."""
    layout = "(B, S_k)" if exact else "(B, num_heads, S_q, S_k)"
    return mask_array(mask, "MultiHeadAttention", expected, device, what=what, layout=layout,
                      exact=exact)


def _xavier_linear(in_features: int, out_features: int, bias: bool, fan_out: int) -> Linear:
    layer = Linear(in_features, out_features, bias=bias)
    layer.weight = uniform_parameter((out_features, in_features),
                                     math.sqrt(6.0 / (in_features + fan_out)))
    if bias:
        layer.bias = Parameter(np.zeros(out_features, dtype=np.float32))
    return layer
